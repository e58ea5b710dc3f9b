//! cel-go's optional library (version 2): `optional.of`, `optional.none`,
//! `optional.ofNonZeroValue`, `hasValue`, `value`, `orValue`, `or`,
//! `optional.unwrap` and `unwrapOpt`. The `?.` and `[?]` syntax and
//! `optMap`/`optFlatMap` are the checker's.

use std::rc::Rc;

use crate::registry::{first, list_arg, overload, Function};
use crate::shape::{Compared, Shape};
use crate::types::Ty;
use crate::value::{TypeName, Value};

/// Returns its first argument's shape at unit cost.
fn passes_shape<'s>(s: &[Shape<'s>]) -> (f64, Shape<'s>) {
    (1.0, s.first().copied().unwrap_or(Shape::sized(1.0)))
}

fn wrap_check<'s>(a: &[Ty<'s>]) -> Option<Ty<'s>> {
    a.first().map(|t| Ty::Optional(Box::new(t.clone())))
}

/// `optional.of(x)` and `optional.ofNonZeroValue(x)`.
const WRAP: Function = Function::BASE
    .global_arities(&[1])
    .returns(TypeName::Optional)
    .checks(wrap_check);

pub static OF: Function = WRAP
    .named("optional.of", 28, "optional_of")
    .calls(|a| Ok(Value::Optional(Some(Rc::new(first(a)?.clone())))))
    .estimates(passes_shape);

pub static NONE: Function = Function::BASE
    .named("optional.none", 28, "optional_none")
    .global_arities(&[0])
    .returns(TypeName::Optional)
    .calls(|_| Ok(Value::Optional(None)))
    // Of `dyn`: never a scalar to the estimator.
    .estimates(|_| {
        let mut shape = Shape::sized(1.0);
        shape.compared = Compared::Unsized;
        (1.0, shape)
    });

pub static OF_NON_ZERO_VALUE: Function = WRAP
    .named("optional.ofNonZeroValue", 28, "optional_ofNonZeroValue")
    .calls(|a| {
        let v = first(a)?;
        Ok(Value::Optional(if is_zero(v) {
            None
        } else {
            Some(Rc::new(v.clone()))
        }))
    });

pub static HAS_VALUE: Function = Function::BASE
    .named("hasValue", 28, "optional_hasValue")
    .member_arities(&[0])
    .returns(TypeName::Bool)
    .accepts(|a| matches!(a, [Ty::Optional(_) | Ty::Dyn]))
    .calls(|a| match first(a)? {
        Value::Optional(o) => Ok(Value::Bool(o.is_some())),
        _ => Err(overload()),
    });

pub static VALUE: Function = Function::BASE
    .named("value", 28, "optional_value")
    .member_arities(&[0])
    .checks(|a| match a {
        [Ty::Optional(t)] => Some((**t).clone()),
        [Ty::Dyn] => Some(Ty::Dyn),
        _ => None,
    })
    .calls(|a| match first(a)? {
        Value::Optional(Some(v)) => Ok((**v).clone()),
        Value::Optional(None) => Err(crate::EvalError::new("optional.none() dereference")),
        _ => Err(overload()),
    })
    .estimates(|s| {
        let (cost, mut shape) = passes_shape(s);
        shape.optional = false;
        (cost, shape)
    });

/// Planned as a short circuit, never called: see `Ir::OptOr`.
pub static OR_VALUE: Function = Function::BASE
    .named("orValue", 28, "optional_orValue_value")
    .member_arities(&[1])
    .checks(|a| match a {
        [Ty::Optional(t), v] if t.unifies(v) => Some(t.join(v)),
        [Ty::Dyn, v] => Some(v.clone()),
        _ => None,
    });

/// Planned as a short circuit, never called: see `Ir::OptOr`.
pub static OR: Function = Function::BASE
    .named("or", 28, "optional_or_optional")
    .member_arities(&[1]);

/// The values of the present optionals of a list, in order.
fn unwrap<'a>(a: &[Value<'a>]) -> Result<Value<'a>, crate::EvalError> {
    let mut out = Vec::new();
    for v in list_arg(first(a)?)?.iter() {
        match v {
            Value::Optional(Some(inner)) => out.push((*inner).clone()),
            Value::Optional(None) => {}
            _ => return Err(overload()),
        }
    }
    Ok(Value::list(out))
}

pub static UNWRAP: Function = Function::BASE
    .named("optional.unwrap", 33, "optional_unwrap")
    .global_arities(&[1])
    .returns(TypeName::List)
    .calls(unwrap);

pub static UNWRAP_OPT: Function = Function::BASE
    .named("unwrapOpt", 33, "optional_unwrapOpt")
    .member_arities(&[0])
    .returns(TypeName::List)
    .calls(unwrap);

fn is_zero(v: &Value<'_>) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Int(i) => *i == 0,
        Value::Uint(u) => *u == 0,
        Value::Double(d) => *d == 0.0,
        Value::Str(s) => s.is_empty(),
        Value::Bytes(b) => b.is_empty(),
        Value::Duration(d) => d.is_zero(),
        // The zero timestamp is Go's zero time, 0001-01-01T00:00:00Z.
        Value::Timestamp(t) => t.timestamp() == -62_135_596_800 && t.timestamp_subsec_nanos() == 0,
        Value::List(l) => l.is_empty(),
        Value::Map(m) => m.is_empty(),
        Value::Type(_) => false,
        Value::Optional(o) => o.is_none(),
        Value::Lib(_) => false,
    }
}
