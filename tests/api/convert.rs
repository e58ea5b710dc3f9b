//! `POST /convert` end to end: the real HTTPS server, the embedded seed
//! conversions (CronTab hostPort <-> host/port, Pizza toppings), both
//! ConversionReview versions, failures as the API server must see them and
//! bad bodies. The body limit, large and streamed answers and the metrics
//! are in `convert_bodies.rs`.
//!
//! Every Success answer is also checked by `api_server_accepts`, written
//! here independently of the server's own guard, with the API server's
//! rules for conversion answers.

use crate::common;

use celhook::config::{self, ConfigSource};
use celhook::server::ServeConfig;
use common::{client, post_raw, post_review, Http};
use reqwest::StatusCode;
use serde_json::{json, Value};

pub(crate) const REVIEW_V1: &str = "apiextensions.k8s.io/v1";
pub(crate) const REVIEW_V1BETA1: &str = "apiextensions.k8s.io/v1beta1";

pub(crate) fn review(api_version: &str, uid: &str, desired: &str, objects: Vec<Value>) -> Value {
    json!({
        "apiVersion": api_version,
        "kind": "ConversionReview",
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects}
    })
}

/// The two CronTabs of the docs' example ConversionReview.
pub(crate) fn docs_crontabs() -> Vec<Value> {
    vec![
        json!({
            "kind": "CronTab", "apiVersion": "example.com/v1beta1",
            "metadata": {"creationTimestamp": "2019-09-04T14:03:02Z", "name": "local-crontab",
                         "namespace": "default", "resourceVersion": "143",
                         "uid": "3415a7fc-162b-4300-b5da-fd6083580d66"},
            "hostPort": "localhost:1234"
        }),
        json!({
            "kind": "CronTab", "apiVersion": "example.com/v1beta1",
            "metadata": {"creationTimestamp": "2019-09-03T13:02:01Z", "name": "remote-crontab",
                         "resourceVersion": "12893", "uid": "359a83ec-b575-460d-b553-d859cedde8a0"},
            "hostPort": "example.com:2345"
        }),
    ]
}

pub(crate) fn pizza(api_version: &str, name: &str, toppings: Value) -> Value {
    json!({
        "apiVersion": api_version, "kind": "Pizza",
        "metadata": {"name": name, "namespace": "pizza-crd", "uid": format!("uid-{name}"),
                     "generation": 1, "resourceVersion": "18296"},
        "spec": {"toppings": toppings},
        "status": {"cost": 12.5}
    })
}

pub(crate) const PIZZA_V1ALPHA1: &str = "restaurant.programming-kubernetes.info/v1alpha1";
pub(crate) const PIZZA_V1BETA1: &str = "restaurant.programming-kubernetes.info/v1beta1";

/// The API server's checks of a conversion answer, from its documented
/// contract: same review version and kind, uid echoed, Success, one object
/// per input in order, desired apiVersion, same kind, metadata present with
/// the same name/namespace/uid, nothing but labels and annotations changed,
/// changed labels valid.
pub(crate) fn api_server_accepts(request: &Value, answer: &Value) -> Vec<Value> {
    assert_eq!(answer["apiVersion"], request["apiVersion"], "{answer}");
    assert_eq!(answer["kind"], "ConversionReview");
    let resp = &answer["response"];
    assert_eq!(resp["uid"], request["request"]["uid"]);
    assert_eq!(resp["result"]["status"], "Success", "{answer}");
    let inputs = request["request"]["objects"].as_array().expect("objects");
    let outputs = resp["convertedObjects"]
        .as_array()
        .expect("convertedObjects");
    assert_eq!(inputs.len(), outputs.len());
    let desired = &request["request"]["desiredAPIVersion"];
    let label_ok = |s: &str| {
        s.len() <= 63
            && (s.is_empty()
                || (s.starts_with(|c: char| c.is_ascii_alphanumeric())
                    && s.ends_with(|c: char| c.is_ascii_alphanumeric())
                    && s.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))))
    };
    for (i, (input, output)) in inputs.iter().zip(outputs).enumerate() {
        assert_eq!(&output["apiVersion"], desired, "object {i}");
        assert_eq!(output["kind"], input["kind"], "object {i}");
        let (old, new) = (&input["metadata"], &output["metadata"]);
        assert!(new.is_object(), "object {i} has metadata");
        let keys: std::collections::BTreeSet<&String> = old
            .as_object()
            .into_iter()
            .chain(new.as_object())
            .flat_map(|m| m.keys())
            .collect();
        for key in keys {
            if key != "labels" && key != "annotations" {
                assert_eq!(old[key], new[key], "object {i} metadata.{key}");
            }
        }
        if old["labels"] != new["labels"] {
            for (k, v) in new["labels"].as_object().into_iter().flatten() {
                assert!(
                    label_ok(k.rsplit('/').next().unwrap_or("")),
                    "label key {k}"
                );
                assert!(label_ok(v.as_str().expect("string label")), "label {k}={v}");
            }
        }
    }
    outputs.clone()
}

fn failure_message(answer: &Value, request: &Value) -> String {
    assert_eq!(answer["apiVersion"], request["apiVersion"], "{answer}");
    let resp = &answer["response"];
    assert_eq!(resp["uid"], request["request"]["uid"]);
    assert_eq!(resp["result"]["status"], "Failure", "{answer}");
    assert_eq!(resp["convertedObjects"], json!([]), "{answer}");
    resp["result"]["message"]
        .as_str()
        .expect("message")
        .to_owned()
}

pub(crate) async fn convert_ok(client: &reqwest::Client, url: &str, request: &Value) -> Vec<Value> {
    let answer = post_review(client, url, request).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    assert_eq!(answer.content_type.as_deref(), Some("application/json"));
    api_server_accepts(request, &answer.json())
}

pub(crate) async fn convert_failure(
    client: &reqwest::Client,
    url: &str,
    request: &Value,
) -> String {
    let answer = post_review(client, url, request).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    failure_message(&answer.json(), request)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crontab_converts_both_ways_in_both_review_versions() {
    let server = common::start().await;
    let url = common::url(&server, "/convert");
    for http in common::BOTH {
        let client = client(&server, http);
        for review_version in [REVIEW_V1, REVIEW_V1BETA1] {
            let request = review(
                review_version,
                "705ab4f5-6393-11e8-b7cc-42010a800002",
                "example.com/v1",
                docs_crontabs(),
            );
            let v1 = convert_ok(&client, &url, &request).await;
            assert_eq!(
                (v1[0]["host"].as_str(), v1[0]["port"].as_str()),
                (Some("localhost"), Some("1234"))
            );
            assert_eq!(
                (v1[1]["host"].as_str(), v1[1]["port"].as_str()),
                (Some("example.com"), Some("2345"))
            );
            assert!(v1.iter().all(|o| o.get("hostPort").is_none()), "{v1:?}");

            let back_request = review(review_version, "second", "example.com/v1beta1", v1);
            let back = convert_ok(&client, &url, &back_request).await;
            assert_eq!(back, docs_crontabs(), "round trip over {http:?}");
        }
    }
    server.stop().await.expect("stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pizza_converts_both_ways_and_round_trips_exactly() {
    let server = common::start().await;
    let url = common::url(&server, "/convert");
    let client = client(&server, Http::H2);
    let alpha = vec![
        pizza(
            PIZZA_V1ALPHA1,
            "margherita",
            json!(["mozzarella", "tomato", "tomato"]),
        ),
        // Repeats out of order: v1beta1 cannot say this; the stash keeps it.
        pizza(
            PIZZA_V1ALPHA1,
            "salami",
            json!(["salami", "mozzarella", "salami"]),
        ),
    ];
    let request = review(REVIEW_V1BETA1, "p-1", PIZZA_V1BETA1, alpha.clone());
    let beta = convert_ok(&client, &url, &request).await;
    assert_eq!(
        beta[0]["spec"]["toppings"],
        json!([{"name": "mozzarella", "quantity": 1}, {"name": "tomato", "quantity": 2}])
    );
    assert_eq!(beta[0]["status"]["cost"], 12.5);
    assert!(
        beta[0]["metadata"].get("annotations").is_none(),
        "no stash when nothing is lost"
    );
    assert!(
        beta[1]["metadata"]["annotations"]["celhook.dev/conversion-stash"].is_string(),
        "{}",
        beta[1]
    );

    let back = convert_ok(
        &client,
        &url,
        &review(REVIEW_V1, "p-2", PIZZA_V1ALPHA1, beta),
    )
    .await;
    assert_eq!(back, alpha);
    server.stop().await.expect("stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mixed_version_lists_keep_order_and_pass_objects_already_converted() {
    let server = common::start().await;
    let url = common::url(&server, "/convert");
    let client = client(&server, Http::H2);
    let at_target = pizza(
        PIZZA_V1BETA1,
        "b",
        json!([{"name": "basil", "quantity": 3}]),
    );
    let objects = vec![
        pizza(PIZZA_V1ALPHA1, "a", json!(["ham"])),
        at_target.clone(),
        pizza(PIZZA_V1ALPHA1, "c", json!([])),
    ];
    let out = convert_ok(
        &client,
        &url,
        &review(REVIEW_V1, "mixed", PIZZA_V1BETA1, objects),
    )
    .await;
    let names: Vec<_> = out.iter().map(|o| o["metadata"]["name"].clone()).collect();
    assert_eq!(names, [json!("a"), json!("b"), json!("c")]);
    assert_eq!(
        out[0]["spec"]["toppings"],
        json!([{"name": "ham", "quantity": 1}])
    );
    assert_eq!(out[1], at_target);
    assert_eq!(out[2]["spec"]["toppings"], json!([]));
    server.stop().await.expect("stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_targets_kinds_and_versions_fail_with_a_message() {
    let server = common::start().await;
    let url = common::url(&server, "/convert");
    let client = client(&server, Http::H2);
    let crontab = || docs_crontabs().remove(0);
    let mut other_kind = crontab();
    other_kind["kind"] = json!("CronJob");
    let mut other_version = crontab();
    other_version["apiVersion"] = json!("example.com/v3");
    let mut broken_stash = crontab();
    broken_stash["metadata"]["annotations"] = json!({"celhook.dev/conversion-stash": "[oops"});
    // A stash whose path nests far deeper than an object may: refused,
    // where restoring it overflowed the stack and stopped the server (the
    // cases after it show the server still answering).
    let mut deep_stash = crontab();
    let deep = json!({"example.com/v1": [{"path": vec!["a"; 20_000], "value": 1}]});
    deep_stash["metadata"]["annotations"] =
        json!({"celhook.dev/conversion-stash": deep.to_string()});
    let bad_pizza = pizza(PIZZA_V1BETA1, "bad", json!([{"name": "ham"}]));
    let cases = [
        ("unknown.io/v1", crontab(), "desiredAPIVersion \"unknown.io/v1\": no CRD of group \"unknown.io\""),
        ("example.com/v2", crontab(), "object 0 (default/local-crontab): desiredAPIVersion \"example.com/v2\" is not a version of crontabs.example.com"),
        ("example.com/v1", other_kind, "object 0 (default/local-crontab): kind \"CronJob\" of group \"example.com\" is not served"),
        ("example.com/v1", other_version, "object 0 (default/local-crontab): apiVersion \"example.com/v3\" is not a version of crontabs.example.com"),
        ("example.com/v1", broken_stash, "celhook.dev/conversion-stash is not a valid stash"),
        ("example.com/v1", deep_stash, "nests 20000 levels (a path of 20000 keys)"),
        (PIZZA_V1ALPHA1, bad_pizza, "object 0 (pizza-crd/bad): spec.versions.v1beta1.toHub[0] (path spec.toppings, expr"),
    ];
    for (review_version, (desired, object, want)) in
        [REVIEW_V1, REVIEW_V1BETA1].into_iter().cycle().zip(cases)
    {
        let request = review(review_version, "f-1", desired, vec![object]);
        let message = convert_failure(&client, &url, &request).await;
        assert!(message.contains(want), "{message:?} lacks {want:?}");
    }
    server.stop().await.expect("stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_bad_object_fails_the_whole_review() {
    let server = common::start().await;
    let url = common::url(&server, "/convert");
    let client = client(&server, Http::H2);
    let objects = vec![
        pizza(PIZZA_V1BETA1, "ok", json!([{"name": "ham", "quantity": 1}])),
        pizza(PIZZA_V1BETA1, "broken", json!([{"quantity": 1}])),
    ];
    let message = convert_failure(
        &client,
        &url,
        &review(REVIEW_V1, "all", PIZZA_V1ALPHA1, objects),
    )
    .await;
    assert!(
        message.starts_with("object 1 (pizza-crd/broken): "),
        "{message}"
    );
    server.stop().await.expect("stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_reviews_are_400() {
    let server = common::start().await;
    let url = common::url(&server, "/convert");
    let client = client(&server, Http::H2);
    let mut no_objects = review(REVIEW_V1, "u", "example.com/v1", vec![]);
    no_objects["request"]
        .as_object_mut()
        .map(|r| r.remove("objects"));
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"{not json".to_vec(), "malformed JSON"),
        (b"".to_vec(), "empty request body"),
        (
            serde_json::to_vec(&review(
                "admission.k8s.io/v1",
                "u",
                "example.com/v1",
                vec![],
            ))
            .unwrap(),
            "unsupported review apiVersion",
        ),
        (
            serde_json::to_vec(&review(REVIEW_V1, "", "example.com/v1", vec![])).unwrap(),
            "request.uid",
        ),
        (
            serde_json::to_vec(&review(REVIEW_V1, "u", "", vec![])).unwrap(),
            "desiredAPIVersion",
        ),
        (
            serde_json::to_vec(&no_objects).unwrap(),
            "request.objects is missing",
        ),
        (
            serde_json::to_vec(&review(REVIEW_V1, "u", "example.com/v1", vec![json!("x")]))
                .unwrap(),
            "request.objects[0]",
        ),
    ];
    for (body, want) in cases {
        let answer = post_raw(&client, &url, body).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{}", answer.text);
        assert!(answer.text.contains(want), "{} lacks {want}", answer.text);
    }
    server.stop().await.expect("stops");
}

const WIDGETS: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.org}
spec:
  group: example.org
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
    - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {size: {type: string}, notes: {type: string}}}}}}}
    - {name: v2, served: true, storage: false, schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {size: {type: string}}}}}}}
---
apiVersion: celhook.dev/v1alpha1
kind: Conversion
spec:
  crd: widgets.example.org
  hub: v1
  versions:
    v2:
      toHub:
        # Planted: a label value computed from user data, which may be invalid.
        - path: metadata.labels["example.org/size"]
          expr: "self.?spec.optFlatMap(s, s.?size)"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_label_is_refused_before_the_api_server_sees_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("widgets.yaml"), WIDGETS).expect("write");
    let loaded = config::load(&ConfigSource::Dir(dir.path().to_owned()));
    assert!(!loaded.report.has_errors(), "{:#?}", loaded.report);
    let server = common::start_with(ServeConfig::for_tests(), loaded.catalog).await;
    let url = common::url(&server, "/convert");
    let client = client(&server, Http::H2);
    let widget = |size: &str| {
        json!({"apiVersion": "example.org/v2", "kind": "Widget",
        "metadata": {"name": format!("w-{}", size.len()), "namespace": "ns", "uid": "u"}, "spec": {"size": size}})
    };

    let ok = convert_ok(
        &client,
        &url,
        &review(REVIEW_V1, "l-1", "example.org/v1", vec![widget("large")]),
    )
    .await;
    assert_eq!(ok[0]["metadata"]["labels"]["example.org/size"], "large");

    let request = review(
        REVIEW_V1,
        "l-2",
        "example.org/v1",
        vec![widget("large"), widget("extra large!")],
    );
    let message = convert_failure(&client, &url, &request).await;
    assert_eq!(
        message,
        "object 1 (ns/w-12): metadata.labels[\"example.org/size\"]: Invalid value: \"extra large!\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        "apimachinery's IsValidLabelValue text, examples and pattern included"
    );
    server.stop().await.expect("stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stash_over_the_annotation_limit_is_refused_not_sent() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("widgets.yaml"), WIDGETS).expect("write");
    let loaded = config::load(&ConfigSource::Dir(dir.path().to_owned()));
    assert!(!loaded.report.has_errors(), "{:#?}", loaded.report);
    let server = common::start_with(ServeConfig::for_tests(), loaded.catalog).await;
    let url = common::url(&server, "/convert");
    let client = client(&server, Http::H2);
    let widget = |notes: String| {
        json!({"apiVersion": "example.org/v1", "kind": "Widget",
               "metadata": {"name": "w", "namespace": "ns", "uid": "u"},
               "spec": {"size": "s", "notes": notes}})
    };
    // v2 has no spec.notes: it travels in the stash annotation...
    let small = convert_ok(
        &client,
        &url,
        &review(
            REVIEW_V1,
            "s-1",
            "example.org/v2",
            vec![widget("n".repeat(100))],
        ),
    )
    .await;
    assert!(small[0]["spec"].get("notes").is_none(), "{}", small[0]);
    assert!(small[0]["metadata"]["annotations"]["celhook.dev/conversion-stash"].is_string());
    let back = convert_ok(
        &client,
        &url,
        &review(REVIEW_V1, "s-2", "example.org/v1", small),
    )
    .await;
    assert_eq!(back[0], widget("n".repeat(100)));

    // ...unless that would pass the API server's 256 KiB annotation limit.
    let message = convert_failure(
        &client,
        &url,
        &review(
            REVIEW_V1,
            "s-3",
            "example.org/v2",
            vec![widget("n".repeat(300 * 1024))],
        ),
    )
    .await;
    assert!(
        message.starts_with(
            "object 0 (ns/w): metadata.annotations: Too long: may not be more than 262144 bytes"
        ),
        "{message}"
    );
    server.stop().await.expect("stops");
}
