//! Where the output goes: whether stdout and stderr are terminals, colour, and the columns a
//! line may take, read once from the process and its environment.

use std::io::IsTerminal as _;

/// Where the output goes: facts about the terminal, kept apart from the services.
#[derive(Debug, Clone, Copy)]
pub struct Terminal {
    pub stdout_tty: bool,
    pub stderr_tty: bool,
    /// Colour allowed (a terminal and NO_COLOR unset).
    pub color: bool,
    /// The columns a line may take: the terminal's width, else `COLUMNS` when set; None: a
    /// renderer's own default.
    pub columns: Option<usize>,
}

impl Terminal {
    /// This process's stdout and stderr, and NO_COLOR.
    pub fn detect() -> Self {
        let stdout_tty = std::io::stdout().is_terminal();
        let tty_width = stdout_tty
            .then(|| comfy_table::Table::new().width())
            .flatten()
            .map(usize::from);
        let env_width = std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.trim().parse::<usize>().ok());
        Self {
            stdout_tty,
            stderr_tty: std::io::stderr().is_terminal(),
            color: color_allowed(stdout_tty, std::env::var_os("NO_COLOR").as_deref()),
            columns: tty_width.or(env_width).filter(|w| *w >= MIN_COLUMNS),
        }
    }
}

impl Terminal {
    /// The columns a report's lines take: on a terminal its width (or `COLUMNS`) up to
    /// [`TERMINAL_COLUMNS`]; piped, `COLUMNS` when given, up to [`PIPED_COLUMNS`].
    pub fn width(&self) -> usize {
        let most = if self.stdout_tty {
            TERMINAL_COLUMNS
        } else {
            PIPED_COLUMNS
        };
        self.columns.unwrap_or(most).min(most)
    }
}

/// The widest a report's line is on a terminal: what people read comfortably.
const TERMINAL_COLUMNS: usize = 80;

/// The widest a line is piped.
const PIPED_COLUMNS: usize = 100;

/// Narrower terminals get a renderer's default width instead.
const MIN_COLUMNS: usize = 40;

/// Colour only on a terminal, and never when NO_COLOR is set to anything non-empty (no-color.org).
fn color_allowed(tty: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    tty && no_color.is_none_or(std::ffi::OsStr::is_empty)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_is_80_columns_on_a_terminal_and_100_piped() {
        let t = |stdout_tty, columns| Terminal {
            stdout_tty,
            stderr_tty: false,
            color: false,
            columns,
        };
        assert_eq!(t(true, Some(200)).width(), 80);
        assert_eq!(t(true, Some(60)).width(), 60);
        assert_eq!(t(true, None).width(), 80);
        assert_eq!(t(false, None).width(), 100);
        assert_eq!(t(false, Some(80)).width(), 80);
        assert_eq!(t(false, Some(300)).width(), 100);
    }

    #[test]
    fn no_color_is_honoured() {
        use std::ffi::OsStr;
        assert!(color_allowed(true, None));
        assert!(color_allowed(true, Some(OsStr::new(""))));
        assert!(!color_allowed(true, Some(OsStr::new("1"))));
        assert!(!color_allowed(false, None));
    }
}
