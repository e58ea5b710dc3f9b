//! Rules on a built-in kind: 20 rules of a `ValidationRules` document on a
//! 10 KiB apps/v1 Deployment, beside the same 20 rules written into a CRD
//! whose schema is the Deployment's (bounded so that the CRD's cost
//! estimate admits them), each through the whole hot path (decode, look up,
//! evaluate, encode), and the serde_json parse of the same body. Then a
//! ValidatingAdmissionPolicy of 10 validations beside the same 10 checks
//! as a rules document, on the same Deployment.
//!
//! ```text
//! cargo bench --bench any_kind            # both groups
//! cargo bench --bench any_kind -- policy  # the policy beside the rules document
//! ```

use std::hint::black_box;
use std::time::Duration;

use celhook::config::{self, Catalog};
use celhook::review::encode_admission;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use serde_json::{json, Value};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// (path, rule) of the 20 rules.
const RULES: &[(&str, &str)] = &[
    ("metadata", "has(self.labels) && 'team' in self.labels"),
    ("spec.replicas", "self <= 50"),
    ("spec", "!has(self.paused) || !self.paused"),
    ("spec.strategy", "!has(self.type) || self.type in ['RollingUpdate', 'Recreate']"),
    ("spec.template.metadata", "has(self.labels) && 'app' in self.labels"),
    ("spec.template.spec", "!has(self.hostNetwork) || !self.hostNetwork"),
    ("spec.template.spec", "!has(self.hostPID) || !self.hostPID"),
    ("spec.template.spec", "self.containers.size() <= 10"),
    ("spec.template.spec", "!has(self.serviceAccountName) || self.serviceAccountName != 'default'"),
    ("spec.template.spec.containers[*]", "!self.image.endsWith(':latest')"),
    ("spec.template.spec.containers[*]", "self.image.contains('/')"),
    ("spec.template.spec.containers[*]", "has(self.resources) && has(self.resources.limits) && 'memory' in self.resources.limits"),
    ("spec.template.spec.containers[*]", "has(self.resources) && has(self.resources.requests) && 'cpu' in self.resources.requests"),
    ("spec.template.spec.containers[*]", "!has(self.securityContext) || !has(self.securityContext.privileged) || !self.securityContext.privileged"),
    ("spec.template.spec.containers[*]", "self.name.matches('^[a-z][a-z0-9-]*$')"),
    ("spec.template.spec.containers[*]", "!has(self.ports) || self.ports.all(p, p.containerPort > 1024)"),
    ("spec.template.spec.containers[*]", "!oldSelf.image.contains('@') || self.image.contains('@')"),
    ("spec.template.spec.containers[*].ports[*]", "!has(self.protocol) || self.protocol in ['TCP', 'UDP']"),
    ("spec.template.spec.containers[*].ports[*]", "self.containerPort <= 65535"),
    ("spec.template.spec.containers[*].env[*]", "!self.name.startsWith('AWS_')"),
];

fn rules_document() -> Value {
    let rules: Vec<Value> = RULES
        .iter()
        .map(|(path, rule)| json!({"path": path, "x-kubernetes-validations": [{"rule": rule}]}))
        .collect();
    json!({
        "apiVersion": "celhook.dev/v1alpha1",
        "kind": "ValidationRules",
        "metadata": {"name": "bench"},
        "spec": {"target": {"group": "apps", "kind": "Deployment"}, "rules": rules}
    })
}

/// Bounds every list, map and string, as a CRD author must for the cost
/// estimate.
fn bound(schema: &mut Value) {
    let Some(node) = schema.as_object_mut() else {
        return;
    };
    match node.get("type").and_then(Value::as_str) {
        Some("array") => {
            node.insert("maxItems".into(), json!(32));
        }
        Some("string") => {
            node.insert("maxLength".into(), json!(256));
        }
        Some("object") if node.contains_key("additionalProperties") => {
            node.insert("maxProperties".into(), json!(32));
        }
        _ => {}
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = node.get_mut(key) {
            bound(child);
        }
    }
    if let Some(Value::Object(props)) = node.get_mut("properties") {
        for child in props.values_mut() {
            bound(child);
        }
    }
}

/// The same rules written into a CRD with the Deployment's schema.
fn crd() -> Value {
    let mut schema = celhook::kinds::schema("apps", "v1", "Deployment", celhook::kinds::NEWEST)
        .expect("Deployment is built in");
    bound(&mut schema);
    for (path, rule) in RULES {
        let mut node = &mut schema;
        for step in path.split('.') {
            let (name, each) = match step.strip_suffix("[*]") {
                Some(name) => (name, true),
                None => (step, false),
            };
            node = &mut node["properties"][name];
            if each {
                node = &mut node["items"];
            }
        }
        let list = node
            .as_object_mut()
            .expect("a schema node")
            .entry("x-kubernetes-validations")
            .or_insert_with(|| json!([]));
        list.as_array_mut()
            .expect("a list")
            .push(json!({"rule": rule}));
    }
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "deployments.bench.example.com"},
        "spec": {
            "group": "bench.example.com",
            "names": {"kind": "Deployment", "plural": "deployments"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true,
                          "schema": {"openAPIV3Schema": schema}}]
        }
    })
}

fn container(i: usize) -> Value {
    json!({
        "name": format!("app-{i}"),
        "image": format!("registry.example.com/team/app-{i}:1.{i}.0"),
        "ports": [{"name": "http", "containerPort": 8080 + i, "protocol": "TCP"},
                  {"name": "metrics", "containerPort": 9090 + i, "protocol": "TCP"}],
        "env": (0..8).map(|e| json!({"name": format!("SETTING_{e}"), "value": format!("value-{i}-{e}")})).collect::<Vec<_>>(),
        "resources": {"limits": {"memory": "256Mi", "cpu": "500m"}, "requests": {"memory": "128Mi", "cpu": "100m"}},
        "securityContext": {"privileged": false, "runAsNonRoot": true},
        "volumeMounts": [{"name": "data", "mountPath": format!("/data/{i}")}],
    })
}

/// A Deployment of about 10 KiB.
fn deployment(api_version: &str) -> Value {
    json!({
        "apiVersion": api_version,
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop",
                     "labels": {"team": "shop", "app": "web"},
                     "annotations": {"note": "x".repeat(5000)}},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate"},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "serviceAccountName": "web",
                    "containers": (0..6).map(container).collect::<Vec<_>>(),
                    "volumes": [{"name": "data", "emptyDir": {}}]
                }
            }
        }
    })
}

fn review(group: &str, object: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "bench",
            "kind": {"group": group, "version": "v1", "kind": "Deployment"},
            "resource": {"group": group, "version": "v1", "resource": "deployments"},
            "name": "web", "namespace": "shop", "operation": "CREATE",
            "userInfo": {"username": "dev", "groups": ["system:authenticated"]},
            "object": object
        }
    }))
    .expect("JSON")
}

fn hot_path(catalog: &Catalog, body: &[u8]) -> Vec<u8> {
    let policy = celhook::admission::Policy::default();
    let (version, req) = celhook::admission::decode(catalog, &policy, body).expect("decodes");
    let res = celhook::admission::answer(catalog, &req);
    encode_admission(version, &res).expect("encodes")
}

fn load(name: &str, doc: &Value) -> Catalog {
    let text = doc.to_string();
    let loaded = config::load_texts(&[(name, text.as_str())]);
    assert!(
        !loaded.report.has_errors(),
        "{}",
        config::report::render_text(&loaded.report)
    );
    loaded.catalog
}

fn any_kind(c: &mut Criterion) {
    let document = load("rules.json", &rules_document());
    let as_crd = load("crd.json", &crd());
    let built_in = review("apps", deployment("apps/v1"));
    let custom = review("bench.example.com", deployment("bench.example.com/v1"));
    assert!(built_in.len() > 9 * 1024, "{} bytes", built_in.len());
    for (catalog, body) in [(&document, &built_in), (&as_crd, &custom)] {
        let out: Value = serde_json::from_slice(&hot_path(catalog, body)).expect("JSON");
        assert_eq!(out["response"]["allowed"], true, "{out}");
    }
    // Both really run the rules: a bad container is denied by both.
    let mut bad = deployment("apps/v1");
    bad["spec"]["template"]["spec"]["containers"][2]["image"] = json!("app:latest");
    let out: Value =
        serde_json::from_slice(&hot_path(&document, &review("apps", bad))).expect("JSON");
    assert_eq!(out["response"]["allowed"], false, "{out}");

    let mut g = c.benchmark_group("any_kind");
    g.throughput(Throughput::Bytes(built_in.len() as u64));
    g.bench_function("rules_document_deployment_20_rules", |b| {
        b.iter(|| hot_path(&document, black_box(&built_in)))
    });
    g.bench_function("crd_deployment_20_rules", |b| {
        b.iter(|| hot_path(&as_crd, black_box(&custom)))
    });
    g.bench_function("serde_json_parse", |b| {
        b.iter(|| serde_json::from_slice::<Value>(black_box(&built_in)).expect("JSON"))
    });
    g.finish();
}

/// (validation of a policy, the same check as a rules document's path and rule).
const CHECKS: &[(&str, &str, &str)] = &[
    ("has(object.metadata.labels) && 'team' in object.metadata.labels", "metadata", "has(self.labels) && 'team' in self.labels"),
    ("object.spec.replicas <= 50", "spec.replicas", "self <= 50"),
    ("!has(object.spec.paused) || !object.spec.paused", "spec", "!has(self.paused) || !self.paused"),
    ("object.spec.template.spec.containers.size() <= 10", "spec.template.spec", "self.containers.size() <= 10"),
    ("!has(object.spec.template.spec.hostNetwork) || !object.spec.template.spec.hostNetwork", "spec.template.spec", "!has(self.hostNetwork) || !self.hostNetwork"),
    ("object.spec.template.spec.containers.all(c, !c.image.endsWith(':latest'))", "spec.template.spec.containers[*]", "!self.image.endsWith(':latest')"),
    ("object.spec.template.spec.containers.all(c, c.image.contains('/'))", "spec.template.spec.containers[*]", "self.image.contains('/')"),
    ("object.spec.template.spec.containers.all(c, has(c.resources) && has(c.resources.limits) && 'memory' in c.resources.limits)", "spec.template.spec.containers[*]", "has(self.resources) && has(self.resources.limits) && 'memory' in self.resources.limits"),
    ("object.spec.template.spec.containers.all(c, c.name.matches('^[a-z][a-z0-9-]*$'))", "spec.template.spec.containers[*]", "self.name.matches('^[a-z][a-z0-9-]*$')"),
    ("object.spec.template.spec.containers.all(c, !has(c.ports) || c.ports.all(p, p.containerPort > 1024))", "spec.template.spec.containers[*]", "!has(self.ports) || self.ports.all(p, p.containerPort > 1024)"),
];

/// The policy and its binding, as two documents of one file.
fn policy() -> String {
    let validations: Vec<Value> = CHECKS
        .iter()
        .map(|(v, _, _)| json!({"expression": v}))
        .collect();
    let policy = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "bench"},
        "spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]},
            "validations": validations,
        }
    });
    let binding = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "bench"},
        "spec": {"policyName": "bench", "validationActions": ["Deny"]}
    });
    format!("{policy}\n---\n{binding}\n")
}

fn policy_vs_rules(c: &mut Criterion) {
    let text = policy();
    let loaded = config::load_texts(&[("policy.yaml", text.as_str())]);
    assert!(
        !loaded.report.has_errors(),
        "{}",
        config::report::render_text(&loaded.report)
    );
    let as_policy = loaded.catalog;
    let rules: Vec<Value> = CHECKS
        .iter()
        .map(|(_, path, rule)| json!({"path": path, "x-kubernetes-validations": [{"rule": rule}]}))
        .collect();
    let mut doc = rules_document();
    doc["spec"]["rules"] = Value::Array(rules);
    let as_rules = load("rules.json", &doc);
    let body = review("apps", deployment("apps/v1"));
    let mut bad = deployment("apps/v1");
    bad["spec"]["template"]["spec"]["containers"][2]["image"] = json!("app:latest");
    let bad = review("apps", bad);
    for catalog in [&as_policy, &as_rules] {
        let ok: Value = serde_json::from_slice(&hot_path(catalog, &body)).expect("JSON");
        assert_eq!(ok["response"]["allowed"], true, "{ok}");
        let denied: Value = serde_json::from_slice(&hot_path(catalog, &bad)).expect("JSON");
        assert_eq!(denied["response"]["allowed"], false, "{denied}");
    }
    let mut g = c.benchmark_group("policy");
    g.throughput(Throughput::Bytes(body.len() as u64));
    g.bench_function("policy_deployment_10_validations", |b| {
        b.iter(|| hot_path(&as_policy, black_box(&body)))
    });
    g.bench_function("rules_document_deployment_10_rules", |b| {
        b.iter(|| hot_path(&as_rules, black_box(&body)))
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(40);
    targets = any_kind, policy_vs_rules
}
criterion_main!(benches);
