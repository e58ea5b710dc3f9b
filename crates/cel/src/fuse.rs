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

use crate::ir::{
    BinOp, ChainLink, FieldCmp, FieldPair, FieldTest, IntRange, Ir, LoopKind, PairSide,
};
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
        Ir::FieldCmp(_) | Ir::FieldPair(_) => return,
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
    } else if depth == 0 {
        // Outside loops only: inside one, a comparison of two fields is
        // what the scan and counted plans look for.
        if let Some(fused) = pairable(ir) {
            let fallback = std::mem::replace(ir, Ir::Const(Const::Null));
            *ir = Ir::FieldPair(Box::new(fused(fallback)));
        }
    }
}

/// The fused node of a comparison of two field chains, of int arithmetic
/// on fields and int constants, or of a field joined with a string
/// constant against a string, given the comparison as its fallback.
fn pairable(ir: &Ir) -> Option<impl FnOnce(Ir) -> FieldPair> {
    let Ir::Bin(op, a, b) = ir else {
        return None;
    };
    let op = *op;
    if !op.compares() {
        return None;
    }
    let (left, right) = (pair_side(a)?, pair_side(b)?);
    // A join only under `==` and `!=`, against a field or a string: the
    // evaluator answers no other (a node that always falls back is only
    // cost).
    let string = |s: &PairSide| matches!(s, PairSide::Field(..) | PairSide::Str(_));
    let joined = match (&left, &right) {
        (PairSide::Join(..), other) | (other, PairSide::Join(..)) => {
            if !matches!(op, BinOp::Eq | BinOp::Ne) || !string(other) {
                return None;
            }
            true
        }
        _ => false,
    };
    // A field against a constant is a `FieldCmp`; arithmetic must read a
    // field somewhere (`1 + 2 <= 3` reads none).
    let arith = |s: &PairSide| matches!(s, PairSide::Arith(..)) && reads_field(s);
    let field = |s: &PairSide| matches!(s, PairSide::Field(..));
    if !(joined || arith(&left) || arith(&right) || field(&left) && field(&right)) {
        return None;
    }
    Some(move |fallback| FieldPair {
        op,
        left,
        right,
        fallback,
    })
}

/// True when `side` reads a field.
fn reads_field(side: &PairSide) -> bool {
    match side {
        PairSide::Field(..) => true,
        PairSide::Int(_) | PairSide::Str(_) => false,
        PairSide::Arith(_, a, b) | PairSide::Join(a, b) => reads_field(a) || reads_field(b),
    }
}

/// A side of a fused comparison: a field chain, an int or string constant,
/// `+ - * / %` of two int sides, or a field and a string constant joined.
fn pair_side(ir: &Ir) -> Option<PairSide> {
    Some(match ir {
        Ir::Const(Const::Int(k)) => PairSide::Int(*k),
        Ir::Const(Const::Str(t)) => PairSide::Str(t.clone()),
        Ir::Bin(op @ (BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem), a, b) => {
            let (a, b) = (Box::new(pair_side(a)?), Box::new(pair_side(b)?));
            match (*op, &*a, &*b) {
                // A string constant makes `+` a join of strings: the join
                // of a field and a constant, the usual one, alone.
                (BinOp::Add, PairSide::Str(_), PairSide::Field(..))
                | (BinOp::Add, PairSide::Field(..), PairSide::Str(_)) => PairSide::Join(a, b),
                (_, PairSide::Str(_) | PairSide::Join(..), _)
                | (_, _, PairSide::Str(_) | PairSide::Join(..)) => return None,
                _ => PairSide::Arith(*op, a, b),
            }
        }
        _ => {
            let (slot, path) = field_chain(ir)?;
            PairSide::Field(slot, path.into())
        }
    })
}

/// Marks the loops the evaluator can run on a JSON list's objects without
/// binding each element (`Loop::fused_body`): `all`, `exists`,
/// `exists_one` and `filter` whose body is `&&`, `||` and `!` of fused
/// comparisons of the element's own fields (`p.port > 0 && p.port <
/// 65536`).
pub(crate) fn mark_fused_bodies(ir: &mut Ir) {
    if let Ir::Loop(l) = ir {
        l.fused_body = matches!(
            l.kind,
            LoopKind::All | LoopKind::Exists | LoopKind::ExistsOne | LoopKind::Filter
        ) && l.var2.is_none()
            && l.filter.is_none()
            && l.scan.is_none()
            && of_fused(&l.body, l.var);
        if l.fused_body {
            number_reads(&mut l.body, &mut Vec::new());
        }
    }
    ir.each_child_mut(&mut mark_fused_bodies);
}

/// What a fused test reads: the variable, the first field and its
/// position, the fields after it.
type ReadKey<'a> = (usize, &'a str, Option<u32>, &'a [(Box<str>, Option<u32>)]);

/// Numbers the fused tests of a body by the field they read, so that the
/// evaluator tells a test of the field it read last by one comparison.
fn number_reads<'a>(ir: &'a mut Ir, seen: &mut Vec<ReadKey<'a>>) {
    match ir {
        Ir::And(a, b) | Ir::Or(a, b) => {
            number_reads(a, seen);
            number_reads(b, seen);
        }
        Ir::Not(a) => number_reads(a, seen),
        Ir::FieldCmp(c) => {
            let key = (c.slot, &*c.field, c.position, &*c.then);
            let at = seen.iter().position(|k| *k == key).unwrap_or_else(|| {
                seen.push(key);
                seen.len() - 1
            });
            c.read = u32::try_from(at).unwrap_or(u32::MAX);
        }
        _ => {}
    }
}

/// True when `ir` is `&&`, `||` and `!` of fused comparisons of `var`'s
/// fields.
fn of_fused(ir: &Ir, var: usize) -> bool {
    match ir {
        Ir::And(a, b) | Ir::Or(a, b) => of_fused(a, var) && of_fused(b, var),
        Ir::Not(a) => of_fused(a, var),
        Ir::FieldCmp(c) => c.slot == var,
        _ => false,
    }
}

/// The fused node of a fusable comparison, given the comparison as its
/// fallback.
fn fusable(ir: &Ir) -> Option<impl FnOnce(Ir) -> FieldCmp> {
    let (chain, test) = match ir {
        Ir::Matches(target, re) => (&**target, FieldTest::Matches(re.clone())),
        Ir::Bin(op, a, b) => match (&**a, &**b) {
            (Ir::Size(arg), Ir::Const(Const::Int(k))) if op.compares() => {
                (&**arg, FieldTest::Size(IntRange::of(*op, *k)?))
            }
            (a, b) => (a, constant_test(*op, b)?),
        },
        _ => return None,
    };
    let (slot, path) = field_chain(chain)?;
    let mut path = path.into_iter();
    let (field, position) = path.next()?;
    let then = path.collect();
    Some(move |fallback| FieldCmp {
        slot,
        field,
        position,
        then,
        test,
        read: 0,
        fallback,
    })
}

/// How a field is tested against the constant `b` with `op`.
fn constant_test(op: BinOp, b: &Ir) -> Option<FieldTest> {
    Some(match (op, b) {
        (BinOp::Eq | BinOp::Ne, Ir::Const(Const::Str(s))) => {
            FieldTest::Str(op == BinOp::Eq, s.clone())
        }
        (_, Ir::Const(Const::Int(k))) if op.compares() => FieldTest::Int(IntRange::of(op, *k)?),
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
    })
}

/// Fields selected, each with its schema position as in `Ir::Select`.
type Path = Vec<(Box<str>, Option<u32>)>;

/// The variable a chain of one or more field selections starts from (kept
/// reads looked through), and the fields it selects, in order.
pub(crate) fn field_chain(ir: &Ir) -> Option<(usize, Path)> {
    let mut path = Vec::new();
    let mut at = ir;
    let slot = loop {
        match at.chain_link()? {
            ChainLink::Field(operand, field, position) => {
                path.push((field.into(), position));
                at = operand;
            }
            ChainLink::Var(slot) if !path.is_empty() => break slot,
            ChainLink::Var(_) => return None,
        }
    };
    path.reverse();
    Some((slot, path))
}
