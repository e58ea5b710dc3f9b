//! Loops answered by lookups: an outer loop whose body is a counted
//! equality loop (see `counted`) over a list it does not change, comparing
//! a field of the outer element (`all(p, L.exists_one(q, q.name ==
//! p.name))`, `all(o, L.exists(n, n.name == o.name))`), marked by the
//! planner (`plan::mark_counted_bodies`).

use celhook_json::{Table, Value as Json};

use super::charge::SHORT_STRING_BYTES;
use super::counted::{tally, tally_own, Indexed, StrIndex};
use super::fused::Field;
use super::loops::quantifier;
use super::scan::{count_reads, same_list, scan_steps};
use super::{eval, fused, Frame};
use crate::ir::{Ir, Loop, LoopKind, ScanExpr};
use crate::registry::scaled;
use crate::value::{bytes_size, List, Map, Str, Value, ANY};
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
        .as_ref()
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
    let direct = reads.and_then(|reads| match reads.index(inner.kind) {
        Indexed::Built(index) => Some(index),
        _ => None,
    });
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
fn all_distinct_cost(
    outer: LoopKind,
    inner: LoopKind,
    reads: &Reads<'_>,
    range: u64,
) -> Option<u64> {
    let n = reads.len();
    if outer != LoopKind::All || inner != LoopKind::ExistsOne || n > PAIRWISE {
        return None;
    }
    let (nonempty, long) = distinct(reads)?;
    // A short string's comparisons never read its characters (as
    // `StrIndex` keeps them): one unit with each nonempty string. Two long
    // ones are charged by the fewer characters of the two.
    let short = nonempty - long as u64;
    let mut compares = (nonempty + long as u64) * short;
    if long > 0 {
        let mut chars = [0u64; PAIRWISE];
        let mut k = 0;
        for i in 0..n {
            let s = reads.at(i);
            if s.len() > SHORT_STRING_BYTES {
                chars[k] = bytes_size(s);
                k += 1;
            }
        }
        let chars = &chars[..k];
        for &a in chars {
            compares += chars.iter().map(|&b| scaled(a.min(b), 0.1)).sum::<u64>();
        }
    }
    let n = n as u64;
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

/// When no string occurs twice in `reads` (at most [`PAIRWISE`]), how
/// many are nonempty and how many are long (past
/// [`SHORT_STRING_BYTES`]); `None` on a repeat. A table of twice as many
/// slots on the stack, each string placed by a hash of its length and its
/// first and last eight bytes, compared in full only with those of the
/// same slot run. Pair by pair, 20 names took 190 comparisons.
fn distinct(reads: &Reads<'_>) -> Option<(u64, usize)> {
    debug_assert!(reads.len() <= PAIRWISE);
    let mut slots = [u8::MAX; SLOTS];
    let (mut nonempty, mut long) = (0u64, 0usize);
    for i in 0..reads.len() {
        let s = reads.at(i);
        nonempty += u64::from(!s.is_empty());
        long += usize::from(s.len() > SHORT_STRING_BYTES);
        let mut at = slot_of(s);
        loop {
            match slots[at] {
                u8::MAX => {
                    slots[at] = i as u8;
                    break;
                }
                j => {
                    if celhook_json::same_bytes(reads.at(usize::from(j)), s) {
                        return None;
                    }
                    at = (at + 1) % SLOTS;
                }
            }
        }
    }
    Some((nonempty, long))
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
) -> Option<Reads<'a>> {
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
    Some(Reads::Items(reads))
}

/// [`direct_reads`] of a table: its string column, read in place. A
/// column of another kind, or none, gives no reads, as its elements would
/// give none (`Field::column` keeps a column exactly when
/// `Field::read_str` reads every element). Out of line, so that the
/// elements' loop above stays as it was compiled without tables.
#[inline(never)]
fn column_reads<'a>(field: &Field<'a>, table: &'a Table) -> Option<Reads<'a>> {
    match field.column(table)? {
        fused::Cells::Str(cells) => Some(Reads::Column(cells)),
        fused::Cells::Int(_) => None,
    }
}

/// Every element's string a direct read reads ([`direct_reads`]):
/// gathered from the JSON elements, or a table's column as it is: the
/// uniqueness check reads its cells as bytes in place (copied out, they
/// were an allocation and a check of each string's ends a review); only
/// a count of the strings (`Reads::index`) reads them as strings.
enum Reads<'a> {
    Items(Vec<&'a str>),
    Column(celhook_json::Strings<'a>),
}

impl<'a> Reads<'a> {
    fn len(&self) -> usize {
        match self {
            Reads::Items(v) => v.len(),
            Reads::Column(c) => c.len(),
        }
    }

    /// The `i`th string's UTF-8 bytes (empty past the end, never asked).
    #[inline(always)]
    fn at(&self, i: usize) -> &'a [u8] {
        match self {
            Reads::Items(v) => v.get(i).map_or(&[], |s| s.as_bytes()),
            Reads::Column(c) => c.bytes_at(i).unwrap_or_default(),
        }
    }

    /// The strings counted for an inner loop of `kind`, each read
    /// charged [`DIRECT_READ`].
    fn index(&self, kind: LoopKind) -> Indexed<'a> {
        match self {
            Reads::Items(v) => StrIndex::build_strs(v, DIRECT_READ, kind),
            Reads::Column(c) => StrIndex::build_column(*c, DIRECT_READ, kind),
        }
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
    use super::{all_distinct_cost, distinct, Reads, DIRECT_READ, PAIRWISE};
    use crate::ir::LoopKind;
    use crate::runtime::charge::long_compare_cost;
    use crate::runtime::loops::quantifier;
    use crate::value::str_size;

    fn reads<'a>(names: &[&'a str]) -> Reads<'a> {
        Reads::Items(names.to_vec())
    }

    #[test]
    fn distinct_finds_a_repeat_wherever_it_is() {
        // Strings alike at both ends and of one length, so that many share
        // a slot; and short ones.
        let long: Vec<String> = (0..PAIRWISE)
            .map(|i| format!("a-long-common-prefix-{i:02}-and-a-common-suffix"))
            .collect();
        let short: Vec<String> = (0..PAIRWISE).map(|i| format!("{i}")).collect();
        for (names, long_ones) in [(&long, PAIRWISE), (&short, 0)] {
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            assert_eq!(distinct(&reads(&names)), Some((PAIRWISE as u64, long_ones)));
            for i in 0..names.len() {
                for j in 0..names.len() {
                    if i != j {
                        let mut twice = names.clone();
                        twice[j] = names[i];
                        assert_eq!(distinct(&reads(&twice)), None, "{i} at {j}");
                    }
                }
            }
        }
        assert_eq!(distinct(&reads(&[])), Some((0, 0)));
        assert_eq!(distinct(&reads(&["", "a"])), Some((1, 0)));
        assert_eq!(distinct(&reads(&["", ""])), None);
    }

    /// The uniqueness check's charge, pair by pair as the lookups' steps
    /// add it up (every string compared with every other).
    fn pairwise_cost(names: &[&str], range: u64) -> u64 {
        let n = names.len() as u64;
        let mut compares = 0;
        for a in names {
            for b in names {
                compares += long_compare_cost(a.len(), str_size(a), b.len(), str_size(b));
            }
        }
        let (_, step, _) = quantifier(LoopKind::All);
        n * (range + 2 * n * DIRECT_READ + 4) + compares + step * n + 1
    }

    #[test]
    fn the_uniqueness_charge_is_the_pairwise_one() {
        // Empty, short, exactly short, long, and long with characters of
        // more than one byte (charged by characters, not bytes).
        let pool = [
            "",
            "a",
            "metrics",
            "ten-bytes!",
            "eleven-byte",
            "jaeger-thrift",
            "a-much-longer-port-name-than-most",
            "ünïcödé-nämé-lõng",
            "日本語の長い名前です",
        ];
        let mut lists: Vec<Vec<&str>> = (0..pool.len()).map(|i| pool[..=i].to_vec()).collect();
        lists.push(pool.iter().rev().copied().collect());
        lists.push(pool[4..].to_vec());
        for names in &lists {
            // The same names as a table's column, read in place.
            let rows: Vec<String> = names
                .iter()
                .map(|n| {
                    format!(
                        r#"{{"name":{}}}"#,
                        serde_json::to_string(n).expect("a string")
                    )
                })
                .collect();
            let text = format!("[{}]", rows.join(","));
            let table = celhook_json::Parser::new(&text)
                .value_rows()
                .expect("valid");
            let celhook_json::Value::Table(table) = &table else {
                panic!("a table: {text}")
            };
            let Some(celhook_json::Cells::Str(column)) = table.column("name") else {
                panic!("a string column: {text}")
            };
            for range in [0, 3] {
                for names_read in [reads(names), Reads::Column(column)] {
                    assert_eq!(
                        all_distinct_cost(LoopKind::All, LoopKind::ExistsOne, &names_read, range),
                        Some(pairwise_cost(names, range)),
                        "{names:?}"
                    );
                }
            }
        }
        // A repeat, or another pair of loops, is not answered here.
        let twice = ["a", "b", "a"];
        let kinds = [LoopKind::All, LoopKind::ExistsOne];
        assert_eq!(
            all_distinct_cost(kinds[0], kinds[1], &reads(&twice), 0),
            None
        );
        assert_eq!(
            all_distinct_cost(LoopKind::Exists, kinds[1], &reads(&["a"]), 0),
            None
        );
    }
}
