//! Regular expressions with Go's RE2 semantics on top of the `regex` crate.
//! The syntax is nearly the same; what differs is rewritten before
//! compiling: Go's `\d \w \s \b` are ASCII-only (the crate's are Unicode),
//! Go has `\Q...\E`, and Go refuses stacked repetition (`a**`) and repeat
//! counts over 1000. Errors are worded as Go's `regexp` package words them
//! (`error parsing regexp: missing closing ): ...`).

use regex::Regex;

const DIGIT: &str = "0-9";
const WORD: &str = "0-9A-Za-z_";
const SPACE: &str = "\\t\\n\\f\\r ";
/// Go's maximum repeat count.
const MAX_REPEAT: u32 = 1000;

fn go_error(code: &str, fragment: &str) -> String {
    format!("error parsing regexp: {code}: `{fragment}`")
}

/// Compiles `pattern` as Go's `regexp.Compile` would accept and run it.
pub fn compile(pattern: &str) -> Result<Regex, String> {
    let translated = translate(pattern)?;
    Regex::new(&translated).map_err(|e| map_error(pattern, &e.to_string()))
}

/// Escapes a literal for use in a pattern.
fn push_literal(out: &mut String, c: char) {
    if "\\.+*?()|[]{}^$#&-~".contains(c) {
        out.push('\\');
    }
    out.push(c);
}

fn translate(p: &str) -> Result<String, String> {
    let chars: Vec<(usize, char)> = p.char_indices().collect();
    let mut out = String::with_capacity(p.len() + 8);
    let mut i = 0;
    // Byte offset of the `[` opening the current class, if inside one.
    let mut class_start: Option<usize> = None;
    // Text of the repetition operator just written, to refuse stacking.
    let mut last_repeat: Option<usize> = None;
    while i < chars.len() {
        let (at, c) = chars[i];
        let next = chars.get(i + 1).map(|&(_, c)| c);
        if class_start.is_some() {
            match c {
                '\\' => {
                    let Some(e) = next else {
                        return Err(go_error("trailing backslash at end of expression", ""));
                    };
                    match e {
                        'd' => out.push_str(DIGIT),
                        'w' => out.push_str(WORD),
                        's' => out.push_str(SPACE),
                        'D' => out.push_str(&format!("[^{DIGIT}]")),
                        'W' => out.push_str(&format!("[^{WORD}]")),
                        'S' => out.push_str(&format!("[^{SPACE}]")),
                        _ => {
                            out.push('\\');
                            out.push(e);
                        }
                    }
                    i += 2;
                }
                '[' if next == Some(':') => {
                    // A POSIX class `[:alpha:]` is copied whole.
                    let rest = &p[at..];
                    match rest.find(":]") {
                        Some(end) => {
                            out.push_str(&rest[..end + 2]);
                            i += rest[..end + 2].chars().count();
                        }
                        None => {
                            out.push_str("\\[");
                            i += 1;
                        }
                    }
                }
                '[' => {
                    // A literal `[` inside a class (Go allows it unescaped).
                    out.push_str("\\[");
                    i += 1;
                }
                ']' => {
                    out.push(']');
                    class_start = None;
                    i += 1;
                }
                // `&`, `~` and `-` runs have set meaning for the crate only.
                '&' | '~' => {
                    out.push('\\');
                    out.push(c);
                    i += 1;
                }
                '-' if next == Some('-') => {
                    out.push_str("\\-");
                    i += 1;
                }
                _ => {
                    out.push(c);
                    i += 1;
                }
            }
            continue;
        }
        let repeat_len = match c {
            '*' | '+' | '?' => Some(1),
            '{' => repeat_braces(&p[at..])?,
            _ => None,
        };
        if let Some(len) = repeat_len {
            let mut end = i + len;
            // A lazy marker belongs to the operator.
            if chars.get(end).map(|&(_, c)| c) == Some('?') {
                end += 1;
            }
            if let Some(prev) = last_repeat {
                let to = chars.get(end).map_or(p.len(), |&(b, _)| b);
                return Err(go_error(
                    "invalid nested repetition operator",
                    &p[chars[prev].0..to],
                ));
            }
            for &(_, ch) in &chars[i..end] {
                out.push(ch);
            }
            last_repeat = Some(i);
            i = end;
            continue;
        }
        last_repeat = None;
        match c {
            '\\' => {
                let Some(e) = next else {
                    return Err(go_error("trailing backslash at end of expression", ""));
                };
                match e {
                    'd' => out.push_str(&format!("[{DIGIT}]")),
                    'w' => out.push_str(&format!("[{WORD}]")),
                    's' => out.push_str(&format!("[{SPACE}]")),
                    'D' => out.push_str(&format!("[^{DIGIT}]")),
                    'W' => out.push_str(&format!("[^{WORD}]")),
                    'S' => out.push_str(&format!("[^{SPACE}]")),
                    'b' => out.push_str("(?-u:\\b)"),
                    'B' => out.push_str("(?-u:\\B)"),
                    'Q' => {
                        // Literal text up to `\E` (or the end).
                        let body_start = chars.get(i + 2).map_or(p.len(), |&(b, _)| b);
                        let body = &p[body_start..];
                        let (lit, consumed) = match body.find("\\E") {
                            Some(e) => (&body[..e], e + 2),
                            None => (body, body.len()),
                        };
                        out.push_str("(?:");
                        for ch in lit.chars() {
                            push_literal(&mut out, ch);
                        }
                        out.push(')');
                        i += 2 + body[..consumed].chars().count();
                        continue;
                    }
                    _ => {
                        out.push('\\');
                        out.push(e);
                    }
                }
                i += 2;
            }
            '[' => {
                class_start = Some(at);
                out.push('[');
                i += 1;
                // A leading `^` and a `]` right after the opening are part of
                // the class, not its end.
                if chars.get(i).map(|&(_, c)| c) == Some('^') {
                    out.push('^');
                    i += 1;
                }
                if chars.get(i).map(|&(_, c)| c) == Some(']') {
                    out.push_str("\\]");
                    i += 1;
                }
            }
            // Braces that are not a repetition are literals in Go.
            '{' | '}' => {
                out.push('\\');
                out.push(c);
                i += 1;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    if let Some(start) = class_start {
        return Err(go_error("missing closing ]", &p[start..]));
    }
    Ok(out)
}

/// The length in characters of a `{n}`, `{n,}` or `{n,m}` repetition at the
/// start of `s` (None when the brace is a literal, as in Go); counts over
/// 1000 are refused as Go refuses them.
fn repeat_braces(s: &str) -> Result<Option<usize>, String> {
    let Some(close) = s.find('}') else {
        return Ok(None);
    };
    let body = &s[1..close];
    let (lo, hi) = match body.split_once(',') {
        Some((lo, hi)) => (lo, Some(hi)),
        None => (body, None),
    };
    let num = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    if !num(lo) || hi.is_some_and(|h| !h.is_empty() && !num(h)) {
        return Ok(None);
    }
    let too_big = |t: &str| t.parse::<u32>().map_or(true, |n| n > MAX_REPEAT);
    let lo_n = lo.parse::<u32>().unwrap_or(u32::MAX);
    let bad_range =
        hi.is_some_and(|h| !h.is_empty() && h.parse::<u32>().map_or(true, |h| h < lo_n));
    if too_big(lo) || hi.is_some_and(|h| !h.is_empty() && too_big(h)) || bad_range {
        return Err(go_error("invalid repeat count", &s[..=close]));
    }
    Ok(Some(s[..=close].chars().count()))
}

/// Words a `regex` crate error as Go's `regexp` would, using the span the
/// crate marks with carets for the fragment.
fn map_error(pattern: &str, rendered: &str) -> String {
    let lines: Vec<&str> = rendered.lines().collect();
    let message = lines
        .last()
        .map(|l| l.trim().trim_start_matches("error: "))
        .unwrap_or_default();
    let fragment = match (lines.get(1), lines.get(2)) {
        (Some(text), Some(carets)) if text.trim_start() == pattern && !pattern.contains('\n') => {
            let indent = text.len() - text.trim_start().len();
            let start = carets.find('^').map_or(0, |c| c.saturating_sub(indent));
            let len = carets.matches('^').count().max(1);
            pattern.chars().skip(start).take(len).collect::<String>()
        }
        _ => pattern.to_owned(),
    };
    let code = if message.starts_with("unclosed group") {
        return go_error("missing closing )", pattern);
    } else if message.starts_with("unopened group") {
        return go_error("unexpected )", pattern);
    } else if message.starts_with("repetition operator missing expression") {
        "missing argument to repetition operator"
    } else if message.starts_with("invalid repetition count") {
        "invalid repeat count"
    } else if message.starts_with("backreferences")
        || message.starts_with("unrecognized escape")
        || message.starts_with("incomplete escape")
    {
        "invalid escape sequence"
    } else if message.starts_with("look-around") {
        "invalid or unsupported Perl syntax"
    } else if message.starts_with("invalid character class range")
        || message.starts_with("Unicode property")
    {
        "invalid character class range"
    } else if message.contains("capture group") {
        "invalid named capture"
    } else {
        return format!("error parsing regexp: {message}: `{pattern}`");
    };
    go_error(code, &fragment)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(p: &str) -> String {
        compile(p).unwrap_err()
    }

    #[test]
    fn perl_classes_are_ascii_as_in_go() {
        let d = compile(r"^\d+$").unwrap();
        assert!(d.is_match("123"));
        assert!(!d.is_match("١٢٣"));
        assert!(!compile(r"^\w$").unwrap().is_match("é"));
        assert!(compile(r"^[\w-]+$").unwrap().is_match("a-b_c"));
        assert!(!compile(r"^\s$").unwrap().is_match("\u{a0}"));
        assert!(compile(r"^[^\d]$").unwrap().is_match("x"));
        assert!(compile(r"^[\D]$").unwrap().is_match("x"));
        assert!(compile(r"\bfoo\b").unwrap().is_match("a foo b"));
        assert!(compile(r"^[[:alpha:]]+$").unwrap().is_match("abc"));
        assert!(compile(r"^[]a]+$").unwrap().is_match("]a"));
        assert!(compile(r"^[a&&b]$").unwrap().is_match("&"));
    }

    #[test]
    fn quoted_literals() {
        let q = compile(r"^\Qa.b*\E$").unwrap();
        assert!(q.is_match("a.b*"));
        assert!(!q.is_match("axbb"));
    }

    #[test]
    fn errors_read_like_go() {
        assert_eq!(err("("), "error parsing regexp: missing closing ): `(`");
        assert_eq!(err("a)"), "error parsing regexp: unexpected ): `a)`");
        assert_eq!(err("[a"), "error parsing regexp: missing closing ]: `[a`");
        assert_eq!(err("x[a"), "error parsing regexp: missing closing ]: `[a`");
        assert_eq!(
            err("*"),
            "error parsing regexp: missing argument to repetition operator: `*`"
        );
        assert_eq!(
            err("a**"),
            "error parsing regexp: invalid nested repetition operator: `**`"
        );
        assert_eq!(
            err("a{1001}"),
            "error parsing regexp: invalid repeat count: `{1001}`"
        );
        assert_eq!(
            err("a{2,1}"),
            "error parsing regexp: invalid repeat count: `{2,1}`"
        );
        assert_eq!(
            err(r"\8"),
            "error parsing regexp: invalid escape sequence: `\\8`"
        );
        assert_eq!(
            err("(?=a)"),
            "error parsing regexp: invalid or unsupported Perl syntax: `(?=`"
        );
        assert_eq!(
            err("[z-a]"),
            "error parsing regexp: invalid character class range: `z-a`"
        );
        assert_eq!(
            err("\\"),
            "error parsing regexp: trailing backslash at end of expression: ``"
        );
        assert!(compile("a*?b+?").is_ok());
        assert!(compile("a{2}b{1,}c{1,3}").is_ok());
        assert!(compile("x{").is_ok());
    }
}
