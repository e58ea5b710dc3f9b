//! Every rule and example of the seeds' "Validation rules" and "Transition
//! rules" sections, through the real HTTPS endpoint: an object that passes,
//! and objects that fail with the API server's field and message.

use crate::common;

use common::*;
use reqwest::Client;
use serde_json::{json, Value};

const EXAMPLE: (&str, &str, &str) = ("seeds.celhook.dev", "v1", "Example");
const ROOT_EXAMPLE: (&str, &str, &str) = ("seeds.celhook.dev", "v1", "RootExample");

/// What a case expects: allowed, or denied with exactly these causes
/// (field, reason, message).
enum Expect {
    Allow,
    Deny(&'static [(&'static str, &'static str, &'static str)]),
}
use Expect::*;

struct Case {
    name: &'static str,
    /// `spec` of the old object for an UPDATE; CREATE when `None`.
    old: Option<Value>,
    new: Value,
    expect: Expect,
}

fn create(name: &'static str, new: Value, expect: Expect) -> Case {
    Case {
        name,
        old: None,
        new,
        expect,
    }
}

fn update(name: &'static str, old: Value, new: Value, expect: Expect) -> Case {
    Case {
        name,
        old: Some(old),
        new,
        expect,
    }
}

fn example(kind: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "seeds.celhook.dev/v1",
        "kind": kind,
        "metadata": {"name": "ex", "namespace": "default"},
        "spec": spec,
    })
}

/// The seed CRDs, answered as Kubernetes 1.34: the seeds are that
/// version's documentation, whose examples show its texts; the conformance
/// suite runs the same cases at every version
/// (`tests/conformance/schema/seeds-rules.yaml`).
fn load_seeds() -> celhook::config::Loaded {
    celhook::config::load_as(
        &celhook::config::ConfigSource::Dir(fixture_path("seeds")),
        celhook::config::Options {
            kubernetes: "1.34".parse().expect("a version"),
            written: false,
        },
    )
}

/// Runs every case against a server on the seed CRDs, over HTTP/2, and
/// returns the list of mismatches (empty when all behave).
async fn run(cases: Vec<Case>) -> Vec<String> {
    let loaded = load_seeds();
    assert!(!loaded.report.has_errors(), "{:?}", loaded.report);
    let server = start_with(celhook::server::ServeConfig::for_tests(), loaded.catalog).await;
    let client: Client = client(&server, Http::H2);
    let url = validate_url(&server);
    let mut failures = Vec::new();
    for case in cases {
        let (op, old) = match &case.old {
            Some(o) => ("UPDATE", Some(example("Example", o.clone()))),
            None => ("CREATE", None),
        };
        let review = admission_review(
            V1,
            op,
            EXAMPLE,
            Some(example("Example", case.new.clone())),
            old,
        );
        let answer = post_review(&client, &url, &review).await;
        assert_eq!(answer.version, reqwest::Version::HTTP_2);
        let response = answer.response();
        if let Some(f) = check(&case, &response, "Example.seeds.celhook.dev") {
            failures.push(f);
        }
    }
    failures
}

fn check(case: &Case, response: &Value, qualified: &str) -> Option<String> {
    let allowed = response["allowed"].as_bool();
    match &case.expect {
        Allow if allowed == Some(true) => None,
        Allow => Some(format!("{}: expected allowed, got {response}", case.name)),
        Deny(_) if allowed != Some(false) => {
            Some(format!("{}: expected a denial, got {response}", case.name))
        }
        Deny(causes) => {
            let status = &response["status"];
            let got: Vec<(String, String, String)> = status["details"]["causes"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .iter()
                .map(|c| {
                    (
                        c["field"].as_str().unwrap_or_default().to_owned(),
                        c["reason"].as_str().unwrap_or_default().to_owned(),
                        c["message"].as_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect();
            let want: Vec<(String, String, String)> = causes
                .iter()
                .map(|(f, r, m)| (f.to_string(), r.to_string(), m.to_string()))
                .collect();
            if got != want {
                return Some(format!("{}: causes {got:?}, want {want:?}", case.name));
            }
            let joined: Vec<String> = want.iter().map(|(f, _, m)| format!("{f}: {m}")).collect();
            let tail = if joined.len() == 1 {
                joined[0].clone()
            } else {
                format!("[{}]", joined.join(", "))
            };
            let message = format!("{qualified} \"ex\" is invalid: {tail}");
            if status["message"] != message.as_str() {
                return Some(format!(
                    "{}: message {}, want {message:?}",
                    case.name, status["message"]
                ));
            }
            if status["code"] != 422 || status["reason"] != "Invalid" {
                return Some(format!("{}: status {status}", case.name));
            }
            None
        }
    }
}

const INV: &str = "FieldValueInvalid";

#[tokio::test]
async fn validation_rules_examples_behave_as_documented() {
    let cases = vec![
        create("replicas in order", json!({"replicas": {"minReplicas": 0, "replicas": 5, "maxReplicas": 10}}), Allow),
        create("replicas above max", json!({"replicas": {"minReplicas": 0, "replicas": 20, "maxReplicas": 10}}),
            Deny(&[("spec.replicas", INV, "Invalid value: \"object\": failed rule: self.minReplicas <= self.replicas && self.replicas <= self.maxReplicas")])),
        create("map has Available", json!({"counts": {"stateCounts": {"Available": 1}}}), Allow),
        create("map lacks Available", json!({"counts": {"stateCounts": {"Pending": 1}}}),
            Deny(&[("spec.counts", INV, "Invalid value: \"object\": failed rule: 'Available' in self.stateCounts")])),
        create("one list non-empty", json!({"lists": {"list1": ["a"], "list2": []}}), Allow),
        create("both lists non-empty", json!({"lists": {"list1": ["a"], "list2": ["b"]}}),
            Deny(&[("spec.lists", INV, "Invalid value: \"object\": failed rule: (size(self.list1) == 0) != (size(self.list2) == 0)")])),
        create("MY_KEY letters", json!({"mapKey": {"map1": {"MY_KEY": "abc"}}}), Allow),
        create("MY_KEY absent", json!({"mapKey": {"map1": {"OTHER": "1"}}}), Allow),
        create("MY_KEY digits", json!({"mapKey": {"map1": {"MY_KEY": "a1"}}}),
            Deny(&[("spec.mapKey", INV, "Invalid value: \"object\": failed rule: !('MY_KEY' in self.map1) || self.map1['MY_KEY'].matches('^[a-zA-Z]*$')")])),
        create("MY_ENV letters", json!({"env": {"envars": [{"name": "MY_ENV", "value": "abc"}, {"name": "OTHER", "value": "1"}]}}), Allow),
        create("MY_ENV digits", json!({"env": {"envars": [{"name": "MY_ENV", "value": "a-1"}]}}),
            Deny(&[("spec.env", INV, "Invalid value: \"object\": failed rule: self.envars.filter(e, e.name == 'MY_ENV').all(e, e.value.matches('^[a-zA-Z]*$'))")])),
        create("expires after ttl", json!({"expiry": {"created": "2024-01-01T00:00:00Z", "ttl": "1h", "expired": "2024-01-01T02:00:00Z"}}), Allow),
        create("expires before ttl", json!({"expiry": {"created": "2024-01-01T00:00:00Z", "ttl": "1h", "expired": "2024-01-01T00:30:00Z"}}),
            Deny(&[("spec.expiry", INV, "Invalid value: \"object\": failed rule: has(self.expired) && self.created + self.ttl < self.expired")])),
        create("no expiry", json!({"expiry": {"created": "2024-01-01T00:00:00Z", "ttl": "1h"}}),
            Deny(&[("spec.expiry", INV, "Invalid value: \"object\": failed rule: has(self.expired) && self.created + self.ttl < self.expired")])),
        create("health ok", json!({"health": {"health": "ok, mostly"}}), Allow),
        create("health bad", json!({"health": {"health": "degraded"}}),
            Deny(&[("spec.health", INV, "Invalid value: \"object\": failed rule: self.health.startsWith('ok')")])),
        create("widget x small", json!({"widgetList": {"widgets": [{"key": "y", "foo": 50}, {"key": "x", "foo": 5}]}}), Allow),
        create("widget x large", json!({"widgetList": {"widgets": [{"key": "x", "foo": 50}]}}),
            Deny(&[("spec.widgetList", INV, "Invalid value: \"object\": failed rule: self.widgets.exists(w, w.key == 'x' && w.foo < 10)")])),
        create("int-or-string as string", json!({"intOrString": "100%"}), Allow),
        create("int-or-string as int", json!({"intOrString": 1000}), Allow),
        create("int-or-string wrong string", json!({"intOrString": "50%"}),
            Deny(&[("spec.intOrString", INV, "Invalid value: \"\": failed rule: type(self) == string ? self == '100%' : self == 1000")])),
        create("int-or-string wrong int", json!({"intOrString": 5}),
            Deny(&[("spec.intOrString", INV, "Invalid value: \"\": failed rule: type(self) == string ? self == '100%' : self == 1000")])),
        create("disjoint sets", json!({"sets": {"set1": ["a"], "set2": ["b"]}}), Allow),
        create("overlapping sets", json!({"sets": {"set1": ["a", "c"], "set2": ["c"]}}),
            Deny(&[("spec.sets", INV, "Invalid value: \"object\": failed rule: self.set1.all(e, !(e in self.set2))")])),
        create("names keyed in details", json!({"named": {"names": ["a", "b"], "details": {"a": "1", "b": "2"}}}), Allow),
        create("names missing from details", json!({"named": {"names": ["a"], "details": {"b": "2"}}}),
            Deny(&[("spec.named", INV, "Invalid value: \"object\": failed rule: size(self.names) == size(self.details) && self.names.all(n, n in self.details)")])),
        create("primary listed once", json!({"clusterList": {"primary": "a", "clusters": [{"name": "a"}, {"name": "b"}]}}), Allow),
        create("primary not listed", json!({"clusterList": {"primary": "c", "clusters": [{"name": "a"}]}}),
            Deny(&[("spec.clusterList", INV, "Invalid value: \"object\": failed rule: size(self.clusters.filter(c, c.name == self.primary)) == 1")])),
        create("has foo", json!({"hasFoo": {"foo": 1}}), Allow),
        create("null foo counts as absent", json!({"hasFoo": {"foo": null}}),
            Deny(&[("spec.hasFoo", INV, "Invalid value: \"object\": failed rule: has(self.foo)")])),
        create("map value by key", json!({"xyzMap": {"xyz": {"foo": 1}}}), Allow),
        create("map value too small", json!({"xyzMap": {"xyz": {"foo": 0}}}),
            Deny(&[("spec.xyzMap", INV, "Invalid value: \"object\": failed rule: self['xyz'].foo > 0")])),
        create("map key missing is a runtime error", json!({"xyzMap": {"abc": {"foo": 1}}}),
            Deny(&[("spec.xyzMap", INV, "Invalid value: \"object\": no such key: xyz evaluating rule: self['xyz'].foo > 0")])),
        create("list of one", json!({"oneItem": ["a"]}), Allow),
        create("list of two", json!({"oneItem": ["a", "b"]}),
            Deny(&[("spec.oneItem", INV, "Invalid value: \"array\": failed rule: size(self) == 1")])),
        create("positive scalar", json!({"positive": 1}), Allow),
        create("zero scalar", json!({"positive": 0}),
            Deny(&[("spec.positive", INV, "Invalid value: \"integer\": failed rule: self > 0")])),
        create("widget priority low", json!({"componentMap": {"components": {"Widget": {"priority": 1}}}}), Allow),
        create("widget priority high", json!({"componentMap": {"components": {"Widget": {"priority": 10}}}}),
            Deny(&[("spec.componentMap", INV, "Invalid value: \"object\": failed rule: self.components['Widget'].priority < 10")])),
        create("values in range", json!({"valueList": {"values": [0, 99]}}), Allow),
        create("value out of range", json!({"valueList": {"values": [5, 100]}}),
            Deny(&[("spec.valueList", INV, "Invalid value: \"object\": failed rule: self.values.all(value, value >= 0 && value < 100)")])),
        create("string prefix", json!({"kubeName": "kube-proxy"}), Allow),
        create("string without prefix", json!({"kubeName": "proxy"}),
            Deny(&[("spec.kubeName", INV, "Invalid value: \"string\": failed rule: self.startsWith('kube')")])),
        create("escaped names positive", json!({"escaped": {"namespace": 1, "x-prop": 1, "redact__d": 1}}), Allow),
        create("escaped names zero", json!({"escaped": {"namespace": 0, "x-prop": 0, "redact__d": 0}}),
            Deny(&[
                ("spec.escaped", INV, "Invalid value: \"object\": failed rule: self.__namespace__ > 0"),
                ("spec.escaped", INV, "Invalid value: \"object\": failed rule: self.x__dash__prop > 0"),
                ("spec.escaped", INV, "Invalid value: \"object\": failed rule: self.redact__underscores__d > 0"),
            ])),
        create("within limit", json!({"limits": {"x": 3, "maxLimit": 3}}), Allow),
        create("messageExpression", json!({"limits": {"x": 5, "maxLimit": 3}}),
            Deny(&[("spec.limits", INV, "Invalid value: \"object\": x exceeded max limit of 3")])),
        create("reason Forbidden", json!({"reasoned": {"x": 5, "maxLimit": 3}}),
            Deny(&[("spec.reasoned", "FieldValueForbidden", "Forbidden: failed rule: self.x <= self.maxLimit")])),
        create("fieldPath", json!({"pathed": {"maxLimit": 1, "foo": {"test": {"x": 2}}}}),
            Deny(&[("spec.pathed.foo.test.x", INV, "Invalid value: \"object\": failed rule: self.foo.test.x <= self.maxLimit")])),
    ];
    let failures = run(cases).await;
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[tokio::test]
async fn transition_rules_examples_behave_as_documented() {
    let cases = vec![
        create("low/high skipped on CREATE", json!({"level": "high"}), Allow),
        update("low to medium", json!({"level": "low"}), json!({"level": "medium"}), Allow),
        update("low to high", json!({"level": "low"}), json!({"level": "high"}),
            Deny(&[("spec.level", INV, "Invalid value: \"string\": cannot transition directly between 'low' and 'high'")])),
        update("high to low", json!({"level": "high"}), json!({"level": "low"}),
            Deny(&[("spec.level", INV, "Invalid value: \"string\": cannot transition directly between 'low' and 'high'")])),
        update("level newly set is not a transition", json!({}), json!({"level": "high"}), Allow),
        update("immutable unchanged", json!({"immutable": {"foo": "a"}}), json!({"immutable": {"foo": "a"}}), Allow),
        update("immutable changed", json!({"immutable": {"foo": "a"}}), json!({"immutable": {"foo": "b"}}),
            Deny(&[("spec.immutable", INV, "Invalid value: \"object\": failed rule: self.foo == oldSelf.foo")])),
        update("bar stays bar", json!({"sticky": "bar"}), json!({"sticky": "baz"}),
            Deny(&[("spec.sticky", INV, "Invalid value: \"string\": failed rule: oldSelf != 'bar' || self == 'bar'")])),
        update("not bar may change", json!({"sticky": "baz"}), json!({"sticky": "qux"}), Allow),
        update("field may be added", json!({"keepField": {}}), json!({"keepField": {"field": "x"}}), Allow),
        update("field may not be removed", json!({"keepField": {"field": "x"}}), json!({"keepField": {}}),
            Deny(&[("spec.keepField", INV, "Invalid value: \"object\": failed rule: !has(oldSelf.field) || has(self.field)")])),
        update("set keeps old elements", json!({"appendOnly": ["a", "b"]}), json!({"appendOnly": ["b"]}), Allow),
        update("set gains an element", json!({"appendOnly": ["a"]}), json!({"appendOnly": ["a", "c"]}),
            Deny(&[("spec.appendOnly", INV, "Invalid value: \"array\": failed rule: self.all(element, element in oldSelf)")])),
        update("X to A", json!({"fromX": "X"}), json!({"fromX": "A"}), Allow),
        update("X to C", json!({"fromX": "X"}), json!({"fromX": "C"}),
            Deny(&[("spec.fromX", INV, "Invalid value: \"string\": failed rule: oldSelf != 'X' || self in ['A', 'B']")])),
        update("counter grows", json!({"counter": 5}), json!({"counter": 6}), Allow),
        update("counter shrinks", json!({"counter": 5}), json!({"counter": 4}),
            Deny(&[("spec.counter", INV, "Invalid value: \"integer\": failed rule: self >= oldSelf")])),
        create("counter on CREATE", json!({"counter": 0}), Allow),
        // optionalOldSelf: the rule also runs on CREATE, with oldSelf empty.
        create("optional: foo on create", json!({"optFoo": {"foo": "foo"}}), Allow),
        create("optional: not foo on create", json!({"optFoo": {"foo": "bar"}}),
            Deny(&[("spec.optFoo", INV, "Invalid value: \"object\": failed rule: self.foo == \"foo\" || (oldSelf.hasValue() && oldSelf.value().foo != \"foo\")")])),
        update("optional: grandfathered", json!({"optFoo": {"foo": "bar"}}), json!({"optFoo": {"foo": "baz"}}), Allow),
        update("optional: leaving foo", json!({"optFoo": {"foo": "foo"}}), json!({"optFoo": {"foo": "bar"}}),
            Deny(&[("spec.optFoo", INV, "Invalid value: \"object\": failed rule: self.foo == \"foo\" || (oldSelf.hasValue() && oldSelf.value().foo != \"foo\")")])),
        update("optional: old cases", json!({"oldCase": "OldCase2"}), json!({"oldCase": "OldCase1"}), Allow),
        create("optional: new case on create", json!({"oldCase": "NewCase"}),
            Deny(&[("spec.oldCase", INV, "Invalid value: \"string\": failed rule: [oldSelf.orValue(\"\"), self].all(x, [\"OldCase1\", \"OldCase2\"].exists(case, x == case))")])),
        create("optional: optMap on create", json!({"shortName": "abcdef"}), Allow),
        update("optional: optMap short old", json!({"shortName": "abc"}), json!({"shortName": "abcdef"}), Allow),
        update("optional: optMap long old", json!({"shortName": "abcd"}), json!({"shortName": "ab"}),
            Deny(&[("spec.shortName", INV, "Invalid value: \"string\": failed rule: oldSelf.optMap(o, o.size()).orValue(0) < 4")])),
    ];
    let failures = run(cases).await;
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[tokio::test]
async fn root_rules_reach_spec_status_and_metadata_name() {
    let loaded = load_seeds();
    let server = start_with(celhook::server::ServeConfig::for_tests(), loaded.catalog).await;
    let client = client(&server, Http::H1);
    let url = validate_url(&server);
    let object = |name: &str, available: i64| {
        json!({
            "apiVersion": "seeds.celhook.dev/v1", "kind": "RootExample",
            "metadata": {"name": name, "namespace": "default", "labels": {"a": "b"}},
            "prefix": "ex", "spec": {"minReplicas": 2}, "status": {"availableReplicas": available},
        })
    };
    let ok = post_review(
        &client,
        &url,
        &admission_review(V1, "CREATE", ROOT_EXAMPLE, Some(object("ex-1", 2)), None),
    )
    .await;
    assert_eq!(ok.response()["allowed"], true, "{}", ok.text);
    let bad = post_review(
        &client,
        &url,
        &admission_review(V1, "CREATE", ROOT_EXAMPLE, Some(object("other", 1)), None),
    )
    .await;
    let response = bad.response();
    assert_eq!(response["allowed"], false);
    assert_eq!(
        response["status"]["message"],
        "RootExample.seeds.celhook.dev \"other\" is invalid: [<nil>: Invalid value: \"object\": failed rule: self.status.availableReplicas >= self.spec.minReplicas, <nil>: Invalid value: \"object\": failed rule: self.metadata.name.startsWith(self.prefix)]"
    );
    assert_eq!(response["status"]["details"]["causes"][0]["field"], "<nil>");
}
