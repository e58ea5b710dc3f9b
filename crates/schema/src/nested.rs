//! The structural rule for value validations nested under `allOf`, `anyOf`,
//! `oneOf` and `not`: they may only constrain values, never declare what the
//! structural part of the schema declares (types, defaults, Kubernetes
//! extensions, `x-kubernetes-validations`, `metadata`). The API server checks
//! this for every CRD (apiextensions-apiserver `pkg/apiserver/schema`
//! validation.go, with nested `additionalProperties` and
//! `x-kubernetes-validations` both disallowed for CRDs) and refuses the
//! whole schema as not structural, compiling none of its rules.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};

use crate::SchemaError;

/// Every nested-context problem of a version's `openAPIV3Schema`, sorted as
/// the API server sorts its structural errors (by their text).
pub(crate) fn problems(root: &JSONSchemaProps) -> Vec<SchemaError> {
    let mut out = Vec::new();
    structural(root, "openAPIV3Schema", &mut out);
    out.sort_by_cached_key(|e| format!("{}: {}", e.path, e.reason));
    out
}

/// A node of the structural tree: its own quantifiers, then its children.
fn structural(p: &JSONSchemaProps, path: &str, out: &mut Vec<SchemaError>) {
    if let Some(JSONSchemaPropsOrArray::Schema(items)) = &p.items {
        structural(items, &format!("{path}.items"), out);
    }
    for (name, child) in p.properties.iter().flatten() {
        structural(child, &format!("{path}.properties[{name}]"), out);
    }
    if let Some(JSONSchemaPropsOrBool::Schema(s)) = &p.additional_properties {
        structural(s, &format!("{path}.additionalProperties"), out);
    }
    // The two int-or-string spellings the API server exempts: `anyOf` of
    // exactly `integer` and `string`, or that as the first `allOf` clause.
    let skip_any_of = is_int_or_string_pair(p.any_of.as_deref());
    let skip_first_all_of_any_of = p
        .all_of
        .as_deref()
        .and_then(<[_]>::first)
        .is_some_and(|first| is_int_or_string_pair(first.any_of.as_deref()));
    quantifiers(p, path, skip_any_of, skip_first_all_of_any_of, out);
}

fn quantifiers(
    p: &JSONSchemaProps,
    path: &str,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    out: &mut Vec<SchemaError>,
) {
    if !skip_any_of {
        for (i, clause) in p.any_of.iter().flatten().enumerate() {
            nested(clause, &format!("{path}.anyOf[{i}]"), false, out);
        }
    }
    for (i, clause) in p.all_of.iter().flatten().enumerate() {
        let skip = skip_first_all_of_any_of && i == 0;
        nested(clause, &format!("{path}.allOf[{i}]"), skip, out);
    }
    for (i, clause) in p.one_of.iter().flatten().enumerate() {
        nested(clause, &format!("{path}.oneOf[{i}]"), false, out);
    }
    if let Some(not) = &p.not {
        nested(not, &format!("{path}.not"), false, out);
    }
}

/// A value validation under a quantifier, and everything below it.
fn nested(p: &JSONSchemaProps, path: &str, skip_any_of: bool, out: &mut Vec<SchemaError>) {
    quantifiers(p, path, skip_any_of, false, out);
    if let Some(JSONSchemaPropsOrArray::Schema(items)) = &p.items {
        nested(items, &format!("{path}.items"), false, out);
    }
    for (name, child) in p.properties.iter().flatten() {
        nested(child, &format!("{path}.properties[{name}]"), false, out);
    }
    let mut forbid = |field: &str, detail: &str| {
        out.push(SchemaError {
            path: format!("{path}.{field}"),
            reason: format!("Forbidden: {detail}"),
        })
    };
    const EMPTY: &str = "must be empty to be structural";
    const UNDEFINED: &str = "must be undefined to be structural";
    const FALSE: &str = "must be false to be structural";
    let set = |s: &Option<String>| s.as_deref().is_some_and(|s| !s.is_empty());
    let on = |b: Option<bool>| b == Some(true);
    if set(&p.type_) {
        forbid("type", EMPTY);
    }
    // `additionalProperties: false` declares nothing; `true` or a schema does.
    if matches!(
        p.additional_properties,
        Some(JSONSchemaPropsOrBool::Schema(_) | JSONSchemaPropsOrBool::Bool(true))
    ) {
        forbid("additionalProperties", UNDEFINED);
    }
    if p.default.as_ref().is_some_and(|d| !d.0.is_null()) {
        forbid("default", UNDEFINED);
    }
    if set(&p.title) {
        forbid("title", EMPTY);
    }
    if set(&p.description) {
        forbid("description", EMPTY);
    }
    if on(p.nullable) {
        forbid("nullable", FALSE);
    }
    if on(p.x_kubernetes_preserve_unknown_fields) {
        forbid("x-kubernetes-preserve-unknown-fields", FALSE);
    }
    if on(p.x_kubernetes_embedded_resource) {
        forbid("x-kubernetes-embedded-resource", FALSE);
    }
    if on(p.x_kubernetes_int_or_string) {
        forbid("x-kubernetes-int-or-string", FALSE);
    }
    if p.x_kubernetes_list_map_keys
        .as_ref()
        .is_some_and(|k| !k.is_empty())
    {
        forbid("x-kubernetes-list-map-keys", EMPTY);
    }
    if p.x_kubernetes_list_type.is_some() {
        forbid("x-kubernetes-list-type", UNDEFINED);
    }
    if p.x_kubernetes_map_type.is_some() {
        forbid("x-kubernetes-map-type", UNDEFINED);
    }
    if p.x_kubernetes_validations
        .as_ref()
        .is_some_and(|v| !v.is_empty())
    {
        forbid("x-kubernetes-validations", EMPTY);
    }
    // Constraining metadata here could restrict it in ways the API server
    // does not allow.
    if p.properties
        .as_ref()
        .is_some_and(|m| m.contains_key("metadata"))
    {
        forbid(
            "properties[metadata]",
            "must not be specified in a nested context",
        );
    }
}

/// `[{type: integer}, {type: string}]` and nothing else in either clause.
fn is_int_or_string_pair(any_of: Option<&[JSONSchemaProps]>) -> bool {
    matches!(any_of, Some([a, b]) if only_type(a, "integer") && only_type(b, "string"))
}

/// The clause declares `type: ty` and nothing the API server keeps of a
/// nested clause (unset, false and empty values count as absent there).
fn only_type(p: &JSONSchemaProps, ty: &str) -> bool {
    if p.type_.as_deref() != Some(ty) {
        return false;
    }
    let falsy = |b: Option<bool>| !b.unwrap_or(false);
    let blank = |s: &Option<String>| s.as_deref().unwrap_or("").is_empty();
    let rest = JSONSchemaProps {
        type_: None,
        title: None,
        description: None,
        format: None,
        pattern: None,
        nullable: None,
        unique_items: None,
        exclusive_maximum: None,
        exclusive_minimum: None,
        x_kubernetes_preserve_unknown_fields: None,
        x_kubernetes_embedded_resource: None,
        x_kubernetes_int_or_string: None,
        // Not part of a nested clause's structural form.
        ref_path: None,
        schema: None,
        id: None,
        definitions: None,
        dependencies: None,
        additional_items: None,
        pattern_properties: None,
        external_docs: None,
        example: None,
        ..p.clone()
    };
    rest == JSONSchemaProps::default()
        && [&p.title, &p.description, &p.format, &p.pattern]
            .into_iter()
            .all(blank)
        && [
            p.nullable,
            p.unique_items,
            p.exclusive_maximum,
            p.exclusive_minimum,
            p.x_kubernetes_preserve_unknown_fields,
            p.x_kubernetes_embedded_resource,
            p.x_kubernetes_int_or_string,
        ]
        .into_iter()
        .all(falsy)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(v: serde_json::Value) -> JSONSchemaProps {
        serde_json::from_value(v).expect("valid JSONSchemaProps")
    }

    fn found(v: serde_json::Value) -> Vec<String> {
        problems(&props(v))
            .into_iter()
            .map(|e| format!("{}: {}", e.path, e.reason))
            .collect()
    }

    #[test]
    fn rules_under_every_quantifier_are_refused() {
        let got = found(serde_json::json!({
            "type": "object",
            "properties": {"a": {"type": "string",
                "allOf": [{"x-kubernetes-validations": [{"rule": "true"}]}],
                "not": {"x-kubernetes-validations": [{"rule": "true"}]}}},
            "anyOf": [{"properties": {"a": {"x-kubernetes-validations": [{"rule": "true"}]}}}],
            "oneOf": [{"x-kubernetes-validations": [{"rule": "true"}]}]
        }));
        assert_eq!(
            got,
            [
                "openAPIV3Schema.anyOf[0].properties[a].x-kubernetes-validations: Forbidden: must be empty to be structural",
                "openAPIV3Schema.oneOf[0].x-kubernetes-validations: Forbidden: must be empty to be structural",
                "openAPIV3Schema.properties[a].allOf[0].x-kubernetes-validations: Forbidden: must be empty to be structural",
                "openAPIV3Schema.properties[a].not.x-kubernetes-validations: Forbidden: must be empty to be structural",
            ]
        );
    }

    #[test]
    fn int_or_string_spellings_are_exempt() {
        let pair = serde_json::json!([{"type": "integer"}, {"type": "string"}]);
        assert!(
            found(serde_json::json!({"x-kubernetes-int-or-string": true, "anyOf": pair}))
                .is_empty()
        );
        assert!(found(serde_json::json!({
            "x-kubernetes-int-or-string": true,
            "allOf": [{"anyOf": pair}, {"maxLength": 3}]
        }))
        .is_empty());
        // Anything beside the type makes the clause an ordinary one.
        let got = found(
            serde_json::json!({"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string"}]}),
        );
        assert_eq!(got.len(), 2, "{got:?}");
    }

    #[test]
    fn declarations_in_clauses_are_refused_and_constraints_are_not() {
        let got = found(serde_json::json!({"allOf": [{
            "type": "string", "nullable": true, "default": "x",
            "additionalProperties": false, "maxLength": 3,
            "items": {"x-kubernetes-list-type": "set"},
            "properties": {"metadata": {"maxProperties": 1}}
        }]}));
        assert_eq!(
            got,
            [
                "openAPIV3Schema.allOf[0].default: Forbidden: must be undefined to be structural",
                "openAPIV3Schema.allOf[0].items.x-kubernetes-list-type: Forbidden: must be undefined to be structural",
                "openAPIV3Schema.allOf[0].nullable: Forbidden: must be false to be structural",
                "openAPIV3Schema.allOf[0].properties[metadata]: Forbidden: must not be specified in a nested context",
                "openAPIV3Schema.allOf[0].type: Forbidden: must be empty to be structural",
            ]
        );
    }
}
