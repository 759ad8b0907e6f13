//! A note of the advice, in two lengths: the whole of it, for the derivation (`--explain`,
//! JSON's `notes`), and — where a person should see it without asking — one short line for the
//! file and the terminal. A note whose fact the path and class lines already say has no short
//! line: each fact is said once.

use serde::Serialize;

/// One note: its whole text, and its short line when it is shown without `--explain`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// The whole note: the derivation's words, every figure.
    pub text: String,
    /// The one line shown in the file and on the terminal; None: only in the derivation.
    pub short: Option<String>,
}

impl Note {
    /// A note for the derivation only: its fact is said elsewhere (the path or class line).
    pub fn detail(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            short: None,
        }
    }

    /// A note short enough to show as it is.
    pub fn shown(text: impl Into<String>) -> Self {
        let text = text.into();
        Self {
            short: Some(text.clone()),
            text,
        }
    }

    /// A note with its short line.
    pub fn with_short(text: impl Into<String>, short: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            short: Some(short.into()),
        }
    }

    /// The same note with `prefix` before its whole text (its short line keeps its words).
    #[must_use]
    pub fn prefixed(mut self, prefix: &str) -> Self {
        self.text = format!("{prefix}{}", self.text);
        self
    }

    /// What a person sees without `--explain`: the short line, else the whole text.
    pub fn line(&self) -> &str {
        self.short.as_deref().unwrap_or(&self.text)
    }
}

impl std::ops::Deref for Note {
    type Target = str;

    fn deref(&self) -> &str {
        &self.text
    }
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl PartialEq<str> for Note {
    fn eq(&self, other: &str) -> bool {
        self.text == other
    }
}

impl PartialEq<&str> for Note {
    fn eq(&self, other: &&str) -> bool {
        self.text == *other
    }
}

impl PartialEq<String> for Note {
    fn eq(&self, other: &String) -> bool {
        &self.text == other
    }
}

/// JSON keeps the whole text (`notes`, `warnings`: arrays of strings, as before).
impl Serialize for Note {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_note_reads_as_its_whole_text_and_shows_its_short_line() {
        let n = Note::with_short("the whole derivation, every figure", "the short line");
        assert_eq!(n, "the whole derivation, every figure");
        assert!(n.contains("every figure"));
        assert_eq!(n.line(), "the short line");
        assert_eq!(Note::detail("only in --explain").short, None);
        assert_eq!(Note::shown("short").line(), "short");
        assert_eq!(
            serde_json::to_value(Note::detail("x").prefixed("h: ")).expect("json"),
            serde_json::json!("h: x")
        );
    }
}
