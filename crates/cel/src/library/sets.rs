//! cel-go's sets extension: `sets.contains`, `sets.equivalent`,
//! `sets.intersects` over lists.

use crate::registry::{arg, arg_size, first, list_arg, shape_size, Function};
use crate::shape::Shape;
use crate::value::error::EvalError;
use crate::value::{contains_equal, TypeName, Value};

const SET_FUNCTION: Function = Function::BASE.global_arities(&[2]).returns(TypeName::Bool);

/// Every element of `y` is in `x`.
fn contains_all<'a>(x: &[Value<'a>], y: &[Value<'a>]) -> Result<bool, EvalError> {
    for v in y {
        if !contains_equal(x, v)? {
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

pub static CONTAINS: Function = SET_FUNCTION
    .named("sets.contains", 29, "list_sets_contains_list")
    .calls(|a| {
        let (x, y) = both(a)?;
        Ok(Value::Bool(contains_all(&x, &y)?))
    })
    .costs(|a, _| product_cost(a))
    .costs_before(product_cost)
    .estimates(product_estimate);

/// Equivalence is two containment checks: cel-go prices it at twice the
/// product of the sizes.
fn equivalent_cost(a: &[Value<'_>]) -> u64 {
    1u64.saturating_add(
        arg_size(a, 0)
            .saturating_mul(arg_size(a, 1))
            .saturating_mul(2),
    )
}

pub static EQUIVALENT: Function = SET_FUNCTION
    .named("sets.equivalent", 29, "list_sets_equivalent_list")
    .calls(|a| {
        let (x, y) = both(a)?;
        Ok(Value::Bool(contains_all(&x, &y)? && contains_all(&y, &x)?))
    })
    .costs(|a, _| equivalent_cost(a))
    .costs_before(equivalent_cost)
    .estimates(|s| {
        (
            1.0 + shape_size(s, 0) * shape_size(s, 1) * 2.0,
            Shape::sized(1.0),
        )
    });

pub static INTERSECTS: Function = SET_FUNCTION
    .named("sets.intersects", 29, "list_sets_intersects_list")
    .calls(|a| {
        let (x, y) = both(a)?;
        for v in &y {
            if contains_equal(&x, v)? {
                return Ok(Value::Bool(true));
            }
        }
        Ok(Value::Bool(false))
    })
    .costs(|a, _| product_cost(a))
    .costs_before(product_cost)
    .estimates(product_estimate);
