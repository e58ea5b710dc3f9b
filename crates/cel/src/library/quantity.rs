//! Kubernetes' quantity library: `quantity()`, `isQuantity()`, `sign()`,
//! the conversions `asApproximateFloat`, `asInteger`, `isInteger`, and
//! `add`/`sub`. The comparisons `isGreaterThan`, `isLessThan` and
//! `compareTo` are here too: the API server gives them to semvers as
//! well, under the same names, so one row serves both types.

use std::cmp::Ordering;

use super::semver::is_semver;
use super::PARSER;
use crate::registry::{
    arg, first, is_int, lib_arg, lib_value, overload, sig, str_arg, unit_scalar, Function,
};
use crate::types::Ty;
use crate::value::error::EvalError;
use crate::value::k8s::quantity::Quantity;
use crate::value::k8s::LibValue;
use crate::value::{TypeName, Value};

fn is_quantity(t: &Ty<'_>) -> bool {
    matches!(t, Ty::Lib(TypeName::Quantity))
}

/// The quantity a value holds, or the overload error for anything else.
// Kept apart from the other libraries' `*_arg` helpers (authz.rs, url.rs,
// ...), alike but for the `LibValue` variant each picks out: one match
// per variant is the plainest way to say it.
fn quantity_arg<'v>(v: &'v Value<'_>) -> Result<&'v Quantity, EvalError> {
    match lib_arg(v)? {
        LibValue::Quantity(q) => Ok(q),
        _ => Err(overload()),
    }
}

fn quantity_value(q: Quantity) -> Value<'static> {
    lib_value(LibValue::Quantity(q))
}

pub static QUANTITY: Function = PARSER
    .named("quantity", 28, "string_to_quantity")
    .returns(TypeName::Quantity)
    .calls(|a| {
        let q = Quantity::parse(str_arg(first(a)?)?).map_err(EvalError::new)?;
        Ok(quantity_value(q))
    });

pub static IS_QUANTITY: Function = PARSER
    .named("isQuantity", 28, "is_quantity_string")
    .returns(TypeName::Bool)
    .calls(|a| Ok(Value::Bool(Quantity::parse(str_arg(first(a)?)?).is_ok())));

/// A function of one quantity, at unit cost with a scalar result.
const OF_QUANTITY: Function = Function::BASE
    .accepts(|a| sig(a, &[is_quantity]))
    .estimates(unit_scalar);

/// `q.f()`: a method of one quantity.
const QUANTITY_METHOD: Function = OF_QUANTITY.member_arities(&[0]);

pub static SIGN: Function = OF_QUANTITY
    .named("sign", 28, "quantity_sign")
    .global_arities(&[1])
    .returns(TypeName::Int)
    .calls(|a| Ok(Value::Int(quantity_arg(first(a)?)?.sign())));

pub static AS_APPROXIMATE_FLOAT: Function = QUANTITY_METHOD
    .named("asApproximateFloat", 28, "quantity_get_float")
    .returns(TypeName::Double)
    .calls(|a| Ok(Value::Double(quantity_arg(first(a)?)?.approximate_f64())));

pub static AS_INTEGER: Function = QUANTITY_METHOD
    .named("asInteger", 28, "quantity_get_int")
    .returns(TypeName::Int)
    .calls(|a| {
        quantity_arg(first(a)?)?
            .as_i64()
            .map(Value::Int)
            .ok_or_else(|| EvalError::new("cannot convert value to integer"))
    });

pub static IS_INTEGER: Function = QUANTITY_METHOD
    .named("isInteger", 28, "quantity_is_integer")
    .returns(TypeName::Bool)
    .calls(|a| Ok(Value::Bool(quantity_arg(first(a)?)?.as_i64().is_some())));

/// Two quantities or two semvers (never one of each).
fn comparable(a: &[Ty<'_>]) -> bool {
    sig(a, &[is_quantity, is_quantity]) || sig(a, &[is_semver, is_semver])
}

/// The order of the target against the argument, both quantities or both
/// semvers.
fn compare(a: &[Value<'_>]) -> Result<Ordering, EvalError> {
    let (Value::Lib(x), Value::Lib(y)) = (first(a)?, arg(a, 1)?) else {
        return Err(overload());
    };
    match (&**x, &**y) {
        (LibValue::Quantity(x), LibValue::Quantity(y)) => Ok(x.cmp(y)),
        (LibValue::Semver(x), LibValue::Semver(y)) => Ok(x.cmp(y)),
        _ => Err(overload()),
    }
}

/// A comparison `x.f(y)`, at unit cost with a scalar result.
const COMPARISON: Function = Function::BASE
    .member_arities(&[1])
    .accepts(comparable)
    .estimates(unit_scalar);

/// `isGreaterThan` and `isLessThan`: whether the order passes `test`.
const ORDER_TEST: Function = COMPARISON.returns(TypeName::Bool);

fn order_test<'a>(a: &[Value<'a>], test: fn(Ordering) -> bool) -> Result<Value<'a>, EvalError> {
    Ok(Value::Bool(test(compare(a)?)))
}

pub static IS_GREATER_THAN: Function = ORDER_TEST
    .named(
        "isGreaterThan",
        28,
        "quantity_is_greater_than semver_is_greater_than@33",
    )
    .calls(|a| order_test(a, Ordering::is_gt));

// Kept apart from `IS_GREATER_THAN`, its mirror image: each is its own CEL
// function with its own overload ids, and only the order test differs.
pub static IS_LESS_THAN: Function = ORDER_TEST
    .named(
        "isLessThan",
        28,
        "quantity_is_less_than semver_is_less_than@33",
    )
    .calls(|a| order_test(a, Ordering::is_lt));

pub static COMPARE_TO: Function = COMPARISON
    .named("compareTo", 28, "quantity_compare_to semver_compare_to@33")
    .returns(TypeName::Int)
    // -1, 0 or 1, as Go's comparisons answer.
    .calls(|a| Ok(Value::Int(compare(a)? as i64)));

/// `add` and `sub` take a quantity or a plain integer.
fn is_quantity_or_int(t: &Ty<'_>) -> bool {
    is_quantity(t) || is_int(t)
}

/// `op` of the target and the other operand of `add`/`sub`; an integer
/// operand counts as a quantity of that many units.
fn arithmetic(
    a: &[Value<'_>],
    op: fn(&Quantity, &Quantity) -> Quantity,
) -> Result<Value<'static>, EvalError> {
    let q = quantity_arg(first(a)?)?;
    let other = match arg(a, 1)? {
        Value::Int(i) => Quantity::from_i64(*i),
        v => quantity_arg(v)?.clone(),
    };
    Ok(quantity_value(op(q, &other)))
}

/// Quantity arithmetic, at unit cost with a scalar result.
const ARITHMETIC: Function = Function::BASE
    .member_arities(&[1])
    .returns(TypeName::Quantity)
    .accepts(|a| sig(a, &[is_quantity, is_quantity_or_int]))
    .estimates(unit_scalar);

// Two rows, alike in shape with the other libraries' one-line rows
// (network.rs's predicates, url.rs's parts): each its own CEL function,
// their shared work named once in `arithmetic`.
pub static ADD: Function = ARITHMETIC
    .named("add", 28, "quantity_add quantity_add_int")
    .calls(|a| arithmetic(a, Quantity::add));

pub static SUB: Function = ARITHMETIC
    .named("sub", 28, "quantity_sub quantity_sub_int")
    .calls(|a| arithmetic(a, Quantity::sub));
