//! Kubernetes' semver library: `semver()` and `isSemver()`, with the
//! optional normalizing flag, and the `major`, `minor`, `patch` accessors.
//! The comparisons semvers share with quantities (`isGreaterThan`,
//! `isLessThan`, `compareTo`) are rows of `quantity.rs`.

use std::rc::Rc;

use crate::registry::{
    arg, arg_size, first, is_bool, is_string, overload, scaled, shape_size, sig, str_arg,
    unit_scalar, Function,
};
use crate::shape::Shape;
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
    match v {
        Value::Lib(l) => match &**l {
            LibValue::Semver(s) => Ok(s),
            _ => Err(overload()),
        },
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

/// A version string, with or without the normalizing flag.
fn version_args(a: &[Ty<'_>]) -> bool {
    sig(a, &[is_string]) || sig(a, &[is_string, is_bool])
}

/// Parsing pays a tenth of the string's length, at run time and in the
/// static estimate alike.
const PARSER: Function = Function {
    global: &[1, 2],
    cost: |a, _| scaled(arg_size(a, 0), 0.1),
    estimate: |s| ((shape_size(s, 0) * 0.1).ceil(), Shape::sized(1.0)),
    ..Function::BASE
};

pub static SEMVER: Function = Function {
    name: "semver",
    overloads: &[("string_to_semver", 33), ("string_bool_to_semver", 33)],
    result: Some(TypeName::Semver),
    check: Some(|a| version_args(a).then_some(Ty::Lib(TypeName::Semver))),
    call: |a| {
        let v = parse(a)?.map_err(EvalError::new)?;
        Ok(Value::Lib(Rc::new(LibValue::Semver(v))))
    },
    ..PARSER
};

pub static IS_SEMVER: Function = Function {
    name: "isSemver",
    overloads: &[("is_semver_string", 33), ("is_semver_string_bool", 33)],
    result: Some(TypeName::Bool),
    check: Some(|a| version_args(a).then_some(Ty::Bool)),
    call: |a| Ok(Value::Bool(parse(a)?.is_ok())),
    ..PARSER
};

/// An accessor of one version component: `x.major()` and the like.
const COMPONENT: Function = Function {
    member: &[0],
    result: Some(TypeName::Int),
    check: Some(|a| sig(a, &[is_semver]).then_some(Ty::Int)),
    estimate: unit_scalar,
    ..Function::BASE
};

pub static MAJOR: Function = Function {
    name: "major",
    overloads: &[("semver_major", 33)],
    call: |a| Ok(Value::Int(semver_arg(first(a)?)?.major as i64)),
    ..COMPONENT
};

pub static MINOR: Function = Function {
    name: "minor",
    overloads: &[("semver_minor", 33)],
    call: |a| Ok(Value::Int(semver_arg(first(a)?)?.minor as i64)),
    ..COMPONENT
};

pub static PATCH: Function = Function {
    name: "patch",
    overloads: &[("semver_patch", 33)],
    call: |a| Ok(Value::Int(semver_arg(first(a)?)?.patch as i64)),
    ..COMPONENT
};
