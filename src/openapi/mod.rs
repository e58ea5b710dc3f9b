//! A custom resource checked against its whole `openAPIV3Schema`, as the
//! API server checks it before any `x-kubernetes-validations` rule runs:
//! types and kept formats, `enum`, `pattern`, numeric bounds and
//! `multipleOf`, lengths, item and property counts, `required`,
//! `nullable`, int-or-string, allOf/anyOf/oneOf/not, embedded resources
//! and list-type uniqueness, with the API server's paths and texts (those
//! of the Kubernetes version answered as), ratcheting unchanged values on
//! UPDATE. Fields the
//! schema does not declare are reported apart: the API server prunes them
//! and warns (`unknown field "spec.x"`).
//!
//! What differs from the API server (docs/known-differences.md): objects'
//! `metadata` and the scale subresource are not checked, nor the formats
//! isbn, creditcard and ssn; sibling errors come in name order.

mod compile;
mod formats;
mod lists;
mod walk;

use celhook_json::Value as Json;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;

use crate::field_error::{BadValue, ErrorType, FieldError};
use crate::kube_version::KubeVersion;

/// A version's schema, compiled once for the Kubernetes version answered
/// as (which formats are kept, and the texts).
#[derive(Debug, Clone)]
pub struct SchemaCheck {
    root: compile::Node,
    version: KubeVersion,
}

/// What the schema found in one object.
#[derive(Debug, Default)]
pub struct Findings {
    pub errors: Vec<FieldError>,
    /// Paths of fields the schema does not declare, sorted.
    pub unknown_fields: Vec<String>,
}

impl Findings {
    /// True when an error stops the API server from running the CEL rules
    /// (a wrong type or format, an enum, required, maxLength, maxItems or
    /// maxProperties error).
    pub fn blocks_rules(&self) -> bool {
        self.errors.iter().any(|e| {
            matches!(
                e.kind,
                ErrorType::TypeInvalid
                    | ErrorType::NotSupported
                    | ErrorType::Required
                    | ErrorType::TooLong
                    | ErrorType::TooMany
            )
        })
    }

    /// The warnings the API server sends for the unknown fields.
    pub fn unknown_field_warnings(&self) -> Vec<String> {
        self.unknown_fields
            .iter()
            .map(|f| format!("unknown field {}", crate::cel::go_quote(f)))
            .collect()
    }
}

/// The error the API server adds in place of the CEL rules it did not run.
pub fn rules_not_checked(version: KubeVersion) -> FieldError {
    FieldError {
        kind: ErrorType::Invalid,
        field: String::new(),
        value: BadValue::Shown(render_for(&Json::Null, version)),
        detail: "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation".into(),
    }
}

impl SchemaCheck {
    /// Compiles `openAPIV3Schema`. An error names what cannot be compiled
    /// (a pattern Go's RE2 refuses, which the API server refuses too).
    pub fn compile(schema: &JSONSchemaProps, version: KubeVersion) -> Result<SchemaCheck, String> {
        Ok(SchemaCheck {
            root: compile::compile(schema, "openAPIV3Schema", version)?,
            version,
        })
    }

    /// Checks `object` (and, on UPDATE, ratchets against `old`).
    pub fn check(&self, object: &Json, old: Option<&Json>) -> Findings {
        let mut w = walk::Walk::new(self.version);
        w.node(&self.root, "", object, old);
        let mut errors = w.errors;
        lists::embedded(&self.root, object, self.version, &mut errors);
        // On UPDATE the list types are checked only when the old object
        // passes them, as upstream does.
        let old_lists_ok = old.is_none_or(|o| {
            let mut e = Vec::new();
            lists::list_types(&self.root, o, self.version, &mut e);
            e.is_empty()
        });
        if old_lists_ok {
            lists::list_types(&self.root, object, self.version, &mut errors);
        }
        let mut unknown_fields = w.unknown;
        unknown_fields.sort();
        Findings {
            errors,
            unknown_fields,
        }
    }
}

/// A value as the field errors of `version` show it: maps, lists and null
/// as JSON from 1.34 ([`render`]); before, as Go's `%#v` of the decoded
/// value, and null as the string "null".
pub fn render_for(value: &Json, version: KubeVersion) -> String {
    if version.values_as_json() {
        return render(value);
    }
    match value {
        Json::Null => "\"null\"".into(),
        Json::Array(_) | Json::Table(_) | Json::Object(_) => go_sharp_v(value),
        scalar => render(scalar),
    }
}

/// Go's `%#v` of a decoded JSON value: `map[string]interface {}{"a":1,
/// "b":"x"}` (keys sorted, as fmt sorts them), `[]interface {}{"a", 2}`,
/// nil inside either as `interface {}(nil)`.
fn go_sharp_v(value: &Json) -> String {
    match value {
        Json::Null => "interface {}(nil)".into(),
        Json::Array(_) | Json::Table(_) => {
            let items = value.as_array().map_or(&[][..], |items| &items[..]);
            let inner: Vec<String> = items.iter().map(go_sharp_v).collect();
            format!("[]interface {{}}{{{}}}", inner.join(", "))
        }
        Json::Object(fields) => {
            // serde_json's map is ordered by key.
            let inner: Vec<String> = fields
                .iter()
                .map(|(k, v)| format!("{}:{}", crate::cel::go_quote(k), go_sharp_v(v)))
                .collect();
            format!("map[string]interface {{}}{{{}}}", inner.join(", "))
        }
        scalar => render(scalar),
    }
}

/// A value as the API server's field errors show it (Kubernetes 1.34+):
/// strings Go-quoted, numbers as Go prints them, anything else as JSON.
pub fn render(value: &Json) -> String {
    match value {
        Json::String(s) => crate::cel::go_quote(s),
        Json::Number(n) => match n.as_i64() {
            Some(i) => i.to_string(),
            None => crate::cel::format_double(n.as_f64().unwrap_or(0.0)),
        },
        Json::Bool(b) => b.to_string(),
        Json::Null => "null".into(),
        other => crate::field_error::go_json(&serde_json::to_string(other).unwrap_or_default()),
    }
}

#[cfg(test)]
mod tests;
