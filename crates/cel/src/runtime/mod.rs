//! The evaluator: a direct walk of the compiled tree over borrowed values,
//! with variables in numbered slots (no name lookups per step) and a cost
//! counter that stops runaway programs.

use std::cmp::Ordering;
use std::rc::Rc;

mod attrs;
mod charge;
pub(crate) mod counted;
mod frame;
mod fused;
mod lookup;
#[cfg(test)]
pub(crate) use lookup::{DISTINCT_ANSWERS, PAIRWISE};
#[cfg(test)]
pub(crate) use shapes::FIRST_COLUMN_STEPS;
mod loops;
mod ops;
mod scan;
mod shapes;

use frame::{exceeds, MemoCell, ScanCache};
pub(crate) use frame::{Frame, Lazy, Vars};

use attrs::{charges_attribute_step, index_key, is_constant_key_chain, opt_or, plans_as_attribute};
use fused::field_cmp;
use loops::*;
use ops::*;
use scan::*;

use crate::ir::{BinOp, Ir, Loop, LoopKind, Scan, ScanExpr};
use crate::library::lists::sort_values;
use crate::value::arith::{add, overflow, sub, uoverflow};
use crate::value::error::{ErrorKind, EvalError};
use crate::value::{compare, constant, equals, Const, List, Map, Value};

/// Lifts a cost-limit error out of a result that an operator could
/// otherwise absorb (`false && error` is `false`; `cost limit && ...` is not).
fn stop_on_cost<T>(r: Result<T, EvalError>) -> Result<Result<T, EvalError>, EvalError> {
    match r {
        Err(e) if e.kind == ErrorKind::CostLimit => Err(e),
        other => Ok(other),
    }
}

fn as_bool(v: Result<Value<'_>, EvalError>) -> Result<bool, EvalError> {
    match v? {
        Value::Bool(b) => Ok(b),
        _ => Err(EvalError::no_overload()),
    }
}

/// Evaluates `ir` in `frame`.
pub(crate) fn eval<'a>(ir: &'a Ir, f: &mut Frame<'a>) -> Result<Value<'a>, EvalError> {
    // Unit costs follow cel-go: constants are free, variables and each
    // field or index step cost 1, a presence test costs nothing extra.
    match ir {
        Ir::Const(c) => Ok(constant(c)),
        Ir::Var(slot) => read_var(*slot, f),
        Ir::Lazy(index) => lazy(*index, f),
        Ir::Select {
            operand,
            field,
            test,
            position,
        } => {
            if let Ir::Var(slot) = **operand {
                return select_var(slot, field, *test, *position, f);
            }
            let v = eval(operand, f)?;
            if select_charged(&v, field, *test) {
                f.charge(1)?;
            }
            if !*test && !plans_as_attribute(operand) {
                f.charge(1)?;
            }
            select(&v, field, *test, *position)
        }
        Ir::OptOr { target, alt, value } => opt_or(target, alt, *value, f),
        Ir::And(a, b) => logical(a, b, false, f),
        Ir::Or(a, b) => logical(a, b, true, f),
        Ir::Not(a) => {
            let v = as_bool(eval(a, f))?;
            f.charge(1)?;
            Ok(Value::Bool(!v))
        }
        Ir::Cond(c, t, e) => {
            let branch = if as_bool(eval(c, f))? { t } else { e };
            if charges_attribute_step(branch) {
                attribute_branch(branch, f)
            } else {
                eval(branch, f)
            }
        }
        Ir::Bin(op, a, b) => {
            // Arguments are evaluated before an error in either stops the
            // call, and cel-go charges the call all the same.
            let (x, y) = match (operand(a, f), operand(b, f)) {
                (Ok(x), Ok(y)) => (x, y),
                (Err(e), _) | (_, Err(e)) => {
                    if e.kind != ErrorKind::CostLimit {
                        f.charge(1)?;
                    }
                    return Err(e);
                }
            };
            bin_values(*op, x, y, b, f)
        }
        Ir::ConstList(items) => Ok(Value::List(List::Const(items))),
        Ir::Matches(target, re) => {
            let v = eval(target, f)?;
            match &v {
                Value::Str(s) => {
                    f.charge(re.cost(s))?;
                    Ok(Value::Bool(re.is_match(s)))
                }
                _ => Err(EvalError::no_overload()),
            }
        }
        Ir::Loop(l) => eval_loop(l, f),
        Ir::ElemMemo { cell, var, inner } => elem_memo(*cell, *var, inner, f),
        Ir::Memo { cell, var, inner } => memo(*cell, *var, inner, f),
        Ir::FieldCmp(c) => field_cmp(c, f),
        Ir::FieldPair(c) => fused::field_pair(c, f),
        Ir::Size(arg) => size(arg, f),
        // The rarer forms live in a function of their own, which keeps this
        // one's stack frame small: it runs for every node.
        _ => eval_other(ir, f),
    }
}

/// A binary operator on evaluated operands, charged; `b` is the right
/// operand's tree (`in` on a constant list is free).
#[inline(always)]
fn bin_values<'a>(
    op: BinOp,
    x: Value<'a>,
    y: Value<'a>,
    b: &'a Ir,
    f: &mut Frame<'a>,
) -> Result<Value<'a>, EvalError> {
    // A string in a literal list of strings (an enum check): free, as the
    // list is constant, and without building values of the constants.
    if let (BinOp::In, Value::Str(s), Ir::ConstList(items)) = (op, &x, b) {
        if items.iter().all(|c| matches!(c, Const::Str(_))) {
            let found = items
                .iter()
                .any(|c| matches!(c, Const::Str(t) if **t == **s));
            return Ok(Value::Bool(found));
        }
    }
    // Comparisons of two strings or two ints, most of what rules compare,
    // skip the generic dispatch. The operands are taken apart by value: no
    // drop of a whole value is left to run on this path.
    let (x, y) = match (op, x, y) {
        (BinOp::Eq | BinOp::Ne, Value::Str(s), Value::Str(t)) => {
            f.charge(charge::compare_cost_str(&s, &t))?;
            return Ok(Value::Bool((*s == *t) == (op == BinOp::Eq)));
        }
        (_, Value::Int(i), Value::Int(j)) => {
            let Some(r) = int_compare(op, i, j) else {
                return int_arith(op, i, j, f);
            };
            f.charge(1)?;
            return Ok(Value::Bool(r));
        }
        (_, x, y) => (x, y),
    };
    f.charge(match op {
        BinOp::Eq | BinOp::Ne => charge::compare_cost(&x, &y),
        BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
            if matches!(
                (&x, &y),
                (Value::Str(_), Value::Str(_)) | (Value::Bytes(_), Value::Bytes(_))
            ) =>
        {
            charge::compare_cost(&x, &y)
        }
        BinOp::In => match (&y, b) {
            // cel-go hashes a constant list once: the lookup is free.
            (_, list @ (Ir::List(..) | Ir::ConstList(_))) if is_constant(list) => 0,
            (Value::List(l), _) => l.len() as u64,
            _ => 1,
        },
        BinOp::Add => charge::concat_cost(&x, &y),
        _ => 1,
    })?;
    binary(op, x, y)
}

/// `&&` (`decide` false) and `||` (`decide` true). Either side deciding
/// absorbs an error of the other; a spent cost budget is never absorbed:
/// it stops the evaluation.
#[inline(always)]
fn logical<'a>(
    a: &'a Ir,
    b: &'a Ir,
    decide: bool,
    f: &mut Frame<'a>,
) -> Result<Value<'a>, EvalError> {
    let x = stop_on_cost(as_bool(eval(a, f)))?;
    if matches!(x, Ok(v) if v == decide) {
        return Ok(Value::Bool(decide));
    }
    let y = stop_on_cost(as_bool(eval(b, f)))?;
    match (x, y) {
        (_, Ok(v)) if v == decide => Ok(Value::Bool(decide)),
        (Err(e), _) | (_, Err(e)) => Err(e),
        _ => Ok(Value::Bool(!decide)),
    }
}

/// [`Ir::ElemMemo`]: out of [`eval`], whose frame stays small.
#[inline(never)]
fn elem_memo<'a>(
    cell: usize,
    var: usize,
    inner: &'a Ir,
    f: &mut Frame<'a>,
) -> Result<Value<'a>, EvalError> {
    // Only a JSON object has an identity for the whole evaluation.
    let key = match &f.vars[var] {
        Value::Map(Map::Json { obj, schema }) => (
            std::ptr::from_ref(*obj) as usize,
            std::ptr::from_ref(*schema) as usize,
        ),
        _ => return eval(inner, f),
    };
    if let Some((cost, value)) = f.elem_memos[cell].get(&key) {
        let (cost, value) = (*cost, value.copy());
        f.charge_units(cost)?;
        return Ok(value);
    }
    let before = f.cost;
    let value = eval(inner, f)?;
    let cost = f.cost - before;
    f.elem_memos[cell].insert(key, (cost, value.clone()));
    Ok(value)
}

/// [`Ir::Memo`]: like [`elem_memo`], but keyed by the variable's binding
/// and kept inline (one slot per cell, on the hot path of every read).
// Kept apart from `elem_memo`, whose signature it shares: the cache, the
// key and the inlining differ, and this one is on every read.
#[inline(always)]
fn memo<'a>(
    cell: usize,
    var: usize,
    inner: &'a Ir,
    f: &mut Frame<'a>,
) -> Result<Value<'a>, EvalError> {
    let bound = f.bound[var];
    if let Some(m) = &f.memos[cell] {
        if m.bound == bound {
            let (cost, value) = (m.cost, m.value.copy());
            f.charge_units(cost)?;
            return Ok(value);
        }
    }
    let before = f.cost;
    // An error is not kept: a later read evaluates it again.
    let value = eval(inner, f)?;
    f.memos[cell] = Some(MemoCell {
        bound,
        cost: f.cost - before,
        value: value.copy(),
    });
    Ok(value)
}

/// A conditional's branch that is an attribute (`e`, `self.a`): cel-go
/// resolves it without the branch's own observer, so its attribute step
/// is not charged. The evaluator charges the step and takes it back, with
/// the limit one higher meanwhile so that a branch ending at the limit
/// passes; a branch that charged nothing (`x.?f` on an empty optional)
/// has nothing taken back.
#[inline(never)]
fn attribute_branch<'a>(branch: &'a Ir, f: &mut Frame<'a>) -> Result<Value<'a>, EvalError> {
    let (before, limit) = (f.cost, f.limit);
    f.limit = limit.saturating_add(1);
    let result = eval(branch, f);
    f.limit = limit;
    // Within the raised limit and one step back: within the limit.
    if f.cost > before {
        f.cost -= 1;
    }
    result
}

/// The forms of [`eval`] that are not on every rule's path.
#[inline(never)]
fn eval_other<'a>(ir: &'a Ir, f: &mut Frame<'a>) -> Result<Value<'a>, EvalError> {
    match ir {
        Ir::Folded(folded) => Ok(constant(&folded.value)),
        Ir::OptSelect { operand, field } => {
            // cel-go plans `a.b.?c` as one attribute: 1 for the attribute,
            // 1 for each field read, and 1 for `?c` when the field is there.
            // A bare variable's read is the attribute's charge.
            let v = match &**operand {
                Ir::Var(slot) => f.vars[*slot].clone(),
                other => eval(other, f)?,
            };
            // On an optional the selection is charged only when it finds
            // the field (below), as a plain selection on an optional is;
            // a chain of field reads was charged as the attribute.
            let chained = !matches!(**operand, Ir::Var(_)) && is_constant_key_chain(operand);
            if !matches!(v, Value::Optional(_)) && !chained {
                f.charge(1)?;
            }
            let inner = match v {
                Value::Optional(None) => return Ok(Value::Optional(None)),
                Value::Optional(Some(inner)) => (*inner).clone(),
                other => other,
            };
            match inner {
                Value::Map(m) => {
                    let found = m.get_str(field);
                    if found.is_some() {
                        f.charge(1)?;
                    }
                    Ok(Value::Optional(found.map(Rc::new)))
                }
                _ => Ok(Value::Optional(None)),
            }
        }
        Ir::Index(a, b) => {
            let relative = !plans_as_attribute(a);
            let a = eval(a, f)?;
            let b = index_key(b, f)?;
            // The qualifier, then a relative attribute's own step: two
            // charges, as where a limit stops the count is reported.
            f.charge(1)?;
            if relative {
                f.charge(1)?;
            }
            match a {
                Value::Optional(None) => Ok(Value::Optional(None)),
                Value::Optional(Some(inner)) => {
                    Ok(Value::Optional(index(&inner, &b).ok().map(Rc::new)))
                }
                a => index(&a, &b),
            }
        }
        Ir::OptIndex(a, b) => {
            // As `?.` above: an attribute chain was charged as such.
            let chained = !matches!(**a, Ir::Var(_)) && is_constant_key_chain(a);
            let a = eval(a, f)?;
            let b = eval(b, f)?;
            if !chained {
                f.charge(1)?;
            }
            let found = matches!(
                &a,
                Value::Optional(Some(_)) | Value::List(_) | Value::Map(_)
            ) && index(&unwrap_optional(&a), &b).is_ok();
            if found {
                f.charge(1)?;
            }
            let inner = match a {
                Value::Optional(None) => return Ok(Value::Optional(None)),
                Value::Optional(Some(inner)) => (*inner).clone(),
                other => other,
            };
            match index(&inner, &b) {
                Ok(v) => Ok(Value::Optional(Some(Rc::new(v)))),
                // Only an absent key or index makes an empty optional.
                Err(e)
                    if e.message.starts_with("no such key")
                        || e.message.starts_with("index out of bounds") =>
                {
                    Ok(Value::Optional(None))
                }
                Err(e) => Err(e),
            }
        }
        Ir::List(items, optional) => {
            let mut out = Vec::with_capacity(items.len());
            for (item, opt) in items.iter().zip(optional) {
                let v = eval(item, f)?;
                if *opt {
                    match v {
                        Value::Optional(Some(v)) => out.push((*v).clone()),
                        Value::Optional(None) => {}
                        _ => return Err(EvalError::no_overload()),
                    }
                } else {
                    out.push(v);
                }
            }
            // A literal of constants is built once by cel-go: free.
            if !is_constant(ir) {
                f.charge(10)?;
            }
            Ok(Value::list(out))
        }
        Ir::Map(entries) => {
            let mut out: Vec<(Value<'a>, Value<'a>)> = Vec::with_capacity(entries.len());
            for (k, v, opt) in entries {
                let k = eval(k, f)?;
                if !matches!(
                    k,
                    Value::Str(_)
                        | Value::Int(_)
                        | Value::Uint(_)
                        | Value::Bool(_)
                        | Value::Double(_)
                ) {
                    return Err(EvalError::new(format!(
                        "unsupported key type: {}",
                        k.type_name().name()
                    )));
                }
                let v = eval(v, f)?;
                let v = if *opt {
                    match v {
                        Value::Optional(Some(v)) => (*v).clone(),
                        // An empty optional entry drops the key, even one
                        // set before it, as cel-go does.
                        Value::Optional(None) => {
                            let mut kept = Vec::with_capacity(out.len());
                            for entry in out.drain(..) {
                                if !equals(&entry.0, &k)? {
                                    kept.push(entry);
                                }
                            }
                            out = kept;
                            continue;
                        }
                        _ => return Err(EvalError::no_overload()),
                    }
                } else {
                    v
                };
                // A repeated key takes the later value, as cel-go does.
                let mut replaced = false;
                for entry in out.iter_mut() {
                    if equals(&entry.0, &k)? {
                        entry.1 = v.clone();
                        replaced = true;
                        break;
                    }
                }
                if !replaced {
                    out.push((k, v));
                }
            }
            if !is_constant(ir) {
                f.charge(30)?;
            }
            Ok(Value::Map(Map::Owned(Rc::new(out))))
        }
        Ir::Call(func, args) => {
            // Arguments on the stack: most calls take one to three.
            let mut vals = smallvec::SmallVec::<[Value<'a>; 3]>::new();
            let mut failed = None;
            for a in args {
                match eval(a, f) {
                    Ok(v) => vals.push(v),
                    Err(e) if e.kind == ErrorKind::CostLimit => return Err(e),
                    Err(e) => {
                        failed.get_or_insert(e);
                    }
                }
            }
            if let Some(e) = failed {
                f.charge(1)?;
                return Err(e);
            }
            // A call whose charge is known from its arguments and would pass
            // the limit stops before it runs: `lists.range(n)` must not
            // allocate n elements, nor `distinct()` spend n² steps, first.
            if let Some(before) = func.cost_before {
                let cost = before(&vals);
                if self::exceeds(f, cost) {
                    f.charge(cost)?;
                }
            }
            let result = func.invoke(&vals)?;
            // Conversions of constants are folded by cel-go: free.
            let folded = func.folds && args.iter().all(is_constant);
            if !folded {
                f.charge((func.cost)(&vals, &result))?;
            }
            Ok(result)
        }
        Ir::RegexCall(func, args, re) => {
            let mut vals = smallvec::SmallVec::<[Value<'a>; 3]>::new();
            for a in args {
                vals.push(eval(a, f)?);
            }
            let result = func.invoke_with_regex(&vals, re)?;
            f.charge((func.cost)(&vals, &result))?;
            Ok(result)
        }
        _ => eval(ir, f),
    }
}

/// `variables.<name>`: charged as `variables` and one selection.
#[inline(never)]
fn lazy<'a>(index: usize, f: &mut Frame<'a>) -> Result<Value<'a>, EvalError> {
    f.charge(2)?;
    match f.lazy {
        Some(source) => source.variable(index),
        None => Err(EvalError::new("no such key: variables")),
    }
}

/// A variable's value, charged 1.
#[inline(always)]
fn read_var<'a>(slot: usize, f: &mut Frame<'a>) -> Result<Value<'a>, EvalError> {
    f.charge(1)?;
    Ok(f.vars[slot].copy())
}

/// `x.f` on a variable (most selections: `self.f`, `p.name` in a loop):
/// reads the slot in place instead of cloning its value.
#[inline(always)]
fn select_var<'a>(
    slot: usize,
    field: &str,
    test: bool,
    position: Option<u32>,
    f: &mut Frame<'a>,
) -> Result<Value<'a>, EvalError> {
    let v = &f.vars[slot];
    let charged = select_charged(v, field, test);
    let result = select(v, field, test, position);
    // Two charges, not one of 2: where a spent limit stops counting is
    // part of the cost reported.
    f.charge(1)?;
    if charged {
        f.charge(1)?;
    }
    result
}

/// An operand of a binary operator: constants, selections on a variable
/// and kept field reads (most operands) without a call of [`eval`].
#[inline(always)]
fn operand<'a>(ir: &'a Ir, f: &mut Frame<'a>) -> Result<Value<'a>, EvalError> {
    match ir {
        Ir::Const(c) => Ok(constant(c)),
        Ir::Var(slot) => read_var(*slot, f),
        Ir::Select {
            operand: on,
            field,
            test,
            position,
        } => match **on {
            Ir::Var(slot) => select_var(slot, field, *test, *position, f),
            _ => eval(ir, f),
        },
        Ir::Memo { cell, var, inner } => memo(*cell, *var, inner, f),
        Ir::ElemMemo { cell, var, inner } => elem_memo(*cell, *var, inner, f),
        _ => eval(ir, f),
    }
}

/// A comparison of two ints; `None` for the other operators.
#[inline(always)]
fn int_compare(op: BinOp, i: i64, j: i64) -> Option<bool> {
    Some(match op {
        BinOp::Eq => i == j,
        BinOp::Ne => i != j,
        BinOp::Lt => i < j,
        BinOp::Le => i <= j,
        BinOp::Gt => i > j,
        BinOp::Ge => i >= j,
        _ => return None,
    })
}

/// `+ - * / %` and `in` on two ints, through the generic path (overflow
/// and division errors live there).
#[inline(never)]
fn int_arith<'a>(op: BinOp, i: i64, j: i64, f: &mut Frame<'a>) -> Result<Value<'a>, EvalError> {
    f.charge(1)?;
    binary(op, Value::Int(i), Value::Int(j))
}

/// A literal made only of constants, which cel-go builds once.
pub(crate) fn is_constant(ir: &Ir) -> bool {
    match ir {
        Ir::Const(_) | Ir::Folded(..) | Ir::ConstList(_) => true,
        // cel-go's optimizer folds these too (`duration('1m')`).
        Ir::Call(func, args) => func.folds && args.iter().all(is_constant),
        Ir::List(items, opt) => !opt.iter().any(|o| *o) && items.iter().all(is_constant),
        Ir::Map(entries) => entries
            .iter()
            .all(|(k, v, opt)| !opt && is_constant(k) && is_constant(v)),
        _ => false,
    }
}
