//! [`Ir::FieldCmp`]: a field of a variable compared with a constant in one
//! step (see `fuse`), and loops whose bodies are made of such comparisons,
//! run on a JSON list's objects without binding each element.

use super::*;
use crate::ir::{FieldCmp, FieldTest, IntRange};
use crate::value::{Str, ANY};
use celhook_json::Value as Json;
use celhook_schema::Type;

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
    if c.then.is_empty() {
        return field_read(m, &c.field, c.position);
    }
    let mut at = m.get_field(&c.field, c.position)?;
    let (last, between) = c.then.split_last()?;
    for (field, position) in between {
        at = match at {
            Value::Map(next @ Map::Json { .. }) => next.get_field(field, *position)?,
            _ => return None,
        };
    }
    match at {
        Value::Map(next @ Map::Json { .. }) => field_read(&next, &last.0, last.1),
        _ => None,
    }
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
fn test_read(test: &FieldTest, read: Read<'_>, reads: u64) -> Option<(bool, u64)> {
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
        (FieldTest::Matches(re), Read::Str(s)) => (re.is_match(s), reads + re.cost(s)),
        _ => return None,
    })
}

/// `s in items`, in a loop of its own: `Iterator::any` was left a call.
#[inline(always)]
fn one_of(items: &[std::sync::Arc<str>], s: &str) -> bool {
    for t in items {
        if celhook_json::same_key(t, s) {
            return true;
        }
    }
    false
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
    let result = match Shape::of(&l.body, l.var, item_schema) {
        // A loop of its own for each form: the form is then no branch of
        // every element's step. Int tests of one field (a range, a bound)
        // have loops of their own too: no test to dispatch on per element.
        Some(Shape::One(Direct {
            test: FieldTest::Int(a),
            field,
            ..
        })) => super::scan::steps_of(
            l.kind,
            items.iter(),
            list,
            f,
            Ints::<false, false>::of(field, *a, *a),
        ),
        Some(Shape::And(a, b)) if let Some((field, x, y)) = Ints::<false, true>::pair(&a, &b) => {
            super::scan::steps_of(
                l.kind,
                items.iter(),
                list,
                f,
                Ints::<false, true>::of(field, x, y),
            )
        }
        Some(Shape::Or(a, b)) if let Some((field, x, y)) = Ints::<true, true>::pair(&a, &b) => {
            super::scan::steps_of(
                l.kind,
                items.iter(),
                list,
                f,
                Ints::<true, true>::of(field, x, y),
            )
        }
        Some(Shape::One(Direct {
            test: FieldTest::Str(eq, t),
            field,
            ..
        })) => {
            let step = Strs::<true> {
                field,
                eq: *eq,
                one: t,
                of: &[],
                charged: 0,
            };
            super::scan::steps_of(l.kind, items.iter(), list, f, step)
        }
        Some(Shape::One(Direct {
            test: FieldTest::OneOf(of),
            field,
            ..
        })) => {
            let step = Strs::<false> {
                field,
                eq: true,
                one: "",
                of,
                charged: 0,
            };
            super::scan::steps_of(l.kind, items.iter(), list, f, step)
        }
        Some(Shape::One(a)) => super::scan::steps_of(l.kind, items.iter(), list, f, One(a, 0)),
        Some(Shape::And(a, b)) => {
            super::scan::steps_of(l.kind, items.iter(), list, f, Both::<false>(a, b, 0))
        }
        Some(Shape::Or(a, b)) => {
            super::scan::steps_of(l.kind, items.iter(), list, f, Both::<true>(a, b, 0))
        }
        None => general(l, items, list, item_schema, f),
    };
    if result.is_none() {
        f.cost = start;
    }
    result
}

/// [`fused_loop`] for any fused body: its tests walked per element.
fn general<'a>(
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

/// The usual fused bodies, one test or two joined by `&&` or `||`, each
/// on a field of the element itself at the position the checker found:
/// what the general walk decides per element (the body's form, the
/// field's schema node) decided once per run, so that an element costs
/// its field lookups and tests alone. Charged as [`test`] charges.
enum Shape<'a> {
    One(Direct<'a>),
    And(Direct<'a>, Direct<'a>),
    Or(Direct<'a>, Direct<'a>),
}

/// A test of a field of the element, and how to read that field.
struct Direct<'a> {
    test: &'a FieldTest,
    /// Equal for tests that read the same field (`FieldCmp::read`).
    read: u32,
    field: Field<'a>,
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
        })
    }

    /// As [`field_read`] reads it where the position applies: `None` for
    /// a missing field or one of another type.
    #[inline(always)]
    fn read<'a>(&self, obj: &'a celhook_json::Map) -> Option<Read<'a>> {
        match obj.get_hinted(self.name, self.position)? {
            Json::Number(n) if self.ints => n.as_i64().map(Read::Int),
            Json::String(s) if self.strings => Some(Read::Str(s)),
            _ => None,
        }
    }

    /// The field of list element `item` when it is a string.
    #[inline(always)]
    pub(super) fn read_str<'a>(&self, item: &'a Json) -> Option<&'a str> {
        match item {
            Json::Object(obj) => match self.read(obj)? {
                Read::Str(s) => Some(s),
                Read::Int(_) => None,
            },
            _ => None,
        }
    }
}

impl<'a> Shape<'a> {
    fn of(body: &'a Ir, var: usize, items: &'a celhook_schema::Schema) -> Option<Shape<'a>> {
        let leaf = |ir: &'a Ir| match ir {
            Ir::FieldCmp(c) if c.slot == var && c.then.is_empty() => Some(Direct {
                test: &c.test,
                read: c.read,
                field: Field::at(&c.field, c.position? as usize, items)?,
            }),
            _ => None,
        };
        Some(match body {
            Ir::And(a, b) => Shape::And(leaf(a)?, leaf(b)?),
            Ir::Or(a, b) => Shape::Or(leaf(a)?, leaf(b)?),
            one => Shape::One(leaf(one)?),
        })
    }
}

/// A body of one test, inlined into its loop's steps, with what its
/// tests charged so far (added up apart from the frame, so that it stays
/// in a register: see [`super::scan::Step::charged`]).
struct One<'a>(Direct<'a>, u64);

impl<'a> super::scan::Step<'a, &'a Json> for One<'a> {
    #[inline(always)]
    fn step(&mut self, item: &'a Json, _: &mut Frame<'a>) -> Option<bool> {
        match item {
            Json::Object(obj) => self.0.judge(self.0.field.read(obj)?, &mut self.1),
            _ => None,
        }
    }

    #[inline(always)]
    fn charged(&self) -> u64 {
        self.1
    }
}

/// A body of two tests joined by `&&` (`OR` false) or `||` (true),
/// inlined into its loop's steps, with its charges as [`One`]'s.
struct Both<'a, const OR: bool>(Direct<'a>, Direct<'a>, u64);

impl<'a, const OR: bool> super::scan::Step<'a, &'a Json> for Both<'a, OR> {
    #[inline(always)]
    fn step(&mut self, item: &'a Json, _: &mut Frame<'a>) -> Option<bool> {
        let Json::Object(obj) = item else {
            return None;
        };
        let (a, b, charged) = (&self.0, &self.1, &mut self.2);
        let read = a.field.read(obj)?;
        if a.judge(read, charged)? == OR {
            return Some(OR);
        }
        let read = if b.read == a.read {
            read
        } else {
            b.field.read(obj)?
        };
        b.judge(read, charged)
    }

    #[inline(always)]
    fn charged(&self) -> u64 {
        self.2
    }
}

/// A body of one int test, or of two joined by `&&` (`OR` false) or `||`
/// (true) on the same int field (`p.port > 0 && p.port < 65536`), charged
/// as [`Direct::judge`] charges each test: its read, its selection and
/// the comparison, a unit each.
struct Ints<'a, const OR: bool, const TWO: bool> {
    field: Field<'a>,
    a: IntRange,
    b: IntRange,
    charged: u64,
}

impl<'a, const OR: bool, const TWO: bool> Ints<'a, OR, TWO> {
    fn of(field: Field<'a>, a: IntRange, b: IntRange) -> Self {
        Ints {
            field,
            a,
            b,
            charged: 0,
        }
    }

    /// The field and ranges of two int tests of the same read.
    fn pair(a: &Direct<'a>, b: &Direct<'a>) -> Option<(Field<'a>, IntRange, IntRange)> {
        match (a.test, b.test) {
            (FieldTest::Int(x), FieldTest::Int(y)) if a.read == b.read => Some((a.field, *x, *y)),
            _ => None,
        }
    }
}

impl<'a, const OR: bool, const TWO: bool> super::scan::Step<'a, &'a Json> for Ints<'a, OR, TWO> {
    #[inline(always)]
    fn step(&mut self, item: &'a Json, _: &mut Frame<'a>) -> Option<bool> {
        let Json::Object(obj) = item else {
            return None;
        };
        let Read::Int(i) = self.field.read(obj)? else {
            return None;
        };
        const TEST: u64 = 3;
        self.charged = self.charged.saturating_add(TEST);
        let first = self.a.holds(i);
        if !TWO || first == OR {
            return Some(first);
        }
        self.charged = self.charged.saturating_add(TEST);
        Some(self.b.holds(i))
    }

    #[inline(always)]
    fn charged(&self) -> u64 {
        self.charged
    }
}

/// A body of one string test of a field: equal to a string (`EQ`, `==`
/// or `!=` as `eq` says) or in a literal list of strings (`in`), charged
/// as [`test_read`] charges them.
struct Strs<'a, const EQ: bool> {
    field: Field<'a>,
    eq: bool,
    one: &'a str,
    of: &'a [std::sync::Arc<str>],
    charged: u64,
}

impl<'a, const EQ: bool> super::scan::Step<'a, &'a Json> for Strs<'a, EQ> {
    #[inline(always)]
    fn step(&mut self, item: &'a Json, _: &mut Frame<'a>) -> Option<bool> {
        let Json::Object(obj) = item else {
            return None;
        };
        let Read::Str(s) = self.field.read(obj)? else {
            return None;
        };
        // The variable and the field's selection, a unit each.
        const READS: u64 = 2;
        Some(if EQ {
            let cost = READS + charge::compare_cost_str(s, self.one);
            self.charged = self.charged.saturating_add(cost);
            celhook_json::same_key(s, self.one) == self.eq
        } else {
            self.charged = self.charged.saturating_add(READS);
            one_of(self.of, s)
        })
    }

    #[inline(always)]
    fn charged(&self) -> u64 {
        self.charged
    }
}

impl<'a> Direct<'a> {
    /// Charged to `charged`, without a test against the limit: a shape
    /// runs only as the body of [`super::scan::steps_of`], which tests the
    /// loop's total.
    #[inline(always)]
    fn judge(&self, read: Read<'a>, charged: &mut u64) -> Option<bool> {
        // The variable and the field's selection, a unit each.
        let (r, cost) = test_read(self.test, read, 2)?;
        *charged = charged.saturating_add(cost);
        Some(r)
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

/// [`test`] of any body, out of line.
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
