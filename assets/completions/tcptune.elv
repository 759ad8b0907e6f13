
use builtin;
use str;

set edit:completion:arg-completer[tcptune] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'tcptune'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'tcptune'= {
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
            cand calc 'Bandwidth-delay product and throughput calculator'
            cand advise 'Recommend sysctl settings for a path'
            cand apply 'Apply a sysctl file or fresh advice to the running kernel, snapshotting first'
            cand revert 'Put back the values a snapshot replaced'
            cand snapshots 'List the snapshots taken by apply'
            cand revert-timer 'Internal: the detached process behind `apply --for`'
            cand check 'Diagnose this host for bulk TCP: window scaling, SACK, congestion control, MTU, offloads, loss, memory, conflicts'
            cand serve 'Receive throughput tests from `tcptune verify`, and run the path tests of `advise --host` in both directions (run it as root so a path test may force its buffers)'
            cand verify 'Send a throughput test to `tcptune serve` and say what limits it (this end sends)'
            cand peer 'Internal: the far end of an SSH-started path test (`advise --ssh` starts it): serve for one session, on a free port it prints as one JSON line'
            cand evidence 'Internal: the test end of `tcptune mesh`: measures the path to a peer and prints the evidence as one JSON document (never advice: the control host computes that)'
            cand mesh 'Measure every pair of a fleet''s hosts through your own ssh and advise each host from all its paths'
            cand inspect 'Live TCP flows: RTT, cwnd, delivery rate and what limits each (Linux)'
            cand watch 'Watch live flows every second: rate, RTT, what holds each now, and the fix (Linux)'
            cand profiles 'List, show or export the shipped profiles (the rules advise renders)'
            cand man 'Print the manual page (roff, section 8): `tcptune man | man -l -`'
            cand completions 'Print a shell completion script (bash, zsh, fish, elvish, powershell)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'tcptune;calc'= {
            cand -b 'Path rate, bits per second (500mbit, 1gbit, 10G)'
            cand --bandwidth 'Path rate, bits per second (500mbit, 1gbit, 10G)'
            cand -r 'Round-trip time (25ms, 0.15s)'
            cand --rtt 'Round-trip time (25ms, 0.15s)'
            cand -w 'TCP window or buffer (64KiB, 4MiB, 65536)'
            cand --window 'TCP window or buffer (64KiB, 4MiB, 65536)'
            cand --loss 'Packet loss, percent (0.01 or 0.01%), for the Mathis bound'
            cand --mss 'Maximum segment size in bytes, for the Mathis bound'
            cand --format 'Output format'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'tcptune;advise'= {
            cand --host 'Host to measure the path to (repeatable)'
            cand --ssh 'Start the path test''s peer on the far end through your own ssh (DEST as ssh takes it: host, user@host, a Host of your ssh config) and read that machine''s facts; one session, no password prompt, nothing left there. --host defaults to the host name ssh connects to'
            cand --ssh-command 'The ssh command to run instead of `ssh`, split into words as a shell would ("ssh -F ./config -p 2222"), as rsync -e and GIT_SSH_COMMAND take it'
            cand --rtt 'Path round-trip time, instead of measuring it (150ms)'
            cand --bandwidth 'Path rate, instead of the link speed (500mbit, 1gbit)'
            cand --profile 'Profile: a shipped name (linux, freebsd, macos) or a TOML file'
            cand --probes 'Probes per host'
            cand --port 'TCP port for the connect-timing fallback when ICMP is blocked (repeatable) [default: 443, 22, 80]'
            cand --interval 'Spacing between probes'
            cand --timeout 'How long to wait for each probe''s answer'
            cand --test-port 'Port of the path test''s server [default: 5301 (tcptune serve), 5201 (iperf3)]'
            cand --test-time 'Longest path test, each direction (at most 60s) [default: 10 s + 15 x the path''s RTT, so a long path''s test leaves startup: 12.3 s at 150 ms, 19 s at 600 ms]'
            cand --test-bytes 'Most bytes a path test sends'
            cand --flows 'Concurrent bulk flows expected, for the memory check'
            cand --scope 'Where the congestion control applies: host-wide (the net.ipv4.tcp_congestion_control key, every destination), or only on the path to the one --host / --ssh host (a host route with congctl, Linux 4.0+); the buffer maxima stay host-wide either way, as caps'
            cand --os 'OS to advise for / operate on [default: the running OS]'
            cand --sysctl-dir 'Linux: the sysctls under DIR instead of /proc/sys (read; apply and revert also write)'
            cand --sysctl-cmd 'FreeBSD/macOS: the sysctl(8) program to run'
            cand --format 'Output format [default: table on a terminal, else sysctl]'
            cand --fake-prober 'Tests only: measure --host paths with a deterministic fake instead of the network (`rtt=150ms,rate=500mbit`; see `measure::fake::FakeProber::from_spec`), as hyperfine''s `--debug-mode` does, so CLI tests of `advise --host` need no root and no lab'
            cand --output 'Write the output to PATH instead of stdout (--format tuned: the profile directory, e.g. /etc/tuned/tcptune, whose name is the profile''s)'
            cand --tuned-include '--format tuned: stack the profile on this TuneD profile (`include=`); its settings for the same keys are overridden by tcptune''s'
            cand --allowed-unsafe-sysctls '--format k8s: the kubelet''s --allowed-unsafe-sysctls list (names, or prefixes ending in ''*''); the unsafe keys it allows go into the pod, the others stay comments'
            cand --side 'With --ssh: whose advice to print: this host''s (near; table, json and ansible show the far end''s beside it), or the far end''s alone (far), e.g. for `tcptune advise --ssh dtn2 --side far | ssh dtn2 sudo tee /etc/sysctl.d/60-tcptune.conf`'
            cand --size '--format table or json: time a transfer of SIZE (bytes: 2TB, 500GiB) at the advised rate and at what today''s receive max holds one flow to'
            cand --persist-root 'Tests only: the directory standing for / in the sysctl.d files consulted'
            cand -4 'Use IPv4 only'
            cand -6 'Use IPv6 only'
            cand --no-capacity 'Skip the packet-train estimate of the bottleneck rate (ICMP trains of MTU-sized echo requests sent after the round-trip probes; not sent when --bandwidth is given)'
            cand --allow-lower 'Also recommend values lower than the running ones'
            cand --loss-recovery 'Advise for a path with random loss whatever the evidence says: BBR instead of CUBIC (which collapses on random loss), and both buffer maxima at 5 x BDP instead of the clean rule (receive 2 x BDP + 10-25 % RTT headroom, send 2.5 x BDP)'
            cand --clean-path 'Advise for a path known to be clean (no random loss, a bottleneck queue of half a BDP or more: a dedicated circuit, a lab) whatever the evidence says: CUBIC, receive 2 x BDP + 10-25 % RTT headroom, send 2.5 x BDP'
            cand --no-path-test 'Skip the TCP path test (a bounded transfer to `tcptune serve` on the host, which measures loss, queue depth, delivery rate and the receiver''s window share)'
            cand --iperf3 'Run the path test against an iperf3 server on the host (with the iperf3 client) instead of tcptune serve'
            cand --allow-iperf3 'With --ssh: the far end may run `iperf3 -s` (on the tested address, for this test) where it has no tcptune of this version [default: tcptune only, a copy of this one if needed]'
            cand --thorough 'Run each direction of the path test to its bound (--test-time, else 10 s + 15 × the RTT) instead of ending it once its reading decides the class (the loss after startup surely above or below what CUBIC holds)'
            cand --explain 'Add the derivation: the formula, each test''s figures, the lab''s numbers and the sources behind every setting (in every format: comments, the terminal, JSON''s `explain`)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'tcptune;apply'= {
            cand --for 'A timed experiment: a detached process reverts the snapshot after DUR (90s, 10m, 2h; 1s to 7d)'
            cand --wait 'How long to wait for another apply or revert to finish (30s, 2m; a bare number is seconds; 0: refuse at once)'
            cand --persist-root 'Tests only: the directory standing for / in --persist paths'
            cand --pause-before-routes 'Tests only: wait SECS after the sysctls, before the host route is written'
            cand --os 'OS to advise for / operate on [default: the running OS]'
            cand --sysctl-dir 'Linux: the sysctls under DIR instead of /proc/sys (read; apply and revert also write)'
            cand --sysctl-cmd 'FreeBSD/macOS: the sysctl(8) program to run'
            cand --state-dir 'Where snapshots live'
            cand --format 'Output format'
            cand --fake-prober 'Tests only: measure --host paths with a deterministic fake instead of the network (`rtt=150ms,rate=500mbit`; see `measure::fake::FakeProber::from_spec`), as hyperfine''s `--debug-mode` does, so CLI tests of `advise --host` need no root and no lab'
            cand --host 'Host to measure the path to (repeatable)'
            cand --ssh 'Start the path test''s peer on the far end through your own ssh (DEST as ssh takes it: host, user@host, a Host of your ssh config) and read that machine''s facts; one session, no password prompt, nothing left there. --host defaults to the host name ssh connects to'
            cand --ssh-command 'The ssh command to run instead of `ssh`, split into words as a shell would ("ssh -F ./config -p 2222"), as rsync -e and GIT_SSH_COMMAND take it'
            cand --rtt 'Path round-trip time, instead of measuring it (150ms)'
            cand --bandwidth 'Path rate, instead of the link speed (500mbit, 1gbit)'
            cand --profile 'Profile: a shipped name (linux, freebsd, macos) or a TOML file'
            cand --probes 'Probes per host'
            cand --port 'TCP port for the connect-timing fallback when ICMP is blocked (repeatable) [default: 443, 22, 80]'
            cand --interval 'Spacing between probes'
            cand --timeout 'How long to wait for each probe''s answer'
            cand --test-port 'Port of the path test''s server [default: 5301 (tcptune serve), 5201 (iperf3)]'
            cand --test-time 'Longest path test, each direction (at most 60s) [default: 10 s + 15 x the path''s RTT, so a long path''s test leaves startup: 12.3 s at 150 ms, 19 s at 600 ms]'
            cand --test-bytes 'Most bytes a path test sends'
            cand --flows 'Concurrent bulk flows expected, for the memory check'
            cand --scope 'Where the congestion control applies: host-wide (the net.ipv4.tcp_congestion_control key, every destination), or only on the path to the one --host / --ssh host (a host route with congctl, Linux 4.0+); the buffer maxima stay host-wide either way, as caps'
            cand --dry-run 'Show each change (key: current -> new) and write nothing, not even a snapshot'
            cand --persist 'Also make the values survive a reboot (Linux: /etc/sysctl.d/NN-tcptune.conf, NN 60 or later than any installed file that sets the same keys; FreeBSD/macOS: a marked block in /etc/sysctl.conf, boot tunables in /boot/loader.conf)'
            cand -4 'Use IPv4 only'
            cand -6 'Use IPv6 only'
            cand --no-capacity 'Skip the packet-train estimate of the bottleneck rate (ICMP trains of MTU-sized echo requests sent after the round-trip probes; not sent when --bandwidth is given)'
            cand --allow-lower 'Also recommend values lower than the running ones'
            cand --loss-recovery 'Advise for a path with random loss whatever the evidence says: BBR instead of CUBIC (which collapses on random loss), and both buffer maxima at 5 x BDP instead of the clean rule (receive 2 x BDP + 10-25 % RTT headroom, send 2.5 x BDP)'
            cand --clean-path 'Advise for a path known to be clean (no random loss, a bottleneck queue of half a BDP or more: a dedicated circuit, a lab) whatever the evidence says: CUBIC, receive 2 x BDP + 10-25 % RTT headroom, send 2.5 x BDP'
            cand --no-path-test 'Skip the TCP path test (a bounded transfer to `tcptune serve` on the host, which measures loss, queue depth, delivery rate and the receiver''s window share)'
            cand --iperf3 'Run the path test against an iperf3 server on the host (with the iperf3 client) instead of tcptune serve'
            cand --allow-iperf3 'With --ssh: the far end may run `iperf3 -s` (on the tested address, for this test) where it has no tcptune of this version [default: tcptune only, a copy of this one if needed]'
            cand --thorough 'Run each direction of the path test to its bound (--test-time, else 10 s + 15 × the RTT) instead of ending it once its reading decides the class (the loss after startup surely above or below what CUBIC holds)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'tcptune;revert'= {
            cand --wait 'How long to wait for another apply or revert to finish (30s, 2m; a bare number is seconds; 0: refuse at once)'
            cand --persist-root 'Tests only: the directory standing for / in --persist paths (as given to apply)'
            cand --os 'OS to advise for / operate on [default: the running OS]'
            cand --sysctl-dir 'Linux: the sysctls under DIR instead of /proc/sys (read; apply and revert also write)'
            cand --sysctl-cmd 'FreeBSD/macOS: the sysctl(8) program to run'
            cand --state-dir 'Where snapshots live'
            cand --format 'Output format'
            cand --force 'Restore even values someone changed since, a snapshot from another boot or namespace'
            cand --dry-run 'Show what would be restored and change nothing'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'tcptune;snapshots'= {
            cand --state-dir 'Where snapshots live'
            cand --format 'Output format'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'tcptune;revert-timer'= {
            cand --os 'OS to advise for / operate on [default: the running OS]'
            cand --sysctl-dir 'Linux: the sysctls under DIR instead of /proc/sys (read; apply and revert also write)'
            cand --sysctl-cmd 'FreeBSD/macOS: the sysctl(8) program to run'
            cand --state-dir 'Where snapshots live'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'tcptune;check'= {
            cand --host 'Also measure the path to HOST and check the running buffers against what it needs'
            cand --bandwidth 'Path rate for the buffer check, instead of the link speed (500mbit, 1gbit)'
            cand --flows 'Concurrent bulk flows expected, for the memory check'
            cand --os 'OS to advise for / operate on [default: the running OS]'
            cand --sysctl-dir 'Linux: the sysctls under DIR instead of /proc/sys (read; apply and revert also write)'
            cand --sysctl-cmd 'FreeBSD/macOS: the sysctl(8) program to run'
            cand --state-dir 'Where snapshots live'
            cand --format 'Output format'
            cand --fake-prober 'Tests only: measure --host paths with a deterministic fake instead of the network (`rtt=150ms,rate=500mbit`; see `measure::fake::FakeProber::from_spec`), as hyperfine''s `--debug-mode` does, so CLI tests of `advise --host` need no root and no lab'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'tcptune;serve'= {
            cand --bind 'Address to listen on (:: for IPv6 and IPv4)'
            cand --port 'TCP port to listen on (0: any free port)'
            cand --max-buffer 'Largest buffer a path test may force here, as the kernel counts it (0: none)'
            cand --os 'OS to advise for / operate on [default: the running OS]'
            cand --sysctl-dir 'Linux: the sysctls under DIR instead of /proc/sys (read; apply and revert also write)'
            cand --sysctl-cmd 'FreeBSD/macOS: the sysctl(8) program to run'
            cand --once 'Exit after one test'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'tcptune;verify'= {
            cand --host 'Host running `tcptune serve`'
            cand --port 'Its port'
            cand --time 'How long to send (at most 60s)'
            cand --bandwidth 'Path rate, for sizing the advice (500mbit, 1gbit)'
            cand --os 'OS to advise for / operate on [default: the running OS]'
            cand --sysctl-dir 'Linux: the sysctls under DIR instead of /proc/sys (read; apply and revert also write)'
            cand --sysctl-cmd 'FreeBSD/macOS: the sysctl(8) program to run'
            cand --format 'Output format'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'tcptune;peer'= {
            cand --bind 'Address to listen on; repeated, the first this host can listen on (default :: for IPv6 and IPv4, or 0.0.0.0 where IPv6 is off)'
            cand --tests 'Tests to serve before exiting'
            cand --lifetime 'Exit after this long whatever happens (1s to 1h; default: two 60-s tests with their slack)'
            cand --max-buffer 'Largest buffer a path test may force here, as the kernel counts it (0: none)'
            cand --os 'OS to advise for / operate on [default: the running OS]'
            cand --sysctl-dir 'Linux: the sysctls under DIR instead of /proc/sys (read; apply and revert also write)'
            cand --sysctl-cmd 'FreeBSD/macOS: the sysctl(8) program to run'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'tcptune;evidence'= {
            cand --host 'The peer''s address'
            cand --test-port 'The peer''s port'
            cand --test-time 'Longest path test, each direction [default: advise''s]'
            cand --lifetime 'Exit after this long whatever happens (1s to 1h)'
            cand --fake-prober 'Tests only: measure --host paths with a deterministic fake instead of the network (`rtt=150ms,rate=500mbit`; see `measure::fake::FakeProber::from_spec`), as hyperfine''s `--debug-mode` does, so CLI tests of `advise --host` need no root and no lab'
            cand --os 'OS to advise for / operate on [default: the running OS]'
            cand --sysctl-dir 'Linux: the sysctls under DIR instead of /proc/sys (read; apply and revert also write)'
            cand --sysctl-cmd 'FreeBSD/macOS: the sysctl(8) program to run'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'tcptune;mesh'= {
            cand --inventory 'An Ansible inventory: INI, or the JSON of `ansible-inventory -i FILE --list` (for YAML and dynamic inventories); its hosts join those named'
            cand --group 'Only the inventory''s hosts in this group (its children''s too)'
            cand --pairs 'Measure only these pairs, A:B, comma-separated (one test each, both directions; A runs it); with --resume, measure these again and take the others from the state'
            cand --site 'A site: hosts that reach each other over one LAN, and every other site over one link per pair of sites (SITE=HOST,HOST...; once per site). Tests that share no host and no link run at once'
            cand --site-groups 'Each of these inventory groups is a site (as --site)'
            cand --parallel 'At most N tests at once [default: as many as the sites allow; 1 without sites]'
            cand --max-age 'With --resume: the oldest saved test taken [default: 1d]'
            cand --state 'Where each test''s evidence is saved as it comes [default: $XDG_STATE_HOME/tcptune/mesh.jsonl, else ~/.local/state/tcptune/mesh.jsonl]'
            cand --ssh-command 'The ssh command to run instead of `ssh`, split into words as a shell would ("ssh -F ./config")'
            cand --test-time 'Longest path test, each direction, of each pair [default: advise''s, 10 s + 15 x the path''s RTT, ended once its reading is made]'
            cand --format 'Output format [default: table]'
            cand --output 'Also write one sysctl.d file per host into DIR (HOST.conf, with its route lines)'
            cand --resume 'Take the tests saved in the state (--state) no older than --max-age, and measure only the others (and those --pairs names)'
            cand --dry-run 'List the pairs and what runs on each host, and measure nothing'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'tcptune;inspect'= {
            cand --host 'Only flows to this peer (name or address)'
            cand --port 'Only flows with this local or remote port'
            cand --format 'Output format'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'tcptune;watch'= {
            cand --host 'Only flows to this peer (name or address)'
            cand --port 'Only flows with this local or remote port'
            cand --interval 'How often to read the flows (0.2s to 60s)'
            cand --for 'End after DUR with the summary (1s to 7d; default: until Ctrl-C)'
            cand --size 'The transfer''s size (2TB, 500GiB): how much is left and how long it takes at the rate now'
            cand --bandwidth 'The path''s rate (500mbit): each flow''s share of it, and the BDP a fix must reach'
            cand --format 'Output format'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'tcptune;profiles'= {
            cand --format 'Output format'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand list 'List the shipped profiles: name, OS, description (the default)'
            cand show 'Print a shipped profile''s TOML'
            cand export 'Print a shipped profile''s TOML as a starting point for your own (--profile FILE)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'tcptune;profiles;list'= {
            cand --format 'Output format'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'tcptune;profiles;show'= {
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'tcptune;profiles;export'= {
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'tcptune;profiles;help'= {
            cand list 'List the shipped profiles: name, OS, description (the default)'
            cand show 'Print a shipped profile''s TOML'
            cand export 'Print a shipped profile''s TOML as a starting point for your own (--profile FILE)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'tcptune;profiles;help;list'= {
        }
        &'tcptune;profiles;help;show'= {
        }
        &'tcptune;profiles;help;export'= {
        }
        &'tcptune;profiles;help;help'= {
        }
        &'tcptune;man'= {
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'tcptune;completions'= {
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'tcptune;help'= {
            cand calc 'Bandwidth-delay product and throughput calculator'
            cand advise 'Recommend sysctl settings for a path'
            cand apply 'Apply a sysctl file or fresh advice to the running kernel, snapshotting first'
            cand revert 'Put back the values a snapshot replaced'
            cand snapshots 'List the snapshots taken by apply'
            cand revert-timer 'Internal: the detached process behind `apply --for`'
            cand check 'Diagnose this host for bulk TCP: window scaling, SACK, congestion control, MTU, offloads, loss, memory, conflicts'
            cand serve 'Receive throughput tests from `tcptune verify`, and run the path tests of `advise --host` in both directions (run it as root so a path test may force its buffers)'
            cand verify 'Send a throughput test to `tcptune serve` and say what limits it (this end sends)'
            cand peer 'Internal: the far end of an SSH-started path test (`advise --ssh` starts it): serve for one session, on a free port it prints as one JSON line'
            cand evidence 'Internal: the test end of `tcptune mesh`: measures the path to a peer and prints the evidence as one JSON document (never advice: the control host computes that)'
            cand mesh 'Measure every pair of a fleet''s hosts through your own ssh and advise each host from all its paths'
            cand inspect 'Live TCP flows: RTT, cwnd, delivery rate and what limits each (Linux)'
            cand watch 'Watch live flows every second: rate, RTT, what holds each now, and the fix (Linux)'
            cand profiles 'List, show or export the shipped profiles (the rules advise renders)'
            cand man 'Print the manual page (roff, section 8): `tcptune man | man -l -`'
            cand completions 'Print a shell completion script (bash, zsh, fish, elvish, powershell)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'tcptune;help;calc'= {
        }
        &'tcptune;help;advise'= {
        }
        &'tcptune;help;apply'= {
        }
        &'tcptune;help;revert'= {
        }
        &'tcptune;help;snapshots'= {
        }
        &'tcptune;help;revert-timer'= {
        }
        &'tcptune;help;check'= {
        }
        &'tcptune;help;serve'= {
        }
        &'tcptune;help;verify'= {
        }
        &'tcptune;help;peer'= {
        }
        &'tcptune;help;evidence'= {
        }
        &'tcptune;help;mesh'= {
        }
        &'tcptune;help;inspect'= {
        }
        &'tcptune;help;watch'= {
        }
        &'tcptune;help;profiles'= {
            cand list 'List the shipped profiles: name, OS, description (the default)'
            cand show 'Print a shipped profile''s TOML'
            cand export 'Print a shipped profile''s TOML as a starting point for your own (--profile FILE)'
        }
        &'tcptune;help;profiles;list'= {
        }
        &'tcptune;help;profiles;show'= {
        }
        &'tcptune;help;profiles;export'= {
        }
        &'tcptune;help;man'= {
        }
        &'tcptune;help;completions'= {
        }
        &'tcptune;help;help'= {
        }
    ]
    $completions[$command]
}
