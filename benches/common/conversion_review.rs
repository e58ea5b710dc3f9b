//! The ConversionReview of issue 6, target 4 (10,000 objects of about 4 KiB
//! each), and the path `POST /convert` runs on it. Shared by the
//! `conversion/` group of benches/hot_path.rs and
//! examples/convert_peak_memory.rs (both include this file by path), so
//! that the time and the memory figures are of the same body.
//!
//! The objects are Pizzas of the embedded seed conversion
//! (manifests/examples/pizza-conversion.yaml): three in four are stored at
//! v1alpha1 and converted to v1beta1 (the toppings list becomes name and
//! quantity pairs through two CEL expressions, with the round trip the
//! lossless stash checks), one in four already is at v1beta1 and comes back
//! as it is: the mixed versions a list read after a storage-version change
//! brings.
//!
//! The CronTabs of the docs' webhook-conversion example (`hostPort` split
//! into `host` and `port`, one string expression each way, as in
//! tests/api/convert.rs) give the same measure where the conversion's
//! own work is small: how much the path costs besides the expressions.

use celhook::config::Catalog;
use celhook::conversion;
use celhook::review::{decode_conversion, OnePass, SuccessWriter, STREAM_AFTER};
use serde_json::{json, Value};

/// Objects in the review.
pub const OBJECTS: usize = 10_000;
/// Size each object is padded to, compact JSON.
pub const OBJECT_BYTES: usize = 4096;

const GROUP: &str = "restaurant.programming-kubernetes.info";
/// The review's desiredAPIVersion.
pub const DESIRED: &str = "restaurant.programming-kubernetes.info/v1beta1";

const NOTES: &str = "Bake at 250 C on the stone; slice in eight. ";

const TOPPINGS: [&str; 16] = [
    "mozzarella",
    "tomato",
    "basil",
    "salami",
    "mushroom",
    "onion",
    "olive",
    "pepper",
    "ham",
    "pineapple",
    "anchovy",
    "artichoke",
    "gorgonzola",
    "parmesan",
    "rocket",
    "garlic",
];

/// Pizza `i`: 16 toppings with 1 to 4 helpings each, in the shape of
/// `version` (`v1alpha1` repeats a topping per helping, grouped, so the
/// round trip through v1beta1 is lossless; `v1beta1` lists name and
/// quantity), with the metadata a stored object carries (labels, managed
/// fields, kubectl's last-applied annotation) and a notes annotation that
/// pads it to [`OBJECT_BYTES`].
pub fn pizza(i: usize, version: &str) -> Value {
    let helpings = |t: usize| (i + t) % 4 + 1;
    let toppings: Value = if version == "v1alpha1" {
        TOPPINGS
            .iter()
            .enumerate()
            .flat_map(|(t, name)| std::iter::repeat_n(*name, helpings(t)))
            .collect()
    } else {
        TOPPINGS
            .iter()
            .enumerate()
            .map(|(t, name)| json!({"name": name, "quantity": helpings(t)}))
            .collect()
    };
    let api_version = format!("{GROUP}/{version}");
    let name = format!("pizza-{i:05}");
    let spec = json!({"toppings": toppings});
    let applied = json!({
        "apiVersion": api_version, "kind": "Pizza",
        "metadata": {"name": name, "namespace": "pizza-crd"},
        "spec": spec
    });
    let mut object = json!({
        "apiVersion": api_version,
        "kind": "Pizza",
        "metadata": {
            "name": name,
            "namespace": "pizza-crd",
            "uid": format!("6a1c3e52-0b7d-4c1e-9f3a-{i:012}"),
            "resourceVersion": format!("{}", 180_000 + i),
            "generation": 1 + i % 3,
            "creationTimestamp": "2026-11-20T09:14:07Z",
            "labels": {"app.kubernetes.io/name": "pizza", "restaurant.example/branch": format!("b{}", i % 7)},
            "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": applied.to_string(),
            },
            "managedFields": [
                {"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": api_version,
                 "time": "2026-11-20T09:14:07Z", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:metadata": {"f:annotations": {".": {}, "f:kubectl.kubernetes.io/last-applied-configuration": {}},
                              "f:labels": {".": {}, "f:app.kubernetes.io/name": {}, "f:restaurant.example/branch": {}}},
                              "f:spec": {".": {}, "f:toppings": {}}}},
                {"manager": "pizza-controller", "operation": "Update", "apiVersion": api_version,
                 "time": "2026-11-20T09:14:09Z", "fieldsType": "FieldsV1", "subresource": "status",
                 "fieldsV1": {"f:status": {".": {}, "f:cost": {}}}}
            ]
        },
        "spec": spec,
        "status": {"cost": 8.5 + (i % 20) as f64 / 4.0}
    });
    let size = serde_json::to_vec(&object).map_or(0, |v| v.len());
    // `,"restaurant.example/notes":""` adds 30 bytes besides the text.
    let pad = OBJECT_BYTES.saturating_sub(size + 30);
    let notes = NOTES.repeat(pad / NOTES.len() + 1);
    object["metadata"]["annotations"]["restaurant.example/notes"] = json!(notes[..pad]);
    object
}

/// The compact body the API server would send: `n` Pizzas ([`OBJECTS`] for
/// the target), one in four at v1beta1 already, to be converted to
/// [`DESIRED`].
pub fn body(n: usize) -> Vec<u8> {
    let objects: Vec<Value> = (0..n)
        .map(|i| pizza(i, if i % 4 == 3 { "v1beta1" } else { "v1alpha1" }))
        .collect();
    api_order("7f0e1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b", DESIRED, &objects)
}

/// A review as the API server writes it: kind and apiVersion (Go's
/// `TypeMeta`), then the request's uid and desiredAPIVersion before its
/// objects (serde_json's `Value` would sort the keys, putting uid last).
fn api_order(uid: &str, desired: &str, objects: &[Value]) -> Vec<u8> {
    let mut out = format!(
        r#"{{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","request":{{"uid":{},"desiredAPIVersion":{},"objects":["#,
        json!(uid),
        json!(desired)
    )
    .into_bytes();
    for (i, object) in objects.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut out, object).expect("the object serializes");
    }
    out.extend_from_slice(b"]}}");
    out
}

/// CronTab `i` at example.com/v1beta1, about [`OBJECT_BYTES`]: most of it
/// kubectl's last-applied annotation, as on real objects.
pub fn crontab(i: usize) -> Value {
    let mut object = json!({
        "apiVersion": "example.com/v1beta1", "kind": "CronTab",
        "metadata": {"name": format!("crontab-{i:05}"), "namespace": "default",
                     "uid": format!("0d9e8f7a-6b5c-4d3e-8f2a-{i:012}"), "resourceVersion": format!("{}", 90_000 + i),
                     "labels": {"app": "cron"}, "annotations": {}},
        "hostPort": format!("host-{i}.example.com:{}", 1000 + i % 60_000)
    });
    let with_pad = |object: &mut Value, xs: usize| {
        let applied = format!(
            "{{\"apiVersion\":\"example.com/v1beta1\",\"kind\":\"CronTab\",\"pad\":\"{}\"}}",
            "x".repeat(xs)
        );
        object["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] =
            json!(applied);
        serde_json::to_vec(object).map_or(0, |v| v.len())
    };
    // The x's need no escaping: one correction makes the size exact.
    let size = with_pad(&mut object, 0);
    with_pad(&mut object, OBJECT_BYTES.saturating_sub(size));
    object
}

/// `n` CronTabs at v1beta1 to be converted to example.com/v1.
pub fn crontab_body(n: usize) -> Vec<u8> {
    let objects: Vec<Value> = (0..n).map(crontab).collect();
    api_order(
        "1b2c3d4e-5f60-4718-9a0b-1c2d3e4f5a6b",
        "example.com/v1",
        &objects,
    )
}

/// What `routes::convert` does between the body and the answer's bytes
/// (less its metrics and tracing): decode the review, parse and convert
/// each object in turn, write it into the answer and free it. Returns the
/// whole answer's chunks; [`convert_into`] hands them over as they are
/// ready, as the server sends them.
pub fn convert(catalog: &Catalog, body: &[u8]) -> Vec<Vec<u8>> {
    let mut chunks = Vec::new();
    convert_into(catalog, body, |chunk| chunks.push(chunk));
    chunks
}

/// [`convert`], with the chunks given to `send` as the server sends them:
/// none until the answer passes `STREAM_AFTER` bytes, then each as it is
/// full, then the rest at the end.
pub fn convert_into(catalog: &Catalog, body: &[u8], mut send: impl FnMut(Vec<u8>)) {
    // In one pass, as the server reads a review in the API server's order.
    if let Some(mut one) = OnePass::start(body) {
        let desired = one.desired_api_version().to_owned();
        let mut writer = SuccessWriter::new(one.version(), one.uid()).expect("the answer starts");
        conversion::convert_each(catalog, &desired, &mut one, |object| {
            writer.push(&object);
            if writer.len() >= STREAM_AFTER {
                writer.take_ready().into_iter().for_each(&mut send);
            }
            Ok(())
        })
        .expect("every bench object converts");
        one.finish().expect("the bench review is whole");
        writer.finish().into_iter().for_each(send);
        return;
    }
    let (version, req) = decode_conversion(body).expect("the bench review decodes");
    let mut writer = SuccessWriter::new(version, &req.uid).expect("the answer starts");
    conversion::convert_each(
        catalog,
        &req.desired_api_version,
        req.parsed_objects(),
        |object| {
            writer.push(&object);
            if writer.len() >= STREAM_AFTER {
                writer.take_ready().into_iter().for_each(&mut send);
            }
            Ok(())
        },
    )
    .expect("every bench object converts");
    writer.finish().into_iter().for_each(send);
}

/// The converted objects of a Success answer, checked to be `n`.
fn answer_objects(chunks: &[Vec<u8>], n: usize) -> Vec<Value> {
    let mut answer: Value = serde_json::from_slice(&chunks.concat()).expect("the answer is JSON");
    assert_eq!(answer["response"]["result"]["status"], "Success");
    let out = answer["response"]["convertedObjects"].take();
    let Value::Array(out) = out else {
        panic!("convertedObjects is not a list: {out}");
    };
    assert_eq!(out.len(), n);
    out
}

/// Checks one answer of [`body`], outside any timing: every object
/// converted, in order, with the toppings of v1beta1. A bench of a path
/// that fails early would measure nothing.
pub fn check_answer(chunks: &[Vec<u8>], n: usize) {
    for (i, o) in answer_objects(chunks, n).iter().enumerate() {
        assert_eq!(o["apiVersion"], DESIRED, "object {i}");
        assert_eq!(o["metadata"]["name"], format!("pizza-{i:05}"));
        let want = pizza(i, "v1beta1");
        assert_eq!(o["spec"], want["spec"], "object {i}");
    }
}

/// Checks one answer of [`crontab_body`]: host and port split, in order.
pub fn check_crontab_answer(chunks: &[Vec<u8>], n: usize) {
    for (i, o) in answer_objects(chunks, n).iter().enumerate() {
        assert_eq!(o["apiVersion"], "example.com/v1", "object {i}");
        assert_eq!(o["host"], format!("host-{i}.example.com"), "object {i}");
        assert_eq!(o["port"], format!("{}", 1000 + i % 60_000), "object {i}");
    }
}
