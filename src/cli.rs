//! The command line, as clap types only. The contract is ../shared/CLI.md.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::platform::Os;
use crate::units::{Bitrate, Bytes, Duration};

const AFTER_HELP: &str = "\
Units: rates are bits per second, SI (500mbit, 1gbit, 10G, 100m); durations 25ms, 1.5s, 250us;
sizes 64KiB, 4MiB, 65536, 64KB (= 64000 bytes).

Exit codes: 0 ok, 1 check found problems, 2 usage or bad input, 3 not permitted
(root needed, read-only key), 4 measurement failed (host unreachable, no probe answered).

Examples:
  tcptune calc --bandwidth 1gbit --rtt 25ms
  tcptune advise --rtt 150ms --bandwidth 500mbit
  tcptune advise --rtt 150ms --bandwidth 500mbit --format sysctl | sudo tee /etc/sysctl.d/60-tcptune.conf";

#[derive(Debug, Parser)]
#[command(name = "tcptune", version, about = "TCP tuning advisor: size kernel buffers to the path's bandwidth-delay product", after_help = AFTER_HELP)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// OS to advise for / operate on [default: the running OS]
    #[arg(long, global = true, value_enum)]
    pub os: Option<Os>,
    /// Output format [advise: table on a terminal, else sysctl; others: table]
    #[arg(long, global = true, value_enum)]
    pub format: Option<Format>,
    /// Linux: read and write sysctls under DIR instead of /proc/sys
    #[arg(long, global = true, value_name = "DIR")]
    pub sysctl_dir: Option<PathBuf>,
    /// FreeBSD/macOS: the sysctl(8) program to run
    #[arg(long, global = true, value_name = "PATH")]
    pub sysctl_cmd: Option<PathBuf>,
    /// Where snapshots live
    #[arg(long, global = true, value_name = "DIR", default_value = "/var/lib/tcptune")]
    pub state_dir: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// `key = value` lines, valid for /etc/sysctl.d (Linux) or /etc/sysctl.conf (BSD)
    Sysctl,
    /// A table for people
    Table,
    /// JSON for programs
    Json,
    /// `sysctl -w` commands
    Shell,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Bandwidth-delay product and throughput calculator
    Calc(CalcArgs),
    /// Recommend sysctl settings for a path
    Advise(AdviseArgs),
    /// List, show or export the shipped profiles (the rules advise renders)
    Profiles(ProfilesArgs),
    /// Print the manual page (roff, section 8): `tcptune man | man -l -`
    Man,
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell)
    Completions(CompletionsArgs),
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
    pub rtt: Option<Duration>,
    /// TCP window or buffer (64KiB, 4MiB, 65536)
    #[arg(long, short = 'w', value_name = "SIZE", allow_hyphen_values = true)]
    pub window: Option<Bytes>,
    /// Packet loss, percent (0.01 or 0.01%), for the Mathis bound
    #[arg(long, value_name = "PCT", value_parser = parse_percent)]
    pub loss: Option<f64>,
    /// Maximum segment size in bytes, for the Mathis bound
    #[arg(long, value_name = "BYTES", default_value = "1448")]
    pub mss: Bytes,
}

#[derive(Debug, Args)]
pub struct AdviseArgs {
    /// Host to measure the path to (repeatable)
    #[arg(long, value_name = "HOST")]
    pub host: Vec<String>,
    /// Path round-trip time, instead of measuring it (150ms)
    #[arg(long, value_name = "DUR", allow_hyphen_values = true)]
    pub rtt: Option<Duration>,
    /// Path rate, instead of the link speed (500mbit, 1gbit)
    #[arg(long, value_name = "RATE", allow_hyphen_values = true)]
    pub bandwidth: Option<Bitrate>,
    /// Profile: a shipped name (linux, freebsd, macos) or a TOML file
    #[arg(long, value_name = "NAME|PATH")]
    pub profile: Option<String>,
    /// Probes per host
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
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
    #[arg(long, value_name = "DUR", default_value = "20ms")]
    pub interval: Duration,
    /// How long to wait for each probe's answer
    #[arg(long, value_name = "DUR", default_value = "1s")]
    pub timeout: Duration,
    /// Also recommend values lower than the running ones
    #[arg(long)]
    pub allow_lower: bool,
    /// Concurrent bulk flows expected, for the memory check
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub flows: u32,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Your own: tcptune profiles export linux > my.toml, edit it, then tcptune advise --profile my.toml ..."
)]
pub struct ProfilesArgs {
    #[command(subcommand)]
    pub command: Option<ProfilesCommand>,
}

#[derive(Debug, Subcommand)]
pub enum ProfilesCommand {
    /// List the shipped profiles: name, OS, description (the default)
    List,
    /// Print a shipped profile's TOML
    Show(ProfileName),
    /// Print a shipped profile's TOML as a starting point for your own (--profile FILE)
    Export(ProfileName),
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory as _;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
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
