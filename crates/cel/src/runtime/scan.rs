//! Scanned loops: bodies the planner marked (`ir::Scan`) run over element
//! reads kept across runs instead of through the general evaluator.

use super::counted::{self, Indexed, StrIndex};
use super::*;
use crate::value::ANY;
use celhook_json::Value as Json;

/// A loop marked by the memo pass as a scan (`memo::Scan`): element reads
/// are kept per element (for the evaluation, when the list is the
/// request's JSON), the other sides of comparisons once per run, and each
/// step charges what the plain loop would. `None`, with the cost put back,
/// on any error or a spent budget: the plain loop then runs and fails
/// where it would.
pub(super) fn scan_loop<'a>(
    l: &'a Loop,
    scan: &'a Scan,
    list: &List<'a>,
    f: &mut Frame<'a>,
) -> Option<Value<'a>> {
    let n = list.len();
    if n == 0 {
        return None;
    }
    let key = list_key(list);
    let mut cache = kept(scan, key.unwrap_or_default(), n, f);
    let result = if cache.failed {
        None
    } else {
        let start = f.cost;
        let mut run = ScanRun::new(l, scan, list, &mut cache);
        let result = match (&scan.body, &l.body) {
            // One comparison, most scanned bodies: over the kept reads
            // directly, with no walk of the body per element.
            (
                ScanExpr::Compare {
                    slot, element_left, ..
                },
                Ir::Bin(op, a, b),
            ) => run.compare(l.kind, *op, a, b, *slot, *element_left, f),
            (body, _) => scan_steps(l.kind, 0..n, list, f, |i, f| run.expr(body, &l.body, i, f)),
        };
        if result.is_none() {
            f.cost = start;
            cache.failed = true;
        }
        result
    };
    if key.is_some() {
        f.scans[scan.cell] = Some(cache);
    }
    result
}

/// Keeps for the scanned loop `l` what its runs over `list` would: the
/// element side `element` of comparison slot `slot` read for every
/// element, and counted. Nothing is charged (the reads' charges are kept
/// with them); `None` when the reads cannot be counted.
pub(super) fn count_reads<'a>(
    l: &'a Loop,
    scan: &'a Scan,
    list: &List<'a>,
    slot: usize,
    element: &'a Ir,
    f: &mut Frame<'a>,
) -> Option<()> {
    let key = list_key(list)?;
    let mut cache = kept(scan, key, list.len(), f);
    let counted = !cache.failed && {
        let mut run = ScanRun::new(l, scan, list, &mut cache);
        let before = f.cost;
        let base = run.all_reads(slot, element, f);
        f.cost = before;
        base.and_then(|base| run.counted(slot, base, l.kind))
            .is_some()
    };
    f.scans[scan.cell] = Some(cache);
    counted.then_some(())
}

/// The reads `scan` kept of the list `key` (of `n` elements), taken out of
/// the frame, or empty ones for it.
fn kept<'a>(scan: &Scan, key: (usize, usize, usize), n: usize, f: &mut Frame<'a>) -> ScanCache<'a> {
    match f.scans[scan.cell].take() {
        Some(cache) if cache.list == key => cache,
        _ => ScanCache {
            list: key,
            failed: false,
            full: 0,
            reads: vec![None; scan.slots * n],
            indexes: Vec::new(),
        },
    }
}

/// What identifies a JSON list for the evaluation: the addresses of its
/// items and schema, and its length (the reads are laid out by it).
fn list_key(list: &List<'_>) -> Option<(usize, usize, usize)> {
    match list {
        List::Json { items, schema } => Some((
            items.as_ptr() as usize,
            std::ptr::from_ref(*schema) as usize,
            items.len(),
        )),
        List::Table { table, schema } => Some((
            std::ptr::from_ref(*table) as usize,
            std::ptr::from_ref(*schema) as usize,
            table.len(),
        )),
        _ => None,
    }
}

/// True when `a` and `b` are the same JSON list of the request.
pub(super) fn same_list(a: &List<'_>, b: &List<'_>) -> bool {
    list_key(a).is_some_and(|key| list_key(b) == Some(key))
}

impl<'a> ScanCache<'a> {
    /// The kept reads of `slot`, one per element of the `n` the list has.
    pub(super) fn slot_reads(&self, slot: usize, n: usize) -> &[Option<(u64, Value<'a>)>] {
        self.reads.get(slot * n..(slot + 1) * n).unwrap_or(&[])
    }

    /// The counted reads of `slot` kept for `list`, once a run read every
    /// element and counted them.
    pub(super) fn counted(&self, list: &List<'_>, slot: usize) -> Option<&StrIndex<'a>> {
        if self.failed || Some(self.list) != list_key(list) || self.full & slot_bit(slot) == 0 {
            return None;
        }
        match self.indexes.get(slot)? {
            Indexed::Built(index) => Some(index),
            _ => None,
        }
    }
}

/// One run of a scanned loop.
pub(super) struct ScanRun<'a, 'r> {
    var: usize,
    n: usize,
    list: &'r List<'a>,
    reads: &'r mut [Option<(u64, Value<'a>)>],
    full: &'r mut u64,
    indexes: &'r mut Vec<Indexed<'a>>,
    compares: usize,
    /// The other side of each comparison, evaluated when first needed
    /// (allocated then: a one-comparison body does without).
    others: Vec<Option<(u64, Value<'a>)>>,
}

impl<'a, 'r> ScanRun<'a, 'r> {
    /// A run of the scanned loop `l` over `list`, on the reads of `cache`.
    fn new(l: &Loop, scan: &Scan, list: &'r List<'a>, cache: &'r mut ScanCache<'a>) -> Self {
        ScanRun {
            var: l.var,
            n: list.len(),
            list,
            reads: &mut cache.reads,
            full: &mut cache.full,
            indexes: &mut cache.indexes,
            compares: scan.compares,
            others: Vec::new(),
        }
    }

    /// The body on element `i`, walking `ir` along with `e`; charged
    /// as [`eval`] charges it.
    fn expr(&mut self, e: &ScanExpr, ir: &'a Ir, i: usize, f: &mut Frame<'a>) -> Option<bool> {
        match (e, ir) {
            (ScanExpr::And(x, y), Ir::And(a, b)) => {
                Some(self.expr(x, a, i, f)? && self.expr(y, b, i, f)?)
            }
            (ScanExpr::Or(x, y), Ir::Or(a, b)) => {
                Some(self.expr(x, a, i, f)? || self.expr(y, b, i, f)?)
            }
            (ScanExpr::Not(x), Ir::Not(a)) => {
                let r = self.expr(x, a, i, f)?;
                f.charge(1).ok()?;
                Some(!r)
            }
            (ScanExpr::Pred { slot }, ir) => {
                let at = self.read(*slot, ir, i, f)?;
                let (cost, r) = self.reads[at].as_ref()?;
                let r = match r {
                    Value::Bool(r) => *r,
                    _ => return None,
                };
                f.charge(*cost).ok()?;
                Some(r)
            }
            (
                ScanExpr::Compare {
                    slot,
                    compare,
                    element_left,
                },
                Ir::Bin(op, a, b),
            ) => {
                let (element, other) = if *element_left { (a, b) } else { (b, a) };
                let at = self.read(*slot, element, i, f)?;
                self.other(*compare, other, f)?;
                let (read_cost, read) = self.reads[at].as_ref()?;
                let (other_cost, x) = self.others[*compare].as_ref()?;
                compare_kept(*op, read, read_cost + other_cost, x, *element_left, b, f)
            }
            _ => None,
        }
    }

    /// A body of one comparison `a op b`, the element's side in `slot`:
    /// every element read first, the other side once, then the steps.
    #[allow(clippy::too_many_arguments)]
    fn compare(
        &mut self,
        kind: LoopKind,
        op: BinOp,
        a: &'a Ir,
        b: &'a Ir,
        slot: usize,
        element_left: bool,
        f: &mut Frame<'a>,
    ) -> Option<Value<'a>> {
        let (element, other) = if element_left { (a, b) } else { (b, a) };
        // Read in a run before: the loop runs again over the same list
        // (the inner loop of `all(p, exists_one(q, q.f == p.f))`).
        let again = *self.full & slot_bit(slot) != 0;
        let base = self.all_reads(slot, element, f)?;
        let (other_cost, x) = run_other(other, f)?;
        if again && counted::answers(kind, op) {
            let list = self.list;
            if let Some(index) = self.counted(slot, base, kind) {
                if let Some((total, found)) = counted::tally(index, kind, list, other_cost, &x) {
                    if f.charge_within(total).is_some() {
                        return Some(found);
                    }
                }
            }
        }
        let reads = self.reads[base..base + self.n].iter();
        scan_steps(kind, reads, self.list, f, |read, f| {
            let (cost, read) = read.as_ref()?;
            compare_kept(op, read, cost + other_cost, &x, element_left, b, f)
        })
    }

    /// Where the element side in `slot` for element `i` is kept, read now
    /// if not yet.
    #[inline]
    fn read(&mut self, slot: usize, ir: &'a Ir, i: usize, f: &mut Frame<'a>) -> Option<usize> {
        let at = slot * self.n + i;
        if self.reads[at].is_none() {
            // A field chain of a JSON element, read in place: no element
            // bound (each walked read below binds its own).
            let direct = match (self.list, ir) {
                // The element itself (`x == t`): what reading the bound
                // variable gives and charges (`read_var`), without binding.
                (_, Ir::Var(var)) if *var == self.var => Some((1, self.list.get(i)?)),
                (List::Json { .. } | List::Table { .. }, _) => {
                    let (items, schema) = self.list.json()?;
                    let var = self.var;
                    let item = items.get(i);
                    let item_schema = schema.items.as_deref().unwrap_or(&ANY);
                    fused::chain_read(ir, &mut |slot| match item {
                        Some(Json::Object(obj)) if slot == var => Some(Map::Json {
                            obj,
                            schema: item_schema,
                        }),
                        _ => None,
                    })
                }
                _ => None,
            };
            let kept = match direct {
                Some(kept) => kept,
                None => {
                    f.bind(self.var, self.list.get(i)?);
                    let before = f.cost;
                    let r = operand(ir, f);
                    let cost = f.cost - before;
                    f.cost = before;
                    (cost, r.ok()?)
                }
            };
            self.reads[at] = Some(kept);
        }
        Some(at)
    }

    /// Every element's read of `slot`; where the first is kept.
    fn all_reads(&mut self, slot: usize, ir: &'a Ir, f: &mut Frame<'a>) -> Option<usize> {
        let bit = slot_bit(slot);
        if *self.full & bit == 0 {
            for i in 0..self.n {
                self.read(slot, ir, i, f)?;
            }
            *self.full |= bit;
        }
        Some(slot * self.n)
    }

    /// The slot's reads counted for this loop of `kind` (counted once, at
    /// the first run that asks); `None` when a read is not a string.
    fn counted(&mut self, slot: usize, base: usize, kind: LoopKind) -> Option<&StrIndex<'a>> {
        if self.indexes.len() <= slot {
            self.indexes.resize_with(slot + 1, || Indexed::NotYet);
        }
        if let Indexed::NotYet = self.indexes[slot] {
            self.indexes[slot] = StrIndex::build(&self.reads[base..base + self.n], kind);
        }
        match &self.indexes[slot] {
            Indexed::Built(index) => Some(index),
            _ => None,
        }
    }

    /// The other side of comparison `compare`, evaluated once per run.
    #[inline]
    fn other(&mut self, compare: usize, ir: &'a Ir, f: &mut Frame<'a>) -> Option<()> {
        if self.others.is_empty() {
            self.others = vec![None; self.compares];
        }
        if self.others[compare].is_none() {
            self.others[compare] = Some(run_other(ir, f)?);
        }
        Some(())
    }
}

/// The bit of `slot` in `ScanCache::full` (none past the 64th).
fn slot_bit(slot: usize) -> u64 {
    1u64.checked_shl(slot as u32).unwrap_or(0)
}

/// What [`scan_steps`] asks of each element: the body's verdict, or `None`
/// to hand the loop over. A closure is one; a body that must be inlined
/// into the loop (a call per element costs more than a fused test) is a
/// type of its own with an `#[inline(always)]` step.
pub(super) trait Step<'a, T> {
    fn step(&mut self, item: T, f: &mut Frame<'a>) -> Option<bool>;

    /// What the steps charged apart from the frame (a body that charges
    /// nothing else keeps its sum where the compiler can hold it in a
    /// register); added to the loop's own charges when it ends.
    #[inline(always)]
    fn charged(&self) -> u64 {
        0
    }
}

impl<'a, T, F: FnMut(T, &mut Frame<'a>) -> Option<bool>> Step<'a, T> for F {
    #[inline(always)]
    fn step(&mut self, item: T, f: &mut Frame<'a>) -> Option<bool> {
        self(item, f)
    }
}

/// The steps of a scanned loop, with `body` deciding element `i`; charged
/// as [`quantify`], [`exists_one`] and [`filter`] charge.
#[inline(always)]
pub(super) fn scan_steps<'a, T>(
    kind: LoopKind,
    elements: impl ExactSizeIterator<Item = T>,
    list: &List<'a>,
    f: &mut Frame<'a>,
    body: impl FnMut(T, &mut Frame<'a>) -> Option<bool>,
) -> Option<Value<'a>> {
    steps_of(kind, elements, list, f, body)
}

/// [`scan_steps`] of any [`Step`]. Two entry points rather than one:
/// only an `FnMut` bound lets a closure's argument types be inferred at
/// its call site, and only a `Step` type can force its body inline.
pub(super) fn steps_of<'a, T>(
    kind: LoopKind,
    elements: impl ExactSizeIterator<Item = T>,
    list: &List<'a>,
    f: &mut Frame<'a>,
    mut body: impl Step<'a, T>,
) -> Option<Value<'a>> {
    // The loop's own charges add up in a register and meet the limit once,
    // at the end: costs only grow, so a run whose total stays within the
    // limit passed it at every step, and one past it gives `None`, after
    // which the plain loop runs and stops where cel-go stops. A run bound
    // to fail may so go on to the list's end, work that grows with the
    // list alone (fused tests charge without a test of their own); a body
    // whose work per element grows with the list gives up itself once past
    // the limit (`lookup::counted_loop`).
    let n = elements.len();
    let mut cost = 0u64;
    let result = match kind {
        LoopKind::All | LoopKind::Exists => {
            let (decide, step, condition) = quantifier(kind);
            let mut result = !decide;
            let mut end = 1;
            for (i, e) in elements.enumerate() {
                cost += step;
                if body.step(e, f)? == decide {
                    result = decide;
                    end += if i + 1 < n { condition } else { 0 };
                    break;
                }
            }
            cost += end;
            Value::Bool(result)
        }
        LoopKind::ExistsOne => {
            let mut count = 0u64;
            for e in elements {
                count += u64::from(body.step(e, f)?);
            }
            cost += 2 * count + 2;
            Value::Bool(count == 1)
        }
        LoopKind::Filter => {
            let mut out = Vec::new();
            for (i, e) in elements.enumerate() {
                if body.step(e, f)? {
                    out.push(list.get(i)?);
                }
            }
            cost += 13 * out.len() as u64 + 1;
            Value::list(out)
        }
        _ => return None,
    };
    f.charge_within(cost.saturating_add(body.charged()))?;
    Some(result)
}

/// The number of elements `body` keeps, charged as a `filter` loop of
/// them charges in [`steps_of`] (`size` of that loop charges its own unit
/// apart): the list it would make is never made.
pub(super) fn count_of<'a, T>(
    elements: impl ExactSizeIterator<Item = T>,
    f: &mut Frame<'a>,
    mut body: impl Step<'a, T>,
) -> Option<i64> {
    let mut count = 0u64;
    for e in elements {
        count += u64::from(body.step(e, f)?);
    }
    let cost = (13 * count + 1).saturating_add(body.charged());
    f.charge_within(cost)?;
    i64::try_from(count).ok()
}

/// The other side of a comparison, with its charge (not charged).
pub(super) fn run_other<'a>(ir: &'a Ir, f: &mut Frame<'a>) -> Option<(u64, Value<'a>)> {
    if let Some(read) = fused::chain_read(ir, &mut |slot| fused::json_var(f, slot)) {
        return Some(read);
    }
    let before = f.cost;
    let r = operand(ir, f);
    let cost = f.cost - before;
    f.cost = before;
    Some((cost, r.ok()?))
}

/// `read op x` (or `x op read`), charged `operands` for the two sides and
/// what the comparison costs. Strings and ints, by far the most compared,
/// skip the generic path.
#[inline(always)]
pub(super) fn compare_kept<'a>(
    op: BinOp,
    read: &Value<'a>,
    operands: u64,
    x: &Value<'a>,
    element_left: bool,
    b: &'a Ir,
    f: &mut Frame<'a>,
) -> Option<bool> {
    match (read, x, op) {
        (Value::Str(s), Value::Str(t), BinOp::Eq | BinOp::Ne) => {
            f.charge(operands + charge::compare_cost_str(s, t)).ok()?;
            return Some((**s == **t) == (op == BinOp::Eq));
        }
        (Value::Int(i), Value::Int(j), _) => {
            let (i, j) = if element_left { (*i, *j) } else { (*j, *i) };
            let r = int_compare(op, i, j)?;
            f.charge(operands + 1).ok()?;
            return Some(r);
        }
        _ => {}
    }
    f.charge(operands).ok()?;
    let (p, q) = if element_left {
        (read.copy(), x.copy())
    } else {
        (x.copy(), read.copy())
    };
    match bin_values(op, p, q, b, f) {
        Ok(Value::Bool(r)) => Some(r),
        _ => None,
    }
}
