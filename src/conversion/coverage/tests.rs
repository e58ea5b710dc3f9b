//! Coverage as `check` reports it: planted losses, renames, unfilled
//! fields, type conflicts and acknowledgements, through the config loader.

use crate::config::{load_texts, Problem, Report};

/// A two-version CRD: v1 (the hub) and v2, which renames `color` to
/// `colour`, declares `size` as a string, drops `extra` and adds `mode`.
const CRD: &str = include_str!("../../../tests/fixtures/unit/coverage-widget.yaml");

/// The conversion document with `versions` and `lossy` as given.
fn load(size_type: &str, versions: &str, lossy: &str) -> Report {
    let doc = format!(
        "apiVersion: celhook.dev/v1alpha1\nkind: Conversion\nmetadata: {{name: widgets.example.com}}\nspec:\n  crd: widgets.example.com\n  hub: v1\n  versions:\n{versions}\n{lossy}"
    );
    let crd = CRD.replace("SIZE", size_type);
    load_texts(&[
        ("crd.yaml", crd.as_str()),
        ("conversion.yaml", doc.as_str()),
    ])
    .report
}

const RENAME: &str = "    v2:\n      toHub:\n        - {path: spec.color, expr: \"self.spec.?colour\"}\n      fromHub:\n        - {path: spec.colour, expr: \"self.spec.?color\"}";

fn reasons(problems: &[Problem]) -> Vec<String> {
    problems.iter().map(|p| p.reason.clone()).collect()
}

fn errors(report: &Report) -> Vec<String> {
    crate::config::report::problems(report)
        .map(|p| p.reason.clone())
        .collect()
}

#[test]
fn a_field_the_target_cannot_hold_is_a_warning_until_acknowledged() {
    let report = load("integer", RENAME, "");
    assert!(errors(&report).is_empty(), "{:?}", errors(&report));
    let warnings = reasons(&report.warnings);
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    // And v2's new field, on the way back to v1.
    assert!(
        warnings[1].starts_with("converting v2 -> v1") && warnings[1].ends_with(": spec.mode"),
        "{warnings:?}"
    );
    assert!(
        warnings[0].starts_with("converting v1 -> v2, these fields survive only in the celhook.dev/conversion-stash annotation")
            && warnings[0].ends_with(": spec.extra"),
        "{warnings:?}"
    );
    assert_eq!(report.warnings[0].path.as_deref(), Some("spec.lossy.v1"));
    // Renamed both ways: color and colour are not reported.
    assert!(!warnings[0].contains("colo"), "{warnings:?}");
    assert!(report.fails(true) && !report.fails(false));

    let report = load(
        "integer",
        RENAME,
        "  lossy:\n    v1: [spec.extra]\n    v2: [spec.mode]",
    );
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    let notes = reasons(&report.notes);
    assert!(
        notes.contains(
            &"converting v1 -> v2, acknowledged as kept only in the stash: spec.extra".to_owned()
        ),
        "{notes:?}"
    );
}

#[test]
fn without_a_mapping_a_rename_is_a_loss_both_ways_and_new_fields_are_unfilled() {
    let report = load("integer", "    v2: {}", "");
    let warnings = reasons(&report.warnings);
    assert!(
        warnings.iter().any(
            |w| w.starts_with("converting v1 -> v2") && w.ends_with(": spec.color, spec.extra")
        ),
        "{warnings:?}"
    );
    assert!(
        warnings.iter().any(
            |w| w.starts_with("converting v2 -> v1") && w.ends_with(": spec.colour, spec.mode")
        ),
        "{warnings:?}"
    );
    let notes = reasons(&report.notes);
    assert!(
        notes.contains(
            &"converting v1 -> v2, no source fills these fields of v2: spec.colour, spec.mode"
                .to_owned()
        ),
        "{notes:?}"
    );
}

#[test]
fn copies_and_assignments_of_the_wrong_type_are_errors() {
    let report = load("string", RENAME, "  lossy:\n    v1: [spec.extra]");
    let errors = errors(&report);
    assert!(
        errors.iter().any(|e| e == "spec.size: copied as it is, but the source declares integer and the target string: assign it with an expression"),
        "{errors:?}"
    );
    let typed = "    v2:\n      toHub:\n        - {path: spec.color, expr: \"self.spec.?colour\"}\n        - {path: spec.size, expr: \"'big'\"}\n      fromHub:\n        - {path: spec.colour, expr: \"self.spec.?color\"}";
    let report = load("integer", typed, "  lossy:\n    v1: [spec.extra]");
    let errors = crate::config::report::problems(&report)
        .map(|p| (p.path.clone().unwrap_or_default(), p.reason.clone()))
        .collect::<Vec<_>>();
    assert!(
        errors.contains(&(
            "spec.versions.v2.toHub[1]".to_owned(),
            "\"'big'\" gives string, where the target schema declares integer at spec.size"
                .to_owned()
        )),
        "{errors:?}"
    );
}

#[test]
fn an_acknowledgement_of_a_kept_field_or_an_unknown_version_is_reported() {
    let report = load(
        "integer",
        RENAME,
        "  lossy:\n    v1: [spec.extra, spec.color, spec.parts]\n    v2: [spec.mode]",
    );
    let warnings = reasons(&report.warnings);
    assert_eq!(
        warnings,
        ["\"spec.parts\" is acknowledged as lost, but every conversion from v1 copies it as it is"]
    );
    let report = load("integer", RENAME, "  lossy:\n    v9: [spec.extra]");
    assert!(
        errors(&report)
            .iter()
            .any(|e| e.starts_with("not a version of widgets.example.com")),
        "{:?}",
        errors(&report)
    );
}

#[test]
fn the_shipped_examples_lose_nothing() {
    let files: Vec<(&str, &str)> = crate::config::embedded::FILES.to_vec();
    let report = load_texts(&files).report;
    assert!(!report.has_errors(), "{report:?}");
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
}
