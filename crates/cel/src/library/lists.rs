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
use crate::value::{compare, contains_equal, equals, size, List, TypeName, Value};

/// An aggregate over a list: one traversal of it, a scalar result.
const AGGREGATE: Function = Function::BASE
    .member_arities(&[0])
    .costs(|a, _| a.first().map_or(1, traversal))
    .estimates(estimate_list_traversal);

/// One pass over the target list, as the Kubernetes lists library
/// estimates it (see `Shape::list_traversal`).
pub(crate) fn estimate_list_traversal<'s>(s: &[Shape<'s>]) -> (f64, Shape<'s>) {
    (
        s.first().map_or(1.0, Shape::list_traversal),
        Shape::sized(1.0),
    )
}

pub static IS_SORTED: Function = AGGREGATE
    .named("isSorted", 24, "list_int_is_sorted_bool list_uint_is_sorted_bool list_double_is_sorted_bool list_bool_is_sorted_bool list_duration_is_sorted_bool list_timestamp_is_sorted_bool list_string_is_sorted_bool list_bytes_is_sorted_bool")
    .returns(TypeName::Bool)
    .accepts(|a| matches!(a, [Ty::List(_) | Ty::Dyn]))
    .calls(|a| {
        let items: Vec<Value<'_>> = list_arg(first(a)?)?.iter().collect();
        for w in items.windows(2) {
            match compare(&w[0], &w[1]) {
                Some(std::cmp::Ordering::Greater) => return Ok(Value::Bool(false)),
                Some(_) => {}
                None => return Err(overload()),
            }
        }
        Ok(Value::Bool(true))
    });

// Alike in its first lines with other rows that open with a long list of
// overload ids (strings.rs's `substring`): only the builder chain.
pub static SUM: Function = AGGREGATE
    .named(
        "sum",
        24,
        "list_int_sum_int list_uint_sum_uint list_double_sum_double list_duration_sum_duration",
    )
    .checks(|a| match a {
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
    })
    .calls(|a| {
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
    });

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

pub static MIN: Function = AGGREGATE
    .named("min", 24, "list_int_min_int list_uint_min_uint list_double_min_double list_bool_min_bool list_duration_min_duration list_timestamp_min_timestamp list_string_min_string list_bytes_min_bytes")
    .checks(extreme_check)
    .calls(|a| extreme(a, true));

pub static MAX: Function = AGGREGATE
    .named("max", 24, "list_int_max_int list_uint_max_uint list_double_max_double list_bool_max_bool list_duration_max_duration list_timestamp_max_timestamp list_string_max_string list_bytes_max_bytes")
    .checks(extreme_check)
    .calls(|a| extreme(a, false));

/// Kubernetes lists library version 1 (1.37): whether a list holds the
/// element; on anything else, whether the target equals it.
pub static INCLUDES: Function = AGGREGATE
    .named("includes", 37, "list_includes_dyn_dyn")
    .member_arities(&[1])
    .returns(TypeName::Bool)
    .accepts(|a| a.len() == 2)
    .calls(|a| {
        let (target, element) = match a {
            [t, e] => (t, e),
            _ => return Err(overload()),
        };
        // An element of another type is not equal, as cel-go's Equal
        // answers inside a list.
        let same = |x: &Value<'_>| equals(x, element).unwrap_or(false);
        Ok(Value::Bool(match target {
            Value::List(l) => l.iter().any(|x| same(&x)),
            other => same(other),
        }))
    });

/// A list result costs its length plus cel-go's 11 for building it.
fn built_list(_: &[Value<'_>], result: &Value<'_>) -> u64 {
    match result {
        Value::List(_) => size(result) + 11,
        _ => 1,
    }
}

/// A function that builds a list (`slice`, `reverse`, `lists.range`):
/// estimated as large as the target, charged as built.
pub(crate) const LIST_BUILDER: Function = Function::BASE
    .returns(TypeName::List)
    .costs(built_list)
    .estimates(|s| {
        (
            shape_size(s, 0) + 11.0,
            s.first().copied().unwrap_or(Shape::sized(1.0)),
        )
    });

fn same_list_check<'s>(a: &[Ty<'s>]) -> Option<Ty<'s>> {
    match a {
        [Ty::List(_)] => Some(a[0].clone()),
        _ => Some(Ty::List(Box::new(Ty::Dyn))),
    }
}

pub static SLICE: Function = LIST_BUILDER
    .named("slice", 34, "list_slice")
    .member_arities(&[2])
    .calls(|a| {
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
    });

pub static FLATTEN: Function = Function::BASE
    .named("flatten", 34, "list_flatten list_flatten_int")
    .member_arities(&[0, 1])
    .returns(TypeName::List)
    .calls(|a| {
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
    })
    .costs(|a, _| {
        let depth = match a.get(1) {
            Some(Value::Int(d)) => (*d).max(1) as u64,
            _ => 1,
        };
        arg_size(a, 0).saturating_mul(depth).saturating_add(11)
    })
    .estimates(|s| (shape_size(s, 0) + 11.0, Shape::unknown()));

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

/// `distinct()` and `sort()`: the target's elements again, compared pair
/// by pair.
const REORDER: Function = Function::BASE
    .member_arities(&[0])
    .returns(TypeName::List)
    .checks(same_list_check)
    .costs(quadratic_cost)
    .costs_before(quadratic_cost_before)
    .estimates(quadratic_estimate);

/// The elements of the target without repeats, in order of first
/// appearance.
fn distinct<'a>(a: &[Value<'a>]) -> Result<Value<'a>, EvalError> {
    let items: Vec<Value<'a>> = list_arg(first(a)?)?.iter().collect();
    if let Some(out) = distinct_strings(&items) {
        return Ok(Value::list(
            items
                .into_iter()
                .zip(out)
                .filter_map(|(v, keep)| keep.then_some(v))
                .collect(),
        ));
    }
    let mut out: Vec<Value<'a>> = Vec::with_capacity(items.len());
    for v in items {
        if !contains_equal(&out, &v)? {
            out.push(v);
        }
    }
    Ok(Value::list(out))
}

/// Which elements of a list of strings are first of their text, by a hash
/// set: the answer of comparing each with the ones kept, in linear time
/// rather than quadratic (string equality is byte equality). `None` when
/// an element is not a string. The cost charged stays cel-go's.
fn distinct_strings(items: &[Value<'_>]) -> Option<Vec<bool>> {
    let mut seen = std::collections::HashSet::with_capacity_and_hasher(
        items.len(),
        foldhash::fast::FixedState::default(),
    );
    // Pushed into one allocation: collecting options sizes the vector by
    // a lower bound of 0 and reallocates it as it fills.
    let mut first = Vec::with_capacity(items.len());
    for v in items {
        let Value::Str(s) = v else { return None };
        first.push(seen.insert(&**s));
    }
    Some(first)
}

pub static DISTINCT: Function = REORDER
    .named("distinct", 34, "list_distinct")
    .calls(distinct);

pub static SORT: Function = REORDER
    .named("sort", 34, "list_int_sort list_uint_sort list_double_sort list_bool_sort list_google.protobuf.Duration_sort list_google.protobuf.Timestamp_sort list_string_sort list_bytes_sort")
    .calls(|a| {
        let mut items: Vec<Value<'_>> = list_arg(first(a)?)?.iter().collect();
        sort_values(&mut items)?;
        Ok(Value::list(items))
    });

fn end_check<'s>(a: &[Ty<'s>]) -> Option<Ty<'s>> {
    match a {
        [Ty::List(e)] => Some(Ty::Optional(e.clone())),
        [Ty::Dyn] => Some(Ty::Optional(Box::new(Ty::Dyn))),
        _ => None,
    }
}

pub static FIRST: Function = Function::BASE
    .named("first", 33, "list_first")
    .member_arities(&[0])
    .returns(TypeName::Optional)
    .checks(end_check)
    .calls(|a| Ok(Value::Optional(list_arg(first(a)?)?.get(0).map(Rc::new))));

pub static LAST: Function = Function::BASE
    .named("last", 33, "list_last")
    .member_arities(&[0])
    .returns(TypeName::Optional)
    .checks(end_check)
    .calls(|a| {
        let l = list_arg(first(a)?)?;
        let v = l.len().checked_sub(1).and_then(|i| l.get(i));
        Ok(Value::Optional(v.map(Rc::new)))
    });

/// Built from nothing: estimated at the largest list a request can hold.
pub static RANGE: Function = LIST_BUILDER
    .named("lists.range", 34, "lists_range")
    .global_arities(&[1])
    .calls(|a| {
        let n = int_arg(first(a)?)?;
        Ok(Value::list((0..n.max(0)).map(Value::Int).collect()))
    })
    // `lists.range(n)` must not allocate n elements before the limit stops it.
    .costs_before(|a| match a {
        [Value::Int(n)] => (*n).max(0) as u64 + 11,
        _ => 0,
    })
    .estimates(|_| (MAX_REQUEST_BYTES, Shape::sized(MAX_REQUEST_BYTES)));

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
        List::Json { schema, .. } | List::Table { schema, .. } => {
            match schema.items.as_deref().map(|s| (s.ty, &s.format)) {
                Some((Type::Number, _)) => Value::Double(0.0),
                Some((Type::String, Format::Duration)) => Value::Duration(TimeDelta::zero()),
                _ => Value::Int(0),
            }
        }
        List::Owned(_) | List::Const(_) => Value::Int(0),
    }
}
