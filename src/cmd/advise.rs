//! `tcptune advise`: turn a path (given, or measured with `--host`) into sysctl advice
//! for an OS, showing the running values beside the recommendation. The advice is
//! [`crate::advice`]'s; this command turns the arguments into a request, picks the end to show
//! and hands it to [`crate::output::render`], which writes it in the format asked for.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::advice::Advice;
use crate::cli::{AdviseCmdArgs, Format, Scope, Side};
use crate::cmd::Context;
use crate::error::Error;
use crate::output::advice::Render;
use crate::output::render::{self, Asked, Shown};

/// The table's width where neither the terminal nor `COLUMNS` gives one.
const TABLE_WIDTH: usize = 80;

pub fn run(args: &AdviseCmdArgs, ctx: &Context, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let a = &args.output;
    let asked = Asked {
        format: ctx.format.unwrap_or(Format::for_terminal(ctx.term.stdout_tty)),
        render: Render {
            explain: a.explain,
            tty: ctx.term.stdout_tty,
            color: ctx.term.color,
            width: ctx.term.columns.unwrap_or(TABLE_WIDTH),
            size: a.size.map(crate::units::Bytes::get),
        },
        output: a.output.as_deref(),
        tuned_include: a.tuned_include.as_deref(),
        allowed_unsafe: a.allowed_unsafe_sysctls.as_ref(),
        scope_path: args.advice.scope == Scope::Path,
    };
    // Everything the format cannot take is refused before anything is measured.
    render::check(&asked, ctx.os)?;
    if a.side == Side::Far && args.advice.ssh.is_none() {
        return Err(Error::usage("--side far prints the far end's advice: it needs --ssh DEST").into());
    }
    let advised = super::advice_from_args(&args.advice, ctx)?;
    let (advice, beside) = pick_side(a.side, advised)?;
    let root = a.persist_root.clone().unwrap_or_else(|| PathBuf::from("/"));
    let shown = Shown {
        advice: &advice,
        beside: beside.as_ref().map(|(f, who)| (f, who.as_str())),
        here: ctx.local && a.side == Side::Near,
        root: &root,
    };
    render::advice(out, &asked, &shown)?;
    Ok(ExitCode::SUCCESS)
}

/// This host's advice, or the far end's (`--side far`), and the far end's to show beside this
/// host's when there is one: its advice and who it is.
fn pick_side(side: Side, advised: super::Advised) -> anyhow::Result<(Advice, Option<(Advice, String)>)> {
    let super::Advised { near, far } = advised;
    match (side, far) {
        (Side::Near, None) => Ok((near, None)),
        (Side::Near, Some((end, far))) => Ok((near, far.map(|f| (f, end.dest)))),
        (Side::Far, Some((_, Some(far)))) => Ok((far, None)),
        (Side::Far, Some((end, None))) => Err(Error::usage(format!(
            "--side far: the far end runs {}, which tcptune does not advise for",
            end.uname
        ))
        .into()),
        (Side::Far, None) => Err(Error::usage("--side far prints the far end's advice: it needs --ssh DEST").into()),
    }
}
