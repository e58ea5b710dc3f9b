//! Decoding only what the rules read (`Reads`) answers as decoding whole.

use celhook_json::{json, Value as Json};

use super::*;
use crate::config::{self, ConfigSource};
use crate::review::{decode_admission, decode_admission_planned, Details};

fn embedded() -> Catalog {
    config::load(&ConfigSource::Embedded).catalog
}

/// A CronTab review; `object` and `oldObject` carry what rules never read
/// (managedFields, status) besides `spec`.
fn crontab_review(operation: &str, spec: Json, old_spec: Option<Json>, status: &str) -> Json {
    let object = |spec: Json, status: &str| {
        json!({
            "apiVersion": "stable.example.com/v1",
            "kind": "CronTab",
            "metadata": {
                "name": "nightly",
                "namespace": "default",
                "labels": {"team": "a"},
                "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {"f:replicas": {}}}}],
            },
            "spec": spec,
            "status": {"phase": status},
        })
    };
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u-1",
            "kind": {"group": "stable.example.com", "version": "v1", "kind": "CronTab"},
            "resource": {"group": "stable.example.com", "version": "v1", "resource": "crontabs"},
            // Empty, as for a name the API server generates: the denial
            // names the object by its metadata.
            "name": "",
            "namespace": "default",
            "operation": operation,
            "userInfo": {"username": "alice"},
            "object": object(spec, status),
            "oldObject": old_spec.map(|s| object(s, "Old")),
        },
    })
}

fn planned(catalog: &Catalog, policy: &Policy, body: &[u8]) -> AdmissionRequest {
    let reads = Reads { catalog, policy };
    decode_admission_planned(body, Details::Decode, &reads)
        .expect("decodes")
        .1
}

fn same_answer(catalog: &Catalog, policy: &Policy, body: &Json) -> AdmissionResponse {
    let body = serde_json::to_vec(body).expect("JSON");
    let (_, whole) = decode_admission(&body).expect("decodes");
    let part = planned(catalog, policy, &body);
    let a = review(catalog, &whole, policy).response;
    let b = review(catalog, &part, policy).response;
    assert_eq!(a, b, "the same answer from the object decoded in part");
    a
}

#[test]
fn only_the_fields_rules_sit_under_and_the_name_are_built() {
    let catalog = embedded();
    let spec = json!({"minReplicas": 1, "replicas": 2, "maxReplicas": 3});
    let mut review = crontab_review("CREATE", spec.clone(), None, "Ready");
    let body = serde_json::to_vec(&review).unwrap();
    let req = planned(&catalog, &Policy::default(), &body);
    assert_eq!(
        req.object,
        Some(json!({"metadata": {"name": "nightly"}, "spec": spec})),
    );
    // The schema check reads everything.
    let checked = Policy {
        check_schema: true,
        ..Policy::default()
    };
    let req = planned(&catalog, &checked, &body);
    let object = req.object.expect("an object");
    assert_eq!(object["status"]["phase"], "Ready");
    assert_eq!(object["metadata"]["labels"]["team"], "a");
    // A kind no rule is about keeps the name alone.
    review["request"]["kind"]["kind"] = json!("Other");
    let other = serde_json::to_vec(&review).unwrap();
    let req = planned(&catalog, &Policy::default(), &other);
    assert_eq!(req.object, Some(json!({"metadata": {"name": "nightly"}})));
}

#[test]
fn denials_and_ratcheting_answer_as_with_whole_objects() {
    let catalog = embedded();
    let policy = Policy::default();
    let bad = json!({"minReplicas": 5, "replicas": 2, "maxReplicas": 3});
    // A denial names the object from its metadata.
    let res = same_answer(
        &catalog,
        &policy,
        &crontab_review("CREATE", bad.clone(), None, "x"),
    );
    assert!(!res.allowed);
    assert!(
        res.status.as_ref().unwrap().message.contains("\"nightly\""),
        "{:?}",
        res.status
    );
    // The failing spec is unchanged while status changed: ratcheted.
    let res = same_answer(
        &catalog,
        &policy,
        &crontab_review("UPDATE", bad.clone(), Some(bad.clone()), "New"),
    );
    assert!(res.allowed, "{:?}", res.status);
    // A transition rule over a changed spec.
    let low = json!({"minReplicas": 1, "replicas": 2, "maxReplicas": 3, "level": "low"});
    let high = json!({"minReplicas": 1, "replicas": 2, "maxReplicas": 3, "level": "high"});
    let res = same_answer(
        &catalog,
        &policy,
        &crontab_review("UPDATE", high, Some(low), "x"),
    );
    assert!(!res.allowed);
}

#[test]
fn objects_written_before_the_kind_are_decoded_by_its_plan() {
    let catalog = embedded();
    let spec = json!({"minReplicas": 1, "replicas": 2, "maxReplicas": 3});
    let mut body = crontab_review("CREATE", spec.clone(), None, "Ready");
    // serde_json's map keeps keys sorted: `kind` after `object` would
    // not show; write the request by hand with the object first.
    let request = body["request"].take();
    let text = format!(
        r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{"object":{},"uid":"u-1","operation":"CREATE","kind":{}}}}}"#,
        request["object"], request["kind"]
    );
    let req = planned(&catalog, &Policy::default(), text.as_bytes());
    assert_eq!(
        req.object,
        Some(json!({"metadata": {"name": "nightly"}, "spec": spec}))
    );
}

#[test]
fn policies_read_whole_objects() {
    let mut files: Vec<(String, &str)> = config::embedded::FILES
        .iter()
        .map(|(name, text)| (name.to_string(), *text))
        .collect();
    let policy = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: status-phase}
spec:
  matchConstraints:
    resourceRules:
      - apiGroups: ["stable.example.com"]
        apiVersions: ["v1"]
        operations: ["CREATE"]
        resources: ["crontabs"]
  validations:
    - expression: "object.status.phase != 'Broken'"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: status-phase}
spec:
  policyName: status-phase
  validationActions: [Deny]
"#;
    files.push(("policy.yaml".into(), policy));
    let loaded = config::load_texts(&files);
    assert!(!loaded.report.has_errors(), "{:?}", loaded.report);
    let spec = json!({"minReplicas": 1, "replicas": 2, "maxReplicas": 3});
    let res = same_answer(
        &loaded.catalog,
        &Policy::default(),
        &crontab_review("CREATE", spec.clone(), None, "Broken"),
    );
    assert!(!res.allowed, "the policy read the status");
    // `/validate/rules` leaves policies to their own webhook.
    let rules_only = Policy {
        scope: Scope::Rules,
        ..Policy::default()
    };
    let body = serde_json::to_vec(&crontab_review("CREATE", spec, None, "Broken")).unwrap();
    let req = planned(&loaded.catalog, &rules_only, &body);
    assert!(req.object.expect("object").get("status").is_none());
}
