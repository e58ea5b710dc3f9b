//! The type conversions of the standard library: `int`, `uint`, `double`,
//! `string`, `bytes`, `bool`, `duration`, `timestamp`, `dyn` and `type`.
//! cel-go folds them when their argument is a constant.

use std::rc::Rc;

use chrono::DateTime;

use crate::registry::{arg_size, first, overload, scaled, Function};
use crate::shape::Shape;
use crate::text::format_double;
use crate::types::Ty;
use crate::value::error::EvalError;
use crate::value::k8s::LibValue;
use crate::value::time::{format_duration, parse_duration};
use crate::value::{in_range, parse_timestamp_unbounded, TypeName, Value};

/// A conversion's row: one argument, folded on constants, unit cost,
/// `result` typed.
const CONVERSION: Function = Function::BASE.global_arities(&[1]).folded().a_conversion();

/// Strings and bytes pay a tenth of their length to convert.
fn string_or_bytes_cost(a: &[Value<'_>], _: &Value<'_>) -> u64 {
    match a.first() {
        Some(Value::Str(_) | Value::Bytes(_)) => scaled(arg_size(a, 0), 0.1),
        _ => 1,
    }
}

/// `uint()` and `double()` take a number or a string.
fn from_number_or_string(a: &[Ty<'_>]) -> bool {
    matches!(a, [Ty::Int | Ty::Uint | Ty::Double | Ty::String | Ty::Dyn])
}

/// `int()` also takes timestamps (seconds) and durations (nanoseconds).
fn int_args(a: &[Ty<'_>]) -> bool {
    from_number_or_string(a) || matches!(a, [Ty::Timestamp | Ty::Duration])
}

// One row per conversion, their first lines (name, result, argument
// check) alike with one another and with the time conversions below: each
// is its own CEL function, and what they share is in `CONVERSION` and
// `TIME_CONVERSION`.
pub static INT: Function = CONVERSION
    .named("int", 23, "int64_to_int64 double_to_int64 duration_to_int64 string_to_int64 timestamp_to_int64 uint64_to_int64")
    .returns(TypeName::Int)
    .accepts(int_args)
    .calls(|a| to_int(first(a)?));

pub static UINT: Function = CONVERSION
    .named(
        "uint",
        23,
        "uint64_to_uint64 double_to_uint64 int64_to_uint64 string_to_uint64",
    )
    .returns(TypeName::Uint)
    .accepts(from_number_or_string)
    .calls(|a| to_uint(first(a)?));

pub static DOUBLE: Function = CONVERSION
    .named(
        "double",
        23,
        "double_to_double int64_to_double string_to_double uint64_to_double",
    )
    .returns(TypeName::Double)
    .accepts(from_number_or_string)
    .calls(|a| to_double(first(a)?));

pub static STRING: Function = CONVERSION
    .named("string", 23, "string_to_string bool_to_string bytes_to_string double_to_string duration_to_string int64_to_string timestamp_to_string uint64_to_string ip_to_string@30 cidr_to_string@30")
    .returns(TypeName::String)
    .accepts(|a| {
        matches!(
            a,
            [Ty::Int
                | Ty::Uint
                | Ty::Double
                | Ty::String
                | Ty::Bool
                | Ty::Bytes
                | Ty::Timestamp
                | Ty::Duration
                | Ty::Dyn
                | Ty::Lib(TypeName::Ip | TypeName::Cidr)]
        )
    })
    .calls(|a| to_string(first(a)?))
    .costs(string_or_bytes_cost)
    // cel-go sizes `string()` of bytes alone, and prices it a tenth per
    // byte; of anything else the result is unbounded.
    .estimates(|s| match s.first() {
        Some(b) if b.bytes => ((b.size * 0.1).ceil(), Shape::sized(b.size)),
        _ => (1.0, Shape::unbounded()),
    });

pub static BYTES: Function = CONVERSION
    .named("bytes", 23, "bytes_to_bytes string_to_bytes")
    .returns(TypeName::Bytes)
    .accepts(|a| matches!(a, [Ty::String | Ty::Bytes | Ty::Dyn]))
    .calls(|a| match first(a)? {
        Value::Bytes(b) => Ok(Value::Bytes(b.clone())),
        Value::Str(s) => Ok(Value::Bytes(Rc::from(s.as_bytes()))),
        _ => Err(overload()),
    })
    .costs(string_or_bytes_cost)
    // Kept apart from `string()`'s estimate, which it mirrors: the other
    // direction. Of a string, a tenth per character, up to four bytes each.
    .estimates(|s| match s.first() {
        Some(b) if b.bytes => (1.0, *b),
        Some(t) => {
            let mut out = Shape::sized(t.size * 4.0);
            out.bytes = true;
            ((t.size * 0.1).ceil(), out)
        }
        None => (1.0, Shape::unbounded()),
    });

pub static BOOL: Function = CONVERSION
    .named("bool", 23, "bool_to_bool string_to_bool")
    .returns(TypeName::Bool)
    .accepts(|a| matches!(a, [Ty::String | Ty::Bool | Ty::Dyn]))
    .calls(|a| match first(a)? {
        Value::Bool(b) => Ok(Value::Bool(*b)),
        Value::Str(s) => match &**s {
            "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(Value::Bool(true)),
            "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(Value::Bool(false)),
            _ => Err(EvalError::new(
                "type conversion error from 'string' to 'bool'",
            )),
        },
        _ => Err(overload()),
    });

/// Any argument, typed `dyn` (no `result`).
pub static DYN: Function = CONVERSION
    .named("dyn", 23, "to_dyn")
    .calls(|a| Ok(first(a)?.clone()))
    .estimates(|s| (1.0, s.first().copied().unwrap_or(Shape::sized(1.0))));

/// Any argument.
pub static TYPE: Function = CONVERSION
    .named("type", 23, "type")
    .returns(TypeName::Type)
    .calls(|a| Ok(Value::Type(first(a)?.type_name())));

/// `duration()` and `timestamp()` fold like conversions but are not among
/// the type conversions (no `conversion` flag: `int(x)` style errors).
/// A duration or timestamp is a scalar to the estimator (size 1).
const TIME_CONVERSION: Function = Function::BASE
    .global_arities(&[1])
    .folded()
    .estimates(|_| (1.0, Shape::sized(1.0)));

pub static DURATION: Function = TIME_CONVERSION
    .named(
        "duration",
        23,
        "duration_to_duration int64_to_duration string_to_duration",
    )
    .returns(TypeName::Duration)
    .accepts(|a| matches!(a, [Ty::String | Ty::Duration | Ty::Dyn]))
    .calls(|a| match first(a)? {
        Value::Duration(d) => Ok(Value::Duration(*d)),
        Value::Int(_) => Err(EvalError::new(
            "type conversion error from 'int' to 'google.protobuf.Duration'",
        )),
        Value::Str(s) => parse_duration(s).map(Value::Duration).map_err(|_| {
            EvalError::new("type conversion error from 'string' to 'google.protobuf.Duration'")
        }),
        _ => Err(overload()),
    });

pub static TIMESTAMP: Function = TIME_CONVERSION
    .named(
        "timestamp",
        23,
        "timestamp_to_timestamp int64_to_timestamp string_to_timestamp",
    )
    .returns(TypeName::Timestamp)
    .accepts(|a| matches!(a, [Ty::String | Ty::Timestamp | Ty::Int | Ty::Dyn]))
    .calls(|a| match first(a)? {
        Value::Timestamp(t) => Ok(Value::Timestamp(*t)),
        Value::Str(s) => match parse_timestamp_unbounded(s) {
            Some(t) if in_range(&t) => Ok(Value::Timestamp(t)),
            Some(_) => Err(EvalError::new("timestamp overflow")),
            None => Err(EvalError::new(
                "type conversion error from 'string' to 'google.protobuf.Timestamp'",
            )),
        },
        Value::Int(i) => DateTime::from_timestamp(*i, 0)
            .map(|t| t.fixed_offset())
            .filter(in_range)
            .map(Value::Timestamp)
            .ok_or_else(|| EvalError::new("timestamp overflow")),
        other => Err(EvalError::no_overload_of(&format!(
            "timestamp({})",
            other.type_name().name()
        ))),
    });

/// `string(x)` for the library types that have that overload (ip, cidr).
fn lib_to_string(v: &LibValue) -> Option<String> {
    match v {
        LibValue::Ip(ip) => Some(ip.to_string()),
        LibValue::Cidr(c) => Some(c.to_string()),
        _ => None,
    }
}

fn to_int<'a>(v: &Value<'a>) -> Result<Value<'a>, EvalError> {
    let range = || EvalError::new("integer overflow");
    Ok(Value::Int(match v {
        Value::Int(i) => *i,
        Value::Uint(u) => i64::try_from(*u).map_err(|_| range())?,
        Value::Double(d) => {
            if d.is_nan() || *d <= -9.223_372_036_854_776e18 || *d >= 9.223_372_036_854_776e18 {
                return Err(range());
            }
            d.trunc() as i64
        }
        Value::Str(s) => s
            .parse::<i64>()
            .map_err(|_| EvalError::new("type conversion error from 'string' to 'int'"))?,
        Value::Timestamp(t) => t.timestamp(),
        Value::Duration(d) => d.num_nanoseconds().ok_or_else(range)?,
        _ => return Err(overload()),
    }))
}

// Kept apart from `to_int`, which it mirrors: other bounds, and Go's
// unsigned parse, which takes no sign.
fn to_uint<'a>(v: &Value<'a>) -> Result<Value<'a>, EvalError> {
    let range = || EvalError::new("unsigned integer overflow");
    Ok(Value::Uint(match v {
        Value::Uint(u) => *u,
        Value::Int(i) => u64::try_from(*i).map_err(|_| range())?,
        Value::Double(d) => {
            if d.is_nan() || *d < 0.0 || *d >= 1.844_674_407_370_955_2e19 {
                return Err(range());
            }
            d.trunc() as u64
        }
        // Go's ParseUint takes no sign.
        Value::Str(s) => s
            .parse::<u64>()
            .ok()
            .filter(|_| !s.starts_with('+'))
            .ok_or_else(|| EvalError::new("type conversion error from 'string' to 'uint'"))?,
        _ => return Err(overload()),
    }))
}

fn to_double<'a>(v: &Value<'a>) -> Result<Value<'a>, EvalError> {
    Ok(Value::Double(match v {
        Value::Double(d) => *d,
        Value::Int(i) => *i as f64,
        Value::Uint(u) => *u as f64,
        Value::Str(s) => go_parse_float(s)
            .ok_or_else(|| EvalError::new("type conversion error from 'string' to 'double'"))?,
        _ => return Err(overload()),
    }))
}

/// Go's `strconv.ParseFloat(s, 64)`: decimal or hexadecimal (`0x1p-2`)
/// floats, `_` between digits, `Inf`/`Infinity`/`NaN` in any case, and an
/// error for finite literals beyond the float64 range.
fn go_parse_float(s: &str) -> Option<f64> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = body.to_ascii_lowercase();
    let v = match lower.as_str() {
        "inf" | "infinity" => f64::INFINITY,
        // Go takes no sign on NaN.
        "nan" if s.len() == body.len() => f64::NAN,
        "nan" => return None,
        _ => {
            // Underscores only between digits (or after a base prefix).
            let b = body.as_bytes();
            for (i, c) in b.iter().enumerate() {
                if *c == b'_' {
                    let prev = i.checked_sub(1).map(|j| b[j]);
                    let ok_prev =
                        prev.is_some_and(|p| p.is_ascii_hexdigit() || p == b'x' || p == b'X');
                    if !ok_prev || !b.get(i + 1).is_some_and(u8::is_ascii_hexdigit) {
                        return None;
                    }
                }
            }
            let clean: String = body.chars().filter(|c| *c != '_').collect();
            let v = match clean
                .strip_prefix("0x")
                .or_else(|| clean.strip_prefix("0X"))
            {
                Some(hex) => parse_hex_float(hex)?,
                None if clean
                    .bytes()
                    .all(|c| c.is_ascii_digit() || b".eE+-".contains(&c)) =>
                {
                    clean.parse::<f64>().ok()?
                }
                None => return None,
            };
            if !v.is_finite() {
                return None;
            }
            v
        }
    };
    Some(if neg { -v } else { v })
}

/// The digits of a hexadecimal float after `0x`: `1.8p3` is 12.
fn parse_hex_float(hex: &str) -> Option<f64> {
    let (mant, exp) = match hex.find(['p', 'P']) {
        Some(i) => (&hex[..i], hex[i + 1..].parse::<i32>().ok()?),
        None => (hex, 0),
    };
    let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let mut v = 0f64;
    for c in int.chars() {
        v = v * 16.0 + f64::from(c.to_digit(16)?);
    }
    let mut scale = 1.0 / 16.0;
    for c in frac.chars() {
        v += f64::from(c.to_digit(16)?) * scale;
        scale /= 16.0;
    }
    Some(v * 2f64.powi(exp))
}

fn to_string<'a>(v: &Value<'a>) -> Result<Value<'a>, EvalError> {
    Ok(match v {
        Value::Str(s) => Value::Str(s.clone()),
        Value::Int(i) => Value::string(i.to_string()),
        Value::Uint(u) => Value::string(u.to_string()),
        Value::Double(d) => Value::string(format_double(*d)),
        Value::Bool(b) => Value::string(b.to_string()),
        Value::Bytes(b) => Value::string(
            std::str::from_utf8(b)
                .map_err(|_| EvalError::new("invalid UTF-8 in bytes, cannot convert to string"))?,
        ),
        Value::Duration(d) => Value::string(format_duration(*d)),
        Value::Timestamp(t) => Value::string(crate::value::format_timestamp(t)),
        Value::Lib(l) => Value::string(lib_to_string(l).ok_or_else(overload)?),
        _ => return Err(overload()),
    })
}
