//! Cost accounting with cel-go's unit costs as Kubernetes configures them:
//! the runtime charge of calls and operators (the evaluator adds the unit
//! costs of variables, selections, literals and loop steps), and the static
//! worst-case estimate used at load to refuse rules that could exceed the
//! limits on a large object.

use super::Func;
use crate::value::{size, str_size, Value};

/// Factor by which string and bytes lengths scale traversal costs.
const TRAVERSAL: f64 = 0.1;

fn scaled(n: u64, factor: f64) -> u64 {
    (n as f64 * factor).ceil() as u64
}

/// Cost of traversing a value element by element (strings by their length).
fn traversal(v: &Value<'_>) -> u64 {
    match v {
        Value::Str(s) => (s.len() as f64 * TRAVERSAL) as u64,
        Value::Bytes(b) => (b.len() as f64 * TRAVERSAL) as u64,
        Value::List(l) => l.iter().map(|e| traversal(&e)).sum(),
        Value::Map(m) => m
            .entries()
            .iter()
            .map(|(k, v)| traversal(k) + traversal(v))
            .sum(),
        _ => 1,
    }
}

/// The runtime charge of `==`/`!=` and of ordering comparisons of strings
/// and bytes: a tenth of the shorter operand.
pub(crate) fn compare_cost(a: &Value<'_>, b: &Value<'_>) -> u64 {
    match (a, b) {
        (Value::Str(x), Value::Str(y)) => compare_cost_str(x, y),
        _ => scaled(size(a).min(size(b)), TRAVERSAL),
    }
}

/// [`compare_cost`] of two strings.
#[inline]
pub(crate) fn compare_cost_str(x: &str, y: &str) -> u64 {
    // Short strings (names, keys, enum values) need no character count: a
    // string of 1 to 10 bytes has 1 to 10 characters, which costs 1.
    let bytes = x.len().min(y.len());
    if bytes <= 10 {
        return u64::from(bytes > 0);
    }
    scaled(str_size(x).min(str_size(y)), TRAVERSAL)
}

/// The runtime charge of `+` on strings and bytes.
pub(crate) fn concat_cost(a: &Value<'_>, b: &Value<'_>) -> u64 {
    match (a, b) {
        (Value::Str(_), Value::Str(_)) | (Value::Bytes(_), Value::Bytes(_)) => {
            scaled(size(a) + size(b), TRAVERSAL)
        }
        _ => 1,
    }
}

/// The runtime charge of `matches` on a string with a pattern of
/// `pattern_len` characters.
pub(crate) fn matches_cost(s: &Value<'_>, pattern_len: usize) -> u64 {
    scaled(1 + size(s), TRAVERSAL) * scaled(pattern_len as u64, 0.25)
}

/// The charge of a call when it is known before the call runs (it depends
/// on the arguments only), for the calls whose work or result grows faster
/// than their arguments: `lists.range(n)`, `distinct()`, `sort()`, the set
/// functions. [`call_cost`] charges the same amount after the call.
pub(crate) fn call_cost_before(f: Func, args: &[Value<'_>]) -> Option<u64> {
    use Func::*;
    match (f, args) {
        (Range, [Value::Int(n)]) => Some((*n).max(0) as u64 + 11),
        (Distinct | Sort | SetsContains | SetsEquivalent | SetsIntersects, _) => {
            Some(call_cost(f, args, &Value::Null))
        }
        _ => None,
    }
}

/// The runtime charge of a library call, from its arguments (target first)
/// and its result.
pub(crate) fn call_cost(f: Func, args: &[Value<'_>], result: &Value<'_>) -> u64 {
    use Func::*;
    let arg = |i: usize| args.get(i).map_or(1, size);
    match f {
        Lib(l) => super::library::call_cost(l, args, size),
        // The Kubernetes regex library: string traversal times regex size.
        Find | FindAll => scaled(1 + arg(0), TRAVERSAL) * scaled(arg(1), 0.25),
        StartsWith | EndsWith | Quote | LowerAscii | UpperAscii | Substring | Trim => {
            scaled(arg(0), TRAVERSAL)
        }
        ToBytes | ToString if matches!(args.first(), Some(Value::Str(_) | Value::Bytes(_))) => {
            scaled(arg(0), TRAVERSAL)
        }
        Contains => scaled(arg(0), TRAVERSAL) * scaled(arg(1), TRAVERSAL),
        Matches => matches_cost(args.first().unwrap_or(&Value::Null), arg(1) as usize),
        Replace | Split => scaled(arg(0), 0.2),
        Join => scaled(size(result), 0.2),
        IndexOf | LastIndexOf | IsSorted | Sum | Min | Max => args.first().map_or(1, traversal),
        SetsContains | SetsEquivalent => 1u64.saturating_add(arg(0).saturating_mul(arg(1))),
        SetsIntersects => 1u64.saturating_add(arg(0).saturating_mul(arg(1)).saturating_mul(2)),
        Slice | Range | Reverse if matches!(result, Value::List(_)) => size(result) + 11,
        Flatten => {
            let depth = match args.get(1) {
                Some(Value::Int(d)) => (*d).max(1) as u64,
                _ => 1,
            };
            arg(0).saturating_mul(depth).saturating_add(11)
        }
        Distinct | Sort => {
            let n = arg(0);
            let f = match args.first() {
                Some(Value::List(l))
                    if matches!(l.get(0), Some(Value::Str(_) | Value::Bytes(_))) =>
                {
                    2.1
                }
                _ => 2.0,
            };
            (n as f64 * n as f64 * f) as u64 + 11
        }
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_costs_scale_with_length() {
        let s = Value::string("a".repeat(50));
        let t = Value::string("b".repeat(20));
        assert_eq!(compare_cost(&s, &s), 5);
        assert_eq!(
            call_cost(Func::Contains, &[s.clone(), t.clone()], &Value::Bool(false)),
            10
        );
        assert_eq!(matches_cost(&s, 20), 30);
        assert_eq!(compare_cost(&Value::Int(1), &Value::Int(1)), 1);
    }

    #[test]
    fn short_string_comparisons_cost_what_the_formula_gives() {
        // The shortcut for strings of up to 10 bytes must agree with
        // ceil(min(characters) * 0.1) everywhere around its edge.
        let samples = [
            "",
            "a",
            "é",
            "ab",
            "abcdefghij",
            "abcdefghijk",
            "ééééé",
            "éééééé",
            "€€€€",
        ];
        for x in samples {
            for y in samples {
                let (a, b) = (Value::string(x.to_owned()), Value::string(y.to_owned()));
                let chars = x.chars().count().min(y.chars().count());
                let want = (chars as f64 * TRAVERSAL).ceil() as u64;
                assert_eq!(compare_cost(&a, &b), want, "{x:?} vs {y:?}");
            }
        }
    }
}
