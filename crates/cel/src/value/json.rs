//! Values back to JSON: the result of `celhook eval` and of conversion
//! expressions.

use serde_json::Value as Json;

use super::time::format_timestamp;
use super::{List, Map, Value};

/// Converts a value to JSON (for `celhook eval` output and conversion).
pub fn to_json(v: &Value<'_>) -> Json {
    match v {
        Value::Null => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(i) => Json::from(*i),
        Value::Uint(u) => Json::from(*u),
        Value::Double(d) => serde_json::Number::from_f64(*d)
            .map(Json::Number)
            .unwrap_or(Json::Null),
        Value::Str(s) => Json::String(s.to_string()),
        Value::Bytes(b) => {
            use base64::Engine;
            Json::String(base64::engine::general_purpose::STANDARD.encode(b))
        }
        Value::Duration(d) => Json::String(crate::value::time::format_duration(*d)),
        Value::Timestamp(t) => Json::String(format_timestamp(t)),
        Value::List(List::Json { items, .. }) => Json::Array(items.to_vec()),
        Value::List(l) => Json::Array(l.iter().map(|v| to_json(&v)).collect()),
        Value::Map(Map::Json { obj, .. }) => Json::Object((*obj).clone()),
        Value::Map(m) => {
            let mut out = serde_json::Map::new();
            for (k, v) in m.entries() {
                let key = match &k {
                    Value::Str(s) => s.to_string(),
                    other => format!("{other:?}"),
                };
                out.insert(key, to_json(&v));
            }
            Json::Object(out)
        }
        Value::Type(t) => Json::String(t.name().to_owned()),
        Value::Optional(None) => Json::Null,
        Value::Optional(Some(v)) => to_json(v),
        Value::Lib(l) => Json::String(l.display()),
    }
}
