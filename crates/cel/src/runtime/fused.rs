//! [`Ir::FieldCmp`]: a field of a variable compared with a constant in one
//! step (see `fuse`), and loops whose bodies are made of such comparisons,
//! run on a JSON list's objects without binding each element.

use super::*;
use crate::ir::{FieldCmp, FieldTest};
use crate::value::{Str, ANY};
use celhook_json::Value as Json;

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
    fast_on(c, m)
}

/// The comparison on the JSON object `m` and its charge; `None` where
/// only the walk of the fallback answers.
#[inline(always)]
fn fast_on<'a>(c: &FieldCmp, m: &Map<'a>) -> Option<(bool, u64)> {
    judge(c, read_on(c, m)?)
}

/// A field value a fused test compares: the int or the string read.
#[derive(Clone, Copy)]
enum Read<'a> {
    Int(i64),
    Str(&'a str),
}

/// The field a fused test reads, from the JSON object `m`.
#[inline(always)]
fn read_on<'a>(c: &FieldCmp, m: &Map<'a>) -> Option<Read<'a>> {
    let mut value = m.get_field(&c.field, c.position)?;
    for (field, position) in &*c.then {
        value = match value {
            Value::Map(next @ Map::Json { .. }) => next.get_field(field, *position)?,
            _ => return None,
        };
    }
    // Taken apart by value: the arms that answer leave nothing to drop.
    match value {
        Value::Int(i) => Some(Read::Int(i)),
        Value::Str(Str::Borrowed(s)) => Some(Read::Str(s)),
        _ => None,
    }
}

/// The test on the field read, and its charge.
#[inline(always)]
fn judge(c: &FieldCmp, read: Read<'_>) -> Option<(bool, u64)> {
    let reads = 2 + c.then.len() as u64;
    Some(match (&c.test, read) {
        (FieldTest::Int(op, k), Read::Int(i)) => (int_compare(*op, i, *k)?, reads + 1),
        (FieldTest::Str(eq, t), Read::Str(s)) => {
            ((s == &**t) == *eq, reads + charge::compare_cost_str(s, t))
        }
        (FieldTest::OneOf(items), Read::Str(s)) => (items.iter().any(|t| &**t == s), reads),
        // `size` is a call of one unit, its comparison another.
        (FieldTest::Size(op, k), Read::Str(s)) => {
            let n = i64::try_from(crate::value::str_size(s)).ok()?;
            (int_compare(*op, n, *k)?, reads + 2)
        }
        (FieldTest::Matches(re, pattern_len), Read::Str(s)) => {
            let cost = crate::library::core::matches_cost_str(s, *pattern_len as usize);
            (re.is_match(s), reads + cost)
        }
        _ => return None,
    })
}

/// True when two fused tests read the same field of the same variable.
fn same_field(a: &FieldCmp, b: &FieldCmp) -> bool {
    a.slot == b.slot && a.position == b.position && a.field == b.field && a.then == b.then
}

/// A loop marked `fused_body` over a JSON list: each element's object is
/// tested in place (no element value bound, so nothing to drop), and the
/// steps are charged as the plain loop charges them. `None`, with the cost
/// put back, on anything the fused comparisons do not answer (an element
/// not an object, a field missing or of another type, a budget spent): the
/// plain loop then runs and answers, or fails, as it would have.
pub(super) fn fused_loop<'a>(l: &'a Loop, list: &List<'a>, f: &mut Frame<'a>) -> Option<Value<'a>> {
    let List::Json { items, schema } = *list else {
        return None;
    };
    let start = f.cost;
    let item_schema = schema.items.as_deref().unwrap_or(&ANY);
    let result = scan_steps(l.kind, items.iter(), list, f, |item, f| match item {
        Json::Object(obj) => test(
            &l.body,
            &Map::Json {
                obj,
                schema: item_schema,
            },
            &mut None,
            f,
        ),
        _ => None,
    });
    if result.is_none() {
        f.cost = start;
    }
    result
}

/// A fused body on one element object, charged as [`eval`] charges it
/// (`&&` and `||` nothing of their own, `!` one unit). `last` keeps the
/// last field read, for the next test of the same field (`p.port > 0 &&
/// p.port < 65536`): each test is still charged its read, as the walk
/// charges a kept read.
fn test<'a>(
    ir: &'a Ir,
    m: &Map<'a>,
    last: &mut Option<(&'a FieldCmp, Read<'a>)>,
    f: &mut Frame<'a>,
) -> Option<bool> {
    match ir {
        Ir::And(a, b) => Some(test(a, m, last, f)? && test(b, m, last, f)?),
        Ir::Or(a, b) => Some(test(a, m, last, f)? || test(b, m, last, f)?),
        Ir::Not(a) => {
            let r = test(a, m, last, f)?;
            f.charge(1).ok()?;
            Some(!r)
        }
        Ir::FieldCmp(c) => {
            let read = match *last {
                Some((before, read)) if same_field(before, c) => read,
                _ => {
                    let read = read_on(c, m)?;
                    *last = Some((c, read));
                    read
                }
            };
            let (r, cost) = judge(c, read)?;
            f.charge(cost).ok()?;
            Some(r)
        }
        _ => None,
    }
}

/// A chain of field selections ending at a variable (`p.name`,
/// `o.spec.port`, kept reads looked through), read straight from the JSON
/// objects, with what the walk charges for it: the variable and each
/// selection a unit. `root` gives the object a variable holds. `None`
/// where only the walk answers (not a JSON object, a missing or null
/// field, a presence test).
pub(super) fn chain_read<'a>(
    ir: &'a Ir,
    root: &mut impl FnMut(usize) -> Option<Map<'a>>,
) -> Option<(u64, Value<'a>)> {
    match ir {
        Ir::Memo { inner, .. } | Ir::ElemMemo { inner, .. } => chain_read(inner, root),
        Ir::Select {
            operand,
            field,
            test: false,
            position,
        } => {
            let (cost, m) = match &**operand {
                Ir::Var(slot) => (1, root(*slot)?),
                inner => match chain_read(inner, root)? {
                    (cost, Value::Map(m @ Map::Json { .. })) => (cost, m),
                    _ => return None,
                },
            };
            Some((cost + 1, m.get_field(field, *position)?))
        }
        _ => None,
    }
}

/// The JSON object variable `slot` holds, for [`chain_read`].
pub(super) fn json_var<'a>(f: &Frame<'a>, slot: usize) -> Option<Map<'a>> {
    match f.vars.get(slot)? {
        Value::Map(m @ Map::Json { .. }) => Some(m.clone()),
        _ => None,
    }
}
