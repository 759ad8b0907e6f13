//! The crate's layers (src/lib.rs, docs/CONTRIBUTING.md) as a test: every `crate::` path in a
//! module's non-test code names a module of a lower layer, or of its own layer that does not
//! name it back. A new import that climbs fails here with the file that has it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Lowest first. A module may import from its own layer and the ones before it.
const LAYERS: &[&[&str]] = &[
    // model: pure, no I/O
    &["units", "text", "bdp", "ceilings", "expr", "os", "error"],
    // TCP and the host: sockets, this machine, the sysctl store
    &["sysctl", "fsutil", "input", "signals", "host", "tcp"],
    // evidence: probes, tests, the far end over SSH, state and rules on disk
    &["profile", "snapshot", "persist", "measure", "diag", "remote"],
    // domain: decisions over values the caller gathered
    &["check", "advice", "change", "calc"],
    // rendering
    &["fleet", "output"],
    // the command line
    &["cli", "cmd"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// The top-level modules each top-level module names in its non-test code, with a file that
/// names it.
fn imports() -> BTreeMap<String, BTreeMap<String, String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).expect("read_dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let rel = p.strip_prefix(&src).expect("under src").to_string_lossy().into_owned();
            if !rel.ends_with(".rs") || rel.ends_with("/tests.rs") || rel == "main.rs" || rel == "lib.rs" {
                continue;
            }
            let top = rel
                .split('/')
                .next()
                .unwrap_or_default()
                .trim_end_matches(".rs")
                .to_string();
            let text = std::fs::read_to_string(&p).expect("read");
            // Unit tests may use any layer to build their fixtures.
            let code = ["#[cfg(test)]\nmod tests", "#[cfg(test)]\npub(crate) mod tests"]
                .iter()
                .filter_map(|m| text.find(m))
                .min()
                .map_or(text.as_str(), |at| &text[..at]);
            for line in code.lines().map(|l| l.split("//").next().unwrap_or_default()) {
                for m in names_after_crate(line) {
                    if m != top {
                        out.entry(top.clone())
                            .or_default()
                            .entry(m)
                            .or_insert_with(|| rel.clone());
                    }
                }
            }
        }
    }
    out
}

/// `crate::a::b` → a; `crate::{a, b::c}` → a, b.
fn names_after_crate(line: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                    .collect();
                if !name.is_empty() && name != "self" {
                    names.push(name);
                }
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            if !name.is_empty() {
                names.push(name);
            }
        }
    }
    names
}

#[test]
fn imports_never_climb_a_layer_and_never_circle() {
    let all = imports();
    let mut bad = Vec::new();
    for (from, tos) in &all {
        let Some(lf) = layer_of(from) else {
            bad.push(format!(
                "{from} is in no layer: add it to LAYERS (and to src/lib.rs's table)"
            ));
            continue;
        };
        for (to, file) in tos {
            match layer_of(to) {
                None => bad.push(format!("{to} (named in src/{file}) is in no layer")),
                Some(lt) if lt > lf => bad.push(format!("src/{file}: {from} imports {to}, a higher layer")),
                Some(lt) if lt == lf && all.get(to).is_some_and(|back| back.contains_key(from)) => {
                    bad.push(format!("src/{file}: {from} and {to} import each other"));
                }
                Some(_) => {}
            }
        }
    }
    assert!(bad.is_empty(), "layering broken:\n{}", bad.join("\n"));
    // The two rules the layers exist for.
    let names = |m: &str| {
        all.get(m)
            .map(|t| t.keys().cloned().collect::<BTreeSet<_>>())
            .unwrap_or_default()
    };
    for (a, b) in [("measure", "diag"), ("diag", "measure")] {
        assert!(
            !names(a).contains(b),
            "{a} imports {b}: they share crate::tcp, not each other"
        );
    }
    for m in ["measure", "diag", "check"] {
        assert!(
            !names(m).contains("advice"),
            "{m} imports advice: pass what it needs as a value"
        );
    }
    // Within a layer: no circle through three or more modules either.
    for layer in LAYERS {
        for start in *layer {
            let mut seen = BTreeSet::new();
            let mut stack: Vec<String> = names(start)
                .into_iter()
                .filter(|n| layer.contains(&n.as_str()))
                .collect();
            while let Some(m) = stack.pop() {
                assert_ne!(&m, start, "{start} reaches itself through its own layer's imports");
                if seen.insert(m.clone()) {
                    stack.extend(names(&m).into_iter().filter(|n| layer.contains(&n.as_str())));
                }
            }
        }
    }
}

#[test]
fn every_module_of_lib_rs_has_a_layer() {
    let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).expect("lib.rs");
    for m in lib
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod "))
        .map(|l| l.trim_end_matches(';'))
    {
        assert!(
            layer_of(m).is_some(),
            "src/lib.rs declares {m}, which tests/cli/layers.rs puts in no layer"
        );
    }
}
