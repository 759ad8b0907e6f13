//! The crate's layers (src/lib.rs, docs/CONTRIBUTING.md) as a test: every `crate::` path in a
//! module's non-test code names a module of a lower layer, or of its own layer that does not
//! name it back. A new import that climbs fails here with the file that has it. Inside a
//! folder the same holds of its files: no two import each other, directly or round a longer
//! circle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Lowest first. A module may import from its own layer and the ones before it.
const LAYERS: &[&[&str]] = &[
    // model: pure, no I/O
    &["units", "text", "bdp", "ceilings", "expr", "os", "error"],
    // TCP and the host: sockets, this machine, the sysctl store
    &["sysctl", "fsutil", "input", "signals", "host", "tcp", "route"],
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
            // Unit tests may use any layer to build their fixtures.
            let code = non_test_code(&std::fs::read_to_string(&p).expect("read"));
            for line in code.lines() {
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

// ---------------------------------------------------------------- within a folder

/// Circles inside a folder not yet broken: each entry is a folder and the files of one circle,
/// which must be exactly the circle found (a file joining it fails, and so does an entry whose
/// circle is gone, so the entry leaves with the fix).
const CIRCLES_BEING_REMOVED: &[(&str, &[&str])] = &[];

/// file → the siblings it imports → the first line that does.
type Imports = BTreeMap<String, BTreeMap<String, String>>;

/// For each folder of src/ (by its path under src/, a folder in a folder too): which of its
/// files each file imports in its non-test code, with the first line that does. A file imports a sibling by naming it (`super::linux::X`,
/// `crate::host::linux::X`, `use super::{facts, linux}`) or by naming an item the folder's
/// mod.rs re-exports from it (`pub use facts::Facts` in host/mod.rs makes `super::Facts` and
/// `crate::host::Facts` imports of facts.rs). mod.rs itself is the folder's door: it declares
/// its files, re-exports them and may call them, and they may use the items it defines, so it
/// stands in no circle here; items a folder's files share, when they are not the folder's
/// own, belong in a file of their own.
fn sibling_imports() -> BTreeMap<String, Imports> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = BTreeMap::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).expect("read_dir").flatten() {
            if !e.path().is_dir() {
                continue;
            }
            let rel = e
                .path()
                .strip_prefix(&src)
                .expect("under src")
                .to_string_lossy()
                .into_owned();
            out.insert(rel.clone(), folder_imports(&e.path(), &rel));
            stack.push(e.path());
        }
    }
    out
}

/// [`sibling_imports`] of one folder, `src/NAME` (`output/advice` for a folder in a folder).
fn folder_imports(dir: &Path, name: &str) -> Imports {
    // The folder's module path, as `crate::` paths name it.
    let module: Vec<&str> = name.split('/').collect();
    let mut files: BTreeMap<String, String> = BTreeMap::new();
    for e in std::fs::read_dir(dir).expect("read_dir").flatten() {
        let file = e.file_name().to_string_lossy().into_owned();
        let stem = file.strip_suffix(".rs").unwrap_or(&file).to_string();
        let text = if e.path().is_dir() {
            String::new()
        } else if file.ends_with(".rs") {
            non_test_code(&std::fs::read_to_string(e.path()).expect("read"))
        } else {
            continue;
        };
        files.insert(stem, text);
    }
    // Unit tests may use anything; tests.rs is one.
    files.remove("tests");
    let mod_rs = files.remove("mod").unwrap_or_default();
    let reexported: BTreeMap<String, String> = mod_rs
        .lines()
        .filter_map(|l| {
            l.trim_start()
                .strip_prefix("pub use ")
                .or_else(|| l.trim_start().strip_prefix("pub(crate) use "))
        })
        .flat_map(use_tree)
        .filter(|p| p.len() > 1 && files.contains_key(&p[0]))
        .filter_map(|p| Some((p.last()?.clone(), p[0].clone())))
        .collect();
    let mut out = Imports::new();
    for (file, code) in &files {
        // Whole text, not lines: a use group may span several.
        let mut paths = Vec::new();
        for (at, _) in code.match_indices("super::") {
            paths.extend(use_tree(&code[at + "super::".len()..]).into_iter().map(|p| (at, p)));
        }
        for (at, _) in code.match_indices("crate::") {
            let own = use_tree(&code[at + "crate::".len()..])
                .into_iter()
                .filter(|p| p.len() > module.len() && p.iter().zip(&module).all(|(a, b)| a == b))
                .map(|p| (at, p[module.len()..].to_vec()));
            paths.extend(own);
        }
        for (at, p) in paths {
            let to = if files.contains_key(&p[0]) {
                &p[0]
            } else if let Some(from) = reexported.get(&p[0]) {
                from
            } else {
                continue; // mod.rs's own item
            };
            if to != file {
                let line = code[..at].matches('\n').count() + 1;
                let text = code.lines().nth(line - 1).unwrap_or_default().trim();
                let shown = format!("src/{name}/{file}.rs:{line}: {text}");
                out.entry(file.clone()).or_default().entry(to.clone()).or_insert(shown);
            }
        }
    }
    out
}

/// A file's code without its unit tests and comments (doc links name modules too).
fn non_test_code(text: &str) -> String {
    let code = ["#[cfg(test)]\nmod tests", "#[cfg(test)]\npub(crate) mod tests"]
        .iter()
        .filter_map(|m| text.find(m))
        .min()
        .map_or(text, |at| &text[..at]);
    code.lines()
        .map(|l| l.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths a use tree (or a path in code) starting at `s` names, as segments:
/// `a::{b, c::d}` → `[a, b]`, `[a, c, d]`; `a::f(x)` → `[a, f]`.
fn use_tree(s: &str) -> Vec<Vec<String>> {
    let s = s.trim_start();
    if let Some(group) = s.strip_prefix('{') {
        return group_items(group).into_iter().flat_map(use_tree).collect();
    }
    let name: String = s
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    if name.is_empty() || name == "self" {
        return Vec::new();
    }
    let below = s[name.len()..].strip_prefix("::").map(use_tree).unwrap_or_default();
    if below.is_empty() {
        return vec![vec![name]];
    }
    below
        .into_iter()
        .map(|mut p| {
            p.insert(0, name.clone());
            p
        })
        .collect()
}

/// The items of a `{...}` group whose `{` is just before `s`, split at its own commas.
fn group_items(s: &str) -> Vec<&str> {
    let (mut items, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(&s[start..i]);
                return items;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&s[start..]);
    items
}

/// The circles of one folder: each set of files that reach each other through their imports
/// (a strongly connected component of two files or more), sorted.
fn circles(imports: &Imports) -> Vec<Vec<String>> {
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<&String> = imports.get(from).into_iter().flat_map(BTreeMap::keys).collect();
        while let Some(m) = stack.pop() {
            if seen.insert(m.clone()) {
                stack.extend(imports.get(m).into_iter().flat_map(BTreeMap::keys));
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> = imports.keys().map(|f| (f, reach(f))).collect();
    let mut out: Vec<Vec<String>> = Vec::new();
    for (f, r) in &reached {
        if !r.contains(*f) {
            continue;
        }
        let circle: Vec<String> = r
            .iter()
            .filter(|g| reached.get(g).is_some_and(|back| back.contains(*f)))
            .cloned()
            .collect();
        if !out.contains(&circle) {
            out.push(circle);
        }
    }
    out
}

#[test]
fn no_two_files_of_a_folder_import_each_other() {
    let all = sibling_imports();
    assert!(
        all.contains_key("host") && all.contains_key("tcp"),
        "the folders were read"
    );
    let mut bad = Vec::new();
    for (folder, imports) in &all {
        for circle in circles(imports) {
            let allowed = CIRCLES_BEING_REMOVED
                .iter()
                .any(|(f, files)| f == folder && files.iter().eq(circle.iter()));
            if !allowed {
                let lines: Vec<&str> = circle
                    .iter()
                    .flat_map(|f| {
                        imports[f]
                            .iter()
                            .filter(|(to, _)| circle.contains(to))
                            .map(|(_, l)| l.as_str())
                    })
                    .collect();
                bad.push(format!(
                    "src/{folder}: {} import each other:\n  {}",
                    circle.join(", "),
                    lines.join("\n  ")
                ));
            }
        }
    }
    for (folder, files) in CIRCLES_BEING_REMOVED {
        let circle: Vec<String> = files.iter().map(|f| (*f).to_string()).collect();
        if !all.get(*folder).is_some_and(|i| circles(i).contains(&circle)) {
            bad.push(format!(
                "src/{folder}: {files:?} no longer import each other: delete their entry in CIRCLES_BEING_REMOVED"
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "circles inside a folder (move what both need to the lower file, or to a file of its own):\n{}",
        bad.join("\n")
    );
}

#[test]
fn circles_through_three_files_and_imports_through_mod_rs_are_found() {
    let code = |s: &str| use_tree(s).into_iter().map(|p| p.join("::")).collect::<Vec<_>>();
    assert_eq!(code("{facts, linux::{a, b}}; x"), ["facts", "linux::a", "linux::b"]);
    assert_eq!(code("proto::receive_cutoff(start)"), ["proto::receive_cutoff"]);
    let edges = |pairs: &[(&str, &str)]| {
        let mut i = Imports::new();
        for (a, b) in pairs {
            i.entry((*a).to_string())
                .or_default()
                .insert((*b).to_string(), String::new());
        }
        i
    };
    assert!(circles(&edges(&[("a", "b"), ("b", "c")])).is_empty());
    // cmd/apply.rs names `crate::cmd::Context`, which cmd/mod.rs re-exports from context.rs.
    let all = sibling_imports();
    assert!(all["cmd"]["apply"].contains_key("context"), "{:?}", all["cmd"]["apply"]);
    assert!(all["host"]["facts"].contains_key("linux"));
    // A use group over several lines: `use super::{..., link::speed_unknown_note, resolve, ...}`.
    assert!(all["measure"]["fake"].contains_key("link") && all["measure"]["fake"].contains_key("resolve"));
    assert_eq!(
        circles(&edges(&[("a", "b"), ("b", "c"), ("c", "a"), ("d", "a")])),
        [["a", "b", "c"]]
    );
}
