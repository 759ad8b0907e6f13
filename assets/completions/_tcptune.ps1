
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'tcptune' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'tcptune'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'tcptune' {
            [CompletionResult]::new('--os', '--os', [CompletionResultType]::ParameterName, 'OS to advise for / operate on [default: the running OS]')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format [advise: table on a terminal, else sysctl; others: table]')
            [CompletionResult]::new('--sysctl-dir', '--sysctl-dir', [CompletionResultType]::ParameterName, 'Linux: read and write sysctls under DIR instead of /proc/sys')
            [CompletionResult]::new('--sysctl-cmd', '--sysctl-cmd', [CompletionResultType]::ParameterName, 'FreeBSD/macOS: the sysctl(8) program to run')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Where snapshots live')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('calc', 'calc', [CompletionResultType]::ParameterValue, 'Bandwidth-delay product and throughput calculator')
            [CompletionResult]::new('advise', 'advise', [CompletionResultType]::ParameterValue, 'Recommend sysctl settings for a path')
            [CompletionResult]::new('profiles', 'profiles', [CompletionResultType]::ParameterValue, 'List, show or export the shipped profiles (the rules advise renders)')
            [CompletionResult]::new('man', 'man', [CompletionResultType]::ParameterValue, 'Print the manual page (roff, section 8): `tcptune man | man -l -`')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script (bash, zsh, fish, elvish, powershell)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'tcptune;calc' {
            [CompletionResult]::new('-b', '-b', [CompletionResultType]::ParameterName, 'Path rate, bits per second (500mbit, 1gbit, 10G)')
            [CompletionResult]::new('--bandwidth', '--bandwidth', [CompletionResultType]::ParameterName, 'Path rate, bits per second (500mbit, 1gbit, 10G)')
            [CompletionResult]::new('-r', '-r', [CompletionResultType]::ParameterName, 'Round-trip time (25ms, 0.15s)')
            [CompletionResult]::new('--rtt', '--rtt', [CompletionResultType]::ParameterName, 'Round-trip time (25ms, 0.15s)')
            [CompletionResult]::new('-w', '-w', [CompletionResultType]::ParameterName, 'TCP window or buffer (64KiB, 4MiB, 65536)')
            [CompletionResult]::new('--window', '--window', [CompletionResultType]::ParameterName, 'TCP window or buffer (64KiB, 4MiB, 65536)')
            [CompletionResult]::new('--loss', '--loss', [CompletionResultType]::ParameterName, 'Packet loss, percent (0.01 or 0.01%), for the Mathis bound')
            [CompletionResult]::new('--mss', '--mss', [CompletionResultType]::ParameterName, 'Maximum segment size in bytes, for the Mathis bound')
            [CompletionResult]::new('--os', '--os', [CompletionResultType]::ParameterName, 'OS to advise for / operate on [default: the running OS]')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format [advise: table on a terminal, else sysctl; others: table]')
            [CompletionResult]::new('--sysctl-dir', '--sysctl-dir', [CompletionResultType]::ParameterName, 'Linux: read and write sysctls under DIR instead of /proc/sys')
            [CompletionResult]::new('--sysctl-cmd', '--sysctl-cmd', [CompletionResultType]::ParameterName, 'FreeBSD/macOS: the sysctl(8) program to run')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Where snapshots live')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'tcptune;advise' {
            [CompletionResult]::new('--host', '--host', [CompletionResultType]::ParameterName, 'Host to measure the path to (repeatable)')
            [CompletionResult]::new('--rtt', '--rtt', [CompletionResultType]::ParameterName, 'Path round-trip time, instead of measuring it (150ms)')
            [CompletionResult]::new('--bandwidth', '--bandwidth', [CompletionResultType]::ParameterName, 'Path rate, instead of the link speed (500mbit, 1gbit)')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'Profile: a shipped name (linux, freebsd, macos) or a TOML file')
            [CompletionResult]::new('--probes', '--probes', [CompletionResultType]::ParameterName, 'Probes per host')
            [CompletionResult]::new('--port', '--port', [CompletionResultType]::ParameterName, 'TCP port for the connect-timing fallback when ICMP is blocked (repeatable) [default: 443, 22, 80]')
            [CompletionResult]::new('--interval', '--interval', [CompletionResultType]::ParameterName, 'Spacing between probes')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'How long to wait for each probe''s answer')
            [CompletionResult]::new('--flows', '--flows', [CompletionResultType]::ParameterName, 'Concurrent bulk flows expected, for the memory check')
            [CompletionResult]::new('--os', '--os', [CompletionResultType]::ParameterName, 'OS to advise for / operate on [default: the running OS]')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format [advise: table on a terminal, else sysctl; others: table]')
            [CompletionResult]::new('--sysctl-dir', '--sysctl-dir', [CompletionResultType]::ParameterName, 'Linux: read and write sysctls under DIR instead of /proc/sys')
            [CompletionResult]::new('--sysctl-cmd', '--sysctl-cmd', [CompletionResultType]::ParameterName, 'FreeBSD/macOS: the sysctl(8) program to run')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Where snapshots live')
            [CompletionResult]::new('-4', '-4', [CompletionResultType]::ParameterName, 'Use IPv4 only')
            [CompletionResult]::new('-6', '-6', [CompletionResultType]::ParameterName, 'Use IPv6 only')
            [CompletionResult]::new('--allow-lower', '--allow-lower', [CompletionResultType]::ParameterName, 'Also recommend values lower than the running ones')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'tcptune;profiles' {
            [CompletionResult]::new('--os', '--os', [CompletionResultType]::ParameterName, 'OS to advise for / operate on [default: the running OS]')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format [advise: table on a terminal, else sysctl; others: table]')
            [CompletionResult]::new('--sysctl-dir', '--sysctl-dir', [CompletionResultType]::ParameterName, 'Linux: read and write sysctls under DIR instead of /proc/sys')
            [CompletionResult]::new('--sysctl-cmd', '--sysctl-cmd', [CompletionResultType]::ParameterName, 'FreeBSD/macOS: the sysctl(8) program to run')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Where snapshots live')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List the shipped profiles: name, OS, description (the default)')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Print a shipped profile''s TOML')
            [CompletionResult]::new('export', 'export', [CompletionResultType]::ParameterValue, 'Print a shipped profile''s TOML as a starting point for your own (--profile FILE)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'tcptune;profiles;list' {
            [CompletionResult]::new('--os', '--os', [CompletionResultType]::ParameterName, 'OS to advise for / operate on [default: the running OS]')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format [advise: table on a terminal, else sysctl; others: table]')
            [CompletionResult]::new('--sysctl-dir', '--sysctl-dir', [CompletionResultType]::ParameterName, 'Linux: read and write sysctls under DIR instead of /proc/sys')
            [CompletionResult]::new('--sysctl-cmd', '--sysctl-cmd', [CompletionResultType]::ParameterName, 'FreeBSD/macOS: the sysctl(8) program to run')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Where snapshots live')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'tcptune;profiles;show' {
            [CompletionResult]::new('--os', '--os', [CompletionResultType]::ParameterName, 'OS to advise for / operate on [default: the running OS]')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format [advise: table on a terminal, else sysctl; others: table]')
            [CompletionResult]::new('--sysctl-dir', '--sysctl-dir', [CompletionResultType]::ParameterName, 'Linux: read and write sysctls under DIR instead of /proc/sys')
            [CompletionResult]::new('--sysctl-cmd', '--sysctl-cmd', [CompletionResultType]::ParameterName, 'FreeBSD/macOS: the sysctl(8) program to run')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Where snapshots live')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'tcptune;profiles;export' {
            [CompletionResult]::new('--os', '--os', [CompletionResultType]::ParameterName, 'OS to advise for / operate on [default: the running OS]')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format [advise: table on a terminal, else sysctl; others: table]')
            [CompletionResult]::new('--sysctl-dir', '--sysctl-dir', [CompletionResultType]::ParameterName, 'Linux: read and write sysctls under DIR instead of /proc/sys')
            [CompletionResult]::new('--sysctl-cmd', '--sysctl-cmd', [CompletionResultType]::ParameterName, 'FreeBSD/macOS: the sysctl(8) program to run')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Where snapshots live')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'tcptune;profiles;help' {
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List the shipped profiles: name, OS, description (the default)')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Print a shipped profile''s TOML')
            [CompletionResult]::new('export', 'export', [CompletionResultType]::ParameterValue, 'Print a shipped profile''s TOML as a starting point for your own (--profile FILE)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'tcptune;profiles;help;list' {
            break
        }
        'tcptune;profiles;help;show' {
            break
        }
        'tcptune;profiles;help;export' {
            break
        }
        'tcptune;profiles;help;help' {
            break
        }
        'tcptune;man' {
            [CompletionResult]::new('--os', '--os', [CompletionResultType]::ParameterName, 'OS to advise for / operate on [default: the running OS]')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format [advise: table on a terminal, else sysctl; others: table]')
            [CompletionResult]::new('--sysctl-dir', '--sysctl-dir', [CompletionResultType]::ParameterName, 'Linux: read and write sysctls under DIR instead of /proc/sys')
            [CompletionResult]::new('--sysctl-cmd', '--sysctl-cmd', [CompletionResultType]::ParameterName, 'FreeBSD/macOS: the sysctl(8) program to run')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Where snapshots live')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'tcptune;completions' {
            [CompletionResult]::new('--os', '--os', [CompletionResultType]::ParameterName, 'OS to advise for / operate on [default: the running OS]')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format [advise: table on a terminal, else sysctl; others: table]')
            [CompletionResult]::new('--sysctl-dir', '--sysctl-dir', [CompletionResultType]::ParameterName, 'Linux: read and write sysctls under DIR instead of /proc/sys')
            [CompletionResult]::new('--sysctl-cmd', '--sysctl-cmd', [CompletionResultType]::ParameterName, 'FreeBSD/macOS: the sysctl(8) program to run')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Where snapshots live')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'tcptune;help' {
            [CompletionResult]::new('calc', 'calc', [CompletionResultType]::ParameterValue, 'Bandwidth-delay product and throughput calculator')
            [CompletionResult]::new('advise', 'advise', [CompletionResultType]::ParameterValue, 'Recommend sysctl settings for a path')
            [CompletionResult]::new('profiles', 'profiles', [CompletionResultType]::ParameterValue, 'List, show or export the shipped profiles (the rules advise renders)')
            [CompletionResult]::new('man', 'man', [CompletionResultType]::ParameterValue, 'Print the manual page (roff, section 8): `tcptune man | man -l -`')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script (bash, zsh, fish, elvish, powershell)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'tcptune;help;calc' {
            break
        }
        'tcptune;help;advise' {
            break
        }
        'tcptune;help;profiles' {
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List the shipped profiles: name, OS, description (the default)')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Print a shipped profile''s TOML')
            [CompletionResult]::new('export', 'export', [CompletionResultType]::ParameterValue, 'Print a shipped profile''s TOML as a starting point for your own (--profile FILE)')
            break
        }
        'tcptune;help;profiles;list' {
            break
        }
        'tcptune;help;profiles;show' {
            break
        }
        'tcptune;help;profiles;export' {
            break
        }
        'tcptune;help;man' {
            break
        }
        'tcptune;help;completions' {
            break
        }
        'tcptune;help;help' {
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
