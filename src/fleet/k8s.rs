//! Which sysctls a Kubernetes pod may set, and which belong to the node.
//!
//! * **Safe**: the kubelet's allowlist (`pkg/kubelet/sysctl/safe_sysctls.go`): namespaced and
//!   isolated, so any pod may set them. `net.ipv4.tcp_rmem` and `tcp_wmem` joined it in
//!   Kubernetes 1.32, gated on a node kernel of 4.15 or later (where they became per
//!   network namespace).
//! * **Unsafe**: per network namespace in the kernel, but not on that list: a pod may set
//!   them only where the kubelet runs with `--allowed-unsafe-sysctls` naming them.
//! * **Node**: one value for the whole node. Kubernetes files every `net.*` key under the
//!   network namespace, but the kernel does not: `net.core.rmem_max` and `wmem_max` are
//!   read-only in a child namespace, `netdev_max_backlog`, `default_qdisc` and `tcp_mem` do not
//!   exist there. A pod listing one would fail to start, so these are never put in a pod.

/// Where a key can be set in a Kubernetes cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// On the kubelet's safe list since Kubernetes `since`, with a node kernel of `kernel`.
    Safe { since: &'static str, kernel: &'static str },
    /// Per network namespace, but the kubelet must allow it.
    Unsafe,
    /// Node-wide: no pod can set it.
    Node,
}

/// The kubelet's safe sysctls: name, the Kubernetes version that made it safe, the node
/// kernel it needs there (Kubernetes drops it from the list on older kernels).
pub const SAFE: [(&str, &str, &str); 12] = [
    ("kernel.shm_rmid_forced", "1.11", "any"),
    ("net.ipv4.ip_local_port_range", "1.11", "any"),
    ("net.ipv4.tcp_syncookies", "1.11", "any"),
    ("net.ipv4.ping_group_range", "1.18", "any"),
    ("net.ipv4.ip_unprivileged_port_start", "1.22", "any"),
    ("net.ipv4.ip_local_reserved_ports", "1.27", "3.16"),
    ("net.ipv4.tcp_keepalive_time", "1.29", "4.5"),
    ("net.ipv4.tcp_fin_timeout", "1.29", "4.6"),
    ("net.ipv4.tcp_keepalive_intvl", "1.29", "4.5"),
    ("net.ipv4.tcp_keepalive_probes", "1.29", "4.5"),
    ("net.ipv4.tcp_rmem", "1.32", "4.15"),
    ("net.ipv4.tcp_wmem", "1.32", "4.15"),
];

/// `net.core` keys that are per network namespace (the rest of net.core is node-wide).
const NAMESPACED_CORE: [&str; 3] = ["net.core.somaxconn", "net.core.xfrm_", "net.core.txrehash"];

/// `net.ipv4` keys that are node-wide, or that a child namespace may only read.
const NODE_IPV4: [&str; 4] = [
    "net.ipv4.tcp_mem",
    "net.ipv4.udp_mem",
    "net.ipv4.tcp_allowed_congestion_control",
    "net.ipv4.tcp_available_congestion_control",
];

/// The scope of a Linux sysctl key.
pub fn scope(key: &str) -> Scope {
    if let Some((_, since, kernel)) = SAFE.iter().find(|(k, _, _)| *k == key) {
        return Scope::Safe { since, kernel };
    }
    if key.starts_with("net.core.") {
        return if NAMESPACED_CORE.iter().any(|p| key.starts_with(p)) {
            Scope::Unsafe
        } else {
            Scope::Node
        };
    }
    if NODE_IPV4.contains(&key) {
        return Scope::Node;
    }
    if ["net.ipv4.", "net.ipv6.", "net.unix.", "net.netfilter."]
        .iter()
        .any(|p| key.starts_with(p))
    {
        return Scope::Unsafe;
    }
    // Anything else under net. (bridge, ...) is not known to be per namespace: the node.
    Scope::Node
}

/// The kubelet's `--allowed-unsafe-sysctls` list: names, or prefixes ending in `*`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allowlist(pub Vec<String>);

impl Allowlist {
    /// Whether the list allows `key`, as the kubelet matches it.
    pub fn allows(&self, key: &str) -> bool {
        self.0.iter().any(|p| match p.strip_suffix('*') {
            Some(prefix) => key.starts_with(prefix),
            None => p == key,
        })
    }
}

/// Parses `--allowed-unsafe-sysctls`: comma-separated names or `prefix*` patterns, as the
/// kubelet takes them.
pub fn parse_patterns(s: &str) -> Result<Allowlist, String> {
    s.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| {
            let name = p.strip_suffix('*').unwrap_or(p);
            if name.contains('*') || !name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')) {
                Err(format!(
                    "\"{}\": expected sysctl names or prefixes ending in '*' (net.ipv4.tcp_congestion_control,net.ipv4.*)",
                    crate::text::comment(p)
                ))
            } else {
                Ok(p.to_string())
            }
        })
        .collect::<Result<_, _>>()
        .map(Allowlist)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_safe_since_1_32_and_their_caps_belong_to_the_node() {
        assert_eq!(
            scope("net.ipv4.tcp_rmem"),
            Scope::Safe {
                since: "1.32",
                kernel: "4.15"
            }
        );
        assert!(matches!(scope("net.ipv4.tcp_wmem"), Scope::Safe { since: "1.32", .. }));
        for node in [
            "net.core.rmem_max",
            "net.core.wmem_max",
            "net.core.netdev_max_backlog",
            "net.core.default_qdisc",
            "net.ipv4.tcp_mem",
        ] {
            assert_eq!(scope(node), Scope::Node, "{node}");
        }
        for unsafe_ in [
            "net.ipv4.tcp_congestion_control",
            "net.ipv4.tcp_notsent_lowat",
            "net.ipv4.tcp_mtu_probing",
            "net.core.somaxconn",
        ] {
            assert_eq!(scope(unsafe_), Scope::Unsafe, "{unsafe_}");
        }
    }

    #[test]
    fn kubelet_patterns_match_names_and_prefixes() {
        let p = parse_patterns("net.ipv4.tcp_congestion_control, net.ipv6.*").unwrap();
        assert!(p.allows("net.ipv4.tcp_congestion_control"));
        assert!(p.allows("net.ipv6.conf.all.mtu"));
        assert!(!p.allows("net.ipv4.tcp_notsent_lowat"));
        assert!(!Allowlist::default().allows("net.ipv4.tcp_congestion_control"));
        assert!(parse_patterns("net.*.tcp").is_err());
        assert!(parse_patterns("net.ipv4.tcp_rmem;reboot").is_err());
    }
}
