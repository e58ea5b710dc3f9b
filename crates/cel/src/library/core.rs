//! The standard library's core functions: `size`, negation, and the
//! string predicates and `matches` of the base environment.

use regex::Regex;

use crate::registry::{
    arg, arg_size, first, is_string, overload, scaled, shape_size, sig, str_arg, unit_scalar,
    Function, RegexArg, Wording,
};
use crate::shape::Shape;
use crate::types::Ty;
use crate::value::error::EvalError;
use crate::value::{str_size, TypeName, Value};

pub static SIZE: Function = Function {
    name: "size",
    overloads: &[
        ("size_string", 23),
        ("size_bytes", 23),
        ("size_list", 23),
        ("size_map", 23),
        ("string_size", 23),
        ("bytes_size", 23),
        ("list_size", 23),
        ("map_size", 23),
    ],
    member: &[0],
    global: &[1],
    result: Some(TypeName::Int),
    check: Some(|a| {
        matches!(
            a,
            [Ty::String | Ty::Bytes | Ty::List(_) | Ty::Map(..) | Ty::Dyn]
        )
        .then_some(Ty::Int)
    }),
    call: |a| {
        Ok(Value::Int(match first(a)? {
            Value::Str(s) => str_size(s) as i64,
            Value::Bytes(b) => b.len() as i64,
            Value::List(l) => l.len() as i64,
            Value::Map(m) => m.len() as i64,
            _ => return Err(overload()),
        }))
    },
    wording: Wording::Name,
    ..Function::BASE
};

/// `-x`: the checker types it as an operator; the program calls this row.
pub static NEGATE: Function = Function {
    name: "-_",
    overloads: &[],
    call: |a| match first(a)? {
        Value::Int(i) => i
            .checked_neg()
            .map(Value::Int)
            .ok_or_else(|| EvalError::new("integer overflow")),
        Value::Double(d) => Ok(Value::Double(-d)),
        Value::Duration(d) => Ok(Value::Duration(-*d)),
        _ => Err(overload()),
    },
    wording: Wording::Negation,
    ..Function::BASE
};

fn two_strings(a: &[Ty<'_>]) -> bool {
    sig(a, &[is_string, is_string])
}

fn str_pair<'a>(a: &[Value<'a>], f: fn(&str, &str) -> bool) -> Result<Value<'a>, EvalError> {
    Ok(Value::Bool(f(str_arg(first(a)?)?, str_arg(arg(a, 1)?)?)))
}

/// A tenth of the target's length: the prefix and suffix tests.
fn traverse_target(a: &[Value<'_>], _: &Value<'_>) -> u64 {
    scaled(arg_size(a, 0), 0.1)
}

fn estimate_traverse_target<'s>(s: &[Shape<'s>]) -> (f64, Shape<'s>) {
    ((shape_size(s, 0) * 0.1).ceil(), Shape::sized(1.0))
}

pub static CONTAINS: Function = Function {
    name: "contains",
    overloads: &[("contains_string", 23)],
    member: &[1],
    result: Some(TypeName::Bool),
    check: Some(|a| two_strings(a).then_some(Ty::Bool)),
    call: |a| str_pair(a, |s, t| s.contains(t)),
    cost: |a, _| scaled(arg_size(a, 0), 0.1) * scaled(arg_size(a, 1), 0.1),
    estimate: |s| {
        (
            (shape_size(s, 0) * 0.1).ceil() * (shape_size(s, 1) * 0.1).ceil(),
            Shape::sized(1.0),
        )
    },
    wording: Wording::Bare,
    ..Function::BASE
};

pub static STARTS_WITH: Function = Function {
    name: "startsWith",
    overloads: &[("starts_with_string", 23)],
    member: &[1],
    result: Some(TypeName::Bool),
    check: Some(|a| two_strings(a).then_some(Ty::Bool)),
    call: |a| str_pair(a, |s, t| s.starts_with(t)),
    cost: traverse_target,
    estimate: estimate_traverse_target,
    wording: Wording::Bare,
    ..Function::BASE
};

pub static ENDS_WITH: Function = Function {
    name: "endsWith",
    overloads: &[("ends_with_string", 23)],
    member: &[1],
    result: Some(TypeName::Bool),
    check: Some(|a| two_strings(a).then_some(Ty::Bool)),
    call: |a| str_pair(a, |s, t| s.ends_with(t)),
    cost: traverse_target,
    estimate: estimate_traverse_target,
    wording: Wording::Bare,
    ..Function::BASE
};

/// The runtime charge of `matches` on a string with a pattern of
/// `pattern_len` characters (also charged by the evaluator for a
/// `matches` whose pattern was compiled at load).
pub fn matches_cost(s: &Value<'_>, pattern_len: usize) -> u64 {
    scaled(1 + crate::value::size(s), 0.1) * scaled(pattern_len as u64, 0.25)
}

fn matches_with<'a>(a: &[Value<'a>], re: &Regex) -> Result<Value<'a>, EvalError> {
    Ok(Value::Bool(re.is_match(str_arg(first(a)?)?)))
}

pub static MATCHES: Function = Function {
    name: "matches",
    overloads: &[("matches", 23), ("matches_string", 23)],
    member: &[1],
    global: &[2],
    result: Some(TypeName::Bool),
    check: Some(|a| two_strings(a).then_some(Ty::Bool)),
    call: |a| {
        str_arg(first(a)?)?;
        let re = MATCHES.compile_regex(str_arg(arg(a, 1)?)?)?;
        matches_with(a, &re)
    },
    regex: Some(RegexArg {
        arg: 1,
        call: matches_with,
        illegal_prefix: false,
    }),
    cost: |a, _| matches_cost(a.first().unwrap_or(&Value::Null), arg_size(a, 1) as usize),
    estimate: |s| {
        (
            ((1.0 + shape_size(s, 0)) * 0.1).ceil() * (shape_size(s, 1) * 0.25).ceil(),
            unit_scalar(s).1,
        )
    },
    wording: Wording::Bare,
    ..Function::BASE
};
