//! cel-go's sets extension: `sets.contains`, `sets.equivalent`,
//! `sets.intersects` over lists.

use crate::registry::{arg, arg_size, first, list_arg, shape_size, Function};
use crate::shape::Shape;
use crate::value::error::EvalError;
use crate::value::{equals, TypeName, Value};

const SET_FUNCTION: Function = Function {
    global: &[2],
    result: Some(TypeName::Bool),
    ..Function::BASE
};

/// Every element of `y` is in `x`.
fn contains_all<'a>(x: &[Value<'a>], y: &[Value<'a>]) -> Result<bool, EvalError> {
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
}

fn both<'a>(a: &[Value<'a>]) -> Result<(Vec<Value<'a>>, Vec<Value<'a>>), EvalError> {
    let x: Vec<Value<'a>> = list_arg(first(a)?)?.iter().collect();
    let y: Vec<Value<'a>> = list_arg(arg(a, 1)?)?.iter().collect();
    Ok((x, y))
}

/// Each element of one list against each of the other.
fn product_cost(a: &[Value<'_>]) -> u64 {
    1u64.saturating_add(arg_size(a, 0).saturating_mul(arg_size(a, 1)))
}

fn product_estimate<'s>(s: &[Shape<'s>]) -> (f64, Shape<'s>) {
    (1.0 + shape_size(s, 0) * shape_size(s, 1), Shape::sized(1.0))
}

pub static CONTAINS: Function = Function {
    name: "sets.contains",
    overloads: &[("list_sets_contains_list", 29)],
    call: |a| {
        let (x, y) = both(a)?;
        Ok(Value::Bool(contains_all(&x, &y)?))
    },
    cost: |a, _| product_cost(a),
    cost_before: Some(product_cost),
    estimate: product_estimate,
    ..SET_FUNCTION
};

pub static EQUIVALENT: Function = Function {
    name: "sets.equivalent",
    overloads: &[("list_sets_equivalent_list", 29)],
    call: |a| {
        let (x, y) = both(a)?;
        Ok(Value::Bool(contains_all(&x, &y)? && contains_all(&y, &x)?))
    },
    cost: |a, _| product_cost(a),
    cost_before: Some(product_cost),
    estimate: product_estimate,
    ..SET_FUNCTION
};

fn intersects_cost(a: &[Value<'_>]) -> u64 {
    1u64.saturating_add(
        arg_size(a, 0)
            .saturating_mul(arg_size(a, 1))
            .saturating_mul(2),
    )
}

pub static INTERSECTS: Function = Function {
    name: "sets.intersects",
    overloads: &[("list_sets_intersects_list", 29)],
    call: |a| {
        let (x, y) = both(a)?;
        for v in &y {
            for w in &x {
                if equals(w, v)? {
                    return Ok(Value::Bool(true));
                }
            }
        }
        Ok(Value::Bool(false))
    },
    cost: |a, _| intersects_cost(a),
    cost_before: Some(intersects_cost),
    estimate: |s| {
        (
            1.0 + shape_size(s, 0) * shape_size(s, 1) * 2.0,
            Shape::sized(1.0),
        )
    },
    ..SET_FUNCTION
};
