//! `celhook convert --round-trip`: every object of a file (for example the
//! output of `kubectl get <crd> -A -o yaml`) converted to every other
//! version of its CRD and back, as the API server would convert it for a
//! client of that version and store it again. Reports each difference the
//! round trip leaves, by object and path, and each value that reached the
//! other version only through the stash annotation (clients of that
//! version never see it: a loss in practice, unless the conversion
//! document acknowledges the field in `spec.lossy`).

use celhook_json::Value as Json;

use super::files::{read_documents, FileFormat};
use super::{guard, split_api_version, stash, Conversion, Conversions};

/// What the round trips of some files found.
#[derive(Debug, Default)]
pub struct RoundTrips {
    /// One line per finding, in input order.
    pub lines: Vec<String>,
    /// Objects of a CRD with a conversion document, checked.
    pub objects: usize,
    /// Objects of other kinds, and of CRDs without a conversion document.
    pub skipped: usize,
    /// Round trips that did not give the object back.
    pub differences: usize,
    /// Values kept only in the stash, of fields `spec.lossy` does not list.
    pub unacknowledged: usize,
    /// Values kept only in the stash, of fields `spec.lossy` lists.
    pub acknowledged: usize,
    /// Documents that could not be read, and conversions that failed.
    pub errors: usize,
}

impl RoundTrips {
    /// The closing line: counts of each finding.
    pub fn summary(&self) -> String {
        format!(
            "round trips of {} object(s) ({} skipped: other kinds or no conversion document): {} difference(s), {} error(s), {} value(s) only in the stash ({} acknowledged in spec.lossy)",
            self.objects,
            self.skipped,
            self.differences,
            self.errors,
            self.unacknowledged + self.acknowledged,
            self.acknowledged
        )
    }

    /// True when the run should exit non-zero: any difference or error,
    /// and with `strict`, any unacknowledged stash-only value.
    pub fn fails(&self, strict: bool) -> bool {
        self.differences > 0 || self.errors > 0 || (strict && self.unacknowledged > 0)
    }

    /// Checks every object of `text`, a file named `name` (`<stdin>` for
    /// standard input: JSON when it starts with `{`).
    pub fn check_text(&mut self, catalog: &(impl Conversions + ?Sized), name: &str, text: &str) {
        let format = if name == "<stdin>" {
            if text.trim_start().starts_with('{') {
                FileFormat::Json
            } else {
                FileFormat::Yaml
            }
        } else {
            FileFormat::of(name)
        };
        for doc in read_documents(name, text, format) {
            let doc = match doc {
                Ok(doc) => doc,
                Err(e) => {
                    self.errors += 1;
                    self.lines.push(e);
                    continue;
                }
            };
            let at = format!("{name}: document {}", doc.index);
            let is_list = doc.value.get("apiVersion").and_then(Json::as_str) == Some("v1")
                && doc.value.get("kind").and_then(Json::as_str) == Some("List");
            match doc.value {
                Json::Object(mut map) if is_list => {
                    let items = match map.remove("items") {
                        Some(Json::Array(items)) => items,
                        _ => Vec::new(),
                    };
                    for (j, item) in items.iter().enumerate() {
                        self.object(catalog, &format!("{at} item {j}"), item);
                    }
                }
                value => self.object(catalog, &at, &value),
            }
        }
    }

    /// One object through every other version of its CRD and back.
    fn object(&mut self, catalog: &(impl Conversions + ?Sized), at: &str, object: &Json) {
        let api_version = object
            .get("apiVersion")
            .and_then(Json::as_str)
            .unwrap_or("");
        let kind = object.get("kind").and_then(Json::as_str).unwrap_or("");
        let (group, from) = split_api_version(api_version);
        let Some(conversion) = catalog.conversion(group, kind) else {
            self.skipped += 1;
            return;
        };
        let label = format!("{at} ({})", guard::Original::of(object).display_name());
        if !conversion.has_version(from) {
            self.errors += 1;
            self.lines.push(format!(
                "{label}: apiVersion {api_version:?} is not a version of {} (versions: {})",
                conversion.crd_name,
                conversion.versions().join(", ")
            ));
            return;
        }
        self.objects += 1;
        for to in conversion.versions() {
            if to != from {
                self.pair(conversion, &label, object, from, to);
            }
        }
    }

    fn pair(&mut self, conversion: &Conversion, label: &str, object: &Json, from: &str, to: &str) {
        let there = match conversion.convert(object.clone(), from, to) {
            Ok(there) => there,
            Err(e) => {
                self.errors += 1;
                self.lines.push(format!("{label}: {from} -> {to}: {e}"));
                return;
            }
        };
        // What the target version's clients do not see: the stash's
        // entries for the source version.
        let mut visible = there.clone();
        let from_api = format!("{}/{from}", conversion.group);
        match stash::take(&mut visible) {
            Ok(mut kept) => {
                for entry in kept.remove(&from_api).unwrap_or_default() {
                    let field = entry.path.join(".");
                    let value = entry
                        .value
                        .as_ref()
                        .map_or("nothing".into(), Json::to_string);
                    if conversion.acknowledges(from, &field) {
                        self.acknowledged += 1;
                        self.lines.push(format!(
                            "{label}: {from} -> {to}: {field} = {value} is kept only in the stash (acknowledged in spec.lossy)"
                        ));
                    } else {
                        self.unacknowledged += 1;
                        self.lines.push(format!(
                            "{label}: {from} -> {to}: {field} = {value} is kept only in the stash: clients of {to} do not see it"
                        ));
                    }
                }
            }
            Err(e) => {
                self.errors += 1;
                self.lines.push(format!("{label}: {from} -> {to}: {e}"));
            }
        }
        let back = match conversion.convert(there, to, from) {
            Ok(back) => back,
            Err(e) => {
                self.errors += 1;
                self.lines
                    .push(format!("{label}: {to} -> {from} (back): {e}"));
                return;
            }
        };
        for entry in stash::diff(object, &back) {
            self.differences += 1;
            let show = |v: &Option<Json>| v.as_ref().map_or("nothing".into(), Json::to_string);
            self.lines.push(format!(
                "{label}: {from} -> {to} -> {from} changes {}: {} became {}",
                entry.path.join("."),
                show(&entry.value),
                show(&entry.was)
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{load, ConfigSource};

    fn run(text: &str) -> RoundTrips {
        let catalog = load(&ConfigSource::Embedded).catalog;
        let mut found = RoundTrips::default();
        found.check_text(&catalog, "objects.yaml", text);
        found
    }

    #[test]
    fn the_examples_come_back_and_other_kinds_are_skipped() {
        let found = run(
            "apiVersion: example.com/v1beta1\nkind: CronTab\nmetadata: {name: a, namespace: default}\nhostPort: 'localhost:1234'\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: restaurant.programming-kubernetes.info/v1beta1, kind: Pizza, metadata: {name: p}, spec: {toppings: [{name: cheese, quantity: 2}]}}\n",
        );
        assert_eq!((found.objects, found.skipped), (2, 1), "{:?}", found.lines);
        assert!(!found.fails(true), "{:?}", found.lines);
        assert!(found.summary().contains("0 difference(s)"));
    }

    #[test]
    fn an_acknowledged_stash_only_value_is_reported_and_passes_strict() {
        let found = run(
            "apiVersion: restaurant.programming-kubernetes.info/v1alpha1\nkind: Pizza\nmetadata: {name: p, namespace: default}\nspec: {toppings: [cheese, cheese, ham]}\n",
        );
        // Names grouped as v1beta1 counts them come back as they were.
        assert!(found.lines.is_empty(), "{:?}", found.lines);
        let found = run(
            "apiVersion: restaurant.programming-kubernetes.info/v1alpha1\nkind: Pizza\nmetadata: {name: p}\nspec: {toppings: [cheese, ham, cheese]}\n",
        );
        // Their order is lost on the way, and comes back only from the
        // stash: the example document acknowledges it in spec.lossy.
        assert_eq!(
            (found.acknowledged, found.unacknowledged),
            (1, 0),
            "{:?}",
            found.lines
        );
        assert!(!found.fails(true), "{:?}", found.lines);
        assert_eq!(
            found.lines,
            ["objects.yaml: document 0 (p): v1alpha1 -> v1beta1: spec.toppings = [\"cheese\",\"ham\",\"cheese\"] is kept only in the stash (acknowledged in spec.lossy)"]
        );
    }

    #[test]
    fn unreadable_documents_and_unknown_versions_are_errors() {
        let found =
            run("a: [\n---\napiVersion: example.com/v7\nkind: CronTab\nmetadata: {name: x}\n");
        assert_eq!(found.errors, 2, "{:?}", found.lines);
        assert!(
            found.lines[1].contains("\"example.com/v7\" is not a version of crontabs.example.com")
        );
        assert!(found.fails(false));
    }
}
