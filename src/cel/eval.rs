//! The evaluator: a direct walk of the compiled tree over borrowed values,
//! with variables in numbered slots (no name lookups per step) and a cost
//! counter that stops runaway programs.

use std::cmp::Ordering;
use std::rc::Rc;

use super::compile::{BinOp, Const, Ir, Loop, LoopKind};
use super::cost;
use super::error::{ErrorKind, EvalError};
use super::functions::{self, sort_values};
use super::memo::{Scan, ScanExpr};
use super::value::{compare, equals, List, Map, Str, Value};
use crate::schema::ListType;

/// Variable slots: `self`, `oldSelf` and the loop variables. A plain Vec:
/// indexing a SmallVec was an out-of-line call on every variable read
/// (4% of a review's instructions), more than its allocation saves.
pub(crate) type Vars<'a> = Vec<Value<'a>>;

/// The state of one evaluation.
pub(crate) struct Frame<'a> {
    vars: Vars<'a>,
    /// How many times each variable slot was bound: a memo is good while
    /// its variable's count is the one it was filled under.
    bound: Vec<u64>,
    memos: Vec<Option<MemoCell<'a>>>,
    /// Field reads kept per JSON object (see `memo`), by the addresses of
    /// the object and its schema node.
    elem_memos: Vec<ElemMemo<'a>>,
    /// Element reads of scanned loops (see `memo::Scan`), one list each.
    scans: Vec<Option<ScanCache<'a>>>,
    /// Cost spent so far by this expression.
    pub cost: u64,
    /// Cost at which evaluation stops.
    pub limit: u64,
}

/// A kept field read (see `memo`): its value, the cost its evaluation was
/// charged, and the binding of its variable it was read under.
#[derive(Clone)]
pub(crate) struct MemoCell<'a> {
    bound: u64,
    cost: u64,
    value: Value<'a>,
}

/// The element reads of a scanned loop over one list: per slot and
/// element, the charge and value, read when first needed. Kept for the
/// evaluation when the list is the request's JSON (by the addresses of its
/// items and schema, and its length); `failed` once a run had to fall back.
pub(crate) struct ScanCache<'a> {
    list: (usize, usize, usize),
    failed: bool,
    /// Slots (of the first 64) read for every element.
    full: u64,
    reads: Vec<Option<(u64, Value<'a>)>>,
}

/// One per-element memo cell: (object, schema) addresses to the charge
/// and value of the read.
type ElemMemo<'a> =
    std::collections::HashMap<(usize, usize), (u64, Value<'a>), foldhash::fast::FixedState>;

impl<'a> Frame<'a> {
    pub(crate) fn new(vars: Vars<'a>, cells: super::memo::Cells, limit: u64) -> Self {
        Frame {
            bound: vec![0; vars.len()],
            vars,
            memos: vec![None; cells.by_binding],
            elem_memos: (0..cells.by_element)
                .map(|_| ElemMemo::with_hasher(foldhash::fast::FixedState::default()))
                .collect(),
            scans: (0..cells.by_scan).map(|_| None).collect(),
            cost: 0,
            limit,
        }
    }

    /// Binds a variable; memos of the previous value are stale from now on.
    #[inline]
    fn bind(&mut self, slot: usize, v: Value<'a>) {
        self.vars[slot] = v;
        self.bound[slot] += 1;
    }
}

/// True when charging `cost` would pass the frame's limit.
fn exceeds(f: &Frame<'_>, cost: u64) -> bool {
    f.cost.saturating_add(cost) > f.limit
}

impl Frame<'_> {
    #[inline]
    fn charge(&mut self, units: u64) -> Result<(), EvalError> {
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
    fn charge_units(&mut self, units: u64) -> Result<(), EvalError> {
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
    EvalError {
        kind: ErrorKind::CostLimit,
        message: "operation cancelled: actual cost limit exceeded".into(),
    }
}

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
            select(&v, field, *test, *position)
        }
        Ir::And(a, b) => logical(a, b, false, f),
        Ir::Or(a, b) => logical(a, b, true, f),
        Ir::Not(a) => {
            let v = as_bool(eval(a, f))?;
            f.charge(1)?;
            Ok(Value::Bool(!v))
        }
        Ir::Cond(c, t, e) => {
            if as_bool(eval(c, f))? {
                eval(t, f)
            } else {
                eval(e, f)
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
                    f.charge(cost::matches_cost(&v, cost::str_size(re.as_str()) as usize))?;
                    Ok(Value::Bool(re.is_match(s)))
                }
                _ => Err(EvalError::no_overload()),
            }
        }
        Ir::Loop(l) => eval_loop(l, f),
        Ir::ElemMemo { cell, var, inner } => elem_memo(*cell, *var, inner, f),
        Ir::Memo { cell, var, inner } => memo(*cell, *var, inner, f),
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
            f.charge(cost::compare_cost_str(&s, &t))?;
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
        BinOp::Eq | BinOp::Ne => cost::compare_cost(&x, &y),
        BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
            if matches!(
                (&x, &y),
                (Value::Str(_), Value::Str(_)) | (Value::Bytes(_), Value::Bytes(_))
            ) =>
        {
            cost::compare_cost(&x, &y)
        }
        BinOp::In => match (&y, b) {
            // cel-go hashes a constant list once: the lookup is free.
            (_, list @ (Ir::List(..) | Ir::ConstList(_))) if is_constant(list) => 0,
            (Value::List(l), _) => l.len() as u64,
            _ => 1,
        },
        BinOp::Add => cost::concat_cost(&x, &y),
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

/// [`Ir::Memo`].
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

/// The forms of [`eval`] that are not on every rule's path.
#[inline(never)]
fn eval_other<'a>(ir: &'a Ir, f: &mut Frame<'a>) -> Result<Value<'a>, EvalError> {
    match ir {
        Ir::OptSelect { operand, field } => {
            // cel-go charges the selection, and one more when the field is
            // there, but not the variable it starts from.
            let v = match &**operand {
                Ir::Var(slot) => f.vars[*slot].clone(),
                other => eval(other, f)?,
            };
            // On an optional the selection is charged only when it finds
            // the field (below), as a plain selection on an optional is.
            if !matches!(v, Value::Optional(_)) {
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
            let a = eval(a, f)?;
            let b = eval(b, f)?;
            f.charge(1)?;
            match a {
                Value::Optional(None) => Ok(Value::Optional(None)),
                Value::Optional(Some(inner)) => {
                    Ok(Value::Optional(index(&inner, &b).ok().map(Rc::new)))
                }
                a => index(&a, &b),
            }
        }
        Ir::OptIndex(a, b) => {
            let a = eval(a, f)?;
            let b = eval(b, f)?;
            f.charge(1)?;
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
            if let Some(cost) = cost::call_cost_before(*func, &vals) {
                if self::exceeds(f, cost) {
                    f.charge(cost)?;
                }
            }
            let result = functions::call(*func, &vals)?;
            // Conversions of constants are folded by cel-go: free.
            let folded = func.is_conversion_like() && args.iter().all(is_constant);
            if !folded {
                f.charge(cost::call_cost(*func, &vals, &result))?;
            }
            Ok(result)
        }
        Ir::RegexCall(func, args, re) => {
            let mut vals = smallvec::SmallVec::<[Value<'a>; 3]>::new();
            for a in args {
                vals.push(eval(a, f)?);
            }
            let result = functions::call_with_regex(*func, &vals, re)?;
            f.charge(cost::call_cost(*func, &vals, &result))?;
            Ok(result)
        }
        _ => eval(ir, f),
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
        Ir::Const(_) | Ir::ConstList(_) => true,
        Ir::List(items, opt) => !opt.iter().any(|o| *o) && items.iter().all(is_constant),
        Ir::Map(entries) => entries
            .iter()
            .all(|(k, v, opt)| !opt && is_constant(k) && is_constant(v)),
        _ => false,
    }
}

fn unwrap_optional<'a>(v: &Value<'a>) -> Value<'a> {
    match v {
        Value::Optional(Some(inner)) => (**inner).clone(),
        other => other.clone(),
    }
}

#[inline(always)]
pub(crate) fn constant(c: &Const) -> Value<'_> {
    match c {
        Const::Null => Value::Null,
        Const::Bool(b) => Value::Bool(*b),
        Const::Int(i) => Value::Int(*i),
        Const::Uint(u) => Value::Uint(*u),
        Const::Double(d) => Value::Double(*d),
        Const::Str(s) => Value::Str(Str::Borrowed(s)),
        Const::Bytes(b) => Value::Bytes(Rc::from(&**b)),
        Const::Type(t) => Value::Type(*t),
    }
}

/// Whether cel-go charges a selection of `field` on `v`: always but for a
/// presence test, and on an optional only when the field is there.
fn select_charged(v: &Value<'_>, field: &str, test: bool) -> bool {
    match v {
        Value::Optional(None) => false,
        Value::Optional(Some(inner)) => {
            matches!(&**inner, Value::Map(m) if m.get_str(field).is_some())
        }
        _ => !test,
    }
}

fn select<'a>(
    v: &Value<'a>,
    field: &str,
    test: bool,
    position: Option<u32>,
) -> Result<Value<'a>, EvalError> {
    match v {
        // Optional chaining: `opt.f` is optional, empty when `f` is missing.
        Value::Optional(None) => Ok(Value::Optional(None)),
        Value::Optional(Some(inner)) => match &**inner {
            Value::Map(m) => Ok(Value::Optional(m.get_str(field).map(Rc::new))),
            _ => Ok(Value::Optional(None)),
        },
        Value::Map(m) => {
            let got = m.get_field(field, position);
            if test {
                Ok(Value::Bool(got.is_some()))
            } else {
                got.ok_or_else(|| EvalError::no_such_key(field))
            }
        }
        // Fields of a list are string indexes to cel-go.
        Value::List(_) => Err(EvalError::new("unsupported index type 'string' in list")),
        // A presence test on another non-map is false; a selection fails as
        // a key lookup, which is how cel-go words it.
        _ if test => Ok(Value::Bool(false)),
        _ => Err(EvalError::no_such_key(field)),
    }
}

fn index<'a>(a: &Value<'a>, b: &Value<'_>) -> Result<Value<'a>, EvalError> {
    match a {
        Value::List(l) => {
            let i = match b {
                Value::Int(i) => *i,
                Value::Uint(u) => i64::try_from(*u).unwrap_or(i64::MAX),
                Value::Double(d) if d.fract() == 0.0 => *d as i64,
                Value::Double(d) => {
                    return Err(EvalError::new(format!(
                        "unsupported index value {} in list",
                        super::functions::format_double(*d)
                    )))
                }
                other => {
                    return Err(EvalError::new(format!(
                        "unsupported index type '{}' in list",
                        other.type_name().name()
                    )))
                }
            };
            if i < 0 {
                return Err(EvalError::new(format!("index out of bounds: {i}")));
            }
            l.get(i as usize)
                .ok_or_else(|| EvalError::new(format!("index out of bounds: {i}")))
        }
        Value::Map(m) => {
            // cel-go names the Go type of a key that can never be a map key.
            let bad = match b {
                Value::Null => Some("types.Null"),
                Value::Bytes(_) => Some("types.Bytes"),
                Value::List(_) => Some("*types.baseList"),
                Value::Map(_) => Some("*types.baseMap"),
                Value::Duration(_) => Some("types.Duration"),
                Value::Timestamp(_) => Some("types.Timestamp"),
                Value::Type(_) => Some("*types.Type"),
                Value::Optional(_) => Some("*types.Optional"),
                _ => None,
            };
            if let Some(t) = bad {
                return Err(EvalError::new(format!("invalid qualifier type: {t}")));
            }
            m.get(b).ok_or_else(|| match b {
                Value::Str(s) => EvalError::no_such_key(s),
                Value::Int(i) => EvalError::new(format!("no such key: {i}")),
                Value::Uint(u) => EvalError::new(format!("no such key: {u}")),
                Value::Double(d) => EvalError::new(format!(
                    "no such key: {}",
                    super::functions::format_double(*d)
                )),
                other => EvalError::new(format!("no such key: {other:?}")),
            })
        }
        _ => Err(EvalError::new(format!("no such key: {}", key_text(b)))),
    }
}

fn binary<'a>(op: BinOp, x: Value<'a>, y: Value<'a>) -> Result<Value<'a>, EvalError> {
    let cmp = |want: fn(Ordering) -> bool| -> Result<Value<'a>, EvalError> {
        match compare(&x, &y) {
            Some(o) => Ok(Value::Bool(want(o))),
            None if is_nan(&x) || is_nan(&y) => Err(EvalError::new("NaN values cannot be ordered")),
            None => Err(op_error(op, &x)),
        }
    };
    match op {
        BinOp::Eq => Ok(Value::Bool(equals(&x, &y)?)),
        BinOp::Ne => Ok(Value::Bool(!equals(&x, &y)?)),
        BinOp::Lt => cmp(Ordering::is_lt),
        BinOp::Le => cmp(Ordering::is_le),
        BinOp::Gt => cmp(Ordering::is_gt),
        BinOp::Ge => cmp(Ordering::is_ge),
        BinOp::In => match &y {
            Value::List(l) => {
                for v in l.iter() {
                    if equals(&v, &x)? {
                        return Ok(Value::Bool(true));
                    }
                }
                Ok(Value::Bool(false))
            }
            Value::Map(m) => Ok(Value::Bool(m.get(&x).is_some())),
            _ => Err(EvalError::no_overload_of("@in")),
        },
        BinOp::Add => {
            let e = op_error(op, &x);
            add(x, y).map_err(|err| {
                if err.kind == ErrorKind::NoSuchOverload {
                    e
                } else {
                    err
                }
            })
        }
        BinOp::Sub => {
            let e = op_error(op, &x);
            sub(x, y).map_err(|err| {
                if err.kind == ErrorKind::NoSuchOverload {
                    e
                } else {
                    err
                }
            })
        }
        BinOp::Mul => match (x, y) {
            (Value::Int(a), Value::Int(b)) => a.checked_mul(b).map(Value::Int).ok_or_else(overflow),
            (Value::Uint(a), Value::Uint(b)) => {
                a.checked_mul(b).map(Value::Uint).ok_or_else(uoverflow)
            }
            (Value::Double(a), Value::Double(b)) => Ok(Value::Double(a * b)),
            (x, _) => Err(op_error(BinOp::Mul, &x)),
        },
        BinOp::Div => match (x, y) {
            (Value::Int(_), Value::Int(0)) | (Value::Uint(_), Value::Uint(0)) => {
                Err(EvalError::new("division by zero"))
            }
            (Value::Int(a), Value::Int(b)) => a.checked_div(b).map(Value::Int).ok_or_else(overflow),
            (Value::Uint(a), Value::Uint(b)) => Ok(Value::Uint(a / b)),
            (Value::Double(a), Value::Double(b)) => Ok(Value::Double(a / b)),
            (x, _) => Err(op_error(BinOp::Div, &x)),
        },
        BinOp::Rem => match (x, y) {
            (Value::Int(_), Value::Int(0)) | (Value::Uint(_), Value::Uint(0)) => {
                Err(EvalError::new("modulus by zero"))
            }
            (Value::Int(a), Value::Int(b)) => a.checked_rem(b).map(Value::Int).ok_or_else(overflow),
            (Value::Uint(a), Value::Uint(b)) => Ok(Value::Uint(a % b)),
            (x, _) => Err(op_error(BinOp::Rem, &x)),
        },
    }
}

/// The Go type cel-go names in some runtime errors.
fn go_type_name(v: &Value<'_>) -> &'static str {
    match v {
        Value::Null => "types.Null",
        Value::Bool(_) => "types.Bool",
        Value::Int(_) => "types.Int",
        Value::Uint(_) => "types.Uint",
        Value::Double(_) => "types.Double",
        Value::Str(_) => "types.String",
        Value::Bytes(_) => "types.Bytes",
        Value::Duration(_) => "types.Duration",
        Value::Timestamp(_) => "types.Timestamp",
        Value::List(_) => "*types.baseList",
        Value::Map(_) => "*types.baseMap",
        Value::Type(_) => "*types.Type",
        Value::Optional(_) => "*types.Optional",
        Value::Lib(l) => l.go_type_name(),
    }
}

/// A key as cel-go prints it in `no such key`.
fn key_text(k: &Value<'_>) -> String {
    match k {
        Value::Str(s) => s.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Uint(u) => u.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Double(d) => super::functions::format_double(*d),
        other => format!("{other:?}"),
    }
}

/// cel-go answers a bare `no such overload` when the left operand's type
/// has the operator but not for this right operand, and names the operator
/// when the type lacks it altogether.
fn op_error(op: BinOp, left: &Value<'_>) -> EvalError {
    let has_trait = match op {
        BinOp::Add => matches!(
            left,
            Value::Int(_)
                | Value::Uint(_)
                | Value::Double(_)
                | Value::Str(_)
                | Value::Bytes(_)
                | Value::List(_)
                | Value::Duration(_)
                | Value::Timestamp(_)
        ),
        BinOp::Sub => matches!(
            left,
            Value::Int(_)
                | Value::Uint(_)
                | Value::Double(_)
                | Value::Duration(_)
                | Value::Timestamp(_)
        ),
        BinOp::Mul | BinOp::Div => {
            matches!(left, Value::Int(_) | Value::Uint(_) | Value::Double(_))
        }
        BinOp::Rem => matches!(left, Value::Int(_) | Value::Uint(_)),
        BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => left.is_orderable(),
        _ => false,
    };
    if has_trait {
        EvalError::no_overload()
    } else {
        EvalError::no_overload_of(op_name(op))
    }
}

fn op_name(op: BinOp) -> &'static str {
    match op {
        BinOp::Add => "_+_",
        BinOp::Sub => "_-_",
        BinOp::Mul => "_*_",
        BinOp::Div => "_/_",
        BinOp::Rem => "_%_",
        BinOp::Eq => "_==_",
        BinOp::Ne => "_!=_",
        BinOp::Lt => "_<_",
        BinOp::Le => "_<=_",
        BinOp::Gt => "_>_",
        BinOp::Ge => "_>=_",
        BinOp::In => "@in",
    }
}

fn is_nan(v: &Value<'_>) -> bool {
    matches!(v, Value::Double(d) if d.is_nan())
}

/// Durations are int64 nanoseconds in cel-go: anything longer overflows.
fn duration<'a>(d: Option<chrono::TimeDelta>) -> Result<Value<'a>, EvalError> {
    d.filter(|d| d.num_nanoseconds().is_some())
        .map(Value::Duration)
        .ok_or_else(overflow)
}

fn timestamp<'a>(t: Option<chrono::DateTime<chrono::FixedOffset>>) -> Result<Value<'a>, EvalError> {
    t.filter(super::value::in_range)
        .map(Value::Timestamp)
        .ok_or_else(|| EvalError::new("timestamp overflow"))
}

fn overflow() -> EvalError {
    EvalError::new("integer overflow")
}

fn uoverflow() -> EvalError {
    EvalError::new("unsigned integer overflow")
}

/// `+` for every type that has it; lists typed `set` union and lists typed
/// `map` merge by key, as the schema's list type says.
pub(crate) fn add<'a>(x: Value<'a>, y: Value<'a>) -> Result<Value<'a>, EvalError> {
    match (x, y) {
        (Value::Int(a), Value::Int(b)) => a.checked_add(b).map(Value::Int).ok_or_else(overflow),
        (Value::Uint(a), Value::Uint(b)) => a.checked_add(b).map(Value::Uint).ok_or_else(uoverflow),
        (Value::Double(a), Value::Double(b)) => Ok(Value::Double(a + b)),
        (Value::Str(a), Value::Str(b)) => {
            let mut s = String::with_capacity(a.len() + b.len());
            s.push_str(&a);
            s.push_str(&b);
            Ok(Value::string(s))
        }
        (Value::Bytes(a), Value::Bytes(b)) => {
            let mut v = a.to_vec();
            v.extend_from_slice(&b);
            Ok(Value::Bytes(v.into()))
        }
        (Value::List(a), Value::List(b)) => concat(&a, &b),
        (Value::Duration(a), Value::Duration(b)) => duration(a.checked_add(&b)),
        (Value::Timestamp(a), Value::Duration(b)) | (Value::Duration(b), Value::Timestamp(a)) => {
            timestamp(a.checked_add_signed(b))
        }
        _ => Err(EvalError::no_overload_of("_+_")),
    }
}

fn sub<'a>(x: Value<'a>, y: Value<'a>) -> Result<Value<'a>, EvalError> {
    match (x, y) {
        (Value::Int(a), Value::Int(b)) => a.checked_sub(b).map(Value::Int).ok_or_else(overflow),
        (Value::Uint(a), Value::Uint(b)) => a.checked_sub(b).map(Value::Uint).ok_or_else(uoverflow),
        (Value::Double(a), Value::Double(b)) => Ok(Value::Double(a - b)),
        (Value::Duration(a), Value::Duration(b)) => duration(a.checked_sub(&b)),
        (Value::Timestamp(a), Value::Timestamp(b)) => duration(Some(a - b)),
        (Value::Timestamp(a), Value::Duration(b)) => timestamp(a.checked_sub_signed(b)),
        _ => Err(EvalError::no_overload_of("_-_")),
    }
}

fn concat<'a>(a: &List<'a>, b: &List<'a>) -> Result<Value<'a>, EvalError> {
    let (lt, keys) = a.list_type();
    let mut out: Vec<Value<'a>> = a.iter().collect();
    match lt {
        ListType::Atomic => out.extend(b.iter()),
        ListType::Set => {
            for v in b.iter() {
                let mut present = false;
                for o in &out {
                    if equals(o, &v)? {
                        present = true;
                        break;
                    }
                }
                if !present {
                    out.push(v);
                }
            }
        }
        ListType::Map => {
            let key_of = |v: &Value<'a>| -> Vec<Option<Value<'a>>> {
                match v {
                    Value::Map(m) => keys.iter().map(|k| m.get_str(k)).collect(),
                    _ => Vec::new(),
                }
            };
            for v in b.iter() {
                let kv = key_of(&v);
                let mut slot = None;
                for (i, o) in out.iter().enumerate() {
                    let ko = key_of(o);
                    let same = ko.len() == kv.len()
                        && ko.iter().zip(&kv).all(|(x, y)| match (x, y) {
                            (Some(x), Some(y)) => equals(x, y).unwrap_or(false),
                            (None, None) => true,
                            _ => false,
                        });
                    if same {
                        slot = Some(i);
                        break;
                    }
                }
                match slot {
                    Some(i) => out[i] = v,
                    None => out.push(v),
                }
            }
        }
    }
    Ok(Value::list(out))
}

/// The values a loop iterates: list elements with their index, or map keys
/// with their values.
enum Range<'a> {
    List(List<'a>),
    Map(Map<'a>),
}

impl<'a> Range<'a> {
    fn of(v: Value<'a>) -> Result<Self, EvalError> {
        match v {
            Value::List(l) => Ok(Range::List(l)),
            Value::Map(m) => Ok(Range::Map(m)),
            other => Err(EvalError::new(format!(
                "got '{}', expected iterable type",
                go_type_name(&other)
            ))),
        }
    }

    /// (first variable, second variable) per step: (element, index-less)
    /// for one-variable loops over lists, (key, value) for maps.
    fn pairs(&self) -> Vec<(Value<'a>, Value<'a>)> {
        match self {
            Range::List(l) => (0..l.len())
                .filter_map(|i| l.get(i).map(|v| (Value::Int(i as i64), v)))
                .collect(),
            Range::Map(m) => m.entries(),
        }
    }
}

fn eval_loop<'a>(l: &'a Loop, f: &mut Frame<'a>) -> Result<Value<'a>, EvalError> {
    // Nested loops are where time goes: each start looks at the deadline.
    if super::interrupt::tick() {
        return Err(EvalError::new(super::interrupt::DEADLINE_MESSAGE));
    }
    match l.kind {
        LoopKind::Bind => {
            let v = eval(&l.range, f)?;
            f.bind(l.var, v);
            return eval(&l.body, f);
        }
        LoopKind::OptMap | LoopKind::OptFlatMap => {
            let v = eval(&l.range, f)?;
            let inner = match v {
                Value::Optional(None) => return Ok(Value::Optional(None)),
                Value::Optional(Some(inner)) => (*inner).clone(),
                // The macro tests hasValue() first, which is what fails.
                other => {
                    return Err(EvalError::no_overload_of(&format!(
                        "hasValue({})",
                        other.type_name().name()
                    )))
                }
            };
            f.bind(l.var, inner);
            let out = eval(&l.body, f)?;
            return if l.kind == LoopKind::OptMap {
                Ok(Value::Optional(Some(Rc::new(out))))
            } else {
                match out {
                    o @ Value::Optional(_) => Ok(o),
                    _ => Err(EvalError::no_overload()),
                }
            };
        }
        _ => {}
    }
    let range = match Range::of(eval(&l.range, f)?) {
        Ok(r) => r,
        // Two-variable loops word it differently.
        Err(_) if l.var2.is_some() => {
            let v = eval(&l.range, f)?;
            return Err(EvalError::new(format!(
                "unsupported comprehension range type: {}",
                go_type_name(&v)
            )));
        }
        Err(e) => return Err(e),
    };
    // One-variable loops over a list bind the element; over a map, the key.
    // Two-variable loops bind (index, element) or (key, value).
    let steps: Vec<(Value<'a>, Value<'a>)> = match (&range, l.var2) {
        (Range::List(list), None) => {
            // Avoid building pairs for the common case: index by position.
            return one_var_list(l, list.clone(), f);
        }
        (Range::Map(m), None) => m.keys().map(|k| (k, Value::Null)).collect(),
        (_, Some(_)) => range.pairs(),
    };
    run_steps(l, steps.into_iter(), f)
}

fn one_var_list<'a>(
    l: &'a Loop,
    list: List<'a>,
    f: &mut Frame<'a>,
) -> Result<Value<'a>, EvalError> {
    if let Some(scan) = &l.scan {
        if let Some(v) = scan_loop(l, scan, &list, f) {
            return Ok(v);
        }
    }
    // The quantifiers are most rules' loops: a plain indexed loop with no
    // step pairs, no element copy and no result list.
    if l.filter.is_none() {
        match l.kind {
            LoopKind::All | LoopKind::Exists => return quantify(l, &list, f),
            LoopKind::ExistsOne => return exists_one(l, &list, f),
            LoopKind::Filter => return filter(l, &list, f),
            LoopKind::Map => return map(l, &list, f),
            _ => {}
        }
    }
    let n = list.len();
    let iter = (0..n).filter_map(move |i| list.get(i).map(|v| (v, Value::Null)));
    run_steps(l, iter, f)
}

/// A loop marked by the memo pass as a scan (`memo::Scan`): element reads
/// are kept per element (for the evaluation, when the list is the
/// request's JSON), the other sides of comparisons once per run, and each
/// step charges what the plain loop would. `None`, with the cost put back,
/// on any error or a spent budget: the plain loop then runs and fails
/// where it would.
fn scan_loop<'a>(
    l: &'a Loop,
    scan: &'a Scan,
    list: &List<'a>,
    f: &mut Frame<'a>,
) -> Option<Value<'a>> {
    let n = list.len();
    if n == 0 {
        return None;
    }
    let key = match list {
        // The length too: the reads are laid out by it.
        List::Json { items, schema } => Some((
            items.as_ptr() as usize,
            std::ptr::from_ref(*schema) as usize,
            items.len(),
        )),
        _ => None,
    };
    let mut cache = match (key, f.scans[scan.cell].take()) {
        (Some(key), Some(cache)) if cache.list == key => cache,
        _ => ScanCache {
            list: key.unwrap_or_default(),
            failed: false,
            full: 0,
            reads: vec![None; scan.slots * n],
        },
    };
    let result = if cache.failed {
        None
    } else {
        let start = f.cost;
        let mut run = ScanRun {
            var: l.var,
            n,
            list,
            reads: &mut cache.reads,
            full: &mut cache.full,
            compares: scan.compares,
            others: Vec::new(),
        };
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

/// One run of a scanned loop.
struct ScanRun<'a, 'r> {
    var: usize,
    n: usize,
    list: &'r List<'a>,
    reads: &'r mut [Option<(u64, Value<'a>)>],
    full: &'r mut u64,
    compares: usize,
    /// The other side of each comparison, evaluated when first needed
    /// (allocated then: a one-comparison body does without).
    others: Vec<Option<(u64, Value<'a>)>>,
}

impl<'a> ScanRun<'a, '_> {
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
        let base = self.all_reads(slot, element, f)?;
        let (other_cost, x) = run_other(other, f)?;
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
            f.bind(self.var, self.list.get(i)?);
            let before = f.cost;
            let r = operand(ir, f);
            let cost = f.cost - before;
            f.cost = before;
            self.reads[at] = Some((cost, r.ok()?));
        }
        Some(at)
    }

    /// Every element's read of `slot`; where the first is kept.
    fn all_reads(&mut self, slot: usize, ir: &'a Ir, f: &mut Frame<'a>) -> Option<usize> {
        let bit = 1u64.checked_shl(slot as u32).unwrap_or(0);
        if *self.full & bit == 0 {
            for i in 0..self.n {
                self.read(slot, ir, i, f)?;
            }
            *self.full |= bit;
        }
        Some(slot * self.n)
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

/// The steps of a scanned loop, with `body` deciding element `i`; charged
/// as [`quantify`], [`exists_one`] and [`filter`] charge.
fn scan_steps<'a, T>(
    kind: LoopKind,
    elements: impl ExactSizeIterator<Item = T>,
    list: &List<'a>,
    f: &mut Frame<'a>,
    mut body: impl FnMut(T, &mut Frame<'a>) -> Option<bool>,
) -> Option<Value<'a>> {
    let n = elements.len();
    match kind {
        LoopKind::All | LoopKind::Exists => {
            let (decide, step, condition) = quantifier(kind);
            for (i, e) in elements.enumerate() {
                f.charge(step).ok()?;
                if body(e, f)? == decide {
                    f.charge(if i + 1 < n { condition } else { 0 } + 1).ok()?;
                    return Some(Value::Bool(decide));
                }
            }
            f.charge(1).ok()?;
            Some(Value::Bool(!decide))
        }
        LoopKind::ExistsOne => {
            let mut count = 0i64;
            for e in elements {
                if body(e, f)? {
                    count += 1;
                    f.charge(2).ok()?;
                }
            }
            f.charge(2).ok()?;
            Some(Value::Bool(count == 1))
        }
        LoopKind::Filter => {
            let mut out = Vec::new();
            for (i, e) in elements.enumerate() {
                if body(e, f)? {
                    out.push(list.get(i)?);
                    f.charge(13).ok()?;
                }
            }
            f.charge(1).ok()?;
            Some(Value::list(out))
        }
        _ => None,
    }
}

/// The other side of a comparison, with its charge (not charged).
fn run_other<'a>(ir: &'a Ir, f: &mut Frame<'a>) -> Option<(u64, Value<'a>)> {
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
fn compare_kept<'a>(
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
            f.charge(operands + cost::compare_cost_str(s, t)).ok()?;
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

/// What decides `all` (false) or `exists` (true), and cel-go's charges of
/// their expansion: per step, and for the loop condition checked once more
/// when the deciding element is not the last.
fn quantifier(kind: LoopKind) -> (bool, u64, u64) {
    if kind == LoopKind::All {
        (false, 3, 2)
    } else {
        (true, 4, 3)
    }
}

/// `all` or `exists` over a list, charged as [`run_steps`] charges them.
fn quantify<'a>(l: &'a Loop, list: &List<'a>, f: &mut Frame<'a>) -> Result<Value<'a>, EvalError> {
    let (decide, step, condition) = quantifier(l.kind);
    let n = list.len();
    let mut first_error: Option<EvalError> = None;
    for (i, v) in list.iter().enumerate() {
        f.bind(l.var, v);
        f.charge(step)?;
        match as_bool(eval(&l.body, f)) {
            Ok(b) if b == decide => {
                f.charge(if i + 1 < n { condition } else { 0 } + 1)?;
                return Ok(Value::Bool(decide));
            }
            Ok(_) => {}
            Err(e) if e.kind == ErrorKind::CostLimit => return Err(e),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    f.charge(1)?;
    match first_error {
        Some(e) => Err(e),
        None => Ok(Value::Bool(!decide)),
    }
}

/// `filter` over a list, charged as [`run_steps`] charges it; an element
/// is copied only when it is kept.
fn filter<'a>(l: &'a Loop, list: &List<'a>, f: &mut Frame<'a>) -> Result<Value<'a>, EvalError> {
    let mut out = Vec::new();
    for v in list.iter() {
        f.bind(l.var, v);
        if as_bool(eval(&l.body, f))? {
            out.push(f.vars[l.var].clone());
            f.charge(13)?;
        }
    }
    f.charge(1)?;
    Ok(Value::list(out))
}

/// `map` (without a filter) over a list, charged as [`run_steps`] charges it.
fn map<'a>(l: &'a Loop, list: &List<'a>, f: &mut Frame<'a>) -> Result<Value<'a>, EvalError> {
    let mut out = Vec::with_capacity(list.len());
    for v in list.iter() {
        f.bind(l.var, v);
        out.push(eval(&l.body, f)?);
        f.charge(12)?;
    }
    f.charge(1)?;
    Ok(Value::list(out))
}

/// `exists_one` over a list, charged as [`run_steps`] charges it.
fn exists_one<'a>(l: &'a Loop, list: &List<'a>, f: &mut Frame<'a>) -> Result<Value<'a>, EvalError> {
    let mut count = 0i64;
    for v in list.iter() {
        f.bind(l.var, v);
        if as_bool(eval(&l.body, f))? {
            count += 1;
            f.charge(2)?;
        }
    }
    f.charge(2)?;
    Ok(Value::Bool(count == 1))
}

fn run_steps<'a>(
    l: &'a Loop,
    steps: impl Iterator<Item = (Value<'a>, Value<'a>)>,
    f: &mut Frame<'a>,
) -> Result<Value<'a>, EvalError> {
    let mut steps = steps.peekable();
    let mut first_error: Option<EvalError> = None;
    let mut count = 0i64;
    let mut out: Vec<Value<'a>> = Vec::new();
    let mut out_map: Vec<(Value<'a>, Value<'a>)> = Vec::new();
    let mut keyed: Vec<(Value<'a>, Value<'a>)> = Vec::new();
    // Charges mirror cel-go's expansion of each macro: the loop condition
    // and step (accumulator reads, `[x]` literals, `+`) per element, and
    // the result read at the end.
    while let Some((a, b)) = steps.next() {
        let elem = a.clone();
        f.bind(l.var, a);
        if let Some(v2) = l.var2 {
            f.bind(v2, b);
        }
        // A false filter picks the bare accumulator, whose read cel-go
        // does not charge.
        if let Some(filter) = &l.filter {
            if !as_bool(eval(filter, f))? {
                continue;
            }
        }
        match l.kind {
            // `all` stops at the first false, `exists` at the first true;
            // other errors wait in case a later element decides.
            LoopKind::All | LoopKind::Exists => {
                let (decide, step, condition) = quantifier(l.kind);
                f.charge(step)?;
                match as_bool(eval(&l.body, f)) {
                    Ok(b) if b == decide => {
                        // cel-go checks the loop condition once more, and
                        // only if elements remain, before it stops.
                        f.charge(if steps.peek().is_some() { condition } else { 0 } + 1)?;
                        return Ok(Value::Bool(decide));
                    }
                    Ok(_) => {}
                    Err(e) if e.kind == ErrorKind::CostLimit => return Err(e),
                    Err(e) => {
                        first_error.get_or_insert(e);
                    }
                }
            }
            LoopKind::ExistsOne => {
                if as_bool(eval(&l.body, f))? {
                    count += 1;
                    f.charge(2)?;
                }
            }
            LoopKind::Map | LoopKind::TransformList => {
                out.push(eval(&l.body, f)?);
                f.charge(12)?;
            }
            LoopKind::Filter => {
                if as_bool(eval(&l.body, f))? {
                    out.push(elem);
                    f.charge(13)?;
                }
            }
            LoopKind::TransformMap => {
                let v = eval(&l.body, f)?;
                let k = f.vars[l.var].clone();
                out_map.push((k, v));
                f.charge(32)?;
            }
            LoopKind::TransformMapEntry => match eval(&l.body, f)? {
                Value::Map(m) => {
                    for (k, v) in m.entries() {
                        for (existing, _) in &out_map {
                            if equals(existing, &k)? {
                                return Err(EvalError::new(format!(
                                    "insert failed: key {} already exists",
                                    key_text(&k)
                                )));
                            }
                        }
                        out_map.push((k, v));
                    }
                }
                _ => return Err(EvalError::no_overload()),
            },
            LoopKind::SortBy => {
                let key = eval(&l.body, f)?;
                keyed.push((key, elem));
                f.charge(12)?;
            }
            LoopKind::Bind | LoopKind::OptMap | LoopKind::OptFlatMap => {}
        }
    }
    f.charge(if l.kind == LoopKind::ExistsOne { 2 } else { 1 })?;
    match l.kind {
        LoopKind::All | LoopKind::Exists => match first_error {
            Some(e) => Err(e),
            None => Ok(Value::Bool(l.kind == LoopKind::All)),
        },
        LoopKind::ExistsOne => Ok(Value::Bool(count == 1)),
        LoopKind::TransformMap | LoopKind::TransformMapEntry => {
            Ok(Value::Map(Map::Owned(Rc::new(out_map))))
        }
        LoopKind::SortBy => {
            let mut keys: Vec<Value<'a>> = keyed.iter().map(|(k, _)| k.clone()).collect();
            sort_values(&mut keys)?;
            let mut failed = false;
            keyed.sort_by(|a, b| {
                compare(&a.0, &b.0).unwrap_or_else(|| {
                    failed = true;
                    Ordering::Equal
                })
            });
            if failed {
                return Err(EvalError::no_overload());
            }
            Ok(Value::list(keyed.into_iter().map(|(_, v)| v).collect()))
        }
        _ => Ok(Value::list(out)),
    }
}
