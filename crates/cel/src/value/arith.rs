//! Arithmetic on values with cel-go's overflow rules: `+` and `-` over
//! numbers, strings, bytes, lists (by the schema's list type), durations
//! and timestamps.

use celhook_schema::ListType;

use super::error::EvalError;
use super::{contains_equal, equals, List, Value};

/// Durations are int64 nanoseconds in cel-go: anything longer overflows.
pub fn duration<'a>(d: Option<chrono::TimeDelta>) -> Result<Value<'a>, EvalError> {
    d.filter(|d| d.num_nanoseconds().is_some())
        .map(Value::Duration)
        .ok_or_else(overflow)
}

pub fn timestamp<'a>(
    t: Option<chrono::DateTime<chrono::FixedOffset>>,
) -> Result<Value<'a>, EvalError> {
    t.filter(crate::value::in_range)
        .map(Value::Timestamp)
        .ok_or_else(|| EvalError::new("timestamp overflow"))
}

pub fn overflow() -> EvalError {
    EvalError::new("integer overflow")
}

pub fn uoverflow() -> EvalError {
    EvalError::new("unsigned integer overflow")
}

/// `+` for every type that has it; lists typed `set` union and lists typed
/// `map` merge by key, as the schema's list type says.
pub fn add<'a>(x: Value<'a>, y: Value<'a>) -> Result<Value<'a>, EvalError> {
    match (x, y) {
        (Value::Int(a), Value::Int(b)) => a.checked_add(b).map(Value::Int).ok_or_else(overflow),
        (Value::Uint(a), Value::Uint(b)) => a.checked_add(b).map(Value::Uint).ok_or_else(uoverflow),
        (Value::Double(a), Value::Double(b)) => Ok(Value::Double(a + b)),
        (Value::Str(a), Value::Str(b)) => {
            let mut s = String::with_capacity(a.len() + b.len());
            s.push_str(&a);
            s.push_str(&b);
            Ok(Value::string(s))
        }
        (Value::Bytes(a), Value::Bytes(b)) => {
            let mut v = a.to_vec();
            v.extend_from_slice(&b);
            Ok(Value::Bytes(v.into()))
        }
        (Value::List(a), Value::List(b)) => concat(&a, &b),
        (Value::Duration(a), Value::Duration(b)) => duration(a.checked_add(&b)),
        (Value::Timestamp(a), Value::Duration(b)) | (Value::Duration(b), Value::Timestamp(a)) => {
            timestamp(a.checked_add_signed(b))
        }
        _ => Err(EvalError::no_overload_of("_+_")),
    }
}

pub fn sub<'a>(x: Value<'a>, y: Value<'a>) -> Result<Value<'a>, EvalError> {
    match (x, y) {
        (Value::Int(a), Value::Int(b)) => a.checked_sub(b).map(Value::Int).ok_or_else(overflow),
        (Value::Uint(a), Value::Uint(b)) => a.checked_sub(b).map(Value::Uint).ok_or_else(uoverflow),
        (Value::Double(a), Value::Double(b)) => Ok(Value::Double(a - b)),
        (Value::Duration(a), Value::Duration(b)) => duration(a.checked_sub(&b)),
        (Value::Timestamp(a), Value::Timestamp(b)) => duration(Some(a - b)),
        (Value::Timestamp(a), Value::Duration(b)) => timestamp(a.checked_sub_signed(b)),
        _ => Err(EvalError::no_overload_of("_-_")),
    }
}

pub fn concat<'a>(a: &List<'a>, b: &List<'a>) -> Result<Value<'a>, EvalError> {
    let (lt, keys) = a.list_type();
    let mut out: Vec<Value<'a>> = a.iter().collect();
    match lt {
        ListType::Atomic => out.extend(b.iter()),
        ListType::Set => {
            for v in b.iter() {
                if !contains_equal(&out, &v)? {
                    out.push(v);
                }
            }
        }
        ListType::Map => {
            let key_of = |v: &Value<'a>| -> Vec<Option<Value<'a>>> {
                match v {
                    Value::Map(m) => keys.iter().map(|k| m.get_str(k)).collect(),
                    _ => Vec::new(),
                }
            };
            for v in b.iter() {
                let kv = key_of(&v);
                let mut slot = None;
                for (i, o) in out.iter().enumerate() {
                    let ko = key_of(o);
                    let same = ko.len() == kv.len()
                        && ko.iter().zip(&kv).all(|(x, y)| match (x, y) {
                            (Some(x), Some(y)) => equals(x, y).unwrap_or(false),
                            (None, None) => true,
                            _ => false,
                        });
                    if same {
                        slot = Some(i);
                        break;
                    }
                }
                match slot {
                    Some(i) => out[i] = v,
                    None => out.push(v),
                }
            }
        }
    }
    Ok(Value::list(out))
}
