//! What a conversion gives back of its input, and the moved metadata's
//! answers against a copy's.

use celhook_json::{json, Value as Json};

use super::super::tests::{has_stash, load_widget, one, widget_conversion, SIZE_TO_HUB};
use super::super::{convert_all, stash, Given};
use crate::config::{self, Catalog};

/// The Widget conversion as written (metadata is moved into answers), and
/// the same with expressions that also read metadata (so that it is
/// copied and compared as it always was).
fn carried_and_copied() -> (config::Loaded, config::Loaded) {
    let size_to_hub = "self.?spec.optFlatMap(s, s.?size).optMap(n, int(n))";
    let carried = load_widget(&widget_conversion(SIZE_TO_HUB, "string(n)"));
    let copied = load_widget(&widget_conversion(
        &format!(
            r#"[{{path: spec.size, expr: "self.?metadata.hasValue() ? {size_to_hub} : {size_to_hub}"}}]"#
        ),
        "self.?metadata.hasValue() ? string(n) : string(n)",
    ));
    for loaded in [&carried, &copied] {
        assert!(!loaded.report.has_errors(), "{:#?}", loaded.report);
    }
    (carried, copied)
}

#[test]
fn metadata_lent_for_the_way_back_gives_the_answer_a_copy_gives() {
    // The same conversion twice: as written, and with expressions that
    // also read metadata, so that the way back must carry a copy of it.
    let (lent, copied) = carried_and_copied();
    let widgets = |c: &Catalog| {
        c.conversion("example.org", "Widget")
            .expect("the Widget conversion")
            .keeps_metadata("v2", "v1")
    };
    assert!(widgets(&lent.catalog));
    assert!(!widgets(&copied.catalog));
    let v1 = json!({"apiVersion": "example.org/v1", "kind": "Widget",
        "metadata": {"name": "w", "labels": {"a": "b"}, "annotations": {"x": "y"}},
        "spec": {"size": 3, "color": "red"}});
    let v2 = json!({"apiVersion": "example.org/v2", "kind": "Widget",
        "metadata": {"name": "w", "labels": {"a": "b"}}, "spec": {"size": "12"}});
    for (object, desired) in [(&v1, "example.org/v2"), (&v2, "example.org/v1")] {
        let there = one(&lent.catalog, desired, object.clone());
        assert_eq!(
            there,
            one(&copied.catalog, desired, object.clone()),
            "{object}"
        );
        assert_eq!(there["metadata"]["labels"], json!({"a": "b"}), "{there}");
        // And back again, through the stash.
        let back = object["apiVersion"].as_str().expect("apiVersion");
        assert_eq!(one(&lent.catalog, back, there.clone()), *object);
        assert_eq!(one(&copied.catalog, back, there), *object);
    }
}

#[test]
fn what_is_given_back_for_the_guard() {
    let (carried, copied) = carried_and_copied();
    fn widget(c: &Catalog) -> &super::super::Conversion {
        c.conversion("example.org", "Widget")
            .expect("the Widget conversion")
    }
    let v1 = json!({"apiVersion": "example.org/v1", "kind": "Widget",
        "metadata": {"name": "w", "annotations": {"x": "y"}},
        "spec": {"size": 3, "color": "red"}});
    let carried_as = |annotations_changed| Given::Carried {
        kind: Some(json!("Widget")),
        annotations_changed,
    };

    // Metadata moved: the guard learns only whether the annotations changed.
    let c = widget(&carried.catalog);
    let (v2, given) = c.convert_keeping(v1.clone(), "v1", "v2").expect("converts");
    assert!(has_stash(&v2), "{v2}");
    assert_eq!(given, carried_as(true), "color went into a new stash");
    let (back, given) = c.convert_keeping(v2.clone(), "v2", "v1").expect("converts");
    assert_eq!(back, v1);
    assert_eq!(given, carried_as(true), "the stash was used up");
    let lossless = json!({"apiVersion": "example.org/v2", "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"size": "12"}});
    let (_, given) = c
        .convert_keeping(lossless.clone(), "v2", "v1")
        .expect("converts");
    assert_eq!(given, carried_as(false));
    // A stash entry that restores into metadata: the metadata is copied.
    let mut forged = lossless;
    forged["metadata"]["annotations"] = json!({stash::ANNOTATION: json!({"example.org/v1":
        [{"path": ["metadata", "labels", "l"], "value": "forged"}]}).to_string()});
    let (back, given) = c
        .convert_keeping(forged.clone(), "v2", "v1")
        .expect("converts");
    assert_eq!(back["metadata"]["labels"], json!({"l": "forged"}), "{back}");
    assert_eq!(given, Given::Input(forged));

    // Metadata read by an expression: the input as it came, the stash
    // annotation given back in place, alone or beside others.
    let c = widget(&copied.catalog);
    let (v2, given) = c.convert_keeping(v1.clone(), "v1", "v2").expect("converts");
    assert_eq!(given, Given::Input(v1.clone()));
    let mut alone = v2.clone();
    alone["metadata"]
        .as_object_mut()
        .expect("metadata")
        .get_mut("annotations")
        .and_then(Json::as_object_mut)
        .expect("annotations")
        .remove("x");
    for input in [v2, alone] {
        let (back, given) = c
            .convert_keeping(input.clone(), "v2", "v1")
            .expect("converts");
        assert_eq!(given, Given::Input(input));
        assert_eq!(back["spec"], json!({"size": 3, "color": "red"}));
    }
    // Already at the target: the answer is the input.
    assert_eq!(
        c.convert_keeping(v1.clone(), "v1", "v1").expect("same"),
        (v1, Given::Same)
    );
}

/// Inputs whose metadata is ordinary, odd or broken, each with the
/// apiVersion to convert it to.
fn inputs() -> Vec<(Json, &'static str)> {
    let widget = |version: &str, metadata: Option<Json>, spec: Json| {
        let mut o =
            json!({"apiVersion": format!("example.org/{version}"), "kind": "Widget", "spec": spec});
        if let Some(m) = metadata {
            o["metadata"] = m;
        }
        o
    };
    let lossy = json!({"size": 3, "color": "red"});
    let lossless = json!({"size": 3});
    let stash_of = |entries: Json| json!({"example.org/v1": entries}).to_string();
    let huge = "x".repeat(256 * 1024);
    let mut out = Vec::new();
    for spec in [&lossy, &lossless] {
        for metadata in [
            Some(
                json!({"name": "w", "namespace": "n", "uid": "u", "labels": {"a": "b"},
                        "annotations": {"x": "y"}, "managedFields": [{"manager": "m"}]}),
            ),
            Some(json!({"name": "w"})),
            Some(json!({"name": "w", "annotations": {}})),
            // Invalid, unchanged unless a stash is added.
            Some(json!({"name": "w", "annotations": {"bad key": "v"}})),
            Some(json!({"name": "w", "labels": {"bad key": "v"}})),
            Some(json!({"name": "w", "annotations": "not a map"})),
            Some(json!({"name": "w", "annotations": {"big": huge}})),
            Some(json!("not a map")),
            None,
        ] {
            out.push((widget("v1", metadata, spec.clone()), "example.org/v2"));
        }
    }
    for stash in [
        stash_of(json!([{"path": ["spec", "color"], "value": "red"}])),
        stash_of(json!([{"path": ["metadata", "labels", "l"], "value": "forged"}])),
        stash_of(json!([{"path": ["metadata", "name"], "value": "renamed"}])),
        stash_of(json!([{"path": ["metadata"], "value": {}}])),
        "not json".to_owned(),
    ] {
        for others in [json!({}), json!({"x": "y"}), json!({"bad key": "v"})] {
            let mut annotations = others;
            annotations[stash::ANNOTATION] = json!(stash);
            let metadata = json!({"name": "w", "uid": "u", "annotations": annotations});
            out.push((
                widget("v2", Some(metadata), json!({"size": "3"})),
                "example.org/v1",
            ));
        }
    }
    out
}

#[test]
fn carried_metadata_gives_the_answers_and_refusals_a_copy_gives() {
    let (carried, copied) = carried_and_copied();
    let (mut answers, mut refusals) = (0, 0);
    for (input, desired) in inputs() {
        let convert =
            |c: &Catalog| convert_all(c, desired, vec![input.clone()]).map_err(|e| e.to_string());
        let got = convert(&carried.catalog);
        assert_eq!(got, convert(&copied.catalog), "{input}");
        match got {
            Ok(_) => answers += 1,
            Err(_) => refusals += 1,
        }
    }
    // Both kinds of outcome are compared, not only one.
    assert!(
        answers >= 15 && refusals >= 10,
        "{answers} answers, {refusals} refusals"
    );
    // And the moved metadata was the path taken for most of them.
    let c = carried
        .catalog
        .conversion("example.org", "Widget")
        .expect("the Widget conversion");
    let moved = inputs()
        .into_iter()
        .filter(|(input, desired)| {
            let (from, to) = (
                &input["apiVersion"].as_str().expect("apiVersion")[12..],
                &desired[12..],
            );
            matches!(
                c.convert_keeping(input.clone(), from, to),
                Ok((_, Given::Carried { .. }))
            )
        })
        .count();
    assert!(moved >= 14, "{moved} carried");
}
