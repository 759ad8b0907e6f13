//! The manual page of `tcptune man`, section 8 (an administration tool), generated from the clap
//! definitions so it cannot lag behind the options.
//!
//! One page for the whole tool, like rg(1) and fd(1): every command with its synopsis and
//! options under COMMANDS, then units, exit status, environment, files, profiles and examples.
//! clap_mangen renders the pieces it knows (title, synopsis, options); the prose sections are
//! templates in this folder's .roff files ([`SECTIONS`] says their language). The page carries
//! no date, so the same source always gives the same bytes (the packaged assets/tcptune.8 is
//! this output, kept in sync by a snapshot test).

use clap_mangen::Man;
use clap_mangen::roff::{Inline, Roff, bold, italic, roman};

use crate::profile::FACTS;

/// The whole page as roff source, for the command line `root` (clap's definitions).
pub fn render(root: clap::Command) -> String {
    let mut root = root.disable_help_subcommand(true);
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

/// DESCRIPTION, in the template language of [`SECTIONS`].
const DESCRIPTION: &str = include_str!("description.roff");

/// After OPTIONS: where each command's go, and the heading of the commands that follow.
const BEFORE_COMMANDS: &str = include_str!("before_commands.roff");

/// The sections after COMMANDS, as a template: a line of text or a request: `.TP B TERM`
/// (bold) or `.TP I TERM` (italic) an entry whose text is the next line; `.rows units`,
/// `.rows exit-status`, `.rows facts` entries made from the code's own tables
/// ([`crate::units::MEANINGS`], [`crate::error::exit::MEANINGS`], [`FACTS`]); any other
/// (`.SH NAME`, `.PP`) goes to roff as it is, with its one argument.
const SECTIONS: &str = include_str!("sections.roff");

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
    use crate::cli::Cli;
    use clap::CommandFactory as _;

    fn render() -> String {
        super::render(Cli::command())
    }

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
