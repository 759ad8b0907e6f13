//! `tcptune man`: the manual page, section 8 (an administration tool), generated from the clap
//! definitions so it cannot lag behind the options.
//!
//! One page for the whole tool, like rg(1) and fd(1): every command with its synopsis and
//! options under COMMANDS, then units, exit status, environment, files, profiles and examples.
//! clap_mangen renders the pieces it knows (title, synopsis, options); the prose sections are
//! templates here ([`SECTIONS`] says their language). The page carries no date, so the same source always gives the same bytes (the
//! packaged assets/tcptune.8 is this output, kept in sync by a snapshot test).

use std::io::Write;
use std::process::ExitCode;

use clap::CommandFactory as _;
use clap_mangen::Man;
use clap_mangen::roff::{Inline, Roff, bold, italic, roman};

use crate::cli::Cli;
use crate::profile::FACTS;

pub fn run(out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    out.write_all(render().as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// The whole page as roff source.
pub fn render() -> String {
    let mut root = Cli::command().disable_help_subcommand(true);
    root.build();
    let man = Man::new(root.clone()).section("8");

    let mut page = String::from(PREAMBLE);
    // Written by hand: clap_mangen leaves an empty date unquoted, which shifts the footer and
    // drops the manual name. The date stays empty so the page is reproducible.
    page += &format!(
        ".TH TCPTUNE 8 \"\" \"tcptune {}\" \"System Administration\"\n",
        env!("CARGO_PKG_VERSION")
    );
    page += &piece(|w| man.render_name_section(w));
    page += &piece(|w| man.render_synopsis_section(w));
    page += &prose(|r| template(r, DESCRIPTION));
    page += &piece(|w| man.render_options_section(w));
    page += &prose(|r| template(r, BEFORE_COMMANDS));
    for sub in root.get_subcommands().filter(|s| !s.is_hide_set()) {
        page += &command_section(sub);
    }
    page += &prose(|r| template(r, SECTIONS));
    page += &piece(|w| man.render_version_section(w));
    // Plain troff (no preconv) takes ASCII only: the multiplication sign has a roff name.
    page.replace('\u{d7}', "\\(mu")
}

/// Roff's apostrophe preamble, written once at the top; `piece` strips the copy each render adds.
const PREAMBLE: &str = ".ie \\n(.g .ds Aq \\(aq\n.el .ds Aq '\n";

fn piece(f: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> String {
    let mut buf = Vec::new();
    // Rendering into a Vec cannot fail.
    let _ = f(&mut buf);
    let s = String::from_utf8_lossy(&buf).into_owned();
    s.strip_prefix(PREAMBLE).map(str::to_string).unwrap_or(s)
}

fn prose(f: impl FnOnce(&mut Roff)) -> String {
    let mut r = Roff::new();
    f(&mut r);
    piece(|w| r.to_writer(w))
}

/// One command: `.SS tcptune NAME`, what it does, its synopsis and its options; nested
/// commands follow.
fn command_section(cmd: &clap::Command) -> String {
    let name = cmd.get_bin_name().unwrap_or_else(|| cmd.get_name()).to_string();
    let own = cmd.clone().mut_args(|a| {
        // -h is listed once, under OPTIONS.
        if a.get_id() == "help" { a.hide(true) } else { a }
    });
    let man = Man::new(own);
    let mut s = prose(|r| {
        r.control("SS", [name.as_str()]);
        if let Some(about) = cmd.get_long_about().or_else(|| cmd.get_about()) {
            r.text([roman(about.to_string())]);
        }
    });
    s += ".PP\n";
    s += &strip_heading(&piece(|w| man.render_synopsis_section(w)));
    let options = strip_heading(&piece(|w| man.render_options_section(w)));
    if options.contains(".TP") {
        s += &options;
    }
    if let Some(after) = cmd.get_after_long_help().or_else(|| cmd.get_after_help()) {
        s += &prose(|r| {
            r.control("PP", []);
            for line in after.to_string().lines() {
                r.text([roman(line)]);
                r.control("br", []);
            }
        });
    }
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        s += &command_section(sub);
    }
    s
}

/// Drop the `.SH` line clap_mangen puts before a section's body.
fn strip_heading(s: &str) -> String {
    s.lines()
        .filter(|l| !l.starts_with(".SH "))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// After OPTIONS: where each command's go, and the heading of the commands that follow.
const BEFORE_COMMANDS: &str = "\
.PP
Each command takes the options listed under it. --os, --format, --sysctl-dir, --sysctl-cmd and \
--state-dir may also come before the command, e.g. tcptune --os freebsd advise ...; a command ignores \
those of them it does not take there.
.SH COMMANDS
";

/// DESCRIPTION, in the template language of [`SECTIONS`].
const DESCRIPTION: &str = "\
.SH DESCRIPTION
tcptune tells you which kernel settings to change so that one TCP flow fills a long, fast path, and why. \
On such a path TCP is usually limited not by the link but by its window: the kernel's buffer maxima are \
smaller than the bandwidth-delay product (BDP), the bytes in flight that fill the path.
.PP
tcptune measures the path (advise --host: ICMP echo, else TCP connect timing, and the egress link), or takes \
it from you (--rtt, --bandwidth), computes BDP = rate / 8 \u{d7} RTT, sizes the buffers (receiver 2 \u{d7} BDP \
plus RTT headroom, sender 2.5 \u{d7} BDP, in 64 KiB steps), compares them with the running values and prints \
the advice as a table, JSON, sysctl -w commands, or a file that /etc/sysctl.d (Linux) or /etc/sysctl.conf \
(FreeBSD, macOS) accepts as it is. It never lowers a running value unless told to (--allow-lower).
.PP
calc, advise, profiles, man and completions only read. tcptune never reads or writes a key outside the \
networking trees of sysctl (Linux net.*; FreeBSD and macOS kern.ipc.*, net.inet.*, net.inet6.*).
";

/// The sections after COMMANDS, as a template: a line of text (a `\` at the end of a source
/// line continues it) or a request: `.TP B TERM` (bold) or `.TP I TERM` (italic) an entry whose
/// text is the next line; `.rows units`, `.rows exit-status`, `.rows facts` entries made from
/// the code's own tables ([`crate::units::MEANINGS`], [`crate::error::exit::MEANINGS`],
/// [`FACTS`]); any other (`.SH NAME`, `.PP`) goes to roff as it is, with its one argument.
const SECTIONS: &str = "\
.SH UNITS
.rows units
.SH EXIT STATUS
.rows exit-status
.PP
An error is one line on standard error, tcptune: followed by what went wrong, often with a second line, \
hint: followed by what to do about it.
.SH ENVIRONMENT
.TP B NO_COLOR
Set to anything non-empty: no colour or bold, even on a terminal (no-color.org).
.SH FILES
.TP I /etc/sysctl.d/60-tcptune.conf
Linux: where the advice is meant to go (advise ... | sudo tee it, then sudo sysctl -p it). The number is chosen \
against what is installed: advise's \"# save as\" line and apply --persist use a later one (up to 99) when an \
installed sysctl.d file that sets the same keys would be read after 60, and warn of any file that still \
overrides it.
.TP I /etc/sysctl.conf
FreeBSD and macOS: where runtime settings persist.
.TP I /boot/loader.conf
FreeBSD boot-time tunables; advise prints them as comments naming this file.
.TP I /usr/share/tcptune/profiles/
The shipped profiles (linux.toml, freebsd.toml, macos.toml), as installed by the Debian package. \
The same profiles are built into the binary: tcptune profiles show NAME prints them.
.TP I /var/lib/tcptune/
Snapshots of prior values (--state-dir).
.SH PROFILES
The sizing rules are data: a profile is a TOML file with name, os, description, optional [caps] and [stock] \
tables, and one [[setting]] per key with key, value, reason and optionally label, why (the reason in one short \
clause, for the setting's comment line), shown (text, size, max-size or switch: how its old and new values read), \
policy (at-least or exact), when, stage (runtime or boot) and note. value, reason, why and when hold {expression} holes: \
+ - * /, comparisons, \
&& || !, min, max, ceil, floor, round_up(x, m), cur(i) (field i of the running value) and these facts:
.rows facts
.PP
Start from a shipped one (tcptune profiles export linux > my.toml), edit it, and pass --profile my.toml. \
A mistake is reported with the file, the line and the field.
.SH EXAMPLES
.TP B tcptune calc --bandwidth 1gbit --rtt 25ms
What a path needs: its BDP and the buffer tcptune would size for it.
.TP B tcptune advise --host HOST
Measure the path to HOST and show what to change on this machine, and why.
.TP B tcptune advise --host HOST | sudo tee /etc/sysctl.d/60-tcptune.conf
Write the advice as a sysctl.d file (piped, advise prints sysctl format); review it, then load it with \
sudo sysctl -p /etc/sysctl.d/60-tcptune.conf.
.TP B tcptune advise --ssh HOST
Measure the path with TCP both ways through your own ssh login to HOST (nothing left behind there), and \
advise both ends; --side far prints the far end's file alone.
.TP B tcptune advise --rtt 150ms --bandwidth 500mbit
The same for a path you know, without probing.
.TP B sudo tcptune apply --scope path --host HOST --rtt 150ms --bandwidth 500mbit
The congestion control for the path to HOST only, as a host route with congctl (Linux 4.0+); every other \
destination keeps the host-wide default. sudo tcptune revert deletes exactly that route. The route ends at \
reboot: --format networkd writes the drop-in that keeps it.
.TP B tcptune advise --os freebsd --rtt 150ms --bandwidth 500mbit
Advice for another OS (freebsd, macos), against its stock values.
.TP B tcptune advise --host HOST --format ansible > tcptune.yml
An Ansible playbook (ansible.posix.sysctl) for a pool of hosts; ansible-playbook tcptune.yml --tags revert \
puts back what each host ran before.
.TP B sudo tcptune advise --host HOST --format tuned --output /etc/tuned/tcptune
A TuneD profile; activate it with tuned-adm profile tcptune. Files in /etc/sysctl.d that set the same keys \
win over it (TuneD's reapply_sysctl) and are named.
.TP B tcptune advise --host HOST --format k8s > pod.yaml
A Pod with the sysctls a pod may set (tcp_rmem, tcp_wmem: Kubernetes 1.32); node-wide keys listed to set \
on the nodes; --allowed-unsafe-sysctls LIST adds the unsafe ones your kubelet allows.
.TP B tcptune profiles export linux > my.toml
A starting point for your own rules; then tcptune advise --profile my.toml ...
.TP B tcptune completions bash > ~/.local/share/bash-completion/completions/tcptune
Install completions for yourself (also zsh, fish, elvish, powershell; the Debian package installs bash, zsh \
and fish completions system-wide).
.SH SEE ALSO
sysctl(8), sysctl.d(5), sysctl.conf(5), tcp(7), ip(8), ping(8), loader.conf(5); \
Linux Documentation/networking/ip-sysctl.rst.
";

/// Render a template (the language of [`SECTIONS`]) through `r`, which escapes the text.
fn template(r: &mut Roff, text: &str) {
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        match line.split_once(' ').unwrap_or((line, "")) {
            (".TP", term) => {
                let head = match term.split_once(' ') {
                    Some(("B", t)) => bold(t),
                    Some(("I", t)) => italic(t),
                    _ => roman(term),
                };
                tp(r, head, lines.next().unwrap_or_default());
            }
            (".rows", "units") => units(r),
            (".rows", "exit-status") => exit_status(r),
            (".rows", "facts") => {
                for (fact, what) in FACTS {
                    tp(r, bold(*fact), what);
                }
            }
            (request, arg) if request.starts_with('.') => {
                r.control(&request[1..], (!arg.is_empty()).then_some(arg));
            }
            _ => {
                r.text([roman(line)]);
            }
        }
    }
}

/// A tagged paragraph: `head` on its own line, `body` indented below it.
fn tp(r: &mut Roff, head: Inline, body: &str) {
    r.control("TP", []);
    r.text([head]);
    r.text([roman(body)]);
}

/// One entry per unit; what the output uses is a paragraph of its own.
fn units(r: &mut Roff) {
    for (what, means) in crate::units::MEANINGS {
        if *what == "output" {
            r.control("PP", []);
            r.text([roman(format!("Output: {means}"))]);
        } else {
            tp(r, italic(*what), means);
        }
    }
}

/// One entry per exit code, its meaning as a sentence.
fn exit_status(r: &mut Roff) {
    for (code, means) in crate::error::exit::MEANINGS {
        let mut m = means.to_string();
        if let Some(first) = m.get_mut(..1) {
            first.make_ascii_uppercase();
        }
        tp(r, bold(code.to_string()), &format!("{m}."));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_has_every_command_and_no_date() {
        let page = render();
        assert!(page.starts_with(PREAMBLE));
        assert_eq!(page.matches(PREAMBLE).count(), 1, "one preamble");
        assert!(page.is_ascii(), "troff without preconv reads ASCII only");
        assert!(
            page.contains(".TH TCPTUNE 8 \"\" \"tcptune "),
            "section 8, empty date: {}",
            &page[..200]
        );
        for sub in Cli::command().get_subcommands().filter(|s| !s.is_hide_set()) {
            assert!(
                page.contains(&format!(".SS \"tcptune {}", sub.get_name())),
                "{} missing",
                sub.get_name()
            );
        }
        for fact in FACTS {
            assert!(page.contains(&format!("\\fB{}\\fR", fact.0)), "{}", fact.0);
        }
        // A `.rows` the template language does not know would reach the page as a request.
        assert!(!page.contains(".rows"), "unknown .rows in a template");
    }
}
