//! Real-kernel tests in network namespaces this test creates (root only; CI runs as root).
//! Nothing here touches the host namespace's own values.

use std::process::Command as Std;

use assert_cmd::cargo::cargo_bin;

/// A network namespace that is deleted when dropped.
pub struct Netns {
    pub name: String,
}

impl Netns {
    pub fn new(tag: &str) -> Self {
        assert!(
            // SAFETY: geteuid has no preconditions and cannot fail.
            unsafe { libc_geteuid() } == 0,
            "netns tests need root (CI runs them as root)"
        );
        let name = format!("tt-{tag}-{}", std::process::id());
        // A namespace left by an earlier run; usually there is none (and nothing to say).
        let _ = Std::new("ip")
            .args(["netns", "del", &name])
            .stderr(std::process::Stdio::null())
            .status();
        let ok = Std::new("ip").args(["netns", "add", &name]).status().expect("ip");
        assert!(ok.success(), "ip netns add {name}");
        Self { name }
    }

    /// Run a program inside the namespace.
    pub fn exec(&self, program: &str, args: &[&str]) -> std::process::Output {
        Std::new("ip")
            .args(["netns", "exec", &self.name, program])
            .args(args)
            .output()
            .expect("ip netns exec")
    }

    pub fn sysctl(&self, key: &str) -> String {
        let out = self.exec("sysctl", &["-n", key]);
        assert!(out.status.success(), "sysctl -n {key}");
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Std::new("ip").args(["netns", "del", &self.name]).status();
    }
}

unsafe extern "C" {
    #[link_name = "geteuid"]
    fn libc_geteuid() -> u32;
}

fn host_value(key: &str) -> String {
    let path = format!("/proc/sys/{}", key.replace('.', "/"));
    std::fs::read_to_string(path)
        .expect("read")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn advice_from_inside_a_netns_is_accepted_by_sysctl_p() {
    let ns = Netns::new("sysctlp");
    let bin = cargo_bin("tcptune");
    let bin = bin.to_str().expect("utf8 path");
    let host_rmem = host_value("net.ipv4.tcp_rmem");
    // Start from the stock maxima so the advice has something to raise.
    ns.exec(
        "sysctl",
        &[
            "-w",
            "net.ipv4.tcp_rmem=4096 131072 6291456",
            "net.ipv4.tcp_wmem=4096 16384 4194304",
        ],
    );

    let out = ns.exec(
        bin,
        &[
            "advise",
            "--clean-path",
            "--rtt",
            "150ms",
            "--bandwidth",
            "500mbit",
            "--format",
            "sysctl",
        ],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).expect("utf8");
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("60-tcptune.conf");
    std::fs::write(&file, &text).expect("write");

    // net.core.rmem_max is read-only in a child netns: said, not emitted.
    // net.core.rmem_max is read-only in a child netns: said (on the line of why above it), not
    // emitted.
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines
            .windows(2)
            .any(|w| w[0].contains("read-only") && w[1].starts_with("# net.core.rmem_max")),
        "{text}"
    );
    assert!(!text.lines().any(|l| l.starts_with("net.core.")), "{text}");

    let applied = ns.exec("sysctl", &["-p", file.to_str().expect("utf8")]);
    assert!(
        applied.status.success() && applied.stderr.is_empty(),
        "sysctl -p rejected a line:\n{}\n{text}",
        String::from_utf8_lossy(&applied.stderr)
    );
    assert_eq!(ns.sysctl("net.ipv4.tcp_rmem"), "4096 131072 20643840");
    assert_eq!(ns.sysctl("net.ipv4.tcp_wmem"), "4096 16384 23396352");
    assert_eq!(ns.sysctl("net.ipv4.tcp_slow_start_after_idle"), "0");
    // The host's own value is untouched.
    assert_eq!(host_value("net.ipv4.tcp_rmem"), host_rmem);

    // Now the running values cover the path: advice is "no change".
    let out = ns.exec(
        bin,
        &[
            "advise",
            "--clean-path",
            "--rtt",
            "150ms",
            "--bandwidth",
            "500mbit",
            "--format",
            "json",
        ],
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["changes"], 0, "{v:#}");
}

/// Issue 30, finding 1: `advise --sysctl-dir EMPTY_DIR --os linux --rtt 1ms --bandwidth
/// 50mbit` exited 2; its advice renders, and `sysctl -p` in a fresh namespace takes every
/// line of it (and of the same advice against the namespace's own values).
#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn short_path_advice_with_no_running_values_is_accepted_by_sysctl_p() {
    let ns = Netns::new("shortp");
    let bin = cargo_bin("tcptune");
    let bin = bin.to_str().expect("utf8 path");
    let empty = tempfile::tempdir().expect("tempdir");
    let dir = empty.path().to_str().expect("utf8 path");
    let file = tempfile::NamedTempFile::new().expect("tmp");
    let path = file.path().to_str().expect("utf8 path");
    for args in [
        &["--sysctl-dir", dir, "--os", "linux"][..],
        &["--os", "linux"][..],
        &["--os", "linux", "--allow-lower"][..],
    ] {
        let out = ns.exec(
            bin,
            &[
                &["advise", "--rtt", "1ms", "--bandwidth", "50mbit", "--format", "sysctl"][..],
                args,
            ]
            .concat(),
        );
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains("net.ipv4.tcp_rmem = "), "{args:?}: {text}");
        std::fs::write(path, &text).expect("write");
        let loaded = ns.exec("sysctl", &["-p", path]);
        assert!(
            loaded.status.success() && loaded.stderr.is_empty(),
            "{args:?}: sysctl -p refused: {}\n{text}",
            String::from_utf8_lossy(&loaded.stderr)
        );
    }
}
