//! Loops answered by lookups: an outer loop whose body is a counted
//! equality loop (see `counted`) over a list it does not change, comparing
//! a field of the outer element (`all(p, L.exists_one(q, q.name ==
//! p.name))`, `all(o, L.exists(n, n.name == o.name))`), marked by the
//! planner (`plan::mark_counted_bodies`).

use celhook_json::{Table, Value as Json};

use super::charge::{long_compare_cost, SHORT_STRING_BYTES};
use super::counted::{tally, tally_own, Indexed, StrIndex};
use super::fused::Field;
use super::loops::quantifier;
use super::scan::{count_reads, same_list, scan_steps};
use super::{eval, fused, Frame};
use crate::ir::{Ir, Loop, LoopKind, ScanExpr};
use crate::value::{str_size, List, Map, Str, Value, ANY};
use celhook_schema::Schema;

/// A loop marked `counted_body` (see `plan::mark_counted_bodies`) over the
/// JSON list: for each element, its field the inner loop compares
/// with is read straight from the JSON and looked up in the inner loop's
/// counted reads, charged what walking the body would charge (its range,
/// then the inner loop's steps), with the outer steps charged as the plain
/// loop charges them; the inner list is read and counted first (as its
/// first two runs would). `None`, with the cost put back, wherever that
/// does not answer (the deadline, an error, a spent budget, another kind of
/// list, a read or a field not a string): the plain loop then runs.
pub(super) fn counted_loop<'a>(
    l: &'a Loop,
    list: &List<'a>,
    f: &mut Frame<'a>,
) -> Option<Value<'a>> {
    let schema = match *list {
        List::Json { schema, .. } | List::Table { schema, .. } => schema,
        List::Owned(_) | List::Const(_) => return None,
    };
    let Ir::Loop(inner) = &l.body else {
        return None;
    };
    let scan = inner.scan.as_ref()?;
    let (
        ScanExpr::Compare {
            slot, element_left, ..
        },
        Ir::Bin(_, a, b),
    ) = (&scan.body, &inner.body)
    else {
        return None;
    };
    let (element, other) = if *element_left {
        (&**a, &**b)
    } else {
        (&**b, &**a)
    };
    let item_schema = schema.items.as_deref().unwrap_or(&ANY);
    let start = f.cost;
    // The inner range reads nothing the outer loop binds: the same list at
    // the same charge for every element, evaluated once.
    let (range, range_schema) = match eval(&inner.range, f) {
        Ok(Value::List(
            range @ (List::Json {
                schema: range_schema,
                ..
            }
            | List::Table {
                schema: range_schema,
                ..
            }),
        )) if !range.is_empty() => (range, range_schema),
        _ => {
            f.cost = start;
            return None;
        }
    };
    let range_cost = f.cost - start;
    f.cost = start;
    let same = l.counted_same && same_list(list, &range);
    // An inner loop comparing a plain string field (`q.f == x`) reads it
    // straight from each element's JSON object, and a uniqueness check
    // (`q.f == p.f` over the very list) on a short list of distinct
    // strings is answered whole; any other inner loop reads and counts as
    // its first runs would, in the scan cache, held apart from the frame
    // while the elements are looked up.
    let reads = direct_reads(
        element,
        inner.var,
        &range,
        range_schema.items.as_deref().unwrap_or(&ANY),
    );
    if let Some(total) = reads
        .as_deref()
        .filter(|_| same)
        .and_then(|reads| all_distinct_cost(l.kind, inner.kind, reads, range_cost))
    {
        // Within the limit, every step the lookups would take is too.
        if f.cost.saturating_add(total) <= f.limit {
            f.cost += total;
            return Some(Value::Bool(true));
        }
    }
    // A table's elements are built only where an outer element is read
    // as a tree (below): a column and the counted reads answer the rest.
    let n = list.len();
    let direct =
        reads.and_then(
            |reads| match StrIndex::build_strs(&reads, DIRECT_READ, inner.kind) {
                Indexed::Built(index) => Some(index),
                _ => None,
            },
        );
    let cache = if direct.is_none() {
        count_reads(inner, scan, &range, *slot, element, f)?;
        f.scans[scan.cell].take()
    } else {
        None
    };
    let index = match &direct {
        Some(index) => Some(index),
        None => cache
            .as_ref()
            .and_then(|cache| cache.counted(&range, *slot)),
    };
    // Over the very list the inner loop read, the outer element's field
    // is the inner loop's kept read of the same element.
    let kept = match &direct {
        Some(_) if same => Some(Kept::Direct),
        Some(_) => None,
        None => cache
            .as_ref()
            .filter(|_| same)
            .map(|cache| Kept::Scanned(cache.slot_reads(*slot, n))),
    };
    let outer_field = direct_field(other, l.var, item_schema);
    let result = index.and_then(|index| {
        scan_steps(l.kind, 0..n, list, f, |i, f| {
            if crate::interrupt::tick() {
                return None;
            }
            let (total, found) = match kept {
                // The element's own read, counted with the others.
                Some(kept) => {
                    let cost = match kept {
                        Kept::Direct => DIRECT_READ,
                        Kept::Scanned(reads) => reads.get(i)?.as_ref()?.0,
                    };
                    tally_own(index, inner.kind, range.len(), cost, i)?
                }
                None => {
                    let item = list.json()?.0.get(i)?;
                    // The outer element's own plain string field, read
                    // straight from the JSON; anything else (a format's
                    // string, another type, a deeper chain) as the walk
                    // reads it.
                    let direct = outer_field.as_ref().and_then(|field| field.read_str(item));
                    let (other_cost, x) = match direct {
                        Some(s) => (DIRECT_READ, Value::Str(Str::Borrowed(s))),
                        None => {
                            let Json::Object(obj) = item else {
                                return None;
                            };
                            fused::chain_read(other, &mut |var| {
                                (var == l.var).then_some(Map::Json {
                                    obj,
                                    schema: item_schema,
                                })
                            })?
                        }
                    };
                    match tally(index, inner.kind, &range, other_cost, &x)? {
                        (total, Value::Bool(found)) => (total, found),
                        _ => return None,
                    }
                }
            };
            // The range, then the inner loop's steps: exactly against the
            // limit with the outer loop's total (`steps_of`), and here only
            // to give up once past it, since a long string's tally reads
            // every element before it (a list's length squared).
            f.cost = f.cost.saturating_add(range_cost).saturating_add(total);
            if f.cost > f.limit {
                return None;
            }
            Some(found)
        })
    });
    if direct.is_none() {
        f.scans[scan.cell] = cache;
    }
    if result.is_none() {
        f.cost = start;
    }
    result
}

/// What a direct read charges: `q.f` walked charges the variable, then
/// the selection.
const DIRECT_READ: u64 = 2;

/// The most elements [`all_distinct_cost`] tells distinct in a table on
/// the stack ([`distinct`]); a longer list is counted in a hash table,
/// which costs about four times as much per element.
pub(crate) const PAIRWISE: usize = 128;

/// [`distinct`]'s slots: twice the strings, a power of two (a hash's top
/// bits pick one).
const SLOTS: usize = 2 * PAIRWISE;
const _: () = assert!(SLOTS.is_power_of_two() && PAIRWISE < u8::MAX as usize);

/// What the lookups below would charge for a uniqueness check (`all` of
/// `exists_one` over the very list, each element's field read directly)
/// when every string occurs once, on a list short enough for
/// [`distinct`], which costs less than hashing; `None` for any other loop or
/// list, or a repeat. Each outer element is charged the range and the
/// inner steps (`tally_own`): every element's read and the other side's,
/// its string compared with every element's, and its one match and the
/// end; the outer loop its steps and its end (`quantifier`).
fn all_distinct_cost(outer: LoopKind, inner: LoopKind, reads: &[&str], range: u64) -> Option<u64> {
    if outer != LoopKind::All || inner != LoopKind::ExistsOne || reads.len() > PAIRWISE {
        return None;
    }
    if !distinct(reads) {
        return None;
    }
    // Characters are counted only past the short strings, whose
    // comparisons never read them (as `StrIndex` keeps them).
    let mut chars = [0u64; PAIRWISE];
    for (c, s) in chars.iter_mut().zip(reads) {
        if s.len() > SHORT_STRING_BYTES {
            *c = str_size(s);
        }
    }
    let nonempty = reads.iter().filter(|s| !s.is_empty()).count() as u64;
    let mut compares = 0u64;
    for (a, &a_chars) in reads.iter().zip(&chars) {
        compares += if a.len() <= SHORT_STRING_BYTES {
            u64::from(!a.is_empty()) * nonempty
        } else {
            reads
                .iter()
                .zip(&chars)
                .map(|(b, &b_chars)| long_compare_cost(a.len(), a_chars, b.len(), b_chars))
                .sum()
        };
    }
    let n = reads.len() as u64;
    // `exists_one`'s one match (2) and its end (2), as `tally_bool`.
    let per_element = range
        .saturating_add(2 * n * DIRECT_READ)
        .saturating_add(2 + 2);
    let (_, step, _) = quantifier(outer);
    #[cfg(test)]
    DISTINCT_ANSWERS.with(|hits| hits.set(hits.get() + 1));
    Some(
        n.saturating_mul(per_element)
            .saturating_add(compares)
            .saturating_add(step * n + 1),
    )
}

/// True when no string occurs twice in `reads` (at most [`PAIRWISE`]):
/// a table of twice as many slots on the stack, each string placed by a
/// hash of its length and its first and last eight bytes, compared in
/// full only with those of the same slot run. Pair by pair, 20 names took
/// 190 comparisons.
fn distinct(reads: &[&str]) -> bool {
    debug_assert!(reads.len() <= PAIRWISE);
    let mut slots = [u8::MAX; SLOTS];
    for (i, s) in reads.iter().enumerate() {
        let mut at = slot_of(s.as_bytes());
        loop {
            match slots[at] {
                u8::MAX => {
                    slots[at] = i as u8;
                    break;
                }
                j => {
                    if celhook_json::same_key(reads[usize::from(j)], s) {
                        return false;
                    }
                    at = (at + 1) % SLOTS;
                }
            }
        }
    }
    true
}

/// The slot [`distinct`] starts `s` at.
#[inline(always)]
fn slot_of(s: &[u8]) -> usize {
    let n = s.len();
    let word = |b: &[u8]| match b.first_chunk::<8>() {
        Some(w) => u64::from_le_bytes(*w),
        None => b.iter().fold(0, |h, &c| h << 8 | u64::from(c)),
    };
    let first = word(s);
    let last = if n > 8 { word(&s[n - 8..]) } else { 0 };
    let h = (first ^ last.rotate_left(29) ^ n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h >> (u64::BITS - SLOTS.trailing_zeros())) as usize
}

#[cfg(test)]
thread_local! {
    /// How many uniqueness checks [`all_distinct_cost`] summed, for the
    /// tests to see that its lists take it.
    pub(crate) static DISTINCT_ANSWERS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Where the outer element's own read comes from.
#[derive(Clone, Copy)]
enum Kept<'r, 'a> {
    /// Read straight from the JSON, each charged [`DIRECT_READ`].
    Direct,
    /// Kept by the inner loop's scan, each with its charge.
    Scanned(&'r [Option<(u64, Value<'a>)>]),
}

/// Every element's field that `element` (`q.f`, of the inner loop's
/// variable `var`) reads, when it is a plain string at its schema
/// position in each: what the scan cache would keep, each read charged
/// [`DIRECT_READ`]. `None` when any element's is not such a string.
fn direct_reads<'a>(
    element: &'a Ir,
    var: usize,
    list: &List<'a>,
    item_schema: &'a Schema,
) -> Option<Vec<&'a str>> {
    let field = direct_field(element, var, item_schema)?;
    let items = match *list {
        List::Json { items, .. } => items,
        List::Table { table, .. } => return column_reads(&field, table),
        List::Owned(_) | List::Const(_) => return None,
    };
    // The first element read before anything is allocated (a field that
    // is no string fails there, on every evaluation), then one allocation
    // of the list's length: collecting an iterator of options sizes the
    // vector by a lower bound of 0 and allocated it four times over 20
    // ports.
    if let Some(first) = items.first() {
        field.read_str(first)?;
    }
    let mut reads = Vec::with_capacity(items.len());
    for item in items {
        reads.push(field.read_str(item)?);
    }
    Some(reads)
}

/// [`direct_reads`] of a table: its string column. A column of another
/// kind, or none, gives no reads, as its elements would give none
/// (`Field::column` keeps a column exactly when `Field::read_str` reads
/// every element). Out of line, so that the elements' loop above stays as
/// it was compiled without tables.
#[inline(never)]
fn column_reads<'a>(field: &Field<'a>, table: &'a Table) -> Option<Vec<&'a str>> {
    match field.column(table)? {
        fused::Cells::Str(cells) => Some(cells.iter().collect()),
        fused::Cells::Int(_) => None,
    }
}

/// The field `v.f` of loop variable `var` reads, when it is at its
/// position among the properties of `items` (kept reads looked through).
fn direct_field<'a>(ir: &'a Ir, var: usize, items: &Schema) -> Option<Field<'a>> {
    match ir {
        Ir::Memo { inner, .. } | Ir::ElemMemo { inner, .. } => direct_field(inner, var, items),
        Ir::Select {
            operand,
            field,
            test: false,
            position: Some(position),
        } if matches!(**operand, Ir::Var(v) if v == var) => {
            Field::at(field, *position as usize, items)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::{distinct, PAIRWISE};

    #[test]
    fn distinct_finds_a_repeat_wherever_it_is() {
        // Strings alike at both ends and of one length, so that many share
        // a slot; and short ones.
        let long: Vec<String> = (0..PAIRWISE)
            .map(|i| format!("a-long-common-prefix-{i:02}-and-a-common-suffix"))
            .collect();
        let short: Vec<String> = (0..PAIRWISE).map(|i| format!("{i}")).collect();
        for names in [&long, &short] {
            let reads: Vec<&str> = names.iter().map(String::as_str).collect();
            assert!(distinct(&reads));
            for i in 0..reads.len() {
                for j in 0..reads.len() {
                    if i != j {
                        let mut twice = reads.clone();
                        twice[j] = reads[i];
                        assert!(!distinct(&twice), "{i} at {j}");
                    }
                }
            }
        }
        assert!(distinct(&[]));
        assert!(distinct(&["", "a"]));
        assert!(!distinct(&["", ""]));
    }
}
