//! Comparisons of a variable's field, or a chain of fields, with a
//! constant (`p.port > 0`, `p.protocol == 'UDP'`, `p.protocol in ['TCP',
//! 'UDP']`, `object.spec.replicas <= 5`), most of what the bodies of rules'
//! loops and policies test, fused into one node ([`Ir::FieldCmp`]). The
//! evaluator reads the fields from the JSON objects the variable holds and
//! compares in one step, charging what the walk of the comparison would (the
//! variable, each selection, the operator); anything else (not a JSON
//! object, a missing field, another type, a budget too close to its limit)
//! runs the comparison as planned, so no answer or cost changes. Runs after
//! the memo planner: kept reads (`Ir::Memo`) along the chain are looked
//! through, as their charges are those of the reads they keep.

use std::sync::Arc;

use crate::ir::{BinOp, FieldCmp, FieldTest, Ir};
use crate::value::Const;

/// Fuses the comparisons of `ir` that fit. Run twice around the planning
/// of scans: `before_scans`, only outside loops and in the bodies of
/// outermost loops, where a fused comparison costs less than a scan of it
/// (no reads to keep: each element is read once anyway); then everywhere
/// but in the bodies of the loops marked as scans, which the evaluator
/// walks beside their scan plan.
pub(crate) fn fuse(ir: &mut Ir, before_scans: bool) {
    walk(ir, before_scans, 0);
}

/// `depth`: how many loops that repeat their body enclose `ir`.
fn walk(ir: &mut Ir, before_scans: bool, depth: usize) {
    if before_scans && depth >= 2 {
        return;
    }
    match ir {
        // Its fallback is the comparison already fused.
        Ir::FieldCmp(_) => return,
        Ir::Loop(l) => {
            walk(&mut l.range, before_scans, depth);
            let inner = depth + usize::from(l.kind.repeats());
            if let Some(filter) = &mut l.filter {
                walk(filter, before_scans, inner);
            }
            if l.scan.is_none() {
                walk(&mut l.body, before_scans, inner);
            }
            return;
        }
        _ => {}
    }
    ir.each_child_mut(&mut |child| walk(child, before_scans, depth));
    if let Some(fused) = fusable(ir) {
        let fallback = std::mem::replace(ir, Ir::Const(Const::Null));
        *ir = Ir::FieldCmp(Box::new(fused(fallback)));
    }
}

/// The fused node of a fusable comparison, given the comparison as its
/// fallback.
fn fusable(ir: &Ir) -> Option<impl FnOnce(Ir) -> FieldCmp> {
    let Ir::Bin(op, a, b) = ir else {
        return None;
    };
    let mut path = Vec::new();
    let mut at = &**a;
    let slot = loop {
        match at {
            Ir::Memo { inner, .. } | Ir::ElemMemo { inner, .. } => at = inner,
            Ir::Select {
                operand,
                field,
                test: false,
                position,
            } => {
                path.push((field.clone(), *position));
                at = operand;
            }
            Ir::Var(slot) if !path.is_empty() => break *slot,
            _ => return None,
        }
    };
    path.reverse();
    let test = match (op, &**b) {
        (BinOp::Eq | BinOp::Ne, Ir::Const(Const::Str(s))) => {
            FieldTest::Str(*op == BinOp::Eq, s.clone())
        }
        (
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge,
            Ir::Const(Const::Int(k)),
        ) => FieldTest::Int(*op, *k),
        (BinOp::In, Ir::ConstList(items)) => {
            let strings: Option<Vec<Arc<str>>> = items
                .iter()
                .map(|c| match c {
                    Const::Str(s) => Some(s.clone()),
                    _ => None,
                })
                .collect();
            FieldTest::OneOf(strings?.into())
        }
        _ => return None,
    };
    let mut path = path.into_iter();
    let (field, position) = path.next()?;
    let then = path.collect();
    Some(move |fallback| FieldCmp {
        slot,
        field,
        position,
        then,
        test,
        fallback,
    })
}
