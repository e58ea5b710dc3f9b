//! Property tests of the conversion engine over the embedded seed examples:
//! objects generated from each version's schema convert to every other
//! version and back unchanged (A -> B -> A == A), every answer passes the
//! metadata guard, and nothing the target schema cannot hold is sent;
//! batches in mixed versions keep their order, count and metadata; and a
//! batch with one failing object anywhere gives a failure and no objects.

use celhook::config::{self, Catalog, ConfigSource};
use celhook::conversion::{self, guard};
use celhook::schema::{Schema, Type};
use celhook_json::{json, Map, Value};
use proptest::prelude::*;

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
        .prop_map(|fields| Value::Object(fields.into_iter().flatten().collect::<Map>()))
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
        // The same object through `convert --round-trip --strict`: no
        // difference, and a value only in the stash only where the
        // document acknowledges its field.
        let mut found = conversion::round_trip::RoundTrips::default();
        found.check_text(c, "generated.json", &original.to_string());
        prop_assert_eq!(found.objects, 1);
        prop_assert!(!found.fails(true), "{:?}", found.lines);
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

    #[test]
    fn batches_in_mixed_versions_keep_order_count_and_metadata(
        batch in prop::collection::vec(resources(), 1..24),
        target_pick in any::<prop::sample::Index>(),
    ) {
        let c = catalog();
        // A review carries objects of one CRD: keep those of the first's kind.
        let (group, kind) = (batch[0].0.clone(), batch[0].1.clone());
        let objects: Vec<Value> = batch
            .into_iter()
            .filter(|(g, k, _, _)| *g == group && *k == kind)
            .enumerate()
            .map(|(i, (_, _, _, mut o))| {
                // Unique identities, so that order is observable.
                o["metadata"]["uid"] = json!(format!("uid-{i}"));
                o
            })
            .collect();
        let conv = c.conversion(&group, &kind).expect("conversion");
        let target = target_pick.get(conv.versions());
        let desired = format!("{group}/{target}");
        let converted = conversion::convert_all(c, &desired, objects.clone())
            .map_err(|e| TestCaseError::fail(format!("to {desired}: {e}")))?;
        prop_assert_eq!(converted.len(), objects.len());
        for (i, (original, out)) in objects.iter().zip(&converted).enumerate() {
            prop_assert_eq!(&out["apiVersion"], &json!(desired));
            prop_assert_eq!(&out["kind"], &original["kind"]);
            // Identity and labels unchanged; annotations unchanged but for
            // celhook's own stash.
            let (m, n) = (&original["metadata"], &out["metadata"]);
            for field in ["name", "namespace", "uid", "resourceVersion", "creationTimestamp", "labels"] {
                prop_assert_eq!(&m[field], &n[field], "object {} metadata.{}", i, field);
            }
            let mut annotations = n["annotations"].clone();
            if let Some(a) = annotations.as_object_mut() {
                a.remove(conversion::stash::ANNOTATION);
                if a.is_empty() && m["annotations"].is_null() {
                    annotations = Value::Null;
                }
            }
            prop_assert_eq!(&annotations, &m["annotations"], "object {} annotations", i);
            // And each converts back to exactly what was sent.
            let back_to = original["apiVersion"].as_str().expect("apiVersion");
            let back = conversion::convert_all(c, back_to, vec![out.clone()])
                .map_err(|e| TestCaseError::fail(format!("back to {back_to}: {e}")))?;
            prop_assert_eq!(&back[0], original);
        }
    }

    #[test]
    fn a_batch_with_a_failing_object_anywhere_fails_whole(
        batch in prop::collection::vec(resources(), 1..24),
        position in any::<prop::sample::Index>(),
    ) {
        let c = catalog();
        let (group, kind) = (batch[0].0.clone(), batch[0].1.clone());
        let mut objects: Vec<Value> = batch
            .into_iter()
            .filter(|(g, k, _, _)| *g == group && *k == kind)
            .map(|(_, _, _, o)| o)
            .collect();
        // An object of a version the CRD does not have cannot be converted.
        let at = position.index(objects.len() + 1);
        let mut bad = objects[0].clone();
        bad["apiVersion"] = json!(format!("{group}/v9"));
        bad["metadata"]["name"] = json!("the-bad-one");
        objects.insert(at, bad);
        let total = objects.len();
        let desired = format!("{group}/{}", c.conversion(&group, &kind).expect("conversion").versions()[0]);
        let mut handed_out = 0;
        let outcome = conversion::convert_each(c, &desired, objects.into_iter().map(Ok), |_| {
            handed_out += 1;
            Ok(())
        });
        let err = outcome.expect_err("the batch fails");
        // The objects before it were converted (and are discarded by the
        // caller), none after it was, and the failure names the object.
        prop_assert_eq!(handed_out, at);
        prop_assert!(handed_out < total);
        let message = err.to_string();
        prop_assert!(message.starts_with(&format!("object {at} (")), "{}", message);
        prop_assert!(message.contains("the-bad-one"), "{}", message);
    }
}
