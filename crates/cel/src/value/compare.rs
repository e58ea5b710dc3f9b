//! Equality and ordering of values as cel-go defines them (numbers compare
//! across int, uint and double; lists and maps element by element).

use std::cmp::Ordering;

use celhook_schema::ListType;

use celhook_json::{Str, Value as Json};

use super::{List, Map, Value};
use crate::value::error::EvalError;

/// Whether the stored key `stored` answers a lookup of `key`: keys match
/// numerically across int, uint and an integral double looked up, but a
/// double stored as a key only matches a double, as cel-go looks keys up.
pub(super) fn key_equals(stored: &Value<'_>, key: &Value<'_>) -> bool {
    match (stored, key) {
        (Value::Double(x), Value::Double(y)) => x == y,
        (Value::Double(_), _) => false,
        _ => equals(stored, key).unwrap_or(false),
    }
}

/// CEL equality: numbers compare across int, uint and double; values of
/// different types are unequal; lists typed `set` or `map` by the schema
/// compare without regard to order.
pub fn equals(a: &Value<'_>, b: &Value<'_>) -> Result<bool, EvalError> {
    Ok(match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Str(x), Value::Str(y)) => **x == **y,
        (Value::Bytes(x), Value::Bytes(y)) => x == y,
        (Value::Duration(x), Value::Duration(y)) => x == y,
        (Value::Timestamp(x), Value::Timestamp(y)) => x == y,
        (Value::Type(x), Value::Type(y)) => x == y,
        (Value::List(x), Value::List(y)) => list_equals(x, y)?,
        (Value::Map(x), Value::Map(y)) => map_equals(x, y)?,
        (Value::Optional(x), Value::Optional(y)) => match (x, y) {
            (None, None) => true,
            (Some(x), Some(y)) => equals(x, y)?,
            _ => false,
        },
        (Value::Lib(x), Value::Lib(y)) => x.equals(y).ok_or_else(EvalError::no_overload)?,
        _ => match numeric_cmp(a, b) {
            Some(o) => o == Ordering::Equal,
            None => false,
        },
    })
}

/// Whether an element of `items` equals `v` (as `equals(item, v)`).
#[inline]
pub fn contains_equal(items: &[Value<'_>], v: &Value<'_>) -> Result<bool, EvalError> {
    for item in items {
        if equals(item, v)? {
            return Ok(true);
        }
    }
    Ok(false)
}

fn list_equals(x: &List<'_>, y: &List<'_>) -> Result<bool, EvalError> {
    if x.len() != y.len() {
        return Ok(false);
    }
    let (lt, _) = x.list_type();
    if matches!(lt, ListType::Set | ListType::Map) || y.list_type().0 != ListType::Atomic {
        // Unordered: every element of x has an equal one in y (sizes match
        // and elements are unique by the list type's guarantee).
        let ys: Vec<Value<'_>> = y.iter().collect();
        for a in x.iter() {
            let mut found = false;
            for b in &ys {
                if equals(&a, b)? {
                    found = true;
                    break;
                }
            }
            if !found {
                return Ok(false);
            }
        }
        return Ok(true);
    }
    for (a, b) in x.iter().zip(y.iter()) {
        if !equals(&a, &b)? {
            return Ok(false);
        }
    }
    Ok(true)
}

fn map_equals(x: &Map<'_>, y: &Map<'_>) -> Result<bool, EvalError> {
    // Objects that keep unknown fields are equal only if those are too.
    if let (Map::Json { obj: a, schema }, Map::Json { obj: b, .. }) = (x, y) {
        if schema.preserve_unknown_fields && !schema.is_map() {
            let known = |(k, _): &(&Str, &Json)| schema.property(k).is_none();
            if !a.iter().filter(known).eq(b.iter().filter(known)) {
                return Ok(false);
            }
        }
    }
    if x.len() != y.len() {
        return Ok(false);
    }
    for (k, v) in x.entries() {
        match y.get(&k) {
            Some(w) => {
                if !equals(&v, &w)? {
                    return Ok(false);
                }
            }
            None => return Ok(false),
        }
    }
    Ok(true)
}

/// Ordering of two numbers of any numeric type; `None` for non-numbers and NaN.
pub fn numeric_cmp(a: &Value<'_>, b: &Value<'_>) -> Option<Ordering> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        (Value::Uint(x), Value::Uint(y)) => Some(x.cmp(y)),
        (Value::Double(x), Value::Double(y)) => x.partial_cmp(y),
        (Value::Int(x), Value::Uint(y)) => Some(if *x < 0 {
            Ordering::Less
        } else {
            (*x as u64).cmp(y)
        }),
        (Value::Uint(x), Value::Int(y)) => Some(if *y < 0 {
            Ordering::Greater
        } else {
            x.cmp(&(*y as u64))
        }),
        (Value::Int(x), Value::Double(y)) => int_double_cmp(*x as f64, *y),
        (Value::Double(x), Value::Int(y)) => int_double_cmp(*x, *y as f64),
        (Value::Uint(x), Value::Double(y)) => int_double_cmp(*x as f64, *y),
        (Value::Double(x), Value::Uint(y)) => int_double_cmp(*x, *y as f64),
        _ => None,
    }
}

fn int_double_cmp(x: f64, y: f64) -> Option<Ordering> {
    x.partial_cmp(&y)
}

/// CEL ordering for `<`, `<=`, `>`, `>=`; `None` when the types have no
/// common ordering (a "no such overload" error for the caller).
pub fn compare(a: &Value<'_>, b: &Value<'_>) -> Option<Ordering> {
    match (a, b) {
        (Value::Str(x), Value::Str(y)) => Some((**x).cmp(&**y)),
        (Value::Bytes(x), Value::Bytes(y)) => Some(x.cmp(y)),
        (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(y)),
        (Value::Duration(x), Value::Duration(y)) => Some(x.cmp(y)),
        (Value::Timestamp(x), Value::Timestamp(y)) => Some(x.cmp(y)),
        _ => numeric_cmp(a, b),
    }
}
