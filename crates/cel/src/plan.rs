//! Field reads evaluated once per value of their variable: a chain of
//! selections on a variable (`self.spec.replicas`, `p.name`) that a program
//! reads more than once, or that sits in a loop over another variable
//! (`p.name` in `self.ports.all(p, self.ports.exists_one(q, q.name ==
//! p.name))`), is wrapped in [`Ir::Memo`]. The evaluator keeps its value
//! until the variable is bound again, and charges each later read the cost
//! the first one was charged (in unit steps, so a limit stops the count
//! where it would have), so cost accounting is unchanged. Only plain
//! selections are kept: they are pure and cheap to hold, and their errors
//! (a missing key) are evaluated again rather than stored.
//!
//! A chain on the variable of a loop that itself runs inside a loop
//! (`q.name` above, read once per pair) is kept per element instead
//! ([`Ir::ElemMemo`]): by the identity of the JSON object the variable is
//! bound to, which the request's JSON fixes for the whole evaluation.
//!
//! A quantifier or filter whose body compares the element (or something
//! computed from it alone) with values the loop does not change (`q.name ==
//! p.name`, `p.protocol == 'UDP'`) is marked as a [`Scan`]; inside another
//! loop, so is a body made of such comparisons, element-only predicates,
//! `&&`, `||` and `!`. The evaluator reads the element side once per
//! element of a JSON list (kept for the evaluation: an inner loop runs over
//! the same list on every outer step) and the other sides once per run,
//! then runs the steps with the same charges, falling back to the plain
//! loop on any error.

use std::collections::HashMap;

use crate::ir::{BinOp, Cells, Ir, LoopKind, Scan, ScanExpr};

/// The identity of a chain: its variable and the fields selected, in order.
type Chain = (usize, Vec<Box<str>>);

/// How a chain is kept.
#[derive(Clone, Copy)]
enum Kind {
    Binding(usize),
    Element(usize),
}

/// Wraps the chains worth keeping in `ir`; returns the memo cells the
/// evaluator needs.
pub(crate) fn plan(ir: &mut Ir) -> Cells {
    let mut seen: HashMap<Chain, Use> = HashMap::new();
    count(ir, &mut Vec::new(), &mut seen);
    let mut cells = Cells::default();
    let mut kinds: HashMap<Chain, Kind> = HashMap::new();
    for (chain, u) in seen {
        // A short chain on `self` or `oldSelf` read again outside any loop
        // is cheaper to read again than to keep: a kept read costs its
        // frame's memo cells (about 500 instructions a rule, measured on a
        // field read three times), a read of one or two fields by schema
        // position some 50 each.
        let root = chain.0 == crate::check::SELF_SLOT || chain.0 == crate::check::OLD_SELF_SLOT;
        if root && chain.1.len() < 3 && !u.repeated {
            continue;
        }
        if u.count > 1 || u.repeated {
            kinds.insert(chain, Kind::Binding(cells.by_binding));
            cells.by_binding += 1;
        } else if u.revisited {
            kinds.insert(chain, Kind::Element(cells.by_element));
            cells.by_element += 1;
        }
    }
    if !kinds.is_empty() {
        wrap(ir, &kinds);
    }
    crate::fuse::fuse(ir, true);
    mark_scans(ir, &mut cells, false);
    crate::fuse::fuse(ir, false);
    crate::fuse::mark_fused_bodies(ir);
    mark_counted_bodies(ir);
    cells
}

/// Marks the loops worth scanning (see [`Scan`]): inside another loop,
/// where the kept reads serve every run, any body of the scanned shape; at
/// the top, where each element is read once anyway, only a body of one
/// comparison (its other side is then evaluated once, not per element).
fn mark_scans(ir: &mut Ir, cells: &mut Cells, nested: bool) {
    let Ir::Loop(l) = ir else {
        ir.each_child_mut(&mut |child| mark_scans(child, cells, nested));
        return;
    };
    let kind_fits = matches!(
        l.kind,
        LoopKind::All | LoopKind::Exists | LoopKind::ExistsOne | LoopKind::Filter
    );
    let worth = nested || matches!(l.body, Ir::Bin(..));
    if kind_fits && worth && l.var2.is_none() && l.filter.is_none() {
        let mut plan = ScanPlan {
            var: l.var,
            slots: 0,
            compares: 0,
            chains: HashMap::new(),
        };
        match plan.expr(&mut l.body) {
            Some(body) if nested || matches!(body, ScanExpr::Compare { .. }) => {
                unwrap_element_chains(&body, &mut l.body);
                l.scan = Some(Scan {
                    cell: cells.by_scan,
                    slots: plan.slots,
                    compares: plan.compares,
                    body,
                });
                cells.by_scan += 1;
            }
            _ => {}
        }
    }
    let repeats = l.kind.repeats();
    mark_scans(&mut l.range, cells, nested);
    if let Some(filter) = &mut l.filter {
        mark_scans(filter, cells, nested || repeats);
    }
    mark_scans(&mut l.body, cells, nested || repeats);
}

/// Marks the loops whose body is a scanned loop the evaluator answers from
/// its counted reads (`Loop::counted_body`): `all`, `exists`, `exists_one`
/// or `filter` whose body is `all`, `exists` or `exists_one` of one
/// comparison that counted reads answer (see `runtime::counted`), over a
/// range that does not read the outer element, comparing with a field
/// chain of the outer element (`self.ports.all(p, self.ports.exists_one(q,
/// q.name == p.name))`, `oldSelf.ports.all(o, self.ports.exists(n, n.name
/// == o.name))`). The evaluator then reads that field of each outer
/// element straight from the JSON and looks it up, rather than walking the
/// inner loop once per element.
fn mark_counted_bodies(ir: &mut Ir) {
    if let Ir::Loop(l) = ir {
        (l.counted_body, l.counted_same) = counted_body(l);
    }
    ir.each_child_mut(&mut mark_counted_bodies);
}

/// Whether `l` is a counted body's outer loop, and whether its compared
/// field is the inner element's own (`Loop::counted_same`).
fn counted_body(l: &crate::ir::Loop) -> (bool, bool) {
    let outer = matches!(
        l.kind,
        LoopKind::All | LoopKind::Exists | LoopKind::ExistsOne | LoopKind::Filter
    ) && l.var2.is_none()
        && l.filter.is_none()
        && l.scan.is_none()
        && !l.fused_body;
    let Ir::Loop(inner) = &l.body else {
        return (false, false);
    };
    let (
        Some(Scan {
            body: ScanExpr::Compare { element_left, .. },
            ..
        }),
        Ir::Bin(op, a, b),
    ) = (&inner.scan, &inner.body)
    else {
        return (false, false);
    };
    let (element, other) = if *element_left { (a, b) } else { (b, a) };
    let other = crate::fuse::field_chain(other).filter(|(var, _)| *var == l.var);
    let counted = outer
        && matches!(
            inner.kind,
            LoopKind::All | LoopKind::Exists | LoopKind::ExistsOne
        )
        && crate::runtime::counted::answers(inner.kind, *op)
        && !reads_var(&inner.range, l.var)
        && other.is_some();
    let same = counted
        && crate::fuse::field_chain(element)
            .zip(other)
            .is_some_and(|((var, mine), (_, theirs))| var == inner.var && mine == theirs);
    (counted, same)
}

/// True when `ir` reads variable `var`.
fn reads_var(ir: &Ir, var: usize) -> bool {
    if let Ir::Var(v) = ir {
        return *v == var;
    }
    let mut found = false;
    ir.each_child(&mut |child| found = found || reads_var(child, var));
    found
}

/// Strips the memo wrappers of the chains a scan reads per element: the
/// scan keeps those reads itself, so the wrappers would only cost lookups.
fn unwrap_element_chains(e: &ScanExpr, ir: &mut Ir) {
    match (e, ir) {
        (ScanExpr::And(x, y), Ir::And(a, b)) | (ScanExpr::Or(x, y), Ir::Or(a, b)) => {
            unwrap_element_chains(x, a);
            unwrap_element_chains(y, b);
        }
        (ScanExpr::Not(x), Ir::Not(a)) => unwrap_element_chains(x, a),
        (ScanExpr::Compare { element_left, .. }, Ir::Bin(_, a, b)) => {
            let element = if *element_left { a } else { b };
            if chain_of(element).is_some() {
                unwrap_memos(element);
            }
        }
        _ => {}
    }
}

/// The slots and compares of one scanned body being planned.
struct ScanPlan {
    var: usize,
    slots: usize,
    compares: usize,
    /// Slots of the chains on the element, to share between comparisons.
    chains: HashMap<Vec<Box<str>>, usize>,
}

impl ScanPlan {
    fn expr(&mut self, ir: &mut Ir) -> Option<ScanExpr> {
        let var = self.var;
        if let Ir::Bin(op, a, b) = ir {
            let compares = matches!(
                op,
                BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::In
            );
            let element_left = if element_only(a, var) && !mentions(b, var) {
                Some(true)
            } else if element_only(b, var) && !mentions(a, var) {
                Some(false)
            } else {
                None
            };
            if let (true, Some(element_left)) = (compares, element_left) {
                let element = if element_left { a } else { b };
                let slot = self.slot(element);
                self.compares += 1;
                return Some(ScanExpr::Compare {
                    slot,
                    compare: self.compares - 1,
                    element_left,
                });
            }
        }
        match ir {
            Ir::And(a, b) => Some(ScanExpr::And(
                Box::new(self.expr(a)?),
                Box::new(self.expr(b)?),
            )),
            Ir::Or(a, b) => Some(ScanExpr::Or(
                Box::new(self.expr(a)?),
                Box::new(self.expr(b)?),
            )),
            Ir::Not(a) => Some(ScanExpr::Not(Box::new(self.expr(a)?))),
            other => element_only(other, var).then(|| {
                self.slots += 1;
                ScanExpr::Pred {
                    slot: self.slots - 1,
                }
            }),
        }
    }

    /// The slot of an element side; the element itself or a chain of
    /// fields on it shares its slot with the same read elsewhere in the body.
    fn slot(&mut self, element: &Ir) -> usize {
        let key = match element {
            Ir::Var(_) => Some(Vec::new()),
            _ => chain_of(element).map(|(_, fields)| fields),
        };
        if let Some(key) = key {
            let next = self.slots;
            let slot = *self.chains.entry(key).or_insert(next);
            if slot != next {
                return slot;
            }
        }
        self.slots += 1;
        self.slots - 1
    }
}

/// Whether `ir` reads variable `var` and no other, and binds none (no
/// loop): its value is fixed by the element `var` is bound to.
fn element_only(ir: &Ir, var: usize) -> bool {
    fn only(ir: &Ir, var: usize) -> bool {
        match ir {
            Ir::Var(v) => *v == var,
            Ir::Loop(_) => false,
            Ir::Memo { var: v, inner, .. } | Ir::ElemMemo { var: v, inner, .. } => {
                *v == var && only(inner, var)
            }
            _ => {
                let mut all = true;
                ir.each_child(&mut |c| all = all && only(c, var));
                all
            }
        }
    }
    mentions(ir, var) && only(ir, var)
}

/// Whether `ir` reads variable `var` anywhere.
fn mentions(ir: &Ir, var: usize) -> bool {
    match ir {
        Ir::Var(v) => *v == var,
        Ir::Memo { var: v, inner, .. } | Ir::ElemMemo { var: v, inner, .. } => {
            *v == var || mentions(inner, var)
        }
        _ => {
            let mut any = false;
            ir.each_child(&mut |c| any = any || mentions(c, var));
            any
        }
    }
}

fn unwrap_memos(ir: &mut Ir) {
    if let Ir::Memo { inner, .. } | Ir::ElemMemo { inner, .. } = ir {
        let inner = std::mem::replace(&mut **inner, Ir::Const(crate::value::Const::Null));
        *ir = inner;
        unwrap_memos(ir);
    } else if let Ir::Select { operand, .. } = ir {
        unwrap_memos(operand);
    }
}

#[derive(Default)]
struct Use {
    count: usize,
    /// Some occurrence is inside a loop that does not bind the chain's
    /// variable: it is read again on every step.
    repeated: bool,
    /// The loop that binds the chain's variable runs inside another loop:
    /// each element is bound again, and read again, on every outer step
    /// (`q.name` in `all(p, ports.exists_one(q, q.name == p.name))`).
    revisited: bool,
}

/// The chain `ir` reads, if it is selections (not presence tests) on a
/// variable, looking through chains already wrapped.
fn chain_of(ir: &Ir) -> Option<Chain> {
    let mut fields = Vec::new();
    let mut at = ir;
    loop {
        match at {
            Ir::Select {
                operand,
                field,
                test: false,
                ..
            } => {
                fields.push(field.clone());
                at = operand;
            }
            Ir::Memo { inner, .. } | Ir::ElemMemo { inner, .. } => at = inner,
            Ir::Var(slot) if !fields.is_empty() => {
                fields.reverse();
                return Some((*slot, fields));
            }
            _ => return None,
        }
    }
}

/// `loops` holds, for each enclosing loop from the outside in, the slots
/// it binds and whether its body runs more than once.
fn count(ir: &Ir, loops: &mut Vec<(usize, Option<usize>, bool)>, seen: &mut HashMap<Chain, Use>) {
    if let Some(chain) = chain_of(ir) {
        let var = chain.0;
        // Loops inside the one that binds the variable (or all loops, for
        // `self` and `oldSelf`, which nothing binds).
        let binder = loops
            .iter()
            .rposition(|(a, b, _)| *a == var || *b == Some(var));
        let inner_from = binder.map_or(0, |i| i + 1);
        let repeated = loops[inner_from..].iter().any(|(_, _, repeats)| *repeats);
        let revisited =
            binder.is_some_and(|b| loops[b].2 && loops[..b].iter().any(|(_, _, repeats)| *repeats));
        let u = seen.entry(chain).or_default();
        u.count += 1;
        u.repeated |= repeated;
        u.revisited |= revisited;
    }
    match ir {
        Ir::Loop(l) => {
            count(&l.range, loops, seen);
            let repeats = l.kind.repeats();
            loops.push((l.var, l.var2, repeats));
            if let Some(filter) = &l.filter {
                count(filter, loops, seen);
            }
            count(&l.body, loops, seen);
            loops.pop();
        }
        _ => ir.each_child(&mut |child| count(child, loops, seen)),
    }
}

fn wrap(ir: &mut Ir, cells: &HashMap<Chain, Kind>) {
    ir.each_child_mut(&mut |child| wrap(child, cells));
    // Inner chains first (above), then this one around them.
    if let Some(chain) = chain_of(ir) {
        if let Some(&kind) = cells.get(&chain) {
            let var = chain.0;
            let inner = Box::new(std::mem::replace(ir, Ir::Const(crate::value::Const::Null)));
            *ir = match kind {
                Kind::Binding(cell) => Ir::Memo { cell, var, inner },
                Kind::Element(cell) => Ir::ElemMemo { cell, var, inner },
            };
        }
    }
}
