//! The fused loops' usual bodies, one test or two of a field of the
//! element, each run in a loop of its own (`scan::steps_of` inlines the
//! body's step): the body's form and its field's schema node are decided
//! once per run, so that an element costs its field's read and its tests
//! alone. Any other fused body is walked per element (`fused::general`).

use super::fused::{general, one_of_bytes, test_read, Field, Read};
use super::scan::{steps_of, Step};
use super::*;
use crate::ir::{FieldTest, IntRange};
use crate::value::ANY;
use celhook_json::Value as Json;
#[cfg(test)]
pub(crate) use columns::FIRST_COLUMN_STEPS;
use columns::{table_loop, Mode};

mod columns;

/// A loop marked `fused_body` over a JSON list: each element's object is
/// tested in place (no element value bound, so nothing to drop), and the
/// steps are charged as the plain loop charges them. `None`, with the cost
/// put back, on anything the fused comparisons do not answer (an element
/// not an object, a field missing or of another type, a budget spent): the
/// plain loop then runs and answers, or fails, as it would have.
pub(super) fn fused_loop<'a>(l: &'a Loop, list: &List<'a>, f: &mut Frame<'a>) -> Option<Value<'a>> {
    let start = f.cost;
    if let List::Table { table, schema } = *list {
        if let Some(v) = table_loop(l, table, schema, list, Mode::Steps, f) {
            return Some(v);
        }
        f.cost = start;
    }
    // A table whose columns do not answer is read as its elements.
    let (items, schema) = list.json()?;
    let item_schema = schema.items.as_deref().unwrap_or(&ANY);
    let items = items.iter();
    // A loop of its own for each form: the form is then no branch of every
    // element's step.
    let result = match Shape::of(&l.body, l.var, item_schema) {
        Some(Shape::One(a)) => one(l.kind, a, items, list, f),
        Some(Shape::And(a, b)) => two::<false>(l.kind, a, b, items, list, f),
        Some(Shape::Or(a, b)) => two::<true>(l.kind, a, b, items, list, f),
        None => general(l, items.as_slice(), list, item_schema, f),
    };
    if result.is_none() {
        f.cost = start;
    }
    result
}

/// The number of elements the fused `filter` loop `l` keeps of a table
/// (`size(self.ports.filter(p, p.protocol == 'UDP'))`), charged as the
/// loop is: the filtered list is never made. `None`, with the cost put
/// back, for any other list or wherever the columns do not answer.
pub(super) fn fused_count<'a>(l: &'a Loop, list: &List<'a>, f: &mut Frame<'a>) -> Option<i64> {
    let List::Table { table, schema } = *list else {
        return None;
    };
    let start = f.cost;
    match table_loop(l, table, schema, list, Mode::Count, f) {
        Some(Value::Int(n)) => Some(n),
        _ => {
            f.cost = start;
            None
        }
    }
}

type Items<'a> = std::slice::Iter<'a, Json>;

/// An element as the usual steps read their field: a JSON element (the
/// field looked up in its object), or the element's cell of the field's
/// column in a table (`columns`), its kind already checked. A string is
/// read as its UTF-8 bytes, which is all its tests need: a table's string
/// cells are sliced that way without a check of each end.
trait Cell<'a>: Copy {
    fn int(self, field: &Field<'a>) -> Option<i64>;
    fn bytes(self, field: &Field<'a>) -> Option<&'a [u8]>;
}

impl<'a> Cell<'a> for &'a Json {
    #[inline(always)]
    fn int(self, field: &Field<'a>) -> Option<i64> {
        field.read_int(self)
    }

    #[inline(always)]
    fn bytes(self, field: &Field<'a>) -> Option<&'a [u8]> {
        field.read_str(self).map(str::as_bytes)
    }
}

/// What reading a field of the element charges: the variable and the
/// field's selection, a unit each.
const READS: u64 = 2;

/// The steps of a body of one test: an int test, a string (in)equality and
/// a string in a literal list each in a loop of their own, with no test to
/// dispatch on per element.
fn one<'a>(
    kind: LoopKind,
    a: Direct<'a>,
    items: Items<'a>,
    list: &List<'a>,
    f: &mut Frame<'a>,
) -> Option<Value<'a>> {
    match a.test {
        // One test: its range stands in for the second, never run.
        FieldTest::Int(range) => steps_of(
            kind,
            items,
            list,
            f,
            Ints::<false, false>::of(a.field, *range, *range),
        ),
        FieldTest::Str(eq, t) => steps_of(kind, items, list, f, Strs::equal(a.field, *eq, t)),
        FieldTest::OneOf(of) => steps_of(kind, items, list, f, Strs::one_of(a.field, of)),
        _ => steps_of(kind, items, list, f, One(a, 0)),
    }
}

/// The steps of a body of two tests joined by `&&` (`OR` false) or `||`
/// (true): two int tests of one field, and a pattern and a size of one
/// string, in loops of their own.
fn two<'a, const OR: bool>(
    kind: LoopKind,
    a: Direct<'a>,
    b: Direct<'a>,
    items: Items<'a>,
    list: &List<'a>,
    f: &mut Frame<'a>,
) -> Option<Value<'a>> {
    if let Some((field, x, y)) = Ints::<OR, true>::pair(&a, &b) {
        return steps_of(kind, items, list, f, Ints::<OR, true>::of(field, x, y));
    }
    if let Some(step) = Named::<OR>::of(&a, &b) {
        return steps_of(kind, items, list, f, step);
    }
    steps_of(kind, items, list, f, Both::<OR>(a, b, 0))
}

/// The usual fused bodies, one test or two joined by `&&` or `||`, each
/// on a field of the element itself at the position the checker found:
/// what the general walk decides per element (the body's form, the
/// field's schema node) decided once per run, so that an element costs
/// its field lookups and tests alone. Charged as the walk of
/// `fused::test` charges.
enum Shape<'a> {
    One(Direct<'a>),
    And(Direct<'a>, Direct<'a>),
    Or(Direct<'a>, Direct<'a>),
}

/// A test of a field of the element, and how to read that field.
#[derive(Clone, Copy)]
struct Direct<'a> {
    test: &'a FieldTest,
    /// Equal for tests that read the same field (`FieldCmp::read`).
    read: u32,
    field: Field<'a>,
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
/// in a register: see [`Step::charged`]).
struct One<'a>(Direct<'a>, u64);

impl<'a> Step<'a, &'a Json> for One<'a> {
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

impl<'a, const OR: bool> Step<'a, &'a Json> for Both<'a, OR> {
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

impl<'a, T: Cell<'a>, const OR: bool, const TWO: bool> Step<'a, T> for Ints<'a, OR, TWO> {
    #[inline(always)]
    fn step(&mut self, item: T, _: &mut Frame<'a>) -> Option<bool> {
        let i = item.int(&self.field)?;
        // An int comparison: a unit more than the read.
        const TEST: u64 = READS + 1;
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

/// A body of one string test of a field: in a literal list of strings
/// (`LIST`, `in`), or else equal to a string (`==` or `!=` as `eq` says),
/// charged as [`test_read`] charges them.
struct Strs<'a, const LIST: bool> {
    field: Field<'a>,
    eq: bool,
    one: &'a str,
    of: &'a [std::sync::Arc<str>],
    charged: u64,
}

impl<'a> Strs<'a, false> {
    /// A string `==` (`eq`) or `!=` `one`.
    fn equal(field: Field<'a>, eq: bool, one: &'a str) -> Self {
        Strs {
            field,
            eq,
            one,
            of: &[],
            charged: 0,
        }
    }
}

impl<'a> Strs<'a, true> {
    /// A string in the literal list `of`.
    fn one_of(field: Field<'a>, of: &'a [std::sync::Arc<str>]) -> Self {
        Strs {
            field,
            eq: true,
            one: "",
            of,
            charged: 0,
        }
    }
}

impl<'a, T: Cell<'a>, const LIST: bool> Step<'a, T> for Strs<'a, LIST> {
    #[inline(always)]
    fn step(&mut self, item: T, _: &mut Frame<'a>) -> Option<bool> {
        let s = item.bytes(&self.field)?;
        Some(if LIST {
            self.charged = self.charged.saturating_add(READS);
            one_of_bytes(self.of, s)
        } else {
            let one = self.one.as_bytes();
            let cost = READS + charge::compare_cost_bytes(s, one);
            self.charged = self.charged.saturating_add(cost);
            celhook_json::same_bytes(s, one) == self.eq
        })
    }

    #[inline(always)]
    fn charged(&self) -> u64 {
        self.charged
    }
}

/// A body of a pattern and a size test of the same string field, joined
/// by `&&` (`OR` false) or `||` (true), in either order (`p.name.matches(
/// '^[a-z]...$') && size(p.name) <= 15`, how names are checked): the
/// string's size counted once for both, each test charged as
/// [`test_read`] charges it.
struct Named<'a, const OR: bool> {
    field: Field<'a>,
    pattern: &'a crate::matcher::Matcher,
    size: IntRange,
    /// The pattern is the first test.
    pattern_first: bool,
    charged: u64,
}

impl<'a, const OR: bool> Named<'a, OR> {
    fn of(a: &Direct<'a>, b: &Direct<'a>) -> Option<Self> {
        if a.read != b.read {
            return None;
        }
        let (pattern, size, pattern_first) = match (a.test, b.test) {
            (FieldTest::Matches(re), FieldTest::Size(range)) => (re, range, true),
            (FieldTest::Size(range), FieldTest::Matches(re)) => (re, range, false),
            _ => return None,
        };
        Some(Named {
            field: a.field,
            pattern,
            size: *size,
            pattern_first,
            charged: 0,
        })
    }
}

impl<'a, T: Cell<'a>, const OR: bool> Step<'a, T> for Named<'a, OR> {
    #[inline(always)]
    fn step(&mut self, item: T, _: &mut Frame<'a>) -> Option<bool> {
        let s = item.bytes(&self.field)?;
        let chars = crate::value::bytes_size(s);
        let n = i64::try_from(chars).ok()?;
        // `size` is a call of one unit, its comparison another.
        let (pattern, size) = (self.pattern, self.size);
        let mut charged = self.charged;
        let mut test = |of_pattern: bool| {
            if of_pattern {
                charged = charged.saturating_add(READS + pattern.cost_of_size(chars));
                pattern.is_match_bytes(s)
            } else {
                charged = charged.saturating_add(READS + 2);
                size.holds(n)
            }
        };
        let first = test(self.pattern_first);
        let verdict = if first == OR {
            OR
        } else {
            test(!self.pattern_first)
        };
        self.charged = charged;
        Some(verdict)
    }

    #[inline(always)]
    fn charged(&self) -> u64 {
        self.charged
    }
}

impl<'a> Direct<'a> {
    /// Charged to `charged`, without a test against the limit: a shape
    /// runs only as the body of [`steps_of`], which tests the
    /// loop's total.
    #[inline(always)]
    fn judge(&self, read: Read<'a>, charged: &mut u64) -> Option<bool> {
        let (r, cost) = test_read(self.test, read, READS)?;
        *charged = charged.saturating_add(cost);
        Some(r)
    }
}
