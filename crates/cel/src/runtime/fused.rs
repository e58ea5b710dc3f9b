//! [`Ir::FieldCmp`]: a field of a variable compared with a constant in one
//! step (see `fuse`).

use super::*;
use crate::ir::{FieldCmp, FieldTest};
use crate::value::Str;

/// The comparison read from the JSON objects, charged as the walk of
/// `fallback` charges it: a unit for the variable, one per selection, and
/// the operator's (1 for ints, the strings' compare cost, nothing for `in`
/// a literal list). Anything else runs `fallback`.
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
fn fast<'a>(c: &FieldCmp, f: &Frame<'a>) -> Option<(bool, u64)> {
    let Value::Map(m @ Map::Json { .. }) = &f.vars[c.slot] else {
        return None;
    };
    let mut value = m.get_field(&c.field, c.position)?;
    for (field, position) in &*c.then {
        value = match value {
            Value::Map(next @ Map::Json { .. }) => next.get_field(field, *position)?,
            _ => return None,
        };
    }
    let reads = 2 + c.then.len() as u64;
    // Taken apart by value: the arms that answer leave nothing to drop.
    Some(match (&c.test, value) {
        (FieldTest::Int(op, k), Value::Int(i)) => (int_compare(*op, i, *k)?, reads + 1),
        (FieldTest::Str(eq, t), Value::Str(Str::Borrowed(s))) => {
            ((s == &**t) == *eq, reads + charge::compare_cost_str(s, t))
        }
        (FieldTest::OneOf(items), Value::Str(Str::Borrowed(s))) => {
            (items.iter().any(|t| &**t == s), reads)
        }
        _ => return None,
    })
}
