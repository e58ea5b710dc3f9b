//! The conformance suite: cases ported as data from the Kubernetes API
//! server's own tests (apiextensions-apiserver CEL validation, CRD
//! validation and cost tests, apiserver CEL libraries), cel-go's extension
//! tests as Kubernetes enables them, recorded cel-go outputs, and the
//! seeds' examples.
//!
//! Every case runs through celhook's real compile-and-evaluate path, once
//! for each Kubernetes version it holds for (`versions`, default all of
//! 1.30 to 1.37):
//! - schema cases: `Validator::from_openapi_as` -> `Validator::validate`,
//!   compared with the API server's field errors or its refusal of the CRD
//!   at write time;
//! - expression cases: `cel::Program::compile` against the schema of `self`,
//!   then `Program::eval`, compared with cel-go's value or error text and
//!   the runtime and estimated costs.
//!
//! The data format is described in `tests/conformance/README.md`. The run
//! prints `conformance 1.NN: N/M` per version, the exact-cost ports
//! (`cost/`, upstream's cost tests number for number) apart as
//! `exact cost 1.NN: N/M`, and a table per area; it rewrites
//! `tests/conformance/FAILURES.md`, and fails when a figure drops below its
//! line in `tests/conformance/baseline.txt`. It is a
//! `harness = false` test so the table is always shown; it ends with a
//! libtest-style `test result:` line.

#[path = "conformance/runner/cases.rs"]
mod cases;
#[path = "conformance/runner/expr.rs"]
mod expr;
#[path = "conformance/runner/schema.rs"]
mod schema;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;

use celhook::kube_version::KubeVersion;
use serde_json::{Map, Value as Json};

/// Passed and total cases, per area.
type Areas = BTreeMap<String, (usize, usize)>;

/// One figure: `conformance` or `exact cost`, the version, passed, total.
type Figure = (&'static str, KubeVersion, usize, usize);

/// A failed case: area, name, versions it failed at, and what differed.
struct Failure {
    area: String,
    name: String,
    versions: Vec<KubeVersion>,
    diff: String,
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance");
    // A filter argument (as `cargo test --test conformance -- <text>`) runs
    // only the cases whose name or area contains it, and records nothing.
    let filter = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .filter(|a| !a.is_empty());

    let files = match cases::case_files(&root) {
        Ok(f) => f,
        Err(e) => fatal(&format!("cannot list {}: {e}", root.display())),
    };
    let mut loaded = Vec::new();
    for file in &files {
        match cases::load_file(file) {
            Ok(l) => loaded.push(l),
            Err(e) => fatal(&format!("{}: {e}", file.display())),
        }
    }
    // Panics inside celhook are failures of one case, not of the run: keep
    // the default hook quiet and record the message instead.
    panic::set_hook(Box::new(|_| {}));

    let versions: Vec<KubeVersion> = (KubeVersion::OLDEST.minor()..=KubeVersion::NEWEST.minor())
        .map(|m| format!("1.{m}").parse().expect("a known version"))
        .collect();
    let mut per_version: Vec<(KubeVersion, Areas, Areas)> = Vec::new();
    let mut failures: Vec<Failure> = Vec::new();
    for &version in &versions {
        let mut areas = Areas::new();
        let mut cost_areas = Areas::new();
        let mut names_seen: BTreeMap<String, usize> = BTreeMap::new();
        for file in &loaded {
            for (i, case) in file.cases.iter().enumerate() {
                let name = cases::case_name(case, i);
                let full = format!("{}/{}", file.area, name);
                let n = names_seen.entry(full.clone()).or_default();
                *n += 1;
                let full = if *n > 1 { format!("{full} #{n}") } else { full };
                if filter.as_ref().is_some_and(|f| !full.contains(f.as_str())) {
                    continue;
                }
                match cases::holds(case, version) {
                    Ok(true) => {}
                    Ok(false) => continue,
                    Err(e) => fatal(&format!("{full}: {e}")),
                }
                let outcome = panic::catch_unwind(AssertUnwindSafe(|| run_case(case, version)))
                    .unwrap_or_else(|p| Err(format!("celhook panicked: {}", panic_text(&p))));
                let counted = if file.cost {
                    &mut cost_areas
                } else {
                    &mut areas
                };
                let entry = counted.entry(file.area.clone()).or_default();
                entry.1 += 1;
                match outcome {
                    Ok(()) => entry.0 += 1,
                    Err(diff) => record(&mut failures, &file.area, full, version, diff),
                }
            }
        }
        per_version.push((version, areas, cost_areas));
    }
    let _ = panic::take_hook();

    let (newest, newest_areas, newest_cost) = per_version.last().expect("versions");
    let mut all_areas = newest_areas.clone();
    all_areas.extend(newest_cost.clone());
    println!("areas at {newest}:");
    print_table(&all_areas);
    let sum = |a: &Areas| (a.values().map(|x| x.0).sum(), a.values().map(|x| x.1).sum());
    let mut figures: Vec<Figure> = Vec::new();
    for (v, areas, _) in &per_version {
        let (p, t) = sum(areas);
        figures.push(("conformance", *v, p, t));
    }
    for (v, _, cost) in &per_version {
        let (p, t) = sum(cost);
        figures.push(("exact cost", *v, p, t));
    }
    for (suite, v, passed, total) in &figures {
        println!(
            "{suite} {v}: {passed}/{total} ({})",
            percent(*passed, *total)
        );
    }

    if filter.is_some() {
        for f in &failures {
            println!(
                "FAIL {} ({})\n  {}",
                f.name,
                shown(&f.versions),
                f.diff.replace('\n', "\n  ")
            );
        }
        println!("\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out");
        return;
    }

    if let Err(e) = write_failures(&root, &figures, &all_areas, &failures) {
        fatal(&format!("cannot write FAILURES.md: {e}"));
    }
    let baseline = match read_baseline(&root.join("baseline.txt")) {
        Ok(b) => b,
        Err(e) => fatal(&format!("tests/conformance/baseline.txt: {e}")),
    };
    let mut dropped = Vec::new();
    for (suite, v, passed, _) in &figures {
        let key = format!("{suite} {v}");
        match baseline.get(&key) {
            Some(b) if passed < b => dropped.push(format!("{key}: {passed} < {b}")),
            Some(b) if passed > b => println!(
                "{key} is above its baseline ({b}): raise it to {passed} in tests/conformance/baseline.txt"
            ),
            Some(_) => {}
            None => dropped.push(format!("{key}: no baseline")),
        }
    }
    if dropped.is_empty() {
        println!("\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out");
    } else {
        println!(
            "conformance dropped below the baseline: {} (see tests/conformance/FAILURES.md)",
            dropped.join(", ")
        );
        println!(
            "\ntest result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out"
        );
        std::process::exit(1);
    }
}

fn fatal(msg: &str) -> ! {
    println!("conformance: {msg}");
    println!("\ntest result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out");
    std::process::exit(1);
}

fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".to_owned()
    }
}

fn run_case(case: &Map<String, Json>, version: KubeVersion) -> Result<(), String> {
    if case.contains_key("expr") {
        expr::run_expression(case, version)
    } else {
        schema::run_schema(case, version)
    }
}

/// A failure, merged with the same case's identical failure at other
/// versions.
fn record(failures: &mut Vec<Failure>, area: &str, name: String, v: KubeVersion, diff: String) {
    match failures
        .iter_mut()
        .find(|f| f.name == name && f.diff == diff)
    {
        Some(f) => f.versions.push(v),
        None => failures.push(Failure {
            area: area.to_owned(),
            name,
            versions: vec![v],
            diff,
        }),
    }
}

/// `1.30-1.37`, or the versions listed.
fn shown(versions: &[KubeVersion]) -> String {
    let minors: Vec<u8> = versions.iter().map(|v| v.minor()).collect();
    let contiguous = minors.windows(2).all(|w| w[1] == w[0] + 1);
    match (minors.first(), minors.last()) {
        (Some(a), Some(b)) if a == b => format!("1.{a}"),
        (Some(a), Some(b)) if contiguous => format!("1.{a}-1.{b}"),
        _ => versions
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", "),
    }
}

fn percent(passed: usize, total: usize) -> String {
    if total == 0 {
        return "-".into();
    }
    format!("{:.1}%", passed as f64 * 100.0 / total as f64)
}

/// `<suite> 1.NN <passed>` per line (`conformance 1.34 2525`).
fn read_baseline(path: &Path) -> Result<BTreeMap<String, usize>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let (key, n) = line
            .rsplit_once(' ')
            .ok_or_else(|| format!("{line:?} is not `<suite> 1.NN <passed>`"))?;
        let n: usize = n.trim().parse().map_err(|e| format!("{line:?}: {e}"))?;
        out.insert(key.to_owned(), n);
    }
    Ok(out)
}

// === reporting ===

fn print_table(areas: &Areas) {
    let width = areas.keys().map(String::len).max().unwrap_or(4).max(4);
    println!("{:width$}  passed  total", "area");
    for (area, (p, t)) in areas {
        println!("{area:width$}  {p:>6}  {t:>5}");
    }
}

fn write_failures(
    root: &Path,
    figures: &[Figure],
    newest_areas: &Areas,
    failures: &[Failure],
) -> std::io::Result<()> {
    let mut s = String::new();
    let _ = writeln!(s, "# Conformance failures\n");
    let _ = writeln!(
        s,
        "Regenerated by `cargo test --test conformance`; do not edit by hand.\n"
    );
    let _ = writeln!(
        s,
        "| suite | version | passed | total | |\n| --- | --- | ---: | ---: | ---: |"
    );
    for (suite, v, p, t) in figures {
        let _ = writeln!(s, "| {suite} | {v} | {p} | {t} | {} |", percent(*p, *t));
    }
    let newest = KubeVersion::NEWEST;
    let _ = writeln!(s, "\nAreas at {newest}:\n");
    let _ = writeln!(s, "| area | passed | total |\n| --- | ---: | ---: |");
    for (area, (p, t)) in newest_areas {
        let _ = writeln!(s, "| {area} | {p} | {t} |");
    }
    let mut sorted: Vec<&Failure> = failures.iter().collect();
    sorted.sort_by(|a, b| (&a.area, &a.name).cmp(&(&b.area, &b.name)));
    let mut current = "";
    for f in sorted {
        if f.area != current {
            let _ = writeln!(s, "\n## {}\n", f.area);
            current = &f.area;
        }
        let name = f.name.replace('`', "'");
        let diff = f.diff.replace('\n', "\\n").replace('`', "'");
        let _ = writeln!(s, "- `{name}` ({}): {diff}", shown(&f.versions));
    }
    std::fs::write(root.join("FAILURES.md"), s)
}
