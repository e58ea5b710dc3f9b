//! Decoding only what the rules read (`Reads`) answers as decoding whole.

use celhook_json::{json, Value as Json};

use super::*;
use crate::config::{self, ConfigSource};
use crate::review::{decode_admission, decode_admission_planned, Details};

mod parts;

fn embedded() -> Catalog {
    config::load(&ConfigSource::Embedded).catalog
}

/// A CronTab review; `object` and `oldObject` carry what rules never read
/// (managedFields, status) besides `spec`.
fn crontab_review(operation: &str, spec: Json, old_spec: Option<Json>, status: &str) -> Json {
    let object = |spec: Json, status: &str| {
        json!({
            "apiVersion": "stable.example.com/v1",
            "kind": "CronTab",
            "metadata": {
                "name": "nightly",
                "namespace": "default",
                "labels": {"team": "a"},
                "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {"f:replicas": {}}}}],
            },
            "spec": spec,
            "status": {"phase": status},
        })
    };
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u-1",
            "kind": {"group": "stable.example.com", "version": "v1", "kind": "CronTab"},
            "resource": {"group": "stable.example.com", "version": "v1", "resource": "crontabs"},
            // Empty, as for a name the API server generates: the denial
            // names the object by its metadata.
            "name": "",
            "namespace": "default",
            "operation": operation,
            "userInfo": {"username": "alice"},
            "object": object(spec, status),
            "oldObject": old_spec.map(|s| object(s, "Old")),
        },
    })
}

fn planned(catalog: &Catalog, policy: &Policy, body: &[u8]) -> AdmissionRequest {
    let reads = Reads { catalog, policy };
    decode_admission_planned(body, Details::Decode, &reads)
        .expect("decodes")
        .1
}

fn same_answer(catalog: &Catalog, policy: &Policy, body: &Json) -> AdmissionResponse {
    let body = serde_json::to_vec(body).expect("JSON");
    let (_, whole) = decode_admission(&body).expect("decodes");
    let part = planned(catalog, policy, &body);
    let a = review(catalog, &whole, policy).response;
    let b = review(catalog, &part, policy).response;
    assert_eq!(a, b, "the same answer from the object decoded in part");
    a
}

#[test]
fn only_the_fields_rules_sit_under_and_the_name_are_built() {
    let catalog = embedded();
    let spec = json!({"minReplicas": 1, "replicas": 2, "maxReplicas": 3});
    let mut review = crontab_review("CREATE", spec.clone(), None, "Ready");
    let body = serde_json::to_vec(&review).unwrap();
    let req = planned(&catalog, &Policy::default(), &body);
    assert_eq!(
        req.object,
        Some(json!({"metadata": {"name": "nightly"}, "spec": spec})),
    );
    // The schema check reads everything.
    let checked = Policy {
        check_schema: true,
        ..Policy::default()
    };
    let req = planned(&catalog, &checked, &body);
    let object = req.object.expect("an object");
    assert_eq!(object["status"]["phase"], "Ready");
    assert_eq!(object["metadata"]["labels"]["team"], "a");
    // A kind no rule is about keeps the name alone.
    review["request"]["kind"]["kind"] = json!("Other");
    let other = serde_json::to_vec(&review).unwrap();
    let req = planned(&catalog, &Policy::default(), &other);
    assert_eq!(req.object, Some(json!({"metadata": {"name": "nightly"}})));
}

#[test]
fn denials_and_ratcheting_answer_as_with_whole_objects() {
    let catalog = embedded();
    let policy = Policy::default();
    let bad = json!({"minReplicas": 5, "replicas": 2, "maxReplicas": 3});
    // A denial names the object from its metadata.
    let res = same_answer(
        &catalog,
        &policy,
        &crontab_review("CREATE", bad.clone(), None, "x"),
    );
    assert!(!res.allowed);
    assert!(
        res.status.as_ref().unwrap().message.contains("\"nightly\""),
        "{:?}",
        res.status
    );
    // The failing spec is unchanged while status changed: ratcheted.
    let res = same_answer(
        &catalog,
        &policy,
        &crontab_review("UPDATE", bad.clone(), Some(bad.clone()), "New"),
    );
    assert!(res.allowed, "{:?}", res.status);
    // A transition rule over a changed spec.
    let low = json!({"minReplicas": 1, "replicas": 2, "maxReplicas": 3, "level": "low"});
    let high = json!({"minReplicas": 1, "replicas": 2, "maxReplicas": 3, "level": "high"});
    let res = same_answer(
        &catalog,
        &policy,
        &crontab_review("UPDATE", high, Some(low), "x"),
    );
    assert!(!res.allowed);
}

#[test]
fn objects_written_before_the_kind_are_decoded_by_its_plan() {
    let catalog = embedded();
    let spec = json!({"minReplicas": 1, "replicas": 2, "maxReplicas": 3});
    let mut body = crontab_review("CREATE", spec.clone(), None, "Ready");
    // serde_json's map keeps keys sorted: `kind` after `object` would
    // not show; write the request by hand with the object first.
    let request = body["request"].take();
    let text = format!(
        r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{"object":{},"uid":"u-1","operation":"CREATE","kind":{}}}}}"#,
        request["object"], request["kind"]
    );
    let req = planned(&catalog, &Policy::default(), text.as_bytes());
    assert_eq!(
        req.object,
        Some(json!({"metadata": {"name": "nightly"}, "spec": spec}))
    );
}

#[test]
fn policies_read_whole_objects() {
    let mut files: Vec<(String, &str)> = config::embedded::FILES
        .iter()
        .map(|(name, text)| (name.to_string(), *text))
        .collect();
    let policy = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: status-phase}
spec:
  matchConstraints:
    resourceRules:
      - apiGroups: ["stable.example.com"]
        apiVersions: ["v1"]
        operations: ["CREATE"]
        resources: ["crontabs"]
  validations:
    - expression: "object.status.phase != 'Broken'"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: status-phase}
spec:
  policyName: status-phase
  validationActions: [Deny]
"#;
    files.push(("policy.yaml".into(), policy));
    let loaded = config::load_texts(&files);
    assert!(!loaded.report.has_errors(), "{:?}", loaded.report);
    let spec = json!({"minReplicas": 1, "replicas": 2, "maxReplicas": 3});
    let res = same_answer(
        &loaded.catalog,
        &Policy::default(),
        &crontab_review("CREATE", spec.clone(), None, "Broken"),
    );
    assert!(!res.allowed, "the policy read the status");
    // `/validate/rules` leaves policies to their own webhook.
    let rules_only = Policy {
        scope: Scope::Rules,
        ..Policy::default()
    };
    let body = serde_json::to_vec(&crontab_review("CREATE", spec, None, "Broken")).unwrap();
    let req = planned(&loaded.catalog, &rules_only, &body);
    assert!(req.object.expect("object").get("status").is_none());
}

/// The review as the API server writes it (`operation` before `object`).
fn in_api_server_order(review: &Json) -> Vec<u8> {
    let review: serde_json::Value = serde_json::to_value(review).expect("JSON");
    celhook_loadtest::workload::in_api_server_order(&review)
        .expect("JSON")
        .into_bytes()
}

/// A CRD whose rules read some fields of `spec` (one through its
/// messageExpression), all of `spec.tags` (by size), items of
/// `spec.ports`, one field of `spec.template`, and the root's metadata.
const WIDGETS: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-validations:
            - rule: "self.metadata.name.startsWith('w')"
          properties:
            spec:
              type: object
              x-kubernetes-validations:
                - rule: "self.replicas <= self.maxReplicas"
                  messageExpression: "'replicas over the maximum for ' + self.label"
              properties:
                replicas: {type: integer}
                maxReplicas: {type: integer}
                label: {type: string}
                notes: {type: string}
                extra: {type: object, x-kubernetes-preserve-unknown-fields: true}
                tags:
                  type: array
                  items: {type: string}
                  x-kubernetes-validations:
                    - rule: "size(self) < 4"
                ports:
                  type: array
                  items:
                    type: object
                    properties:
                      port: {type: integer}
                    x-kubernetes-validations:
                      - rule: "self.port > 0"
                template:
                  type: object
                  x-kubernetes-validations:
                    - rule: "self.image != ''"
                  properties:
                    image: {type: string}
                    command: {type: string}
"#;

/// The catalog of the config file `name` holding `text`, loaded without a
/// problem.
fn loaded(name: &str, text: &str) -> Catalog {
    let loaded = config::load_texts(&[(name, text)]);
    assert!(!loaded.report.has_errors(), "{:?}", loaded.report);
    loaded.catalog
}

/// The catalog of [`WIDGETS`].
fn widgets() -> Catalog {
    loaded("widgets.yaml", WIDGETS)
}

fn widget_review(operation: &str, spec: Json, old_spec: Option<Json>) -> Json {
    let object = |spec: Json| {
        json!({
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w1", "namespace": "default", "labels": {"team": "a"}},
            "spec": spec,
            "status": {"phase": "Ready"},
        })
    };
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u-2",
            "kind": {"group": "example.com", "version": "v1", "kind": "Widget"},
            "resource": {"group": "example.com", "version": "v1", "resource": "widgets"},
            "name": "w1",
            "namespace": "default",
            "operation": operation,
            "userInfo": {"username": "alice"},
            "object": object(spec),
            "oldObject": old_spec.map(object),
        },
    })
}

#[test]
fn a_create_builds_of_each_node_only_the_fields_its_rules_select() {
    let catalog = &widgets();
    let policy = Policy::default();
    let spec = json!({
        "replicas": 2, "maxReplicas": 3, "label": "blue", "notes": "not read",
        "extra": {"deep": [1, {"x": "y"}]}, "tags": ["a", "b"],
        "ports": [{"port": 80, "name": "http"}],
        "template": {"image": "nginx", "command": "run"},
    });
    let review = widget_review("CREATE", spec.clone(), None);
    let req = planned(catalog, &policy, &in_api_server_order(&review));
    // Skipped fields of a node with rules keep their place as null; of
    // metadata, the name a root rule reads (and a denial names), the rest
    // in its place.
    assert_eq!(
        req.object,
        Some(json!({
            "metadata": {"name": "w1", "namespace": null, "labels": null},
            "spec": {
                "replicas": 2, "maxReplicas": 3, "label": "blue", "notes": null,
                "extra": null, "tags": ["a", "b"], "ports": [{"port": 80, "name": "http"}],
                "template": {"image": "nginx", "command": null},
            },
        })),
    );
    // The same answers as from the whole object, allowed or denied, and
    // the message expression reads the field it selects.
    let answer = |review: &Json| same_answer_as_sent(catalog, &policy, review);
    assert!(answer(&review).allowed);
    let mut bad = spec.clone();
    bad["replicas"] = json!(5);
    bad["template"]["image"] = json!("");
    let denied = answer(&widget_review("CREATE", bad.clone(), None));
    let message = &denied.status.as_ref().expect("a status").message;
    assert!(
        message.contains("replicas over the maximum for blue"),
        "{message}"
    );
    assert!(message.contains("spec.template"), "{message}");
    // An UPDATE compares values with the old object's (ratcheting): the
    // nodes with rules whole.
    let update = widget_review("UPDATE", bad.clone(), Some(bad));
    let req = planned(catalog, &policy, &in_api_server_order(&update));
    assert_eq!(req.object.expect("object")["spec"]["notes"], "not read");
    assert!(answer(&update).allowed, "unchanged, so ratcheted");
    // A request that names its operation after the object is planned as
    // one that may compare: whole nodes, the same answer.
    let sorted = serde_json::to_vec(&review).unwrap();
    let req = planned(catalog, &policy, &sorted);
    assert_eq!(req.object.expect("object")["spec"]["extra"]["deep"][0], 1);
}

/// A Widget CREATE review written by hand, its `spec` the text given (keys
/// in any order, repeated or escaped, which a JSON value cannot hold).
fn widget_create_text(spec: &str, metadata: &Json) -> String {
    let review = widget_review("CREATE", json!({}), None);
    let request = &review["request"];
    format!(
        r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{"uid":"u-3","kind":{},"resource":{},"operation":"CREATE","userInfo":{{"username":"alice"}},"object":{{"apiVersion":"example.com/v1","kind":"Widget","metadata":{metadata},"spec":{spec}}}}}}}"#,
        request["kind"], request["resource"],
    )
}

fn review_of(catalog: &Catalog, policy: &Policy, req: &AdmissionRequest) -> AdmissionResponse {
    review(catalog, req, policy).response
}

/// [`same_answer`] of `review` written in the API server's order, so that
/// a CREATE is known before its object and planned in depth.
fn same_answer_as_sent(catalog: &Catalog, policy: &Policy, review: &Json) -> AdmissionResponse {
    let body = in_api_server_order(review);
    let (_, whole) = decode_admission(&body).expect("decodes");
    let a = review_of(catalog, policy, &whole);
    let b = review_of(catalog, policy, &planned(catalog, policy, &body));
    assert_eq!(a, b, "the same answer from the object decoded in part");
    a
}

#[test]
fn escaped_names_read_their_keys_and_untyped_nodes_are_built_whole_on_create() {
    let crd = WIDGETS.replace(
        r#"            spec:
              type: object
"#,
        r#"            escaped:
              type: object
              x-kubernetes-validations:
                - rule: "has(self.x__dash__prop) && self.x__dash__prop == 'a'"
              properties:
                x-prop: {type: string}
            loose:
              x-kubernetes-preserve-unknown-fields: true
              x-kubernetes-validations:
                - rule: "self.replicas < 5"
              properties:
                replicas: {type: integer}
            spec:
              type: object
"#,
    );
    let loaded = config::load_texts(&[("widgets.yaml", crd.as_str())]);
    assert!(!loaded.report.has_errors(), "{:?}", loaded.report);
    let catalog = &loaded.catalog;
    let policy = Policy::default();
    let spec =
        json!({"replicas": 2, "maxReplicas": 3, "label": "blue", "template": {"image": "x"}});
    let mut review = widget_review("CREATE", spec, None);
    review["request"]["object"]["escaped"] = json!({"x-prop": "a", "other": 1});
    review["request"]["object"]["loose"] = json!({"replicas": 9, "image": "nginx"});
    let body = in_api_server_order(&review);
    let object = planned(catalog, &policy, &body).object.expect("object");
    // `self.x__dash__prop` reads the key `x-prop`, and only it.
    assert_eq!(object["escaped"], json!({"x-prop": "a", "other": null}));
    assert_eq!(object["loose"], json!({"replicas": 9, "image": "nginx"}));
    let (_, whole) = decode_admission(&body).expect("decodes");
    let a = review_of(catalog, &policy, &whole);
    let b = review_of(catalog, &policy, &planned(catalog, &policy, &body));
    assert_eq!(a, b);
    let message = &b.status.as_ref().expect("denied by `loose`").message;
    assert!(
        message.contains("nginx"),
        "the failed value shown whole: {message}"
    );
    assert!(!message.contains("escaped"), "{message}");
}

#[test]
fn keys_out_of_order_or_repeated_decode_as_sorted_ones() {
    let catalog = &widgets();
    let policy = Policy::default();
    let metadata =
        widget_review("CREATE", json!({}), None)["request"]["object"]["metadata"].clone();
    // `spec`'s keys as the API server writes them (sorted), out of order
    // after a first run in order, and with `replicas` twice (the last
    // one counts, as when decoding whole).
    let specs = [
        r#"{"label":"blue","maxReplicas":3,"notes":"n","replicas":5,"template":{"image":""}}"#,
        r#"{"label":"blue","replicas":5,"maxReplicas":3,"template":{"command":"c","image":""},"notes":"n"}"#,
        r#"{"replicas":1,"label":"blue","maxReplicas":3,"replicas":5,"template":{"image":""}}"#,
    ];
    let mut messages = Vec::new();
    for spec in specs {
        let text = widget_create_text(spec, &metadata);
        let req = planned(catalog, &policy, text.as_bytes());
        let spec = &req.object.as_ref().expect("object")["spec"];
        assert_eq!(spec["replicas"], 5, "{text}");
        assert_eq!(spec["label"], "blue");
        assert_eq!(spec["template"]["image"], "");
        assert!(spec["notes"].is_null(), "not read, so not built");
        let (_, whole) = decode_admission(text.as_bytes()).expect("decodes");
        let a = review_of(catalog, &policy, &whole);
        let b = review_of(catalog, &policy, &req);
        assert_eq!(a, b, "{text}");
        assert!(!b.allowed);
        messages.push(b.status.expect("denied").message);
    }
    assert!(messages.iter().all(|m| *m == messages[0]), "{messages:?}");
}

#[test]
fn known_fields_escaped_or_among_unknown_keys_decode_as_written_plainly() {
    let catalog = &widgets();
    let policy = Policy::default();
    // Each is matched by name when not as written: `label` and
    // `maxReplicas` spelled with escapes, keys the schema lacks before,
    // between and after the known ones, a known key after an unknown one
    // that sorts past it, and known keys repeated (the last value counts).
    let cases = [
        (
            r#"{"a":0,"l\u0061bel":"blue","maxReplicas":3,"middle":true,"replicas":5,"zz":[1]}"#,
            json!({"a": null, "label": "blue", "maxReplicas": 3, "middle": null, "replicas": 5, "zz": null}),
        ),
        (
            r#"{"label":"blue","m\u0061xReplicas":3,"replicas":5}"#,
            json!({"label": "blue", "maxReplicas": 3, "replicas": 5}),
        ),
        (
            r#"{"zz":1,"label":"blue","maxReplicas":3,"replicas":5}"#,
            json!({"zz": null, "label": "blue", "maxReplicas": 3, "replicas": 5}),
        ),
        (
            r#"{"label":"blue","maxReplicas":3,"replicas":2,"replicas":5,"notes":"x"}"#,
            json!({"label": "blue", "maxReplicas": 3, "replicas": 5, "notes": null}),
        ),
        (
            r#"{"label":"blue","maxReplicas":3,"maxReplicas":4,"replicas":5}"#,
            json!({"label": "blue", "maxReplicas": 4, "replicas": 5}),
        ),
        (
            r#"{"label":"red","l\u0061bel":"blue","maxReplicas":3,"replicas":5}"#,
            json!({"label": "blue", "maxReplicas": 3, "replicas": 5}),
        ),
    ];
    for (spec, built) in cases {
        let text = widget_create_text(spec, &json!({"name": "w1"}));
        let req = planned(catalog, &policy, text.as_bytes());
        let object = req.object.as_ref().expect("object");
        assert_eq!(object["spec"], built, "{spec}");
        // Built sorted: the map's order is the key order, whatever the text's.
        let keys: Vec<&str> = object["spec"]
            .as_object()
            .expect("an object")
            .keys()
            .map(|k| k.as_str())
            .collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
        let (_, whole) = decode_admission(text.as_bytes()).expect("decodes");
        let a = review_of(catalog, &policy, &whole);
        let b = review_of(catalog, &policy, &req);
        assert_eq!(a, b, "{spec}");
        assert!(!b.allowed, "replicas over the maximum: {spec}");
    }
}

/// The perf workload's CRD (17 rules over `spec`, six of them loops over
/// `spec.ports`) and its CREATE review, as the load tests send them.
fn perf() -> (Catalog, Json) {
    let crd = include_str!("../../tests/fixtures/perf/core/appdeployment.yaml");
    let loaded = config::load_texts(&[("appdeployment.yaml", crd)]);
    assert!(!loaded.report.has_errors(), "{:?}", loaded.report);
    let review = include_str!("../../tests/fixtures/perf/review-create.json");
    (
        loaded.catalog,
        celhook_json::from_str(review).expect("JSON"),
    )
}

#[test]
fn a_list_the_rules_loop_over_is_kept_by_column_and_answers_as_the_list() {
    let (catalog, review) = perf();
    let catalog = &catalog;
    let policy = Policy::default();
    let answer = |review: &Json, table: bool| {
        let body = in_api_server_order(review);
        let req = planned(catalog, &policy, &body);
        let object = req.object.as_ref().expect("an object");
        let ports = &object["spec"]["ports"];
        assert_eq!(matches!(ports, Json::Table(_)), table, "{ports:?}");
        let (_, whole) = decode_admission(&body).expect("decodes");
        assert_eq!(
            whole.object.as_ref().map(|o| &o["spec"]["ports"]),
            Some(ports)
        );
        let a = review_of(catalog, &policy, &whole);
        let b = review_of(catalog, &policy, &req);
        assert_eq!(a, b, "the same answer from the ports kept by column");
        a
    };
    assert!(answer(&review, true).allowed);
    let ports = |review: &mut Json| -> Vec<Json> {
        review["request"]["object"]["spec"]["ports"]
            .as_array()
            .expect("ports")
            .clone()
    };
    let with_ports = |list: Vec<Json>| {
        let mut r = review.clone();
        r["request"]["object"]["spec"]["ports"] = Json::Array(list);
        r
    };
    let mut list = ports(&mut review.clone());
    // A repeated name, a port out of range, a protocol not allowed, a bad
    // name, too many UDP ports: each denied by its rule, as with the tree.
    let mut denials = Vec::new();
    for (i, field, value) in [
        (3, "name", json!("http")),
        (4, "port", json!(70000)),
        (5, "protocol", json!("QUIC")),
        (6, "name", json!("Not_A_Name")),
    ] {
        let mut bad = list.clone();
        bad[i][field] = value;
        let res = answer(&with_ports(bad), true);
        assert!(!res.allowed, "{field} {i}");
        denials.push(res.status.expect("a status").message);
    }
    assert!(denials[0].contains("unique"), "{}", denials[0]);
    denials.dedup();
    assert_eq!(denials.len(), 4, "each by its own rule: {denials:?}");
    for p in list.iter_mut().take(6) {
        p["protocol"] = json!("UDP");
    }
    assert!(!answer(&with_ports(list.clone()), true).allowed);
    // Ports that are no flat objects of the same keys are a tree, and
    // answer the same: a port without a protocol, one with a float.
    let mut partial = ports(&mut review.clone());
    partial[7]
        .as_object_mut()
        .expect("an object")
        .remove("protocol");
    assert!(!answer(&with_ports(partial), false).allowed);
    let mut float = ports(&mut review.clone());
    float[2]["port"] = json!(8080.5);
    answer(&with_ports(float), false);
}
