//! `advise --format ansible|tuned|k8s`: each format checked by its own engine — Ansible runs
//! the playbook in a network namespace, TuneD's loader reads the profile, kubernetes-validate
//! checks the Pod against the API schema — and the refusals of what a format cannot take.
//!
//! The engines come from the package registries: tests/run.sh installs Debian's `tuned` and a
//! Python venv with `ansible` and `kubernetes-validate` (`TCPTUNE_FLEET_VENV`, default
//! target/fleet-venv). With the `privileged-tests` feature a missing client fails the test.

use std::path::{Path, PathBuf};
use std::process::Command as Std;

use assert_cmd::cargo::cargo_bin;
use predicates::prelude::*;
use serde_json::Value;

use super::netns::Netns;
use super::tcptune;

/// The example path.
const PATH: [&str; 4] = ["--rtt", "150ms", "--bandwidth", "500mbit"];

/// The venv holding ansible-playbook, kubernetes-validate and PyYAML.
pub(crate) fn venv() -> PathBuf {
    let dir = std::env::var_os("TCPTUNE_FLEET_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/fleet-venv"));
    assert!(
        dir.join("bin/ansible-playbook").is_file() && dir.join("bin/kubernetes-validate").is_file(),
        "{}: no ansible-playbook / kubernetes-validate: run the tests with `bash tests/run.sh`, which installs them",
        dir.display()
    );
    dir
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fleet").join(name)
}

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Values as /proc/sys prints them and the advice writes them compare by their fields.
fn fields(v: &str) -> String {
    v.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The advice's settings to be set: (key, value) of every `set` or `keep` at runtime.
fn wanted(json: &str) -> Vec<(String, String)> {
    let v: Value = serde_json::from_str(json).expect("json");
    v["settings"]
        .as_array()
        .expect("settings")
        .iter()
        .filter(|s| s["stage"] == "runtime" && (s["action"]["kind"] == "set" || s["action"]["kind"] == "keep"))
        .map(|s| {
            (
                s["key"].as_str().expect("key").to_string(),
                fields(s["value"].as_str().expect("value")),
            )
        })
        .collect()
}

/// The example path's advice on this machine, as (key, value) to be set.
fn host_advice() -> Vec<(String, String)> {
    let out = tcptune()
        .args(["advise", "--format", "json"])
        .args(PATH)
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", text(&out));
    wanted(&String::from_utf8(out.stdout).expect("utf8"))
}

/// `spec.securityContext.sysctls` of a Pod manifest, read by PyYAML.
fn pod_sysctls(venv: &Path, file: &Path) -> Vec<(String, String)> {
    let out = Std::new(venv.join("bin/python"))
        .arg(script("pod_sysctls.py"))
        .arg(file)
        .output()
        .expect("python");
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice(&out.stdout).expect("json")
}

// ------------------------------------------------------------------ refusals (no root)

#[test]
fn formats_for_an_engine_that_cannot_run_there_are_refused_in_one_line() {
    for (format, os) in [
        ("k8s", "freebsd"),
        ("k8s", "macos"),
        ("tuned", "freebsd"),
        ("tuned", "macos"),
    ] {
        let out = tcptune()
            .args(["advise", "--format", format, "--os", os])
            .args(PATH)
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2), "{format}/{os}: {}", text(&out));
        assert!(out.stdout.is_empty(), "nothing on stdout");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with("tcptune: ") && err.contains(os), "{err}");
        assert_eq!(
            err.lines()
                .filter(|l| !l.starts_with("hint:") && !l.trim().is_empty())
                .count(),
            1,
            "{err}"
        );
    }
    // Another format's options, a name TuneD would not load, a kubelet list that is not one.
    for args in [
        vec!["--format", "sysctl", "--tuned-include", "network-throughput"],
        vec!["--format", "ansible", "--allowed-unsafe-sysctls", "net.ipv4.*"],
        vec!["--format", "tuned", "--tuned-include", "../etc"],
        vec!["--format", "k8s", "--allowed-unsafe-sysctls", "net.*.x"],
    ] {
        tcptune()
            .arg("advise")
            .args(&args)
            .args(PATH)
            .assert()
            .code(2)
            .stdout("")
            .stderr(predicate::str::starts_with("tcptune: ").or(predicate::str::starts_with("error: ")));
    }
    // Commands that report take table or json only; a profile template has no values yet,
    // and takes no --format (its --help points at advise).
    tcptune()
        .args(["calc", "--format", "ansible", "--bandwidth", "1gbit", "--rtt", "10ms"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("possible values: table, json"));
    tcptune()
        .args(["profiles", "export", "linux", "--format", "tuned"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unexpected argument '--format'"));
    tcptune()
        .args(["profiles", "export", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("tcptune advise --profile NAME"));
}

#[test]
fn ansible_for_freebsd_and_macos_keeps_sysctl_conf_and_macos_does_not_reload() {
    for (os, reload) in [("freebsd", "reload: true"), ("macos", "reload: false")] {
        let out = tcptune()
            .args(["advise", "--format", "ansible", "--os", os])
            .args(PATH)
            .output()
            .expect("run");
        assert!(out.status.success(), "{}", text(&out));
        let t = String::from_utf8(out.stdout).expect("utf8");
        assert!(t.contains("tcptune_sysctl_file: \"/etc/sysctl.conf\""), "{t}");
        assert!(t.contains(reload), "{os}: {t}");
        assert!(t.contains("kern.ipc.maxsockbuf"), "{t}");
    }
}

#[test]
fn k8s_puts_in_the_pod_only_what_a_pod_may_set() {
    let out = tcptune()
        .args(["advise", "--format", "k8s"])
        .args(PATH)
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", text(&out));
    let t = String::from_utf8(out.stdout).expect("utf8");
    let pod: Vec<&str> = t
        .lines()
        .skip_while(|l| !l.contains("sysctls:"))
        .take_while(|l| !l.contains("containers:"))
        .filter_map(|l| l.trim().strip_prefix("- name: "))
        .collect();
    assert_eq!(pod, ["\"net.ipv4.tcp_rmem\"", "\"net.ipv4.tcp_wmem\""], "{t}");
    // Node-wide caps listed apart, unsafe ones named with the kubelet flag.
    assert!(
        t.contains("Set on the node") && t.contains("#   net.core.rmem_max = "),
        "{t}"
    );
    assert!(
        t.contains("--allowed-unsafe-sysctls=") && t.contains("net.ipv4.tcp_congestion_control"),
        "{t}"
    );
    // The kubelet's list brings the unsafe key it names into the pod, and nothing node-wide.
    let out = tcptune()
        .args([
            "advise",
            "--format",
            "k8s",
            "--allowed-unsafe-sysctls",
            "net.ipv4.tcp_congestion_control,net.core.*",
        ])
        .args(PATH)
        .output()
        .expect("run");
    let t = String::from_utf8(out.stdout).expect("utf8");
    assert!(t.contains("- name: \"net.ipv4.tcp_congestion_control\""), "{t}");
    assert!(!t.contains("- name: \"net.core."), "{t}");
}

#[test]
fn tuned_output_is_a_profile_directory_named_by_it() {
    let dir = tempfile::tempdir().expect("tmp");
    let profile = dir.path().join("wan-dtn");
    tcptune()
        .args(["advise", "--format", "tuned", "--output"])
        .arg(&profile)
        .args(PATH)
        .assert()
        .success()
        .stdout("")
        .stderr(predicate::str::contains("tuned-adm profile wan-dtn"));
    let conf = std::fs::read_to_string(profile.join("tuned.conf")).expect("tuned.conf");
    assert!(
        conf.contains("\n[main]\nsummary=tcptune: ") && conf.contains("\n[sysctl]\n"),
        "{conf}"
    );
    assert!(!conf.contains("include="), "no parent profile unless asked: {conf}");
    // Run again, as docs/FLEETS.md does to update a profile: the file is replaced (it once
    // exited 2, "not a directory"), atomically: a new file under the same name.
    use std::os::unix::fs::MetadataExt as _;
    let first = std::fs::metadata(profile.join("tuned.conf")).expect("meta").ino();
    tcptune()
        .args([
            "advise",
            "--rtt",
            "20ms",
            "--bandwidth",
            "10gbit",
            "--format",
            "tuned",
            "--output",
        ])
        .arg(&profile)
        .assert()
        .success()
        .stderr(predicate::str::contains("wrote"));
    let again = std::fs::read_to_string(profile.join("tuned.conf")).expect("tuned.conf");
    assert_ne!(again, conf, "the second advice replaced the first");
    assert!(again.contains("RTT 20 ms"), "{again}");
    assert_ne!(
        std::fs::metadata(profile.join("tuned.conf")).expect("meta").ino(),
        first
    );
    let names: Vec<_> = std::fs::read_dir(&profile)
        .expect("ls")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(
        names,
        vec![std::ffi::OsString::from("tuned.conf")],
        "no temporary file left"
    );
    // A file, twice.
    let file = dir.path().join("advice.conf");
    for rtt in ["150ms", "20ms"] {
        tcptune()
            .args([
                "advise",
                "--bandwidth",
                "500mbit",
                "--format",
                "sysctl",
                "--rtt",
                rtt,
                "--output",
            ])
            .arg(&file)
            .assert()
            .success();
    }
    assert!(std::fs::read_to_string(&file).expect("read").contains("RTT 20 ms"));
    // A name TuneD would drop is refused before anything is written.
    let bad = dir.path().join("wan dtn");
    tcptune()
        .args(["advise", "--format", "tuned", "--output"])
        .arg(&bad)
        .args(PATH)
        .assert()
        .code(2);
    assert!(!bad.exists());
}

// ------------------------------------------------------------------ the engines themselves

#[test]
#[cfg_attr(
    not(feature = "privileged-tests"),
    ignore = "privileged: needs root and the clients tests/run.sh installs"
)]
fn ansible_playbook_applies_the_advice_in_a_netns_and_its_revert_restores_it() {
    let venv = venv();
    let ns = Netns::new("ansible");
    let bin = cargo_bin("tcptune");
    let bin = bin.to_str().expect("utf8");
    // Stock maxima, so that the advice changes something.
    ns.exec(
        "sysctl",
        &[
            "-w",
            "net.ipv4.tcp_rmem=4096 131072 6291456",
            "net.ipv4.tcp_wmem=4096 16384 4194304",
        ],
    );
    let host_rmem = fields(&std::fs::read_to_string("/proc/sys/net/ipv4/tcp_rmem").expect("host"));

    let advise = |format: &str| {
        let out = ns.exec(bin, &["advise", "--format", format, PATH[0], PATH[1], PATH[2], PATH[3]]);
        assert!(out.status.success(), "{}", text(&out));
        String::from_utf8(out.stdout).expect("utf8")
    };
    let want = wanted(&advise("json"));
    assert!(want.iter().any(|(k, _)| k == "net.ipv4.tcp_rmem"), "{want:?}");
    let before: Vec<String> = want.iter().map(|(k, _)| ns.sysctl(k)).collect();
    assert_ne!(
        before,
        want.iter().map(|(_, v)| v.clone()).collect::<Vec<_>>(),
        "the advice must change something"
    );

    let dir = tempfile::tempdir().expect("tmp");
    let book = dir.path().join("tcptune.yml");
    std::fs::write(&book, advise("ansible")).expect("write");
    let dropin = dir.path().join("60-tcptune.conf");
    let prior = dir.path().join("state/prior.conf");
    let play = |extra: &[&str]| {
        let mut args = vec![
            venv.join("bin/ansible-playbook").to_str().expect("utf8").to_string(),
            "-c".into(),
            "local".into(),
            "-i".into(),
            "localhost,".into(),
            book.to_str().expect("utf8").into(),
            "-e".into(),
            format!("ansible_python_interpreter={}", venv.join("bin/python").display()),
            "-e".into(),
            format!("tcptune_sysctl_file={}", dropin.display()),
            "-e".into(),
            format!("tcptune_prior_file={}", prior.display()),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = Std::new("ip")
            .args(["netns", "exec", &ns.name])
            .args(&args)
            .env("ANSIBLE_NOCOLOR", "1")
            .env("ANSIBLE_LOCAL_TEMP", dir.path().join("ansible-tmp"))
            .env("ANSIBLE_REMOTE_TEMP", dir.path().join("ansible-tmp"))
            .output()
            .expect("ansible-playbook");
        assert!(
            out.status.success(),
            "ansible-playbook {extra:?} failed:\n{}",
            text(&out)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };

    let first = play(&[]);
    for (k, v) in &want {
        assert_eq!(&ns.sysctl(k), v, "{k} after the playbook:\n{first}");
    }
    let kept = std::fs::read_to_string(&dropin).expect("the drop-in");
    assert!(kept.contains("net.ipv4.tcp_rmem="), "{kept}");
    assert!(prior.is_file(), "the values replaced are recorded");
    // Converged: a second run changes nothing (and keeps the first record).
    let again = play(&[]);
    assert!(again.contains("changed=0"), "{again}");

    let revert = play(&["--tags", "revert"]);
    let after: Vec<String> = want.iter().map(|(k, _)| ns.sysctl(k)).collect();
    assert_eq!(after, before, "revert restores every key:\n{revert}");
    assert!(!dropin.exists() && !prior.exists(), "revert leaves neither file");
    assert_eq!(
        fields(&std::fs::read_to_string("/proc/sys/net/ipv4/tcp_rmem").expect("host")),
        host_rmem,
        "the host's own value is untouched"
    );
}

#[test]
#[cfg_attr(
    not(feature = "privileged-tests"),
    ignore = "privileged: needs root and the clients tests/run.sh installs"
)]
fn tuned_loads_the_profile_with_its_own_loader_and_reads_the_advice() {
    let dir = tempfile::tempdir().expect("tmp");
    let want = host_advice();
    let load = |name: &str| {
        Std::new("/usr/bin/python3")
            .arg(script("tuned_load.py"))
            .arg(format!("/usr/lib/tuned:{}", dir.path().display()))
            .arg(name)
            .output()
            .expect("python3 with Debian's tuned package")
    };
    for (name, include) in [("tcptune", None), ("tcptune-nt", Some("network-throughput"))] {
        let mut cmd = tcptune();
        cmd.args(["advise", "--format", "tuned", "--output"])
            .arg(dir.path().join(name))
            .args(PATH);
        if let Some(p) = include {
            cmd.args(["--tuned-include", p]);
        }
        cmd.assert().success();
        let out = load(name);
        assert!(out.status.success(), "TuneD's loader: {}", text(&out));
        let v: Value = serde_json::from_slice(&out.stdout).expect("json");
        assert!(
            v["summary"]
                .as_str()
                .expect("summary")
                .contains("RTT 150 ms at 500 Mbit/s"),
            "{v}"
        );
        let sysctl = v["units"]["sysctl"].as_object().expect("[sysctl]");
        for (k, val) in &want {
            assert_eq!(
                sysctl.get(k).and_then(Value::as_str).map(fields).as_deref(),
                Some(val.as_str()),
                "{k}: {v}"
            );
        }
        match include {
            // Exactly the advice, nothing else.
            None => assert_eq!(sysctl.len(), want.len(), "{v}"),
            // network-throughput's own tcp_rmem is overridden; its parents' settings come along.
            Some(_) => assert!(
                sysctl.contains_key("vm.dirty_ratio") && v["units"].get("cpu").is_some(),
                "{v}"
            ),
        }
    }
    // The loader can refuse: a line without '=' in a section.
    let broken = dir.path().join("broken");
    std::fs::create_dir(&broken).expect("mkdir");
    let conf = std::fs::read_to_string(dir.path().join("tcptune/tuned.conf")).expect("read");
    std::fs::write(
        broken.join("tuned.conf"),
        conf.replace("[sysctl]\n", "[sysctl]\nnet.ipv4.tcp_rmem\n[sysctl]\n"),
    )
    .expect("write");
    assert!(
        !load("broken").status.success(),
        "TuneD's loader refuses a broken profile"
    );
}

#[test]
#[cfg_attr(
    not(feature = "privileged-tests"),
    ignore = "privileged: needs root and the clients tests/run.sh installs"
)]
fn the_pod_validates_against_the_kubernetes_schema_and_holds_only_allowed_sysctls() {
    let venv = venv();
    let dir = tempfile::tempdir().expect("tmp");
    let validate = |file: &Path| {
        Std::new(venv.join("bin/kubernetes-validate"))
            .args(["--kubernetes-version", "1.32.0", "--strict"])
            .arg(file)
            .output()
            .expect("kubernetes-validate")
    };
    let safe: Vec<&str> = vec!["net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"];
    for (name, allow) in [
        ("pod.yaml", None),
        ("pod-unsafe.yaml", Some("net.ipv4.tcp_congestion_control")),
    ] {
        let file = dir.path().join(name);
        let mut cmd = tcptune();
        cmd.args(["advise", "--format", "k8s", "--output"])
            .arg(&file)
            .args(PATH);
        if let Some(a) = allow {
            cmd.args(["--allowed-unsafe-sysctls", a]);
        }
        cmd.assert().success();
        let out = validate(&file);
        assert!(out.status.success(), "kubernetes-validate: {}", text(&out));
        let list = pod_sysctls(&venv, &file);
        let names: Vec<&str> = list.iter().map(|(n, _)| n.as_str()).collect();
        for n in &names {
            assert!(
                safe.contains(n) || Some(*n) == allow,
                "{n} is neither safe nor allowed: {names:?}"
            );
        }
        for s in &safe {
            assert!(names.contains(s), "{s} missing: {names:?}");
        }
        assert_eq!(
            names.contains(&"net.ipv4.tcp_congestion_control"),
            allow.is_some(),
            "{names:?}"
        );
    }
    // The validator can fail: a misspelt field.
    let text_ok = std::fs::read_to_string(dir.path().join("pod.yaml")).expect("read");
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, text_ok.replace("    sysctls:", "    sysctl:")).expect("write");
    assert!(
        !validate(&bad).status.success(),
        "strict validation rejects an unknown field"
    );
}

#[test]
#[cfg_attr(
    not(feature = "privileged-tests"),
    ignore = "privileged: needs root and the clients tests/run.sh installs"
)]
fn what_k8s_puts_in_a_pod_the_kernel_lets_a_child_namespace_write_and_the_rest_it_does_not() {
    let venv = venv();
    let ns = Netns::new("k8sscope");
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("pod.yaml");
    // Every namespaced key allowed: the pod gets all that tcptune calls per-namespace.
    tcptune()
        .args([
            "advise",
            "--format",
            "k8s",
            "--allowed-unsafe-sysctls",
            "net.*",
            "--output",
        ])
        .arg(&file)
        .args(PATH)
        .assert()
        .success();
    let pod = pod_sysctls(&venv, &file);
    let all = host_advice();
    assert!(pod.len() >= 2 && pod.len() < all.len(), "{pod:?} of {all:?}");
    for (k, _) in &all {
        // Written back through /proc/sys itself: procps `sysctl -w` exits 0 even when the
        // kernel refuses the write.
        let proc = format!("/proc/sys/{}", k.replace('.', "/"));
        let writable = ns
            .exec(
                "sh",
                &["-c", "v=$(cat \"$1\") && printf '%s\\n' \"$v\" > \"$1\"", "sh", &proc],
            )
            .status
            .success();
        let in_pod = pod.iter().any(|(n, _)| n == k);
        assert_eq!(
            in_pod, writable,
            "{k}: in the pod {in_pod}, writable in a child namespace {writable}"
        );
    }
}

#[test]
fn the_drop_in_is_numbered_against_the_installed_files_and_what_overrides_it_is_named() {
    let root = tempfile::tempdir().expect("tmp");
    let d = root.path().join("etc/sysctl.d");
    std::fs::create_dir_all(&d).expect("mkdir");
    // "70-tcptune.conf" sorts after "70-nic.conf", byte for byte, as the loaders sort.
    std::fs::write(d.join("70-nic.conf"), "net.ipv4.tcp_rmem = 4096 87380 16777216\n").expect("write");
    // /etc/sysctl.conf is read last whatever the number: it can only be named.
    std::fs::write(
        root.path().join("etc/sysctl.conf"),
        "net.ipv4.tcp_wmem = 4096 65536 16777216\n",
    )
    .expect("write");
    let run = |format: &str| {
        let out = tcptune()
            .args(["advise", "--format", format, "--persist-root"])
            .arg(root.path())
            .args(PATH)
            .output()
            .expect("run");
        assert!(out.status.success(), "{}", text(&out));
        String::from_utf8(out.stdout).expect("utf8")
    };
    let sysctl = run("sysctl");
    assert!(
        sysctl
            .contains("# save as /etc/sysctl.d/70-tcptune.conf (read after 70-nic.conf, which sets net.ipv4.tcp_rmem)"),
        "{sysctl}"
    );
    assert!(
        sysctl
            .lines()
            .any(|l| l.starts_with("# warning: ") && l.contains("etc/sysctl.conf:1 sets net.ipv4.tcp_wmem")),
        "{sysctl}"
    );
    let v: Value = serde_json::from_str(&run("json")).expect("json");
    assert_eq!(v["sysctl_d"]["file"], "/etc/sysctl.d/70-tcptune.conf", "{v}");
    assert_eq!(v["sysctl_d"]["overridden_by"].as_array().map(Vec::len), Some(1), "{v}");
    let book = run("ansible");
    assert!(
        book.contains("tcptune_sysctl_file: \"/etc/sysctl.d/70-tcptune.conf\""),
        "{book}"
    );
    // TuneD reapplies /etc/sysctl.d after its profile: both files win over it.
    let tuned = run("tuned");
    assert_eq!(
        tuned
            .lines()
            .filter(|l| l.starts_with("# warning: ") && l.contains("reapply_sysctl"))
            .count(),
        2,
        "{tuned}"
    );
    // --output a sysctl.d directory: the numbered drop-in is written there.
    tcptune()
        .args(["advise", "--format", "sysctl", "--persist-root"])
        .arg(root.path())
        .arg("--output")
        .arg(&d)
        .args(PATH)
        .assert()
        .success()
        .stderr(predicate::str::contains("70-tcptune.conf"));
    let kept = std::fs::read_to_string(d.join("70-tcptune.conf")).expect("the drop-in");
    assert!(kept.contains("\nnet.ipv4.tcp_rmem = "), "{kept}");
    // Again: the drop-in it wrote is replaced, not refused.
    tcptune()
        .args(["advise", "--format", "sysctl", "--persist-root"])
        .arg(root.path())
        .arg("--output")
        .arg(&d)
        .args(PATH)
        .assert()
        .success()
        .stderr(predicate::str::contains("70-tcptune.conf"));
    // Other formats want a file name, and say so before measuring anything.
    tcptune()
        .args(["advise", "--format", "ansible", "--output"])
        .arg(&d)
        .args(PATH)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("a directory; name the file"));
}
