//! The standard library's core functions: `size`, negation, and the
//! string predicates and `matches` of the base environment.

use regex::Regex;

use crate::registry::{
    arg, arg_size, first, is_string, overload, scaled, shape_scaled, shape_size, sig, str_arg,
    tenth_of_target, unit_scalar, Function, RegexArg, Wording,
};
use crate::shape::Shape;
use crate::types::Ty;
use crate::value::error::EvalError;
use crate::value::{str_size, TypeName, Value};

pub static SIZE: Function = Function::BASE
    .named(
        "size",
        23,
        "size_string size_bytes size_list size_map string_size bytes_size list_size map_size",
    )
    .member_arities(&[0])
    .global_arities(&[1])
    .returns(TypeName::Int)
    .checks(|a| {
        matches!(
            a,
            [Ty::String | Ty::Bytes | Ty::List(_) | Ty::Map(..) | Ty::Dyn]
        )
        .then_some(Ty::Int)
    })
    .calls(|a| sized(first(a)?).map(Value::Int).ok_or_else(overload))
    // An int: a scalar to the estimator.
    .estimates(|_| (1.0, Shape::sized(1.0)))
    .worded(Wording::Name);

/// What `size` answers for `v`: characters, bytes, elements or entries;
/// `None` for a value that has no size. Also the evaluator's `Ir::Size`.
#[inline]
pub(crate) fn sized(v: &Value<'_>) -> Option<i64> {
    Some(match v {
        Value::Str(s) => str_size(s) as i64,
        Value::Bytes(b) => b.len() as i64,
        Value::List(l) => l.len() as i64,
        Value::Map(m) => m.len() as i64,
        _ => return None,
    })
}

/// `-x`: the checker types it as an operator; the program calls this row.
pub static NEGATE: Function = Function::BASE
    .named("-_", 23, "negate_int64 negate_double")
    .calls(|a| match first(a)? {
        Value::Int(i) => i
            .checked_neg()
            .map(Value::Int)
            .ok_or_else(|| EvalError::new("integer overflow")),
        Value::Double(d) => Ok(Value::Double(-d)),
        // A duration is int64 nanoseconds to cel-go: -(-2^63 ns) overflows.
        Value::Duration(d) => Some(-*d)
            .filter(|n| n.num_nanoseconds().is_some())
            .map(Value::Duration)
            .ok_or_else(|| EvalError::new("integer overflow")),
        _ => Err(overload()),
    })
    .worded(Wording::Negation);

/// A test of the target string by a string argument, worded bare as the
/// base environment's functions are.
const STRING_TEST: Function = Function::BASE
    .member_arities(&[1])
    .returns(TypeName::Bool)
    .accepts(|a| sig(a, &[is_string, is_string]))
    .worded(Wording::Bare);

fn str_pair<'a>(a: &[Value<'a>], f: fn(&str, &str) -> bool) -> Result<Value<'a>, EvalError> {
    Ok(Value::Bool(f(str_arg(first(a)?)?, str_arg(arg(a, 1)?)?)))
}

pub static CONTAINS: Function = STRING_TEST
    .named("contains", 23, "contains_string")
    .calls(|a| str_pair(a, |s, t| s.contains(t)))
    .costs(|a, _| scaled(arg_size(a, 0), 0.1) * scaled(arg_size(a, 1), 0.1))
    .estimates(|s| {
        let cost = shape_scaled(s, 0, 0.1) * shape_scaled(s, 1, 0.1);
        (cost, Shape::sized(1.0))
    });

/// The prefix and suffix tests: cel-go estimates them by the affix, and
/// charges them by the target at run time up to 1.36, by the affix from
/// 1.37 (cel-go 0.29).
const AFFIX_TEST: Function = STRING_TEST
    .costs(tenth_of_target)
    .estimates(|s| (shape_scaled(s, 1, 0.1), Shape::sized(1.0)));

fn tenth_of_affix(a: &[Value<'_>], _: &Value<'_>) -> u64 {
    scaled(arg_size(a, 1), 0.1)
}

const STARTS_WITH_ROW: Function = AFFIX_TEST
    .named("startsWith", 23, "starts_with_string")
    .calls(|a| str_pair(a, |s, t| s.starts_with(t)));

pub static STARTS_WITH: Function = STARTS_WITH_ROW.charged_from(37, &STARTS_WITH_BY_AFFIX);

static STARTS_WITH_BY_AFFIX: Function = STARTS_WITH_ROW.costs(tenth_of_affix);

const ENDS_WITH_ROW: Function = AFFIX_TEST
    .named("endsWith", 23, "ends_with_string")
    .calls(|a| str_pair(a, |s, t| s.ends_with(t)));

pub static ENDS_WITH: Function = ENDS_WITH_ROW.charged_from(37, &ENDS_WITH_BY_AFFIX);

static ENDS_WITH_BY_AFFIX: Function = ENDS_WITH_ROW.costs(tenth_of_affix);

/// The runtime charge of `matches` on a string with a pattern of
/// `pattern_len` characters (also charged by the evaluator for a
/// `matches` whose pattern was compiled at load).
pub fn matches_cost(s: &Value<'_>, pattern_len: usize) -> u64 {
    scaled(1 + crate::value::size(s), 0.1) * scaled(pattern_len as u64, 0.25)
}

fn matches_with<'a>(a: &[Value<'a>], re: &Regex) -> Result<Value<'a>, EvalError> {
    Ok(Value::Bool(re.is_match(str_arg(first(a)?)?)))
}

pub static MATCHES: Function = STRING_TEST
    .named("matches", 23, "matches matches_string")
    .global_arities(&[2])
    .calls(|a| {
        str_arg(first(a)?)?;
        let re = MATCHES.compile_regex(str_arg(arg(a, 1)?)?)?;
        matches_with(a, &re)
    })
    .regex(RegexArg {
        arg: 1,
        call: matches_with,
        illegal_prefix: false,
    })
    .costs(|a, _| matches_cost(a.first().unwrap_or(&Value::Null), arg_size(a, 1) as usize))
    .estimates(|s| {
        (
            ((1.0 + shape_size(s, 0)) * 0.1).ceil() * shape_scaled(s, 1, 0.25),
            unit_scalar(s).1,
        )
    });
