use std::time::Instant;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
use serde_json::{json, Value};

use super::*;
use crate::schema::Schema;

/// The node at a dotted path of schema keys (`properties.spec.properties.x`).
fn at_path<'a>(schema: &'a Value, path: &str) -> &'a Value {
    path.split('.').fold(schema, |node, key| {
        node.get(key)
            .unwrap_or_else(|| panic!("no {key:?} on the way to {path}"))
    })
}

fn deployment() -> Value {
    schema("apps", "v1", "Deployment", NEWEST).expect("apps/v1 Deployment")
}

const POD_SPEC: &str = "properties.spec.properties.template.properties.spec";

#[test]
fn embedded_file_parses_and_covers_the_minors() {
    let data = data().expect("builtin-schemas.json parses");
    assert_eq!(data.minors, MINORS.collect::<Vec<_>>());
    assert_eq!(NEWEST, *MINORS.end());
    assert!(data.kinds.len() > 100, "{} kinds", data.kinds.len());
}

#[test]
fn deployment_containers_are_a_map_list_keyed_by_name() {
    let d = deployment();
    let containers = at_path(&d, &format!("{POD_SPEC}.properties.containers"));
    assert_eq!(containers["type"], "array");
    assert_eq!(containers["x-kubernetes-list-type"], "map");
    assert_eq!(containers["x-kubernetes-list-map-keys"], json!(["name"]));
    assert_eq!(containers["items"]["properties"]["name"]["type"], "string");
    assert!(containers.get("x-kubernetes-patch-merge-key").is_none());
}

#[test]
fn deployment_scalars_keep_types_and_formats() {
    let d = deployment();
    let replicas = at_path(&d, "properties.spec.properties.replicas");
    assert_eq!(replicas["type"], "integer");
    assert_eq!(replicas["format"], "int32");
    let max_surge = at_path(
        &d,
        "properties.spec.properties.strategy.properties.rollingUpdate.properties.maxSurge",
    );
    assert_eq!(max_surge, &json!({"x-kubernetes-int-or-string": true}));
    let limit = at_path(
        &d,
        &format!(
            "{POD_SPEC}.properties.containers.items.properties.resources.properties.limits.additionalProperties"
        ),
    );
    assert_eq!(limit, &json!({"type": "string"}));
}

#[test]
fn roots_declare_api_version_kind_and_object_meta() {
    let d = deployment();
    assert_eq!(d["type"], "object");
    assert_eq!(d["properties"]["apiVersion"], json!({"type": "string"}));
    assert_eq!(d["properties"]["kind"], json!({"type": "string"}));
    let meta = &d["properties"]["metadata"];
    assert_eq!(meta["properties"]["name"]["type"], "string");
    assert_eq!(
        meta["properties"]["labels"]["additionalProperties"]["type"],
        "string"
    );
    assert_eq!(
        meta["properties"]["creationTimestamp"],
        json!({"type": "string", "format": "date-time"})
    );
}

#[test]
fn core_kinds_have_the_empty_group() {
    let pod = schema("", "v1", "Pod", NEWEST).expect("core v1 Pod");
    let containers = at_path(&pod, "properties.spec.properties.containers");
    assert_eq!(containers["x-kubernetes-list-map-keys"], json!(["name"]));
    assert!(schema("core", "v1", "Pod", NEWEST).is_none());
    assert_eq!(versions_of("", "Pod", NEWEST), ["v1"]);
}

#[test]
fn unknown_kinds_and_minors_give_nothing() {
    assert!(schema("apps", "v1", "Nonesuch", NEWEST).is_none());
    assert!(schema("example.com", "v1", "Widget", NEWEST).is_none());
    assert!(schema("apps", "v2", "Deployment", NEWEST).is_none());
    assert!(schema("", "", "", NEWEST).is_none());
    assert!(schema("apps/v1", "Deployment", "", NEWEST).is_none());
    for minor in [0, 29, 38, u32::MAX] {
        assert!(
            schema("apps", "v1", "Deployment", minor).is_none(),
            "{minor}"
        );
        assert!(object_meta(minor).is_none(), "{minor}");
        assert!(kinds(minor).is_empty(), "{minor}");
        assert!(
            versions_of("apps", "Deployment", minor).is_empty(),
            "{minor}"
        );
    }
    assert!(versions_of("example.com", "Widget", NEWEST).is_empty());
}

#[test]
fn list_and_meta_kinds_are_not_kinds() {
    for (group, kind) in [
        ("apps", "DeploymentList"),
        ("", "PodList"),
        ("apps", "DeleteOptions"),
        ("", "Status"),
    ] {
        assert!(schema(group, "v1", kind, NEWEST).is_none(), "{kind}");
    }
    let all = kinds(NEWEST);
    assert!(all.iter().all(|(_, _, k)| !k.ends_with("List")));
    let sorted = {
        let mut s = all.clone();
        s.sort();
        s
    };
    assert_eq!(all, sorted);
    for (g, v, k) in [
        ("", "v1", "Pod"),
        ("apps", "v1", "Deployment"),
        ("batch", "v1", "CronJob"),
        ("autoscaling", "v1", "Scale"),
        ("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
    ] {
        let entry = (g.to_owned(), v.to_owned(), k.to_owned());
        assert!(all.contains(&entry), "{entry:?}");
    }
}

#[test]
fn versions_are_those_of_the_minor() {
    assert_eq!(versions_of("apps", "Deployment", NEWEST), ["v1"]);
    assert_eq!(
        versions_of("autoscaling", "HorizontalPodAutoscaler", 30),
        ["v1", "v2"]
    );
    // resource.k8s.io v1 arrived in 1.34.
    assert!(schema("resource.k8s.io", "v1", "ResourceClaim", 30).is_none());
    assert!(schema("resource.k8s.io", "v1", "ResourceClaim", 33).is_none());
    assert!(schema("resource.k8s.io", "v1", "ResourceClaim", 34).is_some());
    assert!(schema("resource.k8s.io", "v1", "ResourceClaim", NEWEST).is_some());
    assert!(!versions_of("resource.k8s.io", "ResourceClaim", 30).contains(&"v1".to_owned()));
    assert!(versions_of("resource.k8s.io", "ResourceClaim", NEWEST).contains(&"v1".to_owned()));
}

/// Every node: only `JSONSchemaProps` keys, no reference left, a type unless
/// int-or-string or preserved unknown fields.
fn check_nodes(node: &Value, path: &str) {
    let map = node
        .as_object()
        .unwrap_or_else(|| panic!("{path}: not an object"));
    for key in map.keys() {
        let walked = matches!(
            key.as_str(),
            "properties" | "items" | "additionalProperties"
        );
        assert!(
            walked || COPIED.contains(&key.as_str()),
            "{path}: key {key}"
        );
    }
    let untyped_ok = map.contains_key("x-kubernetes-int-or-string")
        || map.contains_key("x-kubernetes-preserve-unknown-fields");
    assert!(map.contains_key("type") || untyped_ok, "{path}: no type");
    for (name, child) in map
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        check_nodes(child, &format!("{path}.properties[{name}]"));
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = map.get(key).filter(|c| c.is_object()) {
            check_nodes(child, &format!("{path}.{key}"));
        }
    }
}

#[test]
fn every_kind_of_the_oldest_and_newest_minor_is_a_structural_schema() {
    for minor in [*MINORS.start(), NEWEST] {
        let all = kinds(minor);
        assert!(all.len() > 60, "1.{minor}: {} kinds", all.len());
        for (g, v, k) in &all {
            let what = format!("1.{minor} {g}/{v}/{k}");
            let json = schema(g, v, k, minor).unwrap_or_else(|| panic!("{what}: no schema"));
            check_nodes(&json, &what);
            let props: JSONSchemaProps = serde_json::from_value(json)
                .unwrap_or_else(|e| panic!("{what}: not JSONSchemaProps: {e}"));
            if let Err(e) = Schema::from_openapi(&props) {
                panic!("{what}: {e}");
            }
        }
    }
}

#[test]
fn every_kind_of_every_minor_resolves() {
    for minor in MINORS {
        for (g, v, k) in kinds(minor) {
            assert!(schema(&g, &v, &k, minor).is_some(), "1.{minor} {g}/{v}/{k}");
            assert!(
                versions_of(&g, &k, minor).contains(&v),
                "1.{minor} {g}/{v}/{k}"
            );
        }
    }
}

#[test]
fn the_crd_kind_cuts_its_recursion() {
    let crd = schema(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        NEWEST,
    )
    .expect("CustomResourceDefinition");
    let props = at_path(
        &crd,
        "properties.spec.properties.versions.items.properties.schema.properties.openAPIV3Schema.properties",
    );
    // JSONSchemaProps is inlined once; below it, itself is an opaque object.
    assert_eq!(props["type"], json!({"type": "string"}));
    assert_eq!(
        props["properties"]["additionalProperties"],
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
    );
    assert_eq!(
        props["not"],
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
    );
    assert_eq!(
        props["default"],
        json!({"x-kubernetes-preserve-unknown-fields": true})
    );
    let props: JSONSchemaProps = serde_json::from_value(crd).expect("JSONSchemaProps");
    Schema::from_openapi(&props).expect("structural");
}

#[test]
fn object_meta_is_inlined() {
    let meta = object_meta(NEWEST).expect("ObjectMeta");
    assert_eq!(meta["type"], "object");
    assert_eq!(
        meta["properties"]["annotations"]["additionalProperties"]["type"],
        "string"
    );
    let owners = &meta["properties"]["ownerReferences"];
    assert_eq!(owners["x-kubernetes-list-type"], "map");
    assert_eq!(owners["x-kubernetes-list-map-keys"], json!(["uid"]));
    assert_eq!(
        owners["items"]["properties"]["controller"]["type"],
        "boolean"
    );
    assert_eq!(
        meta["properties"]["managedFields"]["items"]["properties"]["fieldsV1"],
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
    );
    assert_eq!(
        object_meta(*MINORS.start()).map(|m| m["type"].clone()),
        Some(json!("object"))
    );
}

#[test]
fn merge_keyed_lists_without_a_list_type_become_map_lists() {
    let mut node = json!({"type": "array", "items": {"type": "object"}});
    let Value::Object(map) = &mut node else {
        unreachable!()
    };
    as_map_list(map, "name");
    assert_eq!(node["x-kubernetes-list-type"], "map");
    assert_eq!(node["x-kubernetes-list-map-keys"], json!(["name"]));
    // A declared list type stands (JobStatus.conditions is atomic).
    let mut node = json!({"type": "array", "x-kubernetes-list-type": "atomic"});
    let Value::Object(map) = &mut node else {
        unreachable!()
    };
    as_map_list(map, "type");
    assert_eq!(
        node,
        json!({"type": "array", "x-kubernetes-list-type": "atomic"})
    );
    let job = schema("batch", "v1", "Job", NEWEST).expect("Job");
    let conditions = at_path(&job, "properties.status.properties.conditions");
    assert_eq!(conditions["x-kubernetes-list-type"], "atomic");
    assert!(conditions.get("x-kubernetes-list-map-keys").is_none());
    // Through the resolver: the merge key itself is dropped.
    let data = Data {
        minors: MINORS.collect(),
        definitions: [(
            "T".to_owned(),
            vec![(
                30,
                37,
                json!({"type": "object", "properties": {"l": {
                    "type": "array",
                    "x-kubernetes-patch-merge-key": "k",
                    "items": {"type": "object", "properties": {"k": {"type": "string"}}}
                }}}),
            )],
        )]
        .into_iter()
        .collect(),
        kinds: HashMap::new(),
    };
    let t = data.resolve("T", NEWEST).expect("T");
    assert_eq!(
        t["properties"]["l"],
        json!({
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["k"],
            "items": {"type": "object", "properties": {"k": {"type": "string"}}}
        })
    );
}

#[test]
fn bad_references_are_opaque_not_panics() {
    let data = Data {
        minors: MINORS.collect(),
        definitions: [
            (
                "A".to_owned(),
                vec![(
                    30,
                    37,
                    json!({"type": "object", "properties": {
                        "missing": {"$ref": "Nowhere"},
                        "notString": {"$ref": 7},
                        "self": {"$ref": "A"},
                        "b": {"$ref": "B"},
                        "odd": 3
                    }}),
                )],
            ),
            ("B".to_owned(), vec![(30, 31, json!({"type": "string"}))]),
        ]
        .into_iter()
        .collect(),
        kinds: HashMap::new(),
    };
    let opaque = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    let a = data.resolve("A", NEWEST).expect("A");
    for name in ["missing", "notString", "self", "b", "odd"] {
        assert_eq!(a["properties"][name], opaque, "{name}");
    }
    let a = data.resolve("A", 30).expect("A");
    assert_eq!(a["properties"]["b"], json!({"type": "string"}));
    assert!(data.resolve("B", NEWEST).is_none());
}

#[test]
fn inlining_a_pod_is_quick() {
    let _ = data();
    let start = Instant::now();
    let pod = schema("", "v1", "Pod", NEWEST).expect("Pod");
    let elapsed = start.elapsed();
    let size = serde_json::to_string(&pod)
        .map(|s| s.len())
        .unwrap_or_default();
    eprintln!("Pod 1.{NEWEST}: inlined in {elapsed:?}, {size} bytes of JSON");
    // Generous: debug builds on a shared machine.
    assert!(elapsed.as_millis() < 500, "{elapsed:?}");
}
