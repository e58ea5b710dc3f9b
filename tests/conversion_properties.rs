//! Property tests of the conversion engine over the embedded seed examples:
//! objects generated from each version's schema convert to every other
//! version and back unchanged (A -> B -> A == A), every answer passes the
//! metadata guard, and nothing the target schema cannot hold is sent.

use celhook::config::{self, Catalog, ConfigSource};
use celhook::conversion::{self, guard};
use celhook::schema::{Schema, Type};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

fn catalog() -> &'static Catalog {
    static CATALOG: std::sync::OnceLock<Catalog> = std::sync::OnceLock::new();
    CATALOG.get_or_init(|| {
        let loaded = config::load(&ConfigSource::Embedded);
        assert!(!loaded.report.has_errors(), "{:#?}", loaded.report);
        loaded.catalog
    })
}

/// Values shaped by a schema node. Strings come from a small alphabet with
/// the separators the seed conversions care about (':' in hostPort),
/// integers stay within the Pizza quantity bounds (1..=100, kept small so
/// the v1alpha1 lists stay short), lists are short and repeat elements.
fn value(schema: &Schema) -> BoxedStrategy<Value> {
    match schema.ty {
        Type::String => "[a-c:]{0,6}".prop_map(Value::from).boxed(),
        Type::Integer => (1i64..=4).prop_map(Value::from).boxed(),
        Type::Number => prop_oneof![
            (0i64..100).prop_map(Value::from),
            (0u32..1000).prop_map(|n| json!(f64::from(n) / 4.0))
        ]
        .boxed(),
        Type::Boolean => any::<bool>().prop_map(Value::from).boxed(),
        Type::Array => {
            let items = schema.items.as_deref().cloned().unwrap_or_default();
            prop::collection::vec(value(&items), 0..5)
                .prop_map(Value::from)
                .boxed()
        }
        Type::Object => object(schema, &[]),
        Type::Any => "[a-c]{0,3}".prop_map(Value::from).boxed(),
    }
}

/// An object with a random subset of the declared properties (required
/// ones always), leaving out `skip`.
fn object(schema: &Schema, skip: &[&str]) -> BoxedStrategy<Value> {
    let mut fields: Vec<BoxedStrategy<Option<(String, Value)>>> = Vec::new();
    for (name, child) in &schema.properties {
        if skip.contains(&name.as_str()) {
            continue;
        }
        let name = name.clone();
        let required = schema.required.contains(&name);
        let v = value(child);
        fields.push(if required {
            v.prop_map(move |v| Some((name.clone(), v))).boxed()
        } else {
            prop::option::of(v.prop_map(move |v| (name.clone(), v))).boxed()
        });
    }
    fields
        .prop_map(|fields| Value::Object(fields.into_iter().flatten().collect::<Map<_, _>>()))
        .boxed()
}

fn label() -> impl Strategy<Value = String> {
    "[a-z0-9]([a-z0-9.-]{0,6}[a-z0-9])?"
}

fn metadata() -> impl Strategy<Value = Value> {
    (
        label(),
        prop::option::of(label()),
        prop::collection::btree_map(label(), label(), 0..3),
        prop::collection::btree_map(label(), ".{0,20}", 0..3),
    )
        .prop_map(|(name, namespace, labels, annotations)| {
            let mut m = json!({"name": name, "uid": format!("uid-{name}"), "resourceVersion": "42",
                               "creationTimestamp": "2019-09-04T14:03:02Z"});
            if let Some(ns) = namespace {
                m["namespace"] = json!(ns);
            }
            if !labels.is_empty() {
                m["labels"] = json!(labels);
            }
            if !annotations.is_empty() {
                m["annotations"] = json!(annotations);
            }
            m
        })
}

/// (group, kind, version, object) for every version of every example conversion.
fn resources() -> BoxedStrategy<(String, String, String, Value)> {
    let c = catalog();
    let mut all = Vec::new();
    for (group, kind) in [
        ("example.com", "CronTab"),
        ("restaurant.programming-kubernetes.info", "Pizza"),
    ] {
        let conv = c.conversion(group, kind).expect("seed conversion loaded");
        for version in conv.versions() {
            let schema = &c
                .lookup(group, version, kind)
                .expect("version")
                .validator
                .schema;
            let (g, k, v) = (group.to_owned(), kind.to_owned(), version.clone());
            all.push(
                (
                    object(schema, &["apiVersion", "kind", "metadata"]),
                    metadata(),
                )
                    .prop_map(move |(mut o, meta)| {
                        o["apiVersion"] = json!(format!("{g}/{v}"));
                        o["kind"] = json!(k.clone());
                        o["metadata"] = meta;
                        (g.clone(), k.clone(), v.clone(), o)
                    })
                    .boxed(),
            );
        }
    }
    prop::strategy::Union::new(all).boxed()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn every_round_trip_returns_the_object_and_passes_the_guard((group, kind, version, original) in resources()) {
        let c = catalog();
        let conv = c.conversion(&group, &kind).expect("conversion");
        for target in conv.versions() {
            let desired = format!("{group}/{target}");
            let there = conversion::convert_all(c, &desired, vec![original.clone()])
                .map_err(|e| TestCaseError::fail(format!("{version} -> {target}: {e}")))?;
            let there = there.into_iter().next().expect("one object");
            guard::check(0, &guard::Original::of(&original), &there, &desired)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            // Only what the target schema declares is sent.
            let schema = &c.lookup(&group, target, &kind).expect("target").validator.schema;
            let mut pruned = there.clone();
            conversion::prune(&mut pruned, schema, true);
            prop_assert_eq!(&pruned, &there);

            let back = conversion::convert_all(c, &format!("{group}/{version}"), vec![there.clone()])
                .map_err(|e| TestCaseError::fail(format!("{target} -> {version}: {e}")))?;
            prop_assert_eq!(&back[0], &original, "via {}", there);
        }
    }

    #[test]
    fn a_tampered_answer_never_passes_the_guard(
        (_g, _k, _v, original) in resources(),
        tamper in 0usize..5,
    ) {
        let desired = original["apiVersion"].as_str().unwrap_or_default().to_owned();
        let mut out = original.clone();
        match tamper {
            0 => out["metadata"]["uid"] = json!("someone-else"),
            1 => out["metadata"]["name"] = json!("renamed"),
            2 => out["metadata"]["labels"] = json!({"bad key": "v"}),
            3 => { out["metadata"].as_object_mut().map(|m| m.remove("resourceVersion")); }
            _ => out["kind"] = json!("Other"),
        }
        let originals = [guard::Original::of(&original)];
        prop_assert!(guard::check_all(&originals, &[out], &desired).is_err());
        prop_assert!(guard::check_all(&originals, &[], &desired).is_err());
    }
}
