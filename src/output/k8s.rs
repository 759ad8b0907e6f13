//! `advise --format k8s`: a Pod manifest whose `spec.securityContext.sysctls` carries the
//! advice's keys a pod may set, with the others listed in comments: namespaced keys the
//! kubelet must allow (`--allowed-unsafe-sysctls`), and node-wide keys, which no pod can
//! change. [`crate::fleet::k8s`] decides which is which.

use std::io::Write;

use crate::advice::Advice;
use crate::fleet::k8s::{self, Scope};
use crate::fleet::{self, Entry};

use super::yaml_quoted as quoted;

/// The manifest. `allowed_unsafe` is the kubelet's `--allowed-unsafe-sysctls` list as the
/// user gave it: unsafe keys it matches go into the pod, the rest stay comments.
pub fn write(
    out: &mut dyn Write,
    a: &Advice,
    entries: &[Entry],
    allowed_unsafe: &k8s::Allowlist,
) -> anyhow::Result<()> {
    let c = crate::text::comment;
    super::advice::header(out, a)?;
    let scoped: Vec<(&Entry, Scope)> = entries.iter().map(|e| (e, k8s::scope(&e.key))).collect();
    let in_pod = |e: &Entry, s: &Scope| {
        e.is_set()
            && match s {
                Scope::Safe { .. } => true,
                Scope::Unsafe => allowed_unsafe.allows(&e.key),
                Scope::Node => false,
            }
    };
    writeln!(out, "#")?;
    writeln!(
        out,
        "# Kubernetes: a pod's network namespace takes the sysctls in spec.securityContext.sysctls below;"
    )?;
    writeln!(
        out,
        "# copy that list into your own pod template (Deployment, StatefulSet, Job) and replace the container."
    )?;
    let safe: Vec<String> = scoped
        .iter()
        .filter_map(|(e, s)| match s {
            Scope::Safe { since, kernel } if e.is_set() => {
                Some(format!("{} (Kubernetes >= {since}, node kernel >= {kernel})", e.key))
            }
            _ => None,
        })
        .collect();
    if !safe.is_empty() {
        writeln!(out, "# Safe sysctls, allowed in every pod: {}", safe.join(", "))?;
    }
    let unsafe_: Vec<&(&Entry, Scope)> = scoped
        .iter()
        .filter(|(e, s)| *s == Scope::Unsafe && e.is_set())
        .collect();
    if !unsafe_.is_empty() {
        let keys: Vec<&str> = unsafe_.iter().map(|(e, _)| e.key.as_str()).collect();
        writeln!(
            out,
            "# Unsafe (namespaced, but Kubernetes does not call them isolated): the node's kubelet must run with"
        )?;
        writeln!(out, "#   --allowed-unsafe-sysctls={}", keys.join(","))?;
        writeln!(
            out,
            "# and the namespace's Pod Security level must admit them (baseline does not: use privileged)."
        )?;
        for (e, _) in &unsafe_ {
            let state = if allowed_unsafe.allows(&e.key) {
                "in the pod below: you said the kubelet allows it"
            } else {
                "left out of the pod: pass tcptune --allowed-unsafe-sysctls with the kubelet's list to add it"
            };
            writeln!(out, "#   {} = {}  ({state})", e.key, e.value)?;
        }
    }
    let node: Vec<&(&Entry, Scope)> = scoped.iter().filter(|(_, s)| *s == Scope::Node).collect();
    if !node.is_empty() {
        writeln!(
            out,
            "# Set on the node (node-wide: a pod's network namespace cannot change them), e.g. with tcptune apply"
        )?;
        writeln!(
            out,
            "# on each node, or --format ansible or --format tuned for the node pool:"
        )?;
        for (e, _) in &node {
            writeln!(out, "#   {} = {}  ({})", e.key, e.value, c(&e.reason))?;
        }
    }
    for (e, s) in &scoped {
        if *s != Scope::Node
            && let Some(why) = &e.left_out
        {
            writeln!(out, "# left out: {} = {}: {}", e.key, e.value, c(why))?;
        }
    }
    writeln!(out, "apiVersion: v1")?;
    writeln!(out, "kind: Pod")?;
    writeln!(out, "metadata:")?;
    writeln!(out, "  name: tcptune-transfer")?;
    writeln!(out, "  annotations:")?;
    writeln!(out, "    tcptune/advice: {}", quoted(&fleet::title(a)))?;
    writeln!(out, "spec:")?;
    writeln!(out, "  securityContext:")?;
    let pod: Vec<&(&Entry, Scope)> = scoped.iter().filter(|(e, s)| in_pod(e, s)).collect();
    if pod.is_empty() {
        writeln!(out, "    sysctls: []")?;
    } else {
        writeln!(out, "    sysctls:")?;
    }
    for (e, s) in pod {
        writeln!(out, "      # {}", c(&e.reason))?;
        if *s == Scope::Unsafe {
            writeln!(
                out,
                "      # unsafe: the kubelet must allow it (--allowed-unsafe-sysctls)"
            )?;
        }
        writeln!(out, "      - name: {}", quoted(&e.key))?;
        writeln!(out, "        value: {}", quoted(&e.value))?;
    }
    writeln!(out, "  containers:")?;
    writeln!(
        out,
        "    # replace with your transfer workload; this one only keeps the pod up to look at its sysctls"
    )?;
    writeln!(out, "    - name: transfer")?;
    writeln!(out, "      image: busybox:stable")?;
    writeln!(out, "      command: [\"sleep\", \"infinity\"]")?;
    Ok(())
}
