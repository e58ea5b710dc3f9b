//! `celhook webhook-config` through the built binary: the objects that
//! route a config's CRDs to celhook, as `kubectl apply` reads them.

use serde_json::Value;

use crate::celhook_output as celhook;

fn example(name: &str) -> String {
    format!("{}/manifests/examples/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// The YAML stream's documents.
fn documents(yaml: &str) -> Vec<Value> {
    yaml.split("\n---\n")
        .skip(1)
        .map(|d| serde_norway::from_str(d).expect("each document is YAML"))
        .collect()
}

#[test]
fn a_conversion_config_gets_its_rule_and_its_crd_with_the_webhook() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::copy(
        example("pizza-conversion.yaml"),
        dir.path().join("pizza.yaml"),
    )
    .expect("copy");
    let config = dir.path().display().to_string();
    let (code, stdout, stderr) = celhook(&[
        "webhook-config",
        "--config",
        &config,
        "--namespace",
        "policy",
        "--failure-policy",
        "Ignore",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let docs = documents(&stdout);
    assert_eq!(docs.len(), 2, "{stdout}");
    let hook = &docs[0]["webhooks"][0];
    assert_eq!(hook["failurePolicy"], "Ignore");
    assert_eq!(hook["clientConfig"]["service"]["namespace"], "policy");
    assert_eq!(
        hook["rules"][0]["apiGroups"][0],
        "restaurant.programming-kubernetes.info"
    );
    assert_eq!(hook["rules"][0]["resources"][0], "pizzas");
    let crd = &docs[1];
    assert_eq!(
        crd["metadata"]["name"],
        "pizzas.restaurant.programming-kubernetes.info"
    );
    let webhook = &crd["spec"]["conversion"]["webhook"];
    assert_eq!(webhook["clientConfig"]["service"]["path"], "/convert");
    assert_eq!(webhook["conversionReviewVersions"][0], "v1");
    // The whole CRD, not a fragment: its versions and schemas are there.
    assert!(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"].is_object());
}

#[test]
fn a_ca_bundle_file_must_hold_a_certificate_and_a_bad_config_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let not_pem = dir.path().join("ca.txt");
    std::fs::write(&not_pem, "hello").expect("write");
    let (code, _, stderr) = celhook(&[
        "webhook-config",
        "--config",
        &example("crontab.yaml"),
        "--ca-bundle",
        &not_pem.display().to_string(),
    ]);
    assert_eq!(code, 64, "{stderr}");
    assert!(stderr.contains("no PEM certificate"), "{stderr}");

    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: x}\nspec: 3\n").expect("write");
    let (code, stdout, stderr) =
        celhook(&["webhook-config", "--config", &bad.display().to_string()]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains("does not load") && stderr.contains("bad.yaml"),
        "{stderr}"
    );

    let (code, _, stderr) = celhook(&["webhook-config", "--timeout-seconds", "31"]);
    assert_eq!(code, 64, "a usage error: {stderr}");
    assert!(stderr.contains("31"), "{stderr}");
}
