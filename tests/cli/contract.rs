//! docs/CLI.md, the command-line contract, kept true: every option it lists exists under that
//! name for the commands it names, every visible option is listed, and each command's `--format`
//! takes the values listed for it; its units and exit codes are the tables the binary
//! prints; the README's first-run block is what `tcptune` prints; and no file of the repository
//! points outside it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use clap::CommandFactory as _;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The options a section of docs/CLI.md lists: the first cell of each table row, each comma-
/// separated name in backticks that starts with `-`.
fn documented(section: &str) -> BTreeSet<String> {
    section
        .lines()
        .filter(|l| l.starts_with("| `-"))
        .flat_map(|l| {
            l.split('|')
                .nth(1)
                .unwrap_or_default()
                .split(',')
                .map(str::trim)
                .collect::<Vec<_>>()
        })
        .map(|c| c.trim_matches('`').to_string())
        .filter(|c| c.starts_with('-'))
        .collect()
}

/// The text of the `### `tcptune NAME`` section (or a `## ` section by its title), up to the
/// next heading of either level.
fn section<'a>(doc: &'a str, heading: &str) -> &'a str {
    let at = doc
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("docs/CLI.md has no section {heading}"));
    let body = &doc[at + heading.len() + 2..];
    let end = body
        .find("\n## ")
        .into_iter()
        .chain(body.find("\n### "))
        .min()
        .unwrap_or(body.len());
    &body[..end]
}

/// The visible options of a command as the user types them: `--long` and, for an option
/// without a long name, `-s`; `-b` beside `--bandwidth` too.
fn options(cmd: &clap::Command) -> BTreeSet<String> {
    cmd.get_arguments()
        .filter(|a| !a.is_hide_set() && !a.is_positional())
        .filter(|a| !matches!(a.get_id().as_str(), "help" | "version"))
        .flat_map(|a| {
            let mut names: Vec<String> = a.get_long().map(|l| format!("--{l}")).into_iter().collect();
            names.extend(a.get_short().map(|s| format!("-{s}")));
            names
        })
        .collect()
}

/// Every visible command by the words that run it (`advise`, `profiles list`).
fn commands(cmd: &clap::Command, prefix: &str) -> Vec<(String, clap::Command)> {
    cmd.get_subcommands()
        .filter(|s| !s.is_hide_set())
        .flat_map(|s| {
            let path = format!("{prefix}{}", s.get_name());
            let mut all = vec![(path.clone(), s.clone())];
            all.extend(commands(s, &format!("{path} ")));
            all
        })
        .collect()
}

/// The rows of a table in `text` (not its header), as trimmed cells.
fn rows(text: &str) -> Vec<Vec<&str>> {
    text.lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| option ") && !l.starts_with("| commands "))
        .map(|l| l.split('|').skip(1).map(str::trim).collect())
        .collect()
}

/// A cell's comma-separated words, as a set: `calc, profiles list` or `` `table`, `json` ``.
fn words(cell: &str) -> BTreeSet<String> {
    cell.split(',')
        .map(|w| w.trim().trim_matches('`').to_string())
        .collect()
}

/// Options of advise that apply takes too (its fresh advice): advise's but the output ones.
const ADVISE_OUTPUT_ONLY: [&str; 6] = [
    "--output",
    "--size",
    "--tuned-include",
    "--allowed-unsafe-sysctls",
    "--side",
    "--explain",
];

const SHARED: &str = "## Options several commands take";

#[test]
fn every_option_is_in_the_contract_and_every_option_there_exists() {
    let doc = read("docs/CLI.md");
    let cli = tcptune::cli::Cli::command();
    assert!(options(&cli).is_empty(), "tcptune takes its options after a command");
    // The options several commands take, and the commands each names.
    let shared: Vec<(String, BTreeSet<String>)> = rows(section(&doc, SHARED))
        .into_iter()
        .filter(|r| r.len() == 5 && r[0].starts_with("`-"))
        .map(|r| (r[0].trim_matches('`').to_string(), words(r[2])))
        .collect();
    assert_eq!(shared.len(), 5, "{shared:?}");
    let advise = documented(section(&doc, "### `tcptune advise`"));
    for (path, sub) in commands(&cli, "") {
        let mut listed = match path.as_str() {
            "man" | "completions" => documented(section(&doc, "### `tcptune man`, `tcptune completions SHELL`")),
            // A nested command's own options would be in its parent's section; none has any.
            p if p.contains(' ') => BTreeSet::new(),
            p => documented(section(&doc, &format!("### `tcptune {p}`"))),
        };
        if path == "apply" {
            listed.extend(
                advise
                    .iter()
                    .filter(|o| !ADVISE_OUTPUT_ONLY.contains(&o.as_str()))
                    .cloned(),
            );
        }
        listed.extend(
            shared
                .iter()
                .filter(|(_, by)| by.contains(&path))
                .map(|(o, _)| o.clone()),
        );
        assert_eq!(
            listed,
            options(&sub),
            "docs/CLI.md's options of `tcptune {path}` differ"
        );
    }
}

/// The values each command's `--format` takes are the ones docs/CLI.md lists for it.
#[test]
fn every_commands_formats_are_in_the_contract() {
    let doc = read("docs/CLI.md");
    let table = section(&doc, SHARED);
    let table = &table[table.find("`--format`, by command").expect("the formats table")..];
    let mut documented: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for r in rows(table).into_iter().filter(|r| r.len() == 4) {
        for command in words(r[0]) {
            assert!(documented.insert(command, words(r[1])).is_none(), "{r:?}");
        }
    }
    let mut takes = BTreeMap::new();
    for (path, sub) in commands(&tcptune::cli::Cli::command(), "") {
        if let Some(format) = sub.get_arguments().find(|a| a.get_long() == Some("format")) {
            let values = format
                .get_possible_values()
                .iter()
                .map(|v| v.get_name().to_string())
                .collect();
            takes.insert(path, values);
        }
    }
    assert_eq!(documented, takes, "docs/CLI.md's --format values by command");
    // advise's are all of them.
    let all: BTreeSet<String> = tcptune::cli::Format::value_variants()
        .iter()
        .map(|f| tcptune::cli::format_name(*f))
        .collect();
    assert_eq!(takes.get("advise"), Some(&all));
}

/// Each command's `--help` offers what it takes and nothing else (the shared options were once
/// global, and every command's help listed all of them with all seven formats), and refuses
/// the rest after it.
#[test]
fn each_commands_help_offers_only_what_it_takes() {
    let help = |args: &[&str]| {
        let out = super::tcptune().args(args).arg("--help").output().expect("run");
        assert!(out.status.success(), "{args:?}");
        String::from_utf8(out.stdout).expect("utf8")
    };
    let inspect = help(&["inspect"]);
    for absent in [
        "ansible",
        "tuned",
        "k8s",
        "sysctl",
        "--state-dir",
        "--sysctl-dir",
        "--sysctl-cmd",
        "--os",
    ] {
        assert!(!inspect.contains(absent), "inspect --help offers {absent}:\n{inspect}");
    }
    assert!(inspect.contains("--format") && inspect.contains("json"), "{inspect}");
    let calc = help(&["calc"]);
    for absent in ["--os", "--state-dir", "--sysctl-dir", "ansible"] {
        assert!(!calc.contains(absent), "calc --help offers {absent}:\n{calc}");
    }
    let advise = help(&["advise"]);
    assert!(!advise.contains("--state-dir"), "{advise}");
    assert!(
        advise.contains("--os") && advise.contains("k8s") && advise.contains("--sysctl-cmd"),
        "{advise}"
    );
    let snapshots = help(&["snapshots"]);
    assert!(
        snapshots.contains("--state-dir") && !snapshots.contains("--os"),
        "{snapshots}"
    );
    assert!(!help(&["profiles", "show"]).contains("--format <FORMAT>"));
    for (args, code) in [
        (&["inspect", "--format", "ansible"][..], 2),
        (&["--format", "ansible", "inspect"], 2),
        (&["calc", "--os", "linux", "-b", "1gbit", "-r", "1ms"], 2),
        // Before the command, as when they were global: what it takes is checked, the rest ignored.
        (&["--state-dir", "/tmp", "calc", "-b", "1gbit", "-r", "1ms"], 0),
        (
            &["advise", "--state-dir", "/tmp", "--rtt", "1ms", "--bandwidth", "1gbit"],
            2,
        ),
        (&["--format", "json", "calc", "-b", "1gbit", "-r", "1ms"], 0),
        (
            &[
                "--os",
                "freebsd",
                "advise",
                "--rtt",
                "1ms",
                "--bandwidth",
                "1gbit",
                "--format",
                "sysctl",
            ],
            0,
        ),
    ] {
        let out = super::tcptune().args(args).output().expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
        if code == 2 {
            assert!(
                stderr.starts_with("tcptune: ") && out.stdout.is_empty(),
                "{args:?}: {stderr}"
            );
        }
    }
}

use clap::ValueEnum as _;

#[test]
fn units_and_exit_codes_are_the_ones_the_binary_prints() {
    let doc = read("docs/CLI.md");
    let mut units = String::from("| input | accepted |\n|---|---|\n");
    let mut output = String::new();
    for (what, means) in tcptune::units::MEANINGS {
        if *what == "output" {
            output = format!("Output: {means}\n");
        } else {
            units.push_str(&format!("| {what} | {means} |\n"));
        }
    }
    units.push_str(&format!("\n{output}"));
    assert!(
        section(&doc, "## Units (input)").contains(&units),
        "docs/CLI.md's units differ from src/units.rs:\n{units}"
    );
    let mut codes = String::from("| code | meaning |\n|---|---|\n");
    for (code, means) in tcptune::error::exit::MEANINGS {
        codes.push_str(&format!("| {code} | {means} |\n"));
    }
    assert!(
        section(&doc, "## Exit codes").contains(&codes),
        "docs/CLI.md's exit codes differ from src/error.rs:\n{codes}"
    );
}

#[test]
fn the_readme_first_run_is_what_tcptune_prints() {
    let readme = read("README.md");
    let start = "```console\n$ tcptune\n";
    let at = readme.find(start).expect("README has a `$ tcptune` block") + start.len();
    let end = readme[at..].find("```").expect("the block ends") + at;
    let printed = super::tcptune().output().expect("tcptune runs");
    assert!(printed.status.success());
    assert_eq!(
        &readme[at..end],
        String::from_utf8_lossy(&printed.stdout),
        "README's First run block"
    );
}

#[test]
fn nothing_in_the_repository_points_outside_it() {
    // Spelled in two pieces so this file does not match itself.
    let outside = format!("../{}", "shared");
    let mut stack = vec![repo().to_path_buf()];
    let mut seen = 0;
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).expect("read_dir").flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if matches!(name.as_str(), "target" | ".git") {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(text) = std::fs::read_to_string(&p) {
                seen += 1;
                assert!(!text.contains(&outside), "{} refers to {outside}", p.display());
            }
        }
    }
    assert!(seen > 100, "the walk read the repository ({seen} files)");
}

/// Issue 36, point 7: a hint names only options its command takes, and only a way around that
/// works: verify takes no --rtt; `--scope path` with --rtt and --bandwidth given still needs the
/// host, so its way around an unresolvable name is the address, and the resolver's own words
/// come without the C library's prefix.
#[test]
fn hints_name_only_what_the_command_takes() {
    let out = super::tcptune()
        .args(["verify", "--host", "no-such-host.invalid"])
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains("hint: check the name") && !err.contains("--rtt"), "{err}");
    let out = super::tcptune()
        .args([
            "advise",
            "--scope",
            "path",
            "--host",
            "no-such-host.invalid",
            "--rtt",
            "150ms",
            "--bandwidth",
            "500mbit",
        ])
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(
        err.contains("cannot resolve \"no-such-host.invalid\": names under .invalid"),
        "{err}"
    );
    assert!(
        err.contains("give the host's address") && !err.contains("give --rtt"),
        "{err}"
    );
    assert!(tcptune::measure::NO_REPLY_HINT.contains("or give --rtt and --bandwidth"));
}
