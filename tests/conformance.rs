//! The conformance suite: cases ported as data from the Kubernetes API
//! server's own tests (apiextensions-apiserver CEL validation and CRD
//! validation, apiserver CEL libraries), cel-go's extension tests as
//! Kubernetes enables them, recorded cel-go outputs, and the seeds' examples.
//!
//! Every case runs through celhook's real compile-and-evaluate path:
//! - schema cases: `Schema::from_openapi` -> `Validator::compile` ->
//!   `Validator::validate`, compared with the API server's field errors or
//!   its refusal of the CRD at write time;
//! - expression cases: `cel::Program::compile` against the schema of `self`,
//!   then `Program::eval`, compared with cel-go's value or error text.
//!
//! The data format is described in `tests/conformance/README.md`. The run
//! prints `conformance: N/M` and a table per area, rewrites
//! `tests/conformance/FAILURES.md`, and fails when N drops below
//! `tests/conformance/baseline.txt`. It is a `harness = false` test so the
//! table is always shown; it ends with a libtest-style `test result:` line.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use celhook::cel::{self, Program, Value};
use celhook::schema::Schema;
use celhook::validation::{RuleProblem, Validator};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
use serde_json::{Map, Value as Json};

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance");
    // A filter argument (as `cargo test --test conformance -- <text>`) runs
    // only the cases whose name or area contains it, and records nothing.
    let filter = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .filter(|a| !a.is_empty());

    let files = match case_files(&root) {
        Ok(f) => f,
        Err(e) => fatal(&format!("cannot list {}: {e}", root.display())),
    };
    // Panics inside celhook are failures of one case, not of the run: keep
    // the default hook quiet and record the message instead.
    panic::set_hook(Box::new(|_| {}));

    let mut areas: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut failures: Vec<(String, String, String)> = Vec::new();
    let mut names_seen: BTreeMap<String, usize> = BTreeMap::new();
    for file in &files {
        let loaded = match load_file(file) {
            Ok(l) => l,
            Err(e) => fatal(&format!("{}: {e}", file.display())),
        };
        for (i, case) in loaded.cases.iter().enumerate() {
            let name = case_name(case, i);
            let full = format!("{}/{}", loaded.area, name);
            let n = names_seen.entry(full.clone()).or_default();
            *n += 1;
            let full = if *n > 1 { format!("{full} #{n}") } else { full };
            if let Some(f) = &filter {
                if !full.contains(f.as_str()) {
                    continue;
                }
            }
            let outcome = panic::catch_unwind(AssertUnwindSafe(|| run_case(case)))
                .unwrap_or_else(|p| Err(format!("celhook panicked: {}", panic_text(&p))));
            let entry = areas.entry(loaded.area.clone()).or_default();
            entry.1 += 1;
            match outcome {
                Ok(()) => entry.0 += 1,
                Err(diff) => failures.push((loaded.area.clone(), full, diff)),
            }
        }
    }
    let _ = panic::take_hook();

    let passed: usize = areas.values().map(|a| a.0).sum();
    let total: usize = areas.values().map(|a| a.1).sum();
    print_table(&areas);
    println!("conformance: {passed}/{total}");

    if filter.is_some() {
        for (_, name, diff) in &failures {
            println!("FAIL {name}\n  {}", diff.replace('\n', "\n  "));
        }
        println!("\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out");
        return;
    }

    if let Err(e) = write_failures(&root, passed, total, &areas, &failures) {
        fatal(&format!("cannot write FAILURES.md: {e}"));
    }
    let baseline = std::fs::read_to_string(root.join("baseline.txt"))
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok());
    match baseline {
        Some(b) if passed < b => {
            println!(
                "conformance dropped below the baseline: {passed} < {b} (see tests/conformance/FAILURES.md)"
            );
            println!(
                "\ntest result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out"
            );
            std::process::exit(1);
        }
        Some(b) => {
            if passed > b {
                println!(
                    "above the baseline ({b}): raise tests/conformance/baseline.txt to {passed}"
                );
            }
            println!(
                "\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out"
            );
        }
        None => fatal("tests/conformance/baseline.txt is missing or not a number"),
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

// === loading ===

struct CaseFile {
    area: String,
    cases: Vec<Map<String, Json>>,
}

/// Every `*.yaml` below `root`, sorted, so the run order is stable.
fn case_files(root: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "yaml") {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

const FILE_KEYS: &[&str] = &["area", "source", "notes", "cases"];
const CASE_KEYS: &[&str] = &[
    "name",
    "source",
    "notes",
    // expression cases
    "expr",
    "self",
    "old_self",
    "schema",
    "optional_old_self",
    "root",
    "value",
    "type",
    "error",
    "error_contains",
    "compile_error",
    "cost",
    "cost_limit",
    // schema cases
    "object",
    "old_object",
    "allowed",
    "loads",
    "errors",
    "warnings",
    "refused",
];

fn load_file(path: &Path) -> Result<CaseFile, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let doc: Json = serde_norway::from_str(&text).map_err(|e| e.to_string())?;
    let Json::Object(doc) = doc else {
        return Err("a case file is a mapping with `cases`".into());
    };
    if let Some(k) = doc.keys().find(|k| !FILE_KEYS.contains(&k.as_str())) {
        return Err(format!("unknown key {k:?} at the top level"));
    }
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem_is_probe = stem.starts_with("probe-");
    let area = match doc.get("area") {
        Some(Json::String(a)) => a.clone(),
        _ => stem,
    };
    let Some(Json::Array(cases)) = doc.get("cases") else {
        return Err("`cases` must be a list".into());
    };
    let mut out = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        let Json::Object(c) = c else {
            return Err(format!("case {i} is not a mapping"));
        };
        if let Some(k) = c.keys().find(|k| !CASE_KEYS.contains(&k.as_str())) {
            return Err(format!("case {i}: unknown key {k:?}"));
        }
        if !c.contains_key("expr") && !c.contains_key("schema") {
            return Err(format!("case {i}: neither `expr` nor `schema`"));
        }
        let mut c = c.clone();
        if stem_is_probe {
            c.insert(PROBE_MARK.into(), Json::Bool(true));
        }
        out.push(c);
    }
    Ok(CaseFile { area, cases: out })
}

fn case_name(case: &Map<String, Json>, i: usize) -> String {
    match (case.get("name"), case.get("expr")) {
        (Some(Json::String(n)), _) => n.clone(),
        (_, Some(Json::String(e))) => {
            let one_line = e.split_whitespace().collect::<Vec<_>>().join(" ");
            if one_line.chars().count() > 100 {
                let cut: String = one_line.chars().take(97).collect();
                format!("{cut}...")
            } else {
                one_line
            }
        }
        _ => format!("case {i}"),
    }
}

// === running ===

fn run_case(case: &Map<String, Json>) -> Result<(), String> {
    if case.contains_key("expr") {
        run_expression(case)
    } else {
        run_schema(case)
    }
}

fn str_field<'c>(case: &'c Map<String, Json>, key: &str) -> Result<Option<&'c str>, String> {
    match case.get(key) {
        None => Ok(None),
        Some(Json::String(s)) => Ok(Some(s)),
        Some(other) => Err(format!("bad case: `{key}` must be a string, got {other}")),
    }
}

fn openapi(v: &Json) -> Result<JSONSchemaProps, String> {
    serde_json::from_value(v.clone()).map_err(|e| format!("bad case: schema: {e}"))
}

/// The schema of a node that is not a resource root: built inside a
/// throwaway root so the root's implicit apiVersion/kind/metadata do not
/// leak into it.
fn node_schema(v: &Json) -> Result<Schema, String> {
    let wrapper = serde_json::json!({"type": "object", "properties": {"node": v}});
    let root = Schema::from_openapi(&openapi(&wrapper)?)
        .map_err(|e| format!("schema refused: {}: {}", e.path, e.reason))?;
    root.properties
        .get("node")
        .cloned()
        .ok_or_else(|| "schema refused: node lost".to_owned())
}

/// The dynamic schema (`x-kubernetes-preserve-unknown-fields` without a
/// type): `self` is `dyn`, as cel-go variables declared `DynType` are.
fn dyn_schema() -> Json {
    serde_json::json!({"x-kubernetes-preserve-unknown-fields": true})
}

/// Set by the loader on the cases of `probe-*.yaml` files.
const PROBE_MARK: &str = "@probe";

/// Probe cases carry the probe's variable conventions in their schema.
fn case_area_is_probe(case: &Map<String, Json>) -> bool {
    case.get(PROBE_MARK) == Some(&Json::Bool(true))
}

fn run_expression(case: &Map<String, Json>) -> Result<(), String> {
    let expr = str_field(case, "expr")?.unwrap_or_default();
    let schema_json = case.get("schema").cloned().unwrap_or_else(dyn_schema);
    // `root: true`: `self` is the resource root (apiVersion, kind and
    // metadata.name/generateName are implied, as the API server widens it).
    let schema = if case.get("root") == Some(&Json::Bool(true)) {
        Schema::from_openapi(&openapi(&schema_json)?)
            .map_err(|e| format!("schema refused: {}: {}", e.path, e.reason))?
    } else {
        node_schema(&schema_json)?
    };
    // Probe variables declared `dyn`, `map(string, dyn)` or `list(dyn)` in
    // cel-go have no CRD equivalent: as schema fields they are of "unknown
    // type", which CEL cannot reach. Such cases bind `self` dynamically.
    let schema =
        if case_area_is_probe(case) && schema.properties.values().any(Schema::is_unknown_type) {
            node_schema(&dyn_schema())?
        } else {
            schema
        };
    let optional_old_self = matches!(case.get("optional_old_self"), Some(Json::Bool(true)));
    let opts = cel::Environment::crd_rule(optional_old_self);
    let compiled = Program::compile(expr, &schema, opts);
    // Upstream expectations quote the validator's wording, which prefixes
    // the compiler's text with `compilation failed: ` (tested on its own in
    // the schema cases): compare the compiler's part.
    let want_compile = str_field(case, "compile_error")?
        .map(|w| w.strip_prefix("compilation failed: ").unwrap_or(w));
    let program = match (compiled, want_compile) {
        (Err(e), Some(want)) if e.message.contains(want) => return Ok(()),
        (Err(e), Some(want)) => {
            return Err(format!(
                "compile error {:?}, want one containing {want:?}",
                e.message
            ))
        }
        (Ok(_), Some(want)) => {
            return Err(format!(
                "compiled, want a compile error containing {want:?}"
            ))
        }
        (Err(e), None) => return Err(format!("compile error: {}", e.message)),
        (Ok(p), None) => p,
    };

    let null = Json::Null;
    let this = case.get("self").unwrap_or(&null);
    let old = case.get("old_self");
    let old_value = match (optional_old_self, old) {
        (true, o) => Some(Value::Optional(
            o.map(|o| Rc::new(Value::from_json(o, &schema))),
        )),
        (false, o) => o.map(|o| Value::from_json(o, &schema)),
    };
    let limit = match case.get("cost_limit") {
        Some(v) => v
            .as_u64()
            .ok_or("bad case: `cost_limit` must be a number")?,
        None => cel::PER_EXPRESSION_COST_LIMIT,
    };
    let (result, cost) = program.eval(Value::from_json(this, &schema), old_value, limit);

    let mut diffs = Vec::new();
    match (
        &result,
        str_field(case, "error")?,
        str_field(case, "error_contains")?,
    ) {
        (Err(e), Some(want), _) if e.message == want => {}
        (Err(e), Some(want), _) => diffs.push(format!("error {:?}, want {want:?}", e.message)),
        (Err(e), None, Some(want)) if e.message.contains(want) => {}
        (Err(e), None, Some(want)) => diffs.push(format!(
            "error {:?}, want one containing {want:?}",
            e.message
        )),
        (Ok(v), Some(want), _) | (Ok(v), None, Some(want)) => diffs.push(format!(
            "value {} ({}), want error {want:?}",
            cel::to_json(v),
            v.type_name().name()
        )),
        (Err(e), None, None) => diffs.push(format!("error {:?}", e.message)),
        (Ok(v), None, None) => {
            if let Some(want) = case.get("value") {
                if let Some(d) = value_diff(v, want, str_field(case, "type")?) {
                    diffs.push(d);
                }
            } else if let Some(want) = str_field(case, "type")? {
                if v.type_name().name() != want {
                    diffs.push(format!("type {}, want {want}", v.type_name().name()));
                }
            }
        }
    }
    if let Some(want) = case.get("cost") {
        let want = want.as_u64().ok_or("bad case: `cost` must be a number")?;
        if cost != want {
            diffs.push(format!("cost {cost}, want {want}"));
        }
    }
    if diffs.is_empty() {
        Ok(())
    } else {
        Err(diffs.join("; "))
    }
}

/// Compares a result with the expected JSON value and CEL type. Doubles
/// that JSON cannot hold are written as the strings `NaN`, `+Inf`, `-Inf`.
fn value_diff(v: &Value<'_>, want: &Json, want_type: Option<&str>) -> Option<String> {
    let got_type = v.type_name().name();
    let got = cel::to_json(v);
    let special = match (v, want) {
        (Value::Double(d), Json::String(s)) if want_type == Some("double") => Some(
            (s == "NaN" && d.is_nan())
                || (s == "+Inf" && *d == f64::INFINITY)
                || (s == "-Inf" && *d == f64::NEG_INFINITY),
        ),
        _ => None,
    };
    let same_value = special.unwrap_or(got == *want);
    let same_type = want_type.is_none_or(|t| t == got_type);
    if same_value && same_type {
        None
    } else {
        Some(format!(
            "value {got} ({got_type}), want {want}{}",
            want_type.map(|t| format!(" ({t})")).unwrap_or_default()
        ))
    }
}

fn run_schema(case: &Map<String, Json>) -> Result<(), String> {
    let props = openapi(case.get("schema").unwrap_or(&Json::Null))?;
    let refused_want = case.get("refused");
    let problems: Vec<RuleProblem> = match Validator::from_openapi(&props) {
        Err(p) => p,
        Ok(validator) => {
            if let Some(want) = refused_want {
                return Err(format!("loaded, want a refusal: {want}"));
            }
            return check_outcome(case, &validator);
        }
    };
    let Some(want) = refused_want else {
        let got: Vec<String> = problems
            .iter()
            .map(|p| format!("{}: {}", p.path, p.reason))
            .collect();
        return Err(format!("refused at load: {}", got.join(" | ")));
    };
    let want = want
        .as_array()
        .ok_or("bad case: `refused` must be a list")?;
    let mut unused: Vec<&RuleProblem> = problems.iter().collect();
    let mut diffs = Vec::new();
    for w in want {
        // No `path`: any path (some upstream tests only check the text).
        let path = w.get("path").and_then(Json::as_str);
        let reason = w.get("reason").and_then(Json::as_str).unwrap_or_default();
        match unused
            .iter()
            .position(|p| path.is_none_or(|w| p.path == w) && p.reason.contains(reason))
        {
            Some(i) => {
                unused.remove(i);
            }
            None => diffs.push(format!(
                "missing refusal {}: ...{reason}...",
                path.unwrap_or("<any path>")
            )),
        }
    }
    for p in unused {
        diffs.push(format!("unexpected refusal {}: {}", p.path, p.reason));
    }
    if diffs.is_empty() {
        Ok(())
    } else {
        Err(diffs.join("; "))
    }
}

fn check_outcome(case: &Map<String, Json>, validator: &Validator) -> Result<(), String> {
    // `loads: true` without an object: only the CRD's acceptance is checked.
    let object = match case.get("object") {
        Some(o) => o,
        None if case.get("loads") == Some(&Json::Bool(true)) => return Ok(()),
        None => return Err("bad case: no `object`".into()),
    };
    let outcome = validator.validate(object, case.get("old_object"));
    let mut diffs = Vec::new();
    let want_errors: &[Json] = match case.get("errors") {
        Some(Json::Array(e)) => e,
        Some(_) => return Err("bad case: `errors` must be a list".into()),
        None => &[],
    };
    if case.get("allowed") == Some(&Json::Bool(false)) && want_errors.is_empty() {
        return Err("bad case: `allowed: false` needs `errors`".into());
    }
    // Sibling order is unspecified in the API server (Go map order), so
    // errors are matched as a multiset.
    let mut unused: Vec<usize> = (0..outcome.errors.len()).collect();
    for w in want_errors {
        // No `field`: any field (some upstream tests only check the text).
        let field = w.get("field").and_then(Json::as_str);
        let ty = w.get("type").and_then(Json::as_str);
        let exact = w.get("message").and_then(Json::as_str);
        let part = w.get("contains").and_then(Json::as_str);
        let found = unused.iter().position(|&i| {
            let e = &outcome.errors[i];
            let body = e.body();
            field.is_none_or(|f| e.field_text() == f)
                && ty.is_none_or(|t| e.kind.cause() == t)
                && exact.is_none_or(|m| body == m)
                && part.is_none_or(|m| body.contains(m))
        });
        match found {
            Some(i) => {
                unused.remove(i);
            }
            None => diffs.push(format!(
                "missing error {}: {}{}",
                field.unwrap_or("<any field>"),
                ty.map(|t| format!("[{t}] ")).unwrap_or_default(),
                exact
                    .map(str::to_owned)
                    .or(part.map(|p| format!("...{p}...")))
                    .unwrap_or_default()
            )),
        }
    }
    for i in unused {
        let e = &outcome.errors[i];
        diffs.push(format!("unexpected error [{}] {e}", e.kind.cause()));
    }
    if let Some(Json::Array(want)) = case.get("warnings") {
        let mut got = outcome.warnings.clone();
        for w in want {
            // A warning is `<field>: <body>`: either its text (exact or a
            // substring) or `{field, contains}`.
            let (field, part) = match w {
                Json::Object(m) => (
                    m.get("field").and_then(Json::as_str),
                    m.get("contains").and_then(Json::as_str).unwrap_or_default(),
                ),
                other => (None, other.as_str().unwrap_or_default()),
            };
            let found = got.iter().position(|g| {
                let field_ok = field.is_none_or(|f| g.starts_with(&format!("{f}: ")));
                field_ok && (g == part || g.contains(part))
            });
            match found {
                Some(i) => {
                    got.remove(i);
                }
                None => diffs.push(format!("missing warning {w}")),
            }
        }
        for g in got {
            diffs.push(format!("unexpected warning {g:?}"));
        }
    }
    if diffs.is_empty() {
        Ok(())
    } else {
        Err(diffs.join("; "))
    }
}

// === reporting ===

fn print_table(areas: &BTreeMap<String, (usize, usize)>) {
    let width = areas.keys().map(String::len).max().unwrap_or(4).max(4);
    println!("{:width$}  passed  total", "area");
    for (area, (p, t)) in areas {
        println!("{area:width$}  {p:>6}  {t:>5}");
    }
}

fn write_failures(
    root: &Path,
    passed: usize,
    total: usize,
    areas: &BTreeMap<String, (usize, usize)>,
    failures: &[(String, String, String)],
) -> std::io::Result<()> {
    let mut s = String::new();
    let _ = writeln!(s, "# Conformance failures\n");
    let _ = writeln!(
        s,
        "Regenerated by `cargo test --test conformance`; do not edit by hand.\n"
    );
    let _ = writeln!(s, "conformance: {passed}/{total}\n");
    let _ = writeln!(s, "| area | passed | total |\n| --- | ---: | ---: |");
    for (area, (p, t)) in areas {
        let _ = writeln!(s, "| {area} | {p} | {t} |");
    }
    let mut current = "";
    for (area, name, diff) in failures {
        if area != current {
            let _ = writeln!(s, "\n## {area}\n");
            current = area;
        }
        let name = name.replace('`', "'");
        let diff = diff.replace('\n', "\\n").replace('`', "'");
        let _ = writeln!(s, "- `{name}`: {diff}");
    }
    std::fs::write(root.join("FAILURES.md"), s)
}
