//! Objects made from the fuzzer's bytes: of a schema (its types, formats,
//! required fields and maps, so that rules see data they can pass), or
//! any JSON.

use arbitrary::{Result as ArbResult, Unstructured};
use celhook_json::{Map, Value as Json};

use crate::schema::{Format, Schema, Type};

/// Strings the rules and conversions care about, for generated values.
const STRINGS: &[&str] = &[
    "",
    "a",
    "primary",
    "x-internal",
    "forbidden",
    "none",
    "TCP",
    "web",
    "10.0.0.7",
    "::1",
    "10.0.0.0/8",
    "fd00::/64",
    "https://example.com:8443/p?q=1",
    "1.4.0",
    "v1.2",
    "512Mi",
    "1e3",
    "64Gi",
    "50%",
    "90s",
    "-1h",
    "2026-01-01T00:00:00Z",
    "2026-11-22",
    "aGVsbG8=",
    "host:8080",
    ":",
    "* * * * */5",
    "pepperoni",
    "Ünïcødé",
    "%s %d",
];

const KEYS: &[&str] = &[
    "spec", "metadata", "name", "tags", "ports", "port", "labels", "replicas", "hostPort", "host",
    "image", "toppings",
];

/// A value for `schema`: of its type most of the time, sometimes any JSON
/// (a webhook must survive objects that contradict their schema).
pub(super) fn generate(u: &mut Unstructured<'_>, schema: &Schema, depth: u32) -> ArbResult<Json> {
    if depth > 8 || u.ratio(1, 24)? {
        return any_json(u, depth);
    }
    if schema.int_or_string {
        return Ok(if u.arbitrary()? {
            Json::from(small_int(u)?)
        } else {
            Json::from(string(u)?)
        });
    }
    Ok(match schema.ty {
        Type::Object => {
            let mut map = Map::new();
            for (name, field) in &schema.properties {
                if schema.required.contains(name) || u.arbitrary()? {
                    map.insert(name.clone(), generate(u, field, depth + 1)?);
                }
            }
            if let Some(values) = &schema.additional_properties {
                for _ in 0..u.int_in_range(0..=4u8)? {
                    map.insert(string(u)?, generate(u, values, depth + 1)?);
                }
            }
            if schema.preserve_unknown_fields && u.arbitrary()? {
                map.insert(string(u)?, any_json(u, depth + 1)?);
            }
            Json::Object(map)
        }
        Type::Array => {
            let items = schema.items.as_deref().cloned().unwrap_or_default();
            let n = u.int_in_range(0..=6u8)?;
            let mut list = Vec::with_capacity(usize::from(n));
            for _ in 0..n {
                list.push(generate(u, &items, depth + 1)?);
            }
            Json::Array(list)
        }
        Type::String => Json::from(match schema.format {
            Format::Date => format!(
                "{:04}-{:02}-{:02}",
                u.int_in_range(0..=9999u16)?,
                u.int_in_range(0..=13u8)?,
                u.int_in_range(0..=32u8)?
            ),
            Format::DateTime => format!(
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
                u.int_in_range(0..=9999u16)?,
                u.int_in_range(1..=12u8)?,
                u.int_in_range(1..=28u8)?,
                u.int_in_range(0..=24u8)?,
                u.int_in_range(0..=59u8)?,
                u.int_in_range(0..=60u8)?
            ),
            Format::Duration => format!("{}s", small_int(u)?),
            _ => string(u)?,
        }),
        Type::Integer => Json::from(small_int(u)?),
        Type::Number => match u.int_in_range(0..=2u8)? {
            0 => Json::from(small_int(u)?),
            _ => serde_json::Number::from_f64(u.arbitrary()?).map_or(Json::Null, Json::Number),
        },
        Type::Boolean => Json::Bool(u.arbitrary()?),
        Type::Any => any_json(u, depth)?,
    })
}

/// Any JSON value, keys and strings mostly from the known ones.
fn any_json(u: &mut Unstructured<'_>, depth: u32) -> ArbResult<Json> {
    let pick = if depth > 8 { 4 } else { 6 };
    Ok(match u.int_in_range(0..=pick)? {
        0 => Json::Null,
        1 => Json::Bool(u.arbitrary()?),
        2 => Json::from(small_int(u)?),
        3 => serde_json::Number::from_f64(u.arbitrary()?).map_or(Json::Null, Json::Number),
        4 => Json::from(string(u)?),
        5 => {
            let mut list = Vec::new();
            for _ in 0..u.int_in_range(0..=4u8)? {
                list.push(any_json(u, depth + 1)?);
            }
            Json::Array(list)
        }
        _ => {
            let mut map = Map::new();
            for _ in 0..u.int_in_range(0..=4u8)? {
                let key = if u.arbitrary()? {
                    (*u.choose(KEYS)?).to_owned()
                } else {
                    string(u)?
                };
                map.insert(key, any_json(u, depth + 1)?);
            }
            Json::Object(map)
        }
    })
}

fn string(u: &mut Unstructured<'_>) -> ArbResult<String> {
    Ok(if u.ratio(3, 4)? {
        (*u.choose(STRINGS)?).to_owned()
    } else {
        u.arbitrary()?
    })
}

fn small_int(u: &mut Unstructured<'_>) -> ArbResult<i64> {
    Ok(match u.int_in_range(0..=3u8)? {
        0 => u.int_in_range(-2..=10)?,
        1 => u.int_in_range(0..=1000)?,
        2 => *u.choose(&[i64::MIN, i64::MAX, 65535, 65536, -1, 1 << 53])?,
        _ => u.arbitrary()?,
    })
}
