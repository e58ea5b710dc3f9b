//! The OpenAPI schemas of the Kubernetes built-in kinds (Pod, Deployment,
//! ...), minor versions 1.30 to 1.37, embedded in the binary, for rules on
//! built-in kinds and for the full `metadata` of CRD objects.
//!
//! `builtin-schemas.json` is written by `scripts/builtin-schemas.py` from
//! the upstream OpenAPI definitions (via the kubernetes-validate package):
//! each definition once per distinct content, with the range of minor
//! versions that have it, and `$ref`s by definition name. [`schema`] inlines
//! the references of one kind for one minor version into the shape of a
//! CRD's `openAPIV3Schema`. Nothing is cached beyond the parsed file: this
//! runs when a config loads, not per request.

use std::collections::HashMap;
use std::ops::RangeInclusive;
use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::{Map, Value};

#[cfg(test)]
mod tests;

/// The Kubernetes minor versions (1.x) the embedded schemas cover.
pub const MINORS: RangeInclusive<u32> = 30..=37;

/// The newest minor version covered.
pub const NEWEST: u32 = 37;

const DATA: &str = include_str!("builtin-schemas.json");

/// The definition of ObjectMeta.
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// Keys of a schema node that `JSONSchemaProps` has and the resolver copies
/// as they are (`properties`, `items` and `additionalProperties` are walked).
const COPIED: &[&str] = &[
    "type",
    "format",
    "enum",
    "required",
    "title",
    "default",
    "nullable",
    "pattern",
    "maximum",
    "minimum",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "multipleOf",
    "maxLength",
    "minLength",
    "maxItems",
    "minItems",
    "uniqueItems",
    "maxProperties",
    "minProperties",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
];

/// `[first_minor, last_minor, value]`: a value for a range of minor versions.
type Ranged<T> = Vec<(u32, u32, T)>;

/// The embedded file, parsed.
#[derive(Debug, Deserialize)]
struct Data {
    minors: Vec<u32>,
    /// Definition name -> its contents by minor versions.
    definitions: HashMap<String, Ranged<Value>>,
    /// `group/version/Kind` -> the name of its definition by minor versions.
    kinds: HashMap<String, Ranged<String>>,
}

/// The parsed file; `None` if it does not parse (a build with a broken
/// file: every lookup then finds nothing; the tests catch it).
fn data() -> Option<&'static Data> {
    static DATA_CELL: OnceLock<Option<Data>> = OnceLock::new();
    DATA_CELL
        .get_or_init(|| serde_json::from_str(DATA).ok())
        .as_ref()
}

/// The entry of `ranged` that covers `minor`.
fn at<T>(ranged: &Ranged<T>, minor: u32) -> Option<&T> {
    ranged
        .iter()
        .find(|(first, last, _)| (*first..=*last).contains(&minor))
        .map(|(_, _, value)| value)
}

fn kind_key(group: &str, version: &str, kind: &str) -> String {
    format!("{group}/{version}/{kind}")
}

/// A `group/version/Kind` key, split.
fn split_key(key: &str) -> Option<(&str, &str, &str)> {
    let mut parts = key.splitn(3, '/');
    Some((parts.next()?, parts.next()?, parts.next()?))
}

/// The schema of a built-in kind (`group` is `""` for the core group) in
/// Kubernetes 1.`minor`, in the shape of a CRD version's `openAPIV3Schema`
/// (it deserializes as `JSONSchemaProps`): every reference inlined, no
/// descriptions. Lists merged by a patch merge key without a list type are
/// map lists keyed by it, as server-side apply treats them; a definition
/// that contains itself (JSONSchemaProps in CustomResourceDefinition) is,
/// below its first occurrence on a path, an object of any content.
///
/// `None` for a kind that is not built in at that minor version, or a
/// minor version outside [`MINORS`].
pub fn schema(group: &str, version: &str, kind: &str, minor: u32) -> Option<Value> {
    let data = data()?;
    let name = at(data.kinds.get(&kind_key(group, version, kind))?, minor)?;
    data.resolve(name, minor)
}

/// The versions of a built-in group and kind that Kubernetes 1.`minor`
/// serves, sorted as strings; empty if the kind is not built in there.
pub fn versions_of(group: &str, kind: &str, minor: u32) -> Vec<String> {
    let Some(data) = data() else {
        return Vec::new();
    };
    let mut out: Vec<String> = data
        .kinds
        .iter()
        .filter(|(_, ranged)| at(ranged, minor).is_some())
        .filter_map(|(key, _)| split_key(key))
        .filter(|(g, _, k)| *g == group && *k == kind)
        .map(|(_, v, _)| v.to_owned())
        .collect();
    out.sort();
    out
}

/// Every built-in `(group, version, kind)` of Kubernetes 1.`minor`, sorted.
/// List kinds (`PodList`) and the request and discovery bodies of
/// apimachinery (DeleteOptions, Status, WatchEvent, ...) are not kinds here.
pub fn kinds(minor: u32) -> Vec<(String, String, String)> {
    let Some(data) = data() else {
        return Vec::new();
    };
    let mut out: Vec<(String, String, String)> = data
        .kinds
        .iter()
        .filter(|(_, ranged)| at(ranged, minor).is_some())
        .filter_map(|(key, _)| split_key(key))
        .map(|(g, v, k)| (g.to_owned(), v.to_owned(), k.to_owned()))
        .collect();
    out.sort();
    out
}

/// The schema of `metadata` (ObjectMeta) in Kubernetes 1.`minor`, inlined
/// as [`schema`] inlines a kind's.
pub fn object_meta(minor: u32) -> Option<Value> {
    data()?.resolve(OBJECT_META, minor)
}

/// What a reference to a definition already on the path, or to a missing
/// one, becomes: an object whose content is kept but not described.
fn opaque_object() -> Value {
    let mut out = Map::new();
    out.insert("type".into(), Value::from("object"));
    out.insert(
        "x-kubernetes-preserve-unknown-fields".into(),
        Value::Bool(true),
    );
    Value::Object(out)
}

impl Data {
    fn definition(&self, name: &str, minor: u32) -> Option<&Value> {
        at(self.definitions.get(name)?, minor)
    }

    /// A definition with its references inlined for `minor`.
    fn resolve(&self, name: &str, minor: u32) -> Option<Value> {
        if !self.minors.contains(&minor) || !MINORS.contains(&minor) {
            return None;
        }
        let def = self.definition(name, minor)?;
        let mut path = vec![name];
        Some(self.inline(def, minor, &mut path))
    }

    /// A schema node with its references inlined and only the keys of
    /// `JSONSchemaProps`; `path` holds the definitions being inlined above.
    fn inline<'a>(&'a self, node: &'a Value, minor: u32, path: &mut Vec<&'a str>) -> Value {
        let Value::Object(node) = node else {
            // The script writes objects only; anything else is kept as data.
            return opaque_object();
        };
        let mut out = Map::new();
        if let Some(target) = node.get("$ref") {
            let target = target.as_str().unwrap_or_default();
            match self.definition(target, minor) {
                Some(def) if !path.contains(&target) => {
                    path.push(target);
                    if let Value::Object(map) = self.inline(def, minor, path) {
                        out = map;
                    }
                    path.pop();
                }
                _ => return opaque_object(),
            }
        }
        let mut merge_key = None;
        for (key, value) in node {
            match key.as_str() {
                "properties" => {
                    let Value::Object(properties) = value else {
                        continue;
                    };
                    let inlined = properties
                        .iter()
                        .map(|(name, child)| (name.clone(), self.inline(child, minor, path)))
                        .collect();
                    out.insert(key.clone(), Value::Object(inlined));
                }
                "items" | "additionalProperties" if value.is_object() => {
                    out.insert(key.clone(), self.inline(value, minor, path));
                }
                "additionalProperties" => {
                    out.insert(key.clone(), value.clone());
                }
                "x-kubernetes-patch-merge-key" => merge_key = value.as_str(),
                key if COPIED.contains(&key) => {
                    out.insert(key.to_owned(), value.clone());
                }
                _ => {}
            }
        }
        if let Some(merge_key) = merge_key {
            as_map_list(&mut out, merge_key);
        }
        Value::Object(out)
    }
}

/// A list merged by `merge_key` (strategic merge patch) is a map list keyed
/// by it for server-side apply, unless it declares its own list type.
fn as_map_list(node: &mut Map<String, Value>, merge_key: &str) {
    if node.get("type").and_then(Value::as_str) != Some("array") {
        return;
    }
    let keys = || Value::Array(vec![Value::from(merge_key)]);
    match node.get("x-kubernetes-list-type").and_then(Value::as_str) {
        None => {
            node.insert("x-kubernetes-list-type".into(), Value::from("map"));
            node.insert("x-kubernetes-list-map-keys".into(), keys());
        }
        Some("map") if !node.contains_key("x-kubernetes-list-map-keys") => {
            node.insert("x-kubernetes-list-map-keys".into(), keys());
        }
        Some(_) => {}
    }
}

/// The resource (plural, lowercase) of a built-in kind, by the rule the
/// Kubernetes API follows for its own kinds (`Ingress` is `ingresses`,
/// `NetworkPolicy` `networkpolicies`, `Endpoints` stays `endpoints`).
/// Hand-written: the embedded schemas carry kinds, not resource names.
pub fn resource_of(kind: &str) -> String {
    let lower = kind.to_lowercase();
    if lower == "endpoints" {
        lower
    } else if lower.ends_with('s') || lower.ends_with('x') || lower.ends_with("ch") {
        format!("{lower}es")
    } else if let Some(stem) = lower.strip_suffix('y') {
        format!("{stem}ies")
    } else {
        format!("{lower}s")
    }
}
