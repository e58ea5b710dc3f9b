//! The perf fixtures (tests/fixtures/perf/, the peer-bench workload) are
//! what the benchmarks and load tests claim they are: the CRDs load with
//! the stated rules, the workload's object passes them, and the rules
//! really run (a broken object is denied by the rule that checks it).

use celhook::config::{self, Catalog, ConfigSource};
use celhook::review::decode_admission;
use celhook::validation::Node;
use serde_json::{json, Value};

use crate::common;

fn catalog(dir: &str) -> Catalog {
    let loaded = config::load(&ConfigSource::Dir(common::fixture_path(&format!(
        "perf/{dir}"
    ))));
    assert!(!loaded.report.has_errors(), "{dir}: {:?}", loaded.report);
    loaded.catalog
}

fn rules_of(node: &Node) -> Vec<String> {
    let mut out: Vec<String> = node
        .rules
        .iter()
        .filter_map(|r| r.message.clone())
        .collect();
    for (_, child) in &node.properties {
        out.extend(rules_of(child));
    }
    if let Some(el) = &node.element {
        out.extend(rules_of(el));
    }
    out
}

fn rule_ids(catalog: &Catalog) -> Vec<String> {
    let v = catalog
        .lookup("platform.example.com", "v1alpha1", "AppDeployment")
        .expect("AppDeployment v1alpha1 is served");
    rules_of(&v.validator.root)
}

/// The answer, from the objects decoded whole and as the server decodes
/// them (what the rules read), which must agree.
fn answer(catalog: &Catalog, review: &Value) -> Value {
    let body = serde_json::to_vec(review).expect("JSON");
    let (_, req) = decode_admission(&body).expect("the fixture decodes");
    let res = celhook::admission::answer(catalog, &req);
    let policy = celhook::admission::Policy::default();
    let (_, planned) = celhook::admission::decode(catalog, &policy, &body).expect("decodes");
    assert_eq!(res, celhook::admission::answer(catalog, &planned));
    json!({"allowed": res.allowed, "message": res.status.map(|s| s.message)})
}

#[test]
fn the_crds_carry_the_stated_rules() {
    let core = rule_ids(&catalog("core"));
    assert_eq!(core.len(), 19, "{core:?}");
    assert!(core.contains(&"ports-unique-names".to_owned()));
    assert!(core.contains(&"ports-not-removed".to_owned()));
    assert!(
        !core.iter().any(|r| r.starts_with("labels-")),
        "root labels are invisible to CRD rules"
    );
    assert!(rule_ids(&catalog("norules")).is_empty());
    let lib = rule_ids(&catalog("k8slib"));
    assert_eq!(
        lib.len() - core.len(),
        lib.iter().filter(|r| r.starts_with("k8s-")).count()
    );
    assert!(lib.contains(&"k8s-is-sorted".to_owned()), "{lib:?}");
}

#[test]
fn the_workload_passes_every_rule_on_create_and_update() {
    for dir in ["core", "norules", "k8slib"] {
        let cat = catalog(dir);
        for review in [
            "perf/review-create.json",
            "perf/review-update.json",
            "perf/review-update-applied.json",
        ] {
            let a = answer(&cat, &common::fixture(review));
            assert_eq!(a["allowed"], true, "{dir} {review}: {a}");
        }
    }
}

#[test]
fn the_rules_run_a_broken_object_is_denied_by_its_rule() {
    let cat = catalog("core");
    let a = answer(&cat, &common::fixture("perf/review-create-invalid.json"));
    assert_eq!(a["allowed"], false);
    assert!(
        a["message"]
            .as_str()
            .is_some_and(|m| m.ends_with("replicas-in-range")),
        "{a}"
    );

    let cases: [(&str, Value, &str); 4] = [
        ("/spec/image", json!("docker.io/checkout:1"), "image-prefix"),
        ("/spec/logLevel", json!("trace"), "log-level-enum"),
        ("/spec/ports/3/name", json!("http"), "ports-unique-names"),
        (
            "/spec/serviceAccountName",
            json!("default"),
            "sa-name-concat",
        ),
    ];
    for (pointer, value, rule) in cases {
        let mut review = common::fixture("perf/review-create.json");
        *review["request"]["object"]
            .pointer_mut(pointer)
            .expect("the field exists") = value;
        let a = answer(&cat, &review);
        assert_eq!(a["allowed"], false, "{rule}: {a}");
        assert!(
            a["message"].as_str().is_some_and(|m| m.contains(rule)),
            "{rule}: {a}"
        );
    }

    // A transition rule: renaming the app on UPDATE.
    let mut review = common::fixture("perf/review-update.json");
    review["request"]["object"]["spec"]["appName"] = json!("checkout2");
    review["request"]["object"]["spec"]["serviceAccountName"] = json!("checkout2-sa");
    let a = answer(&cat, &review);
    assert!(
        a["message"]
            .as_str()
            .is_some_and(|m| m.contains("appname-immutable")),
        "{a}"
    );
}
