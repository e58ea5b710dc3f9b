//! Policies loaded from manifests and answered, through `config::load_texts`
//! (the loader the server uses) and `policy::review`.

use serde_json::{json, Value as Json};

use crate::config::{self, Problem};
use crate::review::{
    AdmissionRequest, GroupVersionKind, GroupVersionResource, Operation, RequestDetails,
};

fn policy(spec: Json) -> Json {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "p"},
        "spec": spec,
    })
}

fn binding(actions: Json) -> Json {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "b"},
        "spec": {"policyName": "p", "validationActions": actions},
    })
}

fn configmaps() -> Json {
    json!({"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}]})
}

fn load(docs: &[Json]) -> config::Loaded {
    let texts: Vec<(String, String)> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| (format!("policies/{i}.yaml"), d.to_string()))
        .collect();
    let refs: Vec<(&str, &str)> = texts
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_str()))
        .collect();
    config::load_texts(&refs)
}

fn errors(loaded: &config::Loaded) -> Vec<&Problem> {
    loaded.report.errors.iter().collect()
}

fn create(object: Json) -> AdmissionRequest {
    AdmissionRequest {
        uid: "u".into(),
        kind: GroupVersionKind {
            group: "".into(),
            version: "v1".into(),
            kind: "ConfigMap".into(),
        },
        name: "cm".into(),
        namespace: Some("default".into()),
        operation: Operation::Create,
        object: Some(object),
        details: RequestDetails {
            resource: GroupVersionResource {
                group: "".into(),
                version: "v1".into(),
                resource: "configmaps".into(),
            },
            ..RequestDetails::default()
        },
        ..AdmissionRequest::default()
    }
}

fn configmap(data: Json) -> Json {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default"}, "data": data})
}

#[test]
fn refusals_name_file_document_path_and_reason() {
    let loaded = load(&[
        policy(json!({
            "matchConstraints": configmaps(),
            "validations": [
                {"expression": "object.data.x =="},
                {"expression": "authorizer.group('').resource('pods').check('get').allowed()"},
            ],
        })),
        binding(json!(["Deny", "Warn"])),
    ]);
    let found = errors(&loaded);
    let syntax = found
        .iter()
        .find(|p| p.path.as_deref() == Some("spec.validations[0].expression"))
        .expect("the syntax error");
    assert_eq!(syntax.file, "policies/0.yaml");
    assert_eq!(
        syntax.document.as_deref(),
        Some("ValidatingAdmissionPolicy p (document 0)")
    );
    assert!(
        syntax
            .reason
            .contains("compilation failed: ERROR: <input>:1:"),
        "{}",
        syntax.reason
    );
    let authorizer = found
        .iter()
        .find(|p| p.path.as_deref() == Some("spec.validations[1].expression"))
        .expect("the authorizer refusal");
    assert!(
        authorizer
            .reason
            .contains("the authorizer variable is not supported"),
        "{}",
        authorizer.reason
    );
    let actions = found
        .iter()
        .find(|p| p.path.as_deref() == Some("spec.validationActions"))
        .expect("Deny with Warn");
    assert_eq!(
        actions.document.as_deref(),
        Some("ValidatingAdmissionPolicyBinding b (document 0)")
    );
    assert!(actions
        .reason
        .contains("must not contain both Deny and Warn"));
    assert!(
        loaded.catalog.policies().is_empty(),
        "nothing of a refused policy is served"
    );
}

#[test]
fn unused_variables_never_run_and_used_ones_run_once() {
    let loaded = load(&[
        policy(json!({
            "matchConstraints": configmaps(),
            "variables": [
                {"name": "broken", "expression": "object.data.missing"},
                {"name": "size", "expression": "size(object.data)"},
            ],
            "validations": [
                {"expression": "variables.size < 3 || variables.broken == 'x'", "message": "too big"},
                {"expression": "variables.size > 0", "message": "empty"},
            ],
        })),
        binding(json!(["Deny"])),
    ]);
    assert!(errors(&loaded).is_empty(), "{:?}", loaded.report.errors);
    let set = loaded.catalog.policies();
    let small = super::review(set, &create(configmap(json!({"a": "1"}))));
    assert!(
        small.denial.is_none(),
        "the short circuit never reads `broken`"
    );
    let big = super::review(
        set,
        &create(configmap(json!({"a": "1", "b": "2", "c": "3"}))),
    );
    let status = big.denial.expect("denied");
    assert_eq!(status.code, 422);
    assert_eq!(
        status.message,
        "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: expression 'variables.size < 3 || variables.broken == 'x'' resulted in error: composited variable \"broken\" fails to evaluate: no such key: missing"
    );
}

#[test]
fn objects_that_are_no_parameter_are_reported_as_skipped() {
    let loaded = load(&[
        policy(json!({
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": configmaps(),
            "validations": [{"expression": "object.data.size() <= int(params.data.max)"}],
        })),
        configmap(json!({"max": "2"})),
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}),
    ]);
    assert!(errors(&loaded).is_empty(), "{:?}", loaded.report.errors);
    let skipped: Vec<&str> = loaded
        .report
        .warnings
        .iter()
        .map(|w| w.file.as_str())
        .collect();
    assert_eq!(
        skipped,
        ["policies/2.yaml"],
        "the ConfigMap is a parameter, the Secret is not"
    );
}

#[test]
fn a_binding_of_no_policy_is_a_warning() {
    let loaded = load(&[binding(json!(["Deny"]))]);
    assert!(errors(&loaded).is_empty());
    let w = &loaded.report.warnings[0];
    assert_eq!(w.path.as_deref(), Some("spec.policyName"));
    assert!(w.reason.contains("this binding has no effect"));
}

#[test]
fn audited_failures_are_go_json() {
    let loaded = load(&[
        policy(json!({
            "matchConstraints": configmaps(),
            "validations": [{"expression": "size(object.data) > 5 && object.data.a != '<&>'"}],
        })),
        binding(json!(["Audit"])),
    ]);
    let outcome = super::review(
        loaded.catalog.policies(),
        &create(configmap(json!({"a": "1"}))),
    );
    assert!(outcome.denial.is_none(), "Audit alone never denies");
    let (key, value) = &outcome.audit_annotations[0];
    assert_eq!(key, super::VALIDATION_FAILURE_KEY);
    assert_eq!(
        value,
        r#"[{"message":"failed expression: size(object.data) \u003e 5 \u0026\u0026 object.data.a != '\u003c\u0026\u003e'","policy":"p","binding":"b","expressionIndex":0,"validationActions":["Audit"]}]"#
    );
}

#[test]
fn validations_are_type_checked_against_the_matched_kinds_as_warnings() {
    let deployments = json!({"resourceRules": [
        {"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["deployments", "deployments/scale"]},
        {"apiGroups": ["*"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]},
    ]});
    let loaded = load(&[policy(json!({
        "matchConstraints": deployments,
        "variables": [{"name": "name", "expression": "'web'"}],
        "validations": [
            {"expression": "object.spec.replicaz > 1"},
            {"expression": "object.spec.replicas == variables.name", "messageExpression": "'name ' + object.metadata.namez"},
            {"expression": "object.spec.replicas < 10"},
        ],
    }))]);
    assert!(
        errors(&loaded).is_empty(),
        "a type error is no refusal: {:?}",
        loaded.report.errors
    );
    assert_eq!(loaded.catalog.policies().policies().len(), 1);
    let warnings: Vec<(&str, &str)> = loaded
        .report
        .warnings
        .iter()
        .map(|w| (w.path.as_deref().unwrap_or(""), w.reason.as_str()))
        .collect();
    assert_eq!(warnings.len(), 3, "{warnings:#?}");
    assert_eq!(warnings[0].0, "spec.validations[0].expression");
    assert!(
        warnings[0].1.starts_with(
            "apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replicaz'"
        ),
        "{}",
        warnings[0].1
    );
    assert_eq!(warnings[1].0, "spec.validations[1].expression");
    assert!(
        warnings[1]
            .1
            .contains("found no matching overload for '_==_' applied to '(int, string)'"),
        "{}",
        warnings[1].1
    );
    assert_eq!(warnings[2].0, "spec.validations[1].messageExpression");
}
