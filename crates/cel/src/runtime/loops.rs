//! The macros that iterate (`all`, `exists`, `exists_one`, `map`,
//! `filter`, the transforms, `sortBy`) and `cel.bind`, with cel-go's
//! per-step costs.

use super::*;

/// The values a loop iterates: list elements with their index, or map keys
/// with their values.
pub(super) enum Range<'a> {
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

pub(super) fn eval_loop<'a>(l: &'a Loop, f: &mut Frame<'a>) -> Result<Value<'a>, EvalError> {
    // Nested loops are where time goes: each start looks at the deadline.
    if crate::interrupt::tick() {
        return Err(EvalError::new(crate::interrupt::DEADLINE_MESSAGE));
    }
    match l.kind {
        LoopKind::Bind => {
            let v = eval(&l.range, f)?;
            f.bind(l.var, v);
            return eval(&l.body, f);
        }
        LoopKind::OptMap | LoopKind::OptFlatMap => {
            // cel-go expands `t.optMap(v, e)` to `t.hasValue() ?
            // optional.of(cel.bind(v, t.value(), e)) : optional.none()`
            // (`optFlatMap` without the `optional.of`): `t` runs twice when
            // it has a value, and each call is charged.
            let before = f.cost;
            let v = eval(&l.range, f)?;
            let target_cost = f.cost - before;
            f.charge(1)?;
            let inner = match v {
                Value::Optional(None) => {
                    f.charge(1)?;
                    return Ok(Value::Optional(None));
                }
                Value::Optional(Some(inner)) => (*inner).clone(),
                // The macro tests hasValue() first, which is what fails.
                other => {
                    return Err(EvalError::no_overload_of(&format!(
                        "hasValue({})",
                        other.type_name().name()
                    )))
                }
            };
            f.charge(target_cost)?;
            f.charge(1)?;
            f.bind(l.var, inner);
            let out = eval(&l.body, f)?;
            if l.kind == LoopKind::OptMap {
                f.charge(1)?;
            }
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
    // A one-variable loop over a list, most rules' loops, straight to its
    // steps (what `over` does for it, without the range's general form).
    match (eval(&l.range, f)?, l.var2) {
        (Value::List(list), None) => one_var_list(l, list, f),
        (range, _) => over(l, range, f),
    }
}

/// What `size` of the loop `l` gives: the number of elements a fused
/// `filter` keeps of a table, counted without making the filtered list
/// (`shapes::fused_count`, charged as the loop), or else the loop's value
/// as [`eval_loop`] makes it, for `size` to measure. The range is
/// evaluated once either way, after the deadline is looked at.
pub(super) fn sized<'a>(l: &'a Loop, f: &mut Frame<'a>) -> Result<Measured<'a>, EvalError> {
    let countable = l.kind == LoopKind::Filter
        && l.fused_body
        && l.var2.is_none()
        && l.filter.is_none()
        && l.scan.is_none();
    if !countable {
        return eval_loop(l, f).map(Measured::Value);
    }
    if crate::interrupt::tick() {
        return Err(EvalError::new(crate::interrupt::DEADLINE_MESSAGE));
    }
    let range = eval(&l.range, f)?;
    if let Value::List(list @ List::Table { .. }) = &range {
        if let Some(n) = shapes::fused_count(l, list, f) {
            return Ok(Measured::Count(n));
        }
    }
    over(l, range, f).map(Measured::Value)
}

/// See [`sized`].
pub(super) enum Measured<'a> {
    Count(i64),
    Value(Value<'a>),
}

/// The loop `l` over `range`, its range's value: [`eval_loop`] once the
/// range is evaluated.
fn over<'a>(l: &'a Loop, range: Value<'a>, f: &mut Frame<'a>) -> Result<Value<'a>, EvalError> {
    let range = match Range::of(range) {
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

pub(super) fn one_var_list<'a>(
    l: &'a Loop,
    list: List<'a>,
    f: &mut Frame<'a>,
) -> Result<Value<'a>, EvalError> {
    if let Some(scan) = &l.scan {
        if let Some(v) = scan_loop(l, scan, &list, f) {
            return Ok(v);
        }
    }
    let found = if l.fused_body {
        shapes::fused_loop(l, &list, f)
    } else if l.counted_body {
        lookup::counted_loop(l, &list, f)
    } else {
        None
    };
    if let Some(v) = found {
        return Ok(v);
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

/// What decides `all` (false) or `exists` (true), and cel-go's charges of
/// their expansion: per step, and for the loop condition checked once more
/// when the deciding element is not the last.
pub(super) fn quantifier(kind: LoopKind) -> (bool, u64, u64) {
    if kind == LoopKind::All {
        (false, 3, 2)
    } else {
        (true, 4, 3)
    }
}

/// `all` or `exists` over a list, charged as [`run_steps`] charges them.
pub(super) fn quantify<'a>(
    l: &'a Loop,
    list: &List<'a>,
    f: &mut Frame<'a>,
) -> Result<Value<'a>, EvalError> {
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
pub(super) fn filter<'a>(
    l: &'a Loop,
    list: &List<'a>,
    f: &mut Frame<'a>,
) -> Result<Value<'a>, EvalError> {
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
/// Its own loop, as each macro's fast path here is: one loop for `map`
/// and `filter` would test which it runs on every element.
pub(super) fn map<'a>(
    l: &'a Loop,
    list: &List<'a>,
    f: &mut Frame<'a>,
) -> Result<Value<'a>, EvalError> {
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
// Kept apart from `filter` and `map`, whose signature and closing charge it
// shares: each macro's fast path is its own loop (see `map`).
pub(super) fn exists_one<'a>(
    l: &'a Loop,
    list: &List<'a>,
    f: &mut Frame<'a>,
) -> Result<Value<'a>, EvalError> {
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

pub(super) fn run_steps<'a>(
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
            // cel-go inserts each entry with `cel.@mapInsert(__result__,
            // k, v)`: the accumulator and key reads and the call.
            LoopKind::TransformMap => {
                let v = eval(&l.body, f)?;
                let k = f.vars[l.var].clone();
                out_map.push((k, v));
                f.charge(3)?;
            }
            // `cel.@mapInsert(__result__, entry)`: the accumulator read and
            // the call.
            LoopKind::TransformMapEntry => {
                let entry = eval(&l.body, f)?;
                f.charge(2)?;
                match entry {
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
                }
            }
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
            // cel-go expands `sortBy` to a bind of the list whose result is
            // `@sortByAssociatedKeys(input, input.map(e, key))`: two reads of
            // the input, and the call, priced by lists v3 as a worst-case
            // quadratic sort of the keys.
            let n = keyed.len() as f64;
            let strings = matches!(keyed.first(), Some((Value::Str(_) | Value::Bytes(_), _)));
            let factor = if strings { 2.1 } else { 2.0 };
            f.charge(((n * n * factor) as u64).saturating_add(13))?;
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
