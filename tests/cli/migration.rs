//! `celhook storage-migration` through the built binary: the
//! StorageVersionMigrations of the examples' multi-version CRDs, as
//! `kubectl apply` reads them, and the refusals.

use serde::Deserialize as _;
use serde_json::{json, Value};

use crate::celhook_output as celhook;

fn examples() -> String {
    format!("{}/manifests/examples", env!("CARGO_MANIFEST_DIR"))
}

/// The documents of a YAML stream, read as one stream (as `kubectl apply
/// -f -` reads it); comment-only parts are no documents.
fn documents(yaml: &str) -> Vec<Value> {
    serde_norway::Deserializer::from_str(yaml)
        .map(|doc| Value::deserialize(doc).expect("each document is YAML"))
        .filter(|doc| !doc.is_null())
        .collect()
}

#[test]
fn the_examples_get_one_migration_per_multi_version_crd() {
    let (code, stdout, stderr) = celhook(&["storage-migration", "--config", &examples()]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        documents(&stdout),
        [
            json!({
                "apiVersion": "storagemigration.k8s.io/v1",
                "kind": "StorageVersionMigration",
                "metadata": {"name": "crontabs.example.com-v1beta1"},
                "spec": {"resource": {"group": "example.com", "resource": "crontabs"}},
            }),
            json!({
                "apiVersion": "storagemigration.k8s.io/v1",
                "kind": "StorageVersionMigration",
                "metadata": {"name": "pizzas.restaurant.programming-kubernetes.info-v1alpha1"},
                "spec": {"resource": {
                    "group": "restaurant.programming-kubernetes.info",
                    "resource": "pizzas",
                }},
            }),
        ]
    );
    // Each migration is preceded by its CRD's clean-up, in the storage version.
    let crontab = stdout
        .find("kubectl patch crd crontabs.example.com --subresource=status --type=merge -p '{\"status\":{\"storedVersions\":[\"v1beta1\"]}}'")
        .expect("the crontab clean-up");
    let pizza = stdout
        .find("kubectl patch crd pizzas.restaurant.programming-kubernetes.info --subresource=status --type=merge -p '{\"status\":{\"storedVersions\":[\"v1alpha1\"]}}'")
        .expect("the pizza clean-up");
    let first_doc = stdout
        .find("kind: StorageVersionMigration")
        .expect("a document");
    assert!(crontab < first_doc && first_doc < pizza, "{stdout}");
    assert!(stdout.contains(
        "kubectl wait --for=condition=Succeeded --timeout=10m storageversionmigrations.storagemigration.k8s.io/crontabs.example.com-v1beta1"
    ), "{stdout}");
    // The single-version CronTab of stable.example.com has nothing to migrate.
    assert_eq!(
        stderr.trim_end(),
        format!(
            "note: {}/crontab.yaml: crd crontabs.stable.example.com: skipped, it has one version (v1): nothing is stored in another",
            examples()
        )
    );
}

#[test]
fn crd_and_api_version_pick_one_migration_for_an_older_cluster() {
    let (code, stdout, stderr) = celhook(&[
        "storage-migration",
        "--config",
        &examples(),
        "--crd",
        "pizzas.restaurant.programming-kubernetes.info",
        "--api-version",
        "storagemigration.k8s.io/v1alpha1",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
    let docs = documents(&stdout);
    assert_eq!(docs.len(), 1, "{stdout}");
    assert_eq!(docs[0]["apiVersion"], "storagemigration.k8s.io/v1alpha1");
    // The alpha API names the version the objects are written in.
    assert_eq!(
        docs[0]["spec"]["resource"],
        json!({"group": "restaurant.programming-kubernetes.info", "resource": "pizzas", "version": "v1alpha1"})
    );

    let (code, stdout, stderr) = celhook(&[
        "storage-migration",
        "--config",
        &examples(),
        "--crd",
        "crontabs.example.com",
        "--api-version",
        "storagemigration.k8s.io/v1beta1",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let docs = documents(&stdout);
    assert_eq!(docs.len(), 1, "{stdout}");
    assert_eq!(docs[0]["apiVersion"], "storagemigration.k8s.io/v1beta1");
    assert_eq!(
        docs[0]["spec"]["resource"],
        json!({"group": "example.com", "resource": "crontabs"})
    );
}

#[test]
fn an_unknown_crd_or_api_version_is_a_usage_error() {
    let (code, stdout, stderr) = celhook(&[
        "storage-migration",
        "--config",
        &examples(),
        "--crd",
        "crontabs.example.com",
        "--crd",
        "pizza",
    ]);
    assert_eq!(code, 64, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert_eq!(
        stderr.trim_end(),
        "celhook storage-migration: --crd pizza: no such CustomResourceDefinition in the config; it has: crontabs.example.com, crontabs.stable.example.com, pizzas.restaurant.programming-kubernetes.info"
    );

    let (code, stdout, stderr) = celhook(&[
        "storage-migration",
        "--config",
        &examples(),
        "--api-version",
        "v1",
    ]);
    assert_eq!(code, 64, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains("expected one of storagemigration.k8s.io/v1, storagemigration.k8s.io/v1beta1, storagemigration.k8s.io/v1alpha1"),
        "{stderr}"
    );
}

#[test]
fn nothing_to_migrate_and_unreadable_configs() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::copy(
        format!("{}/crontab.yaml", examples()),
        dir.path().join("crontab.yaml"),
    )
    .expect("copy");
    let config = dir.path().display().to_string();
    // One single-version CRD: nothing printed, exit 0, and why.
    let (code, stdout, stderr) = celhook(&["storage-migration", "--config", &config]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains("skipped, it has one version (v1)")
            && stderr.contains("note: nothing to migrate"),
        "{stderr}"
    );

    // A document that is not YAML: named, nothing printed, exit 1.
    std::fs::write(dir.path().join("bad.yaml"), "kind: [").expect("write");
    let (code, stdout, stderr) = celhook(&["storage-migration", "--config", &config]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.starts_with(&format!(
            "celhook storage-migration: {config}/bad.yaml: invalid YAML"
        )),
        "{stderr}"
    );

    // A multi-version CRD without a storage version.
    std::fs::remove_file(dir.path().join("bad.yaml")).expect("remove");
    let text = std::fs::read_to_string(format!("{}/crontab-conversion.yaml", examples()))
        .expect("read")
        .replace("storage: true", "storage: false");
    std::fs::write(dir.path().join("two.yaml"), text).expect("write");
    let (code, stdout, stderr) = celhook(&["storage-migration", "--config", &config]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains(&format!(
            "{config}/two.yaml: crd crontabs.example.com: spec.versions: no version has storage: true"
        )),
        "{stderr}"
    );

    let (code, _, stderr) = celhook(&["storage-migration", "--config", "/no/such/dir"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("/no/such/dir"), "{stderr}");
}
