//! The API server's field errors: the errors of objects (`errors`: the
//! `field.Error` kinds and the `Invalid` status) and the texts of config
//! refusals (`field.Invalid`, `field.NotSupported`, ...: the value
//! Go-quoted, or Go's JSON of a list, then the detail).

mod errors;

pub use errors::{aggregate, invalid_status, qualified, BadValue, ErrorType, FieldError};

use crate::cel::go_quote;

/// `Invalid value: "<value>": <detail>`.
pub fn invalid(value: &str, detail: &str) -> String {
    format!("Invalid value: {}: {detail}", go_quote(value))
}

/// `Invalid value: ["a","b"]: <detail>`: a list value as Go's JSON.
pub fn invalid_list(values: &[String], detail: &str) -> String {
    let json = serde_json::to_string(values).unwrap_or_default();
    format!("Invalid value: {}: {detail}", go_json(&json))
}

/// `Duplicate value: "<value>"`.
pub fn duplicate(value: &str) -> String {
    format!("Duplicate value: {}", go_quote(value))
}

/// `Unsupported value: "<value>": supported values: "a", "b"`.
pub fn unsupported(value: &str, supported: &[&str]) -> String {
    let supported: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
    format!(
        "Unsupported value: {}: supported values: {}",
        go_quote(value),
        supported.join(", ")
    )
}

/// serde_json's output as Go's encoder writes it: Go also escapes `<`,
/// `>`, `&` and the two Unicode line separators (outside strings none of
/// them occur).
pub fn go_json(json: &str) -> String {
    escape_each(json, |c| match c {
        '<' => Some("\\u003c"),
        '>' => Some("\\u003e"),
        '&' => Some("\\u0026"),
        '\u{2028}' => Some("\\u2028"),
        '\u{2029}' => Some("\\u2029"),
        _ => None,
    })
}

/// `text` with each character that `escape` maps replaced by its escape:
/// the one loop behind Go's JSON here and the XML of `celhook test`.
pub(crate) fn escape_each(text: &str, escape: impl Fn(char) -> Option<&'static str>) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match escape(c) {
            Some(escaped) => out.push_str(escaped),
            None => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_quote_as_go_does() {
        assert_eq!(invalid("a\tb", "bad"), "Invalid value: \"a\\tb\": bad");
        assert_eq!(
            invalid_list(&["<a>".into(), "b&c".into()], "bad"),
            "Invalid value: [\"\\u003ca\\u003e\",\"b\\u0026c\"]: bad"
        );
        assert_eq!(
            unsupported("Maybe", &["Fail", "Ignore"]),
            "Unsupported value: \"Maybe\": supported values: \"Fail\", \"Ignore\""
        );
    }
}
