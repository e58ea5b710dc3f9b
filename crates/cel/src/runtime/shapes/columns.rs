//! The usual fused bodies over a table's columns (`celhook_json::Table`):
//! an int test steps over an int column, a string test over a string
//! column, and other tests read their cells by row. Charged exactly as the
//! same steps over the elements: only where a value is read from changes.
//! `None` wherever a column is missing or of another kind; the caller then
//! reads the elements (built once) and runs the loop over them.

use super::super::fused::{Cells, Read};
use super::super::scan::{count_of, steps_of, Step};
use super::{Cell, Direct, Ints, Named, Shape, Strs};
use crate::ir::{FieldTest, Loop, LoopKind};
use crate::runtime::frame::Frame;
use crate::runtime::fused::Field;
use crate::value::{List, Value, ANY};
use celhook_json::Table;
use celhook_schema::Schema;

/// What a run gives: the loop's value, or of a `filter`, the number of
/// elements it keeps ([`count_of`]).
#[derive(Clone, Copy)]
pub(super) enum Mode {
    Steps,
    Count,
}

impl<'a> Cell<'a> for &'a i64 {
    #[inline(always)]
    fn int(self, _: &Field<'a>) -> Option<i64> {
        Some(*self)
    }

    #[inline(always)]
    fn bytes(self, _: &Field<'a>) -> Option<&'a [u8]> {
        None
    }
}

impl<'a> Cell<'a> for &'a [u8] {
    #[inline(always)]
    fn int(self, _: &Field<'a>) -> Option<i64> {
        None
    }

    #[inline(always)]
    fn bytes(self, _: &Field<'a>) -> Option<&'a [u8]> {
        Some(self)
    }
}

/// The loop `l` over `table` (the list `list`, of schema node `schema`).
pub(super) fn table_loop<'a>(
    l: &'a Loop,
    table: &'a Table,
    schema: &'a Schema,
    list: &List<'a>,
    mode: Mode,
    f: &mut Frame<'a>,
) -> Option<Value<'a>> {
    let item_schema = schema.items.as_deref().unwrap_or(&ANY);
    let run = Run {
        kind: l.kind,
        mode,
        list,
        rows: table.len(),
    };
    match Shape::of(&l.body, l.var, item_schema)? {
        Shape::One(a) => {
            let cells = a.field.column(table)?;
            match (a.test, cells) {
                // One test: its range stands in for the second, never run.
                (FieldTest::Int(range), Cells::Int(v)) => run.over(
                    v.iter(),
                    f,
                    Ints::<false, false>::of(a.field, *range, *range),
                ),
                (FieldTest::Str(eq, t), Cells::Str(v)) => {
                    run.over(v.bytes(), f, Strs::equal(a.field, *eq, t))
                }
                (FieldTest::OneOf(of), Cells::Str(v)) => {
                    run.over(v.bytes(), f, Strs::one_of(a.field, of))
                }
                _ => run.over(0..run.rows, f, RowOne(a, cells, 0)),
            }
        }
        Shape::And(a, b) => two::<false>(&run, a, b, table, f),
        Shape::Or(a, b) => two::<true>(&run, a, b, table, f),
    }
}

/// Two tests joined by `&&` (`OR` false) or `||` (true), as
/// `super::two` runs them over elements.
fn two<'a, const OR: bool>(
    run: &Run<'a, '_>,
    a: Direct<'a>,
    b: Direct<'a>,
    table: &'a Table,
    f: &mut Frame<'a>,
) -> Option<Value<'a>> {
    let x = a.field.column(table)?;
    if let (Some((field, p, q)), Cells::Int(v)) = (Ints::<OR, true>::pair(&a, &b), x) {
        return run.over(v.iter(), f, Ints::<OR, true>::of(field, p, q));
    }
    if let Cells::Str(v) = x {
        if let Some(step) = Named::<OR>::of(&a, &b) {
            return run.over(v.bytes(), f, step);
        }
    }
    // Read only where the first test does not decide, as over the
    // elements; the same field's cells are the first column's.
    let y = if b.read == a.read {
        None
    } else {
        b.field.column(table)
    };
    // Two fields, the first tested by the usual one-test step over its
    // column (`p.name == 'metrics' && p.port == 9999`, how an element is
    // looked for): each row costs that step and, where it does not decide,
    // the second test.
    if let Some(y) = y {
        let rows = 0..run.rows;
        let then = Then::<OR> { b, y, charged: 0 };
        #[cfg(test)]
        let taken = || FIRST_COLUMN_STEPS.with(|runs| runs.set(runs.get() + 1));
        #[cfg(not(test))]
        let taken = || {};
        match (a.test, x) {
            (FieldTest::Int(range), Cells::Int(v)) => {
                taken();
                let first = Ints::<false, false>::of(a.field, *range, *range);
                return run.over(v.iter().zip(rows), f, (first, then));
            }
            (FieldTest::Str(eq, t), Cells::Str(v)) => {
                taken();
                let first = Strs::equal(a.field, *eq, t);
                return run.over(v.bytes().zip(rows), f, (first, then));
            }
            (FieldTest::OneOf(of), Cells::Str(v)) => {
                taken();
                let first = Strs::one_of(a.field, of);
                return run.over(v.bytes().zip(rows), f, (first, then));
            }
            _ => {}
        }
    }
    run.over(
        0..run.rows,
        f,
        RowBoth::<OR> {
            a,
            x,
            b,
            y,
            charged: 0,
        },
    )
}

#[cfg(test)]
thread_local! {
    /// How many table loops of two fields' tests took [`two`]'s first
    /// column path, for the tests to see that their loops take it.
    pub(crate) static FIRST_COLUMN_STEPS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// One run's loop kind, mode and list.
struct Run<'a, 'l> {
    kind: LoopKind,
    mode: Mode,
    list: &'l List<'a>,
    rows: usize,
}

impl<'a> Run<'a, '_> {
    #[inline(always)]
    fn over<T>(
        &self,
        cells: impl ExactSizeIterator<Item = T>,
        f: &mut Frame<'a>,
        step: impl Step<'a, T>,
    ) -> Option<Value<'a>> {
        match self.mode {
            Mode::Steps => steps_of(self.kind, cells, self.list, f, step),
            Mode::Count if self.kind == LoopKind::Filter => {
                count_of(cells, f, step).map(Value::Int)
            }
            Mode::Count => None,
        }
    }
}

/// The second of two tests, on another field than the first, by row (see
/// [`two`]), with what it charged.
struct Then<'a, const OR: bool> {
    b: Direct<'a>,
    y: Cells<'a>,
    charged: u64,
}

/// A first test's step over its column's cells, then [`Then`] on the
/// same row where the first does not decide: joined by `&&` (`OR` false)
/// or `||` (true), charged as `RowBoth` charges the two.
impl<'a, T, S: Step<'a, T>, const OR: bool> Step<'a, (T, usize)> for (S, Then<'a, OR>) {
    #[inline(always)]
    fn step(&mut self, (cell, row): (T, usize), f: &mut Frame<'a>) -> Option<bool> {
        if self.0.step(cell, f)? == OR {
            return Some(OR);
        }
        let then = &mut self.1;
        then.b.judge(then.y.read(row)?, &mut then.charged)
    }

    #[inline(always)]
    fn charged(&self) -> u64 {
        self.0.charged().saturating_add(self.1.charged)
    }
}

/// A test of any kind on one column, row by row, with its charges as
/// `super::One`'s.
struct RowOne<'a>(Direct<'a>, Cells<'a>, u64);

impl<'a> Step<'a, usize> for RowOne<'a> {
    #[inline(always)]
    fn step(&mut self, row: usize, _: &mut Frame<'a>) -> Option<bool> {
        self.0.judge(self.1.read(row)?, &mut self.2)
    }

    #[inline(always)]
    fn charged(&self) -> u64 {
        self.2
    }
}

/// Two tests of any kinds on their columns, row by row, the second read
/// only when the first does not decide, as `super::Both` reads them.
struct RowBoth<'a, const OR: bool> {
    a: Direct<'a>,
    x: Cells<'a>,
    b: Direct<'a>,
    /// `None`: the elements have no such column (the step then gives up,
    /// as over the elements it would on the missing field), or `b` reads
    /// `a`'s field (the step then reads `x`).
    y: Option<Cells<'a>>,
    charged: u64,
}

impl<'a, const OR: bool> Step<'a, usize> for RowBoth<'a, OR> {
    #[inline(always)]
    fn step(&mut self, row: usize, _: &mut Frame<'a>) -> Option<bool> {
        let read: Read<'a> = self.x.read(row)?;
        if self.a.judge(read, &mut self.charged)? == OR {
            return Some(OR);
        }
        let read = if self.b.read == self.a.read {
            read
        } else {
            self.y?.read(row)?
        };
        self.b.judge(read, &mut self.charged)
    }

    #[inline(always)]
    fn charged(&self) -> u64 {
        self.charged
    }
}
