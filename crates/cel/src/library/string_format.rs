//! `string.format(list)` as cel-go's strings extension version 2 renders it
//! for the API server: the clauses `%s %d %f %e %b %o %x %X` (and `%%`),
//! an optional `.N` precision, numbers printed the way golang.org/x/text
//! prints them for en_US (thousands separators for `%f`, `×` and
//! superscript exponents for `%e`), and cel-go's error texts.

use crate::registry::{
    first, is_list, is_string, overload, shape_scaled, sig, str_arg, tenth_of_target, Function,
};
use crate::shape::Shape;
use crate::text::{format_double, go_quote};
use crate::types::Ty;
use crate::value::error::EvalError;
use crate::value::time::format_duration;
use crate::value::{List, Map, TypeName, Value};

/// `s.format(list)`. The checker also runs [`check_literal`] on literal
/// calls, as cel-go does; the estimator gives the result no size bound.
pub static FORMAT: Function = Function::BASE
    .named("format", 29, "string_format")
    .member_arities(&[1])
    .returns(TypeName::String)
    .checks(|a| sig(a, &[is_string, is_list]).then_some(Ty::String))
    .calls(|a| {
        let s = str_arg(first(a)?)?;
        match a.get(1) {
            Some(Value::List(l)) => format(s, l).map(Value::string),
            _ => Err(overload()),
        }
    })
    // A tenth of the format string, at run time and in the estimate (whose
    // result cel-go leaves unsized).
    .costs(tenth_of_target)
    .estimates(|s| (shape_scaled(s, 0, 0.1), Shape::unbounded()));

const DEFAULT_PRECISION: usize = 6;
/// The largest precision (or `%e` width) accepted.
const MAX_PRECISION: usize = 1000;

fn type_of(v: &Value<'_>) -> &'static str {
    v.type_name().name()
}

/// Formats `fmt` with `args`.
pub(crate) fn format(fmt: &str, args: &List<'_>) -> Result<String, EvalError> {
    let b = fmt.as_bytes();
    let mut out = String::with_capacity(fmt.len());
    let mut arg_index = 0usize;
    let mut i = 0;
    let mut literal_start = 0;
    while i < b.len() {
        if b[i] != b'%' {
            i += 1;
            continue;
        }
        out.push_str(&fmt[literal_start..i]);
        if b.get(i + 1) == Some(&b'%') {
            out.push('%');
            i += 2;
            literal_start = i;
            continue;
        }
        let arg = args
            .get(arg_index)
            .ok_or_else(|| EvalError::new(format!("index {arg_index} out of range")))?;
        if i + 1 >= b.len() {
            return Err(EvalError::new("unexpected end of string"));
        }
        let (read, clause) = parse_clause(&fmt[i + 1..])
            .map_err(|e| EvalError::new(format!("could not parse formatting clause: {e}")))?;
        let text = clause
            .apply(&arg)
            .map_err(|e| EvalError::new(format!("error during formatting: {e}")))?;
        out.push_str(&text);
        i += 1 + read;
        literal_start = i;
        arg_index += 1;
    }
    out.push_str(&fmt[literal_start..]);
    Ok(out)
}

/// cel-go's compile-time check of `'<literal>'.format([<list literal>])`:
/// each clause against the static type of its argument, and no unused
/// arguments. The error names the argument it is about (`Some(index)`) or
/// the call (`None`).
pub(crate) fn check_literal(fmt: &str, args: &[Ty<'_>]) -> Result<(), (Option<usize>, String)> {
    let b = fmt.as_bytes();
    let mut i = 0;
    let mut requested = 0usize;
    while i < b.len() {
        if b[i] != b'%' {
            i += 1;
            continue;
        }
        if b.get(i + 1) == Some(&b'%') {
            i += 2;
            continue;
        }
        let index = requested;
        requested += 1;
        if i + 1 >= b.len() {
            return Err((None, "unexpected end of string".into()));
        }
        if index >= args.len() {
            return Err((None, format!("index {index} out of range")));
        }
        let (read, clause) = parse_clause(&fmt[i + 1..])
            .map_err(|e| (None, format!("could not parse formatting clause: {e}")))?;
        if let Err(e) = clause.check(&args[index]) {
            return Err((Some(index), format!("error during formatting: {e}")));
        }
        i += 1 + read;
    }
    if args.len() > requested {
        return Err((
            None,
            format!(
                "too many arguments supplied to string.format (expected {requested}, got {})",
                args.len()
            ),
        ));
    }
    Ok(())
}

/// The name cel-go's `TypeName()` gives a static type in these messages.
fn static_type_name(t: &Ty<'_>) -> &'static str {
    match t {
        Ty::Dyn => "dyn",
        Ty::Null => "null_type",
        Ty::Bool => "bool",
        Ty::Int => "int",
        Ty::Uint => "uint",
        Ty::Double => "double",
        Ty::String => "string",
        Ty::Bytes => "bytes",
        Ty::Duration => "google.protobuf.Duration",
        Ty::Timestamp => "google.protobuf.Timestamp",
        Ty::Type => "type",
        Ty::List(_) => "list",
        Ty::Map(..) => "map",
        Ty::Object(_) => "object",
        Ty::Optional(_) => "optional_type",
        Ty::Lib(t) => t.name(),
    }
}

/// `%s` accepts these types, and lists and maps of them.
fn string_clause_ok(t: &Ty<'_>) -> bool {
    match t {
        Ty::List(e) => string_clause_ok(e),
        Ty::Map(k, v) => string_clause_ok(k) && string_clause_ok(v),
        Ty::Dyn
        | Ty::Null
        | Ty::Bool
        | Ty::Int
        | Ty::Uint
        | Ty::Double
        | Ty::String
        | Ty::Bytes
        | Ty::Duration
        | Ty::Timestamp
        | Ty::Type => true,
        _ => false,
    }
}

#[derive(Clone, Copy)]
enum Clause {
    Str,
    Decimal,
    Fixed(Option<usize>),
    Scientific(Option<usize>),
    Binary,
    Hex { upper: bool },
    Octal,
}

/// Parses `[.N]verb` (what follows a `%`); returns bytes read.
fn parse_clause(s: &str) -> Result<(usize, Clause), String> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut precision = None;
    if b.first() == Some(&b'.') {
        i = 1;
        let start = i;
        loop {
            if i >= b.len() {
                return Err(
                    "error while parsing precision: could not find end of precision specifier"
                        .into(),
                );
            }
            if !b[i].is_ascii_digit() {
                break;
            }
            i += 1;
        }
        let digits = &s[start..i];
        let p: usize = digits.parse().map_err(|_| {
            format!(
                "error while parsing precision: error while converting precision to integer: strconv.Atoi: parsing {}: {}",
                go_quote(digits),
                if digits.is_empty() { "invalid syntax" } else { "value out of range" }
            )
        })?;
        // Strings version 2 has no limit; a huge precision would only build
        // a huge string, so refuse it with cel-go's later (version 5) text.
        if p > MAX_PRECISION {
            return Err(format!(
                "error while parsing precision: precision {p} exceeds maximum allowed precision {MAX_PRECISION}"
            ));
        }
        precision = Some(p);
    }
    let Some(r) = s[i..].chars().next() else {
        return Err("unexpected end of string".into());
    };
    let clause = match r {
        's' => Clause::Str,
        'd' => Clause::Decimal,
        'f' => Clause::Fixed(precision),
        'e' => Clause::Scientific(precision),
        'b' => Clause::Binary,
        'x' => Clause::Hex { upper: false },
        'X' => Clause::Hex { upper: true },
        'o' => Clause::Octal,
        c => return Err(format!("unrecognized formatting clause \"{c}\"")),
    };
    Ok((i + r.len_utf8(), clause))
}

/// A double argument of `%f`/`%e`: doubles, or the strings naming
/// non-finite values.
fn float_arg(v: &Value<'_>) -> Option<f64> {
    match v {
        Value::Double(d) => Some(*d),
        Value::Str(s) => match &**s {
            "NaN" => Some(f64::NAN),
            "Infinity" => Some(f64::INFINITY),
            "-Infinity" => Some(f64::NEG_INFINITY),
            _ => None,
        },
        _ => None,
    }
}

impl Clause {
    /// The compile-time version of [`Clause::apply`]: may the clause take
    /// a value of static type `t`?
    fn check(self, t: &Ty<'_>) -> Result<(), String> {
        if t.is_dyn() {
            return Ok(());
        }
        let name = static_type_name(t);
        let ok = match self {
            Clause::Str => string_clause_ok(t),
            Clause::Decimal | Clause::Octal => matches!(t, Ty::Int | Ty::Uint),
            Clause::Fixed(_) | Clause::Scientific(_) => matches!(t, Ty::Double | Ty::String),
            Clause::Binary => matches!(t, Ty::Int | Ty::Uint | Ty::Bool),
            Clause::Hex { .. } => matches!(t, Ty::Int | Ty::Uint | Ty::String | Ty::Bytes),
        };
        if ok {
            return Ok(());
        }
        // The element a list or map literal failed on is reported with its
        // own type; the static type of a nested literal stands in for it.
        let bad = match (self, t) {
            (Clause::Str, Ty::List(e)) => static_type_name(e),
            (Clause::Str, Ty::Map(k, v)) if !string_clause_ok(k) => static_type_name(k),
            (Clause::Str, Ty::Map(_, v)) => static_type_name(v),
            _ => name,
        };
        Err(match self {
            Clause::Str => format!(
                "string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, types, durations, and timestamps, was given {bad}"
            ),
            Clause::Decimal => format!("decimal clause can only be used on integers, was given {name}"),
            Clause::Octal => format!("octal clause can only be used on integers, was given {name}"),
            Clause::Fixed(_) => format!("fixed-point clause can only be used on doubles, was given {name}"),
            Clause::Scientific(_) => format!("scientific clause can only be used on doubles, was given {name}"),
            Clause::Binary => format!("only integers and bools can be formatted as binary, was given {name}"),
            Clause::Hex { .. } => format!("only integers, byte buffers, and strings can be formatted as hex, was given {name}"),
        })
    }

    fn apply(self, v: &Value<'_>) -> Result<String, String> {
        match self {
            Clause::Str => format_string(v),
            Clause::Decimal => format_decimal(v),
            Clause::Fixed(p) => match float_arg(v) {
                Some(d) => Ok(en_us_fixed(d, p.unwrap_or(DEFAULT_PRECISION))),
                None => Err(format!(
                    "fixed-point clause can only be used on doubles, was given {}",
                    type_of(v)
                )),
            },
            // cel-go turns the precision into a width for `%e`.
            Clause::Scientific(width) => match float_arg(v) {
                Some(d) => {
                    let s = en_us_scientific(d);
                    let pad = width.unwrap_or(0).saturating_sub(s.chars().count());
                    Ok(format!("{}{s}", " ".repeat(pad)))
                }
                None => Err(format!(
                    "scientific clause can only be used on doubles, was given {}",
                    type_of(v)
                )),
            },
            Clause::Binary => match v {
                Value::Int(i) => Ok(signed_radix(*i, |u| format!("{u:b}"))),
                Value::Uint(u) => Ok(format!("{u:b}")),
                Value::Bool(b) => Ok(if *b { "1" } else { "0" }.into()),
                _ => Err(format!(
                    "only integers and bools can be formatted as binary, was given {}",
                    type_of(v)
                )),
            },
            Clause::Hex { upper } => {
                let s = match v {
                    Value::Int(i) => signed_radix(*i, |u| format!("{u:x}")),
                    Value::Uint(u) => format!("{u:x}"),
                    Value::Str(s) => hex_bytes(s.as_bytes()),
                    Value::Bytes(b) => hex_bytes(b),
                    _ => {
                        return Err(format!(
                            "only integers, byte buffers, and strings can be formatted as hex, was given {}",
                            type_of(v)
                        ))
                    }
                };
                Ok(if upper { s.to_ascii_uppercase() } else { s })
            }
            Clause::Octal => match v {
                Value::Int(i) => Ok(signed_radix(*i, |u| format!("{u:o}"))),
                Value::Uint(u) => Ok(format!("{u:o}")),
                _ => Err(format!(
                    "octal clause can only be used on integers, was given {}",
                    type_of(v)
                )),
            },
        }
    }
}

/// Go prints negative numbers in other bases with a leading minus.
fn signed_radix(i: i64, f: impl Fn(u64) -> String) -> String {
    if i < 0 {
        format!("-{}", f(i.unsigned_abs()))
    } else {
        f(i as u64)
    }
}

fn hex_bytes(b: &[u8]) -> String {
    b.iter().map(|c| format!("{c:02x}")).collect()
}

fn format_decimal(v: &Value<'_>) -> Result<String, String> {
    match v {
        Value::Int(i) => Ok(i.to_string()),
        Value::Uint(u) => Ok(u.to_string()),
        _ => Err(format!(
            "decimal clause can only be used on integers, was given {}",
            type_of(v)
        )),
    }
}

/// `%s` of a top-level argument: the value's `string()` form.
fn format_string(v: &Value<'_>) -> Result<String, String> {
    Ok(match v {
        Value::List(l) => format_list(l)?,
        Value::Map(m) => format_map(m)?,
        Value::Null => "null".into(),
        Value::Str(s) => s.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Uint(u) => u.to_string(),
        Value::Double(d) => format_double(*d),
        Value::Bool(b) => b.to_string(),
        Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        Value::Duration(d) => format_duration(*d),
        Value::Timestamp(t) => t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true),
        Value::Type(t) => t.name().to_owned(),
        _ => {
            return Err(format!(
                "string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, types, durations, and timestamps, was given {}",
                type_of(v)
            ))
        }
    })
}

/// An element of a list or map: strings and bytes quoted, doubles with six
/// decimals (non-finite ones quoted), timestamps and durations wrapped.
fn format_element(v: &Value<'_>) -> Result<String, String> {
    Ok(match v {
        Value::Int(_) | Value::Uint(_) => format_decimal(v)?,
        Value::Str(s) => go_quote(s),
        Value::Bytes(b) => format!("b{}", go_quote(&String::from_utf8_lossy(b))),
        Value::Bool(_) | Value::Null | Value::Type(_) => format_string(v)?,
        Value::Timestamp(_) | Value::Duration(_) => {
            let kind = if v.type_name() == TypeName::Timestamp {
                "timestamp"
            } else {
                "duration"
            };
            format!("{kind}({})", go_quote(&format_string(v)?))
        }
        Value::List(l) => format_list(l)?,
        Value::Map(m) => format_map(m)?,
        Value::Double(d) if d.is_nan() => "\"NaN\"".into(),
        Value::Double(d) if d.is_infinite() => {
            if *d > 0.0 { "\"+Inf\"" } else { "\"-Inf\"" }.into()
        }
        Value::Double(d) => format!("{d:.6}"),
        _ => return Err(format!("no formatting function for {}", type_of(v))),
    })
}

fn format_list(l: &List<'_>) -> Result<String, String> {
    let mut parts = Vec::with_capacity(l.len());
    for v in l.iter() {
        parts.push(format_element(&v)?);
    }
    Ok(format!("[{}]", parts.join(", ")))
}

fn format_map(m: &Map<'_>) -> Result<String, String> {
    let mut pairs = Vec::with_capacity(m.len());
    for (k, v) in m.entries() {
        let key = match &k {
            Value::Str(s) => go_quote(s),
            Value::Bool(b) => b.to_string(),
            Value::Int(_) | Value::Uint(_) => format_decimal(&k)?,
            _ => {
                return Err(format!(
                    "no formatting function for map key of type {}",
                    type_of(&k)
                ))
            }
        };
        pairs.push((key, format_element(&v)?));
    }
    // Sorted by the rendered key (a stable sort, as in cel-go).
    pairs.sort_by(|a, b| a.0.cmp(&b.0));
    let body: Vec<String> = pairs.into_iter().map(|(k, v)| format!("{k}:{v}")).collect();
    Ok(format!("{{{}}}", body.join(", ")))
}

/// Groups the integer digits of a decimal string by thousands.
fn group_thousands(digits: &str) -> String {
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// en_US fixed-point: `1,234,567.89`, `∞`, `-∞`, `NaN`.
fn en_us_fixed(d: f64, precision: usize) -> String {
    if d.is_nan() {
        return "NaN".into();
    }
    if d.is_infinite() {
        return if d > 0.0 { "∞" } else { "-∞" }.into();
    }
    // Rust rounds the exact binary value half-to-even, as Go does.
    let s = format!("{:.*}", precision, d.abs());
    let (int, frac) = s.split_once('.').unwrap_or((&s, ""));
    let sign = if d < 0.0 { "-" } else { "" };
    let mut out = format!("{sign}{}", group_thousands(int));
    if !frac.is_empty() {
        out.push('.');
        out.push_str(frac);
    }
    out
}

/// en_US scientific with six decimals: `2.718280×10⁰⁰` (a superscript
/// exponent of at least two digits). This is what the API server prints
/// (its golang.org/x/text, v0.40, has no spaces around `×`; the v0.22 that
/// cel-go's own tests run with puts narrow no-break spaces there).
fn en_us_scientific(d: f64) -> String {
    if d.is_nan() {
        return "NaN".into();
    }
    if d.is_infinite() {
        return if d > 0.0 { "∞" } else { "-∞" }.into();
    }
    let s = format!("{d:.6e}");
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let (neg, digits) = match exp.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, exp),
    };
    let mut sup = String::new();
    if neg {
        sup.push('\u{207b}');
    }
    for c in format!("{digits:0>2}").chars() {
        sup.push(match c {
            '0' => '\u{2070}',
            '1' => '\u{b9}',
            '2' => '\u{b2}',
            '3' => '\u{b3}',
            '4' => '\u{2074}',
            '5' => '\u{2075}',
            '6' => '\u{2076}',
            '7' => '\u{2077}',
            '8' => '\u{2078}',
            _ => '\u{2079}',
        });
    }
    format!("{mantissa}\u{d7}10{sup}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_as_en_us() {
        assert_eq!(en_us_fixed(1234567.891, 2), "1,234,567.89");
        assert_eq!(en_us_fixed(3.25, 3), "3.250");
        assert_eq!(en_us_fixed(2.5, 0), "2");
        assert_eq!(en_us_fixed(-1234.5, 1), "-1,234.5");
        assert_eq!(en_us_fixed(999.0, 0), "999");
        assert_eq!(en_us_scientific(1052.032911275), "1.052033×10⁰³");
        assert_eq!(en_us_scientific(0.0), "0.000000×10⁰⁰");
        assert_eq!(en_us_scientific(0.00123), "1.230000×10⁻⁰³");
    }
}
