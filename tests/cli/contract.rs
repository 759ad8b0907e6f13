//! docs/CLI.md, the command-line contract, kept true: every option it lists exists under that
//! name and every visible option is listed; its units and exit codes are the tables the binary
//! prints; the README's first-run block is what `tcptune` prints; and no file of the repository
//! points outside it.

use std::collections::BTreeSet;
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
fn options(cmd: &clap::Command, globals: bool) -> BTreeSet<String> {
    cmd.get_arguments()
        .filter(|a| !a.is_hide_set() && !a.is_positional() && a.is_global_set() == globals)
        .filter(|a| !matches!(a.get_id().as_str(), "help" | "version"))
        .flat_map(|a| {
            let mut names: Vec<String> = a.get_long().map(|l| format!("--{l}")).into_iter().collect();
            names.extend(a.get_short().map(|s| format!("-{s}")));
            names
        })
        .collect()
}

/// Options of advise that apply takes too (its fresh advice): advise's but the output ones.
const ADVISE_OUTPUT_ONLY: [&str; 5] = [
    "--output",
    "--tuned-include",
    "--allowed-unsafe-sysctls",
    "--side",
    "--explain",
];

#[test]
fn every_option_is_in_the_contract_and_every_option_there_exists() {
    let doc = read("docs/CLI.md");
    let cli = tcptune::cli::Cli::command();
    assert_eq!(
        documented(section(&doc, "## Global options")),
        options(&cli, true),
        "docs/CLI.md's global options differ from the command line's"
    );
    let advise = documented(section(&doc, "### `tcptune advise`"));
    for sub in cli.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = sub.get_name();
        let heading = match name {
            "man" | "completions" => "### `tcptune man`, `tcptune completions SHELL`".to_string(),
            _ => format!("### `tcptune {name}`"),
        };
        let mut listed = documented(section(&doc, &heading));
        if name == "apply" {
            listed.extend(
                advise
                    .iter()
                    .filter(|o| !ADVISE_OUTPUT_ONLY.contains(&o.as_str()))
                    .cloned(),
            );
        }
        assert_eq!(
            listed,
            options(sub, false),
            "docs/CLI.md's options of `tcptune {name}` differ"
        );
    }
    // And the formats --format takes.
    let formats: Vec<String> = tcptune::cli::Format::value_variants()
        .iter()
        .map(|f| format!("`{}`", tcptune::cli::format_name(*f)))
        .collect();
    let row = section(&doc, "## Global options")
        .lines()
        .find(|l| l.starts_with("| `--format`"))
        .expect("a --format row");
    assert_eq!(row.split('|').nth(2).map(str::trim), Some(formats.join(", ").as_str()));
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
