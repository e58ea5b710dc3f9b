//! A field of which rules select fields (`self.spec.autoscaling.min`) or
//! test presence is built in part on CREATE, and answers as built whole.

use celhook_json::{json, Value as Json};

use super::*;

/// A CRD whose root rules reach into `spec`, which has no rules of its
/// own: objects typed by their properties are read in part, a map and an
/// untyped object whole.
const GADGETS: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  names: {kind: Gadget, plural: gadgets}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-validations:
            - rule: "!has(self.spec.autoscaling) || (has(self.spec.autoscaling.min) && self.spec.autoscaling.min <= self.spec.autoscaling.max)"
            - rule: "!has(self.spec.tls) || self.spec.tls.enabled"
              message: tls must be on
            - rule: "self.spec.ports.all(p, p.port > 0) && self.spec.labels.team != '' && self.spec.raw.x != 0"
          properties:
            spec:
              type: object
              properties:
                notes: {type: string}
                autoscaling:
                  type: object
                  properties:
                    min: {type: integer}
                    max: {type: integer}
                    target: {type: integer}
                tls:
                  type: object
                  properties:
                    enabled: {type: boolean}
                    secret: {type: string}
                ports:
                  type: array
                  items:
                    type: object
                    properties:
                      port: {type: integer}
                      name: {type: string}
                labels:
                  type: object
                  additionalProperties: {type: string}
                raw:
                  type: object
                  x-kubernetes-preserve-unknown-fields: true
                  properties:
                    x: {type: integer}
"#;

/// A review of `object` (of `group`/v1, kind `kind`, resource `resource`);
/// on UPDATE the old object is the same.
fn review_of_object(
    group: &str,
    kind: &str,
    resource: &str,
    operation: &str,
    object: Json,
) -> Json {
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u-4",
            "kind": {"group": group, "version": "v1", "kind": kind},
            "resource": {"group": group, "version": "v1", "resource": resource},
            "name": object["metadata"]["name"].clone(),
            "namespace": "default",
            "operation": operation,
            "userInfo": {"username": "alice"},
            "oldObject": if operation == "UPDATE" { object.clone() } else { Json::Null },
            "object": object,
        },
    })
}

fn gadget_review(operation: &str, spec: &Json) -> Json {
    let object = json!({
        "apiVersion": "example.com/v1",
        "kind": "Gadget",
        "metadata": {"name": "g1", "namespace": "default", "labels": {"team": "a"}},
        "spec": spec,
    });
    review_of_object("example.com", "Gadget", "gadgets", operation, object)
}

#[test]
fn objects_whose_fields_rules_select_are_built_in_part_and_answer_as_whole() {
    let catalog = &loaded("gadgets.yaml", GADGETS);
    let policy = Policy::default();
    let spec = json!({
        "notes": "not read",
        "autoscaling": {"min": 1, "max": 5, "target": 70},
        "tls": {"enabled": true, "secret": "s"},
        "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}],
        "labels": {"team": "a", "tier": "b"},
        "raw": {"x": 1, "y": [1, 2]},
    });
    let body = in_api_server_order(&gadget_review("CREATE", &spec));
    let object = planned(catalog, &policy, &body).object.expect("object");
    // `spec` in part: the fields selected, the others in their places as
    // null; of `autoscaling` and `tls` the fields selected; the map and
    // the untyped object whole; the list as the list it is.
    assert_eq!(
        object,
        json!({
            "metadata": {"name": "g1"},
            "spec": {
                "autoscaling": {"max": 5, "min": 1, "target": null},
                "labels": {"team": "a", "tier": "b"},
                "notes": null,
                "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}],
                "raw": {"x": 1, "y": [1, 2]},
                "tls": {"enabled": true, "secret": null},
            },
        })
    );
    let answer =
        |spec: &Json| same_answer_as_sent(catalog, &policy, &gadget_review("CREATE", spec));
    assert!(answer(&spec).allowed);
    let mut bad = spec.clone();
    bad["autoscaling"] = json!({"min": 9, "max": 5});
    assert!(!answer(&bad).allowed);
    // A field tested for presence, absent or present without the fields
    // selected of it.
    let mut absent = spec.clone();
    absent
        .as_object_mut()
        .expect("an object")
        .remove("autoscaling");
    assert!(answer(&absent).allowed);
    let mut empty = spec.clone();
    empty["autoscaling"] = json!({"target": 70});
    assert!(!answer(&empty).allowed);
    let mut off = spec.clone();
    off["tls"]["enabled"] = json!(false);
    let denied = answer(&off);
    let message = &denied.status.as_ref().expect("a status").message;
    assert!(message.contains("tls must be on"), "{message}");
    // Null is absent, in part as whole.
    let mut null = spec.clone();
    null["tls"] = Json::Null;
    assert!(answer(&null).allowed);
    // A value of another type than the schema's: whole, and the same error.
    let mut odd = spec.clone();
    odd["autoscaling"] = json!("fast");
    answer(&odd);
    // An UPDATE may compare with the old object: whole.
    let update = in_api_server_order(&gadget_review("UPDATE", &spec));
    let object = planned(catalog, &policy, &update).object.expect("object");
    assert_eq!(object["spec"]["notes"], "not read");
}

/// Rules on a built-in kind reading one label and one data key.
const CONFIGMAP_RULES: &str = r#"
apiVersion: celhook.dev/v1alpha1
kind: ValidationRules
metadata: {name: configmap-labels}
spec:
  target: {group: "", kind: ConfigMap}
  rules:
    - path: .
      x-kubernetes-validations:
        - rule: "has(self.metadata.labels) && self.metadata.labels.app != ''"
          message: an app label
"#;

#[test]
fn metadata_is_built_in_part_with_its_name_when_rules_select_its_fields() {
    let catalog = &loaded("rules.yaml", CONFIGMAP_RULES);
    let policy = Policy::default();
    let review = |labels: Json| {
        let object = json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "c1",
                "namespace": "default",
                "labels": labels,
                "annotations": {"note": "not read"},
                "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:data": {}}}],
            },
            "data": {"x": "1"},
        });
        review_of_object("", "ConfigMap", "configmaps", "CREATE", object)
    };
    let body = in_api_server_order(&review(json!({"app": "web"})));
    let object = planned(catalog, &policy, &body).object.expect("object");
    // The labels the rule reads and the name a denial names; the rest of
    // metadata in its place, and nothing of `data`.
    assert_eq!(object["metadata"]["labels"], json!({"app": "web"}));
    assert_eq!(object["metadata"]["name"], "c1");
    assert_eq!(object["metadata"]["annotations"], Json::Null);
    assert_eq!(object["metadata"]["managedFields"], Json::Null);
    assert_eq!(object.get("data"), None);
    for labels in [
        json!({"app": "web"}),
        json!({"app": ""}),
        json!({"tier": "b"}),
    ] {
        let a = same_answer_as_sent(catalog, &policy, &review(labels.clone()));
        assert_eq!(a.allowed, labels["app"] == "web", "{labels}");
    }
}
