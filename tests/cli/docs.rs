//! The docs' console blocks, kept equal to what tcptune prints (issue 36): every command line
//! (`$ ` or, in a root session, `# `) of a ```console block in README, GUIDE, FAQ and FLEETS that
//! runs tcptune is run here, as typed, and its output compared (its time stamps, snapshot ids, a
//! peer's port and a set-up time aside); `UPDATE_SNAPSHOTS=1 cargo test --test cli docs::`
//! rewrites what differs. A line this cannot run must be in [`KEPT_BLOCKS`] or [`KEPT_LINES`] with
//! the test that keeps it or the reason, or the test fails; so does an entry there that names no
//! line.
//!
//! How a line runs: through `sh -c` in a directory of its block's own (files a line writes are
//! there for the next, `sudo` runs the command as it is), with a `tcptune` first on PATH that is
//! the built binary given, hidden, what makes it reproducible: a fake /proc/sys of a stock Linux
//! host (tests/cli/fixtures/linux-stock.txt: the kernel's default buffers, cubic, bbr loaded) and
//! a state directory (`--sysctl-dir`, `--state-dir`, which a command that does not take them
//! drops), a directory standing for / where advise looks for installed sysctl.d files
//! (`--persist-root`), and a prober that sends nothing (`--fake-prober`: the block's facts, or no
//! reply). `/etc/...` in a line is that directory's (so `--output /etc/tuned/tcptune` and
//! `cat /etc/...` stay in it); in the output the fake paths read as the real ones. Besides
//! tcptune a line may run only [`RUNNABLE`]'s filters (jq among them: a missing one fails the
//! test by name). `ssh` is a stand-in that runs the far end's script here against the same stock
//! values (`advise --ssh far`). Nothing is sent to any address. Given a `--sysctl-dir`, advise
//! treats the values as another system's (the installed sysctl.d files and this machine's RAM and
//! kernel unknown), which keeps the output the same on every machine; and `apply --scope path`
//! refuses it, so no line outside a `netns` block can change a route.
//!
//! Hidden comments just above a block, one a line, say what else it needs:
//! - `<!-- doc-run: args ARGS -->`: appended to each `tcptune advise` of the block
//!   (`--fake-prober rtt=150ms,rate=500mbit,loss=0.01` for a measured path, `--format table` for
//!   what a terminal shows);
//! - `<!-- doc-run: setup LINE -->`: a line run first, its output unshown;
//! - `<!-- doc-run: file NAME -->`: the fenced block above the comment is the file NAME;
//! - `<!-- doc-run: netns -->`: the block runs as root in a network namespace of the doc's own
//!   (br0 198.18.31.1/24; stock buffers, reno, `net.core.*` the host's and read-only; /var/lib
//!   a directory of the test's), its real /proc/sys and routes: `--scope path`'s route, apply,
//!   revert, snapshots and check. Only with the feature `privileged-tests` (as root, as
//!   tests/run.sh runs); without it those lines are counted as skipped.
//!
//! A block right after a console block (```yaml, ```ini) is the file the console block's last
//! line writes (`> FILE`) or shows (`cat FILE`). A shown line that is `...` (or starts with
//! `# ...`) stands for the lines left out there; such a block, when it differs, is rewritten in
//! full, to be cut again by hand. `sysctl -p FILE` after a line that wrote FILE is checked to list
//! FILE's settings.
//!
//! The man page's EXAMPLES (src/cmd/man.rs) and `tcptune --help`'s show commands only, no output:
//! nothing to rerun there.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command as Std, Stdio};

use tempfile::TempDir;

use super::netns::Netns;
use super::write_script;

const DOCS: [&str; 4] = ["README.md", "docs/GUIDE.md", "docs/FAQ.md", "docs/FLEETS.md"];

/// The programs a line may run besides tcptune: filters that read the files the block wrote.
const RUNNABLE: [&str; 6] = ["tcptune", "cat", "grep", "head", "jq", "sed"];

/// tcptune's commands: `tcptune` followed by one of them runs tcptune, wherever it stands.
const COMMANDS: [&str; 12] = [
    "calc",
    "advise",
    "apply",
    "revert",
    "snapshots",
    "check",
    "serve",
    "verify",
    "inspect",
    "profiles",
    "man",
    "completions",
];

/// A block or a line this test does not run, and why.
struct Kept {
    doc: &'static str,
    /// The command as shown, after its prompt (a block: its first command).
    command: &'static str,
    why: &'static str,
}

/// Whole blocks from a run elsewhere: a lab path, live flows, a session as root.
const KEPT_BLOCKS: &[Kept] = &[
    Kept {
        doc: "docs/GUIDE.md",
        command: "tcptune apply --rtt 150ms --bandwidth 500mbit --dry-run",
        why: "a root session in a namespace whose host allows only reno and bbr, ending in a timer (its pid, its \
              times); apply:: checks each step against the kernel",
    },
    Kept {
        doc: "docs/GUIDE.md",
        command: "ip netns exec demo-a sysctl -w net.ipv4.tcp_sack=0",
        why: "check over the lab path (lab/lab.sh): interfaces, counters and RAM of that run; diag:: checks the \
              verdicts",
    },
    Kept {
        doc: "docs/GUIDE.md",
        command: "ip netns exec demo-b tcptune serve &",
        why: "serve and verify over the lab path (lab/lab.sh): measured rates; diag:: checks the verdicts",
    },
    Kept {
        doc: "docs/GUIDE.md",
        command: "ip netns exec demo-a tcptune inspect --host 198.18.0.2        # while a transfer runs",
        why: "inspect of a live transfer over the lab path: RTT, cwnd and rates of that flow; diag:: checks them",
    },
];

/// Single lines from a run elsewhere, in a block whose other lines run here.
const KEPT_LINES: &[Kept] = &[
    Kept {
        doc: "docs/GUIDE.md",
        command: "tcptune inspect",
        why: "live flows (RTT, cwnd, delivery vary run to run); scope:: checks that inspect marks the flow the \
              route chose",
    },
    Kept {
        doc: "docs/FAQ.md",
        command: "sudo ip netns exec empty tcptune advise --host 198.18.0.9",
        why: "needs an empty network namespace: ship::troubleshooting_no_reply_in_an_empty_netns runs it and \
              ship::troubleshooting_section_shows_each_message_verbatim finds its stderr here",
    },
    Kept {
        doc: "docs/FAQ.md",
        command: "sudo ip netns exec empty setpriv --reuid nobody --regid nogroup --clear-groups tcptune advise \
                  --host 198.18.0.9",
        why: "needs an empty network namespace and another uid: ship::troubleshooting_no_reply_in_an_empty_netns \
              runs it and ship::troubleshooting_section_shows_each_message_verbatim finds its stderr here",
    },
    Kept {
        doc: "docs/FAQ.md",
        command: "tcptune advise --rtt 150ms --bandwidth 500mbit | tee /etc/sysctl.d/60-tcptune.conf",
        why: "shows tee's error as a normal user, not tcptune's output; run here (as root in CI) it would write \
              /etc/sysctl.d",
    },
];

/// Where a block runs: its directory, and the fake /proc/sys.
struct Stage {
    dir: TempDir,
    /// The fake /proc/sys; None in a namespace, whose own is used.
    tree: Option<TempDir>,
}

impl Stage {
    /// A block's directory: the wrapper and the stand-ins in `bin/` and `far/`, `root/` for /,
    /// `state/`; and the fake /proc/sys, in /tmp under a name as long as "/proc/sys", so that no
    /// line wraps otherwise than on a real host.
    fn new(netns: bool) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        for sub in ["bin", "far", "root/etc/sysctl.d", "root/etc/tuned", "state"] {
            std::fs::create_dir_all(dir.path().join(sub)).expect("mkdir");
        }
        write_script(
            &dir.path().join("bin/tcptune"),
            "#!/bin/sh\n\
             # tcptune as the docs' blocks run it (tests/cli/docs.rs).\n\
             case \"$1\" in\n\
             advise) set -- \"$@\" --persist-root \"$DOC_ROOT\" $DOC_ARGS ;;\n\
             apply | revert) set -- \"$@\" --persist-root \"$DOC_ROOT\" ;;\n\
             esac\n\
             exec \"$DOC_BIN\" ${DOC_SYSCTL:+--sysctl-dir \"$DOC_SYSCTL\"} ${DOC_STATE:+--state-dir \"$DOC_STATE\"} \
             --fake-prober rtt=unreachable \"$@\"\n",
        );
        // ssh's stand-in: the far end is 198.18.0.2, and its script runs here, reading the fake
        // /proc/sys, with a uname of its own; ssh reached it on 127.0.0.1, where its peer listens.
        write_script(
            &dir.path().join("bin/ssh"),
            "#!/bin/sh\n\
             for a; do last=$a; done\n\
             case \" $* \" in *\" -G \"*) echo hostname 198.18.0.2; exit 0 ;; esac\n\
             script=$last\n\
             if [ -n \"$DOC_SYSCTL\" ]; then script=$(printf '%s\\n' \"$last\" | sed \"s#/proc/sys/#$DOC_SYSCTL/#g\"); fi\n\
             SSH_CONNECTION='198.18.0.1 40000 127.0.0.1 22' PATH=$DOC_FAR:$PATH exec sh -c \"$script\"\n",
        );
        write_script(
            &dir.path().join("far/uname"),
            "#!/bin/sh\ncase \"$1\" in -m) echo x86_64 ;; -r) echo 6.18.0 ;; *) echo Linux ;; esac\n",
        );
        let tree = (!netns).then(|| {
            let tree = tempfile::Builder::new()
                .prefix("")
                .rand_bytes("/proc/sys".len() - "/tmp/".len())
                .tempdir_in("/tmp")
                .expect("tempdir");
            for (k, v) in super::values("linux-stock.txt", &[]) {
                let p = k.split('.').fold(tree.path().to_path_buf(), |p, c| p.join(c));
                std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
                std::fs::write(p, format!("{v}\n")).expect("write");
            }
            assert_eq!(tree.path().as_os_str().len(), "/proc/sys".len());
            tree
        });
        Self { dir, tree }
    }

    fn path(&self, sub: &str) -> PathBuf {
        self.dir.path().join(sub)
    }

    /// `line` with each path under /etc/ made the stage's.
    fn mapped(&self, line: &str) -> String {
        let root = self.path("root");
        let mut out = String::new();
        let mut rest = line;
        while let Some(at) = rest.find("/etc/") {
            out.push_str(&rest[..at]);
            if out.chars().last().is_none_or(|c| " \t><=|;&'\"".contains(c)) {
                out.push_str(root.to_str().expect("utf8"));
            }
            out.push_str("/etc/");
            rest = &rest[at + "/etc/".len()..];
        }
        out.push_str(rest);
        out
    }

    /// What `line` prints, stdout and stderr as they came, the fake paths as the real ones.
    fn run(&self, line: &str, args: &str, lab: Option<&Lab>) -> String {
        let script = format!("sudo() {{ \"$@\"; }}\nexec 2>&1\n{}\n", self.mapped(line));
        let mut cmd = match lab {
            Some(lab) => {
                let mut c = Std::new("ip");
                c.args(["netns", "exec", &lab.ns.name, "sh", "-c"])
                    .arg(format!("mount --bind \"$0\" /var/lib || exit 125\n{script}"))
                    .arg(lab.var_lib.path());
                c
            }
            None => {
                let mut c = Std::new("sh");
                c.arg("-c").arg(script);
                c
            }
        };
        let path = format!(
            "{}:{}",
            self.path("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        cmd.current_dir(self.dir.path())
            .env("PATH", path)
            .env("DOC_BIN", assert_cmd::cargo::cargo_bin("tcptune"))
            .env("DOC_ROOT", self.path("root"))
            .env("DOC_FAR", self.path("far"))
            .env("DOC_ARGS", args)
            .env_remove("COLUMNS")
            .env_remove("NO_COLOR")
            .stdin(Stdio::null());
        match &self.tree {
            Some(tree) => cmd.env("DOC_SYSCTL", tree.path()).env("DOC_STATE", self.path("state")),
            None => cmd.env_remove("DOC_SYSCTL").env_remove("DOC_STATE"),
        };
        let out = cmd.output().expect("sh");
        assert!(
            out.stderr.is_empty() && out.status.code() != Some(125),
            "{line}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        self.clean(&String::from_utf8_lossy(&out.stdout))
    }

    /// `text` with the fake paths as the real ones.
    fn clean(&self, text: &str) -> String {
        let mut text = text.to_string();
        if let Some(tree) = &self.tree {
            text = text.replace(tree.path().to_str().expect("utf8"), "/proc/sys");
        }
        text.replace(self.path("root").to_str().expect("utf8"), "")
            .replace(self.path("state").to_str().expect("utf8"), "/var/lib/tcptune")
    }

    /// What a line left in FILE (as the line names it), the fake paths as the real ones.
    fn file(&self, name: &str) -> String {
        let path = self.mapped(&format!(" {name}"));
        let text = std::fs::read_to_string(self.dir.path().join(path.trim()))
            .unwrap_or_else(|e| panic!("{name}, which the block's last line writes: {e}"));
        self.clean(&text)
    }
}

/// The namespace of a doc's `netns` blocks, and the directory standing for its /var/lib.
struct Lab {
    ns: Netns,
    var_lib: TempDir,
}

impl Lab {
    fn up(tag: &str) -> Self {
        let ns = Netns::new(tag);
        for args in [
            "link add br0 type bridge",
            "addr add 198.18.31.1/24 dev br0",
            "link set br0 up",
            "link set lo up",
        ] {
            let ok = Std::new("ip")
                .args(["-n", &ns.name])
                .args(args.split(' '))
                .status()
                .expect("ip");
            assert!(ok.success(), "ip {args}");
        }
        // The stock values where a namespace has its own; reno, which every host lets a child
        // namespace choose.
        let mut sets: Vec<String> = super::values("linux-stock.txt", &[])
            .into_iter()
            .filter(|(k, _)| {
                k.starts_with("net.ipv4.tcp_") && !k.ends_with("_congestion_control") && k != "net.ipv4.tcp_mem"
            })
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        sets.push("net.ipv4.tcp_congestion_control=reno".into());
        let mut args = vec!["-qw"];
        args.extend(sets.iter().map(String::as_str));
        let out = ns.exec("sysctl", &args);
        assert!(out.status.success(), "sysctl: {}", String::from_utf8_lossy(&out.stderr));
        Self {
            ns,
            var_lib: tempfile::tempdir().expect("tempdir"),
        }
    }
}

/// A shell line's words and operators, as sh splits it (quotes removed), up to a comment.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(String),
    Op(String),
}

fn shell_words(line: &str) -> Vec<Tok> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut started = false;
    let mut quote = None;
    let mut chars = line.chars().peekable();
    let flush = |out: &mut Vec<Tok>, word: &mut String, started: &mut bool| {
        if *started {
            out.push(Tok::Word(std::mem::take(word)));
        }
        *started = false;
    };
    while let Some(c) = chars.next() {
        if let Some(q) = quote {
            match c {
                _ if c == q => quote = None,
                '\\' if q == '"' => word.extend(chars.next()),
                _ => word.push(c),
            }
            continue;
        }
        match c {
            '\'' | '"' => {
                quote = Some(c);
                started = true;
            }
            '\\' => {
                word.extend(chars.next());
                started = true;
            }
            '#' if !started => break,
            '|' | '&' | ';' | '<' | '>' => {
                flush(&mut out, &mut word, &mut started);
                let mut op = c.to_string();
                while let Some(&n) = chars.peek().filter(|n| "|&;<>".contains(**n)) {
                    op.push(n);
                    chars.next();
                }
                out.push(Tok::Op(op));
            }
            c if c.is_whitespace() => flush(&mut out, &mut word, &mut started),
            _ => {
                word.push(c);
                started = true;
            }
        }
    }
    flush(&mut out, &mut word, &mut started);
    out
}

/// One command of a line: its words (`sudo` dropped) and where its output goes (`> FILE`).
#[derive(Debug, Default)]
struct Simple {
    words: Vec<String>,
    to: Option<String>,
}

fn commands(line: &str) -> Vec<Simple> {
    let mut out = vec![Simple::default()];
    let mut redirect = false;
    for t in shell_words(line) {
        match t {
            Tok::Op(op) if op.starts_with('>') || op == "<" => redirect = op.starts_with('>'),
            Tok::Op(_) => out.push(Simple::default()),
            Tok::Word(w) => {
                let cur = out.last_mut().expect("one");
                if redirect {
                    cur.to = Some(w);
                    redirect = false;
                } else if !(cur.words.is_empty() && w == "sudo") {
                    cur.words.push(w);
                }
            }
        }
    }
    out.retain(|c| !c.words.is_empty());
    out
}

/// Whether a line runs tcptune: as a command, or after a wrapper (`ip netns exec NS tcptune
/// advise`).
fn runs_tcptune(line: &str) -> bool {
    commands(line).iter().any(|c| {
        c.words[0] == "tcptune"
            || c.words
                .windows(2)
                .any(|w| w[0] == "tcptune" && COMMANDS.contains(&w[1].as_str()))
    })
}

/// Whether a line can run here: tcptune and [`RUNNABLE`]'s filters only, and no path outside
/// the block's directory but /etc/ (which is the block's).
fn runnable(line: &str) -> bool {
    runnable_with(line, &[])
}

/// [`runnable`], with the programs `also` allowed too.
fn runnable_with(line: &str, also: &[&str]) -> bool {
    let cmds = commands(line);
    !cmds.is_empty()
        && cmds
            .iter()
            .all(|c| RUNNABLE.contains(&c.words[0].as_str()) || also.contains(&c.words[0].as_str()))
        && shell_words(line).iter().all(|t| match t {
            // A path: the word, or what follows `--option=`.
            Tok::Word(w) => [Some(w.as_str()), w.find("=/").map(|i| &w[i + 1..])]
                .into_iter()
                .flatten()
                .all(|p| !p.starts_with('/') || p.starts_with("/etc/")),
            Tok::Op(_) => true,
        })
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

/// What differs from run to run besides the header's time: snapshot ids and times (`#` a
/// digit in these shapes), a far end's port and its set-up time.
fn volatile(text: &str) -> String {
    const SHAPES: [&str; 2] = ["####-########T######Z", "####-##-##T##:##:##Z"];
    let mut s: Vec<char> = stamped(text).chars().collect();
    let mut i = 0;
    while i < s.len() {
        let hit = SHAPES.iter().find(|shape| {
            shape.chars().enumerate().all(|(k, p)| {
                s.get(i + k)
                    .is_some_and(|&c| if p == '#' { c.is_ascii_digit() } else { c == p })
            })
        });
        if let Some(shape) = hit {
            for k in 0..shape.len() {
                s[i + k] = 'N';
            }
            i += shape.len();
        } else {
            i += 1;
        }
    }
    let mut out: String = s.into_iter().collect();
    for (after, keep) in [("on port ", "0123456789"), ("set up in ", "0123456789.")] {
        let mut done = String::new();
        let mut rest = out.as_str();
        while let Some(at) = rest.find(after) {
            done.push_str(&rest[..at + after.len()]);
            rest = rest[at + after.len()..].trim_start_matches(|c| keep.contains(c));
            done.push('N');
        }
        done.push_str(rest);
        out = done;
    }
    out
}

fn elision(line: &str) -> bool {
    let t = line.trim();
    t == "..." || t.starts_with("# ...")
}

/// Whether `shown` is what was printed: equal once [`volatile`], or, where `shown` leaves lines
/// out (`...`), each piece in its place, in order.
fn same(shown: &str, printed: &str) -> bool {
    let (shown, printed) = (volatile(shown), volatile(printed));
    let s: Vec<&str> = shown.lines().collect();
    let p: Vec<&str> = printed.lines().collect();
    if !s.iter().any(|l| elision(l)) {
        return shown == printed;
    }
    let pieces: Vec<&[&str]> = s.split(|l| elision(l)).collect();
    let (first, last) = (pieces[0], pieces[pieces.len() - 1]);
    if !p.starts_with(first) || !p.ends_with(last) || first.len() + last.len() >= p.len() {
        return false;
    }
    // Each piece between, after at least one line left out; the last one too.
    let mut at = first.len() + 1;
    for piece in &pieces[1..pieces.len() - 1] {
        match (at..p.len()).find(|&i| p[i..].starts_with(piece)) {
            Some(i) => at = i + piece.len() + 1,
            None => return false,
        }
    }
    at <= p.len() - last.len()
}

/// The fenced blocks of a doc: (language, line of the opening fence, line of the closing one).
fn fences(lines: &[&str]) -> Vec<(String, usize, usize)> {
    let mut out = Vec::new();
    let mut open: Option<(String, usize)> = None;
    for (i, l) in lines.iter().enumerate() {
        let Some(lang) = l.trim_end().strip_prefix("```") else {
            continue;
        };
        match open.take() {
            None => open = Some((lang.to_string(), i)),
            Some((lang, at)) => out.push((lang, at, i)),
        }
    }
    out
}

#[derive(Default)]
struct Tally {
    rerun: Vec<String>,
    kept: Vec<String>,
    skipped: Vec<String>,
    derived: Vec<String>,
    unplaced: Vec<String>,
    wrong: Vec<String>,
    used: BTreeSet<(&'static str, &'static str)>,
}

fn kept<'a>(list: &'a [Kept], doc: &str, command: &str) -> Option<&'a Kept> {
    list.iter()
        .find(|k| k.doc == doc && k.command.split_whitespace().eq(command.split_whitespace()))
}

/// A doc with its blocks rerun: the new text (the same unless `update` and something differs).
fn redo_doc(doc: &'static str, text: &str, update: bool, tally: &mut Tally) -> String {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let blocks = fences(&lines);
    // Replacements: first line → (line after the last, new lines).
    let mut new: std::collections::BTreeMap<usize, (usize, String)> = std::collections::BTreeMap::new();
    let mut lab: Option<Lab> = None;
    for (b, (lang, open, close)) in blocks.iter().enumerate() {
        if lang != "console" {
            continue;
        }
        let body = &lines[open + 1..*close];
        let prompt = match body.first() {
            Some(l) if l.starts_with("$ ") => "$ ",
            Some(l) if l.starts_with("# ") => "# ",
            _ => continue,
        };
        // The commands: (line in body, command, its output's lines).
        let starts: Vec<usize> = (0..body.len()).filter(|&i| body[i].starts_with(prompt)).collect();
        let items: Vec<(usize, &str, usize)> = starts
            .iter()
            .enumerate()
            .map(|(n, &i)| {
                let end = starts.get(n + 1).copied().unwrap_or(body.len());
                (i, body[i][prompt.len()..].trim_end(), end)
            })
            .collect();
        let at = |i: usize| format!("{doc}:{}: {}", open + 2 + i, body[i].trim_end());
        if let Some(k) = kept(KEPT_BLOCKS, doc, items[0].1) {
            tally.used.insert((k.doc, k.command));
            for &(i, cmd, _) in &items {
                if runs_tcptune(cmd) {
                    tally.kept.push(format!("{} ({})", at(i), k.why));
                }
            }
            continue;
        }
        // The directives just above the block.
        let mut args = String::new();
        let mut setup = Vec::new();
        let mut files = Vec::new();
        let mut netns = false;
        let mut d = *open;
        while d > 0 {
            let Some(dir) = lines[d - 1]
                .trim_end()
                .strip_prefix("<!-- doc-run: ")
                .and_then(|l| l.strip_suffix(" -->"))
            else {
                break;
            };
            d -= 1;
            match dir.split_once(' ').unwrap_or((dir, "")) {
                ("args", a) => args = format!("{a} {args}").trim().to_string(),
                ("setup", line) => setup.insert(0, line.to_string()),
                ("file", name) => {
                    let (_, o, c) = blocks[..b]
                        .iter()
                        .rev()
                        .find(|(_, _, c)| *c < d)
                        .unwrap_or_else(|| panic!("{doc}:{}: no block above for {name}", d + 1));
                    files.push((name.to_string(), lines[o + 1..*c].concat()));
                }
                ("netns", "") => netns = true,
                _ => panic!("{doc}:{}: unknown doc-run directive: {dir}", d + 1),
            }
        }
        if netns && !cfg!(feature = "privileged-tests") {
            for &(i, cmd, _) in &items {
                if let Some(k) = kept(KEPT_LINES, doc, cmd) {
                    tally.used.insert((k.doc, k.command));
                    tally.kept.push(format!("{} ({})", at(i), k.why));
                } else if runs_tcptune(cmd) {
                    tally
                        .skipped
                        .push(format!("{} (a netns block: --features privileged-tests)", at(i)));
                }
            }
            continue;
        }
        if netns && lab.is_none() {
            lab = Some(Lab::up(&format!(
                "docs{}",
                DOCS.iter().position(|x| *x == doc).unwrap_or(0)
            )));
        }
        let lab_here = if netns { lab.as_ref() } else { None };
        let stage = Stage::new(netns);
        for (name, content) in &files {
            std::fs::write(stage.path(name), content).expect("write");
        }
        for line in &setup {
            assert!(
                runnable_with(line, &["printf"]),
                "{doc}: setup {line}: not runnable here"
            );
            let out = stage.run(line, &args, lab_here);
            assert!(out.is_empty(), "{doc}: setup {line}: {out}");
        }
        // The block after it, when it shows the file the last line writes or shows.
        let file_block = blocks
            .get(b + 1)
            .filter(|(lang, o, _)| *o == close + 1 && lang != "console" && !lang.is_empty());
        let mut out = String::new();
        let mut changed = false;
        let last = items.len() - 1;
        let mut file_shown: Option<String> = None;
        for (n, &(i, cmd, end)) in items.iter().enumerate() {
            out.push_str(body[i]);
            let shown: String = body[i + 1..end].concat();
            let mut put = |printed: &str, shown: &str, out: &mut String, tally: &mut Tally| {
                if same(shown, printed) {
                    out.push_str(shown);
                    return;
                }
                let cut = if shown.lines().any(elision) {
                    " (shown in part: cut it again)"
                } else {
                    ""
                };
                tally.wrong.push(format!("{}{cut}", at(i)));
                if update {
                    out.push_str(printed);
                    changed = true;
                } else {
                    out.push_str(shown);
                }
            };
            if let Some(k) = kept(KEPT_LINES, doc, cmd) {
                tally.used.insert((k.doc, k.command));
                tally.kept.push(format!("{} ({})", at(i), k.why));
                out.push_str(&shown);
                continue;
            }
            let words: Vec<Simple> = commands(cmd);
            if runnable(cmd) {
                for c in &words {
                    let which = Std::new("sh")
                        .args(["-c", "command -v \"$1\"", "sh", &c.words[0]])
                        .env(
                            "PATH",
                            format!(
                                "{}:{}",
                                stage.path("bin").display(),
                                std::env::var("PATH").unwrap_or_default()
                            ),
                        )
                        .output()
                        .expect("sh");
                    assert!(
                        which.status.success(),
                        "{}: needs {}, which is not installed here (Debian: apt-get install {})",
                        at(i),
                        c.words[0],
                        c.words[0]
                    );
                }
                let printed = stage.run(cmd, &args, lab_here);
                tally.rerun.push(at(i));
                let shows_file = n == last && file_block.is_some() && shown.is_empty();
                if shows_file && words.len() == 1 && words[0].words[0] == "cat" {
                    file_shown = Some(printed);
                } else {
                    put(&printed, &shown, &mut out, tally);
                }
                if shows_file
                    && file_shown.is_none()
                    && let Some(to) = words.last().and_then(|c| c.to.as_ref())
                {
                    file_shown = Some(stage.file(to));
                }
                continue;
            }
            if let [c] = &words[..]
                && c.words.len() == 3
                && c.words[..2] == ["sysctl", "-p"]
                && stage.path(&c.words[2]).is_file()
            {
                // sysctl -p echoes each setting it loads.
                let file = std::fs::read_to_string(stage.path(&c.words[2])).expect("read");
                let loaded: String = file
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with(';'))
                    .map(|l| format!("{l}\n"))
                    .collect();
                tally.derived.push(at(i));
                put(&loaded, &shown, &mut out, tally);
                continue;
            }
            if runs_tcptune(cmd) {
                tally.unplaced.push(at(i));
            }
            out.push_str(&shown);
        }
        if changed {
            new.insert(open + 1, (*close, out));
        }
        if let (Some((_, o, c)), Some(printed)) = (file_block, file_shown) {
            let shown = lines[o + 1..*c].concat();
            if !same(&shown, &printed) {
                let cut = if shown.lines().any(elision) {
                    " (shown in part: cut it again)"
                } else {
                    ""
                };
                tally
                    .wrong
                    .push(format!("{doc}:{}: the file {}{cut}", o + 1, lines[*o].trim_end()));
                if update {
                    new.insert(o + 1, (*c, printed));
                }
            }
        }
    }
    let mut text = String::new();
    let mut i = 0;
    while i < lines.len() {
        if let Some((end, replaced)) = new.get(&i) {
            text.push_str(replaced);
            i = *end;
        } else {
            text.push_str(lines[i]);
            i += 1;
        }
    }
    text
}

#[test]
fn the_docs_console_blocks_are_what_tcptune_prints() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let update = std::env::var_os("UPDATE_SNAPSHOTS").is_some_and(|v| v == "1");
    let mut tally = Tally::default();
    for doc in DOCS {
        let path = root.join(doc);
        let text = std::fs::read_to_string(&path).expect("read");
        let out = redo_doc(doc, &text, update, &mut tally);
        if update && out != text {
            std::fs::write(&path, out).expect("write");
        }
    }
    eprintln!(
        "docs: {} lines rerun, {} derived, {} kept elsewhere, {} skipped",
        tally.rerun.len(),
        tally.derived.len(),
        tally.kept.len(),
        tally.skipped.len()
    );
    for line in tally.kept.iter().chain(&tally.skipped) {
        eprintln!("  not run here: {line}");
    }
    let stale: Vec<&str> = KEPT_BLOCKS
        .iter()
        .chain(KEPT_LINES)
        .filter(|k| !tally.used.contains(&(k.doc, k.command)))
        .map(|k| k.command)
        .collect();
    assert!(
        stale.is_empty(),
        "kept entries that name no line of the docs: {stale:?}"
    );
    assert!(
        tally.unplaced.is_empty(),
        "these lines run tcptune but are neither rerun here nor kept (KEPT_BLOCKS, KEPT_LINES):\n{}",
        tally.unplaced.join("\n")
    );
    assert!(tally.rerun.len() >= 30, "too few lines rerun: {:?}", tally.rerun);
    assert!(
        tally.wrong.is_empty(),
        "these docs' blocks differ from what tcptune prints now (UPDATE_SNAPSHOTS=1 cargo test --test cli docs:: \
         rewrites them):\n{}",
        tally.wrong.join("\n")
    );
}

#[test]
fn a_shell_line_is_read_as_sh_reads_it() {
    let c = commands("sudo tcptune advise --host X --format ansible > tcptune.yml     # a comment | here");
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].words, ["tcptune", "advise", "--host", "X", "--format", "ansible"]);
    assert_eq!(c[0].to.as_deref(), Some("tcptune.yml"));
    let c = commands("tcptune advise --format json | jq -r '.notes[] | select(startswith(\"OpenSSH\"))'");
    assert_eq!(c.len(), 2);
    assert_eq!(c[1].words, ["jq", "-r", ".notes[] | select(startswith(\"OpenSSH\"))"]);
    assert!(runnable("tcptune advise --rtt 150ms --bandwidth 500mbit > f; cat f"));
    assert!(!runnable(
        "tcptune advise --rtt 150ms --bandwidth 500mbit | tee /etc/sysctl.d/60-tcptune.conf"
    ));
    assert!(!runnable("cat /var/lib/tcptune/timer-*.log"));
    assert!(!runnable("tcptune advise --format tuned --output=/var/lib/x"));
    assert!(runnable("tcptune advise --format tuned --output=/etc/tuned/x"));
    assert!(runs_tcptune(
        "sudo ip netns exec empty tcptune advise --host 198.18.0.9"
    ));
    assert!(!runs_tcptune(
        "python3 tests/fleet/tuned_load.py /usr/lib/tuned:/etc/tuned tcptune"
    ));
    assert!(!runs_tcptune("cat /etc/tuned/tcptune/tuned.conf"));
}

#[test]
fn left_out_lines_match_any_lines_in_their_place() {
    assert!(same("a\n...\nd\n", "a\nb\nc\nd\n"));
    assert!(same("...\nc\n", "a\nb\nc\n"));
    assert!(same("a\n# ... more\nc\n...\ne\n", "a\nb\nc\nd\ne\n"));
    assert!(!same("a\n...\nb\n", "a\nb\n"));
    assert!(!same("a\n...\nx\n", "a\nb\nc\n"));
    assert!(same(
        "snapshot 0001-20261127T095713Z at 2026-11-27T09:57:13Z on port 37597; set up in 2.18 s\n",
        "snapshot 0002-20261128T000000Z at 2026-11-28T00:00:00Z on port 41000; set up in 0.05 s\n"
    ));
}

#[test]
fn paths_under_etc_are_the_blocks_own() {
    let stage = Stage::new(false);
    let root = stage.path("root");
    let root = root.display();
    assert_eq!(
        stage.mapped("printf 'x\\n' >/etc/sysctl.conf; cat /etc/a --output=/etc/b"),
        format!("printf 'x\\n' >{root}/etc/sysctl.conf; cat {root}/etc/a --output={root}/etc/b")
    );
    assert_eq!(stage.mapped("cat a/etc/b"), "cat a/etc/b");
}
