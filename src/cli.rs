//! The command line, as clap types, and the one step before clap parses: the options that were
//! global, given before the command, go where it takes them ([`Cli::try_parse_args`]). The
//! contract is docs/CLI.md (kept true by tests/cli/contract.rs).

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::os::Os;
use crate::units::{Bitrate, Bytes, Span, duration_within};

/// Units, exit codes and examples after `tcptune --help`, from the same tables as the man page.
fn after_help() -> String {
    let mut s = String::from("Units:\n");
    for (what, means) in crate::units::MEANINGS {
        s.push_str(&format!("  {what:<7} {means}\n"));
    }
    s.push_str("\nExit codes:\n");
    for (code, means) in crate::error::exit::MEANINGS {
        s.push_str(&format!("  {code}  {means}\n"));
    }
    s.push_str(EXAMPLES);
    s
}

const EXAMPLES: &str = "
Examples:
  tcptune calc --bandwidth 1gbit --rtt 25ms
  tcptune advise --rtt 150ms --bandwidth 500mbit
  tcptune advise --rtt 150ms --bandwidth 500mbit --format sysctl | sudo tee /etc/sysctl.d/60-tcptune.conf
  sudo tcptune apply --rtt 150ms --bandwidth 500mbit --dry-run
  sudo tcptune apply 60-tcptune.conf && sudo tcptune revert
  sudo tcptune apply --scope path --ssh dtn2 --for 2h";

const APPLY_AFTER_HELP: &str = "\
FILE is in sysctl.d / sysctl.conf format: `key = value` or `key=value`, `#` and `;` comment lines, \
blank lines; a leading `-` turns \"key absent or read-only here\" (or a congestion control this \
network namespace may not choose) into a note. Only networking keys \
(Linux net.*; FreeBSD/macOS kern.ipc.*, net.inet.*, net.inet6.*), written with dots.

Every line is checked and every current value read before the first write; the snapshot (prior and \
new values) is saved in --state-dir before the first write; if any write fails, the ones already made \
are undone. The snapshot id goes to stdout. Undo with `tcptune revert [ID]`.

A `# route: ip route replace DEST ... congctl ALGO` line (advise --scope path writes it) sets a \
host route to DEST with that congestion control after the sysctls: tcptune's own (proto 116, a \
copy of what the kernel uses for DEST today) or the host route there, every attribute kept; \
revert puts back exactly what was there.

Exit codes: 0 applied (or nothing to change), 2 bad input (nothing written), 3 not permitted: not \
root, a read-only key, a congestion control this network namespace may not choose, a host route \
tcptune will not write (another routing table, multipath, no CAP_NET_ADMIN, a kernel without \
congctl), the kernel refused a write, another apply holds the lock (nothing left changed).";

const REVERT_AFTER_HELP: &str = "\
Restores the prior values of the latest snapshot not yet reverted that was taken here (same OS, \
sysctl target and network namespace), or of SNAPSHOT_ID, in reverse order, and checks each by reading \
it back; undoes --persist file changes. A snapshot left `applying` by a killed apply is restored too. \
Running it again says \"nothing to revert\" and exits 0.

A value changed by someone else since the apply stops the revert (nothing is changed) unless --force. \
A snapshot from an earlier boot: its runtime values ended at reboot and are left alone (its --persist \
changes are still undone) unless --force.

Exit codes: 0 reverted or nothing to revert, 2 unknown or damaged snapshot, or one from another \
namespace, 3 values changed since, a write failed, the lock is held, or not root.";

/// Where snapshots live unless `--state-dir` says otherwise.
pub const DEFAULT_STATE_DIR: &str = "/var/lib/tcptune";

#[derive(Debug, Parser)]
#[command(name = "tcptune", version, about = "TCP tuning advisor: size kernel buffers to the path's bandwidth-delay product", after_help = after_help())]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

impl Cli {
    /// Parses the command line (`args`, the program's name first) as
    /// [`Parser::try_parse_from`] does, once the options that were global and come before the
    /// subcommand are moved after it or dropped, as it takes them ([`options_after_subcommand`]).
    pub fn try_parse_args(args: impl IntoIterator<Item = OsString>) -> Result<Self, clap::Error> {
        Self::try_parse_from(options_after_subcommand(args.into_iter().collect()))
    }
}

/// The options that were global once, and may still come before the subcommand (`tcptune --os
/// freebsd advise`, docs/CLI.md); each takes a value.
const LEADING: [&str; 6] = [
    "--os",
    "--format",
    "--sysctl-dir",
    "--sysctl-cmd",
    "--state-dir",
    "--fake-prober",
];

/// `args` with the [`LEADING`] options given before the subcommand handled as when they were
/// global: one the subcommand takes moves after its name (and a nested one's: `profiles
/// list`), where clap checks it as if it had been typed there (`tcptune --format json calc`
/// is `tcptune calc --format json`, and `--format ansible` before `inspect` its usage error);
/// one it does not take is dropped, as it was ignored (a wrapper may put its `--sysctl-dir` and
/// `--state-dir` before any command). Given on both sides, an option is the subcommand's.
fn options_after_subcommand(args: Vec<OsString>) -> Vec<OsString> {
    let mut at = 1;
    let mut leading: Vec<(&str, &[OsString])> = Vec::new();
    while let Some(arg) = args.get(at).and_then(|a| a.to_str()) {
        let Some(name) = LEADING.into_iter().find(|n| arg.split('=').next() == Some(*n)) else {
            break;
        };
        let len = if arg.contains('=') { 1 } else { 2 };
        // A missing value is clap's to report.
        let Some(option) = args.get(at..at + len) else { break };
        leading.push((name, option));
        at += len;
    }
    if leading.is_empty() {
        return args;
    }
    let mut cmd = <Cli as clap::CommandFactory>::command();
    let mut end = at;
    while let Some(sub) = args.get(end).and_then(|a| cmd.find_subcommand(a)) {
        cmd = sub.clone();
        end += 1;
    }
    let rest = &args[end..];
    let named = |a: &OsString, name: &str| a.to_str().is_some_and(|a| a.split('=').next() == Some(name));
    let takes = |name: &str| cmd.get_arguments().any(|a| a.get_long() == name.strip_prefix("--"));
    let given_after = |name: &str| rest.iter().take_while(|a| *a != "--").any(|a| named(a, name));
    let mut out = args[..1].to_vec();
    out.extend_from_slice(&args[at..end]);
    for (name, option) in leading {
        if takes(name) && !given_after(name) {
            out.extend_from_slice(option);
        }
    }
    out.extend_from_slice(rest);
    out
}

/// `--os`, `--sysctl-dir`, `--sysctl-cmd`: the system a command advises for or works on, and
/// the sysctl store its running values are read from (and written to).
#[derive(Debug, Args)]
pub struct TargetArgs {
    /// OS to advise for / operate on [default: the running OS]
    #[arg(long, value_parser = os_parser())]
    pub os: Option<Os>,
    /// Linux: the sysctls under DIR instead of /proc/sys (read; apply and revert also write)
    #[arg(long, value_name = "DIR")]
    pub sysctl_dir: Option<PathBuf>,
    /// FreeBSD/macOS: the sysctl(8) program to run
    #[arg(long, value_name = "PATH")]
    pub sysctl_cmd: Option<PathBuf>,
}

/// `--state-dir`: where apply's snapshots are kept.
#[derive(Debug, Args)]
pub struct StateArgs {
    /// Where snapshots live
    #[arg(long, value_name = "DIR", default_value = DEFAULT_STATE_DIR)]
    pub state_dir: PathBuf,
}

/// `--format` of a command that reports rather than configures.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Output format
    #[arg(long, value_enum, default_value_t = ReportFormat::Table)]
    pub format: ReportFormat,
}

/// What a command that reports prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// A table for people
    Table,
    /// JSON for programs
    Json,
}

impl From<ReportFormat> for Format {
    fn from(f: ReportFormat) -> Self {
        match f {
            ReportFormat::Table => Self::Table,
            ReportFormat::Json => Self::Json,
        }
    }
}

/// The hidden `--fake-prober` of the commands that measure `--host` paths (advise, apply, check).
#[derive(Debug, Args)]
pub struct ProberArgs {
    /// Tests only: measure --host paths with a deterministic fake instead of the network
    /// (`rtt=150ms,rate=500mbit`; see `measure::fake::FakeProber::from_spec`), as hyperfine's
    /// `--debug-mode` does, so CLI tests of `advise --host` need no root and no lab
    #[arg(long, hide = true, value_name = "SPEC", value_parser = crate::measure::fake::FakeProber::from_spec)]
    pub fake_prober: Option<crate::measure::fake::FakeProber>,
}

pub use crate::output::{Format, MeshFormat, format_name};

/// `--os`: the OS names as possible values (in --help, errors and completions), mapped to
/// [`Os`], which knows nothing of clap.
fn os_parser() -> impl clap::builder::TypedValueParser<Value = Os> {
    use clap::builder::TypedValueParser as _;
    const ALL: [Os; 3] = [Os::Linux, Os::Freebsd, Os::Macos];
    clap::builder::PossibleValuesParser::new(ALL.map(Os::name)).try_map(|name| {
        ALL.into_iter()
            .find(|os| os.name() == name)
            .ok_or_else(|| format!("unknown OS \"{name}\""))
    })
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Bandwidth-delay product and throughput calculator
    Calc(CalcArgs),
    /// Recommend sysctl settings for a path
    Advise(AdviseCmdArgs),
    /// Apply a sysctl file or fresh advice to the running kernel, snapshotting first
    Apply(ApplyArgs),
    /// Put back the values a snapshot replaced
    Revert(RevertArgs),
    /// List the snapshots taken by apply
    Snapshots(SnapshotsArgs),
    /// Internal: the detached process behind `apply --for`
    #[command(hide = true, name = "revert-timer")]
    RevertTimer(RevertTimerArgs),
    /// Diagnose this host for bulk TCP: window scaling, SACK, congestion control, MTU, offloads, loss, memory, conflicts
    Check(CheckArgs),
    /// Receive throughput tests from `tcptune verify`, and run the path tests of `advise --host`
    /// in both directions (run it as root so a path test may force its buffers)
    Serve(ServeArgs),
    /// Send a throughput test to `tcptune serve` and say what limits it (this end sends)
    Verify(VerifyArgs),
    /// Internal: the far end of an SSH-started path test (`advise --ssh` starts it): serve for
    /// one session, on a free port it prints as one JSON line
    #[command(hide = true)]
    Peer(PeerArgs),
    /// Internal: the test end of `tcptune mesh`: measures the path to a peer and prints the
    /// evidence as one JSON document (never advice: the control host computes that)
    #[command(hide = true)]
    Evidence(EvidenceArgs),
    /// Measure every pair of a fleet's hosts through your own ssh and advise each host from
    /// all its paths
    Mesh(MeshArgs),
    /// Live TCP flows: RTT, cwnd, delivery rate and what limits each (Linux)
    Inspect(InspectArgs),
    /// Watch live flows every second: rate, RTT, what holds each now, and the fix (Linux)
    Watch(WatchArgs),
    /// List, show or export the shipped profiles (the rules advise renders)
    Profiles(ProfilesArgs),
    /// Print the manual page (roff, section 8): `tcptune man | man -l -`
    Man,
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell)
    Completions(CompletionsArgs),
}

#[derive(Debug, Args)]
#[command(after_help = APPLY_AFTER_HELP)]
pub struct ApplyArgs {
    /// sysctl-format file to apply, or `-` for stdin (or give --host / --rtt and --bandwidth)
    #[arg(value_name = "FILE|-")]
    pub file: Option<PathBuf>,
    /// Show each change (key: current -> new) and write nothing, not even a snapshot
    #[arg(long)]
    pub dry_run: bool,
    /// Also make the values survive a reboot (Linux: /etc/sysctl.d/NN-tcptune.conf, NN 60 or
    /// later than any installed file that sets the same keys;
    /// FreeBSD/macOS: a marked block in /etc/sysctl.conf, boot tunables in /boot/loader.conf)
    #[arg(long)]
    pub persist: bool,
    /// A timed experiment: a detached process reverts the snapshot after DUR (90s, 10m, 2h; 1s
    /// to 7d)
    #[arg(long = "for", value_name = "DUR", value_parser = parse_for, conflicts_with = "persist", allow_hyphen_values = true)]
    pub for_: Option<Duration>,
    /// How long to wait for another apply or revert to finish (30s, 2m; a bare number is
    /// seconds; 0: refuse at once)
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = parse_wait, allow_hyphen_values = true)]
    pub wait: Duration,
    /// Tests only: the directory standing for / in --persist paths
    #[arg(long, value_name = "DIR", hide = true)]
    pub persist_root: Option<PathBuf>,
    /// Tests only: wait SECS after the sysctls, before the host route is written
    #[arg(long, value_name = "SECS", hide = true)]
    pub pause_before_routes: Option<u64>,
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub state: StateArgs,
    #[command(flatten)]
    pub report: ReportArgs,
    #[command(flatten)]
    pub prober: ProberArgs,
    // Last: the heading applies to every argument after it.
    #[command(flatten, next_help_heading = "Fresh advice (instead of FILE)")]
    pub advice: AdviseArgs,
}

#[derive(Debug, Args)]
#[command(after_help = REVERT_AFTER_HELP)]
pub struct RevertArgs {
    /// The snapshot: its id, a unique prefix of it, or its number [default: the latest not reverted]
    #[arg(value_name = "SNAPSHOT_ID")]
    pub id: Option<String>,
    /// Restore even values someone changed since, a snapshot from another boot or namespace
    #[arg(long)]
    pub force: bool,
    /// Show what would be restored and change nothing
    #[arg(long)]
    pub dry_run: bool,
    /// How long to wait for another apply or revert to finish (30s, 2m; a bare number is
    /// seconds; 0: refuse at once)
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = parse_wait, allow_hyphen_values = true)]
    pub wait: Duration,
    /// Tests only: the directory standing for / in --persist paths (as given to apply)
    #[arg(long, value_name = "DIR", hide = true)]
    pub persist_root: Option<PathBuf>,
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub state: StateArgs,
    #[command(flatten)]
    pub report: ReportArgs,
}

#[derive(Debug, Args)]
pub struct SnapshotsArgs {
    #[command(flatten)]
    pub state: StateArgs,
    #[command(flatten)]
    pub report: ReportArgs,
}

/// The timer's snapshot, and the options that select the same OS, sysctl target and state
/// directory as the apply that started it.
#[derive(Debug, Args)]
pub struct RevertTimerArgs {
    pub id: String,
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub state: StateArgs,
}

/// `advise --test-time`: 1 s (the path test needs round trips to leave startup) up to the
/// longest test a server grants.
fn parse_test_time(s: &str) -> Result<Duration, String> {
    test_time(s, Duration::from_secs(1))
}

/// `verify --time`: any length above zero, as it always took, up to the longest test a server
/// grants.
fn parse_verify_time(s: &str) -> Result<Duration, String> {
    test_time(s, Duration::ZERO)
}

/// A test's length, at least `min` and at most [`crate::tcp::proto::MAX_DURATION_MS`]: the one
/// place a test's time is limited.
fn test_time(s: &str, min: Duration) -> Result<Duration, String> {
    let max = Duration::from_millis(u64::from(crate::tcp::proto::MAX_DURATION_MS));
    duration_within(s, min, max).map_err(|e| e.to_string())
}

/// `--for`: "90s", "10m", "1h30m", at least one second, at most a week.
fn parse_for(s: &str) -> Result<Duration, String> {
    duration_within(s, Duration::from_secs(1), Duration::from_secs(7 * 24 * 3600)).map_err(|e| e.to_string())
}

/// `mesh --max-age`: a second up to a year.
fn parse_max_age(s: &str) -> Result<Duration, String> {
    duration_within(s, Duration::from_secs(1), Duration::from_secs(366 * 24 * 3600)).map_err(|e| e.to_string())
}

/// `--wait`: a duration ("30s", "2m"), or as it always took, a bare number of seconds ("0":
/// refuse at once).
fn parse_wait(s: &str) -> Result<Duration, String> {
    if let Ok(secs) = s.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    duration_within(s, Duration::ZERO, Duration::MAX).map_err(|e| e.to_string())
}

#[derive(Debug, Args)]
#[command(
    after_help = "Give any two of --bandwidth, --rtt, --window; --loss (percent) with --mss and --rtt adds the Mathis bound."
)]
pub struct CalcArgs {
    /// Path rate, bits per second (500mbit, 1gbit, 10G)
    #[arg(long, short = 'b', value_name = "RATE", allow_hyphen_values = true)]
    pub bandwidth: Option<Bitrate>,
    /// Round-trip time (25ms, 0.15s)
    #[arg(long, short = 'r', value_name = "DUR", allow_hyphen_values = true)]
    pub rtt: Option<Span>,
    /// TCP window or buffer (64KiB, 4MiB, 65536)
    #[arg(long, short = 'w', value_name = "SIZE", allow_hyphen_values = true)]
    pub window: Option<Bytes>,
    /// Packet loss, percent (0.01 or 0.01%), for the Mathis bound
    #[arg(long, value_name = "PCT", value_parser = parse_percent)]
    pub loss: Option<f64>,
    /// Maximum segment size in bytes, for the Mathis bound
    #[arg(long, value_name = "BYTES", default_value = "1448")]
    pub mss: Bytes,
    #[command(flatten)]
    pub report: ReportArgs,
}

#[derive(Debug, Args)]
pub struct AdviseArgs {
    /// Host to measure the path to (repeatable)
    #[arg(long, value_name = "HOST")]
    pub host: Vec<String>,
    /// Start the path test's peer on the far end through your own ssh (DEST as ssh takes it:
    /// host, user@host, a Host of your ssh config) and read that machine's facts; one session,
    /// no password prompt, nothing left there. --host defaults to the host name ssh connects to
    #[arg(long, value_name = "DEST")]
    pub ssh: Option<String>,
    /// The ssh command to run instead of `ssh`, split into words as a shell would ("ssh -F
    /// ./config -p 2222"), as rsync -e and GIT_SSH_COMMAND take it
    #[arg(long, value_name = "CMD", requires = "ssh")]
    pub ssh_command: Option<String>,
    /// Path round-trip time, instead of measuring it (150ms)
    #[arg(long, value_name = "DUR", allow_hyphen_values = true)]
    pub rtt: Option<Span>,
    /// Path rate, instead of the link speed (500mbit, 1gbit)
    #[arg(long, value_name = "RATE", allow_hyphen_values = true)]
    pub bandwidth: Option<Bitrate>,
    /// Profile: a shipped name (linux, freebsd, macos) or a TOML file
    #[arg(long, value_name = "NAME|PATH")]
    pub profile: Option<String>,
    /// Probes per host
    #[arg(long, value_name = "N", default_value_t = crate::measure::DEFAULT_PROBES, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub probes: u32,
    /// TCP port for the connect-timing fallback when ICMP is blocked (repeatable) [default: 443, 22, 80]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub port: Vec<u16>,
    /// Use IPv4 only
    #[arg(short = '4', conflicts_with = "ipv6")]
    pub ipv4: bool,
    /// Use IPv6 only
    #[arg(short = '6')]
    pub ipv6: bool,
    /// Spacing between probes
    #[arg(long, value_name = "DUR", default_value = probe_default(&INTERVAL_ARG, crate::measure::DEFAULT_INTERVAL), allow_hyphen_values = true)]
    pub interval: Span,
    /// How long to wait for each probe's answer
    #[arg(long, value_name = "DUR", default_value = probe_default(&TIMEOUT_ARG, crate::measure::DEFAULT_TIMEOUT), allow_hyphen_values = true)]
    pub timeout: Span,
    /// Skip the packet-train estimate of the bottleneck rate (ICMP trains of MTU-sized echo
    /// requests sent after the round-trip probes; not sent when --bandwidth is given)
    #[arg(long)]
    pub no_capacity: bool,
    /// Also recommend values lower than the running ones
    #[arg(long)]
    pub allow_lower: bool,
    /// Advise for a path with random loss whatever the evidence says: BBR instead of CUBIC
    /// (which collapses on random loss), and both buffer maxima at 5 x BDP instead of the
    /// clean rule (receive 2 x BDP + 10-25 % RTT headroom, send 2.5 x BDP)
    #[arg(long)]
    pub loss_recovery: bool,
    /// Advise for a path known to be clean (no random loss, a bottleneck queue of half a BDP
    /// or more: a dedicated circuit, a lab) whatever the evidence says: CUBIC, receive 2 x BDP
    /// + 10-25 % RTT headroom, send 2.5 x BDP
    #[arg(long, conflicts_with = "loss_recovery")]
    pub clean_path: bool,
    /// Skip the TCP path test (a bounded transfer to `tcptune serve` on the host, which
    /// measures loss, queue depth, delivery rate and the receiver's window share)
    #[arg(long, conflicts_with = "iperf3")]
    pub no_path_test: bool,
    /// Run the path test against an iperf3 server on the host (with the iperf3 client)
    /// instead of tcptune serve
    #[arg(long)]
    pub iperf3: bool,
    /// With --ssh: the far end may run `iperf3 -s` (on the tested address, for this test) where
    /// it has no tcptune of this version [default: tcptune only, a copy of this one if needed]
    #[arg(long, requires = "ssh", conflicts_with = "no_path_test")]
    pub allow_iperf3: bool,
    /// Port of the path test's server [default: 5301 (tcptune serve), 5201 (iperf3)]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub test_port: Option<u16>,
    /// Longest path test, each direction (at most 60s) [default: 10 s + 15 x the path's RTT,
    /// so a long path's test leaves startup: 12.3 s at 150 ms, 19 s at 600 ms]
    #[arg(long, value_name = "DUR", value_parser = parse_test_time, allow_hyphen_values = true)]
    pub test_time: Option<Duration>,
    /// Most bytes a path test sends
    #[arg(long, value_name = "SIZE", default_value = "2GiB")]
    pub test_bytes: Bytes,
    /// Run each direction of the path test to its bound (--test-time, else 10 s + 15 × the
    /// RTT) instead of ending it once its reading decides the class (the loss after startup
    /// surely above or below what CUBIC holds)
    #[arg(long, conflicts_with = "no_path_test")]
    pub thorough: bool,
    /// Concurrent bulk flows expected, for the memory check
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub flows: u32,
    /// Where the congestion control applies: host-wide (the net.ipv4.tcp_congestion_control
    /// key, every destination), or only on the path to the one --host / --ssh host (a host
    /// route with congctl, Linux 4.0+); the buffer maxima stay host-wide either way, as caps
    #[arg(long, value_enum, default_value_t = Scope::HostWide)]
    pub scope: Scope,
}

/// `--scope`: where the advised congestion control applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Scope {
    /// Every destination: the host-wide sysctl
    HostWide,
    /// Only the path to the --host / --ssh host: a host route with congctl
    Path,
}

/// `tcptune mesh`: the hosts (named, or an Ansible inventory's), which pairs, and the output.
#[derive(Debug, Args)]
pub struct MeshArgs {
    /// Hosts as ssh takes them (host, user@host, a Host of your ssh config); at least two
    /// with --inventory's
    #[arg(value_name = "HOST")]
    pub hosts: Vec<String>,
    /// An Ansible inventory: INI, or the JSON of `ansible-inventory -i FILE --list` (for YAML
    /// and dynamic inventories); its hosts join those named
    #[arg(long, value_name = "FILE")]
    pub inventory: Option<PathBuf>,
    /// Only the inventory's hosts in this group (its children's too)
    #[arg(long, value_name = "GROUP", requires = "inventory")]
    pub group: Option<String>,
    /// Measure only these pairs, A:B, comma-separated (one test each, both directions; A runs
    /// it); with --resume, measure these again and take the others from the state
    #[arg(long, value_name = "A:B,...")]
    pub pairs: Option<String>,
    /// A site: hosts that reach each other over one LAN, and every other site over one link
    /// per pair of sites (SITE=HOST,HOST...; once per site). Tests that share no host and no
    /// link run at once
    #[arg(long = "site", value_name = "SITE=HOST,...")]
    pub sites: Vec<String>,
    /// Each of these inventory groups is a site (as --site)
    #[arg(long, value_name = "GROUP,...", requires = "inventory")]
    pub site_groups: Option<String>,
    /// At most N tests at once [default: as many as the sites allow; 1 without sites]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=128))]
    pub parallel: Option<u16>,
    /// Take the tests saved in the state (--state) no older than --max-age, and measure only
    /// the others (and those --pairs names)
    #[arg(long)]
    pub resume: bool,
    /// With --resume: the oldest saved test taken [default: 1d]
    #[arg(long, value_name = "DUR", value_parser = parse_max_age, requires = "resume")]
    pub max_age: Option<Duration>,
    /// Where each test's evidence is saved as it comes [default: $XDG_STATE_HOME/tcptune/mesh.jsonl,
    /// else ~/.local/state/tcptune/mesh.jsonl]
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
    /// List the pairs and what runs on each host, and measure nothing
    #[arg(long)]
    pub dry_run: bool,
    /// The ssh command to run instead of `ssh`, split into words as a shell would ("ssh -F
    /// ./config")
    #[arg(long, value_name = "CMD")]
    pub ssh_command: Option<String>,
    /// Longest path test, each direction, of each pair [default: advise's, 10 s + 15 x the
    /// path's RTT, ended once its reading is made]
    #[arg(long, value_name = "DUR", value_parser = parse_test_time, allow_hyphen_values = true)]
    pub test_time: Option<Duration>,
    /// Output format [default: table]
    #[arg(long, value_enum, default_value_t = MeshFormat::Table)]
    pub format: MeshFormat,
    /// Also write one sysctl.d file per host into DIR (HOST.conf, with its route lines)
    #[arg(long, value_name = "DIR")]
    pub output: Option<PathBuf>,
}

/// `tcptune advise`: the advice's arguments (shared with apply), the system it is for, and
/// where and how the advice is written (advise's own).
#[derive(Debug, Args)]
pub struct AdviseCmdArgs {
    #[command(flatten)]
    pub advice: AdviseArgs,
    #[command(flatten)]
    pub target: TargetArgs,
    /// Output format [default: table on a terminal, else sysctl]
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    #[command(flatten)]
    pub prober: ProberArgs,
    #[command(flatten, next_help_heading = "Output for a fleet")]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Write the output to PATH instead of stdout (--format tuned: the profile directory,
    /// e.g. /etc/tuned/tcptune, whose name is the profile's)
    #[arg(long, value_name = "PATH")]
    pub output: Option<PathBuf>,
    /// --format tuned: stack the profile on this TuneD profile (`include=`); its settings for
    /// the same keys are overridden by tcptune's
    #[arg(long, value_name = "PROFILE", value_parser = parse_tuned_include)]
    pub tuned_include: Option<String>,
    /// --format k8s: the kubelet's --allowed-unsafe-sysctls list (names, or prefixes ending in
    /// '*'); the unsafe keys it allows go into the pod, the others stay comments
    #[arg(long, value_name = "LIST", value_parser = parse_allowed_unsafe_sysctls)]
    pub allowed_unsafe_sysctls: Option<crate::fleet::k8s::Allowlist>,
    /// With --ssh: whose advice to print: this host's (near; table, json and ansible show
    /// the far end's beside it), or the far end's alone (far), e.g. for
    /// `tcptune advise --ssh dtn2 --side far | ssh dtn2 sudo tee /etc/sysctl.d/60-tcptune.conf`
    #[arg(long, value_enum, default_value_t = Side::Near)]
    pub side: Side,
    /// Add the derivation: the formula, each test's figures, the lab's numbers and the sources
    /// behind every setting (in every format: comments, the terminal, JSON's `explain`)
    #[arg(long)]
    pub explain: bool,
    /// --format table or json: time a transfer of SIZE (bytes: 2TB, 500GiB) at the advised
    /// rate and at what today's receive max holds one flow to
    #[arg(long, value_name = "SIZE")]
    pub size: Option<Bytes>,
    /// Tests only: the directory standing for / in the sysctl.d files consulted
    #[arg(long, value_name = "DIR", hide = true)]
    pub persist_root: Option<PathBuf>,
}

/// Which end's advice `advise --ssh` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Side {
    /// This host
    Near,
    /// The far end reached with --ssh
    Far,
}

/// A list-valued option (names split at commas or white space) holds no control character
/// or line separator: each list ends up in a file another program reads by lines (TuneD's
/// `include=`, the kubelet's flag), whose loader a newline trimmed off here would break or
/// forge a line in.
fn plain_list(s: &str) -> Result<&str, String> {
    let shown = crate::text::escape(s);
    if shown == s {
        Ok(s)
    } else {
        Err(format!(
            "\"{shown}\": a list of names holds no control characters (newline, tab, ESC)"
        ))
    }
}

/// `--tuned-include`: TuneD profile names (their check is advise's, once the format is known).
fn parse_tuned_include(s: &str) -> Result<String, String> {
    plain_list(s).map(str::to_string)
}

/// `--allowed-unsafe-sysctls`: the kubelet's list ([`crate::fleet::k8s::parse_patterns`]).
fn parse_allowed_unsafe_sysctls(s: &str) -> Result<crate::fleet::k8s::Allowlist, String> {
    plain_list(s).and_then(crate::fleet::k8s::parse_patterns)
}

static INTERVAL_ARG: std::sync::OnceLock<String> = std::sync::OnceLock::new();
static TIMEOUT_ARG: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// A probe default as the command line writes it (`20ms`, `1s`), from measure's constant, so
/// `--help` and the probes agree by construction.
fn probe_default(cell: &'static std::sync::OnceLock<String>, d: Duration) -> &'static str {
    cell.get_or_init(|| {
        if d.subsec_nanos() == 0 {
            format!("{}s", d.as_secs())
        } else {
            format!("{}ms", d.as_millis())
        }
    })
}

impl AdviseArgs {
    /// The typed request for the advice module; `progress`: where the probes report.
    pub fn request(
        &self,
        progress: Option<std::sync::Arc<dyn crate::measure::Progress>>,
    ) -> crate::advice::AdviceRequest {
        crate::advice::AdviceRequest {
            hosts: self.host.clone(),
            rtt: self.rtt,
            bandwidth: self.bandwidth,
            profile: self.profile.clone(),
            probe: crate::measure::ProbeOptions {
                probes: self.probes,
                interval: self.interval.as_std(),
                timeout: self.timeout.as_std(),
                ports: self.port.clone(),
                family: if self.ipv4 {
                    Some(crate::measure::Family::V4)
                } else if self.ipv6 {
                    Some(crate::measure::Family::V6)
                } else {
                    None
                },
                progress,
                capacity: !self.no_capacity,
                watch: true,
            },
            allow_lower: self.allow_lower,
            loss_recovery: self.loss_recovery,
            clean_path: self.clean_path,
            flows: self.flows,
            test_time: self.test_time,
            test: crate::measure::EvidenceRequest {
                mode: if self.no_path_test {
                    crate::measure::TestMode::Off
                } else if self.iperf3 {
                    crate::measure::TestMode::Iperf3
                } else {
                    crate::measure::TestMode::Tcptune
                },
                port: self.test_port,
                max_bytes: self.test_bytes.get().max(1),
                full: self.thorough,
                ..crate::advice::default_test()
            },
            scope: match self.scope {
                Scope::HostWide => crate::advice::scope::Scope::HostWide,
                Scope::Path => crate::advice::scope::Scope::Path,
            },
            ssh_host: None,
        }
    }
}

/// `tcptune profiles` alone lists, so it takes list's `--format` (and then no subcommand).
#[derive(Debug, Args)]
#[command(
    args_conflicts_with_subcommands = true,
    after_help = "Your own: tcptune profiles export linux > my.toml, edit it, then tcptune advise --profile my.toml ..."
)]
pub struct ProfilesArgs {
    #[command(flatten)]
    pub list: ReportArgs,
    #[command(subcommand)]
    pub command: Option<ProfilesCommand>,
}

#[derive(Debug, Subcommand)]
pub enum ProfilesCommand {
    /// List the shipped profiles: name, OS, description (the default)
    List(ReportArgs),
    /// Print a shipped profile's TOML
    #[command(after_help = TEMPLATE_AFTER_HELP)]
    Show(ProfileName),
    /// Print a shipped profile's TOML as a starting point for your own (--profile FILE)
    #[command(after_help = TEMPLATE_AFTER_HELP)]
    Export(ProfileName),
}

/// After `profiles show` and `export`: why they take no --format, and where the formats are.
const TEMPLATE_AFTER_HELP: &str = "\
The TOML is a template, with no values until advise sizes it for a path; advise renders it in any \
format: tcptune advise --profile NAME --rtt 150ms --bandwidth 500mbit --format ansible";

#[derive(Debug, Args)]
pub struct ProfileName {
    /// A shipped profile
    #[arg(value_name = "NAME", value_parser = clap::builder::PossibleValuesParser::new(
        crate::profile::SHIPPED.iter().map(|(name, _)| *name)
    ))]
    pub name: String,
}

#[derive(Debug, Args)]
#[command(after_help = "\
Install for yourself, e.g. (the Debian package installs bash, zsh and fish completions):
  bash: tcptune completions bash > ~/.local/share/bash-completion/completions/tcptune
  zsh:  tcptune completions zsh > ~/.zfunc/_tcptune   (and fpath+=~/.zfunc in ~/.zshrc)
  fish: tcptune completions fish > ~/.config/fish/completions/tcptune.fish")]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_name = "SHELL", value_enum)]
    pub shell: clap_complete::Shell,
}

/// "0.01", "0.01%" → 0.01 (percent, 0 < p ≤ 100).
fn parse_percent(s: &str) -> Result<f64, String> {
    let t = s.trim().trim_end_matches('%');
    match t.parse::<f64>() {
        Ok(p) if p > 0.0 && p <= 100.0 => Ok(p),
        _ => Err(format!(
            "invalid loss \"{s}\": expected a percentage above 0 and at most 100, e.g. 0.01 or 0.5%"
        )),
    }
}

#[derive(Debug, Args)]
#[command(after_help = "\
Each line is a finding with a status (ok, warn, fail) and, when not ok, a fix. Exit status 1 when any \
finding is warn or fail. With --sysctl-dir or --sysctl-cmd only the sysctl values are checked; on the \
machine itself (Linux) also the interfaces (MTU, TSO/GSO/GRO offloads, duplex, qdisc), retransmissions \
(/proc/net/snmp), TCP memory, sysctl.d files setting the same keys, and tuning daemons (tuned, bpftune).")]
pub struct CheckArgs {
    /// Also measure the path to HOST and check the running buffers against what it needs
    #[arg(long, value_name = "HOST")]
    pub host: Option<String>,
    /// Path rate for the buffer check, instead of the link speed (500mbit, 1gbit)
    #[arg(long, value_name = "RATE", allow_hyphen_values = true)]
    pub bandwidth: Option<Bitrate>,
    /// Concurrent bulk flows expected, for the memory check
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub flows: u32,
    #[command(flatten)]
    pub target: TargetArgs,
    // The snapshots that name the host routes tcptune added (`routes:tcptune`).
    #[command(flatten)]
    pub state: StateArgs,
    #[command(flatten)]
    pub report: ReportArgs,
    #[command(flatten)]
    pub prober: ProberArgs,
}

#[derive(Debug, Args)]
#[command(after_help = "\
serve RECEIVES the test of `tcptune verify`: the data flows from verify (the sender) to this machine, so run \
serve where the data would arrive. For the path test of `advise --host` it receives (forward) and then \
SENDS (reverse: the same test with this end sending; a client of protocol 3 asks for it), so one serve measures \
both directions. It serves one test at a time (others get \"busy\"), grants at most 60 s per test, and \
closes connections that do not speak the tcptune protocol. Anyone who can reach the port can run a test: \
bind to one address with --bind, or firewall the port. verify's test sets no socket buffer sizes, so it sees \
the kernel's autotuning limits, as scp, rsync or HTTP would. The path test asks for a buffer (the receive \
buffer of a forward test, the send buffer of a reverse one), which serve forces when it runs as root, up to \
--max-buffer as the kernel counts it (Linux keeps twice what is asked). The default, 1 GiB, holds what \
advise asks on a 1 Gbit/s path at 600 ms (6 x its 75 MB BDP, kept as 900 MB); a client cannot make serve \
pin more.")]
pub struct ServeArgs {
    /// Address to listen on (:: for IPv6 and IPv4)
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0")]
    pub bind: std::net::IpAddr,
    /// TCP port to listen on (0: any free port)
    #[arg(long, value_name = "N", default_value_t = crate::tcp::proto::DEFAULT_PORT)]
    pub port: u16,
    /// Exit after one test
    #[arg(long)]
    pub once: bool,
    /// Largest buffer a path test may force here, as the kernel counts it (0: none)
    #[arg(long, value_name = "SIZE", default_value = "1GiB", value_parser = parse_max_buffer)]
    pub max_buffer: Bytes,
    #[command(flatten)]
    pub target: TargetArgs,
}

#[derive(Debug, Args)]
#[command(after_help = "\
peer is `tcptune serve` for one SSH session, started on the far end by `advise --ssh`: it listens on a \
free port, prints one JSON line on stdout ({\"tcptune_peer\":1,\"version\":...,\"protocol\":3,\"port\":N}), \
serves at most --tests tests one at a time (a forward and a reverse path test by default), and exits \
when its stdin ends (the SSH session is over), after those tests, or after --lifetime, whichever comes \
first. It writes nothing to disk; its lines go to stderr.")]
pub struct PeerArgs {
    /// Address to listen on; repeated, the first this host can listen on (default :: for
    /// IPv6 and IPv4, or 0.0.0.0 where IPv6 is off)
    #[arg(long, value_name = "ADDR")]
    pub bind: Vec<std::net::IpAddr>,
    /// Tests to serve before exiting
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub tests: u32,
    /// Exit after this long whatever happens (1s to 1h; default: two 60-s tests with their slack)
    #[arg(long, value_name = "DUR", default_value = "3m", value_parser = parse_lifetime, allow_hyphen_values = true)]
    pub lifetime: Duration,
    /// Largest buffer a path test may force here, as the kernel counts it (0: none)
    #[arg(long, value_name = "SIZE", default_value = "1GiB", value_parser = parse_max_buffer)]
    pub max_buffer: Bytes,
    #[command(flatten)]
    pub target: TargetArgs,
}

#[derive(Debug, Args)]
#[command(after_help = "\
evidence is the test end of `tcptune mesh`, started there through the user's ssh: it probes HOST, runs the \
path test against the `tcptune peer` listening on HOST:PORT (both directions), and prints what it measured \
as one JSON document (docs/CLI.md, \"What a test end sends\"): numbers and readings only, no setting. It \
exits when its stdin ends (the session is over) or after --lifetime, whichever comes first.")]
pub struct EvidenceArgs {
    /// The peer's address
    #[arg(long, value_name = "ADDR")]
    pub host: std::net::IpAddr,
    /// The peer's port
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub test_port: u16,
    /// Longest path test, each direction [default: advise's]
    #[arg(long, value_name = "DUR", value_parser = parse_test_time, allow_hyphen_values = true)]
    pub test_time: Option<Duration>,
    /// Exit after this long whatever happens (1s to 1h)
    #[arg(long, value_name = "DUR", default_value = "3m", value_parser = parse_lifetime, allow_hyphen_values = true)]
    pub lifetime: Duration,
    #[command(flatten)]
    pub prober: ProberArgs,
    #[command(flatten)]
    pub target: TargetArgs,
}

/// `peer --lifetime`: 1 s to an hour (90s, 3m, 1h).
fn parse_lifetime(s: &str) -> Result<Duration, String> {
    duration_within(s, Duration::from_secs(1), Duration::from_secs(3600)).map_err(|e| e.to_string())
}

/// `serve --max-buffer`: at most what a kernel reports for a socket buffer (a C int).
fn parse_max_buffer(s: &str) -> Result<Bytes, String> {
    let b = s.parse::<Bytes>().map_err(|e| e.to_string())?;
    let max = crate::tcp::MAX_SOCKET_BUFFER;
    if b.get() > max {
        return Err(format!(
            "invalid buffer size \"{s}\": a socket buffer is at most {max} bytes"
        ));
    }
    Ok(b)
}

#[derive(Debug, Args)]
#[command(after_help = "\
verify SENDS to `tcptune serve` on HOST (which receives) for --time, then reports the goodput, the RTT and, \
from the sender's TCP_INFO (Linux), how much of the time the flow was limited by the receiver's window, \
by the local send buffer, or by the network (congestion window), with the fix that follows, sized by the \
same rule as advise for the measured RTT and --bandwidth (default: the link speed, else 1 Gbit/s assumed).")]
pub struct VerifyArgs {
    /// Host running `tcptune serve`
    #[arg(long, value_name = "HOST")]
    pub host: String,
    /// Its port
    #[arg(long, value_name = "N", default_value_t = crate::tcp::proto::DEFAULT_PORT, value_parser = clap::value_parser!(u16).range(1..))]
    pub port: u16,
    /// How long to send (at most 60s)
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = parse_verify_time, allow_hyphen_values = true)]
    pub time: Duration,
    /// Path rate, for sizing the advice (500mbit, 1gbit)
    #[arg(long, value_name = "RATE", allow_hyphen_values = true)]
    pub bandwidth: Option<Bitrate>,
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub report: ReportArgs,
}

#[derive(Debug, Args)]
#[command(after_help = "\
Lists the established TCP connections of this network namespace with the kernel's view of each \
(INET_DIAG): smoothed RTT, congestion window, delivery rate, bytes in flight, and for a sending flow the \
share of its busy time limited by the peer's receive window, by the local send buffer, or by the network. \
Run it on the sending side of a transfer (the machine running scp or rsync upload) to see whether buffers are \
the problem. Linux only.")]
pub struct InspectArgs {
    /// Only flows to this peer (name or address)
    #[arg(long, value_name = "HOST")]
    pub host: Option<String>,
    /// Only flows with this local or remote port
    #[arg(long, value_name = "N")]
    pub port: Option<u16>,
    #[command(flatten)]
    pub report: ReportArgs,
}

#[derive(Debug, Args)]
#[command(after_help = "\
Every interval, for each established TCP flow of this network namespace (INET_DIAG): its rate, its RTT \
against its lowest, and what held it over that interval (the kernel's busy, receive-window-limited and \
send-buffer-limited times, differenced): the peer's receive window, this host's send buffer, the network \
(the congestion window), or its application: with the fix in one line. On a terminal the view is redrawn \
in place; piped, one line per change (a flow starts, ends, or is held by something else); with --format \
json, one JSON object per interval. Ctrl-C or --for ends it with a summary. Run it on the sending side. \
Linux only.")]
pub struct WatchArgs {
    /// Only flows to this peer (name or address)
    #[arg(long, value_name = "HOST")]
    pub host: Option<String>,
    /// Only flows with this local or remote port
    #[arg(long, value_name = "N")]
    pub port: Option<u16>,
    /// How often to read the flows (0.2s to 60s)
    #[arg(long, value_name = "DUR", default_value = "1s", value_parser = parse_interval, allow_hyphen_values = true)]
    pub interval: Duration,
    /// End after DUR with the summary (1s to 7d; default: until Ctrl-C)
    #[arg(long = "for", value_name = "DUR", value_parser = parse_for, allow_hyphen_values = true)]
    pub for_: Option<Duration>,
    /// The transfer's size (2TB, 500GiB): how much is left and how long it takes at the rate now
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true)]
    pub size: Option<Bytes>,
    /// The path's rate (500mbit): each flow's share of it, and the BDP a fix must reach
    #[arg(long, value_name = "RATE", allow_hyphen_values = true)]
    pub bandwidth: Option<Bitrate>,
    #[command(flatten)]
    pub report: ReportArgs,
}

/// `watch --interval`: 0.2 s to a minute.
fn parse_interval(s: &str) -> Result<Duration, String> {
    duration_within(s, Duration::from_millis(200), Duration::from_secs(60)).map_err(|e| e.to_string())
}

/// The options of a command that set up its context, each None where the command takes none
/// (then its default holds: the running OS and its store, the default state directory).
#[derive(Default)]
pub struct Taken<'a> {
    pub target: Option<&'a TargetArgs>,
    pub state: Option<&'a StateArgs>,
    pub format: Option<Format>,
    pub prober: Option<&'a ProberArgs>,
}

impl<'a> Taken<'a> {
    pub fn of(command: Option<&'a Command>) -> Self {
        let none = Self::default();
        let report = |r: &ReportArgs| Some(Format::from(r.format));
        let Some(command) = command else {
            return none;
        };
        match command {
            Command::Calc(a) => Self {
                format: report(&a.report),
                ..none
            },
            Command::Advise(a) => Self {
                target: Some(&a.target),
                format: a.format,
                prober: Some(&a.prober),
                ..none
            },
            Command::Apply(a) => Self {
                target: Some(&a.target),
                state: Some(&a.state),
                format: report(&a.report),
                prober: Some(&a.prober),
            },
            Command::Revert(a) => Self {
                target: Some(&a.target),
                state: Some(&a.state),
                format: report(&a.report),
                ..none
            },
            Command::Snapshots(a) => Self {
                state: Some(&a.state),
                format: report(&a.report),
                ..none
            },
            Command::RevertTimer(a) => Self {
                target: Some(&a.target),
                state: Some(&a.state),
                ..none
            },
            Command::Check(a) => Self {
                target: Some(&a.target),
                state: Some(&a.state),
                format: report(&a.report),
                prober: Some(&a.prober),
            },
            Command::Serve(ServeArgs { target, .. }) | Command::Peer(PeerArgs { target, .. }) => Self {
                target: Some(target),
                ..none
            },
            Command::Verify(a) => Self {
                target: Some(&a.target),
                format: report(&a.report),
                ..none
            },
            Command::Inspect(a) => Self {
                format: report(&a.report),
                ..none
            },
            Command::Watch(a) => Self {
                format: report(&a.report),
                ..none
            },
            Command::Evidence(a) => Self {
                target: Some(&a.target),
                prober: Some(&a.prober),
                ..none
            },
            Command::Mesh(_) => none,
            Command::Profiles(a) => match &a.command {
                None => Self {
                    format: report(&a.list),
                    ..none
                },
                Some(ProfilesCommand::List(r)) => Self {
                    format: report(r),
                    ..none
                },
                Some(_) => none,
            },
            Command::Man | Command::Completions(_) => none,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory as _;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn the_fake_prober_is_hidden() {
        let mut cmd = Cli::command();
        assert!(!cmd.render_long_help().to_string().contains("fake-prober"));
        for sub in ["advise", "check", "apply"] {
            let sub = cmd.find_subcommand_mut(sub).expect("subcommand");
            assert!(!sub.render_long_help().to_string().contains("fake-prober"));
        }
        use clap::Parser as _;
        let Some(Command::Advise(a)) = Cli::parse_from(["tcptune", "advise", "--fake-prober", "rtt=10ms"]).command
        else {
            unreachable!("advise")
        };
        assert_eq!(a.prober.fake_prober.map(|f| f.rtt_ms), Some(10.0));
    }

    #[test]
    fn options_before_the_subcommand_are_taken_as_after_it_or_dropped() {
        let moved = |args: &str| {
            options_after_subcommand(args.split(' ').map(OsString::from).collect())
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        };
        for (given, parsed) in [
            (
                "tcptune --os freebsd advise --rtt 1ms",
                "tcptune advise --os freebsd --rtt 1ms",
            ),
            (
                "tcptune --format=json --state-dir /s snapshots",
                "tcptune snapshots --format=json --state-dir /s",
            ),
            (
                "tcptune --format json profiles list",
                "tcptune profiles list --format json",
            ),
            ("tcptune --format json profiles", "tcptune profiles --format json"),
            // Given on both sides: the subcommand's.
            (
                "tcptune --format json calc --format table",
                "tcptune calc --format table",
            ),
            ("tcptune --os linux check --os=freebsd", "tcptune check --os=freebsd"),
            // Not the subcommand's: dropped, as a global option it did not use was ignored.
            (
                "tcptune --sysctl-dir /d --state-dir /s snapshots",
                "tcptune snapshots --state-dir /s",
            ),
            (
                "tcptune --os linux --format json profiles show linux",
                "tcptune profiles show linux",
            ),
            ("tcptune --os linux", "tcptune"),
            ("tcptune --os linux advse", "tcptune advse"),
            // Left for clap: a missing value, an option that never was global, one after.
            ("tcptune --os", "tcptune --os"),
            ("tcptune --rtt 1ms calc", "tcptune --rtt 1ms calc"),
            ("tcptune calc --os linux", "tcptune calc --os linux"),
        ] {
            assert_eq!(moved(given), parsed, "{given}");
        }
    }

    #[test]
    fn an_option_before_the_subcommand_is_checked_as_after_it() {
        use clap::error::ErrorKind;
        let parse = |args: &[&str]| Cli::try_parse_args(args.iter().map(OsString::from)).map(|c| c.command);
        for args in [
            &["tcptune", "--format", "ansible", "inspect"][..],
            &["tcptune", "inspect", "--format", "k8s"],
        ] {
            let e = parse(args).expect_err("inspect reports");
            assert_eq!(e.kind(), ErrorKind::InvalidValue, "{args:?}");
        }
        let e = parse(&["tcptune", "calc", "--state-dir", "/s"]).expect_err("calc has no snapshots");
        assert_eq!(e.kind(), ErrorKind::UnknownArgument);
        let Ok(Some(Command::Advise(a))) = parse(&["tcptune", "--os", "freebsd", "--format", "k8s", "advise"]) else {
            unreachable!("advise")
        };
        assert_eq!((a.target.os, a.format), (Some(Os::Freebsd), Some(Format::K8s)));
    }

    #[test]
    fn probe_defaults_are_measures() {
        use clap::Parser as _;
        let Some(Command::Advise(AdviseCmdArgs { advice: a, .. })) = Cli::parse_from(["tcptune", "advise"]).command
        else {
            unreachable!("advise")
        };
        let p = a.request(None).probe;
        let d = crate::measure::ProbeOptions::default();
        assert_eq!((p.probes, p.interval, p.timeout), (d.probes, d.interval, d.timeout));
        assert_eq!(probe_default(&INTERVAL_ARG, d.interval), "20ms");
        assert_eq!(probe_default(&TIMEOUT_ARG, d.timeout), "1s");
    }

    #[test]
    fn the_serve_buffer_maximum_defaults_to_the_protocols() {
        use clap::Parser as _;
        let Some(Command::Serve(a)) = Cli::parse_from(["tcptune", "serve"]).command else {
            unreachable!("serve")
        };
        assert_eq!(a.max_buffer.get(), crate::tcp::proto::DEFAULT_MAX_BUFFER);
        assert_eq!(parse_max_buffer("0").map(Bytes::get), Ok(0));
        assert!(parse_max_buffer("2GiB").is_err(), "past what a kernel reports");
    }

    #[test]
    fn the_peer_is_hidden_and_its_lifetime_holds_two_tests() {
        use clap::Parser as _;
        let cli = Cli::command();
        let peer = cli.find_subcommand("peer").expect("peer exists");
        assert!(peer.is_hide_set());
        let help = cli.clone().render_long_help().to_string();
        assert!(!help.lines().any(|l| l.trim_start().starts_with("peer ")), "{help}");
        let Some(Command::Peer(a)) = Cli::parse_from(["tcptune", "peer"]).command else {
            unreachable!("peer")
        };
        assert_eq!((a.bind.is_empty(), a.tests), (true, 2));
        assert_eq!(a.lifetime, crate::cmd::peer::DEFAULT_LIFETIME);
        assert_eq!(a.max_buffer.get(), crate::tcp::proto::DEFAULT_MAX_BUFFER);
        assert!(parse_lifetime("0.5s").is_err() && parse_lifetime("2h").is_err());
        assert!(Cli::try_parse_from(["tcptune", "peer", "--tests", "0"]).is_err());
    }

    #[test]
    fn for_durations() {
        assert_eq!(parse_for("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_for("1h30m"), Ok(Duration::from_secs(5400)));
        assert!(parse_for("10").is_err());
        assert!(parse_for("10ms").is_err());
        assert!(parse_for("30d").is_err());
    }

    #[test]
    fn test_times_share_one_limit() {
        // The path test needs a second; verify takes any length, as it always did.
        assert_eq!(parse_test_time("1s"), Ok(Duration::from_secs(1)));
        assert!(parse_test_time("0.5s").is_err());
        assert_eq!(parse_verify_time("0.5s"), Ok(Duration::from_millis(500)));
        for parse in [parse_test_time, parse_verify_time] {
            assert_eq!(parse("60s"), Ok(Duration::from_secs(60)));
            assert!(parse("0s").is_err());
        }
        assert_eq!(
            parse_test_time("61s"),
            Err("invalid duration \"61s\": out of range; expected 1s to 60s".to_string())
        );
        assert_eq!(
            parse_verify_time("60.5s"),
            Err("invalid duration \"60.5s\": out of range; expected at most 60s".to_string())
        );
        assert_eq!(parse_test_time("1m"), Ok(Duration::from_secs(60)));
    }

    #[test]
    fn percent() {
        assert_eq!(parse_percent("0.01"), Ok(0.01));
        assert_eq!(parse_percent("1%"), Ok(1.0));
        assert!(parse_percent("0").is_err());
        assert!(parse_percent("150").is_err());
        assert!(parse_percent("x").is_err());
    }
}
