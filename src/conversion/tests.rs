//! Engine tests over the embedded examples.

use celhook_json::{json, Value as Json};

use super::*;
use crate::config::{self, Catalog, ConfigSource};

pub(super) fn catalog() -> Catalog {
    let loaded = config::load(&ConfigSource::Embedded);
    assert!(!loaded.report.has_errors(), "{:#?}", loaded.report);
    loaded.catalog
}

#[test]
fn embedded_examples_load_with_their_conversions() {
    let c = catalog();
    assert!(c.conversion("example.com", "CronTab").is_some());
    assert!(c
        .conversion("restaurant.programming-kubernetes.info", "Pizza")
        .is_some());
    assert_eq!(c.conversion_count(), 2);
}

const CRONTAB_V1: &str = "example.com/v1";
const CRONTAB_V1BETA1: &str = "example.com/v1beta1";
const PIZZA_V1ALPHA1: &str = "restaurant.programming-kubernetes.info/v1alpha1";
const PIZZA_V1BETA1: &str = "restaurant.programming-kubernetes.info/v1beta1";

fn crontab_v1beta1(name: &str, host_port: &str) -> Json {
    json!({
        "apiVersion": CRONTAB_V1BETA1, "kind": "CronTab",
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"), "resourceVersion": "143"},
        "hostPort": host_port
    })
}

fn pizza(api_version: &str, toppings: Json) -> Json {
    json!({
        "apiVersion": api_version, "kind": "Pizza",
        "metadata": {"name": "margherita", "namespace": "pizza-crd", "uid": "15c1c06a"},
        "spec": {"toppings": toppings},
        "status": {"cost": 8.5}
    })
}

/// The conversion of the Pizza example in `c`.
fn pizza_conversion(c: &Catalog) -> &Conversion {
    c.conversion("restaurant.programming-kubernetes.info", "Pizza")
        .expect("the Pizza conversion")
}

pub(super) fn one(c: &Catalog, desired: &str, object: Json) -> Json {
    let mut out = convert_all(c, desired, vec![object]).expect("converts");
    out.pop().expect("one object")
}

/// Why converting `objects` to `desired` fails.
fn refusal(c: &Catalog, desired: &str, objects: Vec<Json>) -> String {
    convert_all(c, desired, objects)
        .expect_err("refused")
        .to_string()
}

/// Asserts that `text` contains `part`.
#[track_caller]
fn assert_contains(text: &str, part: &str) {
    assert!(text.contains(part), "{text}");
}

pub(super) fn has_stash(o: &Json) -> bool {
    o.pointer("/metadata/annotations")
        .and_then(|a| a.get(stash::ANNOTATION))
        .is_some()
}

#[test]
fn crontab_host_port_splits_and_joins() {
    let c = catalog();
    let v1 = one(&c, CRONTAB_V1, crontab_v1beta1("local", "localhost:1234"));
    assert_eq!(v1["apiVersion"], CRONTAB_V1);
    assert_eq!(v1["host"], "localhost");
    assert_eq!(v1["port"], "1234");
    assert!(v1.get("hostPort").is_none(), "pruned: {v1}");
    assert!(!has_stash(&v1), "nothing to keep: {v1}");
    assert_eq!(v1["metadata"], crontab_v1beta1("local", "")["metadata"]);

    let back = one(&c, CRONTAB_V1BETA1, v1);
    assert_eq!(back, crontab_v1beta1("local", "localhost:1234"));
}

#[test]
fn crontab_values_the_other_version_cannot_express_survive_the_round_trip() {
    let c = catalog();
    for odd in ["no-port", "a:b:c", ":", ""] {
        let original = crontab_v1beta1("odd", odd);
        let v1 = one(&c, CRONTAB_V1, original.clone());
        let back = one(&c, CRONTAB_V1BETA1, v1.clone());
        assert_eq!(back, original, "via {v1}");
    }
}

#[test]
fn pizza_toppings_follow_the_book_in_both_directions() {
    let c = catalog();
    let alpha = pizza(PIZZA_V1ALPHA1, json!(["mozzarella", "tomato", "tomato"]));
    let beta = one(&c, PIZZA_V1BETA1, alpha.clone());
    assert_eq!(
        beta["spec"]["toppings"],
        json!([{"name": "mozzarella", "quantity": 1}, {"name": "tomato", "quantity": 2}])
    );
    assert_eq!(beta["status"]["cost"], 8.5);
    assert!(!has_stash(&beta), "{beta}");
    assert_eq!(one(&c, PIZZA_V1ALPHA1, beta), alpha);
}

#[test]
fn pizza_order_is_kept_through_the_stash_and_edits_win_over_it() {
    let c = catalog();
    let alpha = pizza(PIZZA_V1ALPHA1, json!(["tomato", "mozzarella", "tomato"]));
    let mut beta = one(&c, PIZZA_V1BETA1, alpha.clone());
    assert!(has_stash(&beta), "the order needs keeping: {beta}");
    assert_eq!(one(&c, PIZZA_V1ALPHA1, beta.clone()), alpha);

    // A client edits the v1beta1 object: its toppings win, the stash is
    // not applied to them, and nothing of ours is left behind.
    beta["spec"]["toppings"] = json!([{"name": "salami", "quantity": 2}]);
    let edited = one(&c, PIZZA_V1ALPHA1, beta);
    assert_eq!(edited["spec"]["toppings"], json!(["salami", "salami"]));
    assert!(!has_stash(&edited), "{edited}");
}

#[test]
fn mixed_versions_keep_their_order_and_the_desired_version_is_untouched() {
    let c = catalog();
    let already = json!({
        "apiVersion": CRONTAB_V1, "kind": "CronTab",
        "metadata": {"name": "b", "uid": "u-b"}, "host": "h", "port": "1", "extra": "kept as sent"
    });
    let out = convert_all(
        &c,
        CRONTAB_V1,
        vec![
            crontab_v1beta1("a", "a:1"),
            already.clone(),
            crontab_v1beta1("c", "c:3"),
        ],
    )
    .expect("converts");
    assert_eq!(out.len(), 3);
    assert_eq!(out[0]["metadata"]["name"], "a");
    assert_eq!(out[1], already);
    assert_eq!(out[2]["host"], "c");
}

#[test]
fn unknown_targets_and_objects_fail_with_clear_messages() {
    let c = catalog();
    let err = |desired: &str, o: Json| refusal(&c, desired, vec![o]);
    let e = err("nowhere.io/v1", crontab_v1beta1("a", "a:1"));
    assert!(
        e.contains("desiredAPIVersion \"nowhere.io/v1\"") && e.contains("nowhere.io"),
        "{e}"
    );
    let e = err("example.com/v9", crontab_v1beta1("a", "a:1"));
    assert!(
        e.contains("object 0 (default/a)") && e.contains("not a version of crontabs.example.com"),
        "{e}"
    );
    let mut bad_kind = crontab_v1beta1("a", "a:1");
    bad_kind["kind"] = json!("CronJob");
    let e = err(CRONTAB_V1, bad_kind);
    assert_contains(&e, "kind \"CronJob\"");
    let mut bad_version = crontab_v1beta1("a", "a:1");
    bad_version["apiVersion"] = json!("example.com/v2");
    let e = err(CRONTAB_V1, bad_version);
    assert_contains(&e, "apiVersion \"example.com/v2\" is not a version");
    let e = err(
        "stable.example.com/v1",
        json!({"apiVersion": "stable.example.com/v1beta1", "kind": "CronTab", "metadata": {"name": "x"}}),
    );
    assert_contains(&e, "crontabs.stable.example.com has no conversion document");
}

#[test]
fn one_failing_object_fails_all_and_names_the_expression() {
    let c = catalog();
    let good = pizza(PIZZA_V1BETA1, json!([{"name": "tomato", "quantity": 1}]));
    let bad = pizza(PIZZA_V1BETA1, json!([{"name": "tomato"}]));
    let e = refusal(&c, PIZZA_V1ALPHA1, vec![good, bad]);
    assert!(
        e.starts_with(
            "object 1 (pizza-crd/margherita): spec.versions.v1beta1.toHub[0] (path spec.toppings"
        ),
        "{e}"
    );
    assert_contains(&e, "lists.range(t.quantity)");
}

pub(super) fn load_dir(files: &[(&str, &str)]) -> config::Loaded {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).expect("write");
    }
    config::load(&ConfigSource::Dir(dir.path().to_owned()))
}

/// Widgets of example.org: v1 (the hub) with an integer size and a color,
/// v2 with a string size only.
const WIDGET_CRD: &str = include_str!("../../tests/fixtures/unit/conversion-widget.yaml");

/// v2's string size back to the hub's integer, as a `toHub` list.
pub(super) const SIZE_TO_HUB: &str =
    r#"[{path: spec.size, expr: "self.?spec.optFlatMap(s, s.?size).optMap(n, int(n))"}]"#;

/// The conversion document of [`WIDGET_CRD`]: `toHub` as given; `fromHub`
/// sets v2's size to `size_from_hub`, an expression of the hub's size `n`.
pub(super) fn widget_conversion(to_hub: &str, size_from_hub: &str) -> String {
    format!(
        r#"
apiVersion: celhook.dev/v1alpha1
kind: Conversion
spec:
  crd: widgets.example.org
  hub: v1
  versions:
    v2:
      toHub: {to_hub}
      fromHub:
        - path: spec.size
          expr: "self.?spec.optFlatMap(s, s.?size).optMap(n, {size_from_hub})"
"#
    )
}

/// [`WIDGET_CRD`] and the conversion document `conversion`, loaded from a
/// directory.
pub(super) fn load_widget(conversion: &str) -> config::Loaded {
    load_dir(&[("crd.yaml", WIDGET_CRD), ("conv.yaml", conversion)])
}

#[test]
fn a_field_the_target_cannot_hold_is_stashed_and_restored() {
    let loaded = load_widget(&widget_conversion(SIZE_TO_HUB, "string(n)"));
    assert!(!loaded.report.has_errors(), "{:#?}", loaded.report);
    let v1 = json!({"apiVersion": "example.org/v1", "kind": "Widget",
                    "metadata": {"name": "w", "labels": {"a": "b"}}, "spec": {"size": 3, "color": "red"}});
    let v2 = one(&loaded.catalog, "example.org/v2", v1.clone());
    assert_eq!(v2["spec"], json!({"size": "3"}), "color is pruned from v2");
    assert!(has_stash(&v2), "{v2}");
    assert_eq!(one(&loaded.catalog, "example.org/v1", v2), v1);
}

#[test]
fn an_invalid_label_from_an_expression_fails_the_review() {
    let loaded = load_widget(&widget_conversion(
        r#"[{path: spec.size, expr: "self.?spec.optFlatMap(s, s.?size).optMap(n, int(n))"}, {path: metadata.labels.size, expr: "'not a label value'"}]"#,
        "string(n)",
    ));
    assert!(!loaded.report.has_errors(), "{:#?}", loaded.report);
    let v2 = json!({"apiVersion": "example.org/v2", "kind": "Widget", "metadata": {"name": "w", "namespace": "ns"}});
    let e = refusal(&loaded.catalog, "example.org/v1", vec![v2]);
    assert!(
        e.starts_with(
            "object 0 (ns/w): metadata.labels[\"size\"]: Invalid value: \"not a label value\""
        ),
        "{e}"
    );
}

#[test]
fn documents_are_refused_with_file_crd_version_path_and_reason() {
    let loaded = load_widget(&widget_conversion(
        r#"[{path: spec.weight, expr: "1"}, {path: metadata.name, expr: "'x'"}, {path: spec.size, expr: "self.nope"}]"#,
        "string(n)",
    ));
    let problems: Vec<_> = loaded
        .report
        .crds
        .iter()
        .flat_map(|c| c.errors.clone())
        .collect();
    let paths: Vec<_> = problems.iter().filter_map(|p| p.path.clone()).collect();
    assert_eq!(
        paths,
        [
            "spec.versions.v2.toHub[0].path",
            "spec.versions.v2.toHub[1].path",
            "spec.versions.v2.toHub[2].expr"
        ],
        "{problems:#?}"
    );
    assert!(problems.iter().all(|p| p.file.ends_with("conv.yaml")
        && p.crd.as_deref() == Some("widgets.example.org")
        && p.version.as_deref() == Some("v2")));
    assert!(
        problems[0].reason.contains("no field spec.weight"),
        "{}",
        problems[0].reason
    );
    assert!(
        problems[1].reason.contains("only metadata.labels"),
        "{}",
        problems[1].reason
    );
    assert!(
        problems[2].reason.contains("compilation failed"),
        "{}",
        problems[2].reason
    );
    assert!(loaded.catalog.conversion("example.org", "Widget").is_none());
}

#[test]
fn unknown_hub_crd_and_versions_are_refused() {
    let conv =
        |body: &str| format!("apiVersion: celhook.dev/v1alpha1\nkind: Conversion\nspec:\n{body}");
    for (body, path, want) in [
        (
            "  crd: widgets.example.org\n  hub: v7\n",
            "spec.hub",
            "not a version",
        ),
        (
            "  crd: gadgets.example.org\n  hub: v1\n",
            "spec.crd",
            "no CustomResourceDefinition",
        ),
        (
            "  crd: widgets.example.org\n  hub: v1\n  versions: {v3: {}}\n",
            "spec.versions.v3",
            "not a version",
        ),
        (
            "  crd: widgets.example.org\n  hub: v1\n  versions: {v1: {}}\n",
            "spec.versions.v1",
            "hub",
        ),
        (
            "  crd: widgets.example.org\n  hub: v1\n  bogus: 1\n",
            "spec",
            "unknown field",
        ),
    ] {
        let loaded = load_widget(&conv(body));
        let problems: Vec<_> = crate::config::report::problems(&loaded.report)
            .map(|p| p.into_owned())
            .collect();
        assert_eq!(problems.len(), 1, "{body}: {problems:#?}");
        assert_eq!(problems[0].path.as_deref(), Some(path), "{body}");
        assert!(
            problems[0].reason.contains(want),
            "{body}: {}",
            problems[0].reason
        );
    }
}

#[test]
fn failing_example_round_trips_are_reported() {
    // An expression that fails at run time on the example object.
    let doc = widget_conversion(
        r#"[{path: spec.size, expr: "int(self.spec.size) / 0"}]"#,
        "string(n)",
    ) + "  examples:\n    - {apiVersion: example.org/v2, kind: Widget, metadata: {name: e}, spec: {size: \"4\"}}\n";
    let loaded = load_widget(&doc);
    let problems: Vec<_> = crate::config::report::problems(&loaded.report)
        .map(|p| p.into_owned())
        .collect();
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert_eq!(problems[0].path.as_deref(), Some("spec.examples[0]"));
    assert!(
        problems[0].reason.contains("converting v2 -> v1"),
        "{}",
        problems[0].reason
    );
}

#[test]
fn paths_parse_names_and_bracketed_keys() {
    use document::parse_path;
    assert_eq!(parse_path("spec.a").unwrap(), ["spec", "a"]);
    assert_eq!(
        parse_path(r#"metadata.labels["app.kubernetes.io/name"]"#).unwrap(),
        ["metadata", "labels", "app.kubernetes.io/name"]
    );
    for bad in [
        "",
        "a..b",
        ".a",
        "a.",
        r#"a["x"#,
        r#"a.["x"]"#,
        r#"a["x"]b"#,
    ] {
        assert!(parse_path(bad).is_err(), "{bad}");
    }
}

#[test]
fn prune_follows_the_schema() {
    let c = catalog();
    let schema = &pizza_conversion(&c).plans["v1beta1"].schema;
    let mut o = json!({"apiVersion": "x", "kind": "Pizza", "metadata": {"name": "m", "anything": 1},
                       "spec": {"toppings": [{"name": "a", "quantity": 1, "extra": true, "name2": null}], "other": 1},
                       "status": {"cost": null},
                       "top": 1});
    prune(&mut o, schema, true);
    assert_eq!(
        o,
        json!({"apiVersion": "x", "kind": "Pizza", "metadata": {"name": "m", "anything": 1},
                         "spec": {"toppings": [{"name": "a", "quantity": 1}]}, "status": {}})
    );
    // Nulls of fields that are not nullable go, as the API server drops
    // them before storing (found by the conversion fuzz target).
    let mut o = json!({"spec": {"toppings": null}});
    prune(&mut o, schema, true);
    assert_eq!(o, json!({"spec": {}}));
}

#[test]
fn a_value_of_the_wrong_type_fails_the_conversion() {
    // fromHub gives an int where v2 declares a string: typed, the load
    // refuses it (coverage); through dyn(), only the value can tell.
    let typed = load_widget(&widget_conversion(SIZE_TO_HUB, "n"));
    let problems: Vec<String> = crate::config::report::problems(&typed.report)
        .map(|p| p.reason.clone())
        .collect();
    assert!(
        problems.iter().any(|p| p.ends_with("gives int, where the target schema declares string at spec.size")),
        "{problems:?}"
    );
    let loaded = load_widget(&widget_conversion(SIZE_TO_HUB, "dyn(n)"));
    assert!(!loaded.report.has_errors(), "{:#?}", loaded.report);
    let v1 = json!({"apiVersion": "example.org/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 3}});
    let e = refusal(&loaded.catalog, "example.org/v2", vec![v1]);
    assert_contains(
        &e,
        "gives a number at spec.size, where the target schema declares string",
    );
}

#[test]
fn check_type_follows_items_and_properties() {
    let c = catalog();
    let toppings = pizza_conversion(&c).plans["v1beta1"].schema.properties["spec"].properties
        ["toppings"]
        .clone();
    let check = |v: Json| mismatch(&v, &toppings).map(|m| m.describe("t"));
    assert_eq!(check(json!([{"name": "a", "quantity": 1}])), None);
    let e = check(json!([{"name": "b", "quantity": 2}, {"name": "a", "quantity": "1"}]))
        .expect("a string quantity");
    assert_eq!(
        e,
        "gives a string at t[1].quantity, where the target schema declares integer"
    );
    assert!(check(json!({"x": 1})).is_some());
}

#[test]
fn the_copy_before_placing_leaves_out_only_what_is_overwritten() {
    let object = json!({"apiVersion": "v", "spec": {"a": [1, 2], "b": {"c": 1, "d": 2}, "e": "x"},
                        "status": {"f": 1}});
    let path = |p: &str| p.split('.').map(str::to_owned).collect::<Vec<_>>();
    let copy = |paths: &[&str]| {
        let owned: Vec<Vec<String>> = paths.iter().map(|p| path(p)).collect();
        let refs: Vec<&[String]> = owned.iter().map(Vec::as_slice).collect();
        copy_below(&object, &refs)
    };
    assert_eq!(copy(&[]), object);
    assert_eq!(
        copy(&["spec.a", "spec.b.c"]),
        json!({"apiVersion": "v", "spec": {"b": {"d": 2}, "e": "x"}, "status": {"f": 1}})
    );
    // Below a scalar or through a missing parent: copied as it is.
    assert_eq!(copy(&["spec.e.g", "missing.h"]), object);
    // Written whole and below: which write meets what depends on their
    // order, so the value is copied whole.
    assert_eq!(copy(&["spec.b.c", "spec.b"]), object);
    assert_eq!(
        copy(&["spec"]),
        json!({"apiVersion": "v", "status": {"f": 1}})
    );
}
