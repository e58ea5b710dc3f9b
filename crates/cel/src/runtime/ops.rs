//! Selection, indexing and the binary operators on values, with cel-go's
//! error texts.

use super::*;

pub(super) fn unwrap_optional<'a>(v: &Value<'a>) -> Value<'a> {
    match v {
        Value::Optional(Some(inner)) => (**inner).clone(),
        other => other.clone(),
    }
}

/// Whether cel-go charges a selection of `field` on `v`: always but for a
/// presence test, and on an optional only when the field is there.
pub(super) fn select_charged(v: &Value<'_>, field: &str, test: bool) -> bool {
    match v {
        Value::Optional(None) => false,
        Value::Optional(Some(inner)) => {
            matches!(&**inner, Value::Map(m) if m.get_str(field).is_some())
        }
        _ => !test,
    }
}

pub(super) fn select<'a>(
    v: &Value<'a>,
    field: &str,
    test: bool,
    position: Option<u32>,
) -> Result<Value<'a>, EvalError> {
    match v {
        // Optional chaining: `opt.f` is optional, empty when `f` is missing.
        Value::Optional(None) => Ok(Value::Optional(None)),
        Value::Optional(Some(inner)) => match &**inner {
            Value::Map(m) => Ok(Value::Optional(m.get_str(field).map(Rc::new))),
            _ => Ok(Value::Optional(None)),
        },
        Value::Map(m) => {
            let got = m.get_field(field, position);
            if test {
                Ok(Value::Bool(got.is_some()))
            } else {
                got.ok_or_else(|| EvalError::no_such_key(field))
            }
        }
        // Fields of a list are string indexes to cel-go.
        Value::List(_) => Err(EvalError::new("unsupported index type 'string' in list")),
        // A presence test on another non-map is false; a selection fails as
        // a key lookup, which is how cel-go words it.
        _ if test => Ok(Value::Bool(false)),
        _ => Err(EvalError::no_such_key(field)),
    }
}

pub(super) fn index<'a>(a: &Value<'a>, b: &Value<'_>) -> Result<Value<'a>, EvalError> {
    match a {
        Value::List(l) => {
            let i = match b {
                Value::Int(i) => *i,
                Value::Uint(u) => i64::try_from(*u).unwrap_or(i64::MAX),
                Value::Double(d) if d.fract() == 0.0 => *d as i64,
                Value::Double(d) => {
                    return Err(EvalError::new(format!(
                        "unsupported index value {} in list",
                        crate::text::format_double(*d)
                    )))
                }
                other => {
                    return Err(EvalError::new(format!(
                        "unsupported index type '{}' in list",
                        other.type_name().name()
                    )))
                }
            };
            if i < 0 {
                return Err(EvalError::new(format!("index out of bounds: {i}")));
            }
            l.get(i as usize)
                .ok_or_else(|| EvalError::new(format!("index out of bounds: {i}")))
        }
        Value::Map(m) => {
            // cel-go names the Go type of a key that can never be a map key.
            let bad = match b {
                Value::Null => Some("types.Null"),
                Value::Bytes(_) => Some("types.Bytes"),
                Value::List(_) => Some("*types.baseList"),
                Value::Map(_) => Some("*types.baseMap"),
                Value::Duration(_) => Some("types.Duration"),
                Value::Timestamp(_) => Some("types.Timestamp"),
                Value::Type(_) => Some("*types.Type"),
                Value::Optional(_) => Some("*types.Optional"),
                _ => None,
            };
            if let Some(t) = bad {
                return Err(EvalError::new(format!("invalid qualifier type: {t}")));
            }
            m.get(b).ok_or_else(|| match b {
                Value::Str(s) => EvalError::no_such_key(s),
                Value::Int(i) => EvalError::new(format!("no such key: {i}")),
                Value::Uint(u) => EvalError::new(format!("no such key: {u}")),
                Value::Double(d) => {
                    EvalError::new(format!("no such key: {}", crate::text::format_double(*d)))
                }
                other => EvalError::new(format!("no such key: {other:?}")),
            })
        }
        _ => Err(EvalError::new(format!("no such key: {}", key_text(b)))),
    }
}

pub(super) fn binary<'a>(op: BinOp, x: Value<'a>, y: Value<'a>) -> Result<Value<'a>, EvalError> {
    let cmp = |want: fn(Ordering) -> bool| -> Result<Value<'a>, EvalError> {
        match compare(&x, &y) {
            Some(o) => Ok(Value::Bool(want(o))),
            None if is_nan(&x) || is_nan(&y) => Err(EvalError::new("NaN values cannot be ordered")),
            None => Err(op_error(op, &x)),
        }
    };
    match op {
        BinOp::Eq => Ok(Value::Bool(equals(&x, &y)?)),
        BinOp::Ne => Ok(Value::Bool(!equals(&x, &y)?)),
        BinOp::Lt => cmp(Ordering::is_lt),
        BinOp::Le => cmp(Ordering::is_le),
        BinOp::Gt => cmp(Ordering::is_gt),
        BinOp::Ge => cmp(Ordering::is_ge),
        BinOp::In => match &y {
            Value::List(l) => {
                for v in l.iter() {
                    if equals(&v, &x)? {
                        return Ok(Value::Bool(true));
                    }
                }
                Ok(Value::Bool(false))
            }
            Value::Map(m) => Ok(Value::Bool(m.get(&x).is_some())),
            _ => Err(EvalError::no_overload_of("@in")),
        },
        BinOp::Add => worded(op, x, y, add),
        BinOp::Sub => worded(op, x, y, sub),
        BinOp::Mul => match (x, y) {
            (Value::Int(a), Value::Int(b)) => a.checked_mul(b).map(Value::Int).ok_or_else(overflow),
            (Value::Uint(a), Value::Uint(b)) => {
                a.checked_mul(b).map(Value::Uint).ok_or_else(uoverflow)
            }
            (Value::Double(a), Value::Double(b)) => Ok(Value::Double(a * b)),
            (x, _) => Err(op_error(BinOp::Mul, &x)),
        },
        BinOp::Div => match (x, y) {
            (Value::Int(_), Value::Int(0)) | (Value::Uint(_), Value::Uint(0)) => {
                Err(EvalError::new("division by zero"))
            }
            (Value::Int(a), Value::Int(b)) => a.checked_div(b).map(Value::Int).ok_or_else(overflow),
            (Value::Uint(a), Value::Uint(b)) => Ok(Value::Uint(a / b)),
            (Value::Double(a), Value::Double(b)) => Ok(Value::Double(a / b)),
            (x, _) => Err(op_error(BinOp::Div, &x)),
        },
        BinOp::Rem => match (x, y) {
            (Value::Int(_), Value::Int(0)) | (Value::Uint(_), Value::Uint(0)) => {
                Err(EvalError::new("modulus by zero"))
            }
            (Value::Int(a), Value::Int(b)) => a.checked_rem(b).map(Value::Int).ok_or_else(overflow),
            (Value::Uint(a), Value::Uint(b)) => Ok(Value::Uint(a % b)),
            (x, _) => Err(op_error(BinOp::Rem, &x)),
        },
    }
}

/// `f(x, y)` for `op`, a missing overload worded as [`op_error`] words it.
/// The wording is decided before `x` moves into `f`, the error built only
/// if `f` fails (building it up front allocated on every `+` and `-`).
#[inline(always)]
fn worded<'a>(
    op: BinOp,
    x: Value<'a>,
    y: Value<'a>,
    f: impl FnOnce(Value<'a>, Value<'a>) -> Result<Value<'a>, EvalError>,
) -> Result<Value<'a>, EvalError> {
    let has_trait = has_operator_trait(op, &x);
    f(x, y).map_err(|err| {
        if err.kind == ErrorKind::NoSuchOverload {
            overload_error(op, has_trait)
        } else {
            err
        }
    })
}

/// The Go type cel-go names in some runtime errors.
pub(super) fn go_type_name(v: &Value<'_>) -> &'static str {
    match v {
        Value::Null => "types.Null",
        Value::Bool(_) => "types.Bool",
        Value::Int(_) => "types.Int",
        Value::Uint(_) => "types.Uint",
        Value::Double(_) => "types.Double",
        Value::Str(_) => "types.String",
        Value::Bytes(_) => "types.Bytes",
        Value::Duration(_) => "types.Duration",
        Value::Timestamp(_) => "types.Timestamp",
        Value::List(_) => "*types.baseList",
        Value::Map(_) => "*types.baseMap",
        Value::Type(_) => "*types.Type",
        Value::Optional(_) => "*types.Optional",
        Value::Lib(l) => l.go_type_name(),
    }
}

/// A key as cel-go prints it in `no such key`.
pub(super) fn key_text(k: &Value<'_>) -> String {
    match k {
        Value::Str(s) => s.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Uint(u) => u.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Double(d) => crate::text::format_double(*d),
        other => format!("{other:?}"),
    }
}

/// cel-go answers a bare `no such overload` when the left operand's type
/// has the operator but not for this right operand, and names the operator
/// when the type lacks it altogether.
pub(super) fn op_error(op: BinOp, left: &Value<'_>) -> EvalError {
    overload_error(op, has_operator_trait(op, left))
}

/// Whether the left operand's type has the trait `op` belongs to (cel-go
/// words a missing overload by it).
#[inline(always)]
fn has_operator_trait(op: BinOp, left: &Value<'_>) -> bool {
    let number = matches!(left, Value::Int(_) | Value::Uint(_) | Value::Double(_));
    let time = matches!(left, Value::Duration(_) | Value::Timestamp(_));
    match op {
        BinOp::Add => {
            number || time || matches!(left, Value::Str(_) | Value::Bytes(_) | Value::List(_))
        }
        BinOp::Sub => number || time,
        BinOp::Mul | BinOp::Div => number,
        BinOp::Rem => matches!(left, Value::Int(_) | Value::Uint(_)),
        BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => left.is_orderable(),
        _ => false,
    }
}

/// [`op_error`] once the trait is known.
#[cold]
fn overload_error(op: BinOp, has_trait: bool) -> EvalError {
    if has_trait {
        EvalError::no_overload()
    } else {
        EvalError::no_overload_of(op.name())
    }
}

pub(super) fn is_nan(v: &Value<'_>) -> bool {
    matches!(v, Value::Double(d) if d.is_nan())
}

/// `size(x)`: see `Ir::Size`.
#[inline(always)]
pub(super) fn size<'a>(arg: &'a Ir, f: &mut Frame<'a>) -> Result<Value<'a>, EvalError> {
    let v = match arg {
        Ir::Loop(l) => match loops::sized(l, f) {
            Ok(loops::Measured::Count(n)) => {
                f.charge(1)?;
                return Ok(Value::Int(n));
            }
            Ok(loops::Measured::Value(v)) => Ok(v),
            Err(e) => Err(e),
        },
        _ => eval(arg, f),
    };
    // An argument's error is charged as a general call charges it.
    let v = match v {
        Ok(v) => v,
        Err(e) => {
            if e.kind != ErrorKind::CostLimit {
                f.charge(1)?;
            }
            return Err(e);
        }
    };
    let Some(n) = crate::library::core::sized(&v) else {
        // The row's own error (its wording) for a value with no size.
        let row = crate::library::core::SIZE.invoke(std::slice::from_ref(&v));
        return Err(row.err().unwrap_or_else(EvalError::no_overload));
    };
    f.charge(1)?;
    Ok(Value::Int(n))
}
