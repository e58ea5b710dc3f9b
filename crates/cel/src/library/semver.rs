//! Kubernetes' semver library: `semver()` and `isSemver()`, with the
//! optional normalizing flag, and the `major`, `minor`, `patch` accessors.
//! The comparisons semvers share with quantities (`isGreaterThan`,
//! `isLessThan`, `compareTo`) are rows of `quantity.rs`.

use super::{METHOD, PARSER};
use crate::registry::{
    arg, first, is_bool, is_string, lib_arg, lib_value, overload, sig, str_arg, Function,
};
use crate::types::Ty;
use crate::value::error::EvalError;
use crate::value::k8s::semver::Semver;
use crate::value::k8s::LibValue;
use crate::value::{TypeName, Value};

pub(crate) fn is_semver(t: &Ty<'_>) -> bool {
    matches!(t, Ty::Lib(TypeName::Semver))
}

/// The semver a value holds, or the overload error for anything else.
fn semver_arg<'v>(v: &'v Value<'_>) -> Result<&'v Semver, EvalError> {
    match lib_arg(v)? {
        LibValue::Semver(s) => Ok(s),
        _ => Err(overload()),
    }
}

/// Reads the version string and the flag, checking both types before
/// parsing, so that a wrong flag type reports the overload error and not a
/// parse error.
fn parse(a: &[Value<'_>]) -> Result<Result<Semver, String>, EvalError> {
    let s = str_arg(first(a)?)?;
    let normalize = match a.len() {
        1 => false,
        _ => match arg(a, 1)? {
            Value::Bool(b) => *b,
            _ => return Err(overload()),
        },
    };
    Ok(if normalize {
        Semver::parse_normalized(s)
    } else {
        Semver::parse(s)
    })
}

/// A parser of a version string, with or without the normalizing flag.
const VERSION_PARSER: Function = PARSER
    .global_arities(&[1, 2])
    .accepts(|a| sig(a, &[is_string]) || sig(a, &[is_string, is_bool]));

pub static SEMVER: Function = VERSION_PARSER
    .named("semver", 33, "string_to_semver string_bool_to_semver")
    .returns(TypeName::Semver)
    .calls(|a| {
        let v = parse(a)?.map_err(EvalError::new)?;
        Ok(lib_value(LibValue::Semver(v)))
    });

pub static IS_SEMVER: Function = VERSION_PARSER
    .named("isSemver", 33, "is_semver_string is_semver_string_bool")
    .returns(TypeName::Bool)
    .calls(|a| Ok(Value::Bool(parse(a)?.is_ok())));

/// An accessor of one version component: `x.major()` and the like.
const COMPONENT: Function = METHOD
    .returns(TypeName::Int)
    .accepts(|a| sig(a, &[is_semver]));

pub static MAJOR: Function = COMPONENT
    .named("major", 33, "semver_major")
    .calls(|a| Ok(Value::Int(semver_arg(first(a)?)?.major as i64)));

pub static MINOR: Function = COMPONENT
    .named("minor", 33, "semver_minor")
    .calls(|a| Ok(Value::Int(semver_arg(first(a)?)?.minor as i64)));

pub static PATCH: Function = COMPONENT
    .named("patch", 33, "semver_patch")
    .calls(|a| Ok(Value::Int(semver_arg(first(a)?)?.patch as i64)));
