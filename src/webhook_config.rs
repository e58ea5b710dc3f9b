//! `celhook webhook-config`: the cluster objects that send the config's
//! kinds to celhook, written from the config itself so that they never
//! drift from what is served. A ValidatingWebhookConfiguration with a rule
//! per served CRD (its `/status` subresource included, so that rules under
//! `status` hold on status updates too), and each CRD that has a conversion
//! document with its `spec.conversion` pointing at `/convert`.

use serde_json::{json, Value as Json};

use crate::config::{self, files, Catalog, ConfigSource};

/// The label on each CRD written with a conversion webhook: the CA
/// injection of the kustomize components selects CRDs by it.
pub const CONVERSION_LABEL: &str = "celhook.dev/conversion-webhook";

/// Where the API server reaches celhook, and how it treats failures.
#[derive(Debug, Clone)]
pub struct WebhookOptions {
    /// Name of the ValidatingWebhookConfiguration.
    pub name: String,
    /// Namespace of celhook's Service (also left out of validation, with
    /// kube-system, so that celhook can always be repaired).
    pub namespace: String,
    /// Name of celhook's Service.
    pub service: String,
    /// Port of the Service.
    pub port: u16,
    /// `Fail` or `Ignore`.
    pub failure_policy: String,
    /// How long the API server waits, 1 to 30 seconds.
    pub timeout_seconds: u32,
    /// The CA certificate (PEM) the API server verifies celhook with; none
    /// when a kustomize component or cert-manager's cainjector adds it.
    pub ca_bundle: Option<String>,
}

impl Default for WebhookOptions {
    fn default() -> Self {
        Self {
            name: "celhook".into(),
            namespace: "celhook".into(),
            service: "celhook".into(),
            port: 443,
            failure_policy: "Fail".into(),
            timeout_seconds: 5,
            ca_bundle: None,
        }
    }
}

/// The documents as one YAML stream, or why they cannot be written.
pub fn render(source: &ConfigSource, opts: &WebhookOptions) -> Result<String, String> {
    if !(1..=30).contains(&opts.timeout_seconds) {
        return Err(format!(
            "--timeout-seconds {}: the API server accepts 1 to 30",
            opts.timeout_seconds
        ));
    }
    if !matches!(opts.failure_policy.as_str(), "Fail" | "Ignore") {
        return Err(format!(
            "--failure-policy {:?}: must be Fail or Ignore",
            opts.failure_policy
        ));
    }
    let loaded = config::load(source);
    if loaded.report.has_errors() {
        let lines: Vec<String> = config::report::problems(&loaded.report)
            .map(|p| config::report::format_problem(&p))
            .collect();
        return Err(format!("the config does not load:\n{}", lines.join("\n")));
    }
    let crds = served_crds(source, &loaded.catalog)?;
    if crds.is_empty() {
        return Err("the config serves no CustomResourceDefinition".into());
    }
    let mut docs = vec![validating(&crds, opts)];
    for crd in crds.into_iter().filter(|c| c.converted) {
        docs.push(with_conversion(crd.doc, opts));
    }
    let mut out = String::from(
        "# Written by `celhook webhook-config` from the config celhook serves; write it again when the config changes.\n",
    );
    for doc in &docs {
        let text = serde_norway::to_string(doc).map_err(|e| format!("writing YAML: {e}"))?;
        out.push_str("---\n");
        out.push_str(&text);
    }
    Ok(out)
}

/// A CRD the catalog serves, as written in the config.
struct ServedCrd {
    name: String,
    group: String,
    plural: String,
    scope: String,
    status: bool,
    converted: bool,
    doc: Json,
}

/// The config's CRD documents that the catalog serves, by name.
fn served_crds(source: &ConfigSource, catalog: &Catalog) -> Result<Vec<ServedCrd>, String> {
    let mut crds = Vec::new();
    for (file, text) in &files::texts(source)? {
        // The load above succeeded, so every document parses.
        for doc in config::parse_documents(file, text).into_iter().flatten() {
            collect(doc, catalog, &mut crds);
        }
    }
    crds.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(crds)
}

fn collect(doc: Json, catalog: &Catalog, out: &mut Vec<ServedCrd>) {
    let text = |p: &str| {
        doc.pointer(p)
            .and_then(Json::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    match (text("/apiVersion").as_str(), text("/kind").as_str()) {
        ("v1", "List") => {
            if let Some(Json::Array(items)) = doc.get("items") {
                for item in items.clone() {
                    collect(item, catalog, out);
                }
            }
        }
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => {
            let (name, group, kind) = (
                text("/metadata/name"),
                text("/spec/group"),
                text("/spec/names/kind"),
            );
            if catalog.crd_of(&group, &kind) != Some(name.as_str()) {
                return;
            }
            let status = doc
                .pointer("/spec/versions")
                .and_then(Json::as_array)
                .is_some_and(|vs| {
                    vs.iter()
                        .any(|v| v.pointer("/subresources/status").is_some())
                });
            out.push(ServedCrd {
                converted: catalog.conversion(&group, &kind).is_some(),
                plural: text("/spec/names/plural"),
                scope: text("/spec/scope"),
                name,
                group,
                status,
                doc,
            });
        }
        _ => {}
    }
}

fn client_config(opts: &WebhookOptions, path: &str) -> Json {
    let mut config = json!({
        "service": {
            "name": opts.service,
            "namespace": opts.namespace,
            "path": path,
            "port": opts.port,
        }
    });
    if let Some(pem) = &opts.ca_bundle {
        use base64::Engine as _;
        config["caBundle"] = base64::engine::general_purpose::STANDARD.encode(pem).into();
    }
    config
}

fn validating(crds: &[ServedCrd], opts: &WebhookOptions) -> Json {
    let rules: Vec<Json> = crds
        .iter()
        .map(|crd| {
            let mut resources = vec![crd.plural.clone()];
            if crd.status {
                resources.push(format!("{}/status", crd.plural));
            }
            json!({
                "apiGroups": [crd.group],
                "apiVersions": ["*"],
                "resources": resources,
                "operations": ["CREATE", "UPDATE"],
                "scope": crd.scope,
            })
        })
        .collect();
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": opts.name, "labels": {"app.kubernetes.io/name": "celhook"}},
        "webhooks": [{
            "name": "validate.celhook.io",
            "admissionReviewVersions": ["v1", "v1beta1"],
            "sideEffects": "None",
            "failurePolicy": opts.failure_policy,
            "timeoutSeconds": opts.timeout_seconds,
            // A request for any version of a resource is sent in a
            // version celhook serves (the API server converts it).
            "matchPolicy": "Equivalent",
            "namespaceSelector": {"matchExpressions": [{
                "key": "kubernetes.io/metadata.name",
                "operator": "NotIn",
                "values": ["kube-system", opts.namespace],
            }]},
            "rules": rules,
            "clientConfig": client_config(opts, "/validate"),
        }],
    })
}

fn with_conversion(mut crd: Json, opts: &WebhookOptions) -> Json {
    crd["spec"]["conversion"] = json!({
        "strategy": "Webhook",
        "webhook": {
            "conversionReviewVersions": ["v1", "v1beta1"],
            "clientConfig": client_config(opts, "/convert"),
        },
    });
    if !crd["metadata"]["labels"].is_object() {
        crd["metadata"]["labels"] = json!({});
    }
    crd["metadata"]["labels"][CONVERSION_LABEL] = "true".into();
    // Server-set fields of a CRD fetched from a cluster are not for apply.
    crd.as_object_mut().map(|o| o.remove("status"));
    crd
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docs(text: &str) -> Vec<Json> {
        text.split("\n---\n")
            .skip(1)
            .map(|d| serde_norway::from_str(d).expect("YAML"))
            .collect()
    }

    #[test]
    fn the_embedded_config_gets_a_rule_per_crd_and_conversion_for_the_converted() {
        let out = render(&ConfigSource::Embedded, &WebhookOptions::default()).expect("renders");
        let docs = docs(&format!("\n{out}"));
        let vwc = &docs[0];
        assert_eq!(vwc["kind"], "ValidatingWebhookConfiguration");
        let rules = vwc["webhooks"][0]["rules"].as_array().expect("rules");
        let groups: Vec<&str> = rules
            .iter()
            .map(|r| r["apiGroups"][0].as_str().unwrap_or_default())
            .collect();
        assert_eq!(
            groups,
            // By CRD name.
            [
                "example.com",
                "stable.example.com",
                "restaurant.programming-kubernetes.info"
            ]
        );
        assert_eq!(rules[1]["resources"], json!(["crontabs"]));
        assert_eq!(rules[1]["scope"], "Namespaced");
        assert_eq!(
            vwc["webhooks"][0]["clientConfig"]["service"]["path"],
            "/validate"
        );
        assert!(vwc["webhooks"][0]["clientConfig"].get("caBundle").is_none());
        // The two CRDs with conversion documents, with their conversion set.
        let converted: Vec<&str> = docs[1..]
            .iter()
            .map(|d| d["metadata"]["name"].as_str().unwrap_or_default())
            .collect();
        assert_eq!(
            converted,
            [
                "crontabs.example.com",
                "pizzas.restaurant.programming-kubernetes.info"
            ]
        );
        for crd in &docs[1..] {
            assert_eq!(crd["spec"]["conversion"]["strategy"], "Webhook");
            assert_eq!(
                crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["path"],
                "/convert"
            );
            assert_eq!(crd["metadata"]["labels"][CONVERSION_LABEL], "true");
            assert!(crd["spec"]["versions"]
                .as_array()
                .is_some_and(|v| v.len() > 1));
        }
    }

    #[test]
    fn status_subresources_options_and_ca_bundle_are_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let crd = config::embedded::FILES[0].1.replace(
            "      served: true\n",
            "      served: true\n      subresources:\n        status: {}\n",
        );
        assert_ne!(
            crd,
            config::embedded::FILES[0].1,
            "the fixture has `served: true`"
        );
        std::fs::write(dir.path().join("crd.yaml"), crd).expect("write");
        let opts = WebhookOptions {
            namespace: "policy".into(),
            failure_policy: "Ignore".into(),
            timeout_seconds: 10,
            ca_bundle: Some("-----BEGIN CERTIFICATE-----\n".into()),
            ..WebhookOptions::default()
        };
        let out = render(&ConfigSource::Dir(dir.path().into()), &opts).expect("renders");
        let vwc = &docs(&format!("\n{out}"))[0];
        let hook = &vwc["webhooks"][0];
        assert_eq!(
            hook["rules"][0]["resources"],
            json!(["crontabs", "crontabs/status"])
        );
        assert_eq!(hook["failurePolicy"], "Ignore");
        assert_eq!(hook["timeoutSeconds"], 10);
        assert_eq!(
            hook["namespaceSelector"]["matchExpressions"][0]["values"],
            json!(["kube-system", "policy"])
        );
        assert_eq!(hook["clientConfig"]["service"]["namespace"], "policy");
        assert_eq!(
            hook["clientConfig"]["caBundle"],
            "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg=="
        );
    }

    #[test]
    fn bad_options_and_bad_configs_are_refused() {
        let opts = WebhookOptions {
            timeout_seconds: 31,
            ..WebhookOptions::default()
        };
        let err = render(&ConfigSource::Embedded, &opts).expect_err("31 s");
        assert!(err.contains("1 to 30"), "{err}");
        let opts = WebhookOptions {
            failure_policy: "fail".into(),
            ..WebhookOptions::default()
        };
        assert!(render(&ConfigSource::Embedded, &opts)
            .expect_err("case")
            .contains("Fail or Ignore"));
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("bad.yaml"), "kind: [").expect("write");
        let err = render(
            &ConfigSource::Dir(dir.path().into()),
            &WebhookOptions::default(),
        )
        .expect_err("bad");
        assert!(
            err.contains("does not load") && err.contains("bad.yaml"),
            "{err}"
        );
    }
}
