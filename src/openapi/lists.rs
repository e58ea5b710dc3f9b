//! The checks apiextensions runs after kube-openapi's, on the whole
//! object: embedded resources (`x-kubernetes-embedded-resource`: apiVersion
//! and kind), then `x-kubernetes-list-type` set and map uniqueness. Their
//! paths are `field.Path`'s: map keys in brackets (`spec.labels[a]`).

use std::collections::{HashMap, HashSet};

use celhook_json::Value as Json;

use super::compile::{ListType, Node};
use super::render_for;
use crate::field_error::{BadValue, ErrorType, FieldError};
use crate::kube_version::KubeVersion;

fn error(kind: ErrorType, field: String, value: String, detail: &str) -> FieldError {
    FieldError {
        kind,
        field,
        value: BadValue::Shown(value),
        detail: detail.to_owned(),
    }
}

fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

/// Walks `value` with `node`, calling `at` on every node (with its path).
fn each<'a>(
    node: &'a Node,
    path: &str,
    value: &'a Json,
    at: &mut dyn FnMut(&'a Node, &str, &'a Json),
) {
    at(node, path, value);
    match value {
        Json::Object(fields) => {
            for (name, prop) in &node.properties {
                if let Some(v) = fields.get(name) {
                    each(prop, &child(path, name), v, at);
                }
            }
            if let Some(values) = &node.additional {
                for (key, v) in fields {
                    if !node.properties.contains_key(key.as_str()) {
                        each(values, &format!("{path}[{key}]"), v, at);
                    }
                }
            }
        }
        Json::Array(_) | Json::Table(_) => {
            if let (Some(item), Some(items)) = (&node.items, value.as_array()) {
                for (i, v) in items.iter().enumerate() {
                    each(item, &format!("{path}[{i}]"), v, at);
                }
            }
        }
        _ => {}
    }
}

/// The embedded resources' apiVersion and kind (not the root's).
pub(super) fn embedded(root: &Node, object: &Json, v: KubeVersion, out: &mut Vec<FieldError>) {
    each(root, "", object, &mut |node, path, value| {
        if !node.embedded || path.is_empty() {
            return;
        }
        let Some(fields) = value.as_object() else {
            return;
        };
        for key in ["apiVersion", "kind"] {
            let field = child(path, key);
            match fields.get(key) {
                // "must not be empty" was dropped in 1.34.
                None => out.push(error(
                    ErrorType::Required,
                    field,
                    String::new(),
                    if v.bare_required_type_meta() {
                        ""
                    } else {
                        "must not be empty"
                    },
                )),
                Some(Json::String(s)) if s.is_empty() => {
                    out.push(error(ErrorType::Invalid, field, render_for(&Json::from(""), v), "must not be empty"))
                }
                Some(Json::String(s)) if key == "apiVersion" && s.matches('/').count() > 1 => out.push(error(
                    ErrorType::Invalid,
                    field,
                    render_for(&Json::from(s.as_str()), v),
                    &format!("unexpected GroupVersion string: {s}"),
                )),
                Some(Json::String(s)) if key == "kind" && !dns1035(&s.to_ascii_lowercase()) => out.push(error(
                    ErrorType::Invalid,
                    field,
                    render_for(&Json::from(s.as_str()), v),
                    "may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
                )),
                _ => {}
            }
        }
    });
}

fn dns1035(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_lowercase()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
}

/// Duplicates in `set` and `map` lists: the second occurrence of a value
/// (or of a map's key tuple) is reported. Each item's identity (its JSON
/// text, keys sorted) is looked up once: one pass, however long the list.
pub(super) fn list_types(
    root: &Node,
    object: &Json,
    version: KubeVersion,
    out: &mut Vec<FieldError>,
) {
    each(root, "", object, &mut |node, path, value| {
        let Some(items) = value.as_array() else {
            return;
        };
        match &node.list_type {
            ListType::Atomic => {}
            ListType::Set => {
                // Value -> already reported.
                let mut seen: HashMap<String, bool> = HashMap::with_capacity(items.len());
                for (i, v) in items.iter().enumerate() {
                    match seen.get_mut(&identity(v)) {
                        Some(reported) if !*reported => {
                            *reported = true;
                            out.push(duplicate(path, i, v, version));
                        }
                        Some(_) => {}
                        None => {
                            seen.insert(identity(v), false);
                        }
                    }
                }
            }
            ListType::Map(keys) => {
                if let Some((i, bad)) = items
                    .iter()
                    .enumerate()
                    .find(|(_, v)| !v.is_object() && !v.is_null())
                {
                    out.push(error(
                        ErrorType::Invalid,
                        format!("{path}[{i}]"),
                        render_for(bad, version),
                        "must be an object for an array of list-type map",
                    ));
                    return;
                }
                let mut seen: HashSet<String> = HashSet::with_capacity(items.len());
                for (i, v) in items.iter().enumerate() {
                    let key = map_key(v, keys);
                    if !seen.insert(identity(&key)) {
                        out.push(duplicate(path, i, &key, version));
                    }
                }
            }
        }
    });
}

fn duplicate(path: &str, i: usize, value: &Json, v: KubeVersion) -> FieldError {
    error(
        ErrorType::Duplicate,
        format!("{path}[{i}]"),
        render_for(value, v),
        "",
    )
}

/// A value's identity for equality: its JSON text, object keys sorted
/// (serde_json's maps are ordered by key). An integer and a float of the
/// same value differ, as Go's `==` on the decoded values.
pub(super) fn identity(v: &Json) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// The key fields of a list-map item present in it, as an object.
pub(super) fn map_key(item: &Json, keys: &[String]) -> Json {
    let mut key = celhook_json::Map::new();
    for k in keys {
        if let Some(x) = item.get(k) {
            key.insert(k.clone(), x.clone());
        }
    }
    Json::Object(key)
}
