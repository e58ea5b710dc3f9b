//! Text as Go prints it: the API server's messages and cel-go's string
//! conversions quote strings and format numbers the Go way, and a rule's
//! result must read the same here.

/// Go's `strconv.Quote`: the API server's messages quote inputs this way.
pub fn go_quote(s: &str) -> String {
    quote(s, true)
}

/// cel-go's `strings.quote()`: the same escapes as [`go_quote`] for the
/// named control characters, but other control characters kept as they
/// are (the one difference between the two).
pub fn cel_quote(s: &str) -> String {
    quote(s, false)
}

fn quote(s: &str, escape_controls: bool) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c if escape_controls && ((c as u32) < 0x20 || c == '\u{7f}') => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if escape_controls && c.is_control() => {
                if (c as u32) <= 0xffff {
                    out.push_str(&format!("\\u{:04x}", c as u32));
                } else {
                    out.push_str(&format!("\\U{:08x}", c as u32));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Doubles print as Go's `strconv.FormatFloat(d, 'g', -1, 64)` does for the
/// common cases: shortest round-trip form, no trailing `.0`.
pub fn format_double(d: f64) -> String {
    if d.is_nan() {
        return "NaN".into();
    }
    if d.is_infinite() {
        return if d > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    let abs = d.abs();
    // Go's 'g' with the shortest precision: exponent form below 1e-4 and
    // from 1e6 on.
    if abs != 0.0 && !(1e-4..1e6).contains(&abs) {
        let s = format!("{d:e}");
        // Go writes the exponent with a sign and at least two digits.
        if let Some((m, e)) = s.split_once('e') {
            let (sign, digits) = match e.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', e),
            };
            return format!("{m}e{sign}{digits:0>2}");
        }
        return s;
    }
    let s = format!("{d}");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_format_like_go() {
        assert_eq!(format_double(1.0), "1");
        assert_eq!(format_double(1.5), "1.5");
        assert_eq!(format_double(1e21), "1e+21");
        assert_eq!(format_double(0.00001), "1e-05");
    }
}
