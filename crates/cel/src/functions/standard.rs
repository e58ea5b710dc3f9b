//! The standard library's scalar functions: size, the string functions
//! (cel-go's strings extension, version 2), the type conversions and the
//! timestamp and duration accessors.

use std::rc::Rc;

use chrono::{DateTime, Datelike, FixedOffset, Timelike, Utc};

use super::kubernetes as library;
use super::{
    call_with_regex, compile_regex, int_arg, list_arg, overload, str_arg, Func,
    MAX_STRING_RESULT_BYTES,
};
use crate::text::{cel_quote, format_double};
use crate::value::error::EvalError;
use crate::value::time::{format_duration, parse_duration};
use crate::value::{equals, Value};

pub(super) fn call<'a>(
    f: Func,
    a0: &Value<'a>,
    args: &[Value<'a>],
) -> Result<Value<'a>, EvalError> {
    use Func::*;
    match f {
        Negate => match a0 {
            Value::Int(i) => i
                .checked_neg()
                .map(Value::Int)
                .ok_or_else(|| EvalError::new("integer overflow")),
            Value::Double(d) => Ok(Value::Double(-d)),
            Value::Duration(d) => Ok(Value::Duration(-*d)),
            _ => Err(overload()),
        },
        Size => Ok(Value::Int(match a0 {
            Value::Str(s) => crate::value::str_size(s) as i64,
            Value::Bytes(b) => b.len() as i64,
            Value::List(l) => l.len() as i64,
            Value::Map(m) => m.len() as i64,
            _ => return Err(overload()),
        })),
        Contains | StartsWith | EndsWith => {
            let (s, t) = (str_arg(a0)?, str_arg(&args[1])?);
            Ok(Value::Bool(match f {
                Contains => s.contains(t),
                StartsWith => s.starts_with(t),
                _ => s.ends_with(t),
            }))
        }
        Matches => {
            str_arg(a0)?;
            let re = compile_regex(f, str_arg(args.get(1).ok_or_else(overload)?)?)?;
            call_with_regex(f, args, &re)
        }
        ToInt => to_int(a0),
        ToUint => to_uint(a0),
        ToDouble => to_double(a0),
        ToString => to_string(a0),
        ToBytes => match a0 {
            Value::Bytes(b) => Ok(Value::Bytes(b.clone())),
            Value::Str(s) => Ok(Value::Bytes(Rc::from(s.as_bytes()))),
            _ => Err(overload()),
        },
        ToBool => match a0 {
            Value::Bool(b) => Ok(Value::Bool(*b)),
            Value::Str(s) => match &**s {
                "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(Value::Bool(true)),
                "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(Value::Bool(false)),
                _ => Err(EvalError::new(
                    "type conversion error from 'string' to 'bool'",
                )),
            },
            _ => Err(overload()),
        },
        Dyn => Ok(a0.clone()),
        TypeOf => Ok(Value::Type(a0.type_name())),
        ToDuration => match a0 {
            Value::Duration(d) => Ok(Value::Duration(*d)),
            Value::Int(_) => Err(EvalError::new(
                "type conversion error from 'int' to 'google.protobuf.Duration'",
            )),
            Value::Str(s) => parse_duration(s).map(Value::Duration).map_err(|_| {
                EvalError::new("type conversion error from 'string' to 'google.protobuf.Duration'")
            }),
            _ => Err(overload()),
        },
        ToTimestamp => match a0 {
            Value::Timestamp(t) => Ok(Value::Timestamp(*t)),
            Value::Str(s) => match crate::value::parse_timestamp_unbounded(s) {
                Some(t) if crate::value::in_range(&t) => Ok(Value::Timestamp(t)),
                Some(_) => Err(EvalError::new("timestamp overflow")),
                None => Err(EvalError::new(
                    "type conversion error from 'string' to 'google.protobuf.Timestamp'",
                )),
            },
            Value::Int(i) => DateTime::from_timestamp(*i, 0)
                .map(|t| t.fixed_offset())
                .filter(crate::value::in_range)
                .map(Value::Timestamp)
                .ok_or_else(|| EvalError::new("timestamp overflow")),
            other => Err(EvalError::no_overload_of(&format!(
                "timestamp({})",
                other.type_name().name()
            ))),
        },
        GetFullYear | GetMonth | GetDayOfMonth | GetDate | GetDayOfWeek | GetDayOfYear
        | GetHours | GetMinutes | GetSeconds | GetMilliseconds => {
            if let (Value::Duration(d), 1) = (a0, args.len()) {
                return Ok(Value::Int(match f {
                    GetHours => d.num_hours(),
                    GetMinutes => d.num_minutes(),
                    GetSeconds => d.num_seconds(),
                    GetMilliseconds => d.num_milliseconds(),
                    _ => return Err(overload()),
                }));
            }
            let Value::Timestamp(t) = a0 else {
                return Err(overload());
            };
            let t = match args.get(1) {
                // Accessors read UTC unless told a zone (DefaultUTCTimeZone).
                None => t.with_timezone(&Utc).fixed_offset(),
                Some(Value::Str(tz)) => with_timezone(t, tz)?,
                Some(_) => return Err(overload()),
            };
            Ok(Value::Int(match f {
                GetFullYear => t.year() as i64,
                GetMonth => t.month0() as i64,
                GetDayOfMonth => t.day0() as i64,
                GetDate => t.day() as i64,
                GetDayOfWeek => t.weekday().num_days_from_sunday() as i64,
                GetDayOfYear => t.ordinal0() as i64,
                GetHours => t.hour() as i64,
                GetMinutes => t.minute() as i64,
                GetSeconds => t.second() as i64,
                _ => (t.nanosecond() / 1_000_000) as i64,
            }))
        }
        CharAt => {
            let s = str_arg(a0)?;
            let i = int_arg(&args[1])?;
            let len = s.chars().count() as i64;
            if i < 0 || i > len {
                return Err(EvalError::new(format!("index out of range: {i}")));
            }
            Ok(Value::string(
                s.chars()
                    .nth(i as usize)
                    .map(String::from)
                    .unwrap_or_default(),
            ))
        }
        IndexOf | LastIndexOf => match a0 {
            Value::Str(s) => string_index_of(s, args, f == LastIndexOf),
            // Lists take no start offset.
            Value::List(l) if args.len() == 2 => {
                let needle = &args[1];
                let items: Vec<Value<'a>> = l.iter().collect();
                let mut found = -1;
                for (i, v) in items.iter().enumerate() {
                    if equals(v, needle)? {
                        found = i as i64;
                        if f == IndexOf {
                            break;
                        }
                    }
                }
                Ok(Value::Int(found))
            }
            _ => Err(overload()),
        },
        LowerAscii => Ok(Value::string(str_arg(a0)?.to_ascii_lowercase())),
        UpperAscii => Ok(Value::string(str_arg(a0)?.to_ascii_uppercase())),
        Replace => {
            let s = str_arg(a0)?;
            let (from, to) = (str_arg(&args[1])?, str_arg(&args[2])?);
            let n = match args.get(3) {
                Some(v) => int_arg(v)?,
                None => -1,
            };
            // The one string function whose result can dwarf its inputs
            // (every match times the replacement), and whose cost (cel-go's:
            // the input's length) does not grow with it: bounded here so that
            // no rule and object can make one allocation of gigabytes.
            let matches = if from.is_empty() {
                s.chars().count() as u64 + 1
            } else {
                s.matches(from).count() as u64
            };
            let matches = if n < 0 {
                matches
            } else {
                matches.min(n as u64)
            };
            let grown = (to.len() as u64).saturating_sub(from.len() as u64);
            let result_len = (s.len() as u64).saturating_add(matches.saturating_mul(grown));
            if result_len > MAX_STRING_RESULT_BYTES {
                return Err(EvalError {
                    kind: crate::ErrorKind::CostLimit,
                    message: format!(
                        "operation cancelled: replace() would build a string of {result_len} bytes, over the limit of {MAX_STRING_RESULT_BYTES}"
                    )
                    .into(),
                });
            }
            Ok(Value::string(if n < 0 {
                s.replace(from, to)
            } else {
                s.replacen(from, to, n as usize)
            }))
        }
        Split => {
            let s = str_arg(a0)?;
            let sep = str_arg(&args[1])?;
            let n = match args.get(2) {
                Some(v) => int_arg(v)?,
                None => -1,
            };
            let parts: Vec<Value<'a>> = match n {
                0 => Vec::new(),
                // cel-go splits the empty string into no parts.
                _ if s.is_empty() => Vec::new(),
                n if n < 0 => split_all(s, sep).map(Value::string).collect(),
                n => splitn(s, sep, n as usize).map(Value::string).collect(),
            };
            Ok(Value::list(parts))
        }
        Substring => {
            let s = str_arg(a0)?;
            let chars: Vec<char> = s.chars().collect();
            let start = int_arg(&args[1])?;
            let end = match args.get(2) {
                Some(v) => int_arg(v)?,
                None => chars.len() as i64,
            };
            // cel-go checks the range order first only in the two-argument form.
            if args.len() == 3 && start > end {
                return Err(EvalError::new(format!(
                    "invalid substring range. start: {start}, end: {end}"
                )));
            }
            if start < 0 || start > chars.len() as i64 {
                return Err(EvalError::new(format!("index out of range: {start}")));
            }
            if end < 0 || end > chars.len() as i64 {
                return Err(EvalError::new(format!("index out of range: {end}")));
            }
            Ok(Value::string(
                chars[start as usize..end as usize]
                    .iter()
                    .collect::<String>(),
            ))
        }
        Trim => Ok(Value::string(str_arg(a0)?.trim())),
        Join => {
            let l = list_arg(a0)?;
            let sep = match args.get(1) {
                Some(v) => str_arg(v)?,
                None => "",
            };
            let mut out = String::new();
            for (i, v) in l.iter().enumerate() {
                if i > 0 {
                    out.push_str(sep);
                }
                out.push_str(str_arg(&v)?);
            }
            Ok(Value::string(out))
        }
        Reverse => match a0 {
            Value::List(l) => {
                let mut v: Vec<Value<'a>> = l.iter().collect();
                v.reverse();
                Ok(Value::list(v))
            }
            _ => Err(overload()),
        },
        Quote => Ok(Value::string(cel_quote(str_arg(a0)?))),
        _ => Err(overload()),
    }
}

fn with_timezone(t: &DateTime<FixedOffset>, tz: &str) -> Result<DateTime<FixedOffset>, EvalError> {
    use chrono::Offset;
    // An IANA name ("America/New_York", "UTC"), or a fixed offset
    // ("+01:00", "-05:30", "01:00"), as cel-go accepts.
    let bad = || EvalError::new(format!("unknown time zone {tz}"));
    if let Ok(zone) = tz.parse::<chrono_tz::Tz>() {
        let local = t.with_timezone(&zone);
        let offset = local.offset().fix();
        return Ok(t.with_timezone(&offset));
    }
    // "Local" is the server's zone (UTC in a container); "" is UTC to Go.
    if tz == "Local" || tz.is_empty() {
        return Ok(t.with_timezone(&chrono::Utc).fixed_offset());
    }
    // A `[+-]HH:MM` offset; its numbers are read as Go's Atoi reads them.
    let Some((h, m)) = tz.split_once(':') else {
        return Err(bad());
    };
    let atoi = |part: &str| {
        part.parse::<i32>()
            .map_err(|_| EvalError::new(format!("strconv.Atoi: parsing {part:?}: invalid syntax")))
    };
    let (sign, h) = match h.as_bytes().first() {
        Some(b'-') => (-1, &h[1..]),
        Some(b'+') => (1, &h[1..]),
        _ => (1, h),
    };
    let secs = atoi(h)? * 3600 + atoi(m)? * 60;
    let off = chrono::FixedOffset::east_opt(sign * secs).ok_or_else(bad)?;
    Ok(t.with_timezone(&off))
}

/// cel-go strings v2 `indexOf`/`lastIndexOf` (positions in code points):
/// an empty needle answers the offset as given, a negative offset is an
/// error, an offset at or past the end finds nothing.
fn string_index_of<'a>(s: &str, args: &[Value<'a>], last: bool) -> Result<Value<'a>, EvalError> {
    let sub = str_arg(&args[1])?;
    let chars: Vec<char> = s.chars().collect();
    let subc: Vec<char> = sub.chars().collect();
    let len = chars.len() as i64;
    let offset = match args.get(2) {
        Some(v) => Some(int_arg(v)?),
        None => None,
    };
    if subc.is_empty() {
        return Ok(Value::Int(offset.unwrap_or(if last { len } else { 0 })));
    }
    let n = subc.len();
    let at = |i: usize| i + n <= chars.len() && chars[i..i + n] == subc[..];
    let start = match offset {
        Some(o) if o < 0 => return Err(EvalError::new(format!("index out of range: {o}"))),
        Some(o) if o >= len => return Ok(Value::Int(-1)),
        Some(o) => o as usize,
        None if last => chars.len(),
        None => 0,
    };
    let found = if last {
        match chars.len().checked_sub(n) {
            Some(max) => (0..=start.min(max)).rev().find(|&i| at(i)),
            None => None,
        }
    } else {
        (start..chars.len()).find(|&i| at(i))
    };
    Ok(Value::Int(found.map_or(-1, |i| i as i64)))
}

fn split_all<'s>(s: &'s str, sep: &'s str) -> Box<dyn Iterator<Item = String> + 's> {
    if sep.is_empty() {
        Box::new(s.chars().map(String::from))
    } else {
        Box::new(s.split(sep).map(str::to_owned))
    }
}

fn splitn(s: &str, sep: &str, n: usize) -> impl Iterator<Item = String> {
    let parts: Vec<String> = if sep.is_empty() {
        let chars: Vec<char> = s.chars().collect();
        let mut v: Vec<String> = chars
            .iter()
            .take(n.saturating_sub(1))
            .map(|c| c.to_string())
            .collect();
        if chars.len() >= n {
            v.push(chars[n - 1..].iter().collect());
        }
        v
    } else {
        s.splitn(n, sep).map(str::to_owned).collect()
    };
    parts.into_iter()
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
        Value::Lib(l) => Value::string(library::to_string(l).ok_or_else(overload)?),
        _ => return Err(overload()),
    })
}
