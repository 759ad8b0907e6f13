//! The hosts of an Ansible inventory, for `tcptune mesh`: the INI form, and the JSON that
//! `ansible-inventory -i FILE --list` prints for any inventory (YAML, dynamic). Read of each
//! host: its name, and the connection variables ssh needs (`ansible_host`, `ansible_port`,
//! `ansible_user`); host patterns (`web[01:50]`) and other variables are not read.

use std::collections::{BTreeMap, BTreeSet};

use crate::error::Error;
use crate::text;

/// One host of the inventory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    /// The inventory's name for it.
    pub name: String,
    pub address: Option<String>,
    pub port: Option<u16>,
    pub user: Option<String>,
}

impl Host {
    /// The destination ssh takes: the name, or `[user@]address` (`ssh://[user@]address:port`
    /// with a port).
    pub fn dest(&self) -> String {
        let host = self.address.clone().unwrap_or_else(|| self.name.clone());
        let user = self.user.as_ref().map(|u| format!("{u}@")).unwrap_or_default();
        match self.port {
            Some(p) if host.contains(':') => format!("ssh://{user}[{host}]:{p}"),
            Some(p) => format!("ssh://{user}{host}:{p}"),
            None if self.user.is_none() && self.address.is_none() => host,
            None => format!("{user}{host}"),
        }
    }
}

/// Most hosts read from one inventory: a mesh of n hosts measures n × (n − 1) pairs.
pub const MAX_HOSTS: usize = 256;

/// The largest inventory read, bytes.
pub const MAX_FILE: u64 = 1 << 20;

/// The text of the inventory `path`: a regular file of at most [`MAX_FILE`] bytes (a FIFO,
/// a device or a directory is refused before it is opened for reading, so nothing blocks).
pub fn read_file(path: &std::path::Path) -> Result<String, Error> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let what = |why: String| Error::usage(format!("--inventory {}: {why}", path.display()));
    let meta = std::fs::metadata(path).map_err(|e| what(e.to_string()))?;
    if !meta.is_file() {
        return Err(what("not a regular file".to_string()));
    }
    // O_NONBLOCK: a FIFO swapped in after the check does not block the open.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| what(e.to_string()))?;
    let meta = file.metadata().map_err(|e| what(e.to_string()))?;
    if !meta.is_file() {
        return Err(what("not a regular file".to_string()));
    }
    if meta.len() > MAX_FILE {
        return Err(what(format!("over {} MiB: no inventory tcptune reads", MAX_FILE >> 20)));
    }
    let mut text = String::new();
    file.take(MAX_FILE + 1)
        .read_to_string(&mut text)
        .map_err(|e| what(e.to_string()))?;
    if text.len() as u64 > MAX_FILE {
        return Err(what(format!("over {} MiB: no inventory tcptune reads", MAX_FILE >> 20)));
    }
    Ok(text)
}

/// The hosts of the inventory `file` (of `group` when given), as (name, ssh destination).
pub fn hosts_in(file: &std::path::Path, group: Option<&str>) -> Result<Vec<(String, String)>, Error> {
    let body = read_file(file)?;
    let hosts = read(&body, &file.display().to_string(), group)?;
    Ok(hosts.iter().map(|h| (h.name.clone(), h.dest())).collect())
}

/// `--site-groups`: each group of `list` (names split at commas) in the inventory `file`, with
/// its hosts' names.
pub fn groups_in(file: &std::path::Path, list: &str) -> Result<Vec<(String, Vec<String>)>, Error> {
    let body = read_file(file)?;
    let origin = file.display().to_string();
    let mut out = Vec::new();
    for g in list.split(',').map(str::trim).filter(|g| !g.is_empty()) {
        let hosts = read(&body, &origin, Some(g))?;
        out.push((g.to_string(), hosts.into_iter().map(|h| h.name).collect()));
    }
    Ok(out)
}

/// The hosts of `text` (`origin` names it in errors), in the order they first appear, only
/// those of `group` (and its children) when given.
pub fn read(text: &str, origin: &str, group: Option<&str>) -> Result<Vec<Host>, Error> {
    // A UTF-8 byte-order mark, as some editors write one, is no part of the first name.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let start = text.trim_start();
    let inv = if start.starts_with('{') {
        from_json(text, origin)?
    } else if start.starts_with('[') && serde_json::from_str::<serde_json::Value>(text).is_ok() {
        return Err(Error::usage(format!(
            "{origin}: a JSON array is no inventory: give the object `ansible-inventory -i FILE --list` prints"
        )));
    } else {
        from_ini(text, origin)?
    };
    let wanted: Option<BTreeSet<String>> = group
        .map(|g| {
            if !inv.groups.contains_key(g) && g != "all" {
                return Err(Error::usage(format!(
                    "--group {}: {origin} has no such group",
                    text::escape(g)
                )));
            }
            Ok(inv.members(g))
        })
        .transpose()?;
    let hosts: Vec<Host> = inv
        .order
        .iter()
        .filter(|n| wanted.as_ref().is_none_or(|w| w.contains(*n)))
        .map(|n| inv.hosts[n].clone())
        .collect();
    if hosts.len() > MAX_HOSTS {
        return Err(Error::usage(format!("{origin}: more than {MAX_HOSTS} hosts")));
    }
    for h in &hosts {
        check_word(&h.name, origin)?;
        for w in [&h.address, &h.user].into_iter().flatten() {
            check_word(w, origin)?;
        }
    }
    Ok(hosts)
}

/// A name, address or user ssh takes as one plain word.
fn check_word(w: &str, origin: &str) -> Result<(), Error> {
    let ok = !w.is_empty()
        && w.len() <= 255
        && !w.starts_with('-')
        && w.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b':'));
    if ok {
        Ok(())
    } else {
        Err(Error::usage(format!(
            "{origin}: \"{}\" is no host name, address or user tcptune passes to ssh",
            text::escape(w)
        )))
    }
}

#[derive(Debug, Default)]
struct Inventory {
    hosts: BTreeMap<String, Host>,
    order: Vec<String>,
    /// Group → (its hosts, its children).
    groups: BTreeMap<String, (Vec<String>, Vec<String>)>,
}

impl Inventory {
    fn host(&mut self, name: &str) -> &mut Host {
        if !self.hosts.contains_key(name) {
            self.order.push(name.to_string());
        }
        self.hosts.entry(name.to_string()).or_insert_with(|| Host {
            name: name.to_string(),
            address: None,
            port: None,
            user: None,
        })
    }

    fn members(&self, group: &str) -> BTreeSet<String> {
        if group == "all" {
            return self.order.iter().cloned().collect();
        }
        let mut out = BTreeSet::new();
        let mut todo = vec![group.to_string()];
        let mut seen = BTreeSet::new();
        while let Some(g) = todo.pop() {
            if !seen.insert(g.clone()) {
                continue;
            }
            if let Some((hosts, children)) = self.groups.get(&g) {
                out.extend(hosts.iter().cloned());
                todo.extend(children.iter().cloned());
            }
        }
        out
    }

    fn set(&mut self, name: &str, var: &str, value: &str, origin: &str) -> Result<(), Error> {
        let value = value.trim().trim_matches(|c| c == '"' || c == '\'').to_string();
        let h = self.host(name);
        match var {
            "ansible_host" | "ansible_ssh_host" => h.address = Some(value),
            "ansible_user" | "ansible_ssh_user" => h.user = Some(value),
            "ansible_port" | "ansible_ssh_port" => {
                h.port = Some(value.parse().ok().filter(|p| *p > 0).ok_or_else(|| {
                    Error::usage(format!(
                        "{origin}: {}'s ansible_port \"{}\" is no port",
                        text::escape(name),
                        text::escape(&value)
                    ))
                })?);
            }
            _ => {}
        }
        Ok(())
    }
}

/// The INI form: `[group]` sections of host lines (`name var=value ...`), `[group:children]`
/// sections of group names, `[group:vars]` (not read); hosts before any section are ungrouped.
fn from_ini(text: &str, origin: &str) -> Result<Inventory, Error> {
    let mut inv = Inventory::default();
    let mut section = ("ungrouped".to_string(), "hosts");
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = match name.split_once(':') {
                Some((g, "children")) => (g.to_string(), "children"),
                Some((g, "vars")) => (g.to_string(), "vars"),
                Some(_) => {
                    return Err(Error::usage(format!(
                        "{origin}:{}: a section tcptune does not read: [{}]",
                        i + 1,
                        text::escape(name)
                    )));
                }
                None => (name.to_string(), "hosts"),
            };
            inv.groups.entry(section.0.clone()).or_default();
            continue;
        }
        match section.1 {
            "vars" => {}
            "children" => {
                let g = line.split_whitespace().next().unwrap_or_default().to_string();
                inv.groups.entry(section.0.clone()).or_default().1.push(g);
            }
            _ => {
                let mut words = line.split_whitespace();
                let name = words.next().unwrap_or_default();
                if name.contains('[') {
                    return Err(Error::usage(format!(
                        "{origin}:{}: host patterns ({}) are not read: list the hosts, or give the JSON of \
                         `ansible-inventory --list`",
                        i + 1,
                        text::escape(name)
                    )));
                }
                inv.host(name);
                for w in words {
                    if let Some((var, value)) = w.split_once('=') {
                        inv.set(name, var, value, origin)?;
                    }
                }
                inv.groups
                    .entry(section.0.clone())
                    .or_default()
                    .0
                    .push(name.to_string());
            }
        }
    }
    Ok(inv)
}

/// The JSON of `ansible-inventory --list`: `_meta.hostvars`, and each group's `hosts` and
/// `children`.
fn from_json(text: &str, origin: &str) -> Result<Inventory, Error> {
    let v: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| Error::usage(format!("{origin}: not the JSON of ansible-inventory --list: {e}")))?;
    let obj = v
        .as_object()
        .ok_or_else(|| Error::usage(format!("{origin}: not the JSON of ansible-inventory --list")))?;
    let mut inv = Inventory::default();
    let strings = |x: Option<&serde_json::Value>| -> Vec<String> {
        x.and_then(|a| a.as_array())
            .map(|a| a.iter().filter_map(|s| s.as_str().map(String::from)).collect())
            .unwrap_or_default()
    };
    for (group, body) in obj.iter().filter(|(g, _)| *g != "_meta") {
        let hosts = strings(body.get("hosts"));
        for h in &hosts {
            inv.host(h);
        }
        inv.groups.insert(group.clone(), (hosts, strings(body.get("children"))));
    }
    if let Some(vars) = v.pointer("/_meta/hostvars").and_then(|h| h.as_object()) {
        for (name, hv) in vars {
            inv.host(name);
            for var in ["ansible_host", "ansible_port", "ansible_user"] {
                let value = match hv.get(var) {
                    Some(serde_json::Value::String(s)) => s.clone(),
                    Some(serde_json::Value::Number(n)) => n.to_string(),
                    _ => continue,
                };
                inv.set(name, var, &value, origin)?;
            }
        }
    }
    Ok(inv)
}

#[cfg(test)]
mod tests {
    use super::*;

    const INI: &str = "\
# the lab
lonely
[dtn]
h1 ansible_host=198.18.10.1 ansible_port=2222 ansible_user=root
h2 ansible_host=198.18.10.2
[archive]
h3
[sites:children]
dtn
[dtn:vars]
ansible_ssh_common_args='-F cfg'
";

    #[test]
    fn an_ini_inventory_gives_its_hosts_and_how_to_reach_them() {
        let all = read(INI, "inv.ini", None).expect("read");
        let names: Vec<&str> = all.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names, ["lonely", "h1", "h2", "h3"]);
        assert_eq!(all[1].dest(), "ssh://root@198.18.10.1:2222");
        assert_eq!(all[2].dest(), "198.18.10.2");
        assert_eq!(all[3].dest(), "h3");
        let sites = read(INI, "inv.ini", Some("sites")).expect("group");
        assert_eq!(sites.iter().map(|h| h.name.as_str()).collect::<Vec<_>>(), ["h1", "h2"]);
        assert!(read(INI, "inv.ini", Some("nope")).is_err());
    }

    #[test]
    fn the_json_of_ansible_inventory_list_is_read() {
        let json = r#"{"_meta": {"hostvars": {"h1": {"ansible_host": "198.18.10.1", "ansible_port": 2222}}},
            "all": {"children": ["ungrouped", "mesh"]}, "mesh": {"hosts": ["h1", "h2"]}}"#;
        let hosts = read(json, "inv.json", Some("all")).expect("read");
        assert_eq!(hosts.len(), 2);
        assert_eq!(
            hosts.iter().find(|h| h.name == "h1").map(Host::dest).as_deref(),
            Some("ssh://198.18.10.1:2222")
        );
    }

    #[test]
    fn a_hostile_inventory_is_refused_not_passed_to_ssh() {
        for bad in [
            "h1 ansible_host=-oProxyCommand=id",
            "h1 ansible_host=a;id",
            "h1 ansible_user=$(id)",
            "h1 ansible_port=99999",
            "web[01:50]",
            "[x:y]",
        ] {
            assert!(read(bad, "inv.ini", None).is_err(), "{bad}");
        }
        assert!(read("{not json", "inv.json", None).is_err());
    }
}
