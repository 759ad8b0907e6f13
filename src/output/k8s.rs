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
    super::advice::header(out, a)?;
    let scoped: Vec<(&Entry, Scope)> = entries.iter().map(|e| (e, k8s::scope(&e.key))).collect();
    write!(
        out,
        "#
# Kubernetes: a pod's network namespace takes the sysctls in spec.securityContext.sysctls below;
# copy that list into your own pod template (Deployment, StatefulSet, Job) and replace the
# container.
"
    )?;
    safe_line(out, &scoped)?;
    unsafe_lines(out, &scoped, allowed_unsafe)?;
    node_lines(out, &scoped)?;
    for (e, s) in &scoped {
        if *s != Scope::Node
            && let Some(why) = &e.left_out
        {
            writeln!(
                out,
                "# left out: {} = {}: {}",
                e.key,
                e.value,
                crate::text::comment(why)
            )?;
        }
    }
    pod(out, a, &scoped, allowed_unsafe)?;
    Ok(())
}

/// The safe keys set, with the Kubernetes and kernel versions each needs, on one line.
fn safe_line(out: &mut dyn Write, scoped: &[(&Entry, Scope)]) -> std::io::Result<()> {
    let safe: Vec<String> = scoped
        .iter()
        .filter_map(|(e, s)| match s {
            Scope::Safe { since, kernel } if e.is_set() => {
                Some(format!("{} (Kubernetes >= {since}, node kernel >= {kernel})", e.key))
            }
            _ => None,
        })
        .collect();
    if safe.is_empty() {
        return Ok(());
    }
    writeln!(out, "# Safe sysctls, allowed in every pod: {}", safe.join(", "))
}

/// The unsafe keys set: what the kubelet and the namespace must allow, and whether each is
/// in the pod.
fn unsafe_lines(out: &mut dyn Write, scoped: &[(&Entry, Scope)], allowed: &k8s::Allowlist) -> std::io::Result<()> {
    let unsafe_: Vec<&Entry> = scoped
        .iter()
        .filter(|(e, s)| *s == Scope::Unsafe && e.is_set())
        .map(|(e, _)| *e)
        .collect();
    if unsafe_.is_empty() {
        return Ok(());
    }
    let keys: Vec<&str> = unsafe_.iter().map(|e| e.key.as_str()).collect();
    write!(
        out,
        "# Unsafe (namespaced, but Kubernetes does not call them isolated): the node's kubelet must run with
#   --allowed-unsafe-sysctls={keys}
# and the namespace's Pod Security level must admit them (baseline does not: use privileged).
",
        keys = keys.join(",")
    )?;
    for e in unsafe_ {
        let state = if allowed.allows(&e.key) {
            "in the pod below: you said the kubelet allows it"
        } else {
            "left out of the pod: pass tcptune --allowed-unsafe-sysctls with the kubelet's list to add it"
        };
        writeln!(out, "#   {} = {}  ({state})", e.key, e.value)?;
    }
    Ok(())
}

/// The node-wide keys, which no pod can set, with where to set them instead.
fn node_lines(out: &mut dyn Write, scoped: &[(&Entry, Scope)]) -> std::io::Result<()> {
    let node: Vec<&Entry> = scoped
        .iter()
        .filter(|(_, s)| *s == Scope::Node)
        .map(|(e, _)| *e)
        .collect();
    if node.is_empty() {
        return Ok(());
    }
    write!(
        out,
        "# Set on the node (node-wide: a pod's network namespace cannot change them), e.g. with tcptune apply
# on each node, or --format ansible or --format tuned for the node pool:
"
    )?;
    for e in node {
        writeln!(
            out,
            "#   {} = {}  ({})",
            e.key,
            e.value,
            crate::text::comment(&e.reason)
        )?;
    }
    Ok(())
}

/// Whether a setting goes into the pod's `securityContext.sysctls`.
fn in_pod(e: &Entry, s: &Scope, allowed: &k8s::Allowlist) -> bool {
    e.is_set()
        && match s {
            Scope::Safe { .. } => true,
            Scope::Unsafe => allowed.allows(&e.key),
            Scope::Node => false,
        }
}

/// The Pod itself: its sysctls, and a placeholder container to replace.
fn pod(out: &mut dyn Write, a: &Advice, scoped: &[(&Entry, Scope)], allowed: &k8s::Allowlist) -> std::io::Result<()> {
    let c = crate::text::comment;
    let pod: Vec<&(&Entry, Scope)> = scoped.iter().filter(|(e, s)| in_pod(e, s, allowed)).collect();
    write!(
        out,
        "apiVersion: v1
kind: Pod
metadata:
  name: tcptune-transfer
  annotations:
    tcptune/advice: {title}
spec:
  securityContext:
    sysctls:{empty}
",
        title = quoted(&fleet::title(a)),
        empty = if pod.is_empty() { " []" } else { "" }
    )?;
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
    write!(
        out,
        "  containers:
    # replace with your transfer workload; this one only keeps the pod up to look at its sysctls
    - name: transfer
      image: busybox:stable
      command: [\"sleep\", \"infinity\"]
"
    )
}
