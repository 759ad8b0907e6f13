//! The advice: a path (given, or measured to hosts) turned into sysctl settings for an OS,
//! with the running values beside each recommendation and the warnings and notes that go
//! with it. No clap types and no printing, and nothing read from the machine advised: [`advise`]
//! takes an [`AdviceRequest`], the [`Profile`] and the machine's [`Facts`] (gathered by the
//! caller, see [`keys_read`]) and runs its steps — measure the path, decide its class, size
//! the buffers, render the profile, annotate — each a function below. The renderers are
//! [`crate::output::advice`]'s.
//!
//! - [`path`]: which RTT and rate the advice is for (given, measured, or assumed).
//! - [`rate`]: the rate once a TCP test has (or has not) confirmed it; the test's buffer.
//! - [`decide`]: the path's class from the TCP evidence, typed; [`words`] says it.
//! - [`warnings`]: memory budget, lost probes, BBR's ProbeRTT on long paths.

pub mod decide;
pub mod far;
pub mod mesh;
pub mod note;
pub mod path;
pub mod rate;
pub mod scope;
pub mod sharing;
pub mod streams;
pub mod transfer;
pub mod warnings;
pub mod words;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::bdp::{self, Sizing, Source};
use crate::error::Error;
use crate::host::{Facts, facts};
use crate::measure::evidence::Evidence;
use crate::measure::{EvidenceRequest, HostMeasurement, PathProber, ProbeOptions, TestMode};
use crate::os::Os;
use crate::profile::{Action, Fallback, Kept, Profile, Setting, Stage, Unread};
use crate::sysctl::KeyState;
use crate::text;
use crate::units::{Bitrate, Span};

pub use note::Note;
pub use path::{ASSUMED_RATE_BPS, RateBasis};

/// What to advise for: the path (given, or measured to `hosts`), the rules, and the options
/// of the sizing. `advise`, `apply` and `check --host` each build one.
#[derive(Debug, Clone)]
pub struct AdviceRequest {
    /// Hosts to measure the path to; empty when `rtt` and `bandwidth` are both given.
    pub hosts: Vec<String>,
    /// The path's RTT, instead of measuring it.
    pub rtt: Option<Span>,
    /// The path's rate, instead of measuring it (no packet trains are sent then).
    pub bandwidth: Option<Bitrate>,
    /// A shipped profile name or a TOML file; None: the OS's shipped profile.
    pub profile: Option<String>,
    /// How to probe the hosts. `capacity` asks for packet trains; they are sent only when
    /// `bandwidth` is not given.
    pub probe: ProbeOptions,
    /// Also recommend values lower than the running ones.
    pub allow_lower: bool,
    /// Size for a path with random loss (BBR, 5 x BDP) whatever the evidence says.
    pub loss_recovery: bool,
    /// Size for a clean path with a deep queue (CUBIC, 2 x BDP) whatever the evidence says.
    pub clean_path: bool,
    /// Concurrent bulk flows expected, for the memory check.
    pub flows: u32,
    /// The longest path test, each direction; None: [`rate::auto_test_time`] for the path.
    pub test_time: Option<std::time::Duration>,
    /// The TCP path test to the measured host (its `cc`, `buffer` and `time` are chosen here).
    pub test: EvidenceRequest,
    /// Where the advised congestion control applies: host-wide, or (`--scope path`) on a host
    /// route to the path's host only ([`scope::to_path`]).
    pub scope: scope::Scope,
    /// The `--ssh` end's name: the path's host for `--scope path` when `hosts` names none.
    pub ssh_host: Option<String>,
}

/// The path test's defaults: against `tcptune serve` on its default port, at most 10 s or
/// 2 GiB.
pub fn default_test() -> EvidenceRequest {
    EvidenceRequest {
        mode: TestMode::Tcptune,
        port: None,
        time: crate::measure::pathtest::DEFAULT_TIME,
        max_bytes: crate::measure::pathtest::DEFAULT_MAX_BYTES,
        buffer: 0,
        cc: None,
        reverse: true,
        full: false,
    }
}

impl AdviceRequest {
    /// Whether the path is measured: its RTT and its rate are not both given.
    pub fn measures(&self) -> bool {
        !(self.rtt.is_some() && self.bandwidth.is_some())
    }

    /// Advice for the path to `hosts`, measured with the default probes, for one flow.
    pub fn for_hosts(hosts: Vec<String>) -> Self {
        Self {
            hosts,
            rtt: None,
            bandwidth: None,
            profile: None,
            probe: ProbeOptions::default(),
            allow_lower: false,
            loss_recovery: false,
            clean_path: false,
            flows: 1,
            test_time: None,
            test: default_test(),
            scope: scope::Scope::HostWide,
            ssh_host: None,
        }
    }
}

/// The path the advice is for.
#[derive(Debug, Clone)]
pub struct Path {
    pub rtt: Span,
    pub rtt_source: Source,
    pub mdev: Option<Span>,
    /// The rate this host sends at (the forward direction).
    pub rate: Bitrate,
    pub rate_source: Source,
    /// Which reading sized `rate`.
    pub rate_basis: RateBasis,
    /// The rate the far end sends at, when a reverse test measured it apart (an asymmetric
    /// path); None: the same as `rate`.
    pub receive_rate: Option<Bitrate>,
    /// Which reading sized `receive_rate`.
    pub receive_basis: Option<RateBasis>,
    /// The packet trains' bottleneck rate, when they read one (a floor of it where this host
    /// could not send them faster): what a test that got well below it is compared with
    /// ([`sharing`]).
    pub capacity: Option<Bitrate>,
    /// The probes' lowest RTT, ms, when they measured it: what the test's own is compared with.
    pub probes_min_ms: Option<f64>,
    /// Others' queue the probes saw move ([`sharing::Sharing::Probed`]), before any test.
    pub probed: Option<sharing::Sharing>,
    pub mtu: Option<u32>,
    /// The host whose path this is, when measured.
    pub host: Option<String>,
}

impl Path {
    /// The path as the far end sees it: the two directions' rates swapped.
    pub fn mirrored(&self) -> Self {
        match self.receive_rate {
            Some(r) => Self {
                rate: r,
                rate_basis: self.receive_basis.unwrap_or(self.rate_basis),
                receive_rate: Some(self.rate),
                receive_basis: Some(self.rate_basis),
                ..self.clone()
            },
            None => self.clone(),
        }
    }

    /// The rate the far end sends at.
    pub fn incoming(&self) -> Bitrate {
        self.receive_rate.unwrap_or(self.rate)
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct HostReport {
    pub host: String,
    pub rtt_ms: f64,
    pub bandwidth_bps: u64,
    pub bandwidth_source: Source,
    /// bandwidth_bps / 8 × rtt_ms / 1000, rounded up to a whole byte.
    pub bdp_bytes: u64,
    pub measurement: HostMeasurement,
}

#[derive(Debug, Serialize)]
pub struct Advice {
    pub tcptune_version: &'static str,
    pub generated: String,
    pub os: Os,
    pub profile: String,
    pub host: Option<String>,
    pub rtt_ms: f64,
    pub rtt_source: Source,
    pub bandwidth_bps: u64,
    pub bandwidth_source: Source,
    /// Which reading sized `bandwidth_bps`.
    pub bandwidth_basis: RateBasis,
    /// The rate this end receives at, when a reverse test measured it apart; null: the same.
    pub receive_bandwidth_bps: Option<u64>,
    pub receive_bandwidth_basis: Option<RateBasis>,
    /// bandwidth_bps / 8 × rtt_ms / 1000, rounded up to a whole byte.
    pub bdp_bytes: u64,
    pub sizing: Sizing,
    /// Where the running values were read from; null when advising for another system.
    pub current_from: Option<String>,
    pub settings: Vec<Setting>,
    pub changes: usize,
    pub warnings: Vec<Note>,
    pub notes: Vec<Note>,
    pub hosts: Vec<HostReport>,
    /// The TCP evidence about the path advised for (null when the path was given).
    pub evidence: Option<Evidence>,
    /// What the evidence decided for the sending side (the congestion control and the send
    /// buffer), and why.
    pub decision: decide::Decision,
    /// What it decided for the receiving side (the receive buffer), and why.
    pub receive_decision: decide::Decision,
    /// Whose advice this is: this host's, or the far end's (`advise --ssh`).
    pub end: End,
    /// What common transfer tools can reach on this path with their own windows.
    pub app_ceilings: Vec<crate::ceilings::AppCeiling>,
    /// Where one flow cannot fill the path under the advice, how many streams at once do: for
    /// each tool whose window holds it, and for the measured loss when the advised congestion
    /// control stays loss-based ([`streams`]); empty when one flow fills it.
    pub streams: Vec<streams::Streams>,
    /// What the running receive maximum lets one flow reach on this path, bit/s: its window
    /// share ÷ the RTT (null when the running value is not known).
    pub window_limit_bps: Option<u64>,
    /// Where the congestion control applies (`--scope`): `host-wide` or `path`.
    pub scope: scope::Scope,
    /// `--scope path`: the congestion control as a host route toward the path's host (then
    /// `settings` holds no net.ipv4.tcp_congestion_control).
    pub route: Option<scope::RouteAdvice>,
    /// Where the time went (null when the path was given).
    pub timing: Option<Timing>,
}

/// Where the time went, s: each phase of the measurement, and (filled by the command) the
/// `--ssh` session's set-up, which ran beside the probes, and the whole from the command's
/// start to the advice. A phase that did not run is null.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Timing {
    pub setup_s: Option<f64>,
    pub probes_s: Option<f64>,
    pub trains_s: Option<f64>,
    pub watch_s: Option<f64>,
    pub forward_s: Option<f64>,
    pub reverse_s: Option<f64>,
    pub total_s: Option<f64>,
}

impl Timing {
    /// The phases of the measurement `m` (None when nothing was measured).
    pub fn of(m: &Measured) -> Option<Self> {
        let h = m
            .hosts
            .iter()
            .find(|h| m.path.host.as_deref() == Some(h.host.as_str()))?;
        let took = h.measurement.took;
        let test = |t: Option<&crate::measure::evidence::TcpTest>| t.and_then(|t| t.took_s);
        Some(Self {
            probes_s: took.probes_s,
            trains_s: took.trains_s,
            watch_s: took.watch_s,
            forward_s: test(m.evidence.as_ref().and_then(|e| e.test.as_ref())),
            reverse_s: test(m.evidence.as_ref().and_then(|e| e.reverse.as_ref())),
            ..Self::default()
        })
    }
}

impl Advice {
    /// The keys the advice sets at runtime, whether or not this machine runs their value
    /// already: what a configuration file (a sysctl.d drop-in, a playbook, a profile) holds.
    pub fn kept_keys(&self) -> Vec<&str> {
        self.settings
            .iter()
            .filter(|s| s.stage == Stage::Runtime && matches!(s.action, Action::Set | Action::Keep))
            .map(|s| s.key.as_str())
            .collect()
    }
}

/// The profile `req` names (a shipped name or a file), else `os`'s shipped one, refused when
/// it is for another OS: the caller loads it first, since it names the keys to gather.
pub fn profile_for(req: &AdviceRequest, os: Os) -> Result<Profile, Error> {
    let profile = match &req.profile {
        Some(p) => Profile::load(p)?,
        None => Profile::for_os(os),
    };
    if profile.os != os {
        return Err(Error::usage(format!(
            "profile {} is for {}, but advice is for {os} (use --os {})",
            profile.name, profile.os, profile.os
        )));
    }
    Ok(profile)
}

/// The profile `req` asks for ([`profile_for`]) and the keys whose running values the advice
/// reads with it ([`keys_read`]): what the caller loads, then gathers, before [`advise`].
pub fn prepare(req: &AdviceRequest, os: Os) -> Result<(Profile, Vec<String>), Error> {
    let profile = profile_for(req, os)?;
    let keys = keys_read(&profile);
    Ok((profile, keys))
}

/// The keys whose running values the advice reads with `profile`: what the caller gathers
/// into [`Facts`] (which adds the congestion-control and memory keys itself).
pub fn keys_read(profile: &Profile) -> Vec<String> {
    let mut keys: Vec<String> = profile
        .settings
        .iter()
        .filter(|e| e.stage == Stage::Runtime)
        .map(|e| e.key.clone())
        .collect();
    keys.extend(profile.caps.keys().cloned());
    keys.sort();
    keys.dedup();
    keys
}

/// What was measured of the path before any decision: the path advised for, every host's
/// report, the TCP evidence about the path's host, and the notes so far. Measured once, it
/// serves the advice of both ends.
#[derive(Debug, Clone)]
pub struct Measured {
    pub path: Path,
    pub hosts: Vec<HostReport>,
    pub evidence: Option<Evidence>,
    pub notes: Vec<Note>,
}

/// Which end of the path an advice is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum End {
    /// This host: it sent in the forward test.
    Near,
    /// The far end (`advise --ssh`): it sent in the reverse test.
    Far,
}

/// Computes the advice for `req` with `profile` on the machine of `host`. The prober is a
/// seam: tests (and the hidden `--fake-prober` flag) pass a fake.
pub fn advise(req: &AdviceRequest, profile: &Profile, host: &Facts, prober: &dyn PathProber) -> anyhow::Result<Advice> {
    advise_measured(req, profile, host, prober).map(|(_, a)| a)
}

/// [`advise`], with what was measured (the far end of `advise --ssh` is advised from it too);
/// with `--scope path`, its congestion control on a route to the path's host, as the prober
/// says this host's kernel routes there.
pub fn advise_measured(
    req: &AdviceRequest,
    profile: &Profile,
    host: &Facts,
    prober: &dyn PathProber,
) -> anyhow::Result<(Measured, Advice)> {
    let measured = measure(req, host, prober)?;
    let mut a = advise_end(req, profile, host, &measured, End::Near, THIS_HOST)?;
    if req.scope == scope::Scope::Path {
        let dest = scope::destination(req, &a)?;
        scope::to_path(&mut a, &prober.route_toward(dest));
    }
    Ok((measured, a))
}

/// How notes name this host's end.
pub const THIS_HOST: &str = "this host";

/// Step 1: the path (given, or measured to the hosts), the TCP evidence about the path's
/// host, and the rate that evidence settles. `host` is this machine (its congestion controls
/// choose the test's).
pub fn measure(req: &AdviceRequest, host: &Facts, prober: &dyn PathProber) -> anyhow::Result<Measured> {
    let (mut path, hosts, mut notes) = path::resolve(req, prober)?;
    bdp::check_path(path.rate, path.rtt).map_err(Error::usage)?;
    let measured = hosts.iter().find(|h| path.host.as_deref() == Some(h.host.as_str()));
    let evidence = match measured {
        Some(h) => {
            let test = EvidenceRequest {
                buffer: rate::test_buffer(&path, &h.measurement),
                time: req.test_time.unwrap_or_else(|| rate::auto_test_time(path.rtt)),
                // Unknown (advising for another system): assumed, as every distribution
                // kernel ships it.
                cc: host.offers("bbr").unwrap_or(true).then(|| "bbr".to_string()),
                ..req.test.clone()
            };
            Some(prober.evidence(&h.measurement, &test, &req.probe)?)
        }
        None => None,
    };
    if measured.is_some() && req.rtt.is_none() {
        notes.extend(rate::settle_rtt(&mut path, evidence.as_ref()));
    }
    if let Some(h) = measured
        && req.bandwidth.is_none()
    {
        notes.extend(rate::settle_rate(&mut path, &h.measurement, evidence.as_ref()));
    }
    bdp::check_path(path.rate, path.rtt).map_err(Error::usage)?;
    bdp::check_path(path.incoming(), path.rtt).map_err(Error::usage)?;
    Ok(Measured {
        path,
        hosts,
        evidence,
        notes,
    })
}

/// Steps 2 to 5 for one end of a measured path: decide its two sides' classes, size its
/// buffers, render its profile with its facts, annotate. `name`: how its notes name it
/// ([`THIS_HOST`], "the far end dtn2").
pub fn advise_end(
    req: &AdviceRequest,
    profile: &Profile,
    host: &Facts,
    m: &Measured,
    end: End,
    name: &str,
) -> anyhow::Result<Advice> {
    let steps = Steps { req, profile, host };
    let path = match end {
        End::Near => m.path.clone(),
        End::Far => m.path.mirrored(),
    };
    let view = match end {
        End::Near => decide::View::near(m.evidence.as_ref()),
        End::Far => decide::View::far(m.evidence.as_ref()),
    };
    let (send, receive) = steps.decide_sides(&path, &view);
    // What was measured is said once, in this host's advice; the far end's says its own.
    let mut notes = match end {
        End::Near => m.notes.clone(),
        End::Far => Vec::new(),
    };
    notes.extend(words::notes(m.evidence.as_ref(), &send, &receive, end));
    let mut sizing = size(&path, &send, &receive);
    if path.rate_source == Source::Assumed
        && let Some(b) = rate::budget(host, req.flows)
        && sizing.buffer.max(sizing.send_buffer) > b
    {
        sizing = bdp::cap(sizing, b);
        let cap = text::size(sizing.buffer.max(sizing.send_buffer));
        notes.push(Note::with_short(
            format!(
                "with the rate unmeasured, both buffer maxima stay within {cap} per flow: a quarter of what this host lets TCP use (net.ipv4.tcp_mem[2]) over {} flow(s), in 64 KiB steps",
                req.flows
            ),
            format!("with the rate unmeasured, both maxima stay within {cap}: a quarter of tcp_mem[2] per flow"),
        ));
    }
    let decided = Decided {
        raise: steps.needs_raise(&sizing),
        send,
        receive,
        sizing,
    };
    let settings = steps.render(&path, &decided)?;
    notes.extend(
        settings
            .iter()
            .filter_map(|s| s.fallback.as_ref().map(|f| Note::shown(fallback_note(name, &s.key, f)))),
    );
    Ok(steps.annotate(path, notes, m, decided, settings, end))
}

/// One line saying how a setting's value was kept valid, naming the end (`name`) and the key
/// whose running value gave none.
fn fallback_note(name: &str, key: &str, f: &Fallback) -> String {
    let what = match f.unread {
        Some(Unread::Odd) => format!("{key} runs no value of its kind; "),
        Some(Unread::Absent | Unread::Unreadable) => format!("{key} could not be read; "),
        None => format!("{key}: "),
    };
    match f.kept {
        Kept::Stock => format!("{name}: {what}its stock value stands in"),
        Kept::Clamped(max) => format!("{name}: {what}default clamped to the max, {}", text::size(max)),
    }
}

/// What every step reads: the request, the profile and the machine's facts.
struct Steps<'a> {
    req: &'a AdviceRequest,
    profile: &'a Profile,
    host: &'a Facts,
}

impl Steps<'_> {
    /// Step 2: the class of each side of this end, from the evidence and the user's word.
    fn decide_sides(&self, path: &Path, view: &decide::View<'_>) -> (decide::Decision, decide::Decision) {
        #[allow(clippy::cast_precision_loss)]
        let facts = |rate: Bitrate| decide::PathFacts {
            rate_bps: rate.bps() as f64,
            rtt_ms: path.rtt.as_millis_f64(),
            mss: path.mtu.unwrap_or(1500).saturating_sub(52).max(536),
            linux: self.host.os == Os::Linux,
            capacity_bps: path.capacity.map(|c| c.bps() as f64),
            probes_min_ms: path.probes_min_ms,
            probed: path.probed,
        };
        let word = decide::Override::from_flags(self.req.loss_recovery, self.req.clean_path);
        let host = path.host.as_deref();
        (
            decide::decide_side(&facts(path.rate), view, decide::Side::Send, word, host),
            decide::decide_side(&facts(path.incoming()), view, decide::Side::Receive, word, host),
        )
    }

    /// Whether the running buffer maxima (else the profile's stock values) fall short of the
    /// sizing: the profile raises them only then.
    fn needs_raise(&self, sizing: &Sizing) -> bool {
        let fact_value = |f: &str| match f {
            "send_buffer" => sizing.send_buffer,
            _ => sizing.buffer,
        };
        self.profile.caps.iter().any(|(cap, fact)| {
            let have = match self.host.read(cap) {
                Some(KeyState::Present { value, .. }) => Some(value),
                Some(_) => None,
                None => self.profile.stock.get(cap).cloned(),
            };
            let max = have
                .as_deref()
                .and_then(crate::profile::numeric_fields)
                .and_then(|f| f.last().copied());
            #[allow(clippy::cast_precision_loss)]
            max.is_none_or(|m| m < fact_value(fact) as f64)
        })
    }

    /// Step 4: the profile rendered with the facts of the path, the sizing and the machine;
    /// the evidence appended to the reasons it decided; a congestion control this namespace
    /// may not choose marked unavailable rather than left for `apply` to refuse.
    fn render(&self, path: &Path, d: &Decided) -> Result<Vec<Setting>, Error> {
        let numbers = self.profile_numbers(path, d);
        let mut settings = self
            .profile
            .render(&numbers, &|k| self.host.read(k), self.req.allow_lower)?;
        for s in &mut settings {
            if s.key == facts::CURRENT_CC && s.action == Action::Set && self.host.cc_refused(&s.value).is_some() {
                let allowed = self.host.value(facts::ALLOWED_CC).unwrap_or_default();
                s.action = Action::Unavailable(format!("only {} allowed here", text::escape(allowed)));
            }
        }
        Ok(settings)
    }

    /// The numbers a profile's expressions read.
    fn profile_numbers(&self, path: &Path, d: &Decided) -> BTreeMap<String, f64> {
        let flag = |b: bool| f64::from(u8::from(b));
        // Unknown (advising for another system): assumed, as every distribution kernel ships
        // both.
        let offers = |cc: &str| flag(self.host.offers(cc).unwrap_or(true));
        let sizing = &d.sizing;
        #[allow(clippy::cast_precision_loss)]
        let pairs = [
            ("bdp", sizing.bdp as f64),
            ("receive_bdp", sizing.receive_bdp as f64),
            ("buffer", sizing.buffer as f64),
            ("send_buffer", sizing.send_buffer as f64),
            ("headroom_pct", (sizing.headroom_pct * 10.0).round() / 10.0),
            ("rate_bps", path.rate.bps() as f64),
            ("receive_rate_bps", path.incoming().bps() as f64),
            ("rtt_ms", path.rtt.as_millis_f64()),
            ("sizing_rtt_ms", sizing.sizing_rtt_ms),
            ("mtu", f64::from(path.mtu.unwrap_or(0))),
            ("flows", f64::from(self.req.flows)),
            ("needs_raise", flag(d.raise)),
            ("loss_recovery", flag(sizing.loss_recovery)),
            ("receive_loss_recovery", flag(sizing.receive_loss_recovery)),
            ("loss_free", flag(loss_free(&d.send))),
            ("receive_loss_free", flag(loss_free(&d.receive))),
            ("loss_factor", sizing.send_factor),
            ("receive_loss_factor", sizing.receive_factor),
            ("cc_bbr", offers("bbr")),
            ("cc_cubic", offers("cubic")),
            ("cc_htcp", 1.0),
            ("qdisc_fq", flag(self.host.sch_fq == Some(true))),
            ("notsent_lowat", d.send.notsent_lowat as f64),
            ("window_share", sizing.window_share),
            ("class_measured", flag(d.send.class != decide::PathClass::Unmeasured)),
            ("shared", flag(d.send.class == decide::PathClass::Shared)),
            ("receive_shared", flag(d.receive.class == decide::PathClass::Shared)),
            ("policed", flag(d.send.class == decide::PathClass::Policed)),
            ("cubic_at_risk", flag(d.send.cubic_at_risk)),
        ];
        pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    }

    /// The streams that fill the path where one flow cannot ([`streams`]): per tool window,
    /// and for the loss measured when `cc` (the advised or running congestion control) backs off
    /// on it — not on a shared path, where each stream more takes from the others, nor a policed
    /// one.
    fn streams(
        &self,
        path: &Path,
        send: &decide::Decision,
        cc: Option<&str>,
        ceilings: &[crate::ceilings::AppCeiling],
    ) -> Vec<streams::Streams> {
        let rate = path.rate.bps();
        let mut out: Vec<streams::Streams> = ceilings
            .iter()
            .filter(|c| c.limits_path)
            .filter_map(|c| {
                let tool = crate::ceilings::APP_WINDOWS.iter().find(|w| w.tool == c.tool)?;
                streams::for_window(tool.short_tool, c.ceiling_bps, rate)
            })
            .collect();
        // Not on a shared path (each stream more takes from the others), nor a policed one (its
        // losses are the policer's, whose rate more streams may only share).
        if !matches!(send.class, decide::PathClass::Shared | decide::PathClass::Policed)
            && let (Some(cc), Some(loss)) = (cc, send.loss_pct)
        {
            let mss = path.mtu.unwrap_or(1500).saturating_sub(52).max(536);
            out.extend(streams::for_loss(cc, loss, mss, path.rtt.as_secs_f64(), rate));
        }
        out
    }

    /// What the advice warns of: a path no buffer Linux accepts can fill, memory, probe loss.
    fn warnings(&self, m: &Measured, sizing: &Sizing) -> Vec<Note> {
        let mut warnings = Vec::new();
        if sizing.clamped {
            warnings.push(Note::shown(
                "the path needs more buffer than Linux accepts (2 GiB): one flow cannot fill it; use parallel streams",
            ));
        }
        warnings.extend(warnings::memory(self.host, self.req.flows, sizing));
        if !sizing.loss_recovery {
            warnings.extend(m.hosts.iter().filter_map(warnings::probe_loss));
        }
        warnings
    }

    /// Step 5: the warnings and notes that go with the settings, and the advice.
    fn annotate(
        &self,
        path: Path,
        mut notes: Vec<Note>,
        m: &Measured,
        d: Decided,
        settings: Vec<Setting>,
        end: End,
    ) -> Advice {
        let Decided {
            send,
            receive,
            sizing,
            raise,
        } = d;
        if !raise {
            notes.push(Note::shown(format!(
                "the running buffer maxima ({}) already cover this path (receive {}, send {}): no buffer change needed",
                self.profile.caps.keys().cloned().collect::<Vec<_>>().join(", "),
                text::size(sizing.buffer),
                text::size(sizing.send_buffer)
            )));
        }
        let warnings = self.warnings(m, &sizing);
        let cc = settings
            .iter()
            .find(|s| s.key == facts::CURRENT_CC && s.action == Action::Set)
            .map(|s| s.value.as_str())
            .or_else(|| self.host.value(facts::CURRENT_CC));
        notes.extend(warnings::probe_rtt_note(cc, path.rtt.as_millis_f64()));
        let app_ceilings = crate::ceilings::ceilings(path.rtt, path.rate.bps());
        let window_limit_bps = self.window_limit(&path, sizing.window_share);
        notes.extend(
            app_ceilings
                .iter()
                .filter_map(|c| crate::ceilings::note(c, path.rate.bps()))
                .map(|(long, short)| Note::with_short(long, short)),
        );
        let streams = self.streams(&path, &send, cc, &app_ceilings);
        // A tool's window says its streams in its own note (above); the loss's are said here.
        notes.extend(
            streams
                .iter()
                .filter_map(streams::note)
                .map(|(long, short)| Note::with_short(long, short)),
        );
        Advice {
            tcptune_version: env!("CARGO_PKG_VERSION"),
            generated: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            os: self.host.os,
            profile: self.profile.name.clone(),
            host: path.host.clone(),
            rtt_ms: text::ms(path.rtt.as_millis_f64()),
            rtt_source: path.rtt_source,
            bandwidth_bps: path.rate.bps(),
            bandwidth_source: path.rate_source,
            bandwidth_basis: path.rate_basis,
            receive_bandwidth_bps: path.receive_rate.map(Bitrate::bps),
            receive_bandwidth_basis: path.receive_basis,
            bdp_bytes: bdp::bdp_bytes(path.rate, path.rtt),
            sizing,
            current_from: self.host.values_from().map(str::to_string),
            changes: settings
                .iter()
                .filter(|s| s.action == Action::Set && s.stage == Stage::Runtime)
                .count(),
            settings,
            warnings,
            notes,
            // The far end's advice shares the measurement: its hosts and evidence are this
            // host's report, shown once.
            hosts: match end {
                End::Near => m.hosts.clone(),
                End::Far => Vec::new(),
            },
            evidence: match end {
                End::Near => m.evidence.clone(),
                End::Far => None,
            },
            decision: send,
            receive_decision: receive,
            end,
            app_ceilings,
            streams,
            window_limit_bps,
            scope: scope::Scope::HostWide,
            route: None,
            timing: Timing::of(m),
        }
    }

    /// What the running receive maximum lets one flow reach on `path`: the share of it
    /// advertised as window, per round trip.
    fn window_limit(&self, path: &Path, share: f64) -> Option<u64> {
        let (cap, _) = self.profile.caps.iter().find(|(_, fact)| *fact == "buffer")?;
        let max = self
            .host
            .value(cap)
            .and_then(crate::profile::numeric_fields)
            .and_then(|f| f.last().copied())?;
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let window = crate::units::Bytes::new((max * share) as u64);
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        Some(bdp::max_throughput_bps(window, path.rtt).round() as u64)
    }
}

/// What steps 2 and 3 decided for one end: each side's class, the buffers, and whether the
/// running maxima fall short of them.
struct Decided {
    send: decide::Decision,
    receive: decide::Decision,
    sizing: Sizing,
    raise: bool,
}

/// Step 3: each buffer for its side's class and its direction's rate, the receive buffer for
/// the measured window share.
fn size(path: &Path, send: &decide::Decision, receive: &decide::Decision) -> Sizing {
    let rule = |d: &decide::Decision| match (d.rule, d.loss_factor) {
        (decide::Rule::Shared, Some(f)) => bdp::Rule::Shared(f),
        (_, Some(f)) if d.loss_recovery => bdp::Rule::LossRecovery(f),
        _ => bdp::Rule::LossFree,
    };
    bdp::size(
        (path.rate, rule(send)),
        (path.incoming(), rule(receive)),
        path.rtt,
        path.mdev,
        receive.window_share,
    )
}

impl Advice {
    /// `bytes` timed at the advised rate (the receiving direction's, which the receive max
    /// carries) and at what the running receive max holds one flow to (`advise --size`).
    pub fn transfer(&self, bytes: u64) -> transfer::Transfer {
        let rate = self.receive_bandwidth_bps.unwrap_or(self.bandwidth_bps);
        transfer::Transfer::new(bytes, rate, self.window_limit_bps, self.rtt_ms)
    }
}

/// A side whose test measured no loss after startup, sized past the clean rule for another
/// reason (its queue shallow or not measured), not because `--loss-recovery` was given: its
/// headroom is for the RTT's growth, and the profiles' words say so.
fn loss_free(d: &decide::Decision) -> bool {
    d.loss_pct == Some(0.0)
        && !d
            .observations
            .iter()
            .any(|o| matches!(o, decide::Observation::Given(decide::Override::Lossy)))
}

#[cfg(test)]
mod tests {
    use super::path::measured_rate;
    use super::rate::ip_rate;
    use super::warnings::{probe_loss as probe_loss_warning, probe_rtt_note};
    use super::*;
    use crate::measure::fake::FakeProber;

    /// Advice for Linux with the shipped profile, nothing known of the machine.
    fn advise_linux(req: &AdviceRequest, prober: &dyn PathProber) -> anyhow::Result<Advice> {
        advise(req, &Profile::for_os(Os::Linux), &Facts::unknown(Os::Linux), prober)
    }

    fn args(hosts: &[&str], bandwidth: Option<&str>) -> AdviceRequest {
        AdviceRequest {
            bandwidth: bandwidth.map(|b| b.parse().expect("a rate")),
            ..AdviceRequest::for_hosts(hosts.iter().map(|h| (*h).to_string()).collect())
        }
    }

    /// The facts of a machine tcptune does not run on, built by hand: a child network
    /// namespace whose host allows only reno and bbr, small tcp_mem, 1 GiB of RAM, no fq, and
    /// TCP buffer maxima of `max` bytes.
    fn hand_built(max: u64) -> Facts {
        use crate::host::facts::{ALLOWED_CC, AVAILABLE_CC, CURRENT_CC, Running, TCP_MEM};
        use crate::sysctl::Access;
        let rw = |v: &str| KeyState::Present {
            value: v.into(),
            access: Access::Writable,
        };
        let ro = |v: &str| KeyState::Present {
            value: v.into(),
            access: Access::ReadOnly,
        };
        let values = [
            ("net.ipv4.tcp_rmem", rw(&format!("4096 87380 {max}"))),
            ("net.ipv4.tcp_wmem", rw(&format!("4096 16384 {max}"))),
            ("net.core.rmem_max", ro("212992")),
            ("net.core.wmem_max", ro("212992")),
            (AVAILABLE_CC, rw("reno cubic bbr")),
            (ALLOWED_CC, ro("reno bbr")),
            (CURRENT_CC, rw("reno")),
            (TCP_MEM, ro("100 200 300")),
        ];
        Facts {
            os: Os::Linux,
            running: Some(Running {
                from: "hand-built".into(),
                values: values.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            }),
            child_netns: Some(true),
            sch_fq: Some(false),
            page_size: 4096,
            ram: Some(1 << 30),
            kernel: Some("6.1.0-test".into()),
        }
    }

    #[test]
    fn the_advice_is_computed_from_the_facts_value_alone() {
        // A given path (no probe, no store, no /proc): everything about the machine comes from
        // the hand-built value.
        let req = AdviceRequest {
            rtt: Some("150ms".parse().expect("rtt")),
            bandwidth: Some("500mbit".parse().expect("rate")),
            clean_path: true,
            flows: 100,
            ..AdviceRequest::for_hosts(Vec::new())
        };
        let profile = Profile::for_os(Os::Linux);
        let no_probe = FakeProber::UNREACHABLE;
        let a = advise(&req, &profile, &hand_built(6_291_456), &no_probe).expect("advice");
        let setting = |a: &Advice, key: &str| a.settings.iter().find(|s| s.key == key).cloned().expect(key);
        assert_eq!(a.current_from.as_deref(), Some("hand-built"));
        let rmem = setting(&a, "net.ipv4.tcp_rmem");
        assert_eq!(rmem.current.as_deref(), Some("4096 87380 6291456"));
        assert_eq!(rmem.action, Action::Set);
        // Read-only in that namespace, by the value's access.
        assert!(
            matches!(&setting(&a, "net.core.rmem_max").action, Action::Unavailable(w) if w.contains("read-only")),
            "{:?}",
            setting(&a, "net.core.rmem_max")
        );
        // A clean path wants cubic, which that namespace's host does not allow.
        let cc = setting(&a, "net.ipv4.tcp_congestion_control");
        assert_eq!(cc.value, "cubic");
        assert!(
            matches!(&cc.action, Action::Unavailable(w) if w.contains("only reno bbr allowed here")),
            "{cc:?}"
        );
        // The memory budget is the value's: 300 pages of 4096 bytes, 1 GiB of RAM.
        assert!(
            a.warnings
                .iter()
                .any(|w| w.contains("exceed tcp_mem[2] (300 pages = 1228800 bytes")),
            "{:?}",
            a.warnings
        );
        assert!(
            a.warnings
                .iter()
                .any(|w| w.contains("quarter of this host's RAM (1073741824 bytes")),
            "{:?}",
            a.warnings
        );
        // Other facts, other advice: a running maximum that already covers the path is kept.
        let a = advise(&req, &profile, &hand_built(536_870_912), &no_probe).expect("advice");
        let rmem = setting(&a, "net.ipv4.tcp_rmem");
        assert_eq!(rmem.current.as_deref(), Some("4096 87380 536870912"));
        // Each field at least the running one: the maximum kept, the default raised to the
        // profile's 131072.
        assert_eq!(rmem.value, "4096 131072 536870912");
        assert!(
            a.notes.iter().any(|n| n.contains("already cover this path")),
            "{:?}",
            a.notes
        );
    }

    /// Nothing measured, and the running buffers already cover the path: the buffers are kept,
    /// but CUBIC is not left running where 1 % loss would hold it below the BDP (a 40 ms /
    /// 100 Mbit/s path); on a LAN-sized BDP it is.
    #[test]
    fn an_unmeasured_path_gets_bbr_where_loss_would_hold_cubic_even_when_the_buffers_suffice() {
        let profile = Profile::for_os(Os::Linux);
        let no_probe = FakeProber::UNREACHABLE;
        let facts = hand_built(67_108_864);
        let cc_of = |rtt: &str, rate: &str| {
            let req = AdviceRequest {
                rtt: Some(rtt.parse().expect("rtt")),
                bandwidth: Some(rate.parse().expect("rate")),
                ..AdviceRequest::for_hosts(Vec::new())
            };
            let a = advise(&req, &profile, &facts, &no_probe).expect("advice");
            assert!(
                a.notes.iter().any(|n| n.contains("already cover this path")),
                "{:?}",
                a.notes
            );
            assert_eq!(a.decision.class, decide::PathClass::Unmeasured);
            (
                a.decision.cubic_at_risk,
                a.settings
                    .iter()
                    .find(|s| s.key == "net.ipv4.tcp_congestion_control")
                    .map(|s| (s.value.clone(), s.action.clone())),
            )
        };
        // 500,000 bytes, 345 segments: CUBIC holds about 12 at 1 % loss.
        let (risk, cc) = cc_of("40ms", "100mbit");
        assert!(risk);
        assert_eq!(cc, Some(("bbr".to_string(), Action::Set)));
        // 1 ms at 50 Mbit/s: 6,250 bytes, 4 segments, which CUBIC holds at 1 % loss.
        let (risk, cc) = cc_of("1ms", "50mbit");
        assert!(!risk);
        assert_eq!(cc, None);
    }

    #[test]
    fn each_side_follows_the_direction_it_acts_on_at_both_ends() {
        // Clean and deep from this host to the far end; 1 % loss the other way.
        let p = FakeProber::from_spec("rtt=50ms,rate=200mbit,rloss=1").expect("spec");
        let req = args(&["198.18.0.2"], None);
        let facts = Facts::unknown(Os::Linux);
        let m = measure(&req, &facts, &p).expect("measured");
        let profile = Profile::for_os(Os::Linux);
        let near = advise_end(&req, &profile, &facts, &m, End::Near, THIS_HOST).expect("near");
        // This host sends on the clean direction: cubic, 2.5 × BDP; it receives on the lossy
        // one: its receive buffer for loss recovery at the heavy-loss factor.
        assert_eq!(near.decision.class, decide::PathClass::Clean);
        assert_eq!(near.receive_decision.class, decide::PathClass::Lossy);
        assert!(!near.receive_decision.borrowed);
        assert!(!near.sizing.loss_recovery && near.sizing.receive_loss_recovery);
        assert_eq!(near.sizing.receive_factor, bdp::HEAVY_LOSS_FACTOR);
        let setting = |a: &Advice, key: &str| a.settings.iter().find(|s| s.key == key).cloned().expect(key);
        assert_eq!(setting(&near, "net.ipv4.tcp_congestion_control").value, "cubic");
        assert!(
            near.notes
                .iter()
                .any(|n| n.starts_with("path class, this host sending: clean"))
                && near
                    .notes
                    .iter()
                    .any(|n| n.starts_with("path class, the far end sending: lossy")),
            "{:?}",
            near.notes
        );
        // The far end sends on the lossy direction: bbr and the loss factor for its send
        // buffer; it receives on the clean one.
        let far = advise_end(&req, &profile, &facts, &m, End::Far, "the far end").expect("far");
        assert_eq!(far.end, End::Far);
        assert_eq!(far.decision.class, decide::PathClass::Lossy);
        assert_eq!(far.receive_decision.class, decide::PathClass::Clean);
        assert_eq!(setting(&far, "net.ipv4.tcp_congestion_control").value, "bbr");
        assert!(far.sizing.loss_recovery && !far.sizing.receive_loss_recovery);
        // 1 % is heavy loss: 6 × BDP, and the reason says why.
        assert_eq!(far.sizing.send_factor, bdp::HEAVY_LOSS_FACTOR);
        let why = words::why_class(&far.decision);
        assert!(
            why.contains("bbr and 6 × BDP (from 0.2 % loss after startup tcptune's lab needed 6, not 5"),
            "{why}"
        );
        assert!(
            far.hosts.is_empty() && far.evidence.is_none(),
            "the measurement is shown once, in this host's"
        );
        // Without a reverse test the receive side follows this direction's test, and says so.
        let p = FakeProber::from_spec("rtt=50ms,rate=200mbit,loss=0").expect("spec");
        let m = measure(&req, &facts, &p).expect("measured");
        let near = advise_end(&req, &profile, &facts, &m, End::Near, THIS_HOST).expect("near");
        assert!(near.receive_decision.borrowed);
        assert!(
            near.notes
                .iter()
                .any(|n| n.starts_with("no reverse path test (the fake far end does not send")),
            "{:?}",
            near.notes
        );
    }

    #[test]
    fn measured_rtt_and_link_speed_feed_the_model() {
        // A path test that saw a clean path with a deep queue: the loss-free sizing.
        let p = FakeProber {
            rtt_ms: 150.0,
            speed_bps: Some(500_000_000),
            capacity_bps: Some(500_000_000),
            test: Some(crate::measure::fake::FakeTest::clean()),
            seen_ms: None,
        };
        let a = advise_linux(&args(&["peer.example"], None), &p).expect("advice");
        assert_eq!(a.rtt_source, Source::Measured);
        assert_eq!(a.bandwidth_source, Source::Measured);
        assert_eq!(a.bdp_bytes, 9_375_000);
        assert_eq!(a.decision.class, decide::PathClass::Clean);
        assert_eq!(a.sizing.buffer, 20_643_840);
        assert_eq!(a.hosts.len(), 1);
        // No peer answers: not measured, sized for heavy loss (6 × BDP).
        let a = advise_linux(&args(&["peer.example"], None), &FakeProber { test: None, ..p }).expect("advice");
        assert_eq!(a.decision.class, decide::PathClass::Unmeasured);
        assert_eq!(a.sizing.buffer, 56_295_424);
        assert!(
            a.notes
                .iter()
                .any(|n| n.starts_with("no TCP path test: no tcptune serve on 198.18.0.1")),
            "{:?}",
            a.notes
        );
    }

    #[test]
    fn the_path_test_decides_the_class_and_the_window_share() {
        fn setting<'a>(a: &'a Advice, key: &str) -> &'a Setting {
            a.settings.iter().find(|s| s.key == key).expect(key)
        }
        let p = |spec: &str| FakeProber::from_spec(spec).expect("spec");
        let a = advise_linux(&args(&["h"], None), &p("rtt=150ms,rate=500mbit,loss=0.01")).expect("advice");
        assert_eq!(a.decision.class, decide::PathClass::Lossy);
        assert!(a.sizing.loss_recovery);
        let cc = setting(&a, "net.ipv4.tcp_congestion_control");
        assert_eq!(cc.value, "bbr");
        let why = words::why_class(&a.decision);
        assert!(
            why.starts_with("0.01 % retransmitted after startup (100 of 1,000,000 segments)"),
            "{why}"
        );
        let a = advise_linux(&args(&["h"], None), &p("rtt=150ms,rate=500mbit,queue=0.1")).expect("advice");
        assert_eq!(a.decision.class, decide::PathClass::Shallow);
        let cc = setting(&a, "net.ipv4.tcp_congestion_control");
        assert_eq!(cc.value, "bbr");
        // Clean and deep, with a receiver that advertises 35 % of its buffer: CUBIC, and the
        // receive buffer grows by 0.5 / 0.35 over the 2 × sizing.
        let a = advise_linux(&args(&["h"], None), &p("rtt=150ms,rate=500mbit,share=0.35")).expect("advice");
        assert_eq!(a.decision.class, decide::PathClass::Clean);
        let cc = setting(&a, "net.ipv4.tcp_congestion_control");
        assert_eq!(cc.value, "cubic");
        assert_eq!(a.sizing.window_share, 0.35);
        // 20,643,840 × 0.5 / 0.35 = 29,491,200 exactly, a whole number of 64 KiB steps.
        assert_eq!(a.sizing.buffer, 29_491_200);
        let share = words::why_share(&a.receive_decision);
        assert!(share.starts_with("the far end advertised 35 %"), "{share}");
    }

    #[test]
    fn lost_probes_point_to_loss_recovery() {
        let p = FakeProber {
            rtt_ms: 150.0,
            speed_bps: Some(500_000_000),
            capacity_bps: None,
            test: None,
            seen_ms: None,
        };
        let mut a = advise_linux(&args(&["198.18.0.2"], None), &p).expect("advice");
        let h = &mut a.hosts[0];
        assert_eq!(probe_loss_warning(h), None);
        let r = &h.measurement.rtt;
        h.measurement.rtt = crate::measure::RttStats::compute(r.method.clone(), r.sent + 2, r.samples_ms.clone());
        let w = probe_loss_warning(h).expect("a warning");
        assert!(
            w.starts_with("198.18.0.2: 2 of 12 probes were lost (17 %)") && w.contains("--loss-recovery"),
            "{w}"
        );
        // No answer at all is an unreachable host, not a lossy path.
        h.measurement.rtt = crate::measure::RttStats::compute(crate::measure::Method::Icmp, 10, Vec::new());
        assert_eq!(probe_loss_warning(h), None);
    }

    #[test]
    fn unknown_speed_is_assumed_and_marked_and_bandwidth_wins() {
        let p = FakeProber {
            rtt_ms: 50.0,
            speed_bps: None,
            capacity_bps: None,
            test: None,
            seen_ms: None,
        };
        let a = advise_linux(&args(&["198.18.0.9"], None), &p).expect("advice");
        assert_eq!(a.bandwidth_source, Source::Assumed);
        assert_eq!(a.bandwidth_bps, ASSUMED_RATE_BPS);
        // Said first, plainly, with both ways out.
        assert!(
            a.notes[0].contains("rate was NOT MEASURED")
                && a.notes[0].contains("--bandwidth")
                && a.notes[0].contains("--ssh"),
            "{:?}",
            a.notes
        );
        let a = advise_linux(&args(&["198.18.0.9"], Some("100mbit")), &p).expect("advice");
        assert_eq!(a.bandwidth_source, Source::Given);
        assert_eq!(a.bandwidth_bps, 100_000_000);
    }

    #[test]
    fn an_unmeasured_rate_stays_within_the_tcp_memory_budget_never_the_nics_speed() {
        // A 10 Gbit/s NIC, no trains, no test, at 150 ms: the NIC's speed would ask for 937 MB.
        let p = FakeProber {
            rtt_ms: 150.0,
            speed_bps: Some(10_000_000_000),
            capacity_bps: None,
            test: None,
            seen_ms: None,
        };
        let mut facts = hand_built(6_291_456);
        if let Some(r) = facts.running.as_mut() {
            r.values.insert(
                crate::host::facts::TCP_MEM.into(),
                KeyState::Present {
                    value: "10000 20000 30000".into(),
                    access: crate::sysctl::Access::ReadOnly,
                },
            );
        }
        let a = advise(&args(&["198.18.0.2"], None), &Profile::for_os(Os::Linux), &facts, &p).expect("advice");
        assert_eq!(
            (a.bandwidth_bps, a.bandwidth_source),
            (ASSUMED_RATE_BPS, Source::Assumed)
        );
        assert!(
            a.notes[0].contains("the link speed of fake0, 10 Gbit/s, is the NIC's"),
            "{:?}",
            a.notes
        );
        // The rate assumed is at most 1 Gbit/s (5 × its BDP: 93.8 MB), and a quarter of
        // 30,000 pages of 4096 bytes, in 64 KiB steps, is less.
        let budget = 30_000 * 4096 / 4 / 65_536 * 65_536;
        assert_eq!((a.sizing.buffer, a.sizing.send_buffer), (budget, budget));
        assert!(
            a.notes.iter().any(|n| n.contains("stay within 29.2 MiB")),
            "{:?}",
            a.notes
        );
    }

    #[test]
    fn packet_trains_give_the_rate_capped_by_the_link() {
        // A TUN or virtio link (no speed) behind a 50 Mbit/s bottleneck, and a TCP test that
        // confirms the trains: its payload rate, 50 Mbit/s, is 51.8 Mbit/s at the IP level.
        let p = FakeProber {
            rtt_ms: 40.0,
            speed_bps: None,
            capacity_bps: Some(50_000_000),
            test: Some(crate::measure::fake::FakeTest::clean()),
            seen_ms: None,
        };
        let a = advise_linux(&args(&["198.18.0.2"], None), &p).expect("advice");
        assert_eq!((a.bandwidth_bps, a.bandwidth_source), (51_795_580, Source::Measured));
        assert_eq!(
            a.notes[0],
            "198.18.0.2: bottleneck rate from packet trains: 50 Mbit/s (5 of 5 trains of 48 × 1500 bytes agree within 10 %)"
        );
        assert_eq!(
            a.notes[1],
            "198.18.0.2: rate from the TCP path test: 50 Mbit/s delivery rate after startup (51.8 Mbit/s at the IP level); the packet trains read 50 Mbit/s; sized for that"
        );
        let json = serde_json::to_value(&a).expect("json");
        assert_eq!(json["hosts"][0]["measurement"]["capacity"]["bps"], 50_000_000);

        // No TCP test: the trains' reading sizes the buffers (a NIC's speed or an assumed
        // rate never does).
        let a = advise_linux(
            &args(&["198.18.0.2"], None),
            &FakeProber {
                test: None,
                ..p.clone()
            },
        )
        .expect("advice");
        assert_eq!((a.bandwidth_bps, a.bandwidth_source), (50_000_000, Source::Measured));
        assert_eq!(a.bdp_bytes, 250_000);
        // The TCP test's rate wins over trains that read 7 × too high.
        let a = advise_linux(
            &args(&["198.18.0.2"], None),
            &FakeProber {
                capacity_bps: Some(7_000_000_000),
                test: Some(crate::measure::fake::FakeTest {
                    rate_bps: Some(1_000_000_000),
                    ..crate::measure::fake::FakeTest::clean()
                }),
                ..p.clone()
            },
        )
        .expect("advice");
        assert_eq!(
            (a.bandwidth_bps, a.bandwidth_source),
            (ip_rate(1e9, None), Source::Measured)
        );

        // A 100 Mbit/s NIC is slower than what the trains saw (a fast burst on a shared link):
        // the link wins, and the note says so.
        let p = FakeProber {
            speed_bps: Some(100_000_000),
            capacity_bps: Some(300_000_000),
            ..p
        };
        let a = advise_linux(&args(&["198.18.0.2"], None), &p).expect("advice");
        assert_eq!((a.bandwidth_bps, a.bandwidth_source), (100_000_000, Source::Measured));
        assert!(
            a.notes[0].ends_with("the link speed of fake0, 100 Mbit/s, is lower: used that"),
            "{:?}",
            a.notes
        );

        // --bandwidth: no trains at all.
        let a = advise_linux(&args(&["198.18.0.2"], Some("20mbit")), &p).expect("advice");
        assert_eq!((a.bandwidth_bps, a.bandwidth_source), (20_000_000, Source::Given));
        assert!(a.hosts[0].measurement.capacity.is_none());
        assert!(!a.notes.iter().any(|n| n.contains("trains")), "{:?}", a.notes);

        // --no-capacity and no test: nothing measured the rate; the NIC's speed is not the
        // path's, so it is an assumption, said first.
        let mut no = args(&["198.18.0.2"], None);
        no.probe.capacity = false;
        let a = advise_linux(&no, &FakeProber { test: None, ..p }).expect("advice");
        assert_eq!((a.bandwidth_bps, a.bandwidth_source), (100_000_000, Source::Assumed));
        assert!(a.notes[0].contains("rate was NOT MEASURED"), "{:?}", a.notes);
    }

    /// The advice for a fake path of `spec`, measured and decided for this host.
    fn advised(spec: &str) -> Advice {
        let p = FakeProber::from_spec(spec).expect("spec");
        let (req, facts) = (args(&["198.18.0.2"], None), Facts::unknown(Os::Linux));
        let m = measure(&req, &facts, &p).expect("measured");
        advise_end(&req, &Profile::for_os(Os::Linux), &facts, &m, End::Near, THIS_HOST).expect("advice")
    }

    #[test]
    fn others_on_the_path_give_the_shared_class_sized_for_the_trains_at_the_base_rtt() {
        // The path: 100 ms / 300 Mbit/s, a neighbour holding a queue of 2 × BDP: the
        // probes met it (300 ms), the test got 34 Mbit/s with the queue standing.
        let a = advised("rtt=100ms,capacity=300mbit,tcp-rate=34mbit,standing=200ms");
        assert_eq!(a.decision.class, decide::PathClass::Shared, "{:?}", a.notes);
        assert_eq!(a.rtt_ms, 100.0, "the test's RTT, not the probes' 300 ms");
        assert_eq!(
            (a.bandwidth_bps, a.bandwidth_basis),
            (300_000_000, RateBasis::TrainsOverTest)
        );
        let cc = a.settings.iter().find(|s| s.key == facts::CURRENT_CC).expect("cc");
        assert_eq!(cc.value, "cubic", "a fair neighbour");
        // A window covering the queue the others keep: 2 × BDP at the loaded 300 ms, within 6 ×.
        assert_eq!(a.sizing.send_factor, bdp::HEAVY_LOSS_FACTOR);
        assert!(matches!(
            a.decision.sharing,
            Some(sharing::Sharing::Competing { standing_ms, .. }) if (standing_ms - 200.0).abs() < 1e-6
        ));
        assert!(
            a.notes.iter().any(|n| n.contains("the probes met a queue")),
            "{:?}",
            a.notes
        );
    }

    #[test]
    fn a_policer_gives_bbr_at_its_rate_and_names_it() {
        let a = advised("rtt=40ms,capacity=400mbit,tcp-rate=96mbit,police=1");
        assert_eq!(a.decision.class, decide::PathClass::Policed);
        // Sized for the policed rate at the IP level (96 Mbit/s of payload), not the trains'.
        assert_eq!(a.bandwidth_bps, ip_rate(96e6, None));
        assert!(
            a.notes
                .iter()
                .any(|n| n.line().starts_with("a policer at about 99.45 Mbit/s")),
            "{:?}",
            a.notes
        );
        assert_eq!(a.sizing.send_factor, bdp::LOSS_FACTOR);
    }

    #[test]
    fn spurious_retransmissions_are_no_loss() {
        // 0.01 % at 150 ms holds CUBIC; if the receiver got every one of them twice, nothing
        // was lost: the path is clean.
        let lossy = advised("rtt=150ms,rate=500mbit,loss=0.01");
        assert_eq!(lossy.decision.class, decide::PathClass::Lossy);
        let reordered = advised("rtt=150ms,rate=500mbit,spurious=100");
        assert_eq!(
            reordered.decision.class,
            decide::PathClass::Clean,
            "{:?}",
            reordered.notes
        );
        assert!(
            reordered
                .decision
                .observations
                .iter()
                .any(|o| matches!(o, decide::Observation::Spurious { spurious: 100, .. })),
            "{:?}",
            reordered.decision.observations
        );
    }

    #[test]
    fn a_held_test_is_a_lower_bound_raised_to_the_trains() {
        // iperf3 against a far end whose stock receive buffer held the test at 137 Mbit/s on a
        // 500 Mbit/s path: the trains' 500 Mbit/s sizes the buffers, and the queue is not
        // read from the held test's flat RTT.
        let p = FakeProber {
            rtt_ms: 150.0,
            speed_bps: None,
            capacity_bps: Some(500_000_000),
            test: Some(crate::measure::fake::FakeTest {
                rate_bps: Some(137_400_000),
                queue_bdp: 0.0,
                ..crate::measure::fake::FakeTest::clean()
            }),
            seen_ms: None,
        };
        let mut req = args(&["198.18.0.2"], None);
        req.test.mode = TestMode::Tcptune;
        let held = |held_by| {
            let m = measure(&req, &Facts::unknown(Os::Linux), &p).expect("measured");
            let mut m = m;
            if let Some(t) = m.evidence.as_mut().and_then(|e| e.test.as_mut()) {
                t.window_limited = true;
                t.held_by = held_by;
            }
            // Settle again, as measure would with a held test.
            m.path.rate = Bitrate::from_bps(500_000_000);
            let h = m.hosts[0].measurement.clone();
            let notes = rate::settle_rate(&mut m.path, &h, m.evidence.as_ref());
            (m, notes)
        };
        let (m, notes) = held(Some(crate::measure::evidence::HeldBy::ReceiveWindow));
        assert_eq!(m.path.rate.bps(), 500_000_000);
        assert!(
            notes[0].contains(
                "a lower bound, as the receiver's window held the test: sized for the packet trains' 500 Mbit/s"
            ),
            "{notes:?}"
        );
        let a = advise_end(
            &req,
            &Profile::for_os(Os::Linux),
            &Facts::unknown(Os::Linux),
            &m,
            End::Near,
            THIS_HOST,
        )
        .expect("advice");
        assert_ne!(
            a.decision.class,
            decide::PathClass::Shallow,
            "a held test's flat RTT is no queue"
        );
        assert!(
            words::why_class(&a.decision).contains("held by the receiver's window"),
            "{}",
            words::why_class(&a.decision)
        );
    }

    /// A fake host at 10 ms whose packet trains read `bps` and whose link speed is unknown.
    fn measured_with_trains(bps: u64) -> HostMeasurement {
        FakeProber {
            rtt_ms: 10.0,
            speed_bps: None,
            capacity_bps: Some(bps),
            test: None,
            seen_ms: None,
        }
        .measure(&["h".to_string()], &ProbeOptions::default())
        .expect("fake")
        .remove(0)
    }

    #[test]
    fn sender_limited_trains_are_a_lower_bound() {
        let mut m = measured_with_trains(3_000_000_000);
        if let Some(c) = m.capacity.as_mut() {
            c.sender_limited = true;
        }
        let (rate, source, note) = measured_rate(&m);
        assert_eq!((rate.bps(), source), (3_000_000_000, Source::Measured));
        assert!(
            note.contains("at least 3 Gbit/s") && note.contains("--bandwidth"),
            "{note}"
        );
        // A known link speed above the bound is the better number.
        m.link.speed_bps = Some(10_000_000_000);
        let (rate, _, note) = measured_rate(&m);
        assert_eq!(rate.bps(), 10_000_000_000);
        assert!(note.ends_with("used the link speed of fake0, 10 Gbit/s"), "{note}");
    }

    #[test]
    fn disagreeing_trains_are_said_to_disagree() {
        let mut m = measured_with_trains(500_000_000);
        let (_, _, note) = measured_rate(&m);
        assert!(!note.contains("disagree"), "{note}");
        if let Some(c) = m.capacity.as_mut() {
            c.samples_bps = vec![500_000_000, 2_600_000_000, 800_000_000, 497_000_000, 1_700_000_000];
            c.agreeing = 2;
            c.agreed = false;
        }
        let (rate, _, note) = measured_rate(&m);
        assert_eq!(rate.bps(), 500_000_000);
        assert!(
            note.contains("2 of 5 trains") && note.contains("disagree (rates 497 Mbit/s to 2.6 Gbit/s)"),
            "{note}"
        );
    }

    #[test]
    fn a_test_through_heavy_loss_is_a_lower_bound_raised_to_the_trains() {
        // 1 % loss: a flow repairing it runs below the path (188 of 200 Mbit/s); the trains read
        // the path itself. 0.1 %: the test's own rate stands.
        let facts = Facts::unknown(Os::Linux);
        let req = args(&["198.18.0.2"], None);
        let advised = |spec: &str| {
            let p = FakeProber::from_spec(spec).expect("spec");
            let m = measure(&req, &facts, &p).expect("measured");
            advise_end(&req, &Profile::for_os(Os::Linux), &facts, &m, End::Near, THIS_HOST).expect("advice")
        };
        let a = advised("rtt=50ms,capacity=200mbit,tcp-rate=188mbit,loss=1");
        assert_eq!(a.bandwidth_bps, 200_000_000, "{:?}", a.notes);
        assert!(
            a.notes
                .iter()
                .any(|n| n.contains("a lower bound, as the test lost 1 % after startup")),
            "{:?}",
            a.notes
        );
        let a = advised("rtt=50ms,capacity=200mbit,tcp-rate=188mbit,loss=0.1");
        assert!(a.bandwidth_bps < 200_000_000, "{}", a.bandwidth_bps);
    }

    #[test]
    fn a_bursty_forwarder_is_named_and_the_long_trains_are_counted() {
        use crate::measure::train::{Burst, LongTrains, LongWhy, Reading};
        let mut m = measured_with_trains(1_000_000_000);
        if let Some(c) = m.capacity.as_mut() {
            c.bursty = Some(Burst {
                packets: 25,
                period_us: 600,
                bursts_per_train: 2,
                share_pct: 90,
            });
            c.reading = Reading::LongTrains;
            c.long = Some(LongTrains {
                why: LongWhy::Bursts,
                trains: 3,
                per_train: 1024,
                used: 3,
                agreeing: 2,
                samples_bps: vec![990_000_000, 1_010_000_000, 1_400_000_000],
                bps: Some(1_000_000_000),
                error: None,
            });
        }
        let (rate, source, note) = measured_rate(&m);
        assert_eq!((rate.bps(), source), (1_000_000_000, Source::Measured));
        assert!(note.contains("(2 of 3 trains of 1024 × "), "{note}");
        assert!(
            note.contains("bursts of ~25 every ~600") && note.contains("trains of 1024 packets"),
            "{note}"
        );
    }

    #[test]
    fn bbr_on_long_paths_gets_a_probe_rtt_note() {
        let note = probe_rtt_note(Some("bbr"), 600.0).expect("note");
        assert!(
            note.contains("at 600 ms") && note.contains("about 800 ms every 10 s (about 8 %"),
            "{note}"
        );
        assert_eq!(
            probe_rtt_note(Some("bbr"), 150.0),
            None,
            "about 3.5 %: not worth a note"
        );
        assert_eq!(probe_rtt_note(Some("cubic"), 600.0), None);
        assert_eq!(probe_rtt_note(None, 600.0), None);
    }

    #[test]
    fn several_hosts_each_reported() {
        let p = FakeProber {
            rtt_ms: 20.0,
            speed_bps: Some(1_000_000_000),
            capacity_bps: Some(1_000_000_000),
            test: None,
            seen_ms: None,
        };
        let a = advise_linux(&args(&["198.18.0.9", "198.18.0.10"], None), &p).expect("advice");
        assert_eq!(a.hosts.len(), 2);
        assert_eq!(a.hosts[1].host, "198.18.0.10");
    }

    #[test]
    fn unreachable_and_unresolvable_hosts_are_measurement_errors() {
        let p = FakeProber::UNREACHABLE;
        let e = advise_linux(&args(&["198.18.0.9"], None), &p).expect_err("unreachable");
        let e = e.downcast_ref::<Error>().expect("typed");
        assert_eq!(e.exit_code(), 4);
        let p = FakeProber {
            rtt_ms: 10.0,
            speed_bps: None,
            capacity_bps: None,
            test: None,
            seen_ms: None,
        };
        let e = advise_linux(&args(&["nonexistent.invalid"], None), &p).expect_err("unresolvable");
        assert_eq!(e.downcast_ref::<Error>().expect("typed").exit_code(), 4);
    }
}
