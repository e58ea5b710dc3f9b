//! Loading the case files: their keys, the Kubernetes versions a case
//! holds for, and case names.

use std::path::{Path, PathBuf};

use celhook::kube_version::KubeVersion;
use serde_json::{Map, Value as Json};

pub struct CaseFile {
    pub area: String,
    /// The exact-cost ports (`cost/`), counted apart from the rest.
    pub cost: bool,
    pub cases: Vec<Map<String, Json>>,
}

/// Every `*.yaml` below `root`, sorted, so the run order is stable.
pub fn case_files(root: &Path) -> std::io::Result<Vec<PathBuf>> {
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

const FILE_KEYS: &[&str] = &[
    "area",
    "source",
    "notes",
    "versions",
    "environment",
    "cases",
];
const CASE_KEYS: &[&str] = &[
    "name",
    "source",
    "notes",
    "versions",
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
    "estimated_cost",
    "exceeds_limit",
    // schema cases
    "object",
    "old_object",
    "allowed",
    "loads",
    "errors",
    "warnings",
    "warnings_1_35",
    "refused",
];

pub fn load_file(path: &Path) -> Result<CaseFile, String> {
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
        // A file's `versions` is its cases' unless they say otherwise.
        if let (Some(v), false) = (doc.get("versions"), c.contains_key("versions")) {
            c.insert("versions".into(), v.clone());
        }
        if stem_is_probe {
            c.insert(PROBE_MARK.into(), Json::Bool(true));
        }
        match doc.get("environment") {
            None => {}
            Some(Json::String(e)) if e == "library-tests" => {
                c.insert(LIBRARY_TESTS_MARK.into(), Json::Bool(true));
            }
            Some(other) => return Err(format!("unknown `environment` {other}")),
        }
        out.push(c);
    }
    let cost = path
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|d| d == "cost");
    Ok(CaseFile {
        area,
        cost,
        cases: out,
    })
}

pub fn case_name(case: &Map<String, Json>, i: usize) -> String {
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

pub fn str_field<'c>(case: &'c Map<String, Json>, key: &str) -> Result<Option<&'c str>, String> {
    match case.get(key) {
        None => Ok(None),
        Some(Json::String(s)) => Ok(Some(s)),
        Some(other) => Err(format!("bad case: `{key}` must be a string, got {other}")),
    }
}

/// Set by the loader on the cases of `probe-*.yaml` files.
pub const PROBE_MARK: &str = "@probe";

/// Probe cases carry the probe's variable conventions in their schema.
pub fn case_area_is_probe(case: &Map<String, Json>) -> bool {
    case.get(PROBE_MARK) == Some(&Json::Bool(true))
}

/// Set by the loader on the cases of a file with `environment:
/// library-tests`: they compile as upstream's library cost tests do
/// (`cel::Environment::as_in_library_tests`).
pub const LIBRARY_TESTS_MARK: &str = "@library-tests";

pub fn in_library_tests(case: &Map<String, Json>) -> bool {
    case.get(LIBRARY_TESTS_MARK) == Some(&Json::Bool(true))
}

/// Whether a case holds for `version`: its `versions` is `1.32+`,
/// `1.30-1.34` or `1.34` (absent: every version).
pub fn holds(case: &Map<String, Json>, version: KubeVersion) -> Result<bool, String> {
    let Some(text) = str_field(case, "versions")? else {
        return Ok(true);
    };
    let parse = |s: &str| s.trim().parse::<KubeVersion>();
    let (low, high) = if let Some(low) = text.strip_suffix('+') {
        (parse(low)?, KubeVersion::NEWEST)
    } else if let Some((low, high)) = text.split_once('-') {
        (parse(low)?, parse(high)?)
    } else {
        let only = parse(text)?;
        (only, only)
    };
    if low > high {
        return Err(format!("versions {text:?}: the range is reversed"));
    }
    Ok((low..=high).contains(&version))
}
