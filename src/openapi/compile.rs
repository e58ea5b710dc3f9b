//! A CRD version's `openAPIV3Schema` compiled once into the checks the API
//! server's schema validation makes (kube-openapi's validators, after
//! apiextensions has stripped the formats it does not enforce): patterns
//! compiled, enum values and bounds ready, properties in name order.

use std::collections::BTreeMap;

use celhook_json::Value as Json;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};
use regex::Regex;

use super::formats::Format;
use crate::kube_version::KubeVersion;

/// The JSON types a node accepts (an empty list accepts any).
#[derive(Debug, Clone, Default)]
pub(super) struct Types {
    pub names: Vec<&'static str>,
    /// `integer,string` for int-or-string: how the message joins them.
    pub joined: String,
}

impl Types {
    pub fn contains(&self, name: &str) -> bool {
        self.names.contains(&name)
    }
}

/// `x-kubernetes-list-type`.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum ListType {
    Atomic,
    Set,
    Map(Vec<String>),
}

/// A numeric bound: the value, and whether it is exclusive.
#[derive(Debug, Clone, Copy)]
pub(super) struct Bound {
    pub value: f64,
    pub exclusive: bool,
}

/// One node of the compiled schema.
#[derive(Debug, Clone)]
pub(super) struct Node {
    pub types: Types,
    /// The kept string format, with its name as written (the message
    /// prints it so).
    pub format: Option<(Format, String)>,
    /// From 1.36, the numeric type and format every number of the field
    /// (and every bound) must fit, as kube-openapi names them: a field of
    /// the single type integer (int64 unless `int32`), or number with
    /// `float`; `None` where any number fits.
    pub range: Option<(&'static str, &'static str)>,
    pub nullable: bool,
    pub has_default: bool,
    pub enumeration: Vec<Json>,
    /// The pattern as written, and compiled (Go's RE2, unanchored) or why
    /// not: kube-openapi reports a pattern it cannot compile on each value
    /// it checks, so such a schema still loads.
    pub pattern: Option<(String, Result<Regex, String>)>,
    pub minimum: Option<Bound>,
    pub maximum: Option<Bound>,
    pub multiple_of: Option<f64>,
    pub min_length: Option<i64>,
    pub max_length: Option<i64>,
    pub min_items: Option<i64>,
    pub max_items: Option<i64>,
    pub min_properties: Option<i64>,
    pub max_properties: Option<i64>,
    pub required: Vec<String>,
    pub properties: BTreeMap<String, Node>,
    /// `additionalProperties` as a schema (a map's values).
    pub additional: Option<Box<Node>>,
    /// `additionalProperties: false`.
    pub no_additional: bool,
    pub items: Option<Box<Node>>,
    pub list_type: ListType,
    pub embedded: bool,
    pub preserve_unknown: bool,
    pub all_of: Vec<Node>,
    pub any_of: Vec<Node>,
    pub one_of: Vec<Node>,
    pub not: Option<Box<Node>>,
}

/// Compiles a schema node and everything below it.
pub(super) fn compile(p: &JSONSchemaProps, path: &str, v: KubeVersion) -> Result<Node, String> {
    let int_or_string = p.x_kubernetes_int_or_string == Some(true);
    let types = if int_or_string {
        Types {
            names: vec!["integer", "string"],
            joined: "integer,string".into(),
        }
    } else {
        match p.type_.as_deref() {
            Some(t) if !t.is_empty() => {
                let name =
                    type_name(t).ok_or_else(|| format!("{path}.type: unknown type {t:?}"))?;
                Types {
                    names: vec![name],
                    joined: name.into(),
                }
            }
            _ => Types::default(),
        }
    };
    let single = (types.names.len() == 1).then(|| types.names[0]);
    let format = p
        .format
        .as_deref()
        .and_then(|f| Format::kept(f, single, v).map(|k| (k, f.to_owned())));
    let pattern = p
        .pattern
        .as_ref()
        .map(|pat| (pat.clone(), crate::cel::compile_go_regex(pat)));
    let bound = |value: Option<f64>, exclusive: Option<bool>| {
        value.map(|value| Bound {
            value,
            exclusive: exclusive == Some(true),
        })
    };
    let mut properties = BTreeMap::new();
    for (name, child) in p.properties.iter().flatten() {
        properties.insert(
            name.clone(),
            compile(child, &format!("{path}.properties[{name}]"), v)?,
        );
    }
    let (additional, no_additional) = match &p.additional_properties {
        Some(JSONSchemaPropsOrBool::Schema(s)) => (
            Some(Box::new(compile(
                s,
                &format!("{path}.additionalProperties"),
                v,
            )?)),
            false,
        ),
        Some(JSONSchemaPropsOrBool::Bool(false)) => (None, true),
        _ => (None, false),
    };
    let items = match &p.items {
        Some(JSONSchemaPropsOrArray::Schema(s)) => {
            Some(Box::new(compile(s, &format!("{path}.items"), v)?))
        }
        _ => None,
    };
    let list_type = match p.x_kubernetes_list_type.as_deref() {
        Some("set") => ListType::Set,
        Some("map") => ListType::Map(p.x_kubernetes_list_map_keys.clone().unwrap_or_default()),
        _ => ListType::Atomic,
    };
    let each = |list: &Option<Vec<JSONSchemaProps>>, name: &str| -> Result<Vec<Node>, String> {
        list.iter()
            .flatten()
            .enumerate()
            .map(|(i, s)| compile(s, &format!("{path}.{name}[{i}]"), v))
            .collect()
    };
    let range = if v.checks_numeric_formats() {
        let kept = format.as_ref().and_then(|(f, _)| f.range());
        match (types.names.as_slice(), kept) {
            (["integer"], Some(r)) => Some(r),
            (["integer"], None) => Some(("integer", "")),
            (["number"], Some(r @ (_, "float"))) => Some(r),
            _ => None,
        }
    } else {
        None
    };
    Ok(Node {
        types,
        format,
        range,
        nullable: p.nullable == Some(true),
        has_default: p.default.is_some(),
        enumeration: p.enum_.iter().flatten().map(|j| Json::from(&j.0)).collect(),
        pattern,
        minimum: bound(p.minimum, p.exclusive_minimum),
        maximum: bound(p.maximum, p.exclusive_maximum),
        multiple_of: p.multiple_of,
        min_length: p.min_length,
        max_length: p.max_length,
        min_items: p.min_items,
        max_items: p.max_items,
        min_properties: p.min_properties,
        max_properties: p.max_properties,
        required: p.required.clone().unwrap_or_default(),
        properties,
        additional,
        no_additional,
        items,
        list_type,
        embedded: p.x_kubernetes_embedded_resource == Some(true),
        preserve_unknown: p.x_kubernetes_preserve_unknown_fields == Some(true),
        all_of: each(&p.all_of, "allOf")?,
        any_of: each(&p.any_of, "anyOf")?,
        one_of: each(&p.one_of, "oneOf")?,
        not: match &p.not {
            Some(n) => Some(Box::new(compile(n, &format!("{path}.not"), v)?)),
            None => None,
        },
    })
}

fn type_name(t: &str) -> Option<&'static str> {
    Some(match t {
        "object" => "object",
        "array" => "array",
        "string" => "string",
        "integer" => "integer",
        "number" => "number",
        "boolean" => "boolean",
        _ => return None,
    })
}
