
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
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('calc', 'calc', [CompletionResultType]::ParameterValue, 'Bandwidth-delay product and throughput calculator')
            [CompletionResult]::new('advise', 'advise', [CompletionResultType]::ParameterValue, 'Recommend sysctl settings for a path')
            [CompletionResult]::new('apply', 'apply', [CompletionResultType]::ParameterValue, 'Apply a sysctl file or fresh advice to the running kernel, snapshotting first')
            [CompletionResult]::new('revert', 'revert', [CompletionResultType]::ParameterValue, 'Put back the values a snapshot replaced')
            [CompletionResult]::new('snapshots', 'snapshots', [CompletionResultType]::ParameterValue, 'List the snapshots taken by apply')
            [CompletionResult]::new('revert-timer', 'revert-timer', [CompletionResultType]::ParameterValue, 'Internal: the detached process behind `apply --for`')
            [CompletionResult]::new('check', 'check', [CompletionResultType]::ParameterValue, 'Diagnose this host for bulk TCP: window scaling, SACK, congestion control, MTU, offloads, loss, memory, conflicts')
            [CompletionResult]::new('serve', 'serve', [CompletionResultType]::ParameterValue, 'Receive throughput tests from `tcptune verify`, and run the path tests of `advise --host` in both directions (run it as root so a path test may force its buffers)')
            [CompletionResult]::new('verify', 'verify', [CompletionResultType]::ParameterValue, 'Send a throughput test to `tcptune serve` and say what limits it (this end sends)')
            [CompletionResult]::new('peer', 'peer', [CompletionResultType]::ParameterValue, 'Internal: the far end of an SSH-started path test (`advise --ssh` starts it): serve for one session, on a free port it prints as one JSON line')
            [CompletionResult]::new('evidence', 'evidence', [CompletionResultType]::ParameterValue, 'Internal: the test end of `tcptune mesh`: measures the path to a peer and prints the evidence as one JSON document (never advice: the control host computes that)')
            [CompletionResult]::new('mesh', 'mesh', [CompletionResultType]::ParameterValue, 'Measure every pair of a fleet''s hosts through your own ssh and advise each host from all its paths')
            [CompletionResult]::new('inspect', 'inspect', [CompletionResultType]::ParameterValue, 'Live TCP flows: RTT, cwnd, delivery rate and what limits each (Linux)')
            [CompletionResult]::new('watch', 'watch', [CompletionResultType]::ParameterValue, 'Watch live flows every second: rate, RTT, what holds each now, and the fix (Linux)')
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
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'tcptune;advise' {
            [CompletionResult]::new('--host', '--host', [CompletionResultType]::ParameterName, 'Host to measure the path to (repeatable)')
            [CompletionResult]::new('--ssh', '--ssh', [CompletionResultType]::ParameterName, 'Start the path test''s peer on the far end through your own ssh (DEST as ssh takes it: host, user@host, a Host of your ssh config) and read that machine''s facts; one session, no password prompt, nothing left there. --host defaults to the host name ssh connects to')
            [CompletionResult]::new('--ssh-command', '--ssh-command', [CompletionResultType]::ParameterName, 'The ssh command to run instead of `ssh`, split into words as a shell would ("ssh -F ./config -p 2222"), as rsync -e and GIT_SSH_COMMAND take it')
            [CompletionResult]::new('--rtt', '--rtt', [CompletionResultType]::ParameterName, 'Path round-trip time, instead of measuring it (150ms)')
            [CompletionResult]::new('--bandwidth', '--bandwidth', [CompletionResultType]::ParameterName, 'Path rate, instead of the link speed (500mbit, 1gbit)')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'Profile: a shipped name (linux, freebsd, macos) or a TOML file')
            [CompletionResult]::new('--probes', '--probes', [CompletionResultType]::ParameterName, 'Probes per host')
            [CompletionResult]::new('--port', '--port', [CompletionResultType]::ParameterName, 'TCP port for the connect-timing fallback when ICMP is blocked (repeatable) [default: 443, 22, 80]')
            [CompletionResult]::new('--interval', '--interval', [CompletionResultType]::ParameterName, 'Spacing between probes')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'How long to wait for each probe''s answer')
            [CompletionResult]::new('--test-port', '--test-port', [CompletionResultType]::ParameterName, 'Port of the path test''s server [default: 5301 (tcptune serve), 5201 (iperf3)]')
            [CompletionResult]::new('--test-time', '--test-time', [CompletionResultType]::ParameterName, 'Longest path test, each direction (at most 60s) [default: 10 s + 15 x the path''s RTT, so a long path''s test leaves startup: 12.3 s at 150 ms, 19 s at 600 ms]')
            [CompletionResult]::new('--test-bytes', '--test-bytes', [CompletionResultType]::ParameterName, 'Most bytes a path test sends')
            [CompletionResult]::new('--flows', '--flows', [CompletionResultType]::ParameterName, 'Concurrent bulk flows expected, for the memory check')
            [CompletionResult]::new('--scope', '--scope', [CompletionResultType]::ParameterName, 'Where the congestion control applies: host-wide (the net.ipv4.tcp_congestion_control key, every destination), or only on the path to the one --host / --ssh host (a host route with congctl, Linux 4.0+); the buffer maxima stay host-wide either way, as caps')
            [CompletionResult]::new('--os', '--os', [CompletionResultType]::ParameterName, 'OS to advise for / operate on [default: the running OS]')
            [CompletionResult]::new('--sysctl-dir', '--sysctl-dir', [CompletionResultType]::ParameterName, 'Linux: the sysctls under DIR instead of /proc/sys (read; apply and revert also write)')
            [CompletionResult]::new('--sysctl-cmd', '--sysctl-cmd', [CompletionResultType]::ParameterName, 'FreeBSD/macOS: the sysctl(8) program to run')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format [default: table on a terminal, else sysctl]')
            [CompletionResult]::new('--fake-prober', '--fake-prober', [CompletionResultType]::ParameterName, 'Tests only: measure --host paths with a deterministic fake instead of the network (`rtt=150ms,rate=500mbit`; see `measure::fake::FakeProber::from_spec`), as hyperfine''s `--debug-mode` does, so CLI tests of `advise --host` need no root and no lab')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Write the output to PATH instead of stdout (--format tuned: the profile directory, e.g. /etc/tuned/tcptune, whose name is the profile''s)')
            [CompletionResult]::new('--tuned-include', '--tuned-include', [CompletionResultType]::ParameterName, '--format tuned: stack the profile on this TuneD profile (`include=`); its settings for the same keys are overridden by tcptune''s')
            [CompletionResult]::new('--allowed-unsafe-sysctls', '--allowed-unsafe-sysctls', [CompletionResultType]::ParameterName, '--format k8s: the kubelet''s --allowed-unsafe-sysctls list (names, or prefixes ending in ''*''); the unsafe keys it allows go into the pod, the others stay comments')
            [CompletionResult]::new('--side', '--side', [CompletionResultType]::ParameterName, 'With --ssh: whose advice to print: this host''s (near; table, json and ansible show the far end''s beside it), or the far end''s alone (far), e.g. for `tcptune advise --ssh dtn2 --side far | ssh dtn2 sudo tee /etc/sysctl.d/60-tcptune.conf`')
            [CompletionResult]::new('--size', '--size', [CompletionResultType]::ParameterName, '--format table or json: time a transfer of SIZE (bytes: 2TB, 500GiB) at the advised rate and at what today''s receive max holds one flow to')
            [CompletionResult]::new('--persist-root', '--persist-root', [CompletionResultType]::ParameterName, 'Tests only: the directory standing for / in the sysctl.d files consulted')
            [CompletionResult]::new('-4', '-4', [CompletionResultType]::ParameterName, 'Use IPv4 only')
            [CompletionResult]::new('-6', '-6', [CompletionResultType]::ParameterName, 'Use IPv6 only')
            [CompletionResult]::new('--no-capacity', '--no-capacity', [CompletionResultType]::ParameterName, 'Skip the packet-train estimate of the bottleneck rate (ICMP trains of MTU-sized echo requests sent after the round-trip probes; not sent when --bandwidth is given)')
            [CompletionResult]::new('--allow-lower', '--allow-lower', [CompletionResultType]::ParameterName, 'Also recommend values lower than the running ones')
            [CompletionResult]::new('--loss-recovery', '--loss-recovery', [CompletionResultType]::ParameterName, 'Advise for a path with random loss whatever the evidence says: BBR instead of CUBIC (which collapses on random loss), and both buffer maxima at 5 x BDP instead of the clean rule (receive 2 x BDP + 10-25 % RTT headroom, send 2.5 x BDP)')
            [CompletionResult]::new('--clean-path', '--clean-path', [CompletionResultType]::ParameterName, 'Advise for a path known to be clean (no random loss, a bottleneck queue of half a BDP or more: a dedicated circuit, a lab) whatever the evidence says: CUBIC, receive 2 x BDP + 10-25 % RTT headroom, send 2.5 x BDP')
            [CompletionResult]::new('--no-path-test', '--no-path-test', [CompletionResultType]::ParameterName, 'Skip the TCP path test (a bounded transfer to `tcptune serve` on the host, which measures loss, queue depth, delivery rate and the receiver''s window share)')
            [CompletionResult]::new('--iperf3', '--iperf3', [CompletionResultType]::ParameterName, 'Run the path test against an iperf3 server on the host (with the iperf3 client) instead of tcptune serve')
            [CompletionResult]::new('--allow-iperf3', '--allow-iperf3', [CompletionResultType]::ParameterName, 'With --ssh: the far end may run `iperf3 -s` (on the tested address, for this test) where it has no tcptune of this version [default: tcptune only, a copy of this one if needed]')
            [CompletionResult]::new('--thorough', '--thorough', [CompletionResultType]::ParameterName, 'Run each direction of the path test to its bound (--test-time, else 10 s + 15 × the RTT) instead of ending it once its reading decides the class (the loss after startup surely above or below what CUBIC holds)')
            [CompletionResult]::new('--explain', '--explain', [CompletionResultType]::ParameterName, 'Add the derivation: the formula, each test''s figures, the lab''s numbers and the sources behind every setting (in every format: comments, the terminal, JSON''s `explain`)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'tcptune;apply' {
            [CompletionResult]::new('--for', '--for', [CompletionResultType]::ParameterName, 'A timed experiment: a detached process reverts the snapshot after DUR (90s, 10m, 2h; 1s to 7d)')
            [CompletionResult]::new('--wait', '--wait', [CompletionResultType]::ParameterName, 'How long to wait for another apply or revert to finish (30s, 2m; a bare number is seconds; 0: refuse at once)')
            [CompletionResult]::new('--persist-root', '--persist-root', [CompletionResultType]::ParameterName, 'Tests only: the directory standing for / in --persist paths')
            [CompletionResult]::new('--pause-before-routes', '--pause-before-routes', [CompletionResultType]::ParameterName, 'Tests only: wait SECS after the sysctls, before the host route is written')
            [CompletionResult]::new('--os', '--os', [CompletionResultType]::ParameterName, 'OS to advise for / operate on [default: the running OS]')
            [CompletionResult]::new('--sysctl-dir', '--sysctl-dir', [CompletionResultType]::ParameterName, 'Linux: the sysctls under DIR instead of /proc/sys (read; apply and revert also write)')
            [CompletionResult]::new('--sysctl-cmd', '--sysctl-cmd', [CompletionResultType]::ParameterName, 'FreeBSD/macOS: the sysctl(8) program to run')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Where snapshots live')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--fake-prober', '--fake-prober', [CompletionResultType]::ParameterName, 'Tests only: measure --host paths with a deterministic fake instead of the network (`rtt=150ms,rate=500mbit`; see `measure::fake::FakeProber::from_spec`), as hyperfine''s `--debug-mode` does, so CLI tests of `advise --host` need no root and no lab')
            [CompletionResult]::new('--host', '--host', [CompletionResultType]::ParameterName, 'Host to measure the path to (repeatable)')
            [CompletionResult]::new('--ssh', '--ssh', [CompletionResultType]::ParameterName, 'Start the path test''s peer on the far end through your own ssh (DEST as ssh takes it: host, user@host, a Host of your ssh config) and read that machine''s facts; one session, no password prompt, nothing left there. --host defaults to the host name ssh connects to')
            [CompletionResult]::new('--ssh-command', '--ssh-command', [CompletionResultType]::ParameterName, 'The ssh command to run instead of `ssh`, split into words as a shell would ("ssh -F ./config -p 2222"), as rsync -e and GIT_SSH_COMMAND take it')
            [CompletionResult]::new('--rtt', '--rtt', [CompletionResultType]::ParameterName, 'Path round-trip time, instead of measuring it (150ms)')
            [CompletionResult]::new('--bandwidth', '--bandwidth', [CompletionResultType]::ParameterName, 'Path rate, instead of the link speed (500mbit, 1gbit)')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'Profile: a shipped name (linux, freebsd, macos) or a TOML file')
            [CompletionResult]::new('--probes', '--probes', [CompletionResultType]::ParameterName, 'Probes per host')
            [CompletionResult]::new('--port', '--port', [CompletionResultType]::ParameterName, 'TCP port for the connect-timing fallback when ICMP is blocked (repeatable) [default: 443, 22, 80]')
            [CompletionResult]::new('--interval', '--interval', [CompletionResultType]::ParameterName, 'Spacing between probes')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'How long to wait for each probe''s answer')
            [CompletionResult]::new('--test-port', '--test-port', [CompletionResultType]::ParameterName, 'Port of the path test''s server [default: 5301 (tcptune serve), 5201 (iperf3)]')
            [CompletionResult]::new('--test-time', '--test-time', [CompletionResultType]::ParameterName, 'Longest path test, each direction (at most 60s) [default: 10 s + 15 x the path''s RTT, so a long path''s test leaves startup: 12.3 s at 150 ms, 19 s at 600 ms]')
            [CompletionResult]::new('--test-bytes', '--test-bytes', [CompletionResultType]::ParameterName, 'Most bytes a path test sends')
            [CompletionResult]::new('--flows', '--flows', [CompletionResultType]::ParameterName, 'Concurrent bulk flows expected, for the memory check')
            [CompletionResult]::new('--scope', '--scope', [CompletionResultType]::ParameterName, 'Where the congestion control applies: host-wide (the net.ipv4.tcp_congestion_control key, every destination), or only on the path to the one --host / --ssh host (a host route with congctl, Linux 4.0+); the buffer maxima stay host-wide either way, as caps')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Show each change (key: current -> new) and write nothing, not even a snapshot')
            [CompletionResult]::new('--persist', '--persist', [CompletionResultType]::ParameterName, 'Also make the values survive a reboot (Linux: /etc/sysctl.d/NN-tcptune.conf, NN 60 or later than any installed file that sets the same keys; FreeBSD/macOS: a marked block in /etc/sysctl.conf, boot tunables in /boot/loader.conf)')
            [CompletionResult]::new('-4', '-4', [CompletionResultType]::ParameterName, 'Use IPv4 only')
            [CompletionResult]::new('-6', '-6', [CompletionResultType]::ParameterName, 'Use IPv6 only')
            [CompletionResult]::new('--no-capacity', '--no-capacity', [CompletionResultType]::ParameterName, 'Skip the packet-train estimate of the bottleneck rate (ICMP trains of MTU-sized echo requests sent after the round-trip probes; not sent when --bandwidth is given)')
            [CompletionResult]::new('--allow-lower', '--allow-lower', [CompletionResultType]::ParameterName, 'Also recommend values lower than the running ones')
            [CompletionResult]::new('--loss-recovery', '--loss-recovery', [CompletionResultType]::ParameterName, 'Advise for a path with random loss whatever the evidence says: BBR instead of CUBIC (which collapses on random loss), and both buffer maxima at 5 x BDP instead of the clean rule (receive 2 x BDP + 10-25 % RTT headroom, send 2.5 x BDP)')
            [CompletionResult]::new('--clean-path', '--clean-path', [CompletionResultType]::ParameterName, 'Advise for a path known to be clean (no random loss, a bottleneck queue of half a BDP or more: a dedicated circuit, a lab) whatever the evidence says: CUBIC, receive 2 x BDP + 10-25 % RTT headroom, send 2.5 x BDP')
            [CompletionResult]::new('--no-path-test', '--no-path-test', [CompletionResultType]::ParameterName, 'Skip the TCP path test (a bounded transfer to `tcptune serve` on the host, which measures loss, queue depth, delivery rate and the receiver''s window share)')
            [CompletionResult]::new('--iperf3', '--iperf3', [CompletionResultType]::ParameterName, 'Run the path test against an iperf3 server on the host (with the iperf3 client) instead of tcptune serve')
            [CompletionResult]::new('--allow-iperf3', '--allow-iperf3', [CompletionResultType]::ParameterName, 'With --ssh: the far end may run `iperf3 -s` (on the tested address, for this test) where it has no tcptune of this version [default: tcptune only, a copy of this one if needed]')
            [CompletionResult]::new('--thorough', '--thorough', [CompletionResultType]::ParameterName, 'Run each direction of the path test to its bound (--test-time, else 10 s + 15 × the RTT) instead of ending it once its reading decides the class (the loss after startup surely above or below what CUBIC holds)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'tcptune;revert' {
            [CompletionResult]::new('--wait', '--wait', [CompletionResultType]::ParameterName, 'How long to wait for another apply or revert to finish (30s, 2m; a bare number is seconds; 0: refuse at once)')
            [CompletionResult]::new('--persist-root', '--persist-root', [CompletionResultType]::ParameterName, 'Tests only: the directory standing for / in --persist paths (as given to apply)')
            [CompletionResult]::new('--os', '--os', [CompletionResultType]::ParameterName, 'OS to advise for / operate on [default: the running OS]')
            [CompletionResult]::new('--sysctl-dir', '--sysctl-dir', [CompletionResultType]::ParameterName, 'Linux: the sysctls under DIR instead of /proc/sys (read; apply and revert also write)')
            [CompletionResult]::new('--sysctl-cmd', '--sysctl-cmd', [CompletionResultType]::ParameterName, 'FreeBSD/macOS: the sysctl(8) program to run')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Where snapshots live')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--force', '--force', [CompletionResultType]::ParameterName, 'Restore even values someone changed since, a snapshot from another boot or namespace')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Show what would be restored and change nothing')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'tcptune;snapshots' {
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Where snapshots live')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'tcptune;revert-timer' {
            [CompletionResult]::new('--os', '--os', [CompletionResultType]::ParameterName, 'OS to advise for / operate on [default: the running OS]')
            [CompletionResult]::new('--sysctl-dir', '--sysctl-dir', [CompletionResultType]::ParameterName, 'Linux: the sysctls under DIR instead of /proc/sys (read; apply and revert also write)')
            [CompletionResult]::new('--sysctl-cmd', '--sysctl-cmd', [CompletionResultType]::ParameterName, 'FreeBSD/macOS: the sysctl(8) program to run')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Where snapshots live')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'tcptune;check' {
            [CompletionResult]::new('--host', '--host', [CompletionResultType]::ParameterName, 'Also measure the path to HOST and check the running buffers against what it needs')
            [CompletionResult]::new('--bandwidth', '--bandwidth', [CompletionResultType]::ParameterName, 'Path rate for the buffer check, instead of the link speed (500mbit, 1gbit)')
            [CompletionResult]::new('--flows', '--flows', [CompletionResultType]::ParameterName, 'Concurrent bulk flows expected, for the memory check')
            [CompletionResult]::new('--os', '--os', [CompletionResultType]::ParameterName, 'OS to advise for / operate on [default: the running OS]')
            [CompletionResult]::new('--sysctl-dir', '--sysctl-dir', [CompletionResultType]::ParameterName, 'Linux: the sysctls under DIR instead of /proc/sys (read; apply and revert also write)')
            [CompletionResult]::new('--sysctl-cmd', '--sysctl-cmd', [CompletionResultType]::ParameterName, 'FreeBSD/macOS: the sysctl(8) program to run')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Where snapshots live')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--fake-prober', '--fake-prober', [CompletionResultType]::ParameterName, 'Tests only: measure --host paths with a deterministic fake instead of the network (`rtt=150ms,rate=500mbit`; see `measure::fake::FakeProber::from_spec`), as hyperfine''s `--debug-mode` does, so CLI tests of `advise --host` need no root and no lab')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'tcptune;serve' {
            [CompletionResult]::new('--bind', '--bind', [CompletionResultType]::ParameterName, 'Address to listen on (:: for IPv6 and IPv4)')
            [CompletionResult]::new('--port', '--port', [CompletionResultType]::ParameterName, 'TCP port to listen on (0: any free port)')
            [CompletionResult]::new('--max-buffer', '--max-buffer', [CompletionResultType]::ParameterName, 'Largest buffer a path test may force here, as the kernel counts it (0: none)')
            [CompletionResult]::new('--os', '--os', [CompletionResultType]::ParameterName, 'OS to advise for / operate on [default: the running OS]')
            [CompletionResult]::new('--sysctl-dir', '--sysctl-dir', [CompletionResultType]::ParameterName, 'Linux: the sysctls under DIR instead of /proc/sys (read; apply and revert also write)')
            [CompletionResult]::new('--sysctl-cmd', '--sysctl-cmd', [CompletionResultType]::ParameterName, 'FreeBSD/macOS: the sysctl(8) program to run')
            [CompletionResult]::new('--once', '--once', [CompletionResultType]::ParameterName, 'Exit after one test')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'tcptune;verify' {
            [CompletionResult]::new('--host', '--host', [CompletionResultType]::ParameterName, 'Host running `tcptune serve`')
            [CompletionResult]::new('--port', '--port', [CompletionResultType]::ParameterName, 'Its port')
            [CompletionResult]::new('--time', '--time', [CompletionResultType]::ParameterName, 'How long to send (at most 60s)')
            [CompletionResult]::new('--bandwidth', '--bandwidth', [CompletionResultType]::ParameterName, 'Path rate, for sizing the advice (500mbit, 1gbit)')
            [CompletionResult]::new('--os', '--os', [CompletionResultType]::ParameterName, 'OS to advise for / operate on [default: the running OS]')
            [CompletionResult]::new('--sysctl-dir', '--sysctl-dir', [CompletionResultType]::ParameterName, 'Linux: the sysctls under DIR instead of /proc/sys (read; apply and revert also write)')
            [CompletionResult]::new('--sysctl-cmd', '--sysctl-cmd', [CompletionResultType]::ParameterName, 'FreeBSD/macOS: the sysctl(8) program to run')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'tcptune;peer' {
            [CompletionResult]::new('--bind', '--bind', [CompletionResultType]::ParameterName, 'Address to listen on; repeated, the first this host can listen on (default :: for IPv6 and IPv4, or 0.0.0.0 where IPv6 is off)')
            [CompletionResult]::new('--tests', '--tests', [CompletionResultType]::ParameterName, 'Tests to serve before exiting')
            [CompletionResult]::new('--lifetime', '--lifetime', [CompletionResultType]::ParameterName, 'Exit after this long whatever happens (1s to 1h; default: two 60-s tests with their slack)')
            [CompletionResult]::new('--max-buffer', '--max-buffer', [CompletionResultType]::ParameterName, 'Largest buffer a path test may force here, as the kernel counts it (0: none)')
            [CompletionResult]::new('--os', '--os', [CompletionResultType]::ParameterName, 'OS to advise for / operate on [default: the running OS]')
            [CompletionResult]::new('--sysctl-dir', '--sysctl-dir', [CompletionResultType]::ParameterName, 'Linux: the sysctls under DIR instead of /proc/sys (read; apply and revert also write)')
            [CompletionResult]::new('--sysctl-cmd', '--sysctl-cmd', [CompletionResultType]::ParameterName, 'FreeBSD/macOS: the sysctl(8) program to run')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'tcptune;evidence' {
            [CompletionResult]::new('--host', '--host', [CompletionResultType]::ParameterName, 'The peer''s address')
            [CompletionResult]::new('--test-port', '--test-port', [CompletionResultType]::ParameterName, 'The peer''s port')
            [CompletionResult]::new('--test-time', '--test-time', [CompletionResultType]::ParameterName, 'Longest path test, each direction [default: advise''s]')
            [CompletionResult]::new('--lifetime', '--lifetime', [CompletionResultType]::ParameterName, 'Exit after this long whatever happens (1s to 1h)')
            [CompletionResult]::new('--fake-prober', '--fake-prober', [CompletionResultType]::ParameterName, 'Tests only: measure --host paths with a deterministic fake instead of the network (`rtt=150ms,rate=500mbit`; see `measure::fake::FakeProber::from_spec`), as hyperfine''s `--debug-mode` does, so CLI tests of `advise --host` need no root and no lab')
            [CompletionResult]::new('--os', '--os', [CompletionResultType]::ParameterName, 'OS to advise for / operate on [default: the running OS]')
            [CompletionResult]::new('--sysctl-dir', '--sysctl-dir', [CompletionResultType]::ParameterName, 'Linux: the sysctls under DIR instead of /proc/sys (read; apply and revert also write)')
            [CompletionResult]::new('--sysctl-cmd', '--sysctl-cmd', [CompletionResultType]::ParameterName, 'FreeBSD/macOS: the sysctl(8) program to run')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'tcptune;mesh' {
            [CompletionResult]::new('--inventory', '--inventory', [CompletionResultType]::ParameterName, 'An Ansible inventory: INI, or the JSON of `ansible-inventory -i FILE --list` (for YAML and dynamic inventories); its hosts join those named')
            [CompletionResult]::new('--group', '--group', [CompletionResultType]::ParameterName, 'Only the inventory''s hosts in this group (its children''s too)')
            [CompletionResult]::new('--pairs', '--pairs', [CompletionResultType]::ParameterName, 'Measure only these pairs, A:B, comma-separated (one test each, both directions; A runs it); with --resume, measure these again and take the others from the state')
            [CompletionResult]::new('--site', '--site', [CompletionResultType]::ParameterName, 'A site: hosts that reach each other over one LAN, and every other site over one link per pair of sites (SITE=HOST,HOST...; once per site). Tests that share no host and no link run at once')
            [CompletionResult]::new('--site-groups', '--site-groups', [CompletionResultType]::ParameterName, 'Each of these inventory groups is a site (as --site)')
            [CompletionResult]::new('--parallel', '--parallel', [CompletionResultType]::ParameterName, 'At most N tests at once [default: as many as the sites allow; 1 without sites]')
            [CompletionResult]::new('--max-age', '--max-age', [CompletionResultType]::ParameterName, 'With --resume: the oldest saved test taken [default: 1d]')
            [CompletionResult]::new('--state', '--state', [CompletionResultType]::ParameterName, 'Where each test''s evidence is saved as it comes [default: $XDG_STATE_HOME/tcptune/mesh.jsonl, else ~/.local/state/tcptune/mesh.jsonl]')
            [CompletionResult]::new('--ssh-command', '--ssh-command', [CompletionResultType]::ParameterName, 'The ssh command to run instead of `ssh`, split into words as a shell would ("ssh -F ./config")')
            [CompletionResult]::new('--test-time', '--test-time', [CompletionResultType]::ParameterName, 'Longest path test, each direction, of each pair [default: advise''s, 10 s + 15 x the path''s RTT, ended once its reading is made]')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format [default: table]')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Also write one sysctl.d file per host into DIR (HOST.conf, with its route lines)')
            [CompletionResult]::new('--resume', '--resume', [CompletionResultType]::ParameterName, 'Take the tests saved in the state (--state) no older than --max-age, and measure only the others (and those --pairs names)')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'List the pairs and what runs on each host, and measure nothing')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'tcptune;inspect' {
            [CompletionResult]::new('--host', '--host', [CompletionResultType]::ParameterName, 'Only flows to this peer (name or address)')
            [CompletionResult]::new('--port', '--port', [CompletionResultType]::ParameterName, 'Only flows with this local or remote port')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'tcptune;watch' {
            [CompletionResult]::new('--host', '--host', [CompletionResultType]::ParameterName, 'Only flows to this peer (name or address)')
            [CompletionResult]::new('--port', '--port', [CompletionResultType]::ParameterName, 'Only flows with this local or remote port')
            [CompletionResult]::new('--interval', '--interval', [CompletionResultType]::ParameterName, 'How often to read the flows (0.2s to 60s)')
            [CompletionResult]::new('--for', '--for', [CompletionResultType]::ParameterName, 'End after DUR with the summary (1s to 7d; default: until Ctrl-C)')
            [CompletionResult]::new('--size', '--size', [CompletionResultType]::ParameterName, 'The transfer''s size (2TB, 500GiB): how much is left and how long it takes at the rate now')
            [CompletionResult]::new('--bandwidth', '--bandwidth', [CompletionResultType]::ParameterName, 'The path''s rate (500mbit): each flow''s share of it, and the BDP a fix must reach')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'tcptune;profiles' {
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List the shipped profiles: name, OS, description (the default)')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Print a shipped profile''s TOML')
            [CompletionResult]::new('export', 'export', [CompletionResultType]::ParameterValue, 'Print a shipped profile''s TOML as a starting point for your own (--profile FILE)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'tcptune;profiles;list' {
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'tcptune;profiles;show' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'tcptune;profiles;export' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
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
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'tcptune;completions' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'tcptune;help' {
            [CompletionResult]::new('calc', 'calc', [CompletionResultType]::ParameterValue, 'Bandwidth-delay product and throughput calculator')
            [CompletionResult]::new('advise', 'advise', [CompletionResultType]::ParameterValue, 'Recommend sysctl settings for a path')
            [CompletionResult]::new('apply', 'apply', [CompletionResultType]::ParameterValue, 'Apply a sysctl file or fresh advice to the running kernel, snapshotting first')
            [CompletionResult]::new('revert', 'revert', [CompletionResultType]::ParameterValue, 'Put back the values a snapshot replaced')
            [CompletionResult]::new('snapshots', 'snapshots', [CompletionResultType]::ParameterValue, 'List the snapshots taken by apply')
            [CompletionResult]::new('revert-timer', 'revert-timer', [CompletionResultType]::ParameterValue, 'Internal: the detached process behind `apply --for`')
            [CompletionResult]::new('check', 'check', [CompletionResultType]::ParameterValue, 'Diagnose this host for bulk TCP: window scaling, SACK, congestion control, MTU, offloads, loss, memory, conflicts')
            [CompletionResult]::new('serve', 'serve', [CompletionResultType]::ParameterValue, 'Receive throughput tests from `tcptune verify`, and run the path tests of `advise --host` in both directions (run it as root so a path test may force its buffers)')
            [CompletionResult]::new('verify', 'verify', [CompletionResultType]::ParameterValue, 'Send a throughput test to `tcptune serve` and say what limits it (this end sends)')
            [CompletionResult]::new('peer', 'peer', [CompletionResultType]::ParameterValue, 'Internal: the far end of an SSH-started path test (`advise --ssh` starts it): serve for one session, on a free port it prints as one JSON line')
            [CompletionResult]::new('evidence', 'evidence', [CompletionResultType]::ParameterValue, 'Internal: the test end of `tcptune mesh`: measures the path to a peer and prints the evidence as one JSON document (never advice: the control host computes that)')
            [CompletionResult]::new('mesh', 'mesh', [CompletionResultType]::ParameterValue, 'Measure every pair of a fleet''s hosts through your own ssh and advise each host from all its paths')
            [CompletionResult]::new('inspect', 'inspect', [CompletionResultType]::ParameterValue, 'Live TCP flows: RTT, cwnd, delivery rate and what limits each (Linux)')
            [CompletionResult]::new('watch', 'watch', [CompletionResultType]::ParameterValue, 'Watch live flows every second: rate, RTT, what holds each now, and the fix (Linux)')
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
        'tcptune;help;apply' {
            break
        }
        'tcptune;help;revert' {
            break
        }
        'tcptune;help;snapshots' {
            break
        }
        'tcptune;help;revert-timer' {
            break
        }
        'tcptune;help;check' {
            break
        }
        'tcptune;help;serve' {
            break
        }
        'tcptune;help;verify' {
            break
        }
        'tcptune;help;peer' {
            break
        }
        'tcptune;help;evidence' {
            break
        }
        'tcptune;help;mesh' {
            break
        }
        'tcptune;help;inspect' {
            break
        }
        'tcptune;help;watch' {
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
