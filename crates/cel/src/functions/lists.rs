//! The list, set and optional functions (cel-go's lists and sets
//! extensions, the optional library) and the regex finders of the
//! Kubernetes regex library.

use std::rc::Rc;

use chrono::TimeDelta;

use super::{call_with_regex, compile_regex, int_arg, list_arg, overload, str_arg, Func};
use crate::value::error::EvalError;
use crate::value::{compare, equals, List, Value};

pub(super) fn call<'a>(
    f: Func,
    a0: &Value<'a>,
    args: &[Value<'a>],
) -> Result<Value<'a>, EvalError> {
    use Func::*;
    match f {
        IsSorted => {
            let items: Vec<Value<'a>> = list_arg(a0)?.iter().collect();
            for w in items.windows(2) {
                match compare(&w[0], &w[1]) {
                    Some(std::cmp::Ordering::Greater) => return Ok(Value::Bool(false)),
                    Some(_) => {}
                    None => return Err(overload()),
                }
            }
            Ok(Value::Bool(true))
        }
        Sum => {
            let list = list_arg(a0)?;
            let mut acc: Option<Value<'a>> = None;
            for v in list.iter() {
                acc = Some(match acc {
                    None => v,
                    Some(a) => crate::value::arith::add(a, v)?,
                });
            }
            // An empty list sums to the zero of its element type.
            Ok(acc.unwrap_or_else(|| zero_of(list)))
        }
        Min | Max => {
            let mut best: Option<Value<'a>> = None;
            for v in list_arg(a0)?.iter() {
                best = Some(match best {
                    None => v,
                    Some(b) => {
                        let o = compare(&v, &b).ok_or_else(overload)?;
                        let better = if f == Min { o.is_lt() } else { o.is_gt() };
                        if better {
                            v
                        } else {
                            b
                        }
                    }
                });
            }
            best.ok_or_else(|| {
                EvalError::new(format!(
                    "{} called on empty list",
                    if f == Min { "min" } else { "max" }
                ))
            })
        }
        Slice => {
            let l = list_arg(a0)?;
            let (s, e) = (int_arg(&args[1])?, int_arg(&args[2])?);
            if s < 0 || e < 0 {
                return Err(EvalError::new(format!(
                    "cannot slice({s}, {e}), negative indexes not supported"
                )));
            }
            if s > e {
                return Err(EvalError::new(format!(
                    "cannot slice({s}, {e}), start index must be less than or equal to end index"
                )));
            }
            if e as usize > l.len() {
                return Err(EvalError::new(format!(
                    "cannot slice({s}, {e}), list is length {}",
                    l.len()
                )));
            }
            Ok(Value::list(
                (s as usize..e as usize).filter_map(|i| l.get(i)).collect(),
            ))
        }
        Flatten => {
            let depth = match args.get(1) {
                Some(v) => int_arg(v)?,
                None => 1,
            };
            if depth < 0 {
                return Err(EvalError::new("level must be non-negative"));
            }
            let mut out = Vec::new();
            flatten(list_arg(a0)?, depth, &mut out);
            Ok(Value::list(out))
        }
        Distinct => {
            let mut out: Vec<Value<'a>> = Vec::new();
            for v in list_arg(a0)?.iter() {
                let mut seen = false;
                for o in &out {
                    if equals(o, &v)? {
                        seen = true;
                        break;
                    }
                }
                if !seen {
                    out.push(v);
                }
            }
            Ok(Value::list(out))
        }
        Sort => {
            let mut items: Vec<Value<'a>> = list_arg(a0)?.iter().collect();
            sort_values(&mut items)?;
            Ok(Value::list(items))
        }
        First | Last => {
            let l = list_arg(a0)?;
            let v = if f == First {
                l.get(0)
            } else {
                l.len().checked_sub(1).and_then(|i| l.get(i))
            };
            Ok(Value::Optional(v.map(Rc::new)))
        }
        Range => {
            let n = int_arg(a0)?;
            Ok(Value::list((0..n.max(0)).map(Value::Int).collect()))
        }
        SetsContains | SetsEquivalent | SetsIntersects => {
            let a: Vec<Value<'a>> = list_arg(a0)?.iter().collect();
            let b: Vec<Value<'a>> = list_arg(&args[1])?.iter().collect();
            let contains_all = |x: &[Value<'a>], y: &[Value<'a>]| -> Result<bool, EvalError> {
                for v in y {
                    let mut found = false;
                    for w in x {
                        if equals(w, v)? {
                            found = true;
                            break;
                        }
                    }
                    if !found {
                        return Ok(false);
                    }
                }
                Ok(true)
            };
            Ok(Value::Bool(match f {
                SetsContains => contains_all(&a, &b)?,
                SetsEquivalent => contains_all(&a, &b)? && contains_all(&b, &a)?,
                _ => {
                    let mut any = false;
                    'outer: for v in &b {
                        for w in &a {
                            if equals(w, v)? {
                                any = true;
                                break 'outer;
                            }
                        }
                    }
                    any
                }
            }))
        }
        OptOf => Ok(Value::Optional(Some(Rc::new(a0.clone())))),
        OptNone => Ok(Value::Optional(None)),
        OptOfNonZero => {
            let v = a0;
            Ok(Value::Optional(if is_zero(v) {
                None
            } else {
                Some(Rc::new(v.clone()))
            }))
        }
        HasValue => match a0 {
            Value::Optional(o) => Ok(Value::Bool(o.is_some())),
            _ => Err(overload()),
        },
        OptValue => match a0 {
            Value::Optional(Some(v)) => Ok((**v).clone()),
            Value::Optional(None) => Err(EvalError::new("optional.none() dereference")),
            _ => Err(overload()),
        },
        // cel-go hands a non-optional target back as it is.
        OrValue => match a0 {
            Value::Optional(Some(v)) => Ok((**v).clone()),
            Value::Optional(None) => Ok(args[1].clone()),
            other => Ok(other.clone()),
        },
        OptUnwrap | UnwrapOpt => {
            // The values of the present optionals, in order.
            let mut out = Vec::new();
            for v in list_arg(a0)?.iter() {
                match v {
                    Value::Optional(Some(inner)) => out.push((*inner).clone()),
                    Value::Optional(None) => {}
                    _ => return Err(overload()),
                }
            }
            Ok(Value::list(out))
        }
        Or => match (a0, &args[1]) {
            (Value::Optional(Some(_)), _) => Ok(a0.clone()),
            (Value::Optional(None), o @ Value::Optional(_)) => Ok(o.clone()),
            (Value::Optional(None), _) => Err(overload()),
            (other, _) => Ok(other.clone()),
        },
        Find | FindAll => {
            let re = compile_regex(f, str_arg(args.get(1).ok_or_else(overload)?)?)?;
            call_with_regex(f, args, &re)
        }
        _ => Err(overload()),
    }
}

fn flatten<'a>(l: &List<'a>, depth: i64, out: &mut Vec<Value<'a>>) {
    for v in l.iter() {
        match (&v, depth > 0) {
            (Value::List(inner), true) => flatten(inner, depth - 1, out),
            _ => out.push(v),
        }
    }
}

/// Sorts values of one orderable type; mixed or unorderable types are an error.
pub(crate) fn sort_values(items: &mut [Value<'_>]) -> Result<(), EvalError> {
    // cel-go's lists extension: the first element must be orderable and
    // every element of its exact type (no cross-numeric sorting).
    let Some(first) = items.first() else {
        return Ok(());
    };
    if !first.is_orderable() {
        return Err(EvalError::new("list elements must be comparable"));
    }
    let ty = first.type_name();
    if items.iter().any(|v| v.type_name() != ty) {
        return Err(EvalError::new("list elements must have the same type"));
    }
    items.sort_by(|a, b| compare(a, b).unwrap_or(std::cmp::Ordering::Equal));
    Ok(())
}

fn zero_of<'a>(list: &List<'a>) -> Value<'a> {
    use celhook_schema::{Format, Type};
    match list {
        List::Json { schema, .. } => match schema.items.as_deref().map(|s| (s.ty, &s.format)) {
            Some((Type::Number, _)) => Value::Double(0.0),
            Some((Type::String, Format::Duration)) => Value::Duration(TimeDelta::zero()),
            _ => Value::Int(0),
        },
        List::Owned(_) | List::Const(_) => Value::Int(0),
    }
}

fn is_zero(v: &Value<'_>) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Int(i) => *i == 0,
        Value::Uint(u) => *u == 0,
        Value::Double(d) => *d == 0.0,
        Value::Str(s) => s.is_empty(),
        Value::Bytes(b) => b.is_empty(),
        Value::Duration(d) => d.is_zero(),
        // The zero timestamp is Go's zero time, 0001-01-01T00:00:00Z.
        Value::Timestamp(t) => t.timestamp() == -62_135_596_800 && t.timestamp_subsec_nanos() == 0,
        Value::List(l) => l.is_empty(),
        Value::Map(m) => m.is_empty(),
        Value::Type(_) => false,
        Value::Optional(o) => o.is_none(),
        Value::Lib(_) => false,
    }
}
