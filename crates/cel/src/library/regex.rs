//! Kubernetes' regex library: `find` and `findAll`, with RE2 patterns
//! compiled at load when constant.

use regex::Regex;

use crate::registry::{
    arg, arg_size, first, int_arg, scaled, shape_scaled, shape_size, str_arg, Function, RegexArg,
};
use crate::shape::Shape;
use crate::value::error::EvalError;
use crate::value::{TypeName, Value};

/// The target's traversal times the pattern's size.
fn regex_cost(a: &[Value<'_>], _: &Value<'_>) -> u64 {
    scaled(1 + arg_size(a, 0), 0.1) * scaled(arg_size(a, 1), 0.25)
}

fn regex_estimate<'s>(s: &[Shape<'s>]) -> (f64, Shape<'s>) {
    (
        ((1.0 + shape_size(s, 0)) * 0.1).ceil() * shape_scaled(s, 1, 0.25),
        Shape::sized(shape_size(s, 0)),
    )
}

fn find_with<'a>(a: &[Value<'a>], re: &Regex) -> Result<Value<'a>, EvalError> {
    let s = str_arg(first(a)?)?;
    Ok(Value::string(
        re.find(s).map(|m| m.as_str()).unwrap_or_default(),
    ))
}

fn find_all_with<'a>(a: &[Value<'a>], re: &Regex) -> Result<Value<'a>, EvalError> {
    let s = str_arg(first(a)?)?;
    let limit = match a.get(2) {
        Some(v) => int_arg(v)?,
        None => -1,
    };
    let matches = re.find_iter(s).map(|m| Value::string(m.as_str()));
    Ok(Value::list(if limit < 0 {
        matches.collect()
    } else {
        matches.take(limit as usize).collect()
    }))
}

/// `find` and `findAll`: the target searched for the pattern.
const SEARCH: Function = Function::BASE.costs(regex_cost).estimates(regex_estimate);

/// The pattern argument of a search; cel-go prefixes its compile errors
/// with `Illegal regex: `.
const fn pattern(
    call: for<'a> fn(&[Value<'a>], &Regex) -> Result<Value<'a>, EvalError>,
) -> RegexArg {
    RegexArg {
        arg: 1,
        call,
        illegal_prefix: true,
    }
}

/// A search whose pattern was not constant: compiled on each call.
fn compiled_on_call<'a>(row: &'static Function, a: &[Value<'a>]) -> Result<Value<'a>, EvalError> {
    let re = row.compile_regex(str_arg(arg(a, 1)?)?)?;
    row.invoke_with_regex(a, &re)
}

pub static FIND: Function = SEARCH
    .named("find", 24, "string_find_string")
    .member_arities(&[1])
    .returns(TypeName::String)
    .calls(|a| compiled_on_call(&FIND, a))
    .regex(pattern(find_with));

// Alike in its first lines with strings.rs's `replace` and `substring`:
// only the builder chain is shared; each is its own CEL function.
pub static FIND_ALL: Function = SEARCH
    .named(
        "findAll",
        24,
        "string_find_all_string string_find_all_string_int",
    )
    .member_arities(&[1, 2])
    .returns(TypeName::List)
    .calls(|a| compiled_on_call(&FIND_ALL, a))
    .regex(pattern(find_all_with));
