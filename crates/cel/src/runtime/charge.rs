//! The runtime charges of the operators (cel-go's unit costs as Kubernetes
//! configures them): comparisons and concatenation of strings and bytes
//! pay a tenth of their length. Calls are charged by their registry rows.

use crate::registry::scaled;
use crate::value::{bytes_size, size, Value};

/// The runtime charge of `==`/`!=` and of ordering comparisons of strings
/// and bytes: a tenth of the shorter operand.
pub(super) fn compare_cost(a: &Value<'_>, b: &Value<'_>) -> u64 {
    match (a, b) {
        (Value::Str(x), Value::Str(y)) => compare_cost_str(x, y),
        _ => scaled(size(a).min(size(b)), 0.1),
    }
}

/// The longest string whose comparison with any other costs the same (1,
/// or 0 when either is empty): its characters, at most as many as its
/// bytes, cost a tenth each, rounded up.
pub(super) const SHORT_STRING_BYTES: usize = 10;

/// [`compare_cost`] of two strings.
#[inline]
pub(super) fn compare_cost_str(x: &str, y: &str) -> u64 {
    compare_cost_bytes(x.as_bytes(), y.as_bytes())
}

/// [`compare_cost_str`] of two strings' UTF-8 bytes.
#[inline]
pub(super) fn compare_cost_bytes(x: &[u8], y: &[u8]) -> u64 {
    // Short strings (names, keys, enum values) need no character count.
    let bytes = x.len().min(y.len());
    if bytes <= SHORT_STRING_BYTES {
        return u64::from(bytes > 0);
    }
    scaled(bytes_size(x).min(bytes_size(y)), 0.1)
}

/// [`compare_cost_str`] of two strings given by their lengths in bytes and
/// in characters.
#[inline]
pub(super) fn long_compare_cost(x_bytes: usize, x_chars: u64, y_bytes: usize, y_chars: u64) -> u64 {
    let bytes = x_bytes.min(y_bytes);
    if bytes <= SHORT_STRING_BYTES {
        return u64::from(bytes > 0);
    }
    scaled(x_chars.min(y_chars), 0.1)
}

/// The runtime charge of `+` on strings and bytes.
pub(super) fn concat_cost(a: &Value<'_>, b: &Value<'_>) -> u64 {
    match (a, b) {
        (Value::Str(_), Value::Str(_)) | (Value::Bytes(_), Value::Bytes(_)) => {
            scaled(size(a) + size(b), 0.1)
        }
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::library::core::{matches_cost, CONTAINS};

    #[test]
    fn string_costs_scale_with_length() {
        let s = Value::string("a".repeat(50));
        let t = Value::string("b".repeat(20));
        assert_eq!(compare_cost(&s, &s), 5);
        assert_eq!((CONTAINS.cost)(&[s.clone(), t], &Value::Bool(false)), 10);
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
                let want = (chars as f64 * 0.1).ceil() as u64;
                assert_eq!(compare_cost(&a, &b), want, "{x:?} vs {y:?}");
            }
        }
    }
}
