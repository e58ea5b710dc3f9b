//! cel-go's strings extension as Kubernetes enables it (version 2):
//! `charAt`, `indexOf`, `lastIndexOf`, `lowerAscii`, `upperAscii`,
//! `replace`, `split`, `substring`, `trim`, `join`, `strings.quote`; and
//! the list forms of `indexOf`, `lastIndexOf` (Kubernetes' lists library)
//! and `reverse` (cel-go's lists extension), which share their names.

use crate::library::lists::LIST_BUILDER;
use crate::registry::{
    arg, arg_size, first, int_arg, is_int, is_list, is_string, list_arg, overload, scaled,
    shape_scaled, shape_size, sig, str_arg, tenth_of_target, tenth_of_target_scalar, traversal,
    Function,
};
use crate::shape::{Shape, MAX_REQUEST_BYTES};
use crate::text::cel_quote;
use crate::types::Ty;
use crate::value::error::EvalError;
use crate::value::{equals, size, TypeName, Value};

/// The largest string a single `replace()` may build (16 MiB): several
/// times the API server's largest request, so no real rule meets it.
pub const MAX_STRING_RESULT_BYTES: u64 = 16 * 1024 * 1024;

/// A string function of one string: result `String`, a tenth of the
/// string's length to run, a result as long as the string.
const STRING_TO_STRING: Function = Function::BASE
    .member_arities(&[0])
    .returns(TypeName::String)
    .accepts(|a| sig(a, &[is_string]))
    .costs(tenth_of_target)
    .estimates(|s| (shape_scaled(s, 0, 0.1), Shape::sized(shape_size(s, 0))));

/// A function that rebuilds its target string (`replace`, `split`): a
/// fifth of the string's length to run, a result as large as the string.
const REBUILD: Function = Function::BASE
    .costs(|a, _| scaled(arg_size(a, 0), 0.2))
    .estimates(|s| (shape_scaled(s, 0, 0.2), Shape::sized(shape_size(s, 0))));

pub static CHAR_AT: Function = Function::BASE
    .named("charAt", 23, "string_char_at_int")
    .member_arities(&[1])
    .returns(TypeName::String)
    .accepts(|a| sig(a, &[is_string, is_int]))
    .calls(|a| {
        let s = str_arg(first(a)?)?;
        let i = int_arg(arg(a, 1)?)?;
        let len = s.chars().count() as i64;
        if i < 0 || i > len {
            return Err(EvalError::new(format!("index out of range: {i}")));
        }
        Ok(Value::string(
            s.chars()
                .nth(i as usize)
                .map(String::from)
                .unwrap_or_default(),
        ))
    })
    // cel-go sizes no `charAt` result.
    .estimates(|_| (1.0, Shape::unbounded()));

fn index_args(a: &[Ty<'_>]) -> bool {
    match a {
        [Ty::List(e), x] => e.unifies(x),
        [Ty::String | Ty::Dyn, ..]
            if sig(a, &[is_string, is_string]) || sig(a, &[is_string, is_string, is_int]) =>
        {
            true
        }
        [Ty::Dyn, _] => true,
        _ => false,
    }
}

fn index_of<'a>(a: &[Value<'a>], last: bool) -> Result<Value<'a>, EvalError> {
    match first(a)? {
        Value::Str(s) => string_index_of(s, a, last),
        // Lists take no start offset.
        Value::List(l) if a.len() == 2 => {
            let needle = &a[1];
            let items: Vec<Value<'a>> = l.iter().collect();
            let mut found = -1;
            for (i, v) in items.iter().enumerate() {
                if equals(v, needle)? {
                    found = i as i64;
                    if !last {
                        break;
                    }
                }
            }
            Ok(Value::Int(found))
        }
        _ => Err(overload()),
    }
}

/// Searching traverses the target.
fn traverse_first(a: &[Value<'_>], _: &Value<'_>) -> u64 {
    a.first().map_or(1, traversal)
}

/// On a list, one pass as the lists library estimates it; on a string, a
/// tenth of its size.
fn estimate_traverse_first<'s>(s: &[Shape<'s>]) -> (f64, Shape<'s>) {
    match s.first() {
        Some(t) if t.is_text() => ((t.size * 0.1).ceil(), Shape::sized(1.0)),
        _ => crate::library::lists::estimate_list_traversal(s),
    }
}

/// `indexOf` and `lastIndexOf`, of a string or a list element.
const INDEX_SEARCH: Function = Function::BASE
    .member_arities(&[1, 2])
    .returns(TypeName::Int)
    .accepts(index_args)
    .costs(traverse_first)
    .estimates(estimate_traverse_first);

pub static INDEX_OF: Function = INDEX_SEARCH
    .named(
        "indexOf",
        23,
        "string_index_of_string string_index_of_string_int list_a_index_of_int@24",
    )
    .calls(|a| index_of(a, false));

// Kept apart from `INDEX_OF`, its mirror: its own CEL function and
// overload ids, with `index_of` doing the work of both.
pub static LAST_INDEX_OF: Function = INDEX_SEARCH
    .named(
        "lastIndexOf",
        23,
        "string_last_index_of_string string_last_index_of_string_int list_a_last_index_of_int@24",
    )
    .calls(|a| index_of(a, true));

pub static LOWER_ASCII: Function = STRING_TO_STRING
    .named("lowerAscii", 23, "string_lower_ascii")
    .calls(|a| Ok(Value::string(str_arg(first(a)?)?.to_ascii_lowercase())));

pub static UPPER_ASCII: Function = STRING_TO_STRING
    .named("upperAscii", 23, "string_upper_ascii")
    .calls(|a| Ok(Value::string(str_arg(first(a)?)?.to_ascii_uppercase())));

pub static TRIM: Function = STRING_TO_STRING
    .named("trim", 23, "string_trim")
    .calls(|a| Ok(Value::string(str_arg(first(a)?)?.trim())))
    .estimates(tenth_of_target_scalar);

pub static QUOTE: Function = STRING_TO_STRING
    .named("strings.quote", 29, "strings_quote")
    .member_arities(&[])
    .global_arities(&[1])
    .unchecked()
    .calls(|a| Ok(Value::string(cel_quote(str_arg(first(a)?)?))))
    // At most every character escaped, between two quotes.
    .estimates(|s| {
        let size = shape_size(s, 0);
        ((size * 0.1).ceil(), Shape::sized(size * 2.0 + 2.0))
    });

pub static REPLACE: Function = REBUILD
    .named(
        "replace",
        23,
        "string_replace_string_string string_replace_string_string_int",
    )
    .member_arities(&[2, 3])
    .returns(TypeName::String)
    .accepts(|a| {
        sig(a, &[is_string, is_string, is_string])
            || sig(a, &[is_string, is_string, is_string, is_int])
    })
    .calls(replace);

fn replace<'a>(a: &[Value<'a>]) -> Result<Value<'a>, EvalError> {
    let s = str_arg(first(a)?)?;
    let (from, to) = (str_arg(arg(a, 1)?)?, str_arg(arg(a, 2)?)?);
    let n = match a.get(3) {
        Some(v) => int_arg(v)?,
        None => -1,
    };
    // The one string function whose result can dwarf its inputs (every
    // match times the replacement), and whose cost (cel-go's: the input's
    // length) does not grow with it: bounded here so that no rule and
    // object can make one allocation of gigabytes.
    let matches = if from.is_empty() {
        s.chars().count() as u64 + 1
    } else {
        s.matches(from).count() as u64
    };
    let matches = if n < 0 {
        matches
    } else {
        matches.min(n as u64)
    };
    let grown = (to.len() as u64).saturating_sub(from.len() as u64);
    let result_len = (s.len() as u64).saturating_add(matches.saturating_mul(grown));
    if result_len > MAX_STRING_RESULT_BYTES {
        return Err(EvalError::of(
            crate::ErrorKind::CostLimit,
            format!(
                "operation cancelled: replace() would build a string of {result_len} bytes, over the limit of {MAX_STRING_RESULT_BYTES}"
            ),
        ));
    }
    Ok(Value::string(if n < 0 {
        s.replace(from, to)
    } else {
        s.replacen(from, to, n as usize)
    }))
}

pub static SPLIT: Function = REBUILD
    .named("split", 23, "string_split_string string_split_string_int")
    .member_arities(&[1, 2])
    .returns(TypeName::List)
    .checks(|a| {
        (sig(a, &[is_string, is_string]) || sig(a, &[is_string, is_string, is_int]))
            .then(|| Ty::List(Box::new(Ty::String)))
    })
    .calls(|a| {
        let s = str_arg(first(a)?)?;
        let sep = str_arg(arg(a, 1)?)?;
        let n = match a.get(2) {
            Some(v) => int_arg(v)?,
            None => -1,
        };
        let parts: Vec<Value<'_>> = match n {
            0 => Vec::new(),
            // cel-go splits the empty string into no parts.
            _ if s.is_empty() => Vec::new(),
            n if n < 0 => split_all(s, sep).map(Value::string).collect(),
            n => splitn(s, sep, n as usize).map(Value::string).collect(),
        };
        Ok(Value::list(parts))
    });

// Alike in its first lines with `REPLACE`, regex.rs's `findAll`, lists.rs's
// `sum` and network.rs's `containsIP`: rows that open with a long list of
// overload ids. Only the builder chain is shared, and `Function` names it.
pub static SUBSTRING: Function = STRING_TO_STRING
    .named(
        "substring",
        23,
        "string_substring_int string_substring_int_int",
    )
    .member_arities(&[1, 2])
    .accepts(|a| sig(a, &[is_string, is_int]) || sig(a, &[is_string, is_int, is_int]))
    .calls(|a| {
        let s = str_arg(first(a)?)?;
        // Counted in characters: in an ASCII string, its bytes.
        let ascii = s.is_ascii();
        let chars: Vec<char> = if ascii {
            Vec::new()
        } else {
            s.chars().collect()
        };
        let len = if ascii { s.len() } else { chars.len() } as i64;
        let start = int_arg(arg(a, 1)?)?;
        let end = match a.get(2) {
            Some(v) => int_arg(v)?,
            None => len,
        };
        // cel-go checks the range order first only in the two-argument form.
        if a.len() == 3 && start > end {
            return Err(EvalError::new(format!(
                "invalid substring range. start: {start}, end: {end}"
            )));
        }
        if start < 0 || start > len {
            return Err(EvalError::new(format!("index out of range: {start}")));
        }
        if end < 0 || end > len {
            return Err(EvalError::new(format!("index out of range: {end}")));
        }
        let (start, end) = (start as usize, end as usize);
        Ok(Value::string(if ascii {
            s.get(start..end).unwrap_or_default().to_owned()
        } else {
            chars.get(start..end).unwrap_or_default().iter().collect()
        }))
    });

pub static JOIN: Function = Function::BASE
    .named("join", 23, "list_join list_join_string")
    .member_arities(&[0, 1])
    .returns(TypeName::String)
    .accepts(|a| sig(a, &[is_list]) || sig(a, &[is_list, is_string]))
    .calls(|a| {
        let l = list_arg(first(a)?)?;
        let sep = match a.get(1) {
            Some(v) => str_arg(v)?,
            None => "",
        };
        let mut out = String::new();
        for (i, v) in l.iter().enumerate() {
            if i > 0 {
                out.push_str(sep);
            }
            out.push_str(str_arg(&v)?);
        }
        Ok(Value::string(out))
    })
    .costs(|_, result| scaled(size(result), 0.2))
    // The Kubernetes estimate: the joined size (every element at its
    // largest, and a separator between each two) at a tenth per unit.
    .estimates(|s| {
        let list = s.first().copied().unwrap_or_else(Shape::unknown);
        let item = match (list.items, list.schema) {
            (Some((largest, _)), _) => largest,
            (None, Some(_)) => list.element(false).size,
            (None, None) => MAX_REQUEST_BYTES,
        };
        let mut joined = list.size * item;
        if let Some(sep) = s.get(1) {
            joined += sep.size * (list.size - 1.0).max(0.0);
        }
        ((joined * 0.1).ceil(), Shape::sized(joined))
    });

/// cel-go's lists extension `reverse()`. Kubernetes' strings library
/// (version 2) has no string `reverse`: the checker refuses it.
pub static REVERSE: Function = LIST_BUILDER
    .named("reverse", 34, "list_reverse")
    .member_arities(&[0])
    .checks(|a| match a {
        [Ty::List(_)] => Some(a[0].clone()),
        [Ty::String] => None,
        _ => Some(Ty::Dyn),
    })
    .calls(|a| match first(a)? {
        Value::List(l) => {
            let mut v: Vec<Value<'_>> = l.iter().collect();
            v.reverse();
            Ok(Value::list(v))
        }
        _ => Err(overload()),
    });

/// cel-go strings v2 `indexOf`/`lastIndexOf` (positions in code points):
/// an empty needle answers the offset as given, a negative offset is an
/// error, an offset at or past the end finds nothing.
fn string_index_of<'a>(s: &str, args: &[Value<'a>], last: bool) -> Result<Value<'a>, EvalError> {
    let sub = str_arg(arg(args, 1)?)?;
    let offset = match args.get(2) {
        Some(v) => Some(int_arg(v)?),
        None => None,
    };
    let found = if s.is_ascii() && sub.is_ascii() {
        ascii_index_of(s, sub, offset, last)
    } else {
        char_index_of(s, sub, offset, last)
    };
    Ok(Value::Int(found?))
}

/// [`string_index_of`] of ASCII strings, whose characters are their
/// bytes: the standard library's search, no copy.
fn ascii_index_of(s: &str, sub: &str, offset: Option<i64>, last: bool) -> Result<i64, EvalError> {
    index_search(s.len(), sub.is_empty(), offset, last, |start| {
        if last {
            let max = s.len().checked_sub(sub.len())?;
            s.get(..start.min(max) + sub.len())?.rfind(sub)
        } else {
            Some(s.get(start..)?.find(sub)? + start)
        }
    })
}

/// [`string_index_of`] of any strings, character by character.
fn char_index_of(s: &str, sub: &str, offset: Option<i64>, last: bool) -> Result<i64, EvalError> {
    let chars: Vec<char> = s.chars().collect();
    let subc: Vec<char> = sub.chars().collect();
    let n = subc.len();
    let at = |i: usize| i + n <= chars.len() && chars[i..i + n] == subc[..];
    index_search(chars.len(), n == 0, offset, last, |start| {
        if last {
            let max = chars.len().checked_sub(n)?;
            (0..=start.min(max)).rev().find(|&i| at(i))
        } else {
            (start..chars.len()).find(|&i| at(i))
        }
    })
}

/// `indexOf`/`lastIndexOf` of a string of `len` characters, the search
/// itself left to `found` (from the start it is given): an empty needle
/// is found at the offset or the end, an offset past the end finds
/// nothing, a negative one is an error.
fn index_search(
    len: usize,
    empty: bool,
    offset: Option<i64>,
    last: bool,
    found: impl FnOnce(usize) -> Option<usize>,
) -> Result<i64, EvalError> {
    let len_i = len as i64;
    if empty {
        return Ok(offset.unwrap_or(if last { len_i } else { 0 }));
    }
    let start = match offset {
        Some(o) if o < 0 => return Err(EvalError::new(format!("index out of range: {o}"))),
        Some(o) if o >= len_i => return Ok(-1),
        Some(o) => o as usize,
        None if last => len,
        None => 0,
    };
    Ok(found(start).map_or(-1, |i| i as i64))
}

fn split_all<'s>(s: &'s str, sep: &'s str) -> Box<dyn Iterator<Item = String> + 's> {
    if sep.is_empty() {
        Box::new(s.chars().map(String::from))
    } else {
        Box::new(s.split(sep).map(str::to_owned))
    }
}

fn splitn(s: &str, sep: &str, n: usize) -> impl Iterator<Item = String> {
    let parts: Vec<String> = if sep.is_empty() {
        let chars: Vec<char> = s.chars().collect();
        let mut v: Vec<String> = chars
            .iter()
            .take(n.saturating_sub(1))
            .map(|c| c.to_string())
            .collect();
        if chars.len() >= n {
            v.push(chars[n - 1..].iter().collect());
        }
        v
    } else {
        s.splitn(n, sep).map(str::to_owned).collect()
    };
    parts.into_iter()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every string of up to `max` characters over `alphabet`.
    fn words(alphabet: &[char], max: usize) -> Vec<String> {
        let mut all = vec![String::new()];
        let mut last = all.clone();
        for _ in 0..max {
            last = last
                .iter()
                .flat_map(|w| alphabet.iter().map(move |c| format!("{w}{c}")))
                .collect();
            all.extend(last.iter().cloned());
        }
        all
    }

    #[test]
    fn ascii_searches_find_what_the_character_search_finds() {
        let haystacks = words(&['a', 'b'], 5);
        let needles = words(&['a', 'b'], 3);
        let mut found = 0;
        for s in &haystacks {
            let offsets = std::iter::once(None).chain((-1..=s.len() as i64 + 1).map(Some));
            for offset in offsets {
                for sub in &needles {
                    for last in [false, true] {
                        let fast = ascii_index_of(s, sub, offset, last);
                        let slow = char_index_of(s, sub, offset, last);
                        assert_eq!(fast, slow, "{s:?} {sub:?} {offset:?} last: {last}");
                        found += usize::from(matches!(fast, Ok(i) if i > 0));
                    }
                }
            }
        }
        // Many find their needle past the start, not only at 0 or -1.
        assert!(found > 2_000, "{found}");
    }

    #[test]
    fn ascii_substrings_are_the_character_substrings() {
        for (s, start, end) in [
            ("hello", 1, 3),
            ("hello", 0, 5),
            ("hello", 5, 5),
            ("hé!o", 1, 3),
        ] {
            let args = [
                Value::string(s.to_owned()),
                Value::Int(start),
                Value::Int(end),
            ];
            let want: String = s
                .chars()
                .skip(start as usize)
                .take((end - start) as usize)
                .collect();
            match (SUBSTRING.call)(&args) {
                Ok(Value::Str(got)) => assert_eq!(&*got, want, "{s}"),
                other => panic!("{s}: {other:?}"),
            }
        }
        let args = [Value::string("hello".to_owned()), Value::Int(6)];
        assert!((SUBSTRING.call)(&args).is_err());
    }
}
