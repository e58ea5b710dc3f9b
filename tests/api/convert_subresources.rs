//! `/status` and `/scale` of multi-version CRDs: the ConversionReviews the
//! API server sends for them, sent to the real server over HTTPS (HTTP/1.1,
//! as the API server's webhook client speaks), in both review versions.
//!
//! What the API server sends (kubernetes/apiextensions-apiserver,
//! pkg/apiserver/customresource_handler.go and pkg/registry/customresource):
//! a subresource request is served by the storage of the version in its URL,
//! whose codec converts the **whole stored object** (metadata, spec and
//! status) from the storage version to that version when it reads, and the
//! whole object back to the storage version when it writes. The webhook
//! never sees a status alone, nor a `Scale`: autoscaling/v1 Scale objects
//! are converted by the API server itself.
//!
//! - `/status` update: the object read (converted to the URL's version)
//!   with the request's `status` and `managedFields` put on it (everything
//!   else of the request is dropped), converted to the storage version.
//! - `/scale` read: the object converted to the URL's version, then
//!   `specReplicasPath`, `statusReplicasPath` and `labelSelectorPath` of
//!   **that version's** `subresources.scale` read from it (integers).
//! - `/scale` update: the same object with `replicas` set at that version's
//!   `specReplicasPath`, converted to the storage version.
//!
//! The Pizza is the embedded seed (status subresource in both versions).
//! The seed CronTab (crontabs.example.com) has neither subresource nor
//! replicas, so the API server answers 404 for its `/status` and `/scale`;
//! its CronTab here (tests/fixtures/convert/subresources) is the seed with
//! the docs' replicas, a status and both subresources, the status fields
//! named differently in each version.

use crate::common;
use crate::convert::{
    convert_ok, review, PIZZA_V1ALPHA1, PIZZA_V1BETA1, REVIEW_V1, REVIEW_V1BETA1,
};

use celhook::config::{self, ConfigSource};
use celhook::server::{RunningServer, ServeConfig};
use common::{client, Http};
use serde_json::{json, Value};

const CRONTAB_V1BETA1: &str = "example.com/v1beta1";
const CRONTAB_V1: &str = "example.com/v1";

/// The conversion webhook as the API server calls it.
struct Hook {
    client: reqwest::Client,
    url: String,
    review_version: &'static str,
}

impl Hook {
    fn new(server: &RunningServer, review_version: &'static str) -> Hook {
        Hook {
            client: client(server, Http::H1),
            url: common::url(server, "/convert"),
            review_version,
        }
    }

    /// `object` converted to `api_version`, as the API server's codec
    /// does: no call when it is there already.
    async fn convert(&self, object: &Value, api_version: &str) -> Value {
        if object["apiVersion"] == api_version {
            return object.clone();
        }
        let request = review(
            self.review_version,
            "subresource",
            api_version,
            vec![object.clone()],
        );
        let mut out = convert_ok(&self.client, &self.url, &request).await;
        assert_eq!(out.len(), 1);
        out.remove(0)
    }
}

/// What the status strategy makes of a `/status` update: the object read,
/// with only the request's status and managed fields.
fn status_update(read: &Value, status: Option<Value>, managed_fields: Value) -> Value {
    let mut object = read.clone();
    object["metadata"]["managedFields"] = managed_fields;
    let map = object.as_object_mut().expect("an object");
    match status {
        Some(status) => map.insert("status".into(), status),
        None => map.remove("status"),
    };
    object
}

/// The field at a scale path such as `.spec.replicas`.
fn at<'v>(object: &'v Value, path: &str) -> &'v Value {
    path.trim_start_matches('.')
        .split('.')
        .fold(object, |node, key| &node[key])
}

/// The Scale the API server builds from `object`: spec and status replicas
/// as integers (absent is 0), and the selector.
fn scale_of(object: &Value, paths: [&str; 3]) -> (i64, i64, Option<String>) {
    let replicas = |path| match at(object, path) {
        Value::Null => 0,
        v => v
            .as_i64()
            .unwrap_or_else(|| panic!("{path} is not an integer: {v}")),
    };
    let selector = at(object, paths[2]).as_str().map(str::to_owned);
    (replicas(paths[0]), replicas(paths[1]), selector)
}

/// `subresources.scale` of the fixture CronTab, per version.
const V1BETA1_SCALE: [&str; 3] = [
    ".spec.replicas",
    ".status.currentReplicas",
    ".status.labelSelector",
];
const V1_SCALE: [&str; 3] = [".spec.replicas", ".status.replicas", ".status.selector"];

fn managed(api_version: &str, manager: &str, subresource: Option<&str>, fields: Value) -> Value {
    let mut entry = json!({"manager": manager, "operation": "Update", "apiVersion": api_version,
                           "time": "2026-11-20T09:14:07Z", "fieldsType": "FieldsV1", "fieldsV1": fields});
    if let Some(s) = subresource {
        entry["subresource"] = json!(s);
    }
    entry
}

/// A Pizza as etcd holds it: whole, with the metadata the API server keeps.
fn stored_pizza(api_version: &str, toppings: Value, status: Option<Value>) -> Value {
    let mut pizza = json!({
        "apiVersion": api_version, "kind": "Pizza",
        "metadata": {"name": "margherita", "namespace": "pizza-crd", "uid": "5e1a7c2d-0b3f-4d6e-9a8b-7c6d5e4f3a2b",
                     "resourceVersion": "18296", "generation": 2, "creationTimestamp": "2026-11-20T09:14:07Z",
                     "labels": {"app.kubernetes.io/name": "pizza"},
                     "managedFields": [managed(api_version, "kubectl", None, json!({"f:spec": {"f:toppings": {}}}))]},
        "spec": {"toppings": toppings},
    });
    if let Some(status) = status {
        pizza["status"] = status;
    }
    pizza
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pizza_status_update_in_the_other_version_changes_only_the_status() {
    let server = common::start().await;
    // Each way: stored at the storage version, /status used at the other.
    // The toppings are ones the other version cannot say exactly (repeats
    // out of order; one name twice), so the stash must carry them through
    // the read and back on the write.
    let cases = [
        (
            stored_pizza(
                PIZZA_V1ALPHA1,
                json!(["salami", "mozzarella", "salami"]),
                Some(json!({"cost": 9.5})),
            ),
            PIZZA_V1BETA1,
            json!([{"name": "salami", "quantity": 2}, {"name": "mozzarella", "quantity": 1}]),
        ),
        (
            stored_pizza(
                PIZZA_V1BETA1,
                json!([{"name": "ham", "quantity": 1}, {"name": "basil", "quantity": 2},
                       {"name": "ham", "quantity": 1}]),
                Some(json!({"cost": 9.5})),
            ),
            PIZZA_V1ALPHA1,
            json!(["ham", "basil", "basil", "ham"]),
        ),
    ];
    for review_version in [REVIEW_V1, REVIEW_V1BETA1] {
        let hook = Hook::new(&server, review_version);
        for (stored, url_version, toppings_there) in &cases {
            let storage_version = stored["apiVersion"].as_str().expect("apiVersion");
            // GET /status (and the read before the update).
            let read = hook.convert(stored, url_version).await;
            assert_eq!(read["apiVersion"], *url_version);
            assert_eq!(read["spec"]["toppings"], *toppings_there, "{read}");
            assert_eq!(read["status"], json!({"cost": 9.5}));
            assert_eq!(
                read["metadata"]["managedFields"],
                stored["metadata"]["managedFields"]
            );
            assert!(
                read["metadata"]["annotations"]["celhook.dev/conversion-stash"].is_string(),
                "{read}"
            );

            // PUT /status with a new cost, by a controller of that version.
            let mut fields = stored["metadata"]["managedFields"].clone();
            fields.as_array_mut().expect("list").push(managed(
                url_version,
                "pizza-controller",
                Some("status"),
                json!({"f:status": {"f:cost": {}}}),
            ));
            let update = status_update(&read, Some(json!({"cost": 11.25})), fields.clone());
            let written = hook.convert(&update, storage_version).await;

            let mut want = stored.clone();
            want["status"] = json!({"cost": 11.25});
            want["metadata"]["managedFields"] = fields;
            assert_eq!(written, want, "{review_version} {url_version}");
        }
    }
    server.stop().await.expect("stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pizza_status_can_be_set_and_removed_through_the_other_version() {
    let server = common::start().await;
    let hook = Hook::new(&server, REVIEW_V1);
    let toppings = json!(["mozzarella", "tomato", "tomato"]);
    let fields = json!([]);
    // A new Pizza: no status yet; the controller sets the first one at v1beta1.
    let stored = stored_pizza(PIZZA_V1ALPHA1, toppings.clone(), None);
    let read = hook.convert(&stored, PIZZA_V1BETA1).await;
    assert!(read.get("status").is_none(), "{read}");
    assert!(
        read["metadata"].get("annotations").is_none(),
        "nothing lost: {read}"
    );
    let update = status_update(&read, Some(json!({"cost": 8})), fields.clone());
    let written = hook.convert(&update, PIZZA_V1ALPHA1).await;
    assert_eq!(written["status"], json!({"cost": 8}));
    assert_eq!(written["spec"]["toppings"], toppings);

    // A status update without a status removes it.
    let read = hook.convert(&written, PIZZA_V1BETA1).await;
    let written = hook
        .convert(&status_update(&read, None, fields), PIZZA_V1ALPHA1)
        .await;
    let mut want = stored;
    want["metadata"]["managedFields"] = json!([]);
    assert_eq!(written, want);
    server.stop().await.expect("stops");
}

/// The fixture CronTab with replicas, status and scale in both versions.
async fn start_scaled_crontab() -> RunningServer {
    let dir = common::fixture_path("convert/subresources");
    let loaded = config::load(&ConfigSource::Dir(dir));
    assert!(!loaded.report.has_errors(), "{:#?}", loaded.report);
    common::start_with(ServeConfig::for_tests(), loaded.catalog).await
}

/// A CronTab as etcd holds it at the storage version v1beta1.
fn stored_crontab(host_port: &str, status: Option<Value>) -> Value {
    let mut crontab = json!({
        "apiVersion": CRONTAB_V1BETA1, "kind": "CronTab",
        "metadata": {"name": "my-new-cron-object", "namespace": "default",
                     "uid": "0d9e8f7a-6b5c-4d3e-8f2a-000000000001", "resourceVersion": "4711",
                     "generation": 1, "creationTimestamp": "2026-11-20T09:14:07Z",
                     "managedFields": [managed(CRONTAB_V1BETA1, "kubectl", None,
                                               json!({"f:spec": {"f:replicas": {}, "f:hostPort": {}}}))]},
        "spec": {"cronSpec": "* * * * */5", "image": "my-awesome-cron-image",
                 "hostPort": host_port, "replicas": 3},
    });
    if let Some(status) = status {
        crontab["status"] = status;
    }
    crontab
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crontab_scale_at_v1_reads_and_writes_the_v1_replicas_paths() {
    let server = start_scaled_crontab().await;
    for review_version in [REVIEW_V1, REVIEW_V1BETA1] {
        let hook = Hook::new(&server, review_version);
        // With a port, and without one (v1 then has no `port`).
        for host_port in ["localhost:1234", "localhost"] {
            let stored = stored_crontab(
                host_port,
                Some(json!({"currentReplicas": 2, "labelSelector": "app=cron"})),
            );
            assert_eq!(
                scale_of(&stored, V1BETA1_SCALE),
                (3, 2, Some("app=cron".into()))
            );

            // GET /scale at v1: the whole object to v1, then v1's paths.
            let read = hook.convert(&stored, CRONTAB_V1).await;
            assert_eq!(scale_of(&read, V1_SCALE), (3, 2, Some("app=cron".into())));
            assert_eq!(
                read["status"],
                json!({"replicas": 2, "selector": "app=cron"})
            );
            assert_eq!(read["spec"]["cronSpec"], "* * * * */5");

            // PUT /scale at v1 (replicas 5): set at v1's specReplicasPath,
            // the whole object back to v1beta1.
            let mut update = read.clone();
            update["spec"]["replicas"] = json!(5);
            let written = hook.convert(&update, CRONTAB_V1BETA1).await;
            let mut want = stored.clone();
            want["spec"]["replicas"] = json!(5);
            assert_eq!(written, want, "{review_version} {host_port}");
            assert_eq!(
                scale_of(&written, V1BETA1_SCALE),
                (5, 2, Some("app=cron".into()))
            );
        }
    }
    server.stop().await.expect("stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crontab_scale_at_v1beta1_of_an_object_stored_at_v1_reads_the_v1beta1_paths() {
    // Stored at v1 before the storage version became v1beta1 (or by a
    // storage-version migration in progress): read at v1beta1.
    let server = start_scaled_crontab().await;
    let hook = Hook::new(&server, REVIEW_V1);
    let mut stored = stored_crontab("unused:1", None);
    stored["apiVersion"] = json!(CRONTAB_V1);
    // A host with ':' does not come back from v1beta1's hostPort as it
    // is: the stash carries it from the read to the write.
    stored["spec"] = json!({"cronSpec": "0 * * * *", "image": "img", "host": "fe80::1",
                            "port": "8443", "replicas": 7});
    stored["status"] = json!({"replicas": 6, "selector": "app=cron,tier=batch"});
    let read = hook.convert(&stored, CRONTAB_V1BETA1).await;
    assert_eq!(
        scale_of(&read, V1BETA1_SCALE),
        (7, 6, Some("app=cron,tier=batch".into()))
    );
    assert_eq!(read["spec"]["hostPort"], "fe80::1:8443");
    assert!(read["metadata"]["annotations"]["celhook.dev/conversion-stash"].is_string());
    assert!(read["spec"].get("host").is_none(), "{read}");
    assert!(read["status"].get("replicas").is_none(), "{read}");
    // PUT /scale at v1beta1 (replicas 8) writes v1beta1, the storage
    // version: no call. A later read at v1 gets the host back whole.
    let mut written = read.clone();
    written["spec"]["replicas"] = json!(8);
    let mut want = stored.clone();
    want["spec"]["replicas"] = json!(8);
    assert_eq!(hook.convert(&written, CRONTAB_V1).await, want);
    server.stop().await.expect("stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crontab_status_update_at_v1_lands_in_the_v1beta1_status_fields() {
    let server = start_scaled_crontab().await;
    let hook = Hook::new(&server, REVIEW_V1BETA1);
    // With a status, and a new object whose controller writes the first one.
    for status in [
        Some(json!({"currentReplicas": 2, "labelSelector": "app=cron"})),
        None,
    ] {
        let stored = stored_crontab("localhost:1234", status);
        let read = hook.convert(&stored, CRONTAB_V1).await;
        assert_eq!(
            (&read["spec"]["host"], &read["spec"]["port"]),
            (&json!("localhost"), &json!("1234"))
        );
        let fields = json!([managed(
            CRONTAB_V1,
            "cron-controller",
            Some("status"),
            json!({"f:status": {"f:replicas": {}, "f:selector": {}}})
        )]);
        let update = status_update(
            &read,
            Some(json!({"replicas": 3, "selector": "app=cron"})),
            fields.clone(),
        );
        let written = hook.convert(&update, CRONTAB_V1BETA1).await;
        let mut want = stored.clone();
        want["status"] = json!({"currentReplicas": 3, "labelSelector": "app=cron"});
        want["metadata"]["managedFields"] = fields;
        assert_eq!(written, want);
        assert_eq!(
            scale_of(&written, V1BETA1_SCALE),
            (3, 3, Some("app=cron".into()))
        );
    }
    server.stop().await.expect("stops");
}
