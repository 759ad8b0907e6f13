//! Shipping: the man page and completion scripts (their snapshots are the packaged files in
//! assets/), the first-run guide, `tcptune profiles`, and every message docs/FAQ.md
//! Troubleshooting section shows, produced for real and compared with it verbatim.
//!
//! UPDATE_SNAPSHOTS=1 rewrites assets/ from the binary instead of comparing.

use std::path::Path;
use std::process::Command as Std;

use assert_cmd::cargo::cargo_bin;
use predicates::prelude::*;

use super::{json, linux_tree, setting, tcptune};
use crate::netns::Netns;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn update() -> bool {
    std::env::var_os("UPDATE_SNAPSHOTS").is_some_and(|v| v == "1")
}

/// Compare `actual` with the committed file `rel`, byte for byte; UPDATE_SNAPSHOTS=1 rewrites it.
fn snapshot(rel: &str, actual: &[u8]) {
    let path = repo().join(rel);
    if update() {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, actual).expect("write snapshot");
        return;
    }
    let expected = std::fs::read(&path).unwrap_or_default();
    if expected != actual {
        let (e, a) = (String::from_utf8_lossy(&expected), String::from_utf8_lossy(actual));
        let at = e
            .lines()
            .zip(a.lines())
            .position(|(x, y)| x != y)
            .unwrap_or_else(|| e.lines().count().min(a.lines().count()));
        panic!(
            "{rel} is not what the binary generates now (first difference at line {}):\n  committed: {:?}\n  generated: {:?}\n\
             If the change is intended, run `UPDATE_SNAPSHOTS=1 cargo test --test cli ship::` and commit {rel}.",
            at + 1,
            e.lines().nth(at).unwrap_or("<end of file>"),
            a.lines().nth(at).unwrap_or("<end of file>"),
        );
    }
}

/// Run tcptune; it must succeed with nothing on stderr. Returns stdout.
fn stdout_of(args: &[&str]) -> Vec<u8> {
    let out = tcptune().args(args).output().expect("run");
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn have(program: &str) -> bool {
    Std::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

const SUBCOMMANDS: &[&str] = &["calc", "advise", "profiles", "man", "completions"];

// ---------------------------------------------------------------- man page

#[test]
fn man_page_matches_the_packaged_copy() {
    snapshot("assets/tcptune.8", &stdout_of(&["man"]));
}

#[test]
fn man_page_is_section_8_reproducible_and_complete() {
    let page = String::from_utf8(stdout_of(&["man"])).expect("utf8");
    let th = page.lines().find(|l| l.starts_with(".TH ")).expect(".TH line");
    assert_eq!(
        th,
        format!(
            ".TH TCPTUNE 8 \"\" \"tcptune {}\" \"System Administration\"",
            env!("CARGO_PKG_VERSION")
        )
    );
    // No date, no build time: the same source gives the same bytes.
    assert_eq!(stdout_of(&["man"]), page.as_bytes());
    for section in [
        "NAME",
        "SYNOPSIS",
        "DESCRIPTION",
        "OPTIONS",
        "COMMANDS",
        "UNITS",
        "\"EXIT STATUS\"",
        "ENVIRONMENT",
        "FILES",
        "PROFILES",
        "EXAMPLES",
        "\"SEE ALSO\"",
    ] {
        assert!(page.contains(&format!("\n.SH {section}\n")), "no {section} section");
    }
    for sub in SUBCOMMANDS {
        assert!(page.contains(&format!(".SS \"tcptune {sub}\"")), "no {sub} command");
    }
    for nested in ["list", "show", "export"] {
        assert!(page.contains(&format!(".SS \"tcptune profiles {nested}\"")), "{nested}");
    }
    // Every option of advise is documented; each command's under it: --sysctl-dir in the
    // synopsis and the options of each command that takes it.
    for opt in ["\\-\\-host", "\\-\\-probes", "\\-\\-allow\\-lower", "\\-\\-profile"] {
        assert!(page.contains(&format!("\\fB{opt}\\fR")), "{opt}");
    }
    use clap::CommandFactory as _;
    let taking = tcptune::cli::Cli::command()
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_arguments().any(|a| a.get_long() == Some("sysctl-dir")))
        .count();
    assert_eq!(taking, 6, "advise, apply, revert, check, serve, verify");
    assert_eq!(
        page.matches("\\fB\\-\\-sysctl\\-dir\\fR").count(),
        2 * taking,
        "synopsis and options of each command that takes it"
    );
}

#[test]
fn man_page_renders_without_warnings() {
    if !have("groff") {
        eprintln!("groff not installed: rendering not checked");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("tcptune.8");
    std::fs::write(&file, stdout_of(&["man"])).expect("write");
    let out = Std::new("groff")
        // -P-bcu: plain text, no overstrike or escape sequences.
        .args(["-man", "-Tutf8", "-ww", "-rLL=80n", "-P-bcu"])
        .arg(&file)
        .output()
        .expect("groff");
    assert!(out.status.success());
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("EXIT STATUS") && text.contains("tcptune advise"),
        "{text}"
    );
}

// ---------------------------------------------------------------- completions

/// Each shell and its packaged file (bash, zsh, fish go into the .deb; all are snapshots).
const SHELLS: &[(&str, &str)] = &[
    ("bash", "assets/completions/tcptune.bash"),
    ("zsh", "assets/completions/_tcptune"),
    ("fish", "assets/completions/tcptune.fish"),
    ("elvish", "assets/completions/tcptune.elv"),
    ("powershell", "assets/completions/_tcptune.ps1"),
];

#[test]
fn completions_match_the_packaged_copies() {
    for (shell, file) in SHELLS {
        snapshot(file, &stdout_of(&["completions", shell]));
    }
}

#[test]
fn every_shell_completes_every_command() {
    for (shell, _) in SHELLS {
        let script = String::from_utf8(stdout_of(&["completions", shell])).expect("utf8");
        assert!(script.len() > 1000, "{shell}");
        for word in SUBCOMMANDS.iter().chain(&["--host", "--rtt", "--profile", "freebsd"]) {
            let word = word.trim_start_matches('-');
            assert!(script.contains(word), "{shell} completion lacks {word}");
        }
    }
    tcptune()
        .args(["completions", "tcsh"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "possible values: bash, elvish, fish, powershell, zsh",
        ));
}

#[test]
fn bash_completion_offers_commands_options_and_profile_names() {
    if !have("bash") {
        eprintln!("bash not installed: not checked");
        return;
    }
    let bin = cargo_bin("tcptune");
    // COMP_WORDS as bash fills it for `tcptune <TAB>`, `tcptune profiles show <TAB>`, `tcptune advise --pro<TAB>`.
    let script = format!(
        r#"source <('{bin}' completions bash) || exit 9
complete_at() {{ COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=(); _tcptune tcptune "${{COMP_WORDS[-1]}}" "${{COMP_WORDS[-2]}}"; echo "${{COMPREPLY[*]}}"; }}
complete_at tcptune ""
complete_at tcptune profiles show ""
complete_at tcptune advise --pro
"#,
        bin = bin.display()
    );
    let out = Std::new("bash").args(["-c", &script]).output().expect("bash");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).expect("utf8");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    for sub in SUBCOMMANDS {
        assert!(lines[0].split(' ').any(|w| w == *sub), "{sub}: {}", lines[0]);
    }
    assert!(lines[1].ends_with("linux freebsd macos"), "{}", lines[1]);
    assert_eq!(lines[2], "--profile --probes");
}

// ---------------------------------------------------------------- first run

#[test]
fn no_arguments_prints_the_guide_not_an_error() {
    let out = tcptune().output().expect("run");
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stderr.is_empty());
    let text = String::from_utf8(out.stdout).expect("utf8");
    assert_eq!(text, format!("{}\n", tcptune::cmd::GUIDE));
    // The three commands, in the order a newcomer runs them.
    let calc = text.find("tcptune calc --bandwidth").expect("calc");
    let advise = text.find("tcptune advise --ssh HOST ").expect("advise");
    let keep = text
        .find("tcptune advise --ssh HOST | sudo tee /etc/sysctl.d/60-tcptune.conf")
        .expect("tee");
    let far = text.find("tcptune advise --ssh HOST --side far\n").expect("far end");
    let apply = text
        .find("tcptune advise --ssh HOST > tcptune.conf\n       sudo tcptune apply tcptune.conf")
        .expect("apply");
    assert!(calc < advise && advise < keep && keep < far && far < apply, "{text}");
    // Without an ssh login there, --host is named beside it.
    assert!(text.contains("(no login there: tcptune advise --host HOST)"), "{text}");
    assert!(
        text.lines().all(|l| l.len() <= 80),
        "fits an 80-column terminal: {text}"
    );
    assert!(!text.contains("Usage:") && !text.contains("error"), "{text}");
}

// ---------------------------------------------------------------- profiles

#[test]
fn profiles_lists_every_shipped_profile() {
    let text = String::from_utf8(stdout_of(&["profiles"])).expect("utf8");
    assert_eq!(text, String::from_utf8(stdout_of(&["profiles", "list"])).expect("utf8"));
    for name in ["linux", "freebsd", "macos"] {
        assert!(text.lines().any(|l| l.starts_with(&format!("| {name} "))), "{text}");
    }
    let v = json(tcptune().args(["profiles", "list"]));
    let list = v["profiles"].as_array().expect("profiles");
    assert_eq!(list.len(), 3);
    assert_eq!(list[0]["name"], "linux");
    assert_eq!(list[0]["os"], "linux");
    assert!(list[1]["description"].as_str().expect("d").starts_with("FreeBSD"));
    assert!(list[2]["settings"].as_u64().expect("n") > 0);
    // Keys, not entries: tcp_rmem has one entry for a loss-free path and one for --loss-recovery.
    let shipped = String::from_utf8(stdout_of(&["profiles", "show", "linux"])).expect("utf8");
    let keys: std::collections::BTreeSet<&str> = shipped.lines().filter(|l| l.starts_with("key = ")).collect();
    assert!(shipped.lines().filter(|l| l.starts_with("key = ")).count() > keys.len());
    assert_eq!(list[0]["settings"].as_u64(), Some(keys.len() as u64));
}

#[test]
fn profiles_show_prints_the_shipped_toml() {
    for name in ["linux", "freebsd", "macos"] {
        let shipped = std::fs::read(repo().join(format!("profiles/{name}.toml"))).expect("profile");
        assert_eq!(stdout_of(&["profiles", "show", name]), shipped, "{name}");
    }
    // TOML only: a --format is a usage error, as any option it does not take; before the
    // command, where the options that were global may go, a command ignores those it does not take.
    tcptune()
        .args(["profiles", "show", "linux", "--format", "json"])
        .assert()
        .code(2)
        .stdout("")
        .stderr(predicate::str::starts_with(
            "tcptune: unexpected argument '--format' found\n",
        ));
    let shipped = std::fs::read(repo().join("profiles/linux.toml")).expect("profile");
    assert_eq!(stdout_of(&["--format", "json", "profiles", "show", "linux"]), shipped);
}

/// Export, edit a value, advise with it: the user's copy is what advise renders.
#[test]
fn profiles_export_edit_advise_round_trip() {
    let dir = tempfile::tempdir().expect("tempdir");
    let exported = String::from_utf8(stdout_of(&["profiles", "export", "linux"])).expect("utf8");
    assert!(exported.starts_with("# Exported from tcptune"), "{exported}");
    assert!(exported.contains("yours to edit"));
    let rmem_line = "value = \"4096 131072 {buffer}\"";
    // Once for a loss-free path, once for a shared one, once for loss recovery and once for a
    // path sized past the clean rule whose test measured no loss: the edit changes all four.
    assert_eq!(exported.matches(rmem_line).count(), 4, "{exported}");
    let mine = dir.path().join("my.toml");
    std::fs::write(
        &mine,
        exported.replace(rmem_line, "value = \"4096 131072 {round_up(bdp * 3, 1048576)}\""),
    )
    .expect("write");

    let tree = linux_tree(&[]);
    let advise = |profile: &Path| {
        json(
            tcptune()
                .args([
                    "advise",
                    "--clean-path",
                    "--os",
                    "linux",
                    "--rtt",
                    "150ms",
                    "--bandwidth",
                    "500mbit",
                ])
                .arg("--profile")
                .arg(profile)
                .arg("--sysctl-dir")
                .arg(tree.path()),
        )
    };
    let v = advise(&mine);
    // 3 × 9,375,000 rounded up to 1 MiB.
    assert_eq!(setting(&v, "net.ipv4.tcp_rmem")["value"], "4096 131072 28311552");
    // Everything else is as the shipped profile has it.
    let unedited = dir.path().join("unedited.toml");
    std::fs::write(&unedited, &exported).expect("write");
    let shipped = advise(&unedited);
    assert_eq!(setting(&shipped, "net.ipv4.tcp_rmem")["value"], "4096 131072 20643840");
    assert_eq!(
        v["settings"].as_array().map(Vec::len),
        shipped["settings"].as_array().map(Vec::len)
    );
    assert_eq!(
        setting(&v, "net.ipv4.tcp_wmem")["value"],
        setting(&shipped, "net.ipv4.tcp_wmem")["value"]
    );
}

/// A mistake in an edited export names the file, the line and the field.
#[test]
fn profile_mistakes_name_file_line_and_field() {
    let exported = String::from_utf8(stdout_of(&["profiles", "export", "linux"])).expect("utf8");
    let line_of = |needle: &str| exported.lines().position(|l| l.contains(needle)).expect("needle") + 1;
    let rmem_key = line_of("key = \"net.ipv4.tcp_rmem\"");
    let rmem_value = line_of("value = \"4096 131072 {buffer}\"");
    let cases: Vec<(String, String)> = vec![
        // an unknown fact in a value: the value's own line
        (
            exported.replacen("{buffer}\"", "{bufer}\"", 1),
            format!("line {rmem_value}: setting net.ipv4.tcp_rmem: value: unknown fact `bufer`"),
        ),
        // a bad policy: the field is named, and what it may be; nothing of the file is quoted
        // (a file given by path may be any file root can read)
        (
            exported.replacen(
                "value = \"4096 131072 {buffer}\"",
                "value = \"4096 131072 {buffer}\"\npolicy = \"sometimes\"",
                1,
            ),
            format!(
                "line {}, column 10: policy: unknown variant, expected `at-least` or `exact`",
                rmem_value + 1
            ),
        ),
        // an unknown field
        (
            exported.replacen(
                "value = \"4096 131072 {buffer}\"",
                "value = \"4096 131072 {buffer}\"\nfactor = 3",
                1,
            ),
            format!("line {}, column 1: unknown field `factor`", rmem_value + 1),
        ),
        // a key outside the networking tree: the key's line, not the [caps] entry that names it first
        (
            exported.replacen("key = \"net.ipv4.tcp_rmem\"", "key = \"kernel.panic\"", 1),
            format!("line {rmem_key}: setting kernel.panic: key: not a networking sysctl key for linux"),
        ),
        // an expression that cannot be evaluated for this path: reported when advising
        (
            exported.replacen("{buffer}\"", "{bdp - 1e12}\"", 1),
            format!("line {rmem_value}: setting net.ipv4.tcp_rmem: value: `bdp - 1e12` gave"),
        ),
    ];
    let dir = tempfile::tempdir().expect("tempdir");
    for (text, want) in cases {
        std::fs::write(dir.path().join("my.toml"), &text).expect("write");
        let out = tcptune()
            .current_dir(dir.path())
            .args([
                "advise",
                "--clean-path",
                "--rtt",
                "150ms",
                "--bandwidth",
                "500mbit",
                "--profile",
                "my.toml",
            ])
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 2, "{err}");
        assert!(lines[0].starts_with("tcptune: profile my.toml, "), "{err}");
        assert!(lines[0].contains(&want), "want {want:?} in {err}");
        assert!(lines[1].starts_with("hint: "), "{err}");
        assert!(out.stdout.is_empty());
    }
}

// ---------------------------------------------------------------- troubleshooting

/// One message the Troubleshooting section of docs/FAQ.md shows.
struct Case {
    /// The command as docs/FAQ.md shows it after `$ `.
    shown: &'static str,
    /// The arguments tcptune really gets.
    args: &'static [&'static str],
    code: i32,
    stderr: &'static str,
}

const BAD_PROFILE: &str = "\
name = \"mine\"
os = \"linux\"
description = \"my rules\"

[[setting]]
key = \"net.ipv4.tcp_rmem\"
value = \"4096 131072 {bufer}\"
reason = \"a typo in a fact\"
";

const CASES: &[Case] = &[
    Case {
        shown: "tcptune advise --rtt 150 --bandwidth 500mbit",
        args: &["advise", "--rtt", "150", "--bandwidth", "500mbit"],
        code: 2,
        stderr: "tcptune: --rtt: invalid duration \"150\": a unit is required; expected e.g. 150ms, 1.5s, 90s, 10m, 2h\n",
    },
    Case {
        shown: "tcptune calc --bandwidth 100MB/s --rtt 25ms",
        args: &["calc", "--bandwidth", "100MB/s", "--rtt", "25ms"],
        code: 2,
        stderr: "tcptune: --bandwidth: invalid rate \"100MB/s\": rates are in bits per second, not bytes: write e.g. 500mbit; expected e.g. 500mbit, 500Mbit/s, 500mbps, 1gbit, 1G, 100m\n",
    },
    Case {
        shown: "tcptune advise",
        args: &["advise"],
        code: 2,
        stderr: "tcptune: advise needs --host HOST (to measure), or both --rtt and --bandwidth\nhint: e.g. tcptune advise --rtt 150ms --bandwidth 500mbit\n",
    },
    Case {
        shown: "tcptune advice --host example.org",
        args: &["advice", "--host", "example.org"],
        code: 2,
        stderr: "tcptune: unrecognized subcommand 'advice'\nhint: a similar subcommand exists: 'advise'; usage: tcptune [COMMAND]; see --help\n",
    },
    Case {
        shown: "tcptune advise --host nonexistent.invalid",
        args: &["advise", "--host", "nonexistent.invalid"],
        code: 4,
        stderr: "tcptune: cannot resolve \"nonexistent.invalid\": names under .invalid never resolve (RFC 6761)\nhint: check the name, or give --rtt and --bandwidth\n",
    },
    Case {
        shown: "tcptune advise --rtt 150ms --bandwidth 500mbit --profile solaris",
        args: &[
            "advise",
            "--rtt",
            "150ms",
            "--bandwidth",
            "500mbit",
            "--profile",
            "solaris",
        ],
        code: 2,
        stderr: "tcptune: unknown profile \"solaris\": expected one of linux, freebsd, macos or a path to a .toml file\nhint: `tcptune profiles` lists the shipped ones; `tcptune profiles export linux > my.toml` starts your own\n",
    },
    Case {
        shown: "tcptune advise --rtt 150ms --bandwidth 500mbit --profile missing.toml",
        args: &[
            "advise",
            "--rtt",
            "150ms",
            "--bandwidth",
            "500mbit",
            "--profile",
            "missing.toml",
        ],
        code: 2,
        stderr: "tcptune: cannot read profile missing.toml: No such file or directory (os error 2)\nhint: `tcptune profiles` lists the shipped ones; `tcptune profiles export linux > my.toml` starts your own\n",
    },
    Case {
        shown: "tcptune advise --rtt 150ms --bandwidth 500mbit --profile mine.toml",
        args: &[
            "advise",
            "--rtt",
            "150ms",
            "--bandwidth",
            "500mbit",
            "--profile",
            "mine.toml",
        ],
        code: 2,
        stderr: "tcptune: profile mine.toml, line 7: setting net.ipv4.tcp_rmem: value: unknown fact `bufer`\nhint: the facts are bdp, receive_bdp, receive_rate_bps, buffer, send_buffer, headroom_pct, rate_bps, rtt_ms, sizing_rtt_ms, mtu, flows, needs_raise, loss_recovery, receive_loss_recovery, loss_free, receive_loss_free, loss_factor, receive_loss_factor, class_measured, shared, receive_shared, policed, cubic_at_risk, notsent_lowat, window_share, cc_bbr, cc_cubic, cc_htcp, qdisc_fq\n",
    },
];

/// Inside a fresh, empty network namespace nothing answers (and nothing leaves the machine).
const NO_REPLY: Case = Case {
    shown: "sudo ip netns exec empty tcptune advise --host 198.18.0.9",
    args: &["advise", "--host", "198.18.0.9"],
    code: 4,
    stderr: "tcptune: no reply from 198.18.0.9 (198.18.0.9): 10 ICMP echo requests and 10 TCP connects to ports 443, 22, 80 failed (Network is unreachable (os error 101))\nhint: check the host is up and ICMP to it is not filtered, open a TCP port and pass --port, or give --rtt and --bandwidth\n",
};

/// The same as an ordinary user, where ping_group_range does not allow ICMP sockets.
const NO_REPLY_NOT_ROOT: Case = Case {
    shown: "sudo ip netns exec empty setpriv --reuid nobody --regid nogroup --clear-groups tcptune advise --host 198.18.0.9",
    args: &["advise", "--host", "198.18.0.9"],
    code: 4,
    stderr: "tcptune: no reply from 198.18.0.9 (198.18.0.9): ICMP not permitted (ping_group_range is 1 0 and not root), and 10 TCP connects to ports 443, 22, 80 failed (Network is unreachable (os error 101))\nhint: allow ICMP (sysctl net.ipv4.ping_group_range='0 2147483647' or run as root), open a TCP port and pass --port, or give --rtt and --bandwidth\n",
};

fn check(case: &Case, out: &std::process::Output) {
    assert_eq!(out.status.code(), Some(case.code), "{}", case.shown);
    assert_eq!(String::from_utf8_lossy(&out.stderr), case.stderr, "{}", case.shown);
    assert!(out.stdout.is_empty(), "{}", case.shown);
}

#[test]
fn troubleshooting_messages_are_what_the_binary_prints() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("mine.toml"), BAD_PROFILE).expect("write");
    for case in CASES {
        check(
            case,
            &tcptune().current_dir(dir.path()).args(case.args).output().expect("run"),
        );
    }
}

#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn troubleshooting_no_reply_in_an_empty_netns() {
    let ns = Netns::new("noreply");
    let bin = cargo_bin("tcptune");
    let mut args = vec![bin.to_str().expect("utf8")];
    args.extend(NO_REPLY.args);
    check(&NO_REPLY, &ns.exec(args[0], &args[1..]));

    // As nobody: the binary must be reachable by that user, so run a copy from an open directory.
    assert!(
        have("setpriv"),
        "setpriv (util-linux) is needed to run the not-root case"
    );
    let (_dir, copy) = super::runnable_copy();
    let mut args = vec![
        "--reuid",
        "65534",
        "--regid",
        "65534",
        "--clear-groups",
        copy.to_str().expect("utf8"),
    ];
    args.extend(NO_REPLY_NOT_ROOT.args);
    check(&NO_REPLY_NOT_ROOT, &ns.exec("setpriv", &args));
}

/// docs/FAQ.md shows each case as `$ command` followed by the exact stderr, and the bad profile.
#[test]
fn troubleshooting_section_shows_each_message_verbatim() {
    let faq = std::fs::read_to_string(repo().join("docs/FAQ.md")).expect("docs/FAQ.md");
    let section = faq
        .split("\n## Troubleshooting\n")
        .nth(1)
        .expect("a Troubleshooting section")
        .split("\n## ")
        .next()
        .expect("section");
    for case in CASES.iter().chain([&NO_REPLY, &NO_REPLY_NOT_ROOT]) {
        let block = format!("$ {}\n{}", case.shown, case.stderr);
        assert!(
            section.contains(&block),
            "docs/FAQ.md Troubleshooting lacks, verbatim:\n{block}"
        );
    }
    assert!(
        section.contains(BAD_PROFILE),
        "docs/FAQ.md lacks the bad profile mine.toml"
    );
}

/// The guide's Units and Exit codes sections (its last two) are generated from the same
/// tables as `tcptune --help` and the man page: described once, shown three times.
#[test]
fn the_guide_shows_units_and_exit_codes_from_the_source() {
    let mut want = String::from("## Units\n\n| input | accepted |\n|---|---|\n");
    let mut output = String::new();
    for (what, means) in tcptune::units::MEANINGS {
        if *what == "output" {
            output = format!("Output: {means}\n");
        } else {
            want.push_str(&format!("| {what} | {means} |\n"));
        }
    }
    want.push_str(&format!(
        "\n{output}\nBad input is one line on stderr and exit code 2.\n\n"
    ));
    want.push_str("## Exit codes\n\n| code | meaning |\n|---|---|\n");
    for (code, means) in tcptune::error::exit::MEANINGS {
        want.push_str(&format!("| {code} | {means} |\n"));
    }
    let path = repo().join("docs/GUIDE.md");
    let guide = std::fs::read_to_string(&path).expect("docs/GUIDE.md");
    let at = guide.find("\n## Units\n").expect("a Units section") + 1;
    if update() {
        std::fs::write(&path, format!("{}{want}", &guide[..at])).expect("write");
        return;
    }
    assert_eq!(
        &guide[at..],
        want,
        "docs/GUIDE.md's Units and Exit codes differ from src/units.rs and src/error.rs; \
         UPDATE_SNAPSHOTS=1 cargo test --test cli ship:: rewrites them"
    );
}
