//! cel-go's strings extension as Kubernetes enables it (version 2):
//! `charAt`, `indexOf`, `lastIndexOf`, `lowerAscii`, `upperAscii`,
//! `replace`, `split`, `substring`, `trim`, `join`, `strings.quote`; and
//! the list forms of `indexOf`, `lastIndexOf` (Kubernetes' lists library)
//! and `reverse` (cel-go's lists extension), which share their names.

use crate::registry::{
    arg, arg_size, first, int_arg, is_int, is_list, is_string, list_arg, overload, scaled,
    shape_size, sig, str_arg, traversal, Function,
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
const STRING_TO_STRING: Function = Function {
    member: &[0],
    result: Some(TypeName::String),
    check: Some(|a| sig(a, &[is_string]).then_some(Ty::String)),
    cost: tenth_of_target,
    estimate: |s| {
        (
            (shape_size(s, 0) * 0.1).ceil(),
            Shape::sized(shape_size(s, 0)),
        )
    },
    ..Function::BASE
};

fn tenth_of_target(a: &[Value<'_>], _: &Value<'_>) -> u64 {
    scaled(arg_size(a, 0), 0.1)
}

fn fifth_of_target(a: &[Value<'_>], _: &Value<'_>) -> u64 {
    scaled(arg_size(a, 0), 0.2)
}

pub static CHAR_AT: Function = Function {
    name: "charAt",
    overloads: &[("string_char_at_int", 23)],
    member: &[1],
    result: Some(TypeName::String),
    check: Some(|a| sig(a, &[is_string, is_int]).then_some(Ty::String)),
    call: |a| {
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
    },
    // cel-go sizes no `charAt` result.
    estimate: |_| (1.0, Shape::unbounded()),
    ..Function::BASE
};

fn index_check<'s>(a: &[Ty<'s>]) -> Option<Ty<'s>> {
    match a {
        [Ty::List(e), x] if e.unifies(x) => Some(Ty::Int),
        [Ty::String | Ty::Dyn, ..]
            if sig(a, &[is_string, is_string]) || sig(a, &[is_string, is_string, is_int]) =>
        {
            Some(Ty::Int)
        }
        [Ty::Dyn, _] => Some(Ty::Int),
        _ => None,
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

fn estimate_traverse_first<'s>(s: &[Shape<'s>]) -> (f64, Shape<'s>) {
    (shape_size(s, 0), Shape::sized(1.0))
}

pub static INDEX_OF: Function = Function {
    name: "indexOf",
    overloads: &[
        ("string_index_of_string", 23),
        ("string_index_of_string_int", 23),
        ("list_a_index_of_int", 24),
    ],
    member: &[1, 2],
    result: Some(TypeName::Int),
    check: Some(index_check),
    call: |a| index_of(a, false),
    cost: traverse_first,
    estimate: estimate_traverse_first,
    ..Function::BASE
};

pub static LAST_INDEX_OF: Function = Function {
    name: "lastIndexOf",
    overloads: &[
        ("string_last_index_of_string", 23),
        ("string_last_index_of_string_int", 23),
        ("list_a_last_index_of_int", 24),
    ],
    member: &[1, 2],
    result: Some(TypeName::Int),
    check: Some(index_check),
    call: |a| index_of(a, true),
    cost: traverse_first,
    estimate: estimate_traverse_first,
    ..Function::BASE
};

pub static LOWER_ASCII: Function = Function {
    name: "lowerAscii",
    overloads: &[("string_lower_ascii", 23)],
    call: |a| Ok(Value::string(str_arg(first(a)?)?.to_ascii_lowercase())),
    ..STRING_TO_STRING
};

pub static UPPER_ASCII: Function = Function {
    name: "upperAscii",
    overloads: &[("string_upper_ascii", 23)],
    call: |a| Ok(Value::string(str_arg(first(a)?)?.to_ascii_uppercase())),
    ..STRING_TO_STRING
};

pub static TRIM: Function = Function {
    name: "trim",
    overloads: &[("string_trim", 23)],
    call: |a| Ok(Value::string(str_arg(first(a)?)?.trim())),
    estimate: |s| ((shape_size(s, 0) * 0.1).ceil(), Shape::sized(1.0)),
    ..STRING_TO_STRING
};

pub static QUOTE: Function = Function {
    name: "strings.quote",
    overloads: &[("strings_quote", 29)],
    member: &[],
    global: &[1],
    check: None,
    call: |a| Ok(Value::string(cel_quote(str_arg(first(a)?)?))),
    estimate: |s| ((shape_size(s, 0) * 0.1).ceil(), Shape::sized(1.0)),
    ..STRING_TO_STRING
};

pub static REPLACE: Function = Function {
    name: "replace",
    overloads: &[
        ("string_replace_string_string", 23),
        ("string_replace_string_string_int", 23),
    ],
    member: &[2, 3],
    result: Some(TypeName::String),
    check: Some(|a| {
        (sig(a, &[is_string, is_string, is_string])
            || sig(a, &[is_string, is_string, is_string, is_int]))
        .then_some(Ty::String)
    }),
    call: replace,
    cost: fifth_of_target,
    estimate: |s| {
        (
            (shape_size(s, 0) * 0.2).ceil(),
            Shape::sized(shape_size(s, 0)),
        )
    },
    ..Function::BASE
};

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
        return Err(EvalError {
            kind: crate::ErrorKind::CostLimit,
            message: format!(
                "operation cancelled: replace() would build a string of {result_len} bytes, over the limit of {MAX_STRING_RESULT_BYTES}"
            )
            .into(),
        });
    }
    Ok(Value::string(if n < 0 {
        s.replace(from, to)
    } else {
        s.replacen(from, to, n as usize)
    }))
}

pub static SPLIT: Function = Function {
    name: "split",
    overloads: &[("string_split_string", 23), ("string_split_string_int", 23)],
    member: &[1, 2],
    result: Some(TypeName::List),
    check: Some(|a| {
        (sig(a, &[is_string, is_string]) || sig(a, &[is_string, is_string, is_int]))
            .then(|| Ty::List(Box::new(Ty::String)))
    }),
    call: |a| {
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
    },
    cost: fifth_of_target,
    estimate: |s| {
        (
            (shape_size(s, 0) * 0.2).ceil(),
            Shape::sized(shape_size(s, 0)),
        )
    },
    ..Function::BASE
};

pub static SUBSTRING: Function = Function {
    name: "substring",
    overloads: &[
        ("string_substring_int", 23),
        ("string_substring_int_int", 23),
    ],
    member: &[1, 2],
    check: Some(|a| {
        (sig(a, &[is_string, is_int]) || sig(a, &[is_string, is_int, is_int])).then_some(Ty::String)
    }),
    call: |a| {
        let s = str_arg(first(a)?)?;
        let chars: Vec<char> = s.chars().collect();
        let start = int_arg(arg(a, 1)?)?;
        let end = match a.get(2) {
            Some(v) => int_arg(v)?,
            None => chars.len() as i64,
        };
        // cel-go checks the range order first only in the two-argument form.
        if a.len() == 3 && start > end {
            return Err(EvalError::new(format!(
                "invalid substring range. start: {start}, end: {end}"
            )));
        }
        if start < 0 || start > chars.len() as i64 {
            return Err(EvalError::new(format!("index out of range: {start}")));
        }
        if end < 0 || end > chars.len() as i64 {
            return Err(EvalError::new(format!("index out of range: {end}")));
        }
        Ok(Value::string(
            chars[start as usize..end as usize]
                .iter()
                .collect::<String>(),
        ))
    },
    ..STRING_TO_STRING
};

pub static JOIN: Function = Function {
    name: "join",
    overloads: &[("list_join", 23), ("list_join_string", 23)],
    member: &[0, 1],
    result: Some(TypeName::String),
    check: Some(|a| (sig(a, &[is_list]) || sig(a, &[is_list, is_string])).then_some(Ty::String)),
    call: |a| {
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
    },
    cost: |_, result| scaled(size(result), 0.2),
    estimate: |s| {
        (
            (shape_size(s, 0) * 0.2).ceil(),
            Shape::sized(MAX_REQUEST_BYTES),
        )
    },
    ..Function::BASE
};

/// cel-go's lists extension `reverse()`. Kubernetes' strings library
/// (version 2) has no string `reverse`: the checker refuses it.
pub static REVERSE: Function = Function {
    name: "reverse",
    overloads: &[("list_reverse", 34)],
    member: &[0],
    check: Some(|a| match a {
        [Ty::List(_)] => Some(a[0].clone()),
        [Ty::String] => None,
        _ => Some(Ty::Dyn),
    }),
    call: |a| match first(a)? {
        Value::List(l) => {
            let mut v: Vec<Value<'_>> = l.iter().collect();
            v.reverse();
            Ok(Value::list(v))
        }
        _ => Err(overload()),
    },
    cost: |_, result| match result {
        Value::List(_) => size(result) + 11,
        _ => 1,
    },
    estimate: |s| {
        (
            shape_size(s, 0) + 11.0,
            s.first().copied().unwrap_or(Shape::sized(1.0)),
        )
    },
    ..Function::BASE
};

/// cel-go strings v2 `indexOf`/`lastIndexOf` (positions in code points):
/// an empty needle answers the offset as given, a negative offset is an
/// error, an offset at or past the end finds nothing.
fn string_index_of<'a>(s: &str, args: &[Value<'a>], last: bool) -> Result<Value<'a>, EvalError> {
    let sub = str_arg(arg(args, 1)?)?;
    let chars: Vec<char> = s.chars().collect();
    let subc: Vec<char> = sub.chars().collect();
    let len = chars.len() as i64;
    let offset = match args.get(2) {
        Some(v) => Some(int_arg(v)?),
        None => None,
    };
    if subc.is_empty() {
        return Ok(Value::Int(offset.unwrap_or(if last { len } else { 0 })));
    }
    let n = subc.len();
    let at = |i: usize| i + n <= chars.len() && chars[i..i + n] == subc[..];
    let start = match offset {
        Some(o) if o < 0 => return Err(EvalError::new(format!("index out of range: {o}"))),
        Some(o) if o >= len => return Ok(Value::Int(-1)),
        Some(o) => o as usize,
        None if last => chars.len(),
        None => 0,
    };
    let found = if last {
        match chars.len().checked_sub(n) {
            Some(max) => (0..=start.min(max)).rev().find(|&i| at(i)),
            None => None,
        }
    } else {
        (start..chars.len()).find(|&i| at(i))
    };
    Ok(Value::Int(found.map_or(-1, |i| i as i64)))
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
