//! [`Ir::FieldCmp`]: a field of a variable compared with a constant in one
//! step (see `fuse`).

use super::*;
use crate::ir::{FieldCmp, FieldTest};
use crate::value::Str;

/// The comparison read from the JSON object, charged as the walk of
/// `fallback` charges it: a unit for the variable, one for the selection,
/// and the operator's (1 for ints, the strings' compare cost, nothing for
/// `in` a literal list). Anything else runs `fallback`.
#[inline(always)]
pub(super) fn field_cmp<'a>(c: &'a FieldCmp, f: &mut Frame<'a>) -> Result<Value<'a>, EvalError> {
    if let Some((result, cost)) = fast(c, f) {
        // Only where the limit cannot stop it midway.
        if f.cost.saturating_add(cost) <= f.limit {
            f.cost += cost;
            return Ok(Value::Bool(result));
        }
    }
    eval(&c.fallback, f)
}

#[inline(always)]
fn fast(c: &FieldCmp, f: &Frame<'_>) -> Option<(bool, u64)> {
    let Value::Map(m @ Map::Json { .. }) = &f.vars[c.slot] else {
        return None;
    };
    // Taken apart by value: the arms that answer leave nothing to drop.
    Some(match (&c.test, m.get_field(&c.field, c.position)?) {
        (FieldTest::Int(op, k), Value::Int(i)) => (int_compare(*op, i, *k)?, 3),
        (FieldTest::Str(eq, t), Value::Str(Str::Borrowed(s))) => {
            ((s == &**t) == *eq, 2 + charge::compare_cost_str(s, t))
        }
        (FieldTest::OneOf(items), Value::Str(Str::Borrowed(s))) => {
            (items.iter().any(|t| &**t == s), 2)
        }
        _ => return None,
    })
}
