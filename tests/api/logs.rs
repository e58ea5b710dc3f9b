//! What the binary logs, as an operator's log collector sees it (JSON lines).

use std::time::Duration;

use serde_json::Value;

use crate::common::{self, ServeProcess};

/// Reads the log lines that arrive within `quiet` of each other.
async fn lines_until_quiet(celhook: &mut ServeProcess, quiet: Duration) -> Vec<Value> {
    let mut out = Vec::new();
    while let Ok(Some(line)) = tokio::time::timeout(quiet, celhook.log.recv()).await {
        out.push(serde_json::from_str(&line).expect("each log line is JSON"));
    }
    out
}

#[tokio::test]
async fn plain_http_is_logged_once_per_source_and_the_http_libraries_stay_quiet() {
    let mut celhook = ServeProcess::start(std::iter::empty::<&str>()).await;
    for _ in 0..3 {
        let answer = common::plain_http_get(celhook.addr.as_str()).await;
        assert!(answer.starts_with("HTTP/1.0 400 Bad Request"), "{answer}");
    }
    // And HTTP/1.1 and HTTP/2 over TLS, whose libraries log at debug.
    common::install_crypto();
    for http1 in [true, false] {
        // The self-signed dev certificate: what is checked here is the log.
        let builder = reqwest::Client::builder().danger_accept_invalid_certs(true);
        let client = if http1 { builder.http1_only() } else { builder }
            .build()
            .expect("client");
        let res = client
            .get(format!("https://{}/healthz", celhook.addr))
            .send()
            .await
            .expect("healthz");
        assert!(res.status().is_success());
    }

    let lines = lines_until_quiet(&mut celhook, Duration::from_millis(800)).await;
    let plain: Vec<&Value> = lines
        .iter()
        .filter(|l| l["reason"] == "plain_http")
        .collect();
    assert_eq!(plain.len(), 1, "one line for three attempts: {lines:#?}");
    assert_eq!(plain[0]["level"], "WARN");
    assert!(
        plain[0]["peer"]
            .as_str()
            .is_some_and(|p| p.starts_with("127.0.0.1:")),
        "{:?}",
        plain[0]
    );
    for line in &lines {
        let target = line["target"].as_str().unwrap_or_default();
        assert!(
            target.starts_with("celhook"),
            "a library's line at info: {line}"
        );
    }
}

#[tokio::test]
async fn unknown_versions_and_audited_documents_are_logged_with_what_and_who() {
    let rules = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests/examples/rules");
    let mut celhook = ServeProcess::start(["--config".as_ref(), rules.as_os_str()]).await;
    common::install_crypto();
    let client = reqwest::Client::builder()
        .danger_accept_invalid_certs(true)
        .http1_only()
        .build()
        .expect("client");
    let deployment = |api_version: &str| {
        serde_json::json!({
            "apiVersion": api_version, "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "app", "image": "shop:1"}]}}}
        })
    };
    let url = format!("https://{}/validate", celhook.addr);
    for (version, object) in [
        ("v1beta2", deployment("apps/v1beta2")),
        ("v1", deployment("apps/v1")),
    ] {
        let review = common::admission_review(
            "admission.k8s.io/v1",
            "CREATE",
            ("apps", version, "Deployment"),
            Some(object),
            None,
        );
        let answer = common::post_review(&client, &url, &review).await.response();
        assert_eq!(answer["allowed"], true, "{answer}");
    }
    let lines = lines_until_quiet(&mut celhook, Duration::from_millis(800)).await;
    let unknown = lines
        .iter()
        .find(|l| {
            l["message"]
                .as_str()
                .is_some_and(|m| m.contains("no schema of this version"))
        })
        .unwrap_or_else(|| panic!("no unknown-version line: {lines:#?}"));
    assert_eq!(unknown["level"], "WARN");
    assert_eq!(unknown["version"], "v1beta2");
    assert_eq!(unknown["action"], "warn");
    assert_eq!(
        unknown["span"]["kind"], "Deployment",
        "the request's span names the kind: {unknown}"
    );
    // The advice document (Warn + Audit) failed on the container without a
    // memory limit: an audit is logged at warn, naming the document.
    let audited = lines
        .iter()
        .find(|l| l["document"] == "deployment-advice")
        .unwrap_or_else(|| panic!("no document line: {lines:#?}"));
    assert_eq!(audited["level"], "WARN");
    assert_eq!(audited["actions"], "warn+audit");
    assert_eq!(audited["span"]["user"], "kubernetes-admin");
}
