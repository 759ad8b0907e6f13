# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_tcptune_global_optspecs
    string join \n h/help V/version
end

function __fish_tcptune_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_tcptune_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_tcptune_using_subcommand
    set -l cmd (__fish_tcptune_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c tcptune -n "__fish_tcptune_needs_command" -s h -l help -d 'Print help'
complete -c tcptune -n "__fish_tcptune_needs_command" -s V -l version -d 'Print version'
complete -c tcptune -n "__fish_tcptune_needs_command" -f -a "calc" -d 'Bandwidth-delay product and throughput calculator'
complete -c tcptune -n "__fish_tcptune_needs_command" -f -a "advise" -d 'Recommend sysctl settings for a path'
complete -c tcptune -n "__fish_tcptune_needs_command" -f -a "apply" -d 'Apply a sysctl file or fresh advice to the running kernel, snapshotting first'
complete -c tcptune -n "__fish_tcptune_needs_command" -f -a "revert" -d 'Put back the values a snapshot replaced'
complete -c tcptune -n "__fish_tcptune_needs_command" -f -a "snapshots" -d 'List the snapshots taken by apply'
complete -c tcptune -n "__fish_tcptune_needs_command" -f -a "revert-timer" -d 'Internal: the detached process behind `apply --for`'
complete -c tcptune -n "__fish_tcptune_needs_command" -f -a "check" -d 'Diagnose this host for bulk TCP: window scaling, SACK, congestion control, MTU, offloads, loss, memory, conflicts'
complete -c tcptune -n "__fish_tcptune_needs_command" -f -a "serve" -d 'Receive throughput tests from `tcptune verify`, and run the path tests of `advise --host` in both directions (run it as root so a path test may force its buffers)'
complete -c tcptune -n "__fish_tcptune_needs_command" -f -a "verify" -d 'Send a throughput test to `tcptune serve` and say what limits it (this end sends)'
complete -c tcptune -n "__fish_tcptune_needs_command" -f -a "peer" -d 'Internal: the far end of an SSH-started path test (`advise --ssh` starts it): serve for one session, on a free port it prints as one JSON line'
complete -c tcptune -n "__fish_tcptune_needs_command" -f -a "evidence" -d 'Internal: the test end of `tcptune mesh`: measures the path to a peer and prints the evidence as one JSON document (never advice: the control host computes that)'
complete -c tcptune -n "__fish_tcptune_needs_command" -f -a "mesh" -d 'Measure every pair of a fleet\'s hosts through your own ssh and advise each host from all its paths'
complete -c tcptune -n "__fish_tcptune_needs_command" -f -a "inspect" -d 'Live TCP flows: RTT, cwnd, delivery rate and what limits each (Linux)'
complete -c tcptune -n "__fish_tcptune_needs_command" -f -a "watch" -d 'Watch live flows every second: rate, RTT, what holds each now, and the fix (Linux)'
complete -c tcptune -n "__fish_tcptune_needs_command" -f -a "profiles" -d 'List, show or export the shipped profiles (the rules advise renders)'
complete -c tcptune -n "__fish_tcptune_needs_command" -f -a "man" -d 'Print the manual page (roff, section 8): `tcptune man | man -l -`'
complete -c tcptune -n "__fish_tcptune_needs_command" -f -a "completions" -d 'Print a shell completion script (bash, zsh, fish, elvish, powershell)'
complete -c tcptune -n "__fish_tcptune_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c tcptune -n "__fish_tcptune_using_subcommand calc" -s b -l bandwidth -d 'Path rate, bits per second (500mbit, 1gbit, 10G)' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand calc" -s r -l rtt -d 'Round-trip time (25ms, 0.15s)' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand calc" -s w -l window -d 'TCP window or buffer (64KiB, 4MiB, 65536)' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand calc" -l loss -d 'Packet loss, percent (0.01 or 0.01%), for the Mathis bound' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand calc" -l mss -d 'Maximum segment size in bytes, for the Mathis bound' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand calc" -l format -d 'Output format' -r -f -a "table\t'A table for people'
json\t'JSON for programs'"
complete -c tcptune -n "__fish_tcptune_using_subcommand calc" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tcptune -n "__fish_tcptune_using_subcommand advise" -l host -d 'Host to measure the path to (repeatable)' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand advise" -l ssh -d 'Start the path test\'s peer on the far end through your own ssh (DEST as ssh takes it: host, user@host, a Host of your ssh config) and read that machine\'s facts; one session, no password prompt, nothing left there. --host defaults to the host name ssh connects to' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand advise" -l ssh-command -d 'The ssh command to run instead of `ssh`, split into words as a shell would ("ssh -F ./config -p 2222"), as rsync -e and GIT_SSH_COMMAND take it' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand advise" -l rtt -d 'Path round-trip time, instead of measuring it (150ms)' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand advise" -l bandwidth -d 'Path rate, instead of the link speed (500mbit, 1gbit)' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand advise" -l profile -d 'Profile: a shipped name (linux, freebsd, macos) or a TOML file' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand advise" -l probes -d 'Probes per host' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand advise" -l port -d 'TCP port for the connect-timing fallback when ICMP is blocked (repeatable) [default: 443, 22, 80]' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand advise" -l interval -d 'Spacing between probes' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand advise" -l timeout -d 'How long to wait for each probe\'s answer' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand advise" -l test-port -d 'Port of the path test\'s server [default: 5301 (tcptune serve), 5201 (iperf3)]' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand advise" -l test-time -d 'Longest path test, each direction (at most 60s) [default: 10 s + 15 x the path\'s RTT, so a long path\'s test leaves startup: 12.3 s at 150 ms, 19 s at 600 ms]' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand advise" -l test-bytes -d 'Most bytes a path test sends' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand advise" -l flows -d 'Concurrent bulk flows expected, for the memory check' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand advise" -l scope -d 'Where the congestion control applies: host-wide (the net.ipv4.tcp_congestion_control key, every destination), or only on the path to the one --host / --ssh host (a host route with congctl, Linux 4.0+); the buffer maxima stay host-wide either way, as caps' -r -f -a "host-wide\t'Every destination: the host-wide sysctl'
path\t'Only the path to the --host / --ssh host: a host route with congctl'"
complete -c tcptune -n "__fish_tcptune_using_subcommand advise" -l os -d 'OS to advise for / operate on [default: the running OS]' -r -f -a "linux\t''
freebsd\t''
macos\t''"
complete -c tcptune -n "__fish_tcptune_using_subcommand advise" -l sysctl-dir -d 'Linux: the sysctls under DIR instead of /proc/sys (read; apply and revert also write)' -r -F
complete -c tcptune -n "__fish_tcptune_using_subcommand advise" -l sysctl-cmd -d 'FreeBSD/macOS: the sysctl(8) program to run' -r -F
complete -c tcptune -n "__fish_tcptune_using_subcommand advise" -l format -d 'Output format [default: table on a terminal, else sysctl]' -r -f -a "sysctl\t'`key = value` lines, valid for /etc/sysctl.d (Linux) or /etc/sysctl.conf (BSD)'
table\t'A table for people'
json\t'JSON for programs'
shell\t'`sysctl -w` commands'
ansible\t'An Ansible playbook (ansible.posix.sysctl), with a revert tagged `revert`'
tuned\t'A TuneD profile (tuned.conf; --output DIR writes the profile directory)'
k8s\t'A Kubernetes Pod with the sysctls a pod may set; node-wide keys listed apart'
networkd\t'A systemd-networkd drop-in with the host route of --scope path (systemd 252+)'"
complete -c tcptune -n "__fish_tcptune_using_subcommand advise" -l fake-prober -d 'Tests only: measure --host paths with a deterministic fake instead of the network (`rtt=150ms,rate=500mbit`; see `measure::fake::FakeProber::from_spec`), as hyperfine\'s `--debug-mode` does, so CLI tests of `advise --host` need no root and no lab' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand advise" -l output -d 'Write the output to PATH instead of stdout (--format tuned: the profile directory, e.g. /etc/tuned/tcptune, whose name is the profile\'s)' -r -F
complete -c tcptune -n "__fish_tcptune_using_subcommand advise" -l tuned-include -d '--format tuned: stack the profile on this TuneD profile (`include=`); its settings for the same keys are overridden by tcptune\'s' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand advise" -l allowed-unsafe-sysctls -d '--format k8s: the kubelet\'s --allowed-unsafe-sysctls list (names, or prefixes ending in \'*\'); the unsafe keys it allows go into the pod, the others stay comments' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand advise" -l side -d 'With --ssh: whose advice to print: this host\'s (near; table, json and ansible show the far end\'s beside it), or the far end\'s alone (far), e.g. for `tcptune advise --ssh dtn2 --side far | ssh dtn2 sudo tee /etc/sysctl.d/60-tcptune.conf`' -r -f -a "near\t'This host'
far\t'The far end reached with --ssh'"
complete -c tcptune -n "__fish_tcptune_using_subcommand advise" -l size -d '--format table or json: time a transfer of SIZE (bytes: 2TB, 500GiB) at the advised rate and at what today\'s receive max holds one flow to' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand advise" -l persist-root -d 'Tests only: the directory standing for / in the sysctl.d files consulted' -r -F
complete -c tcptune -n "__fish_tcptune_using_subcommand advise" -s 4 -d 'Use IPv4 only'
complete -c tcptune -n "__fish_tcptune_using_subcommand advise" -s 6 -d 'Use IPv6 only'
complete -c tcptune -n "__fish_tcptune_using_subcommand advise" -l no-capacity -d 'Skip the packet-train estimate of the bottleneck rate (ICMP trains of MTU-sized echo requests sent after the round-trip probes; not sent when --bandwidth is given)'
complete -c tcptune -n "__fish_tcptune_using_subcommand advise" -l allow-lower -d 'Also recommend values lower than the running ones'
complete -c tcptune -n "__fish_tcptune_using_subcommand advise" -l loss-recovery -d 'Advise for a path with random loss whatever the evidence says: BBR instead of CUBIC (which collapses on random loss), and both buffer maxima at 5 x BDP instead of the clean rule (receive 2 x BDP + 10-25 % RTT headroom, send 2.5 x BDP)'
complete -c tcptune -n "__fish_tcptune_using_subcommand advise" -l clean-path -d 'Advise for a path known to be clean (no random loss, a bottleneck queue of half a BDP or more: a dedicated circuit, a lab) whatever the evidence says: CUBIC, receive 2 x BDP + 10-25 % RTT headroom, send 2.5 x BDP'
complete -c tcptune -n "__fish_tcptune_using_subcommand advise" -l no-path-test -d 'Skip the TCP path test (a bounded transfer to `tcptune serve` on the host, which measures loss, queue depth, delivery rate and the receiver\'s window share)'
complete -c tcptune -n "__fish_tcptune_using_subcommand advise" -l iperf3 -d 'Run the path test against an iperf3 server on the host (with the iperf3 client) instead of tcptune serve'
complete -c tcptune -n "__fish_tcptune_using_subcommand advise" -l allow-iperf3 -d 'With --ssh: the far end may run `iperf3 -s` (on the tested address, for this test) where it has no tcptune of this version [default: tcptune only, a copy of this one if needed]'
complete -c tcptune -n "__fish_tcptune_using_subcommand advise" -l thorough -d 'Run each direction of the path test to its bound (--test-time, else 10 s + 15 × the RTT) instead of ending it once its reading decides the class (the loss after startup surely above or below what CUBIC holds)'
complete -c tcptune -n "__fish_tcptune_using_subcommand advise" -l explain -d 'Add the derivation: the formula, each test\'s figures, the lab\'s numbers and the sources behind every setting (in every format: comments, the terminal, JSON\'s `explain`)'
complete -c tcptune -n "__fish_tcptune_using_subcommand advise" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tcptune -n "__fish_tcptune_using_subcommand apply" -l for -d 'A timed experiment: a detached process reverts the snapshot after DUR (90s, 10m, 2h; 1s to 7d)' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand apply" -l wait -d 'How long to wait for another apply or revert to finish (30s, 2m; a bare number is seconds; 0: refuse at once)' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand apply" -l persist-root -d 'Tests only: the directory standing for / in --persist paths' -r -F
complete -c tcptune -n "__fish_tcptune_using_subcommand apply" -l pause-before-routes -d 'Tests only: wait SECS after the sysctls, before the host route is written' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand apply" -l os -d 'OS to advise for / operate on [default: the running OS]' -r -f -a "linux\t''
freebsd\t''
macos\t''"
complete -c tcptune -n "__fish_tcptune_using_subcommand apply" -l sysctl-dir -d 'Linux: the sysctls under DIR instead of /proc/sys (read; apply and revert also write)' -r -F
complete -c tcptune -n "__fish_tcptune_using_subcommand apply" -l sysctl-cmd -d 'FreeBSD/macOS: the sysctl(8) program to run' -r -F
complete -c tcptune -n "__fish_tcptune_using_subcommand apply" -l state-dir -d 'Where snapshots live' -r -F
complete -c tcptune -n "__fish_tcptune_using_subcommand apply" -l format -d 'Output format' -r -f -a "table\t'A table for people'
json\t'JSON for programs'"
complete -c tcptune -n "__fish_tcptune_using_subcommand apply" -l fake-prober -d 'Tests only: measure --host paths with a deterministic fake instead of the network (`rtt=150ms,rate=500mbit`; see `measure::fake::FakeProber::from_spec`), as hyperfine\'s `--debug-mode` does, so CLI tests of `advise --host` need no root and no lab' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand apply" -l host -d 'Host to measure the path to (repeatable)' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand apply" -l ssh -d 'Start the path test\'s peer on the far end through your own ssh (DEST as ssh takes it: host, user@host, a Host of your ssh config) and read that machine\'s facts; one session, no password prompt, nothing left there. --host defaults to the host name ssh connects to' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand apply" -l ssh-command -d 'The ssh command to run instead of `ssh`, split into words as a shell would ("ssh -F ./config -p 2222"), as rsync -e and GIT_SSH_COMMAND take it' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand apply" -l rtt -d 'Path round-trip time, instead of measuring it (150ms)' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand apply" -l bandwidth -d 'Path rate, instead of the link speed (500mbit, 1gbit)' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand apply" -l profile -d 'Profile: a shipped name (linux, freebsd, macos) or a TOML file' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand apply" -l probes -d 'Probes per host' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand apply" -l port -d 'TCP port for the connect-timing fallback when ICMP is blocked (repeatable) [default: 443, 22, 80]' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand apply" -l interval -d 'Spacing between probes' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand apply" -l timeout -d 'How long to wait for each probe\'s answer' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand apply" -l test-port -d 'Port of the path test\'s server [default: 5301 (tcptune serve), 5201 (iperf3)]' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand apply" -l test-time -d 'Longest path test, each direction (at most 60s) [default: 10 s + 15 x the path\'s RTT, so a long path\'s test leaves startup: 12.3 s at 150 ms, 19 s at 600 ms]' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand apply" -l test-bytes -d 'Most bytes a path test sends' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand apply" -l flows -d 'Concurrent bulk flows expected, for the memory check' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand apply" -l scope -d 'Where the congestion control applies: host-wide (the net.ipv4.tcp_congestion_control key, every destination), or only on the path to the one --host / --ssh host (a host route with congctl, Linux 4.0+); the buffer maxima stay host-wide either way, as caps' -r -f -a "host-wide\t'Every destination: the host-wide sysctl'
path\t'Only the path to the --host / --ssh host: a host route with congctl'"
complete -c tcptune -n "__fish_tcptune_using_subcommand apply" -l dry-run -d 'Show each change (key: current -> new) and write nothing, not even a snapshot'
complete -c tcptune -n "__fish_tcptune_using_subcommand apply" -l persist -d 'Also make the values survive a reboot (Linux: /etc/sysctl.d/NN-tcptune.conf, NN 60 or later than any installed file that sets the same keys; FreeBSD/macOS: a marked block in /etc/sysctl.conf, boot tunables in /boot/loader.conf)'
complete -c tcptune -n "__fish_tcptune_using_subcommand apply" -s 4 -d 'Use IPv4 only'
complete -c tcptune -n "__fish_tcptune_using_subcommand apply" -s 6 -d 'Use IPv6 only'
complete -c tcptune -n "__fish_tcptune_using_subcommand apply" -l no-capacity -d 'Skip the packet-train estimate of the bottleneck rate (ICMP trains of MTU-sized echo requests sent after the round-trip probes; not sent when --bandwidth is given)'
complete -c tcptune -n "__fish_tcptune_using_subcommand apply" -l allow-lower -d 'Also recommend values lower than the running ones'
complete -c tcptune -n "__fish_tcptune_using_subcommand apply" -l loss-recovery -d 'Advise for a path with random loss whatever the evidence says: BBR instead of CUBIC (which collapses on random loss), and both buffer maxima at 5 x BDP instead of the clean rule (receive 2 x BDP + 10-25 % RTT headroom, send 2.5 x BDP)'
complete -c tcptune -n "__fish_tcptune_using_subcommand apply" -l clean-path -d 'Advise for a path known to be clean (no random loss, a bottleneck queue of half a BDP or more: a dedicated circuit, a lab) whatever the evidence says: CUBIC, receive 2 x BDP + 10-25 % RTT headroom, send 2.5 x BDP'
complete -c tcptune -n "__fish_tcptune_using_subcommand apply" -l no-path-test -d 'Skip the TCP path test (a bounded transfer to `tcptune serve` on the host, which measures loss, queue depth, delivery rate and the receiver\'s window share)'
complete -c tcptune -n "__fish_tcptune_using_subcommand apply" -l iperf3 -d 'Run the path test against an iperf3 server on the host (with the iperf3 client) instead of tcptune serve'
complete -c tcptune -n "__fish_tcptune_using_subcommand apply" -l allow-iperf3 -d 'With --ssh: the far end may run `iperf3 -s` (on the tested address, for this test) where it has no tcptune of this version [default: tcptune only, a copy of this one if needed]'
complete -c tcptune -n "__fish_tcptune_using_subcommand apply" -l thorough -d 'Run each direction of the path test to its bound (--test-time, else 10 s + 15 × the RTT) instead of ending it once its reading decides the class (the loss after startup surely above or below what CUBIC holds)'
complete -c tcptune -n "__fish_tcptune_using_subcommand apply" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tcptune -n "__fish_tcptune_using_subcommand revert" -l wait -d 'How long to wait for another apply or revert to finish (30s, 2m; a bare number is seconds; 0: refuse at once)' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand revert" -l persist-root -d 'Tests only: the directory standing for / in --persist paths (as given to apply)' -r -F
complete -c tcptune -n "__fish_tcptune_using_subcommand revert" -l os -d 'OS to advise for / operate on [default: the running OS]' -r -f -a "linux\t''
freebsd\t''
macos\t''"
complete -c tcptune -n "__fish_tcptune_using_subcommand revert" -l sysctl-dir -d 'Linux: the sysctls under DIR instead of /proc/sys (read; apply and revert also write)' -r -F
complete -c tcptune -n "__fish_tcptune_using_subcommand revert" -l sysctl-cmd -d 'FreeBSD/macOS: the sysctl(8) program to run' -r -F
complete -c tcptune -n "__fish_tcptune_using_subcommand revert" -l state-dir -d 'Where snapshots live' -r -F
complete -c tcptune -n "__fish_tcptune_using_subcommand revert" -l format -d 'Output format' -r -f -a "table\t'A table for people'
json\t'JSON for programs'"
complete -c tcptune -n "__fish_tcptune_using_subcommand revert" -l force -d 'Restore even values someone changed since, a snapshot from another boot or namespace'
complete -c tcptune -n "__fish_tcptune_using_subcommand revert" -l dry-run -d 'Show what would be restored and change nothing'
complete -c tcptune -n "__fish_tcptune_using_subcommand revert" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tcptune -n "__fish_tcptune_using_subcommand snapshots" -l state-dir -d 'Where snapshots live' -r -F
complete -c tcptune -n "__fish_tcptune_using_subcommand snapshots" -l format -d 'Output format' -r -f -a "table\t'A table for people'
json\t'JSON for programs'"
complete -c tcptune -n "__fish_tcptune_using_subcommand snapshots" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tcptune -n "__fish_tcptune_using_subcommand revert-timer" -l os -d 'OS to advise for / operate on [default: the running OS]' -r -f -a "linux\t''
freebsd\t''
macos\t''"
complete -c tcptune -n "__fish_tcptune_using_subcommand revert-timer" -l sysctl-dir -d 'Linux: the sysctls under DIR instead of /proc/sys (read; apply and revert also write)' -r -F
complete -c tcptune -n "__fish_tcptune_using_subcommand revert-timer" -l sysctl-cmd -d 'FreeBSD/macOS: the sysctl(8) program to run' -r -F
complete -c tcptune -n "__fish_tcptune_using_subcommand revert-timer" -l state-dir -d 'Where snapshots live' -r -F
complete -c tcptune -n "__fish_tcptune_using_subcommand revert-timer" -s h -l help -d 'Print help'
complete -c tcptune -n "__fish_tcptune_using_subcommand check" -l host -d 'Also measure the path to HOST and check the running buffers against what it needs' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand check" -l bandwidth -d 'Path rate for the buffer check, instead of the link speed (500mbit, 1gbit)' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand check" -l flows -d 'Concurrent bulk flows expected, for the memory check' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand check" -l os -d 'OS to advise for / operate on [default: the running OS]' -r -f -a "linux\t''
freebsd\t''
macos\t''"
complete -c tcptune -n "__fish_tcptune_using_subcommand check" -l sysctl-dir -d 'Linux: the sysctls under DIR instead of /proc/sys (read; apply and revert also write)' -r -F
complete -c tcptune -n "__fish_tcptune_using_subcommand check" -l sysctl-cmd -d 'FreeBSD/macOS: the sysctl(8) program to run' -r -F
complete -c tcptune -n "__fish_tcptune_using_subcommand check" -l state-dir -d 'Where snapshots live' -r -F
complete -c tcptune -n "__fish_tcptune_using_subcommand check" -l format -d 'Output format' -r -f -a "table\t'A table for people'
json\t'JSON for programs'"
complete -c tcptune -n "__fish_tcptune_using_subcommand check" -l fake-prober -d 'Tests only: measure --host paths with a deterministic fake instead of the network (`rtt=150ms,rate=500mbit`; see `measure::fake::FakeProber::from_spec`), as hyperfine\'s `--debug-mode` does, so CLI tests of `advise --host` need no root and no lab' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand check" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tcptune -n "__fish_tcptune_using_subcommand serve" -l bind -d 'Address to listen on (:: for IPv6 and IPv4)' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand serve" -l port -d 'TCP port to listen on (0: any free port)' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand serve" -l max-buffer -d 'Largest buffer a path test may force here, as the kernel counts it (0: none)' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand serve" -l os -d 'OS to advise for / operate on [default: the running OS]' -r -f -a "linux\t''
freebsd\t''
macos\t''"
complete -c tcptune -n "__fish_tcptune_using_subcommand serve" -l sysctl-dir -d 'Linux: the sysctls under DIR instead of /proc/sys (read; apply and revert also write)' -r -F
complete -c tcptune -n "__fish_tcptune_using_subcommand serve" -l sysctl-cmd -d 'FreeBSD/macOS: the sysctl(8) program to run' -r -F
complete -c tcptune -n "__fish_tcptune_using_subcommand serve" -l once -d 'Exit after one test'
complete -c tcptune -n "__fish_tcptune_using_subcommand serve" -s h -l help -d 'Print help'
complete -c tcptune -n "__fish_tcptune_using_subcommand verify" -l host -d 'Host running `tcptune serve`' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand verify" -l port -d 'Its port' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand verify" -l time -d 'How long to send (at most 60s)' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand verify" -l bandwidth -d 'Path rate, for sizing the advice (500mbit, 1gbit)' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand verify" -l os -d 'OS to advise for / operate on [default: the running OS]' -r -f -a "linux\t''
freebsd\t''
macos\t''"
complete -c tcptune -n "__fish_tcptune_using_subcommand verify" -l sysctl-dir -d 'Linux: the sysctls under DIR instead of /proc/sys (read; apply and revert also write)' -r -F
complete -c tcptune -n "__fish_tcptune_using_subcommand verify" -l sysctl-cmd -d 'FreeBSD/macOS: the sysctl(8) program to run' -r -F
complete -c tcptune -n "__fish_tcptune_using_subcommand verify" -l format -d 'Output format' -r -f -a "table\t'A table for people'
json\t'JSON for programs'"
complete -c tcptune -n "__fish_tcptune_using_subcommand verify" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tcptune -n "__fish_tcptune_using_subcommand peer" -l bind -d 'Address to listen on; repeated, the first this host can listen on (default :: for IPv6 and IPv4, or 0.0.0.0 where IPv6 is off)' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand peer" -l tests -d 'Tests to serve before exiting' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand peer" -l lifetime -d 'Exit after this long whatever happens (1s to 1h; default: two 60-s tests with their slack)' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand peer" -l max-buffer -d 'Largest buffer a path test may force here, as the kernel counts it (0: none)' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand peer" -l os -d 'OS to advise for / operate on [default: the running OS]' -r -f -a "linux\t''
freebsd\t''
macos\t''"
complete -c tcptune -n "__fish_tcptune_using_subcommand peer" -l sysctl-dir -d 'Linux: the sysctls under DIR instead of /proc/sys (read; apply and revert also write)' -r -F
complete -c tcptune -n "__fish_tcptune_using_subcommand peer" -l sysctl-cmd -d 'FreeBSD/macOS: the sysctl(8) program to run' -r -F
complete -c tcptune -n "__fish_tcptune_using_subcommand peer" -s h -l help -d 'Print help'
complete -c tcptune -n "__fish_tcptune_using_subcommand evidence" -l host -d 'The peer\'s address' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand evidence" -l test-port -d 'The peer\'s port' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand evidence" -l test-time -d 'Longest path test, each direction [default: advise\'s]' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand evidence" -l lifetime -d 'Exit after this long whatever happens (1s to 1h)' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand evidence" -l fake-prober -d 'Tests only: measure --host paths with a deterministic fake instead of the network (`rtt=150ms,rate=500mbit`; see `measure::fake::FakeProber::from_spec`), as hyperfine\'s `--debug-mode` does, so CLI tests of `advise --host` need no root and no lab' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand evidence" -l os -d 'OS to advise for / operate on [default: the running OS]' -r -f -a "linux\t''
freebsd\t''
macos\t''"
complete -c tcptune -n "__fish_tcptune_using_subcommand evidence" -l sysctl-dir -d 'Linux: the sysctls under DIR instead of /proc/sys (read; apply and revert also write)' -r -F
complete -c tcptune -n "__fish_tcptune_using_subcommand evidence" -l sysctl-cmd -d 'FreeBSD/macOS: the sysctl(8) program to run' -r -F
complete -c tcptune -n "__fish_tcptune_using_subcommand evidence" -s h -l help -d 'Print help'
complete -c tcptune -n "__fish_tcptune_using_subcommand mesh" -l inventory -d 'An Ansible inventory: INI, or the JSON of `ansible-inventory -i FILE --list` (for YAML and dynamic inventories); its hosts join those named' -r -F
complete -c tcptune -n "__fish_tcptune_using_subcommand mesh" -l group -d 'Only the inventory\'s hosts in this group (its children\'s too)' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand mesh" -l pairs -d 'Measure only these pairs, A:B, comma-separated (one test each, both directions; A runs it); with --resume, measure these again and take the others from the state' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand mesh" -l site -d 'A site: hosts that reach each other over one LAN, and every other site over one link per pair of sites (SITE=HOST,HOST...; once per site). Tests that share no host and no link run at once' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand mesh" -l site-groups -d 'Each of these inventory groups is a site (as --site)' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand mesh" -l parallel -d 'At most N tests at once [default: as many as the sites allow; 1 without sites]' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand mesh" -l max-age -d 'With --resume: the oldest saved test taken [default: 1d]' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand mesh" -l state -d 'Where each test\'s evidence is saved as it comes [default: $XDG_STATE_HOME/tcptune/mesh.jsonl, else ~/.local/state/tcptune/mesh.jsonl]' -r -F
complete -c tcptune -n "__fish_tcptune_using_subcommand mesh" -l ssh-command -d 'The ssh command to run instead of `ssh`, split into words as a shell would ("ssh -F ./config")' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand mesh" -l test-time -d 'Longest path test, each direction, of each pair [default: advise\'s, 10 s + 15 x the path\'s RTT, ended once its reading is made]' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand mesh" -l format -d 'Output format [default: table]' -r -f -a "table\t'The matrix and each host\'s changes, for people'
json\t'Every pair\'s evidence and each host\'s advice, for programs'
ansible\t'One Ansible playbook, a play per host with its own values'"
complete -c tcptune -n "__fish_tcptune_using_subcommand mesh" -l output -d 'Also write one sysctl.d file per host into DIR (HOST.conf, with its route lines)' -r -F
complete -c tcptune -n "__fish_tcptune_using_subcommand mesh" -l resume -d 'Take the tests saved in the state (--state) no older than --max-age, and measure only the others (and those --pairs names)'
complete -c tcptune -n "__fish_tcptune_using_subcommand mesh" -l dry-run -d 'List the pairs and what runs on each host, and measure nothing'
complete -c tcptune -n "__fish_tcptune_using_subcommand mesh" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tcptune -n "__fish_tcptune_using_subcommand inspect" -l host -d 'Only flows to this peer (name or address)' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand inspect" -l port -d 'Only flows with this local or remote port' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand inspect" -l format -d 'Output format' -r -f -a "table\t'A table for people'
json\t'JSON for programs'"
complete -c tcptune -n "__fish_tcptune_using_subcommand inspect" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tcptune -n "__fish_tcptune_using_subcommand watch" -l host -d 'Only flows to this peer (name or address)' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand watch" -l port -d 'Only flows with this local or remote port' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand watch" -l interval -d 'How often to read the flows (0.2s to 60s)' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand watch" -l for -d 'End after DUR with the summary (1s to 7d; default: until Ctrl-C)' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand watch" -l size -d 'The transfer\'s size (2TB, 500GiB): how much is left and how long it takes at the rate now' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand watch" -l bandwidth -d 'The path\'s rate (500mbit): each flow\'s share of it, and the BDP a fix must reach' -r
complete -c tcptune -n "__fish_tcptune_using_subcommand watch" -l format -d 'Output format' -r -f -a "table\t'A table for people'
json\t'JSON for programs'"
complete -c tcptune -n "__fish_tcptune_using_subcommand watch" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tcptune -n "__fish_tcptune_using_subcommand profiles; and not __fish_seen_subcommand_from list show export help" -l format -d 'Output format' -r -f -a "table\t'A table for people'
json\t'JSON for programs'"
complete -c tcptune -n "__fish_tcptune_using_subcommand profiles; and not __fish_seen_subcommand_from list show export help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tcptune -n "__fish_tcptune_using_subcommand profiles; and not __fish_seen_subcommand_from list show export help" -f -a "list" -d 'List the shipped profiles: name, OS, description (the default)'
complete -c tcptune -n "__fish_tcptune_using_subcommand profiles; and not __fish_seen_subcommand_from list show export help" -f -a "show" -d 'Print a shipped profile\'s TOML'
complete -c tcptune -n "__fish_tcptune_using_subcommand profiles; and not __fish_seen_subcommand_from list show export help" -f -a "export" -d 'Print a shipped profile\'s TOML as a starting point for your own (--profile FILE)'
complete -c tcptune -n "__fish_tcptune_using_subcommand profiles; and not __fish_seen_subcommand_from list show export help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c tcptune -n "__fish_tcptune_using_subcommand profiles; and __fish_seen_subcommand_from list" -l format -d 'Output format' -r -f -a "table\t'A table for people'
json\t'JSON for programs'"
complete -c tcptune -n "__fish_tcptune_using_subcommand profiles; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tcptune -n "__fish_tcptune_using_subcommand profiles; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help'
complete -c tcptune -n "__fish_tcptune_using_subcommand profiles; and __fish_seen_subcommand_from export" -s h -l help -d 'Print help'
complete -c tcptune -n "__fish_tcptune_using_subcommand profiles; and __fish_seen_subcommand_from help" -f -a "list" -d 'List the shipped profiles: name, OS, description (the default)'
complete -c tcptune -n "__fish_tcptune_using_subcommand profiles; and __fish_seen_subcommand_from help" -f -a "show" -d 'Print a shipped profile\'s TOML'
complete -c tcptune -n "__fish_tcptune_using_subcommand profiles; and __fish_seen_subcommand_from help" -f -a "export" -d 'Print a shipped profile\'s TOML as a starting point for your own (--profile FILE)'
complete -c tcptune -n "__fish_tcptune_using_subcommand profiles; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c tcptune -n "__fish_tcptune_using_subcommand man" -s h -l help -d 'Print help'
complete -c tcptune -n "__fish_tcptune_using_subcommand completions" -s h -l help -d 'Print help'
complete -c tcptune -n "__fish_tcptune_using_subcommand help; and not __fish_seen_subcommand_from calc advise apply revert snapshots revert-timer check serve verify peer evidence mesh inspect watch profiles man completions help" -f -a "calc" -d 'Bandwidth-delay product and throughput calculator'
complete -c tcptune -n "__fish_tcptune_using_subcommand help; and not __fish_seen_subcommand_from calc advise apply revert snapshots revert-timer check serve verify peer evidence mesh inspect watch profiles man completions help" -f -a "advise" -d 'Recommend sysctl settings for a path'
complete -c tcptune -n "__fish_tcptune_using_subcommand help; and not __fish_seen_subcommand_from calc advise apply revert snapshots revert-timer check serve verify peer evidence mesh inspect watch profiles man completions help" -f -a "apply" -d 'Apply a sysctl file or fresh advice to the running kernel, snapshotting first'
complete -c tcptune -n "__fish_tcptune_using_subcommand help; and not __fish_seen_subcommand_from calc advise apply revert snapshots revert-timer check serve verify peer evidence mesh inspect watch profiles man completions help" -f -a "revert" -d 'Put back the values a snapshot replaced'
complete -c tcptune -n "__fish_tcptune_using_subcommand help; and not __fish_seen_subcommand_from calc advise apply revert snapshots revert-timer check serve verify peer evidence mesh inspect watch profiles man completions help" -f -a "snapshots" -d 'List the snapshots taken by apply'
complete -c tcptune -n "__fish_tcptune_using_subcommand help; and not __fish_seen_subcommand_from calc advise apply revert snapshots revert-timer check serve verify peer evidence mesh inspect watch profiles man completions help" -f -a "revert-timer" -d 'Internal: the detached process behind `apply --for`'
complete -c tcptune -n "__fish_tcptune_using_subcommand help; and not __fish_seen_subcommand_from calc advise apply revert snapshots revert-timer check serve verify peer evidence mesh inspect watch profiles man completions help" -f -a "check" -d 'Diagnose this host for bulk TCP: window scaling, SACK, congestion control, MTU, offloads, loss, memory, conflicts'
complete -c tcptune -n "__fish_tcptune_using_subcommand help; and not __fish_seen_subcommand_from calc advise apply revert snapshots revert-timer check serve verify peer evidence mesh inspect watch profiles man completions help" -f -a "serve" -d 'Receive throughput tests from `tcptune verify`, and run the path tests of `advise --host` in both directions (run it as root so a path test may force its buffers)'
complete -c tcptune -n "__fish_tcptune_using_subcommand help; and not __fish_seen_subcommand_from calc advise apply revert snapshots revert-timer check serve verify peer evidence mesh inspect watch profiles man completions help" -f -a "verify" -d 'Send a throughput test to `tcptune serve` and say what limits it (this end sends)'
complete -c tcptune -n "__fish_tcptune_using_subcommand help; and not __fish_seen_subcommand_from calc advise apply revert snapshots revert-timer check serve verify peer evidence mesh inspect watch profiles man completions help" -f -a "peer" -d 'Internal: the far end of an SSH-started path test (`advise --ssh` starts it): serve for one session, on a free port it prints as one JSON line'
complete -c tcptune -n "__fish_tcptune_using_subcommand help; and not __fish_seen_subcommand_from calc advise apply revert snapshots revert-timer check serve verify peer evidence mesh inspect watch profiles man completions help" -f -a "evidence" -d 'Internal: the test end of `tcptune mesh`: measures the path to a peer and prints the evidence as one JSON document (never advice: the control host computes that)'
complete -c tcptune -n "__fish_tcptune_using_subcommand help; and not __fish_seen_subcommand_from calc advise apply revert snapshots revert-timer check serve verify peer evidence mesh inspect watch profiles man completions help" -f -a "mesh" -d 'Measure every pair of a fleet\'s hosts through your own ssh and advise each host from all its paths'
complete -c tcptune -n "__fish_tcptune_using_subcommand help; and not __fish_seen_subcommand_from calc advise apply revert snapshots revert-timer check serve verify peer evidence mesh inspect watch profiles man completions help" -f -a "inspect" -d 'Live TCP flows: RTT, cwnd, delivery rate and what limits each (Linux)'
complete -c tcptune -n "__fish_tcptune_using_subcommand help; and not __fish_seen_subcommand_from calc advise apply revert snapshots revert-timer check serve verify peer evidence mesh inspect watch profiles man completions help" -f -a "watch" -d 'Watch live flows every second: rate, RTT, what holds each now, and the fix (Linux)'
complete -c tcptune -n "__fish_tcptune_using_subcommand help; and not __fish_seen_subcommand_from calc advise apply revert snapshots revert-timer check serve verify peer evidence mesh inspect watch profiles man completions help" -f -a "profiles" -d 'List, show or export the shipped profiles (the rules advise renders)'
complete -c tcptune -n "__fish_tcptune_using_subcommand help; and not __fish_seen_subcommand_from calc advise apply revert snapshots revert-timer check serve verify peer evidence mesh inspect watch profiles man completions help" -f -a "man" -d 'Print the manual page (roff, section 8): `tcptune man | man -l -`'
complete -c tcptune -n "__fish_tcptune_using_subcommand help; and not __fish_seen_subcommand_from calc advise apply revert snapshots revert-timer check serve verify peer evidence mesh inspect watch profiles man completions help" -f -a "completions" -d 'Print a shell completion script (bash, zsh, fish, elvish, powershell)'
complete -c tcptune -n "__fish_tcptune_using_subcommand help; and not __fish_seen_subcommand_from calc advise apply revert snapshots revert-timer check serve verify peer evidence mesh inspect watch profiles man completions help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c tcptune -n "__fish_tcptune_using_subcommand help; and __fish_seen_subcommand_from profiles" -f -a "list" -d 'List the shipped profiles: name, OS, description (the default)'
complete -c tcptune -n "__fish_tcptune_using_subcommand help; and __fish_seen_subcommand_from profiles" -f -a "show" -d 'Print a shipped profile\'s TOML'
complete -c tcptune -n "__fish_tcptune_using_subcommand help; and __fish_seen_subcommand_from profiles" -f -a "export" -d 'Print a shipped profile\'s TOML as a starting point for your own (--profile FILE)'
