//! The JSON tree operations of a conversion: the object copied but for
//! what its assignments replace, an assigned value checked against the
//! type its target schema declares, a field placed at its path, and what
//! the API server would prune dropped.

use celhook_json::{Map, Value as Json};

use crate::schema::{Schema, Type};

/// [`copy_but`](super::copy_but) of a node, `paths` relative to it.
pub(super) fn copy_below(object: &Json, paths: &[&[String]]) -> Json {
    let Json::Object(map) = object else {
        return object.clone();
    };
    let mut entries = Vec::with_capacity(map.len());
    for (key, value) in map {
        let mut under = paths.iter().filter(|p| p.first().is_some_and(|k| k == key));
        let Some(first) = under.next() else {
            entries.push((key.clone(), value.clone()));
            continue;
        };
        let ends_here = |p: &&[String]| p.len() == 1;
        if ends_here(first) && under.clone().all(ends_here) {
            // Replaced or removed, whatever it holds: not copied.
            continue;
        }
        if under.clone().chain([first]).any(ends_here) {
            // Written here and below: which write meets what depends on
            // their order, so a whole copy, as before.
            entries.push((key.clone(), value.clone()));
            continue;
        }
        let deeper: Vec<&[String]> = std::iter::once(first)
            .chain(under)
            .map(|p| &p[1..])
            .collect();
        entries.push((key.clone(), copy_below(value, &deeper)));
    }
    Json::Object(Map::from_sorted_unique(entries))
}

/// Where and how an assigned value does not fit the type its target schema
/// declares (the API server would refuse the object on its next write
/// otherwise), found by [`mismatch`] through declared list items and
/// properties. The path below the assignment is built only for a mismatch:
/// the check runs on every assigned value of every object, and formatting
/// a path for each list item and key that fits took a tenth of the
/// conversion's instructions.
pub(super) struct Mismatch {
    /// `[i]` and `.key` segments, innermost first.
    below: Vec<String>,
    found: &'static str,
    declared: &'static str,
}

impl Mismatch {
    /// The message, with `at` the assignment's path.
    pub(super) fn describe(&self, at: &str) -> String {
        // Segments were pushed innermost first, on the way out.
        let below: String = self.below.iter().rev().map(String::as_str).collect();
        format!(
            "gives a {} at {at}{below}, where the target schema declares {}",
            self.found, self.declared
        )
    }
}

pub(super) fn mismatch(value: &Json, schema: &Schema) -> Option<Mismatch> {
    let fits = match (schema.ty, value) {
        (_, Json::Null) => schema.nullable || schema.ty == Type::Any,
        (Type::Any, _) => true,
        (Type::String, Json::String(_)) | (Type::Boolean, Json::Bool(_)) => true,
        (Type::Integer, Json::Number(n)) => n.is_i64() || n.is_u64(),
        (Type::Number, Json::Number(_)) => true,
        (Type::Array, Json::Array(items)) => {
            if let Some(element) = schema.items.as_deref() {
                for (i, item) in items.iter().enumerate() {
                    if let Some(mut m) = mismatch(item, element) {
                        m.below.push(format!("[{i}]"));
                        return Some(m);
                    }
                }
            }
            true
        }
        (Type::Object, Json::Object(map)) => {
            for (key, v) in map {
                let child = schema
                    .properties
                    .get(key)
                    .or(schema.additional_properties.as_deref());
                if let Some(mut m) = child.and_then(|child| mismatch(v, child)) {
                    m.below.push(format!(".{key}"));
                    return Some(m);
                }
            }
            true
        }
        _ => false,
    };
    if fits {
        return None;
    }
    let found = match value {
        Json::Null => "null",
        Json::Bool(_) => "boolean",
        Json::Number(_) => "number",
        Json::String(_) => "string",
        Json::Array(_) | Json::Table(_) => "array",
        Json::Object(_) => "object",
    };
    Some(Mismatch {
        below: Vec::new(),
        found,
        declared: schema.ty.openapi_name(),
    })
}

/// Sets (or, for `None`, removes) the field at `path`, creating objects on
/// the way.
pub(super) fn place(object: &mut Json, path: &[String], value: Option<Json>) -> Result<(), String> {
    let Some((last, parents)) = path.split_last() else {
        return Err("empty path".into());
    };
    let mut node = object;
    for (i, key) in parents.iter().enumerate() {
        let Some(map) = node.as_object_mut() else {
            return Err(format!("{} is not an object", path[..i].join(".")));
        };
        if value.is_none() && !map.contains_key(key) {
            return Ok(());
        }
        node = map
            .entry(key.clone())
            .or_insert_with(|| Json::Object(Map::new()));
        if node.is_null() {
            *node = Json::Object(Map::new());
        }
    }
    let Some(map) = node.as_object_mut() else {
        return Err(format!("{} is not an object", parents.join(".")));
    };
    match value {
        Some(v) => {
            map.insert(last.clone(), v);
        }
        None => {
            map.remove(last);
        }
    }
    Ok(())
}

/// Drops what the API server would prune: fields an object schema does not
/// declare (unless it preserves unknown fields), and `null` values of fields
/// that are not `nullable` (the API server drops those before it stores an
/// object, so a stored object never has them). `metadata` of the root and
/// of embedded resources is the API server's business and left alone.
pub fn prune(value: &mut Json, schema: &Schema, root: bool) {
    match value {
        Json::Object(map) => {
            if let Some(element) = schema.additional_properties.as_deref() {
                map.retain(|_, v| !v.is_null() || element.nullable);
                for v in map.values_mut() {
                    prune(v, element, false);
                }
                return;
            }
            let resource = root || schema.embedded_resource;
            // Only object nodes declare their fields; untyped data
            // (int-or-string, preserved unknown fields) keeps everything.
            let closed = (schema.ty == Type::Object || resource) && !schema.preserve_unknown_fields;
            map.retain(|key, v| {
                if resource && key == "metadata" {
                    return true;
                }
                match schema.properties.get(key) {
                    Some(child) if v.is_null() => child.nullable,
                    Some(child) => {
                        prune(v, child, false);
                        true
                    }
                    None => !closed,
                }
            });
        }
        Json::Array(items) => {
            if let Some(element) = schema.items.as_deref() {
                for v in items {
                    prune(v, element, false);
                }
            }
        }
        _ => {}
    }
}
