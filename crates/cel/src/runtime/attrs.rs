//! What cel-go plans as attributes and short circuits rather than as calls,
//! and so charges differently: a variable with its field reads and
//! constant indexes is one attribute (a key that is one is resolved
//! without charge), and `or`/`orValue` run their argument only when needed.

use super::{eval, Frame};
use crate::ir::Ir;
use crate::value::error::EvalError;
use crate::value::Value;

/// A variable, or field reads and constant indexes on one.
pub(super) fn is_constant_key_chain(ir: &Ir) -> bool {
    match ir {
        Ir::Var(_) => true,
        Ir::Select {
            operand,
            test: false,
            ..
        } => is_constant_key_chain(operand),
        Ir::Index(a, b) => is_constant_key_chain(a) && b.constant().is_some(),
        Ir::Memo { inner, .. } | Ir::ElemMemo { inner, .. } => is_constant_key_chain(inner),
        _ => false,
    }
}

/// Whether cel-go plans `ir` as an attribute, so that a field read or an
/// index on it adds a qualifier. On anything else (a literal, a call's or
/// a comprehension's result) it starts a relative attribute over the
/// value, which costs 1 beside its qualifiers.
pub(super) fn plans_as_attribute(ir: &Ir) -> bool {
    match ir {
        Ir::Var(_)
        | Ir::Lazy(_)
        | Ir::Select { test: false, .. }
        | Ir::Index(..)
        | Ir::OptSelect { .. }
        | Ir::OptIndex(..) => true,
        Ir::Memo { inner, .. } | Ir::ElemMemo { inner, .. } => plans_as_attribute(inner),
        // cel-go plans every conditional as an attribute over its branches.
        Ir::Cond(..) => true,
        _ => false,
    }
}

/// Whether evaluating `ir` charges the 1 of an attribute (a variable, a
/// field read or index, the `variables` of a composition) that cel-go
/// does not charge where it resolves the attribute itself.
pub(super) fn charges_attribute_step(ir: &Ir) -> bool {
    // A conditional is an attribute without a step of its own.
    !matches!(ir, Ir::Cond(..)) && plans_as_attribute(ir)
}

/// The key of an index: one that is an attribute (`m[k]`, `m[self.key]`)
/// is a qualifier of the indexed value, its reads not charged.
pub(super) fn index_key<'a>(key: &'a Ir, f: &mut Frame<'a>) -> Result<Value<'a>, EvalError> {
    if !is_constant_key_chain(key) {
        return eval(key, f);
    }
    let before = f.cost;
    let value = eval(key, f);
    f.cost = before;
    value
}

/// `target.or(alt)` (`value: false`) and `target.orValue(alt)`: a target
/// that is not an optional comes back as it is, as cel-go hands it back.
pub(super) fn opt_or<'a>(
    target: &'a Ir,
    alt: &'a Ir,
    value: bool,
    f: &mut Frame<'a>,
) -> Result<Value<'a>, EvalError> {
    match eval(target, f)? {
        Value::Optional(Some(v)) if value => Ok((*v).clone()),
        Value::Optional(None) => eval(alt, f),
        present => Ok(present),
    }
}
