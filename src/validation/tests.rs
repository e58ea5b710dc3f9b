//! Compile-time refusals and walk behaviour of the validator.

use super::*;
use celhook_json::json;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;

fn compile(schema: celhook_json::Value) -> Result<Validator, Vec<RuleProblem>> {
    let p: JSONSchemaProps = celhook_json::from_value(schema).expect("schema");
    Validator::compile(Schema::from_openapi(&p).expect("structural"))
}

fn rules_on_int(rules: celhook_json::Value) -> celhook_json::Value {
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
    assert_eq!(errs, ["items[0]: Invalid value: v may not shrink"]);
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
        ["spec.n: Invalid value: 20: failed rule: self < 10"]
    );
    // On CREATE nothing ratchets.
    assert_eq!(v.validate(&new, None).errors.len(), 1);
    // Up to 1.34 a failed rule shows the node's type instead of its value.
    let v = v.answering_as("1.34".parse().expect("version"));
    assert_eq!(
        v.validate(&new, Some(&old)).warnings,
        ["spec.n: Invalid value: \"integer\": failed rule: self < 10"]
    );
}

#[test]
fn rules_of_a_node_see_self_and_old_self_as_their_own_flags_bind_them() {
    // `self` and `oldSelf` are bound once for a node's rules: an optional
    // `oldSelf` is that rule's alone, and the rules and message
    // expressions after it see the old value as it is.
    let v = compile(
        json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"n": {"type": "integer"}},
        "x-kubernetes-validations": [
            {"rule": "!oldSelf.hasValue() || oldSelf.value().n <= self.n",
             "optionalOldSelf": true,
             "messageExpression": "oldSelf.n == 2 ? 'n may not shrink from two' : 'n may not shrink'"},
            {"rule": "self.n != oldSelf.n + 1",
             "messageExpression": "oldSelf.n == 2 ? 'up from two' : 'up from another'"},
            {"rule": "oldSelf.hasValue() && self.n > 5", "optionalOldSelf": true,
             "messageExpression": "self.n == 3 ? 'n is three' : 'n is another'"},
            {"rule": "self.n < 100 || oldSelf.n == self.n", "message": "n over 100"}
        ]}}}),
    )
    .unwrap();
    let details = |new: celhook_json::Value, old: Option<celhook_json::Value>| {
        v.validate(&new, old.as_ref())
            .errors
            .iter()
            .map(|e| e.detail.clone())
            .collect::<Vec<_>>()
    };
    let (n, m) = (
        |n: i64| json!({"spec": {"n": n}}),
        |n: i64| Some(json!({"spec": {"n": n}})),
    );
    assert_eq!(details(n(3), m(2)), ["up from two", "n is three"]);
    // A message expression sees `oldSelf` as the old value, even an optional
    // rule's, as the API server evaluates it.
    assert_eq!(
        details(n(1), m(2)),
        ["n may not shrink from two", "n is another"]
    );
    assert_eq!(details(n(1), m(3)), ["n may not shrink", "n is another"]);
    assert_eq!(details(n(5), m(4)), ["up from another", "n is another"]);
    assert_eq!(details(n(200), m(150)), ["n over 100"]);
    assert!(details(n(200), m(200)).is_empty());
    // On CREATE the transition rules do not run; the optional ones see none.
    assert_eq!(details(n(7), None), ["n is another"]);
}

#[test]
fn message_expression_falls_back_to_message() {
    let v = compile(rules_on_int(json!([
        {"rule": "self > 1", "message": "static", "messageExpression": "'' "},
        {"rule": "self > 2", "messageExpression": "'a\\nb'"},
        {"rule": "self > 3", "messageExpression": "'n is %d'.format([self])"}
    ])))
    .unwrap();
    let out = v.validate(&json!({"n": 0}), None);
    let details: Vec<&str> = out.errors.iter().map(|e| e.detail.as_str()).collect();
    assert_eq!(details, ["static", "failed rule: self > 2", "n is 0"]);
}

/// upstream's TestMessageExpression, ported: a failing rule `false` on an
/// object `{"str": "a string"}` with the given message and
/// messageExpression, under an object budget and a per-call limit; each
/// case states the failure's text and the budget left (`None`: the walk
/// stopped).
#[test]
fn message_expression_costs_and_limits_as_upstream() {
    const BUDGET: u64 = cel::PER_OBJECT_COST_BUDGET;
    const PER_CALL: u64 = cel::PER_EXPRESSION_COST_LIMIT;
    let out_of_budget = "Invalid value: \"object\": messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run";
    // (message, messageExpression, budget, per-call limit, text, budget left)
    type Case<'c> = (Option<&'c str>, &'c str, u64, u64, &'c str, Option<u64>);
    let cases: &[Case<'_>] = &[
        (
            None,
            r#""static string""#,
            300,
            PER_CALL,
            "Invalid value: \"object\": static string",
            Some(300),
        ),
        (
            Some("invisible"),
            r#""this is messageExpression""#,
            BUDGET,
            PER_CALL,
            "Invalid value: \"object\": this is messageExpression",
            Some(BUDGET),
        ),
        (
            None,
            r#""string 1" + "string 2" + "string 3""#,
            1,
            PER_CALL,
            out_of_budget,
            None,
        ),
        (
            None,
            r#""str1 " + self.str"#,
            50,
            PER_CALL,
            "Invalid value: \"object\": str1 a string",
            Some(46),
        ),
        (
            Some("message not messageExpression"),
            r#""str1 " + ["a", "b", "c", "d"][4]"#,
            50,
            PER_CALL,
            "Invalid value: \"object\": message not messageExpression",
            Some(47),
        ),
        (
            None,
            r#""str1 " + ["a", "b", "c", "d"][4]"#,
            50,
            PER_CALL,
            "Invalid value: \"object\": failed rule: false",
            Some(47),
        ),
        (
            None,
            r#""string 1" + "string 2" + "string 3""#,
            BUDGET,
            1,
            r#"Invalid value: "object": no further validation rules will be run due to call cost exceeds limit for messageExpression: "\"string 1\" + \"string 2\" + \"string 3\"""#,
            None,
        ),
        (
            Some("message not messageExpression"),
            r#""str with \na newline""#,
            BUDGET,
            PER_CALL,
            "Invalid value: \"object\": message not messageExpression",
            Some(BUDGET),
        ),
        (
            Some("message not messageExpression"),
            &format!("'{}'", "a".repeat(5121)),
            BUDGET,
            PER_CALL,
            "Invalid value: \"object\": message not messageExpression",
            Some(BUDGET),
        ),
        (
            Some("message not messageExpression"),
            r#"string("")"#,
            BUDGET,
            PER_CALL,
            "Invalid value: \"object\": message not messageExpression",
            Some(BUDGET),
        ),
        (
            Some("message not messageExpression"),
            r#"string("     ")"#,
            BUDGET,
            PER_CALL,
            "Invalid value: \"object\": message not messageExpression",
            Some(BUDGET),
        ),
    ];
    for (message, expression, budget, per_call, text, left) in cases {
        let mut rule = json!({"rule": "false", "messageExpression": expression});
        if let Some(m) = message {
            rule["message"] = json!(m);
        }
        let v = compile(json!({
            "type": "object",
            "properties": {"str": {"type": "string"}},
            "x-kubernetes-validations": [rule],
        }))
        .expect("compiles")
        .answering_as("1.34".parse().expect("version"));
        let (errors, remaining) =
            v.validate_within(&json!({"str": "a string"}), *budget, *per_call);
        let texts: Vec<String> = errors.iter().map(FieldError::body).collect();
        assert_eq!(texts, [*text], "{expression}");
        assert_eq!(remaining, *left, "{expression}");
    }
}

fn list_rule(
    items: celhook_json::Value,
    list_extra: celhook_json::Value,
    rule: &str,
) -> celhook_json::Value {
    let mut list =
        json!({"type": "array", "items": items, "x-kubernetes-validations": [{"rule": rule}]});
    if let (Some(l), Some(extra)) = (list.as_object_mut(), list_extra.as_object()) {
        l.extend(extra.clone());
    }
    json!({"type": "object", "properties": {"foo": list}})
}

#[test]
fn the_docs_cost_examples_are_refused_or_allowed_as_documented() {
    // Unbounded list of unbounded strings: refused.
    let problems = compile(list_rule(
        json!({"type": "string"}),
        json!({}),
        "self.all(x, x.contains('a string'))",
    ))
    .unwrap_err();
    assert_eq!(
        problems[0].path,
        "openAPIV3Schema.properties[foo].x-kubernetes-validations[0].rule"
    );
    assert_eq!(
        problems[0].reason,
        "Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    );
    // With maxItems and maxLength: allowed.
    assert!(compile(list_rule(
        json!({"type": "string", "maxLength": 10}),
        json!({"maxItems": 25}),
        "self.all(x, x.contains('a string'))"
    ))
    .is_ok());
    // Unbounded list of integers compared to a constant: allowed.
    assert!(compile(list_rule(
        json!({"type": "integer"}),
        json!({}),
        "self.all(x, x == 5)"
    ))
    .is_ok());
    // The same rule on each list of an unbounded list of lists: refused.
    let nested = json!({"type": "object", "properties": {"foo": {"type": "array", "items": {
        "type": "array", "items": {"type": "integer"},
        "x-kubernetes-validations": [{"rule": "self.all(x, x == 5)"}]}}}});
    let problems = compile(nested).unwrap_err();
    assert!(
        problems[0]
            .reason
            .contains("estimated rule cost exceeds budget"),
        "{problems:?}"
    );
    assert_eq!(
        problems[0].path,
        "openAPIV3Schema.properties[foo].items.x-kubernetes-validations[0].rule"
    );
}

#[test]
fn a_rule_on_bounded_items_costs_as_much_as_on_the_list() {
    // The docs: the per-item rule is multiplied by maxItems.
    assert!(compile(
        json!({"type": "object", "properties": {"foo": {"type": "array", "maxItems": 25,
        "items": {"type": "string", "maxLength": 10,
                  "x-kubernetes-validations": [{"rule": "self.contains('a string')"}]}}}})
    )
    .is_ok());
}

#[test]
fn many_expensive_rules_exceed_the_schema_total() {
    // Each rule stays under the per-rule limit (about 4.4M); thirty of
    // them do not.
    let rules: Vec<celhook_json::Value> = (0..30)
        .map(|i| json!({"rule": format!("self.all(x, x.contains('{i}'))")}))
        .collect();
    let schema = json!({"type": "object", "properties": {"foo": {"type": "array", "maxItems": 100000,
        "items": {"type": "string", "maxLength": 100}, "x-kubernetes-validations": rules}}});
    let problems = compile(schema).unwrap_err();
    let last = problems.last().unwrap();
    assert_eq!(last.path, "openAPIV3Schema");
    assert!(
        last.reason.starts_with("Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of"),
        "{}",
        last.reason
    );
    assert!(problems.iter().any(|p| p
        .reason
        .contains("contributed to estimated rule cost total")));
}

#[test]
fn rule_metrics_wait_for_the_caller_to_record_them() {
    let validator = compile(rules_on_int(json!([{"rule": "self > 1"}]))).expect("compiles");
    let metrics = Metrics::register();
    bind_tree_metrics(&validator.root, "c", "v1", &metrics);
    let evaluations = || {
        let text = String::from_utf8(metrics.render().expect("renders")).expect("utf-8");
        text.lines()
            .find(|l| l.starts_with("celhook_rule_evaluations_total{"))
            .and_then(|l| l.rsplit(' ').next())
            .map(str::to_owned)
    };
    let found = validator.validate(&json!({"n": 0}), None);
    assert_eq!(found.errors.len(), 1);
    // An abandoned attempt drops its findings: nothing was counted.
    assert_eq!(evaluations().as_deref(), Some("0"));
    crate::metrics::RuleObservation::record_all(&found.observed);
    assert_eq!(evaluations().as_deref(), Some("1"));
}

/// Equality of two quantities: unsized (so over every limit) to the
/// estimators up to 1.31, priced 1 from 1.32. A CRD written at 1.32 is
/// compiled against 1.31's libraries but priced by 1.32's estimator.
#[test]
fn rules_are_priced_by_the_version_s_own_estimator() {
    let props: JSONSchemaProps = celhook_json::from_value(json!({
        "type": "object",
        "properties": {
            "a": {"type": "string", "maxLength": 10},
            "b": {"type": "string", "maxLength": 10},
        },
        "x-kubernetes-validations": [{"rule": "quantity(self.a) == quantity(self.b)"}],
    }))
    .expect("schema");
    let as_of = |minor: &str| -> KubeVersion { minor.parse().expect("version") };
    let written_at_1_32 = Validator::from_openapi_as(&props, 31, as_of("1.32"));
    assert!(written_at_1_32.is_ok(), "{written_at_1_32:?}");
    let problems = Validator::from_openapi_as(&props, 31, as_of("1.31")).unwrap_err();
    assert!(
        problems[0].reason.starts_with(
            "Forbidden: estimated rule cost exceeds budget by factor of more than 100x"
        ),
        "{problems:?}"
    );
}
