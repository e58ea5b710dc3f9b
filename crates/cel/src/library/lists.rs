//! The list functions: Kubernetes' lists library (`isSorted`, `sum`,
//! `min`, `max`) and cel-go's lists extension, version 3 (`slice`,
//! `flatten`, `distinct`, `sort`, `first`, `last`, `lists.range`).

use std::rc::Rc;

use chrono::TimeDelta;

use crate::registry::{
    arg, arg_size, first, int_arg, list_arg, overload, shape_size, traversal, Function,
};
use crate::shape::{Shape, MAX_REQUEST_BYTES};
use crate::types::Ty;
use crate::value::error::EvalError;
use crate::value::{compare, equals, size, List, TypeName, Value};

/// An aggregate over a list: one traversal of it, a scalar result.
const AGGREGATE: Function = Function {
    member: &[0],
    cost: |a, _| a.first().map_or(1, traversal),
    estimate: |s| (shape_size(s, 0), Shape::sized(1.0)),
    ..Function::BASE
};

pub static IS_SORTED: Function = Function {
    name: "isSorted",
    overloads: &[
        ("list_int_is_sorted_bool", 24),
        ("list_uint_is_sorted_bool", 24),
        ("list_double_is_sorted_bool", 24),
        ("list_bool_is_sorted_bool", 24),
        ("list_duration_is_sorted_bool", 24),
        ("list_timestamp_is_sorted_bool", 24),
        ("list_string_is_sorted_bool", 24),
        ("list_bytes_is_sorted_bool", 24),
    ],
    result: Some(TypeName::Bool),
    check: Some(|a| matches!(a, [Ty::List(_) | Ty::Dyn]).then_some(Ty::Bool)),
    call: |a| {
        let items: Vec<Value<'_>> = list_arg(first(a)?)?.iter().collect();
        for w in items.windows(2) {
            match compare(&w[0], &w[1]) {
                Some(std::cmp::Ordering::Greater) => return Ok(Value::Bool(false)),
                Some(_) => {}
                None => return Err(overload()),
            }
        }
        Ok(Value::Bool(true))
    },
    ..AGGREGATE
};

pub static SUM: Function = Function {
    name: "sum",
    overloads: &[
        ("list_int_sum_int", 24),
        ("list_uint_sum_uint", 24),
        ("list_double_sum_double", 24),
        ("list_duration_sum_duration", 24),
    ],
    check: Some(|a| match a {
        [Ty::List(e)]
            if matches!(
                **e,
                Ty::Int | Ty::Uint | Ty::Double | Ty::Duration | Ty::Dyn
            ) =>
        {
            Some((**e).clone())
        }
        [Ty::Dyn] => Some(Ty::Dyn),
        _ => None,
    }),
    call: |a| {
        let list = list_arg(first(a)?)?;
        let mut acc: Option<Value<'_>> = None;
        for v in list.iter() {
            acc = Some(match acc {
                None => v,
                Some(x) => crate::value::arith::add(x, v)?,
            });
        }
        // An empty list sums to the zero of its element type.
        Ok(acc.unwrap_or_else(|| zero_of(list)))
    },
    ..AGGREGATE
};

fn extreme_check<'s>(a: &[Ty<'s>]) -> Option<Ty<'s>> {
    match a {
        [Ty::List(e)]
            if matches!(
                **e,
                Ty::Int
                    | Ty::Uint
                    | Ty::Double
                    | Ty::String
                    | Ty::Bytes
                    | Ty::Bool
                    | Ty::Duration
                    | Ty::Timestamp
                    | Ty::Dyn
            ) =>
        {
            Some((**e).clone())
        }
        [Ty::Dyn] => Some(Ty::Dyn),
        _ => None,
    }
}

fn extreme<'a>(a: &[Value<'a>], min: bool) -> Result<Value<'a>, EvalError> {
    let mut best: Option<Value<'a>> = None;
    for v in list_arg(first(a)?)?.iter() {
        best = Some(match best {
            None => v,
            Some(b) => {
                let o = compare(&v, &b).ok_or_else(overload)?;
                let better = if min { o.is_lt() } else { o.is_gt() };
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
            if min { "min" } else { "max" }
        ))
    })
}

pub static MIN: Function = Function {
    name: "min",
    overloads: &[
        ("list_int_min_int", 24),
        ("list_uint_min_uint", 24),
        ("list_double_min_double", 24),
        ("list_bool_min_bool", 24),
        ("list_duration_min_duration", 24),
        ("list_timestamp_min_timestamp", 24),
        ("list_string_min_string", 24),
        ("list_bytes_min_bytes", 24),
    ],
    check: Some(extreme_check),
    call: |a| extreme(a, true),
    ..AGGREGATE
};

pub static MAX: Function = Function {
    name: "max",
    overloads: &[
        ("list_int_max_int", 24),
        ("list_uint_max_uint", 24),
        ("list_double_max_double", 24),
        ("list_bool_max_bool", 24),
        ("list_duration_max_duration", 24),
        ("list_timestamp_max_timestamp", 24),
        ("list_string_max_string", 24),
        ("list_bytes_max_bytes", 24),
    ],
    check: Some(extreme_check),
    call: |a| extreme(a, false),
    ..AGGREGATE
};

/// A list result costs its length plus cel-go's 11 for building it.
fn built_list(_: &[Value<'_>], result: &Value<'_>) -> u64 {
    match result {
        Value::List(_) => size(result) + 11,
        _ => 1,
    }
}

fn same_list_check<'s>(a: &[Ty<'s>]) -> Option<Ty<'s>> {
    match a {
        [Ty::List(_)] => Some(a[0].clone()),
        _ => Some(Ty::List(Box::new(Ty::Dyn))),
    }
}

pub static SLICE: Function = Function {
    name: "slice",
    overloads: &[("list_slice", 34)],
    member: &[2],
    result: Some(TypeName::List),
    call: |a| {
        let l = list_arg(first(a)?)?;
        let (s, e) = (int_arg(arg(a, 1)?)?, int_arg(arg(a, 2)?)?);
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
    },
    cost: built_list,
    estimate: |s| {
        (
            shape_size(s, 0) + 11.0,
            s.first().copied().unwrap_or(Shape::sized(1.0)),
        )
    },
    ..Function::BASE
};

pub static FLATTEN: Function = Function {
    name: "flatten",
    overloads: &[("list_flatten", 34), ("list_flatten_int", 34)],
    member: &[0, 1],
    result: Some(TypeName::List),
    call: |a| {
        let depth = match a.get(1) {
            Some(v) => int_arg(v)?,
            None => 1,
        };
        if depth < 0 {
            return Err(EvalError::new("level must be non-negative"));
        }
        let mut out = Vec::new();
        flatten(list_arg(first(a)?)?, depth, &mut out);
        Ok(Value::list(out))
    },
    cost: |a, _| {
        let depth = match a.get(1) {
            Some(Value::Int(d)) => (*d).max(1) as u64,
            _ => 1,
        };
        arg_size(a, 0).saturating_mul(depth).saturating_add(11)
    },
    estimate: |s| (shape_size(s, 0) + 11.0, Shape::unknown()),
    ..Function::BASE
};

/// `distinct()` and `sort()` compare every pair: n² steps, a little more
/// for strings and bytes.
fn quadratic_cost(a: &[Value<'_>], _: &Value<'_>) -> u64 {
    let n = arg_size(a, 0);
    let f = match a.first() {
        Some(Value::List(l)) if matches!(l.get(0), Some(Value::Str(_) | Value::Bytes(_))) => 2.1,
        _ => 2.0,
    };
    (n as f64 * n as f64 * f) as u64 + 11
}

fn quadratic_cost_before(a: &[Value<'_>]) -> u64 {
    quadratic_cost(a, &Value::Null)
}

fn quadratic_estimate<'s>(s: &[Shape<'s>]) -> (f64, Shape<'s>) {
    (
        shape_size(s, 0) * shape_size(s, 0) * 2.1 + 11.0,
        s.first().copied().unwrap_or(Shape::sized(1.0)),
    )
}

pub static DISTINCT: Function = Function {
    name: "distinct",
    overloads: &[("list_distinct", 34)],
    member: &[0],
    result: Some(TypeName::List),
    check: Some(same_list_check),
    call: |a| {
        let mut out: Vec<Value<'_>> = Vec::new();
        for v in list_arg(first(a)?)?.iter() {
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
    },
    cost: quadratic_cost,
    cost_before: Some(quadratic_cost_before),
    estimate: quadratic_estimate,
    ..Function::BASE
};

pub static SORT: Function = Function {
    name: "sort",
    overloads: &[
        ("list_int_sort", 34),
        ("list_uint_sort", 34),
        ("list_double_sort", 34),
        ("list_bool_sort", 34),
        ("list_google.protobuf.Duration_sort", 34),
        ("list_google.protobuf.Timestamp_sort", 34),
        ("list_string_sort", 34),
        ("list_bytes_sort", 34),
    ],
    member: &[0],
    result: Some(TypeName::List),
    check: Some(same_list_check),
    call: |a| {
        let mut items: Vec<Value<'_>> = list_arg(first(a)?)?.iter().collect();
        sort_values(&mut items)?;
        Ok(Value::list(items))
    },
    cost: quadratic_cost,
    cost_before: Some(quadratic_cost_before),
    estimate: quadratic_estimate,
    ..Function::BASE
};

fn end_check<'s>(a: &[Ty<'s>]) -> Option<Ty<'s>> {
    match a {
        [Ty::List(e)] => Some(Ty::Optional(e.clone())),
        [Ty::Dyn] => Some(Ty::Optional(Box::new(Ty::Dyn))),
        _ => None,
    }
}

pub static FIRST: Function = Function {
    name: "first",
    overloads: &[("list_first", 33)],
    member: &[0],
    result: Some(TypeName::Optional),
    check: Some(end_check),
    call: |a| Ok(Value::Optional(list_arg(first(a)?)?.get(0).map(Rc::new))),
    ..Function::BASE
};

pub static LAST: Function = Function {
    name: "last",
    overloads: &[("list_last", 33)],
    member: &[0],
    result: Some(TypeName::Optional),
    check: Some(end_check),
    call: |a| {
        let l = list_arg(first(a)?)?;
        let v = l.len().checked_sub(1).and_then(|i| l.get(i));
        Ok(Value::Optional(v.map(Rc::new)))
    },
    ..Function::BASE
};

pub static RANGE: Function = Function {
    name: "lists.range",
    overloads: &[("lists_range", 34)],
    global: &[1],
    result: Some(TypeName::List),
    call: |a| {
        let n = int_arg(first(a)?)?;
        Ok(Value::list((0..n.max(0)).map(Value::Int).collect()))
    },
    cost: built_list,
    // `lists.range(n)` must not allocate n elements before the limit stops it.
    cost_before: Some(|a| match a {
        [Value::Int(n)] => (*n).max(0) as u64 + 11,
        _ => 0,
    }),
    estimate: |_| (MAX_REQUEST_BYTES, Shape::sized(MAX_REQUEST_BYTES)),
    ..Function::BASE
};

fn flatten<'a>(l: &List<'a>, depth: i64, out: &mut Vec<Value<'a>>) {
    for v in l.iter() {
        match (&v, depth > 0) {
            (Value::List(inner), true) => flatten(inner, depth - 1, out),
            _ => out.push(v),
        }
    }
}

/// Sorts values of one orderable type; mixed or unorderable types are an error.
pub fn sort_values(items: &mut [Value<'_>]) -> Result<(), EvalError> {
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
