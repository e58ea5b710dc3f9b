//! Compile-time refusals and walk behaviour of the validator.

use super::*;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
use serde_json::json;

fn compile(schema: serde_json::Value) -> Result<Validator, Vec<RuleProblem>> {
    let p: JSONSchemaProps = serde_json::from_value(schema).expect("schema");
    Validator::compile(Schema::from_openapi(&p).expect("structural"))
}

fn rules_on_int(rules: serde_json::Value) -> serde_json::Value {
    json!({"type": "object", "properties": {"n": {"type": "integer", "x-kubernetes-validations": rules}}})
}

#[test]
fn rules_must_be_boolean_and_message_expressions_strings() {
    let problems = compile(rules_on_int(json!([{"rule": "self + 1"}]))).unwrap_err();
    assert_eq!(problems[0].reason, "cel expression must evaluate to a bool");
    assert_eq!(
        problems[0].path,
        "openAPIV3Schema.properties[n].x-kubernetes-validations[0].rule"
    );
    let problems = compile(rules_on_int(
        json!([{"rule": "self > 1", "messageExpression": "self"}]),
    ))
    .unwrap_err();
    assert_eq!(
        problems[0].reason,
        "messageExpression must evaluate to a string"
    );
    assert!(problems[0]
        .path
        .ends_with("x-kubernetes-validations[0].messageExpression"));
}

#[test]
fn write_time_checks_of_the_api_server_apply() {
    let problems = compile(rules_on_int(json!([
        {"rule": " "},
        {"rule": "self > 1", "reason": "Bogus"},
        {"rule": "self > 1", "optionalOldSelf": true},
        {"rule": "self > 1", "fieldPath": ".nope"},
        {"rule": "self > 1", "message": "two\nlines"}
    ])))
    .unwrap_err();
    let reasons: Vec<&str> = problems.iter().map(|p| p.reason.as_str()).collect();
    assert!(reasons[0].contains("rule is not specified"), "{reasons:?}");
    assert!(
        reasons[1].starts_with("Unsupported value: \"Bogus\""),
        "{reasons:?}"
    );
    assert_eq!(reasons[2], "may not be set if oldSelf is not used in rule");
    assert_eq!(reasons[3], "must be a valid path");
    assert_eq!(reasons[4], "must not contain line breaks");
}

#[test]
fn old_self_is_refused_below_lists_that_cannot_correlate() {
    let problems = compile(json!({"type": "object", "properties": {"items": {
        "type": "array", "x-kubernetes-list-type": "set",
        "items": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}}}))
    .unwrap_err();
    assert_eq!(
        problems[0].reason,
        "oldSelf cannot be used on the uncorrelatable portion of the schema within openAPIV3Schema.properties[items]"
    );
    // A map list correlates its items by key: allowed.
    assert!(compile(json!({"type": "object", "properties": {"items": {
        "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
        "items": {"type": "object", "properties": {"k": {"type": "string"}},
                  "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}}}))
    .is_ok());
}

#[test]
fn map_list_items_correlate_by_key_for_transition_rules() {
    let v = compile(json!({"type": "object", "properties": {"items": {
        "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
        "items": {"type": "object", "properties": {"k": {"type": "string"}, "v": {"type": "integer"}},
                  "x-kubernetes-validations": [{"rule": "self.v >= oldSelf.v", "message": "v may not shrink"}]}}}}))
    .unwrap();
    let old = json!({"items": [{"k": "a", "v": 5}, {"k": "b", "v": 1}]});
    // Reordered, "b" shrank: the error names b's new index.
    let new = json!({"items": [{"k": "b", "v": 0}, {"k": "a", "v": 5}, {"k": "c", "v": 0}]});
    let out = v.validate(&new, Some(&old));
    let errs: Vec<String> = out.errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        errs,
        ["items[0]: Invalid value: \"object\": v may not shrink"]
    );
}

#[test]
fn unchanged_values_ratchet_into_warnings() {
    let v = compile(json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"n": {"type": "integer", "x-kubernetes-validations": [{"rule": "self < 10"}]},
                       "m": {"type": "integer"}}}}}))
    .unwrap();
    let old = json!({"spec": {"n": 20, "m": 1}});
    let new = json!({"spec": {"n": 20, "m": 2}});
    let out = v.validate(&new, Some(&old));
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    assert_eq!(
        out.warnings,
        ["spec.n: Invalid value: \"integer\": failed rule: self < 10"]
    );
    // On CREATE nothing ratchets.
    assert_eq!(v.validate(&new, None).errors.len(), 1);
}

#[test]
fn message_expression_falls_back_to_message() {
    let v = compile(rules_on_int(json!([
        {"rule": "self > 1", "message": "static", "messageExpression": "'' "},
        {"rule": "self > 2", "messageExpression": "'a\\nb'"},
        {"rule": "self > 3", "messageExpression": "'n is ' + string(self)"}
    ])))
    .unwrap();
    let out = v.validate(&json!({"n": 0}), None);
    let details: Vec<&str> = out.errors.iter().map(|e| e.detail.as_str()).collect();
    assert_eq!(details, ["static", "failed rule: self > 2", "n is 0"]);
}
