//! A storage version migration through the validating webhook: the
//! migrator (kube-controller-manager's storage-version-migrator) sends
//! each object back as a server-side apply patch of its apiVersion, kind,
//! uid and resourceVersion only, so the API server admits an UPDATE whose
//! object equals the old object. Rules tightened since the objects were
//! stored must not block it: unchanged values ratchet (a warning, not a
//! denial), as the API server's own CRD validation ratcheting does.

use crate::common;

use celhook::config::{self, ConfigSource};
use celhook::server::ServeConfig;
use common::{admission_review, client, post_review, validate_url, Http, V1};
use serde_json::{json, Value};

/// Widgets: v2 became the storage version, and its rules were tightened
/// after widgets had been stored: at most 5 replicas, image names of at
/// most 10 characters, and an owner required (a rule at the root).
const WIDGETS: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.org
spec:
  group: example.org
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
    - name: v1
      served: true
      storage: false
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                replicas: {type: integer}
                image: {type: string}
                owner: {type: string}
    - name: v2
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-validations:
            - rule: "has(self.spec.owner)"
              message: "spec.owner is required"
          properties:
            spec:
              type: object
              x-kubernetes-validations:
                - rule: "self.replicas <= 5"
                  message: "at most 5 replicas"
              properties:
                replicas: {type: integer}
                image:
                  type: string
                  maxLength: 64
                  x-kubernetes-validations:
                    - rule: "self.size() <= 10"
                      message: "image names have at most 10 characters"
                owner: {type: string}
"#;

const WIDGET: (&str, &str, &str) = ("example.org", "v2", "Widget");

/// A widget as stored before the rules were tightened, read back in v2.
fn stored_widget() -> Value {
    json!({
        "apiVersion": "example.org/v2",
        "kind": "Widget",
        "metadata": {
            "name": "w1",
            "namespace": "default",
            "uid": "6f1e8a52-3c1d-4c55-9a51-0d5b2c7e9f10",
            "resourceVersion": "4711",
            "generation": 1,
            "creationTimestamp": "2025-06-01T10:00:00Z",
            "managedFields": [{
                "manager": "kubectl-client-side-apply",
                "operation": "Update",
                "apiVersion": "example.org/v1",
                "time": "2025-06-01T10:00:00Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {"f:image": {}, "f:replicas": {}}},
            }],
        },
        "spec": {"replicas": 8, "image": "registry.example.org/widget:1.0"},
    })
}

/// The UPDATE the API server sends for the migrator's patch: the
/// migrator's field manager in PatchOptions, the controller's identity.
fn migration_review(object: Value, old: Value) -> Value {
    let mut review = admission_review(V1, "UPDATE", WIDGET, Some(object), Some(old));
    review["request"]["options"] = json!({
        "apiVersion": "meta.k8s.io/v1",
        "kind": "PatchOptions",
        "fieldManager": "storage-version-migrator-controller",
    });
    review["request"]["userInfo"] = json!({
        "username": "system:serviceaccount:kube-system:storage-version-migrator-controller",
        "groups": ["system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"],
    });
    review
}

fn causes(response: &Value) -> Vec<String> {
    response["status"]["details"]["causes"]
        .as_array()
        .map(|c| {
            c.iter()
                .map(|c| {
                    format!(
                        "{}: {}",
                        c["field"].as_str().unwrap_or(""),
                        c["message"].as_str().unwrap_or("")
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_migration_write_passes_rules_tightened_after_the_objects_were_stored() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("widgets.yaml"), WIDGETS).expect("write");
    let loaded = config::load(&ConfigSource::Dir(dir.path().to_owned()));
    assert!(!loaded.report.has_errors(), "{:#?}", loaded.report);
    let server = common::start_with(ServeConfig::for_tests(), loaded.catalog).await;
    let client = client(&server, Http::H2);
    let url = validate_url(&server);

    // The widget breaks all three tightened rules; a new one is refused.
    let create = admission_review(V1, "CREATE", WIDGET, Some(stored_widget()), None);
    let response = post_review(&client, &url, &create).await.response();
    assert_eq!(response["allowed"], false, "{response}");
    assert_eq!(causes(&response).len(), 3, "{response}");

    // The migration's write: object and old object are the same, metadata
    // included (the apply sets no field, so no managedFields entry is added,
    // and resourceVersion changes only when the write is stored).
    let review = migration_review(stored_widget(), stored_widget());
    let response = post_review(&client, &url, &review).await.response();
    assert_eq!(response["allowed"], true, "{response}");
    assert_eq!(
        response["warnings"],
        json!([
            "<nil>: Invalid value: spec.owner is required",
            "spec: Invalid value: at most 5 replicas",
            "spec.image: Invalid value: \"registry.example.org/widget:1.0\": image names have at most 10 characters",
        ]),
        "{response}"
    );

    // Control: the same write changing the violating field is denied, and
    // only the changed values count (the unchanged image still ratchets).
    let mut changed = stored_widget();
    changed["spec"]["replicas"] = 9.into();
    let review = migration_review(changed, stored_widget());
    let response = post_review(&client, &url, &review).await.response();
    assert_eq!(response["allowed"], false, "{response}");
    assert_eq!(
        causes(&response),
        [
            "<nil>: Invalid value: spec.owner is required",
            "spec: Invalid value: at most 5 replicas",
        ],
        "{response}"
    );
    assert_eq!(
        response["warnings"],
        json!(["spec.image: Invalid value: \"registry.example.org/widget:1.0\": image names have at most 10 characters"]),
        "{response}"
    );

    // Were the metadata to differ (another writer's managedFields entry),
    // the rules below the root still ratchet; the root's does not, as in
    // the API server, which compares the whole object there.
    let mut touched = stored_widget();
    touched["metadata"]["managedFields"]
        .as_array_mut()
        .expect("managedFields")
        .push(
            json!({"manager": "other", "operation": "Update", "apiVersion": "example.org/v2",
                     "time": "2026-09-01T10:00:00Z", "fieldsType": "FieldsV1",
                     "fieldsV1": {"f:metadata": {"f:labels": {}}}}),
        );
    let review = migration_review(touched, stored_widget());
    let response = post_review(&client, &url, &review).await.response();
    assert_eq!(response["allowed"], false, "{response}");
    assert_eq!(
        causes(&response),
        ["<nil>: Invalid value: spec.owner is required"],
        "{response}"
    );
    server.stop().await.expect("stops");
}
