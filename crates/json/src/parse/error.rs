//! Parse errors with serde_json's wording and positions (line, and the
//! column of the byte at fault), so that clients and logs read them as
//! they read serde_json's.

use std::borrow::Cow;
use std::fmt;

/// What kind of failure an [`Error`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Category {
    /// Not JSON.
    Syntax,
    /// JSON that ends early.
    Eof,
    /// JSON of the wrong shape for what reads it (a type, a repeated field).
    Data,
}

/// A parse or shape error, with where it was found. Boxed: a parse
/// result is then a value or a pointer, returned in registers on the
/// parser's paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(Box<Inner>);

#[derive(Debug, Clone, PartialEq, Eq)]
struct Inner {
    message: Cow<'static, str>,
    line: usize,
    column: usize,
    category: Category,
}

impl Error {
    /// An error at byte `at` of `text` (`at == text.len()` for its end).
    #[cold]
    pub(crate) fn at(
        text: &[u8],
        at: usize,
        message: impl Into<Cow<'static, str>>,
        category: Category,
    ) -> Error {
        let at = at.min(text.len());
        let before = &text[..at];
        let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
        let line_start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        Error(Box::new(Inner {
            message: message.into(),
            line,
            column: at - line_start,
            category,
        }))
    }

    pub fn category(&self) -> Category {
        self.0.category
    }

    pub fn line(&self) -> usize {
        self.0.line
    }

    pub fn column(&self) -> usize {
        self.0.column
    }

    /// The message without its position.
    pub fn message(&self) -> &str {
        &self.0.message
    }

    pub fn is_data(&self) -> bool {
        self.0.category == Category::Data
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at line {} column {}",
            self.0.message, self.0.line, self.0.column
        )
    }
}

impl std::error::Error for Error {}

/// A value as serde names an unexpected one: "integer `42`", "string
/// \"x\"", "map".
pub(crate) fn unexpected(v: &crate::Value) -> String {
    use crate::Value;
    match v {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("boolean `{b}`"),
        Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(u), _, _) => format!("integer `{u}`"),
            (None, Some(i), _) => format!("integer `{i}`"),
            (None, None, Some(f)) if f.fract() == 0.0 && f.is_finite() => {
                format!("floating point `{f:.1}`")
            }
            _ => format!("floating point `{n}`"),
        },
        Value::String(s) => format!("string {:?}", s.as_str()),
        Value::Array(_) | Value::Table(_) => "sequence".to_owned(),
        Value::Object(_) => "map".to_owned(),
    }
}
