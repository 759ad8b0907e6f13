//! Issue 48: every output byte of every format, for advice made from fixed facts — a path
//! through the fake prober, this host's values from a fixed tree, a far end's facts and a
//! mesh's hosts from fixed lines — so that moving the renderers cannot change a byte unseen.
//! Each case is one file under tests/golden/: its exit status, its stdout, its stderr, and
//! the files an `--output DIR` wrote. `UPDATE_SNAPSHOTS=1` writes them anew (then read the
//! diff: a change there is a change users see).

use std::path::{Path, PathBuf};
use std::process::Output;

use tempfile::TempDir;

use crate::{bsd_tree, fixture, linux_tree, tcptune, values, write_script};

/// 150 ms at 500 Mbit/s, no loss, a queue of one BDP: a clean long path.
const PATH: &str = "rtt=150ms,rate=500mbit,loss=0";
/// 80 ms at 1 Gbit/s with random loss: the lossy class.
const LOSSY: &str = "rtt=80ms,rate=1gbit,loss=0.2";

const FORMATS: [&str; 8] = [
    "sysctl", "table", "json", "shell", "ansible", "tuned", "k8s", "networkd",
];

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// Exit status, stdout, stderr and the files under `out` (if any), as one text.
fn record(out: &Output, dir: Option<&Path>) -> String {
    let mut s = format!(
        "exit {:?}\n--- stdout\n{}--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if let Some(d) = dir {
        let mut files: Vec<PathBuf> = walk(d);
        files.sort();
        for f in files {
            let rel = f
                .strip_prefix(d)
                .ok()
                .filter(|r| !r.as_os_str().is_empty())
                .unwrap_or(Path::new("OUTPUT"));
            s += &format!(
                "--- file {}\n{}",
                rel.display(),
                String::from_utf8_lossy(&std::fs::read(&f).expect("read"))
            );
        }
    }
    s
}

fn walk(d: &Path) -> Vec<PathBuf> {
    if !d.is_dir() {
        return if d.exists() { vec![d.to_path_buf()] } else { Vec::new() };
    }
    let mut all = Vec::new();
    for e in std::fs::read_dir(d).expect("read_dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            all.extend(walk(&p));
        } else {
            all.push(p);
        }
    }
    all
}

/// The JSON fields and words before a wall time.
const TIMED: [&str; 4] = ["\"total_s\": ", "\"took_s\": ", "\"setup_s\": ", "time: ; "];

/// What changes from run to run or clone to clone, masked: the repository's path, the time of
/// the advice, the scratch directories, the wall times (in JSON and on a mesh test's progress
/// line), the port a test end's peer took.
fn mask(text: &str) -> String {
    // The clone's own path (the fake sysctl(8) is named by it): REPO.
    let text: &str = &text.replace(env!("CARGO_MANIFEST_DIR"), "REPO");
    let tmp = format!(
        "{}/.tmp",
        std::env::temp_dir().display().to_string().trim_end_matches('/')
    );
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        let b = rest.as_bytes();
        let digits = |from: usize, n: usize| b.len() >= from + n && b[from..from + n].iter().all(u8::is_ascii_digit);
        let time = digits(0, 4)
            && b.len() >= 20
            && (b[4], b[7], b[10], b[13], b[16], b[19]) == (b'-', b'-', b'T', b':', b':', b'Z')
            && [5, 8, 11, 14, 17].iter().all(|&i| digits(i, 2));
        let (word, skip) = if time {
            ("TIME", 20)
        } else if rest.starts_with(&tmp) {
            let n = rest[tmp.len()..].bytes().take_while(u8::is_ascii_alphanumeric).count();
            ("SCRATCH", tmp.len() + n)
        } else if let Some(t) = rest.strip_prefix("set up in ") {
            let n = t.bytes().take_while(|c| c.is_ascii_digit() || *c == b'.').count();
            ("set up in N", 10 + n)
        } else if let Some(key) = TIMED.iter().find(|k| rest.starts_with(*k)) {
            let n = rest[key.len()..]
                .bytes()
                .take_while(|c| c.is_ascii_digit() || b".e-".contains(c))
                .count();
            out.push_str(key);
            ("N", key.len() + n)
        } else if rest.starts_with("198.18.10.") && digits(10, 1) && b.get(11) == Some(&b':') {
            let n = rest[12..].bytes().take_while(u8::is_ascii_digit).count();
            out.push_str(&rest[..11]);
            (":PORT", 12 + n)
        } else {
            let c = rest.chars().next().expect("a char");
            out.push(c);
            rest = &rest[c.len_utf8()..];
            continue;
        };
        out.push_str(word);
        rest = &rest[skip..];
    }
    // A mesh test's progress line ends with its wall time: "[1/6] h1 ↔ h2: … (0 s)".
    out.split('\n')
        .map(|l| match l.rfind(" (") {
            Some(at) if l.starts_with('[') && l.ends_with(" s)") => format!("{} (T s)", &l[..at]),
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Compares (or with UPDATE_SNAPSHOTS=1 writes) every case, masked; one failure lists them all.
fn check_all(cases: &[(String, String)]) {
    let dir = golden_dir();
    let update = std::env::var_os("UPDATE_SNAPSHOTS").is_some();
    let mut differ = Vec::new();
    for (name, actual) in cases {
        let actual = &mask(actual);
        let file = dir.join(format!("{name}.txt"));
        if update {
            std::fs::create_dir_all(&dir).expect("mkdir");
            std::fs::write(&file, actual).expect("write");
            continue;
        }
        let expected = std::fs::read_to_string(&file).unwrap_or_default();
        if &expected != actual {
            let at = expected
                .lines()
                .zip(actual.lines())
                .position(|(a, b)| a != b)
                .unwrap_or_else(|| expected.lines().count().min(actual.lines().count()));
            differ.push(format!(
                "{name}: line {}: expected {:?}, got {:?}",
                at + 1,
                expected.lines().nth(at).unwrap_or("<end>"),
                actual.lines().nth(at).unwrap_or("<end>")
            ));
        }
    }
    assert!(
        differ.is_empty(),
        "{} golden file(s) differ (UPDATE_SNAPSHOTS=1 to accept, then read the diff):\n{}",
        differ.len(),
        differ.join("\n")
    );
}

/// A directory with an `ip` that answers every `route get` with `wan0` and a gateway-less
/// route, first on PATH: `--scope path` reads this rather than the machine's routes.
fn fake_ip(dir: &Path) -> String {
    std::fs::create_dir_all(dir.join("bin")).expect("bin");
    write_script(
        &dir.join("bin/ip"),
        "#!/bin/sh\ncase \"$*\" in \"route get fibmatch \"*) a=$4;; \"route get \"*) a=$3;; \
         \"-j route\"*|\"route show\"*|\"route list\"*) exit 0;; *) exit 1;; esac\n\
         echo \"$a dev wan0 src 198.18.0.1 uid 0\"\n",
    );
    format!(
        "{}:{}",
        dir.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn linux(tree: &Path, args: &[&str], path_env: &str, out: Option<&Path>) -> String {
    let mut c = tcptune();
    c.env("PATH", path_env)
        .env("COLUMNS", "100")
        .args(["--os", "linux", "--sysctl-dir"])
        .arg(tree)
        .args(args);
    if let Some(o) = out {
        c.arg("--output").arg(o);
    }
    record(&c.output().expect("run"), out)
}

#[test]
fn every_format_of_one_advice_is_byte_for_byte_what_it_was() {
    let scratch = TempDir::new().expect("tempdir");
    let path_env = fake_ip(scratch.path());
    let tree = linux_tree(&[]);
    let reno = linux_tree(&[("net.ipv4.tcp_congestion_control", Some("reno"))]);
    let mut cases = Vec::new();
    let host = ["advise", "--host", "198.18.0.2", "--fake-prober"];
    for f in FORMATS {
        for (tag, spec, extra) in [
            ("clean", PATH, &[][..]),
            ("lossy", LOSSY, &[][..]),
            ("explain", PATH, &["--explain"][..]),
            ("size", PATH, &["--size", "2TB"][..]),
        ] {
            let args = [&host[..], &[spec, "--format", f], extra].concat();
            cases.push((format!("advise-{tag}-{f}"), linux(tree.path(), &args, &path_env, None)));
        }
        let scoped = [&host[..], &[PATH, "--scope", "path", "--format", f]].concat();
        cases.push((
            format!("advise-scoped-{f}"),
            linux(reno.path(), &scoped, &path_env, None),
        ));
    }
    for f in ["tuned", "networkd", "ansible"] {
        let out = scratch.path().join(format!("out-{f}"));
        let scoped = [&host[..], &[PATH, "--scope", "path", "--format", f]].concat();
        let args = if f == "tuned" {
            [&host[..], &[PATH, "--format", f]].concat()
        } else {
            scoped
        };
        cases.push((
            format!("advise-output-{f}"),
            linux(reno.path(), &args, &path_env, Some(&out)),
        ));
    }
    // FreeBSD through the fake sysctl(8).
    let bsd = bsd_tree(&[]);
    for f in FORMATS {
        let out = tcptune()
            .env("FAKE_SYSCTL_DIR", bsd.path())
            .env("COLUMNS", "100")
            .args(["advise", "--os", "freebsd", "--rtt", "150ms", "--bandwidth", "500mbit"])
            // Named relative to the fixtures: the clone's path (any length) would move the
            // line's wrap, which no mask can put back.
            .current_dir(fixture(""))
            .args(["--format", f, "--sysctl-cmd", "./fake-sysctl"])
            .output()
            .expect("run");
        cases.push((format!("advise-freebsd-{f}"), record(&out, None)));
    }
    check_all(&cases);
}

/// The far end's facts as its script says them: the stock values of the fixture, a fixed
/// kernel, page, RAM; then `peer none`.
fn far_facts() -> String {
    let mut say = vec![
        "tcptune-far 1".to_string(),
        "uname Linux x86_64".into(),
        "release 6.1.0".into(),
        "page 4096".into(),
        "uid 0".into(),
        "ramkb 16384000".into(),
        "fq 0".into(),
        "netns-self net:[4026531840]".into(),
        "netns-init net:[4026531840]".into(),
    ];
    for (k, v) in values(
        "linux-stock.txt",
        &[("net.ipv4.tcp_rmem", Some("4096 131072 268435456"))],
    ) {
        say.push(format!("key {} -rw-r--r--", k.replace('.', "/")));
        say.push(format!("= {}", v.replace('\t', " ")));
    }
    let quoted: Vec<String> = say.iter().map(|l| format!("'{l}'")).collect();
    format!(
        "printf '%s\\n' {} 'peer none'\ncat >/dev/null\necho 'end 0'\n",
        quoted.join(" ")
    )
}

#[test]
fn every_format_of_an_advice_with_its_far_end_is_byte_for_byte_what_it_was() {
    let dir = TempDir::new().expect("tempdir");
    let path_env = fake_ip(dir.path());
    let ssh = dir.path().join("ssh");
    write_script(
        &ssh,
        &format!(
            "#!/bin/sh\ncase \" $* \" in *\" -G \"*) echo hostname 198.18.0.2; exit 0;; esac\n{}",
            far_facts()
        ),
    );
    let tree = linux_tree(&[]);
    let ssh_s = ssh.display().to_string();
    let base = [
        "advise",
        "--ssh",
        "dtn2",
        "--ssh-command",
        &ssh_s,
        "--rtt",
        "150ms",
        "--bandwidth",
        "500mbit",
    ];
    let mut cases = Vec::new();
    for f in FORMATS {
        for (tag, extra) in [
            ("both", &[][..]),
            ("far", &["--side", "far"][..]),
            ("scoped", &["--scope", "path"][..]),
        ] {
            let args = [&base[..], &["--format", f], extra].concat();
            cases.push((format!("ssh-{tag}-{f}"), linux(tree.path(), &args, &path_env, None)));
        }
    }
    check_all(&cases);
}

#[test]
fn every_format_of_a_mesh_is_byte_for_byte_what_it_was() {
    let dir = TempDir::new().expect("tempdir");
    let ssh = crate::mesh::mesh_stand_in(dir.path(), Some(&far_facts_tree(dir.path())));
    let mut cases = Vec::new();
    for f in ["table", "json", "ansible"] {
        for with_output in [false, true] {
            let out_dir = dir.path().join(format!("out-{f}-{with_output}"));
            let state = dir.path().join(format!("state-{f}-{with_output}/mesh.jsonl"));
            let mut c = tcptune();
            c.env("COLUMNS", "100")
                .args(crate::mesh::stand_in_mesh(&["h1", "h2", "h3", "h4"], &ssh))
                .args(["--format", f, "--state"])
                .arg(&state);
            if with_output {
                std::fs::create_dir_all(&out_dir).expect("mkdir");
                c.arg("--output").arg(&out_dir);
            }
            let out = c.output().expect("run");
            let name = format!("mesh-{f}{}", if with_output { "-output" } else { "" });
            cases.push((name, record(&out, with_output.then_some(out_dir.as_path()))));
        }
    }
    check_all(&cases);
}

/// A tree for the mesh's hosts' /proc/sys, and a meminfo beside it: their facts fixed.
fn far_facts_tree(dir: &Path) -> PathBuf {
    let tree = dir.join("far-tree");
    for (k, v) in values("linux-stock.txt", &[]) {
        let p = k.split('.').fold(tree.clone(), |p, c| p.join(c));
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, format!("{v}\n")).expect("write");
    }
    std::fs::write(dir.join("far-meminfo"), "MemTotal:       16384000 kB\n").expect("meminfo");
    tree
}
