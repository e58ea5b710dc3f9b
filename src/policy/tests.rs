//! Policies loaded from manifests and answered, through `config::load_texts`
//! (the loader the server uses) and `policy::review`.

use celhook_json::{json, Value as Json};

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
    config::load_texts(&texts)
}

fn errors(loaded: &config::Loaded) -> Vec<&Problem> {
    loaded.report.errors.iter().collect()
}

/// The refusal of `loaded` at `path`.
#[track_caller]
fn error_at<'a>(loaded: &'a config::Loaded, path: &str) -> &'a Problem {
    errors(loaded)
        .into_iter()
        .find(|p| p.path.as_deref() == Some(path))
        .unwrap_or_else(|| panic!("no refusal at {path}: {:?}", loaded.report.errors))
}

/// Asserts that `outcome` denies the request with `code` and `message`.
#[track_caller]
fn assert_denied(outcome: super::Outcome, code: u16, message: &str) {
    let status = outcome.denial.expect("denied");
    assert_eq!(status.code, code);
    assert_eq!(status.message, message);
}

/// Asserts that the reason of `problem` contains `text`.
#[track_caller]
fn assert_reason_contains(problem: &Problem, text: &str) {
    assert!(problem.reason.contains(text), "{}", problem.reason);
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

/// What the policies of `loaded` decide about creating a ConfigMap of `data`.
fn review_configmap(loaded: &config::Loaded, data: Json) -> super::Outcome {
    super::review(loaded.catalog.policies(), &create(configmap(data)))
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
    let syntax = error_at(&loaded, "spec.validations[0].expression");
    assert_eq!(syntax.file, "policies/0.yaml");
    assert_eq!(
        syntax.document.as_deref(),
        Some("ValidatingAdmissionPolicy p (document 0)")
    );
    assert_reason_contains(syntax, "compilation failed: ERROR: <input>:1:");
    let authorizer = error_at(&loaded, "spec.validations[1].expression");
    assert_reason_contains(authorizer, "the authorizer variable is not supported");
    let actions = error_at(&loaded, "spec.validationActions");
    assert_eq!(
        actions.document.as_deref(),
        Some("ValidatingAdmissionPolicyBinding b (document 0)")
    );
    assert_reason_contains(actions, "must not contain both Deny and Warn");
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
    let small = review_configmap(&loaded, json!({"a": "1"}));
    assert!(
        small.denial.is_none(),
        "the short circuit never reads `broken`"
    );
    let big = review_configmap(&loaded, json!({"a": "1", "b": "2", "c": "3"}));
    assert_denied(
        big,
        422,
        "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: expression 'variables.size < 3 || variables.broken == 'x'' resulted in error: composited variable \"broken\" fails to evaluate: no such key: missing",
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
    assert_reason_contains(w, "this binding has no effect");
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
    let outcome = review_configmap(&loaded, json!({"a": "1"}));
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

/// The policy `p` with `spec` and a binding `b` with `actions`, loaded.
fn loaded(spec: Json, actions: Json) -> config::Loaded {
    let mut spec = spec;
    spec["matchConstraints"] = configmaps();
    let loaded = load(&[policy(spec), binding(actions)]);
    assert!(errors(&loaded).is_empty(), "{:?}", loaded.report.errors);
    loaded
}

#[test]
fn anything_but_true_fails_a_validation_and_anything_but_false_matches() {
    // `data.flag` is a string: neither true nor false.
    let loaded = loaded(
        json!({
            "matchConditions": [{"name": "odd", "expression": "object.data.flag"}],
            "validations": [{"expression": "object.data.flag", "message": "not a flag", "reason": "Forbidden"}],
        }),
        json!(["Deny"]),
    );
    let outcome = review_configmap(&loaded, json!({"flag": "yes"}));
    assert_denied(
        outcome,
        403,
        "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: not a flag",
    );
}

#[test]
fn an_ignored_annotation_error_leaves_a_warn_binding_warning() {
    let loaded = loaded(
        json!({
            "failurePolicy": "Ignore",
            "validations": [{"expression": "false", "message": "always"}],
            "auditAnnotations": [{"key": "broken", "valueExpression": "object.data.missing"}],
        }),
        json!(["Warn"]),
    );
    let outcome = review_configmap(&loaded, json!({"a": "1"}));
    assert!(outcome.denial.is_none(), "{:?}", outcome.denial);
    assert_eq!(
        outcome.warnings,
        ["Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': always"]
    );
}

#[test]
fn an_annotation_of_the_wrong_type_denies_even_under_ignore() {
    let loaded = loaded(
        json!({
            "failurePolicy": "Ignore",
            "validations": [{"expression": "true"}],
            "auditAnnotations": [{"key": "n", "valueExpression": "dyn(size(object.data))"}],
        }),
        json!(["Audit"]),
    );
    let outcome = review_configmap(&loaded, json!({"a": "1"}));
    let status = outcome.denial.expect("denied whatever the actions");
    assert_eq!(
        status.message,
        "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: valueExpression 'dyn(size(object.data))' resulted in unsupported return type: int. Return type must be either string or null."
    );
    assert_eq!(
        outcome
            .decisions
            .iter()
            .map(|d| d.action)
            .collect::<Vec<_>>(),
        ["deny"],
        "counted like any denial"
    );
}

#[test]
fn each_phase_evaluates_and_charges_its_variables_again() {
    // Eight variables of about 644k each: read once they fit the 10M
    // budget, read again by a messageExpression they do not.
    let ten = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]";
    let heavy =
        format!("{ten}.map(i, {ten}.map(j, {ten}.map(k, {ten}.map(l, {ten}.all(m, m > 0)))))");
    let names: Vec<String> = (0..8).map(|i| format!("v{i}")).collect();
    let variables: Vec<Json> = names
        .iter()
        .map(|n| json!({"name": n, "expression": heavy}))
        .collect();
    let all = names
        .iter()
        .map(|n| format!("variables.{n}.size()"))
        .collect::<Vec<_>>()
        .join(" + ");
    let spec = |message: bool| {
        let mut validation = json!({"expression": format!("{all} == 0"), "message": "static"});
        if message {
            validation["messageExpression"] = json!(format!("'size ' + string({all})"));
        }
        json!({"variables": variables, "validations": [validation]})
    };
    let request = create(configmap(json!({"a": "1"})));
    let once = loaded(spec(false), json!(["Deny"]));
    let status = super::review(once.catalog.policies(), &request)
        .denial
        .expect("denied");
    assert!(
        status.message.ends_with("denied request: static"),
        "{}",
        status.message
    );
    // The message's context runs the variables again, over the budget the
    // validations left, as upstream.
    let twice = loaded(spec(true), json!(["Deny"]));
    let status = super::review(twice.catalog.policies(), &request)
        .denial
        .expect("denied");
    assert!(
        status.message.ends_with(
            "denied request: failed messageExpression: validation failed due to running out of cost budget, no further validation rules will be run"
        ),
        "{}",
        status.message
    );
}

#[test]
fn namespace_object_is_the_informer_subset_and_annotations_see_all_of_it() {
    let namespace = json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": "default",
            "labels": {"team": "a"},
            "managedFields": [{"manager": "kubectl"}],
        },
    });
    let texts = [
        (
            "p.yaml".to_owned(),
            policy(json!({
                "matchConstraints": configmaps(),
                "validations": [{"expression": "!has(namespaceObject.kind) && !has(namespaceObject.metadata.managedFields) && namespaceObject.metadata.labels.team == 'a' && has(namespaceObject.spec)", "message": "subset"}],
                "auditAnnotations": [{"key": "managers", "valueExpression": "string(size(namespaceObject.metadata.managedFields))"}],
            }))
            .to_string(),
        ),
        ("b.yaml".to_owned(), binding(json!(["Deny"])).to_string()),
        ("ns.yaml".to_owned(), namespace.to_string()),
    ];
    let loaded = config::load_texts(&texts);
    assert!(errors(&loaded).is_empty(), "{:?}", loaded.report.errors);
    let outcome = review_configmap(&loaded, json!({"a": "1"}));
    assert!(outcome.denial.is_none(), "{:?}", outcome.denial);
    assert_eq!(
        outcome.audit_annotations,
        [("p_managers".to_owned(), "1".to_owned())]
    );
}

#[test]
fn names_are_subdomains_and_long_annotation_keys_are_warned_of() {
    let mut bad =
        policy(json!({"matchConstraints": configmaps(), "validations": [{"expression": "true"}]}));
    bad["metadata"]["name"] = json!("Bad_Name");
    let loaded = load(&[bad]);
    let problem = &errors(&loaded)[0];
    assert_eq!(problem.path.as_deref(), Some("metadata.name"));
    assert!(
        problem
            .reason
            .starts_with("Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"),
        "{}",
        problem.reason
    );

    let mut long = policy(json!({
        "matchConstraints": configmaps(),
        "validations": [{"expression": "true"}],
        "auditAnnotations": [{"key": "replicas-over-the-team-limit", "valueExpression": "'x'"}],
    }));
    long["metadata"]["name"] = json!("replica-limits.policies.example.com");
    let loaded = load(&[long]);
    assert!(errors(&loaded).is_empty(), "{:?}", loaded.report.errors);
    let warning = &loaded.report.warnings[0];
    assert_eq!(
        warning.path.as_deref(),
        Some("spec.auditAnnotations[0].key")
    );
    assert_reason_contains(
        warning,
        "\"replica-limits.policies.example.com_replicas-over-the-team-limit\" (64 bytes)",
    );
}

#[test]
fn an_expression_over_the_limit_on_every_request_is_refused_at_load() {
    let ten = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]";
    let heavy = format!(
        "{ten}.all(a, {ten}.all(b, {ten}.all(c, {ten}.all(d, {ten}.all(e, {ten}.all(f, f > 0))))))"
    );
    let loaded = load(&[policy(json!({
        "matchConstraints": configmaps(),
        "validations": [
            {"expression": heavy},
            // As heavy, but on the request: it may pass, so it loads.
            {"expression": format!("size(object.data) > 5 || {heavy}")},
        ],
    }))]);
    let found = errors(&loaded);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        found[0].path.as_deref(),
        Some("spec.validations[0].expression")
    );
    assert!(
        found[0].reason.starts_with("Forbidden: the expression reads nothing from the request and runs past the per-expression cost limit (1000000)"),
        "{}",
        found[0].reason
    );
}
