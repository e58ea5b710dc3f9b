//! Rules documents on a built-in kind through HTTPS: Deny, Warn and Audit
//! answers, a transition rule on a list-map item, ratcheting, the
//! unknown-version policy, and their metrics.

use serde_json::{json, Value};

use crate::common::{self, admission_review, client, post_review, start_with, validate_url, Http};
use celhook::config::{self, ConfigSource};
use celhook::server::ServeConfig;

fn deployment(replicas: i64, containers: Value) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": containers}
            }
        }
    })
}

fn container(name: &str, image: &str) -> Value {
    json!({"name": name, "image": image, "resources": {"limits": {"memory": "64Mi"}}})
}

#[tokio::test]
async fn a_deployment_is_denied_warned_and_audited_as_configured() {
    let loaded = config::load(&ConfigSource::Dir(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests/examples/rules"),
    ));
    assert!(!loaded.report.has_errors(), "{:?}", loaded.report);
    let server = start_with(ServeConfig::for_tests(), loaded.catalog).await;
    let url = validate_url(&server);
    const KIND: (&str, &str, &str) = ("apps", "v1", "Deployment");

    for http in [Http::H1, Http::H2] {
        let client = client(&server, http);
        let bad = deployment(
            12,
            json!([
                container("app", "shop:1"),
                container("proxy", "envoy:latest")
            ]),
        );
        let review = admission_review("admission.k8s.io/v1", "CREATE", KIND, Some(bad), None);
        let response = post_review(&client, &url, &review).await.response();
        assert_eq!(response["allowed"], false, "{response}");
        assert_eq!(response["status"]["code"], 422);
        assert_eq!(
            response["status"]["message"],
            "Deployment.apps \"web\" is invalid: [spec.replicas: Forbidden: at most 10 replicas, \
             spec.template.spec.containers[1].image: Invalid value: must not use the latest tag]"
        );
        assert_eq!(
            response["status"]["details"]["causes"][1]["field"],
            "spec.template.spec.containers[1].image"
        );
    }

    let client = client(&server, Http::H1);
    // Warn + Audit: allowed, with the warning and the audit annotation.
    let no_limit = deployment(2, json!([{"name": "app", "image": "shop:1"}]));
    let review = admission_review("admission.k8s.io/v1", "CREATE", KIND, Some(no_limit), None);
    let response = post_review(&client, &url, &review).await.response();
    assert_eq!(response["allowed"], true, "{response}");
    assert_eq!(
        response["warnings"],
        json!(["ValidationRules 'deployment-advice': spec.template.spec.containers[0]: Invalid value: set a memory limit"])
    );
    let audit: Value = serde_json::from_str(
        response["auditAnnotations"]["validation_failure"]
            .as_str()
            .expect("annotation"),
    )
    .expect("JSON");
    assert_eq!(audit[0]["document"], "deployment-advice");

    // UPDATE: containers reordered, the pinned one matched by name.
    let old = deployment(
        20,
        json!([
            container("app", "shop@sha256:aa"),
            container("log", "log:1")
        ]),
    );
    let kept = deployment(
        20,
        json!([
            container("log", "log:2"),
            container("app", "shop@sha256:bb")
        ]),
    );
    let review = admission_review(
        "admission.k8s.io/v1beta1",
        "UPDATE",
        KIND,
        Some(kept),
        Some(old.clone()),
    );
    let response = post_review(&client, &url, &review).await.response();
    // 20 replicas were there before: unchanged, they ratchet.
    assert_eq!(response["allowed"], true, "{response}");
    let unpinned = deployment(
        20,
        json!([container("log", "log:2"), container("app", "shop:2")]),
    );
    let review = admission_review(
        "admission.k8s.io/v1",
        "UPDATE",
        KIND,
        Some(unpinned),
        Some(old),
    );
    let response = post_review(&client, &url, &review).await.response();
    assert_eq!(
        response["status"]["message"],
        "Deployment.apps \"web\" is invalid: spec.template.spec.containers[1].image: Invalid value: an image pinned by digest stays pinned"
    );

    // A version of Deployment celhook has no schema of: allowed with a warning.
    let old_api = deployment(1, json!([container("app", "x:latest")]));
    let review = admission_review(
        "admission.k8s.io/v1",
        "CREATE",
        ("apps", "v1beta2", "Deployment"),
        Some(old_api),
        None,
    );
    let response = post_review(&client, &url, &review).await.response();
    assert_eq!(response["allowed"], true);
    assert_eq!(
        response["warnings"][0],
        "celhook has no schema of Deployment.apps version \"v1beta2\", so its rules were not checked"
    );

    let text = common::metrics_text(&client, &common::url(&server, "/metrics")).await;
    let count = |name: &str, labels: &[(&str, &str)]| common::metric(&text, name, labels);
    assert_eq!(
        count(
            "celhook_rules_document_failures_total",
            &[("document", "deployment-hygiene"), ("actions", "deny")]
        ),
        Some(3.0),
        "{text}"
    );
    assert_eq!(
        count(
            "celhook_rules_document_failures_total",
            &[("document", "deployment-advice"), ("actions", "warn+audit")]
        ),
        Some(1.0)
    );
    assert_eq!(
        count(
            "celhook_unknown_version_requests_total",
            &[("crd", "deployment.apps"), ("action", "warn")]
        ),
        Some(1.0)
    );
    assert_eq!(
        count(
            "celhook_admission_requests_total",
            &[
                ("review_version", "v1"),
                ("crd", "deployment.apps"),
                ("operation", "CREATE"),
                ("outcome", "denied")
            ]
        ),
        Some(2.0)
    );
    // Each rule of a document has its own series, as a CRD's rules do: the
    // replicas rule returned false on both CREATEs and on both UPDATEs of
    // 20 replicas (ratcheted there, but evaluated).
    assert_eq!(
        count(
            "celhook_rule_failures_total",
            &[
                ("crd", "ValidationRules/deployment-hygiene"),
                ("version", "v1"),
                ("path", ".spec.replicas"),
                ("index", "0")
            ]
        ),
        Some(4.0),
        "{text}"
    );
    server.stop().await.expect("stops");
}
