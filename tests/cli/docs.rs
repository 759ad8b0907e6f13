//! The docs' console blocks that show what tcptune prints, kept equal to the binary (issue 36,
//! point 9): every block in README, GUIDE, FAQ and FLEETS whose command depends on nothing but
//! its arguments — `calc`, `profiles`, and `advise` for another OS (`--os freebsd|macos`, whose
//! baseline is that OS's stock values) — is run and compared, its time stamp aside.
//! `UPDATE_SNAPSHOTS=1 cargo test --test cli docs::` rewrites them from the binary.
//!
//! The blocks this cannot rerun here are kept by other tests: the first run
//! (contract::the_readme_first_run_is_what_tcptune_prints), the troubleshooting messages
//! (ship::troubleshooting_*), and the outputs that depend on a machine's running values or a
//! lab (measured paths, apply, snapshots) are said to be from a run in their text.

use std::path::Path;

const DOCS: [&str; 4] = ["README.md", "docs/GUIDE.md", "docs/FAQ.md", "docs/FLEETS.md"];

/// Whether a command's output depends on nothing but its arguments.
fn reproducible(args: &[&str]) -> bool {
    let plain = args.iter().all(|a| !matches!(*a, "|" | ">" | ">>" | "<" | ";" | "&&"))
        && !args.iter().any(|a| a.contains(['|', '>', '$', '`']));
    let standalone = match args.first() {
        Some(&"calc" | &"profiles") => true,
        Some(&"advise") => args
            .windows(2)
            .any(|w| w[0] == "--os" && matches!(w[1], "freebsd" | "macos")),
        _ => false,
    };
    plain && standalone && !args.iter().any(|a| matches!(*a, "--host" | "--ssh" | "--output"))
}

/// A time stamp in a header, which no two runs share.
fn stamped(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("advice for ") {
        let (head, tail) = rest.split_at(i);
        out.push_str(head);
        match tail.find(", ").map(|j| (j, &tail[j + 2..])) {
            Some((j, after)) if after.len() >= 20 && after.as_bytes()[4] == b'-' && after.as_bytes()[19] == b'Z' => {
                out.push_str(&tail[..j + 2]);
                out.push_str("TIME");
                rest = &after[20..];
            }
            _ => {
                out.push_str("advice for ");
                rest = &tail["advice for ".len()..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[test]
fn the_docs_console_blocks_are_what_tcptune_prints() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let update = std::env::var_os("UPDATE_SNAPSHOTS").is_some_and(|v| v == "1");
    let mut checked = Vec::new();
    let mut wrong = Vec::new();
    for doc in DOCS {
        let path = root.join(doc);
        let text = std::fs::read_to_string(&path).expect("read");
        let mut out = String::new();
        let mut rest = text.as_str();
        while let Some(i) = rest.find("```console\n") {
            let body_at = i + "```console\n".len();
            out.push_str(&rest[..body_at]);
            let end = rest[body_at..].find("\n```").map_or(rest.len(), |e| body_at + e + 1);
            let body = &rest[body_at..end];
            out.push_str(&redo(doc, body, update, &mut checked, &mut wrong));
            rest = &rest[end..];
        }
        out.push_str(rest);
        if update && out != text {
            std::fs::write(&path, out).expect("write");
        }
    }
    assert!(checked.len() >= 5, "too few blocks found to check: {checked:?}");
    assert!(
        wrong.is_empty(),
        "these docs' blocks differ from what tcptune prints now (UPDATE_SNAPSHOTS=1 cargo test --test cli docs:: rewrites them):\n{}",
        wrong.join("\n")
    );
}

/// One block: each `$ tcptune ...` command in it that depends on nothing but its arguments is
/// run, its output compared (or put in, with `update`).
fn redo(doc: &str, body: &str, update: bool, checked: &mut Vec<String>, wrong: &mut Vec<String>) -> String {
    let mut out = String::new();
    let lines: Vec<&str> = body.split_inclusive('\n').collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        out.push_str(line);
        i += 1;
        let Some(cmd) = line.trim_end().strip_prefix("$ tcptune ") else {
            continue;
        };
        let args: Vec<&str> = cmd.split_whitespace().collect();
        let shown: String = lines[i..]
            .iter()
            .take_while(|l| !l.starts_with("$ "))
            .copied()
            .collect();
        if !reproducible(&args) {
            continue;
        }
        let run = super::tcptune()
            .args(&args)
            .env_remove("COLUMNS")
            .output()
            .expect("run");
        let mut printed = String::from_utf8_lossy(&run.stdout).into_owned();
        printed.push_str(&String::from_utf8_lossy(&run.stderr));
        checked.push(format!("{doc}: tcptune {cmd}"));
        if stamped(&printed) != stamped(&shown) {
            wrong.push(format!("{doc}: tcptune {cmd}"));
            // Rewritten only where it differs: a time stamp alone is no change.
            if update {
                out.push_str(&printed);
                i += shown.split_inclusive('\n').count();
            }
        }
    }
    out
}
