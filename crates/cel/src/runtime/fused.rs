//! [`Ir::FieldCmp`]: a field of a variable compared with a constant in one
//! step (see `fuse`), and loops whose bodies are made of such comparisons,
//! run on a JSON list's objects without binding each element.

use super::*;
use crate::ir::{FieldCmp, FieldPair, FieldTest, PairSide};
use crate::value::{str_size, Str};
use celhook_json::Value as Json;
use celhook_schema::Type;

/// The comparison read from the JSON objects, charged as the walk of
/// `fallback` charges it: a unit for the variable, one per selection, and
/// the operator's (1 for ints, the strings' compare cost, nothing for `in`
/// a literal list). Anything else runs `fallback`.
#[inline(always)]
pub(super) fn field_cmp<'a>(c: &'a FieldCmp, f: &mut Frame<'a>) -> Result<Value<'a>, EvalError> {
    fast_or_walk(fast(c, f), &c.fallback, f)
}

/// The verdict read from the JSON and its charge, where the limit cannot
/// stop it midway; otherwise (or without one) the walk of `fallback`.
#[inline(always)]
fn fast_or_walk<'a>(
    fast: Option<(bool, u64)>,
    fallback: &'a Ir,
    f: &mut Frame<'a>,
) -> Result<Value<'a>, EvalError> {
    if let Some((result, cost)) = fast {
        if f.cost.saturating_add(cost) <= f.limit {
            f.cost += cost;
            return Ok(Value::Bool(result));
        }
    }
    eval(fallback, f)
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

/// [`Ir::FieldPair`]: both sides read from the JSON objects and compared
/// in one step, charged as the walk of `fallback` charges it (each side's
/// variable and selections a unit each, each arithmetic operator a unit;
/// then the comparison: 1 for ints, the strings' compare cost). Anything
/// else (an overflow or a division by zero among them) runs `fallback`.
#[inline(never)]
pub(super) fn field_pair<'a>(c: &'a FieldPair, f: &mut Frame<'a>) -> Result<Value<'a>, EvalError> {
    fast_or_walk(pair_fast(c, f), &c.fallback, f)
}

#[inline(always)]
fn pair_fast<'a>(c: &'a FieldPair, f: &Frame<'a>) -> Option<(bool, u64)> {
    if let (PairSide::Join(x, y), s) | (s, PairSide::Join(x, y)) = (&c.left, &c.right) {
        return joined(c.op, s, x, y, f);
    }
    let (left, charged) = side(&c.left, f)?;
    let (right, more) = side(&c.right, f)?;
    let reads = charged + more;
    Some(match (left, right) {
        (Read::Int(i), Read::Int(j)) => (int_compare(c.op, i, j)?, reads + 1),
        (Read::Str(s), Read::Str(t)) if matches!(c.op, BinOp::Eq | BinOp::Ne) => (
            celhook_json::same_key(s, t) == (c.op == BinOp::Eq),
            reads + charge::compare_cost_str(s, t),
        ),
        _ => return None,
    })
}

/// One side of a [`FieldPair`] but a join, read, with what its walk
/// charges. Out of line: called for each side, and again for the sides of
/// arithmetic (inlined for both sides of a pair, the two copies were 40
/// more lines of code a review runs, `scripts/code-footprint.py`).
#[inline(never)]
fn side<'a>(s: &'a PairSide, f: &Frame<'a>) -> Option<(Read<'a>, u64)> {
    match s {
        PairSide::Field(slot, path) => match f.vars.get(*slot)? {
            Value::Map(m @ Map::Json { .. }) => {
                let ((field, position), then) = path.split_first()?;
                let read = read_chain(m, field, *position, then)?;
                Some((read, 1 + path.len() as u64))
            }
            _ => None,
        },
        PairSide::Int(k) => Some((Read::Int(*k), 0)),
        PairSide::Str(t) => Some((Read::Str(t), 0)),
        PairSide::Arith(op, a, b) => arith(*op, a, b, f),
        PairSide::Join(..) => None,
    }
}

/// `a op b` of two int sides, and what its walk charges (each side's, and
/// a unit for the operator); `None` on an overflow or a division by zero,
/// which the walk reports.
fn arith<'a>(
    op: BinOp,
    a: &'a PairSide,
    b: &'a PairSide,
    f: &Frame<'a>,
) -> Option<(Read<'a>, u64)> {
    let (Read::Int(i), x) = side(a, f)? else {
        return None;
    };
    let (Read::Int(j), y) = side(b, f)? else {
        return None;
    };
    let v = match op {
        BinOp::Add => i.checked_add(j),
        BinOp::Sub => i.checked_sub(j),
        BinOp::Mul => i.checked_mul(j),
        BinOp::Div => i.checked_div(j),
        BinOp::Rem => i.checked_rem(j),
        _ => None,
    }?;
    Some((Read::Int(v), x + y + 1))
}

/// `s == x + y` (or `!=`, either way round) without joining `x` and `y`,
/// charged as the walk charges the join (a tenth of their characters) and
/// the comparison (a tenth of the shorter side's).
#[inline(never)]
fn joined<'a>(
    op: BinOp,
    s: &'a PairSide,
    x: &'a PairSide,
    y: &'a PairSide,
    f: &Frame<'a>,
) -> Option<(bool, u64)> {
    if !matches!(op, BinOp::Eq | BinOp::Ne) {
        return None;
    }
    let ((Read::Str(s), a), (Read::Str(x), b), (Read::Str(y), c)) =
        (side(s, f)?, side(x, f)?, side(y, f)?)
    else {
        return None;
    };
    let (x_chars, y_chars) = (str_size(x), str_size(y));
    let join = crate::registry::scaled(x_chars + y_chars, 0.1);
    let compare =
        charge::long_compare_cost(s.len(), str_size(s), x.len() + y.len(), x_chars + y_chars);
    let same = s.len() == x.len() + y.len() && s.starts_with(x) && s.ends_with(y);
    Some((same == (op == BinOp::Eq), a + b + c + join + compare))
}

/// A field value a fused test compares: the int or the string read.
#[derive(Clone, Copy)]
pub(super) enum Read<'a> {
    Int(i64),
    Str(&'a str),
    /// A list's length, for `size` alone.
    Len(usize),
}

/// A table's column as fused tests read it (see [`Field::column`]).
#[derive(Clone, Copy)]
pub(super) enum Cells<'t> {
    Int(&'t [i64]),
    Str(celhook_json::Strings<'t>),
}

impl<'t> Cells<'t> {
    /// Row `i`'s value, as [`Field::read`] reads it from the element.
    #[inline(always)]
    pub(super) fn read(self, i: usize) -> Option<Read<'t>> {
        match self {
            Cells::Int(v) => v.get(i).map(|i| Read::Int(*i)),
            Cells::Str(v) => v.get(i).map(Read::Str),
        }
    }
}

/// The field a fused test reads, from the JSON object `m`.
#[inline(always)]
fn read_on<'a>(c: &FieldCmp, m: &Map<'a>) -> Option<Read<'a>> {
    read_chain(m, &c.field, c.position, &c.then)
}

/// The int, plain string or list length at the end of a chain of fields
/// (`field`, then each of `then`, with their schema positions) from the
/// JSON object `m`.
#[inline(always)]
fn read_chain<'a>(
    m: &Map<'a>,
    field: &str,
    position: Option<u32>,
    then: &[(Box<str>, Option<u32>)],
) -> Option<Read<'a>> {
    let Some(((last, last_at), between)) = then.split_last() else {
        return field_read(m, field, position);
    };
    let (mut obj, mut schema) = m.get_object(field, position)?;
    for (field, position) in between {
        (obj, schema) = Map::Json { obj, schema }.get_object(field, *position)?;
    }
    field_read(&Map::Json { obj, schema }, last, *last_at)
}

/// An int or a plain string field of `m`, as `Map::get_field` and
/// `Value::from_json` would give it, read from the JSON without making a
/// value where the schema position finds it; `None` for anything else
/// (a double, a string the schema's format converts, a missing field).
#[inline(always)]
fn field_read<'a>(m: &Map<'a>, field: &str, position: Option<u32>) -> Option<Read<'a>> {
    if let (Map::Json { obj, schema }, Some(p)) = (m, position) {
        if let Some(at) = Field::at(field, p as usize, schema) {
            return at.read(obj);
        }
    }
    // Taken apart by value: the arms that answer leave nothing to drop.
    match m.get_str(field)? {
        Value::Int(i) => Some(Read::Int(i)),
        Value::Str(Str::Borrowed(s)) => Some(Read::Str(s)),
        _ => None,
    }
}

/// The test on the field read, and its charge.
#[inline(always)]
fn judge(c: &FieldCmp, read: Read<'_>) -> Option<(bool, u64)> {
    test_read(&c.test, read, 2 + c.then.len() as u64)
}

/// `test` on the field read, and its charge: `reads` for the variable and
/// the selections, and what the test itself costs.
#[inline(always)]
pub(super) fn test_read(test: &FieldTest, read: Read<'_>, reads: u64) -> Option<(bool, u64)> {
    Some(match (test, read) {
        (FieldTest::Int(range), Read::Int(i)) => (range.holds(i), reads + 1),
        (FieldTest::Str(eq, t), Read::Str(s)) => (
            celhook_json::same_key(s, t) == *eq,
            reads + charge::compare_cost_str(s, t),
        ),
        (FieldTest::OneOf(items), Read::Str(s)) => (one_of(items, s), reads),
        // `size` is a call of one unit, its comparison another.
        (FieldTest::Size(range), Read::Str(s)) => {
            let n = i64::try_from(crate::value::str_size(s)).ok()?;
            (range.holds(n), reads + 2)
        }
        (FieldTest::Size(range), Read::Len(n)) => (range.holds(i64::try_from(n).ok()?), reads + 2),
        (FieldTest::Matches(re), Read::Str(s)) => (re.is_match(s), reads + re.cost(s)),
        _ => return None,
    })
}

/// `s in items`, in a loop of its own: `Iterator::any` was left a call.
#[inline(always)]
pub(super) fn one_of(items: &[std::sync::Arc<str>], s: &str) -> bool {
    one_of_bytes(items, s.as_bytes())
}

/// [`one_of`] of a string's bytes.
#[inline(always)]
pub(super) fn one_of_bytes(items: &[std::sync::Arc<str>], s: &[u8]) -> bool {
    for t in items {
        if celhook_json::same_bytes(t.as_bytes(), s) {
            return true;
        }
    }
    false
}

/// [`super::shapes::fused_loop`] for any fused body: its tests walked per
/// element.
pub(super) fn general<'a>(
    l: &'a Loop,
    items: &'a [Json],
    list: &List<'a>,
    item_schema: &'a celhook_schema::Schema,
    f: &mut Frame<'a>,
) -> Option<Value<'a>> {
    scan_steps(l.kind, items.iter(), list, f, |item, f| match item {
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
    })
}

/// A field of list elements at its position among their schema's
/// properties, with what that schema lets a read of it be (see
/// [`field_read`]), resolved once for a whole loop.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct Field<'n> {
    name: &'n str,
    position: usize,
    /// A number is read as an int (the field is not of type `number`).
    ints: bool,
    /// A string is read as it is (its format makes no other CEL type).
    strings: bool,
    /// A JSON list is a CEL list (the field is of type `array`): its
    /// length is read for `size`.
    lists: bool,
}

impl<'n> Field<'n> {
    /// Field `name` of objects of schema `items`, when the checker's
    /// `position` holds it; `None` where only a lookup by name answers.
    #[inline(always)]
    pub(super) fn at(
        name: &'n str,
        position: usize,
        items: &celhook_schema::Schema,
    ) -> Option<Self> {
        if items.additional_properties.is_some() {
            return None;
        }
        let child = items.properties.get_at(position, name)?;
        Some(Field {
            name,
            position,
            ints: child.ty != Type::Number,
            strings: !crate::value::converts_strings(child),
            lists: child.ty == Type::Array,
        })
    }

    /// As [`field_read`] reads it where the position applies: `None` for
    /// a missing field or one of another type.
    #[inline(always)]
    pub(super) fn read<'a>(&self, obj: &'a celhook_json::Map) -> Option<Read<'a>> {
        match obj.get_hinted(self.name, self.position)? {
            Json::Number(n) if self.ints => n.as_i64().map(Read::Int),
            Json::String(s) if self.strings => Some(Read::Str(s)),
            Json::Array(items) if self.lists => Some(Read::Len(items.len())),
            Json::Table(table) if self.lists => Some(Read::Len(table.len())),
            _ => None,
        }
    }

    /// The column of `table` this field reads, when it is one this field
    /// reads as [`Field::read`] reads it in every element (an int column
    /// for an int, a string column for a plain string).
    #[inline]
    pub(super) fn column<'t>(&self, table: &'t celhook_json::Table) -> Option<Cells<'t>> {
        match table.column_hinted(self.name, self.position)? {
            celhook_json::Cells::Int(v) if self.ints => Some(Cells::Int(v)),
            celhook_json::Cells::Str(v) if self.strings => Some(Cells::Str(v)),
            _ => None,
        }
    }

    /// The field of list element `item` (`None` when it is no object).
    #[inline(always)]
    fn read_item<'a>(&self, item: &'a Json) -> Option<Read<'a>> {
        match item {
            Json::Object(obj) => self.read(obj),
            _ => None,
        }
    }

    /// The field of list element `item` when it is an int.
    #[inline(always)]
    pub(super) fn read_int(&self, item: &Json) -> Option<i64> {
        match self.read_item(item)? {
            Read::Int(i) => Some(i),
            Read::Str(_) | Read::Len(_) => None,
        }
    }

    /// The field of list element `item` when it is a string.
    #[inline(always)]
    pub(super) fn read_str<'a>(&self, item: &'a Json) -> Option<&'a str> {
        match self.read_item(item)? {
            Read::Str(s) => Some(s),
            Read::Int(_) | Read::Len(_) => None,
        }
    }
}

/// The last field a fused body read of the element: its number
/// (`FieldCmp::read`) and what it read.
type Last<'a> = Option<(u32, Read<'a>)>;

/// A fused body on one element object, charged as [`eval`] charges it
/// (`&&` and `||` nothing of their own, `!` one unit). `last` keeps the
/// last field read, for the next test of the same field (`p.port > 0 &&
/// p.port < 65536`): each test is still charged its read, as the walk
/// charges a kept read. The usual bodies, one test or two joined, run
/// inline here; deeper ones in [`nested`].
#[inline(always)]
fn test<'a>(ir: &'a Ir, m: &Map<'a>, last: &mut Last<'a>, f: &mut Frame<'a>) -> Option<bool> {
    let part = |ir: &'a Ir, last: &mut Last<'a>, f: &mut Frame<'a>| match ir {
        Ir::FieldCmp(c) => leaf(c, m, last, f),
        _ => nested(ir, m, last, f),
    };
    match ir {
        Ir::FieldCmp(c) => leaf(c, m, last, f),
        Ir::And(a, b) => Some(part(a, last, f)? && part(b, last, f)?),
        Ir::Or(a, b) => Some(part(a, last, f)? || part(b, last, f)?),
        _ => nested(ir, m, last, f),
    }
}

/// [`test()`] of any body, out of line.
#[inline(never)]
fn nested<'a>(ir: &'a Ir, m: &Map<'a>, last: &mut Last<'a>, f: &mut Frame<'a>) -> Option<bool> {
    match ir {
        Ir::And(a, b) => Some(nested(a, m, last, f)? && nested(b, m, last, f)?),
        Ir::Or(a, b) => Some(nested(a, m, last, f)? || nested(b, m, last, f)?),
        Ir::Not(a) => {
            let r = nested(a, m, last, f)?;
            f.charge(1).ok()?;
            Some(!r)
        }
        Ir::FieldCmp(c) => leaf(c, m, last, f),
        _ => None,
    }
}

/// One fused test, its field read taken from `last` when the test before
/// read the same one.
#[inline(always)]
fn leaf<'a>(c: &'a FieldCmp, m: &Map<'a>, last: &mut Last<'a>, f: &mut Frame<'a>) -> Option<bool> {
    let read = match *last {
        Some((before, read)) if before == c.read => read,
        _ => {
            let read = read_on(c, m)?;
            *last = Some((c.read, read));
            read
        }
    };
    let (r, cost) = judge(c, read)?;
    f.charge(cost).ok()?;
    Some(r)
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
