//! Property-name escaping: how a JSON property name is written as a CEL
//! field name (`x-prop` is `x__dash__prop`, `namespace` is `__namespace__`).

/// CEL reserved words: a property named exactly like one is written
/// `__{word}__`.
const RESERVED: &[&str] = &[
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// The CEL field name of a JSON property name, or `None` when CEL cannot
/// reach the property (its name does not match `[a-zA-Z_.-/][a-zA-Z0-9_.-/]*`).
pub fn escape_property(name: &str) -> Option<String> {
    let mut chars = name.chars();
    let first = chars.next()?;
    let allowed = |c: char, first: bool| {
        c.is_ascii_alphabetic()
            || matches!(c, '_' | '.' | '-' | '/')
            || (!first && c.is_ascii_digit())
    };
    if !allowed(first, true) || !chars.all(|c| allowed(c, false)) {
        return None;
    }
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("__") {
            out.push_str("__underscores__");
            rest = r;
            continue;
        }
        let c = rest.chars().next().unwrap_or_default();
        match c {
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c => out.push(c),
        }
        rest = &rest[c.len_utf8()..];
    }
    Some(out)
}

/// The JSON property name a CEL field name stands for (the inverse of
/// [`escape_property`]); names without escapes stand for themselves.
pub fn unescape_property(field: &str) -> std::borrow::Cow<'_, str> {
    if !field.contains("__") {
        return field.into();
    }
    if let Some(word) = field.strip_prefix("__").and_then(|f| f.strip_suffix("__")) {
        if RESERVED.contains(&word) {
            return word.to_owned().into();
        }
    }
    let mut out = String::with_capacity(field.len());
    let mut rest = field;
    'outer: while !rest.is_empty() {
        for (esc, plain) in [
            ("__underscores__", "__"),
            ("__dot__", "."),
            ("__dash__", "-"),
            ("__slash__", "/"),
        ] {
            if let Some(r) = rest.strip_prefix(esc) {
                out.push_str(plain);
                rest = r;
                continue 'outer;
            }
        }
        let c = rest.chars().next().unwrap_or_default();
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out.into()
}

impl crate::Schema {
    /// The property a CEL field name selects, with its JSON name. Only the
    /// escaped spelling of a name selects it (`a__b` is `a__underscores__b`;
    /// `a__b` itself selects nothing), except that, with `keywords`, a
    /// reserved word also selects the property it names (`namespace` as
    /// `__namespace__` does): the API server's type provider does so from
    /// compatibility version 1.31.
    pub fn cel_property<'f>(
        &self,
        field: &'f str,
        keywords: bool,
    ) -> Option<(std::borrow::Cow<'f, str>, &crate::Schema)> {
        let name = unescape_property(field);
        let selectable = escape_property(&name).is_some_and(|escaped| escaped == field)
            || (keywords && RESERVED.contains(&field) && name == field);
        if !selectable {
            return None;
        }
        let schema = self.property(&name)?;
        Some((name, schema))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_as_the_docs_show() {
        assert_eq!(escape_property("namespace").unwrap(), "__namespace__");
        assert_eq!(escape_property("x-prop").unwrap(), "x__dash__prop");
        assert_eq!(
            escape_property("redact__d").unwrap(),
            "redact__underscores__d"
        );
        assert_eq!(escape_property("a.b/c").unwrap(), "a__dot__b__slash__c");
        assert_eq!(escape_property("sprint").unwrap(), "sprint");
        assert_eq!(escape_property("1abc"), None);
        assert_eq!(escape_property("a b"), None);
    }

    #[test]
    fn only_escaped_spellings_and_reserved_words_select() {
        let s: crate::Schema = crate::Schema {
            ty: crate::Type::Object,
            properties: ["a__b", "x-prop", "namespace", "if", "__x__", "plain"]
                .into_iter()
                .map(|n| (n.to_owned(), crate::Schema::default()))
                .collect(),
            ..crate::Schema::default()
        };
        let select = |f: &str| s.cel_property(f, true).map(|(n, _)| n.into_owned());
        assert_eq!(select("a__underscores__b").as_deref(), Some("a__b"));
        assert_eq!(select("a__b"), None);
        assert_eq!(select("x__dash__prop").as_deref(), Some("x-prop"));
        assert_eq!(select("x-prop"), None);
        assert_eq!(select("__namespace__").as_deref(), Some("namespace"));
        assert_eq!(select("namespace").as_deref(), Some("namespace"));
        assert_eq!(select("if").as_deref(), Some("if"));
        assert_eq!(select("__x__"), None);
        assert_eq!(
            select("__underscores__x__underscores__").as_deref(),
            Some("__x__")
        );
        assert_eq!(select("plain").as_deref(), Some("plain"));
        assert_eq!(select("missing"), None);
        // Before compatibility version 1.31 a reserved word selects only
        // by its escaped spelling.
        let old = |f: &str| s.cel_property(f, false).map(|(n, _)| n.into_owned());
        assert_eq!(old("namespace"), None);
        assert_eq!(old("__namespace__").as_deref(), Some("namespace"));
        assert_eq!(old("plain").as_deref(), Some("plain"));
    }

    /// Every name of up to five characters over the escaped alphabet
    /// round-trips: selection relies on `unescape` inverting `escape`.
    #[test]
    fn unescape_inverts_escape_exhaustively() {
        let alphabet = ['a', '_', '.', '-', '/', 'd'];
        let mut names = vec![String::new()];
        for _ in 0..5 {
            let longer: Vec<String> = names
                .iter()
                .flat_map(|n| alphabet.iter().map(move |c| format!("{n}{c}")))
                .collect();
            for name in &longer {
                if let Some(esc) = escape_property(name) {
                    assert_eq!(unescape_property(&esc), name.as_str(), "via {esc}");
                }
            }
            names = longer;
        }
    }

    #[test]
    fn unescape_inverts_escape() {
        for name in [
            "namespace",
            "x-prop",
            "redact__d",
            "a.b/c",
            "plain",
            "if",
            "___x",
        ] {
            let esc = escape_property(name).unwrap();
            assert_eq!(unescape_property(&esc), name, "via {esc}");
        }
    }
}
