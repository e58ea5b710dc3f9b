//! Writing a tree as compact JSON, byte for byte as `serde_json` writes it
//! (the same escapes, numbers by the same `itoa` and `zmij`), without
//! serde's serializer: a conversion answer is mostly the objects' strings,
//! and copying their runs between escapes whole, found by the parser's
//! scan, is several times faster than serde_json's byte-by-byte escape
//! check.

use crate::{Number, Value};

/// Appends `v` to `out` as compact JSON.
pub fn write(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => number(out, n),
        Value::String(s) => string(out, s),
        Value::Array(_) | Value::Table(_) => {
            out.push(b'[');
            for (i, item) in v.as_array().into_iter().flatten().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write(out, item);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            out.push(b'{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                string(out, k);
                out.push(b':');
                write(out, v);
            }
            out.push(b'}');
        }
    }
}

/// `v` as compact JSON bytes.
pub fn to_vec(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    write(&mut out, v);
    out
}

fn number(out: &mut Vec<u8>, n: &Number) {
    if let Some(u) = n.as_u64() {
        out.extend_from_slice(itoa::Buffer::new().format(u).as_bytes());
    } else if let Some(i) = n.as_i64() {
        out.extend_from_slice(itoa::Buffer::new().format(i).as_bytes());
    } else if let Some(f) = n.as_f64() {
        // A tree's floats are finite (JSON has no others).
        out.extend_from_slice(zmij::Buffer::new().format_finite(f).as_bytes());
    }
}

/// A JSON string: runs without special bytes copied whole.
pub fn string(out: &mut Vec<u8>, s: &str) {
    let b = s.as_bytes();
    out.reserve(b.len() + 2);
    out.push(b'"');
    let mut from = 0;
    loop {
        let at = crate::scan::special(b, from);
        out.extend_from_slice(&b[from..at]);
        let Some(&c) = b.get(at) else { break };
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(c >> 4)]);
                out.push(HEX[usize::from(c & 0xf)]);
            }
        }
        from = at + 1;
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn strings_and_numbers_are_written_as_serde_json_writes_them() {
        let mut all: String = (0u8..0x80).map(char::from).collect();
        all.push_str("é😀\u{2028}/<>&");
        for v in [
            crate::json!(all),
            crate::json!([0, -1, u64::MAX, i64::MIN, 1.0, -0.0, 1e300, 0.1, 2.5e-324]),
            crate::json!({"b": [true, false, null], "a": {"": "x".repeat(100)}}),
        ] {
            assert_eq!(
                String::from_utf8(to_vec(&v)).expect("UTF-8"),
                serde_json::to_string(&v).expect("JSON")
            );
        }
    }

    proptest! {
        #[test]
        fn any_string_is_written_as_serde_json_writes_it(s in "\\PC{0,80}|[\"\\\\\u{0}-\u{1f}a]{0,80}") {
            let v = Value::from(s.as_str());
            prop_assert_eq!(to_vec(&v), serde_json::to_vec(&v).expect("JSON"));
        }
    }
}
