//! Errors of the CEL layer: compile errors (refused at load) and runtime
//! errors (a denial naming the rule and the error, as the API server does).

use std::borrow::Cow;
use std::fmt;

/// What kind of runtime error happened; the validator words some kinds
/// differently, as the API server does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// No function overload for the argument types (bypasses the type check
    /// only through dynamic values such as int-or-string).
    NoSuchOverload,
    /// The per-expression runtime cost limit was reached.
    CostLimit,
    /// Anything else: no such key, index out of range, overflow, ...
    Other,
}

/// A CEL runtime error. Boxed: an evaluation result is then no larger
/// than a value (the error's pointer fits the value's niche), which every
/// step of the evaluator returns.
#[derive(Debug, Clone, PartialEq)]
pub struct EvalError(Box<ErrorDetail>);

/// What an [`EvalError`] says (read through it, as its fields).
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorDetail {
    pub kind: ErrorKind,
    pub message: Cow<'static, str>,
}

impl std::ops::Deref for EvalError {
    type Target = ErrorDetail;

    fn deref(&self) -> &ErrorDetail {
        &self.0
    }
}

impl std::ops::DerefMut for EvalError {
    fn deref_mut(&mut self) -> &mut ErrorDetail {
        &mut self.0
    }
}

impl EvalError {
    /// An error of `kind` saying `message`.
    #[cold]
    pub fn of(kind: ErrorKind, message: impl Into<Cow<'static, str>>) -> Self {
        EvalError(Box::new(ErrorDetail {
            kind,
            message: message.into(),
        }))
    }

    /// An error of kind `Other`.
    pub fn new(message: impl Into<Cow<'static, str>>) -> Self {
        EvalError::of(ErrorKind::Other, message)
    }

    /// A "no such overload" error.
    pub fn no_overload() -> Self {
        EvalError::of(ErrorKind::NoSuchOverload, "no such overload")
    }

    /// A "no such overload" error naming the operator or function.
    pub fn no_overload_of(name: &str) -> Self {
        EvalError::of(
            ErrorKind::NoSuchOverload,
            format!("no such overload: {name}"),
        )
    }

    /// Its message, taken out.
    pub fn into_message(self) -> Cow<'static, str> {
        self.0.message
    }

    /// A "no such key" error.
    pub fn no_such_key(key: &str) -> Self {
        EvalError::new(format!("no such key: {key}"))
    }
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for EvalError {}

/// A compile error: the rule is refused at load.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct CompileError {
    /// The full text, in cel-go's shape:
    /// `ERROR: <input>:1:6: msg` followed by the source line and a caret.
    pub message: String,
    /// The rule type-checks but cel-go cannot plan it (a constant regex of
    /// `find`/`findAll` that does not compile): the API server reports
    /// `program instantiation failed: <message>`, with a plain message.
    pub instantiation: bool,
}
