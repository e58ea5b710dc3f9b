//! The per-request hot path on the peer workload (tests/fixtures/perf/, made
//! from ../shared/peer-bench/workload.json by scripts/gen-perf-fixtures.py),
//! so that the figures line up with the peer CEL engines'.
//!
//! ```text
//! cargo bench --bench hot_path                 # everything (about 5 minutes)
//! cargo bench --bench hot_path -- target1/     # one group; criterion filters by name
//! ```
//!
//! Groups (criterion writes each estimate to
//! `$CARGO_TARGET_DIR/criterion/<group>/<bench>/new/estimates.json`, which
//! scripts/bench-ratios.sh reads):
//!
//! - `target1/`: the hot path as `routes::validate` runs it (decode the
//!   AdmissionReview body, find the compiled CRD, evaluate, encode the
//!   answer) for CREATE on the 17 core rules, UPDATE with the 2 transition
//!   rules, the same CRD without rules, and the serde_json parse of the same
//!   body and of the object alone (the peers' floor); UPDATE again on an
//!   object with the metadata `kubectl apply` leaves (`*_applied_*`).
//! - `rule/`: each rule alone, object already parsed (`Validator::validate`).
//! - `size/`: object size 1, 4, 16, 64 KiB with the rule work held fixed.
//! - `list/`: ports list length 4, 16, 64 (the rules iterate over it).
//! - `catalog/`: 1, 100 and 1,000 CRDs loaded: lookup alone and the hot path.
//! - `conversion/`: target 4, a 10,000-object ConversionReview of 4 KiB
//!   objects (benches/common/conversion_review.rs) as `routes::convert`
//!   runs it (`convert_10000`), and serde_json parsing the same body into a
//!   `Value` and serializing it (`serde_json_roundtrip_10000`); the same for
//!   10,000 CronTabs with a one-split conversion (`*_crontab_10000`). The
//!   peak memory is measured by examples/convert_peak_memory.rs.

#[path = "common/conversion_review.rs"]
mod conversion_review;
#[path = "common/review.rs"]
mod review;

use std::hint::black_box;
use std::time::Duration;

use arc_swap::ArcSwap;
use celhook::config::{self, Catalog, ConfigSource};
use celhook::review::{decode_admission, encode_admission};
use review::{body_of, catalog_dir, fixtures, hot_path, read_json, serde_json_roundtrip};

use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use serde_json::{json, Value};

/// The allocator the server runs with, so that measurements match it.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const GROUP: &str = "platform.example.com";
const VERSION: &str = "v1alpha1";
const KIND: &str = "AppDeployment";

/// The CRD of a fixture directory as JSON (the files are YAML documents).
fn read_crd(dir: &str) -> Value {
    let path = fixtures().join(dir).join("appdeployment.yaml");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_norway::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

/// Loads CRD documents into a catalog, through the same loader as `serve`.
fn catalog_of(docs: Vec<Value>) -> Catalog {
    let dir = tempfile::tempdir().expect("temp dir");
    let list = json!({"apiVersion": "v1", "kind": "List", "items": docs});
    std::fs::write(
        dir.path().join("crds.json"),
        serde_json::to_vec(&list).expect("JSON"),
    )
    .expect("writing the catalog file");
    let loaded = config::load(&ConfigSource::Dir(dir.path().to_owned()));
    assert!(
        !loaded.report.has_errors(),
        "bench CRDs must compile: {:?}",
        loaded.report
    );
    loaded.catalog
}

/// Checks once, outside the timing, that the path really allows or denies:
/// a bench of a path that fails early would measure nothing.
fn expect_allowed(catalog: &ArcSwap<Catalog>, body: &[u8], what: &str) {
    let out: Value = serde_json::from_slice(&hot_path(catalog, body)).expect("answer is JSON");
    assert_eq!(out["response"]["allowed"], true, "{what}: {out}");
}

fn all_rule_arrays(v: &mut Value, f: &mut impl FnMut(&mut Vec<Value>)) {
    match v {
        Value::Object(map) => {
            for (k, child) in map.iter_mut() {
                if k == "x-kubernetes-validations" {
                    if let Value::Array(rules) = child {
                        f(rules);
                    }
                } else {
                    all_rule_arrays(child, f);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| all_rule_arrays(i, f)),
        _ => {}
    }
}

/// The rule ids of a CRD (the generator puts each id in `message`).
fn rule_ids(crd: &Value) -> Vec<String> {
    let mut ids = Vec::new();
    let mut crd = crd.clone();
    all_rule_arrays(&mut crd, &mut |rules| {
        ids.extend(
            rules
                .iter()
                .filter_map(|r| r["message"].as_str().map(str::to_owned)),
        )
    });
    ids
}

/// The CRD with only the rule whose message is `id`.
fn only_rule(crd: &Value, id: &str) -> Value {
    let mut crd = crd.clone();
    all_rule_arrays(&mut crd, &mut |rules| {
        rules.retain(|r| r["message"] == id);
    });
    crd
}

fn target1(c: &mut Criterion) {
    let core = ArcSwap::from_pointee(catalog_dir("core"));
    let norules = ArcSwap::from_pointee(catalog_dir("norules"));
    let create = read_json("review-create.json");
    let update = read_json("review-update.json");
    let create_body = body_of(&create);
    let update_body = body_of(&update);
    let object_body = body_of(&create["request"]["object"]);
    expect_allowed(&core, &create_body, "create");
    expect_allowed(&core, &update_body, "update");
    expect_allowed(&norules, &create_body, "create, no rules");

    let mut g = c.benchmark_group("target1");
    g.throughput(Throughput::Bytes(create_body.len() as u64));
    g.bench_function("hot_path_create_17_rules", |b| {
        b.iter(|| hot_path(&core, black_box(&create_body)))
    });
    g.bench_function("hot_path_create_no_rules", |b| {
        b.iter(|| hot_path(&norules, black_box(&create_body)))
    });
    g.bench_function("serde_json_parse_body", |b| {
        b.iter(|| serde_json::from_slice::<Value>(black_box(&create_body)).expect("JSON"))
    });
    g.bench_function("decode_admission_create", |b| {
        b.iter(|| decode_admission(black_box(&create_body)).expect("decodes"))
    });
    let (version, req) = decode_admission(&create_body).expect("decodes");
    let cat = core.load();
    g.bench_function("review_create_17_rules", |b| {
        b.iter(|| celhook::admission::answer(&cat, black_box(&req)))
    });
    let allowed = celhook::admission::answer(&cat, &req);
    g.bench_function("encode_admission_allowed", |b| {
        b.iter(|| encode_admission(version, black_box(&allowed)).expect("encodes"))
    });
    g.throughput(Throughput::Bytes(object_body.len() as u64));
    g.bench_function("serde_json_parse_object", |b| {
        b.iter(|| serde_json::from_slice::<Value>(black_box(&object_body)).expect("JSON"))
    });
    g.throughput(Throughput::Bytes(update_body.len() as u64));
    g.bench_function("hot_path_update_19_rules", |b| {
        b.iter(|| hot_path(&core, black_box(&update_body)))
    });
    g.bench_function("serde_json_parse_update_body", |b| {
        b.iter(|| serde_json::from_slice::<Value>(black_box(&update_body)).expect("JSON"))
    });
    // The same UPDATE as an object `kubectl apply` and an operator manage
    // arrives: its last-applied annotation and managedFields, which no
    // rule reads (scripts/gen-applied-review.py).
    let applied_body = body_of(&read_json("review-update-applied.json"));
    expect_allowed(&core, &applied_body, "update, applied");
    g.throughput(Throughput::Bytes(applied_body.len() as u64));
    g.bench_function("hot_path_update_applied_19_rules", |b| {
        b.iter(|| hot_path(&core, black_box(&applied_body)))
    });
    g.bench_function("serde_json_parse_update_applied_body", |b| {
        b.iter(|| serde_json::from_slice::<Value>(black_box(&applied_body)).expect("JSON"))
    });
    g.finish();
}

fn per_rule(c: &mut Criterion) {
    let create = read_json("review-create.json");
    let update = read_json("review-update.json");
    let object = &celhook_json::Value::from(&create["request"]["object"]);
    let old = &celhook_json::Value::from(&update["request"]["oldObject"]);
    let mut g = c.benchmark_group("rule");
    for dir in ["core", "k8slib"] {
        let crd = read_crd(dir);
        for id in rule_ids(&crd) {
            // k8slib repeats the core rules; time those once.
            if dir == "k8slib" && !id.starts_with("k8s-") {
                continue;
            }
            let catalog = catalog_of(vec![only_rule(&crd, &id)]);
            let validator = &catalog
                .lookup(GROUP, VERSION, KIND)
                .expect("the CRD is loaded")
                .validator;
            // Transition rules run only with an old object.
            let old =
                (["appname-immutable", "ports-not-removed"].contains(&id.as_str())).then_some(old);
            let outcome = validator.validate(object, old);
            assert!(
                outcome.errors.is_empty() && outcome.warnings.is_empty(),
                "rule {id} must pass on the workload: {:?}",
                outcome.errors
            );
            g.bench_function(&id, |b| {
                b.iter(|| validator.validate(black_box(object), black_box(old)))
            });
        }
    }
    g.finish();
}

/// The workload object cut down to 3 ports (one the `metrics` port the
/// rules look for) and no labels, status, env or tolerations: about 1 KiB.
fn small_object(base: &Value) -> Value {
    let mut o = base.clone();
    o["metadata"] = json!({"name": "checkout-prod", "namespace": "payments"});
    if let Some(map) = o.as_object_mut() {
        map.remove("status");
    }
    let spec = &mut o["spec"];
    if let Some(map) = spec.as_object_mut() {
        for k in ["env", "tolerations", "nodeSelector", "probes", "resources"] {
            map.remove(k);
        }
    }
    spec["ports"] = json!([
        {"name": "http", "port": 8080, "protocol": "TCP"},
        {"name": "https", "port": 8443, "protocol": "TCP"},
        {"name": "metrics", "port": 9999, "protocol": "TCP"}
    ]);
    o
}

/// Pads `object` with `spec.env` entries (no rule reads them) to about `bytes`.
fn padded(object: &Value, bytes: usize) -> Value {
    let mut o = object.clone();
    let mut env = Vec::new();
    let mut i = 0;
    while serde_json::to_vec(&o).map(|v| v.len()).unwrap_or(0) < bytes {
        env.push(json!({"name": format!("PAD_{i:05}"), "value": "x".repeat(48)}));
        o["spec"]["env"] = Value::Array(env.clone());
        i += 1;
    }
    o
}

fn review_with(create: &Value, object: Value) -> Vec<u8> {
    let mut r = create.clone();
    r["request"]["object"] = object;
    body_of(&r)
}

fn size(c: &mut Criterion) {
    let core = ArcSwap::from_pointee(catalog_dir("core"));
    let create = read_json("review-create.json");
    let small = small_object(&create["request"]["object"]);
    let mut g = c.benchmark_group("size");
    for kib in [1usize, 4, 16, 64] {
        let object = padded(&small, kib * 1024);
        let body = review_with(&create, object);
        expect_allowed(&core, &body, &format!("{kib} KiB"));
        g.throughput(Throughput::Bytes(body.len() as u64));
        g.bench_with_input(BenchmarkId::new("hot_path", kib), &body, |b, body| {
            b.iter(|| hot_path(&core, black_box(body)))
        });
        g.bench_with_input(
            BenchmarkId::new("serde_json_parse", kib),
            &body,
            |b, body| b.iter(|| serde_json::from_slice::<Value>(black_box(body)).expect("JSON")),
        );
    }
    g.finish();
}

fn list(c: &mut Criterion) {
    let core = ArcSwap::from_pointee(catalog_dir("core"));
    let create = read_json("review-create.json");
    let small = small_object(&create["request"]["object"]);
    let mut g = c.benchmark_group("list");
    // Up to the schema's maxItems (64), as the API server admits no more.
    for n in [4usize, 16, 64] {
        let mut object = small.clone();
        let mut ports: Vec<Value> = (1..n)
            .map(|i| json!({"name": format!("p{i}"), "port": 1000 + i, "protocol": "TCP"}))
            .collect();
        ports.push(json!({"name": "metrics", "port": 9999, "protocol": "TCP"}));
        object["spec"]["ports"] = Value::Array(ports);
        let body = review_with(&create, object);
        expect_allowed(&core, &body, &format!("{n} ports"));
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::new("hot_path_ports", n), &body, |b, body| {
            b.iter(|| hot_path(&core, black_box(body)))
        });
    }
    g.finish();
}

fn catalog(c: &mut Criterion) {
    let crd = read_crd("core");
    let create = read_json("review-create.json");
    let body = body_of(&create);
    let mut g = c.benchmark_group("catalog");
    for n in [1usize, 100, 1000] {
        // n-1 other CRDs with the same rules in other groups, plus ours.
        let mut docs = vec![crd.clone()];
        for i in 1..n {
            let mut other = crd.clone();
            let group = format!("g{i}.example.com");
            other["metadata"]["name"] = json!(format!("appdeployments.{group}"));
            other["spec"]["group"] = json!(group);
            docs.push(other);
        }
        let catalog = ArcSwap::from_pointee(catalog_of(docs));
        assert_eq!(catalog.load().len(), n);
        expect_allowed(&catalog, &body, &format!("{n} CRDs"));
        g.bench_function(BenchmarkId::new("lookup", n), |b| {
            let cat = catalog.load();
            b.iter(|| {
                cat.lookup(black_box(GROUP), black_box(VERSION), black_box(KIND))
                    .is_some()
            })
        });
        g.bench_function(BenchmarkId::new("hot_path", n), |b| {
            b.iter(|| hot_path(&catalog, black_box(&body)))
        });
    }
    g.finish();
}

// === conversion ===

/// Target 4: the 10,000-object ConversionReview of 4 KiB Pizzas through the
/// /convert path, against serde_json parsing the same bytes into a `Value`
/// and serializing it again; then the same for 10,000 CronTabs, whose
/// conversion is one string split (the path's cost besides the
/// expressions). One iteration takes about a second, so the group has its
/// own short configuration.
fn conversion(c: &mut Criterion) {
    let loaded = config::load(&ConfigSource::Embedded);
    assert!(!loaded.report.has_errors(), "{:?}", loaded.report);
    let catalog = loaded.catalog;
    let body = conversion_review::body(conversion_review::OBJECTS);
    conversion_review::check_answer(
        &conversion_review::convert(&catalog, &body),
        conversion_review::OBJECTS,
    );

    let mut g = c.benchmark_group("conversion");
    // Flat sampling: the same iteration count in every sample (one, for a
    // run of about a second), not criterion's 1..=10 ramp of 55 iterations.
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(8))
        .throughput(Throughput::Bytes(body.len() as u64));
    g.bench_function("convert_10000", |b| {
        b.iter(|| conversion_review::convert(&catalog, black_box(&body)))
    });
    g.bench_function("serde_json_roundtrip_10000", |b| {
        b.iter(|| serde_json_roundtrip(black_box(&body)))
    });

    let crontabs = conversion_review::crontab_body(conversion_review::OBJECTS);
    conversion_review::check_crontab_answer(
        &conversion_review::convert(&catalog, &crontabs),
        conversion_review::OBJECTS,
    );
    g.throughput(Throughput::Bytes(crontabs.len() as u64));
    g.bench_function("convert_crontab_10000", |b| {
        b.iter(|| conversion_review::convert(&catalog, black_box(&crontabs)))
    });
    g.bench_function("serde_json_roundtrip_crontab_10000", |b| {
        b.iter(|| serde_json_roundtrip(black_box(&crontabs)))
    });
    g.finish();
}

criterion_group! {
    name = benches;
    // Short runs: the CPU is shared and ratios matter more than the last
    // percent of precision.
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(40);
    targets = target1, per_rule, size, list, catalog, conversion
}
criterion_main!(benches);
