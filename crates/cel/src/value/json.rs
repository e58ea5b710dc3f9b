//! Values back to JSON: the result of `celhook eval` and of conversion
//! expressions.

use celhook_json::{Map as JsonMap, Number, Str as JsonStr, Value as Json};

use super::time::format_timestamp;
use super::{List, Map, Value};

/// Converts a value to JSON (for `celhook eval` output and conversion).
pub fn to_json(v: &Value<'_>) -> Json {
    match v {
        Value::Null => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(i) => Json::from(*i),
        Value::Uint(u) => Json::from(*u),
        Value::Double(d) => Number::from_f64(*d).map(Json::Number).unwrap_or(Json::Null),
        Value::Str(s) => Json::from(&**s),
        Value::Bytes(b) => {
            use base64::Engine;
            Json::from(base64::engine::general_purpose::STANDARD.encode(b))
        }
        Value::Duration(d) => Json::from(crate::value::time::format_duration(*d)),
        Value::Timestamp(t) => Json::from(format_timestamp(t)),
        Value::List(List::Json { items, .. }) => Json::Array(items.to_vec()),
        Value::List(List::Table { table, .. }) => Json::Table(Box::new((*table).clone())),
        Value::List(l) => Json::Array(l.iter().map(|v| to_json(&v)).collect()),
        Value::Map(Map::Json { obj, .. }) => Json::Object((*obj).clone()),
        Value::Map(Map::Owned(entries)) => {
            // Keys straight into the JSON's own strings (inline when short),
            // sorted once; a repeated printed key keeps its last value, as
            // inserting one by one did.
            let out = entries
                .iter()
                .map(|(k, v)| {
                    let key = match k {
                        Value::Str(s) => JsonStr::from(&**s),
                        other => JsonStr::from(format!("{other:?}")),
                    };
                    (key, to_json(v))
                })
                .collect();
            Json::Object(JsonMap::from_entries(out))
        }
        Value::Type(t) => Json::from(t.name()),
        Value::Optional(None) => Json::Null,
        Value::Optional(Some(v)) => to_json(v),
        Value::Lib(l) => Json::from(l.display()),
    }
}
