//! An evaluation's state: its variable slots, the reads it keeps (memo
//! cells, per-element memos, scanned loops' reads) and its cost against
//! its limit, in allocations a scratch frame keeps from one program to the
//! next.

use super::counted;
use crate::value::error::{ErrorKind, EvalError};
use crate::value::Value;

/// Variable slots: `self`, `oldSelf` and the loop variables. A plain Vec:
/// indexing a SmallVec was an out-of-line call on every variable read
/// (4% of a review's instructions), more than its allocation saves.
pub(crate) type Vars<'a> = Vec<Value<'a>>;

/// The state of one evaluation.
#[derive(Default)]
pub(crate) struct Frame<'a> {
    pub(super) vars: Vars<'a>,
    /// How many times each variable slot was bound: a memo is good while
    /// its variable's count is the one it was filled under.
    pub(super) bound: Vec<u64>,
    pub(super) memos: Vec<Option<MemoCell<'a>>>,
    /// Field reads kept per JSON object (see `memo`), by the addresses of
    /// the object and its schema node.
    pub(super) elem_memos: Vec<ElemMemo<'a>>,
    /// How many of `elem_memos` the running program uses (the others are
    /// empty, kept for a later program).
    elem_cells: usize,
    /// Element reads of scanned loops (see `memo::Scan`), one list each.
    pub(super) scans: Vec<Option<ScanCache<'a>>>,
    /// Cost spent so far by this expression.
    pub cost: u64,
    /// Cost at which evaluation stops.
    pub limit: u64,
    /// Where `variables.<name>` comes from (policy expressions).
    pub lazy: Option<&'a dyn Lazy<'a>>,
}

/// The source of a composition's variables: each evaluated on first use
/// with its own cost limit, its cost not charged to the expression that
/// reads it (the API server counts it against the policy's budget).
pub(crate) trait Lazy<'a> {
    fn variable(&'a self, index: usize) -> Result<Value<'a>, EvalError>;
}

/// A kept field read (see `memo`): its value, the cost its evaluation was
/// charged, and the binding of its variable it was read under.
#[derive(Clone)]
pub(crate) struct MemoCell<'a> {
    pub(super) bound: u64,
    pub(super) cost: u64,
    pub(super) value: Value<'a>,
}

/// The element reads of a scanned loop over one list: per slot and
/// element, the charge and value, read when first needed. Kept for the
/// evaluation when the list is the request's JSON (by the addresses of its
/// items and schema, and its length); `failed` once a run had to fall back.
pub(crate) struct ScanCache<'a> {
    pub(super) list: (usize, usize, usize),
    pub(super) failed: bool,
    /// Slots (of the first 64) read for every element.
    pub(super) full: u64,
    pub(super) reads: Vec<Option<(u64, Value<'a>)>>,
    /// Per slot, the string reads counted (see `counted`); empty until a
    /// loop asks for them.
    pub(super) indexes: Vec<counted::Indexed<'a>>,
}

/// One per-element memo cell: (object, schema) addresses to the charge
/// and value of the read.
pub(super) type ElemMemo<'a> =
    std::collections::HashMap<(usize, usize), (u64, Value<'a>), foldhash::fast::FixedState>;

impl<'a> Frame<'a> {
    pub(crate) fn new(vars: Vars<'a>, cells: crate::ir::Cells, limit: u64) -> Self {
        let slots = vars.len();
        let mut frame = Frame {
            vars,
            ..Frame::default()
        };
        frame.size(slots, cells, limit);
        frame
    }

    /// Readies a kept frame (empty, see [`Frame::release`]) for a program
    /// of `slots` variables and `cells` memos, in the allocations it has.
    #[inline]
    pub(crate) fn reset(
        &mut self,
        this: Value<'a>,
        old_self: Option<Value<'a>>,
        slots: usize,
        cells: crate::ir::Cells,
        limit: u64,
    ) {
        // `self` and `oldSelf` are the first two slots (asserted where the
        // checker's slot numbers and this meet, in `Program`).
        debug_assert!(self.vars.is_empty());
        self.vars.push(this);
        self.vars.push(old_self.unwrap_or(Value::Null));
        self.size(slots, cells, limit);
    }

    /// Binds `self` and `oldSelf` in a released frame, for programs run in
    /// turn on them ([`Frame::reset_bound`]).
    #[inline]
    pub(crate) fn bind_selves(&mut self, this: Value<'a>, old_self: Option<Value<'a>>) {
        debug_assert!(self.is_released());
        // A binding forgotten rather than dropped left only its two values
        // (each program's release clears the rest): they go first.
        self.vars.clear();
        self.vars.push(this);
        self.vars.push(old_self.unwrap_or(Value::Null));
    }

    /// [`Frame::reset`] of a frame whose `self` and `oldSelf` are bound.
    #[inline]
    pub(crate) fn reset_bound(&mut self, slots: usize, cells: crate::ir::Cells, limit: u64) {
        debug_assert!(self.vars.len() == 2 && self.bound.is_empty() && self.scans.is_empty());
        self.size(slots, cells, limit);
    }

    /// `oldSelf` replaced by `v`, the value it held given back.
    pub(crate) fn swap_old_self(&mut self, v: Value<'a>) -> Value<'a> {
        std::mem::replace(&mut self.vars[1], v)
    }

    /// [`Frame::release`] but `self` and `oldSelf`, kept bound.
    #[inline]
    pub(crate) fn release_bound(&mut self) {
        self.vars.truncate(2);
        self.release_kept();
    }

    /// Grows the frame to `slots` variables (null past those it holds) and
    /// the memo cells of `cells`, none of them bound or filled yet.
    #[inline]
    fn size(&mut self, slots: usize, cells: crate::ir::Cells, limit: u64) {
        self.cost = 0;
        self.limit = limit;
        self.elem_cells = cells.by_element;
        // Most rules bind nothing past `self` and `oldSelf` and keep
        // nothing: the frame is ready as it is.
        if slots <= 2 && cells.by_binding == 0 && cells.by_element == 0 && cells.by_scan == 0 {
            return;
        }
        self.grow(slots, cells);
    }

    /// [`Frame::size`] for a program that binds or keeps something.
    #[inline(never)]
    fn grow(&mut self, slots: usize, cells: crate::ir::Cells) {
        // Filled a slot at a time, in line: a program has a few slots and
        // cells, and `resize` or `resize_with` was a call each (and
        // `resize` clones a `Value` through its generic clone), about a
        // twentieth of a rule's evaluation.
        // Most rules have no variable past `self` and `oldSelf`, already
        // pushed: nothing to fill.
        while self.vars.len() < slots {
            self.vars.push(Value::Null);
        }
        // Read only when a loop or `cel.bind` binds a slot (the checker's
        // `bind_var` numbers them after `self`, `oldSelf` and any
        // environment variables, so the program has more than two), or by
        // a memo keyed on a binding: without either (most rules) it stays
        // empty.
        if slots > 2 || cells.by_binding > 0 {
            while self.bound.len() < slots {
                self.bound.push(0);
            }
        }
        // Most programs keep nothing: no fill for cells they lack.
        while self.memos.len() < cells.by_binding {
            self.memos.push(None);
        }
        // Grown only: a map a program lacks stays (empty) for a later
        // program's cell, which spares freeing and allocating it again.
        if self.elem_memos.len() < cells.by_element {
            self.elem_memos.resize_with(cells.by_element, || {
                ElemMemo::with_hasher(foldhash::fast::FixedState::default())
            });
        }
        while self.scans.len() < cells.by_scan {
            self.scans.push(None);
        }
    }

    /// Drops what the evaluation held, keeping the allocations.
    #[inline]
    pub(crate) fn release(&mut self) {
        self.vars.clear();
        self.release_kept();
    }

    /// Drops the reads the evaluation kept and its binding counts.
    #[inline(always)]
    fn release_kept(&mut self) {
        self.bound.clear();
        self.memos.clear();
        // A memo map keeps its table for the next frame's same cell. Most
        // programs have none: tested first, since the loop, empty then, may
        // be compiled out of line (a call of about 30 instructions for
        // nothing on every rule, once the crate's code moved).
        if self.elem_cells > 0 {
            self.elem_memos
                .iter_mut()
                .take(self.elem_cells)
                .for_each(ElemMemo::clear);
        }
        self.scans.clear();
    }

    /// True when the frame holds nothing of an evaluation (what
    /// [`Frame::release`] leaves): a memo map may keep its empty table.
    pub(crate) fn is_released(&self) -> bool {
        self.vars.is_empty()
            && self.bound.is_empty()
            && self.memos.is_empty()
            && self.elem_memos.iter().all(ElemMemo::is_empty)
            && self.scans.is_empty()
    }

    /// Binds a variable; memos of the previous value are stale from now on.
    #[inline]
    pub(super) fn bind(&mut self, slot: usize, v: Value<'a>) {
        self.vars[slot] = v;
        self.bound[slot] += 1;
    }
}

/// True when charging `cost` would pass the frame's limit.
pub(super) fn exceeds(f: &Frame<'_>, cost: u64) -> bool {
    f.cost.saturating_add(cost) > f.limit
}

impl Frame<'_> {
    /// Charges `units` if they stay within the limit; otherwise charges
    /// nothing and gives `None`, so that a shortcut hands over to the steps,
    /// which stop where cel-go stops.
    #[inline]
    pub(super) fn charge_within(&mut self, units: u64) -> Option<()> {
        if exceeds(self, units) {
            return None;
        }
        self.cost += units;
        Some(())
    }

    #[inline]
    pub(super) fn charge(&mut self, units: u64) -> Result<(), EvalError> {
        self.cost = self.cost.saturating_add(units);
        if self.cost > self.limit {
            return Err(cost_limit_error());
        }
        Ok(())
    }
}

impl Frame<'_> {
    /// `units` charges of 1, as a kept field read charges what its chain
    /// of unit steps did: the first step past the limit stops the count
    /// (at limit + 1, or one more when the limit was already passed).
    #[inline]
    pub(super) fn charge_units(&mut self, units: u64) -> Result<(), EvalError> {
        if units == 0 {
            return Ok(());
        }
        if self.cost.saturating_add(units) > self.limit {
            self.cost = self
                .cost
                .saturating_add(1)
                .max(self.limit.saturating_add(1));
            return Err(cost_limit_error());
        }
        self.cost += units;
        Ok(())
    }
}

#[cold]
fn cost_limit_error() -> EvalError {
    EvalError::of(
        ErrorKind::CostLimit,
        "operation cancelled: actual cost limit exceeded",
    )
}
