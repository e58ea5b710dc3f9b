//! Schema cases: `Validator::from_openapi_as` (the CRD refused or
//! compiled with one Kubernetes version's libraries and texts), then
//! `Validator::validate`, compared with the API server's field errors.

use celhook::kube_version::KubeVersion;
use celhook::validation::{RuleProblem, Validator};
use serde_json::{Map, Value as Json};

use crate::expr::openapi;

pub fn run_schema(case: &Map<String, Json>, version: KubeVersion) -> Result<(), String> {
    let props = openapi(case.get("schema").unwrap_or(&Json::Null))?;
    let refused_want = case.get("refused");
    let problems: Vec<RuleProblem> =
        match Validator::from_openapi_as(&props, version.stored(), version) {
            Err(p) => p,
            Ok(validator) => {
                if let Some(want) = refused_want {
                    return Err(format!("loaded, want a refusal: {want}"));
                }
                return check_outcome(case, &validator, version);
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

fn check_outcome(
    case: &Map<String, Json>,
    validator: &Validator,
    version: KubeVersion,
) -> Result<(), String> {
    // `loads: true` without an object: only the CRD's acceptance is checked.
    let object = match case.get("object") {
        Some(o) => o,
        None if case.get("loads") == Some(&Json::Bool(true)) => return Ok(()),
        None => return Err("bad case: no `object`".into()),
    };
    let object = celhook_json::Value::from(object);
    let old = case.get("old_object").map(celhook_json::Value::from);
    let outcome = validator.validate(&object, old.as_ref());
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
        // From 1.35 a failed rule's text shows the value (or none).
        let exact = match w.get("message_1_35") {
            Some(m) if version.failed_rules_show_values() => Some(
                m.as_str()
                    .ok_or("bad case: `message_1_35` must be a string")?,
            ),
            _ => w.get("message").and_then(Json::as_str),
        };
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
    let warnings = match case.get("warnings_1_35") {
        Some(w) if version.failed_rules_show_values() => Some(w),
        _ => case.get("warnings"),
    };
    if warnings.is_some_and(|w| !w.is_array()) {
        return Err("bad case: `warnings` must be a list".into());
    }
    if let Some(Json::Array(want)) = warnings {
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
