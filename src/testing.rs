//! `celhook test`: declarative tests of a config, run offline. A test file
//! holds `celhook.dev/v1alpha1` `ValidationTest` documents (the format is
//! described in `docs/testing.md` and in `celhook test --help`); each case
//! is one admission request, answered by `admission::review` exactly as the
//! webhook answers it, and the answer is compared with the case's `expect`.
//!
//! Comparisons: identifiers (`allowed`, `code`, a cause's `field` and
//! `reason`, annotation keys) must be equal; texts (status messages, a
//! cause's `message`, warnings, annotation values) must contain the
//! expected string. An empty list or map asserts there are none.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::{self, Catalog, ConfigSource};
use crate::kube_version::KubeVersion;
use crate::review::{AdmissionRequest, AdmissionResponse, GroupVersionKind};

mod load;
mod report;

pub use load::parse_tests;

/// apiVersion of test documents.
pub const API_VERSION: &str = "celhook.dev/v1alpha1";
/// kind of test documents.
pub const KIND: &str = crate::config::TEST_KIND;

/// Exit code when every case passed.
pub const EXIT_PASSED: u8 = 0;
/// Exit code when a case failed.
pub const EXIT_FAILED: u8 = 1;
/// Exit code when a test file or a config could not be loaded.
pub const EXIT_NOT_LOADED: u8 = 2;

/// How the results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportFormat {
    /// `PASS`/`FAIL` lines and a summary.
    Text,
    /// One JSON object.
    Json,
    /// JUnit XML, for CI systems.
    Junit,
}

/// A test file, document, case or config that could not be loaded.
// Not `config::Problem`, which it resembles: a test's problem names a case
// rather than a CRD, version or rule, and `--output json` prints these fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    pub file: String,
    /// `ValidationTest NAME (document I)`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub document: Option<String>,
    /// The case's name (or `case I` when it has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub case: Option<String>,
    pub reason: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(document) = &self.document {
            write!(f, ": {document}")?;
        }
        if let Some(case) = &self.case {
            write!(f, ": case {case:?}")?;
        }
        write!(f, ": {}", self.reason.trim_end().replace('\n', "\n    "))
    }
}

/// What a case expects of the answer. Only what is written is checked.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Expect {
    /// `response.allowed`.
    pub allowed: bool,
    /// `response.status.code` of a denial (422 for an invalid object).
    #[serde(default)]
    pub code: Option<u16>,
    /// Each must appear in the status message.
    #[serde(default)]
    pub messages: Option<Vec<String>>,
    /// Each must match a cause of the status.
    #[serde(default)]
    pub causes: Option<Vec<ExpectedCause>>,
    /// Each must appear in a warning.
    #[serde(default)]
    pub warnings: Option<Vec<String>>,
    /// Each key must be an annotation whose value contains the string.
    #[serde(default)]
    pub audit_annotations: Option<BTreeMap<String, String>>,
}

/// One expected cause: the keys written must match.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedCause {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Contained in the cause's message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// One case, ready to run.
#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    pub request: AdmissionRequest,
    pub expect: Expect,
}

/// One `ValidationTest` document, ready to run.
#[derive(Debug, Clone)]
pub struct Test {
    /// The test file, as given or found.
    pub file: String,
    pub name: String,
    /// `ValidationTest NAME (document I)`, for problems.
    pub label: String,
    /// `spec.config`, resolved against the test file's directory.
    pub config: Option<PathBuf>,
    pub cases: Vec<Case>,
}

/// The answer to one case and how it differed from the expectation.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub file: String,
    pub test: String,
    pub case: String,
    /// Empty when the case passed.
    pub failures: Vec<String>,
    pub response: AdmissionResponse,
}

/// Everything a run found.
#[derive(Debug, Clone, Default)]
pub struct Run {
    pub outcomes: Vec<Outcome>,
    pub problems: Vec<Problem>,
}

impl Run {
    /// Cases that passed.
    pub fn passed(&self) -> usize {
        self.outcomes
            .iter()
            .filter(|o| o.failures.is_empty())
            .count()
    }

    /// Cases that failed.
    pub fn failed(&self) -> usize {
        self.outcomes.len() - self.passed()
    }

    /// 2 when anything could not be loaded, else 1 when a case failed, else 0.
    pub fn exit_code(&self) -> u8 {
        if !self.problems.is_empty() {
            EXIT_NOT_LOADED
        } else if self.failed() > 0 {
            EXIT_FAILED
        } else {
            EXIT_PASSED
        }
    }

    /// The results as `format` says.
    pub fn render(&self, format: ReportFormat) -> String {
        match format {
            ReportFormat::Text => report::text(self),
            ReportFormat::Json => report::json(self),
            ReportFormat::Junit => report::junit(self),
        }
    }
}

/// Loads the tests of `paths` (files, and directories walked for
/// `*.yaml`, `*.yml` and `*.json` files) and runs every case against its
/// config: `config` when given, else the test's `spec.config`.
pub fn run(paths: &[PathBuf], config: Option<&Path>, kubernetes: KubeVersion) -> Run {
    let mut run = Run::default();
    let tests = load::discover(paths, &mut run.problems);
    // Tests sharing a config load it once; a config that does not load is
    // reported in full once, then referred to.
    let mut catalogs: HashMap<PathBuf, Option<Catalog>> = HashMap::new();
    for test in tests {
        let document = Some(test.label.clone());
        let Some(config_path) = config.map(Path::to_owned).or_else(|| test.config.clone()) else {
            run.problems.push(Problem {
                file: test.file.clone(),
                document,
                case: None,
                reason:
                    "no config: set spec.config (a path relative to the test file) or pass --config"
                        .into(),
            });
            continue;
        };
        let key = std::fs::canonicalize(&config_path).unwrap_or_else(|_| config_path.clone());
        let shown = config_path.display();
        if !catalogs.contains_key(&key) {
            let options = config::Options {
                kubernetes,
                written: false,
            };
            let loaded = config::load_as(&ConfigSource::Dir(config_path.clone()), options);
            if loaded.report.has_errors() {
                let lines: Vec<String> = config::report::problems(&loaded.report)
                    .map(|p| config::report::format_problem(&p))
                    .collect();
                run.problems.push(Problem {
                    file: test.file.clone(),
                    document,
                    case: None,
                    reason: format!("its config {shown} does not load:\n{}", lines.join("\n")),
                });
                catalogs.insert(key, None);
                continue;
            }
            catalogs.insert(key.clone(), Some(loaded.catalog));
        }
        let Some(catalog) = &catalogs[&key] else {
            run.problems.push(Problem {
                file: test.file.clone(),
                document,
                case: None,
                reason: format!("its config {shown} does not load (see above)"),
            });
            continue;
        };
        for case in &test.cases {
            run.outcomes.push(run_case(catalog, &test, case));
        }
    }
    run
}

/// Answers one case and compares.
pub fn run_case(catalog: &Catalog, test: &Test, case: &Case) -> Outcome {
    let verdict = crate::admission::review(catalog, &case.request, &crate::admission::OFFLINE);
    let mut failures = Vec::new();
    let gvk = &case.request.kind;
    let target = catalog.target(&gvk.group, &gvk.version, &gvk.kind);
    if target.crd.is_none()
        && target.rules.is_empty()
        && !target.unknown_version
        && verdict.policies_matched == 0
    {
        failures.push(format!(
            "the config has neither a CRD nor a rules document for {} {}, and no ValidatingAdmissionPolicy matches it: nothing checks this object",
            api_version(gvk),
            gvk.kind
        ));
    }
    failures.extend(compare(&case.expect, &verdict.response));
    Outcome {
        file: test.file.clone(),
        test: test.name.clone(),
        case: case.name.clone(),
        failures,
        response: verdict.response,
    }
}

fn api_version(gvk: &GroupVersionKind) -> String {
    if gvk.group.is_empty() {
        gvk.version.clone()
    } else {
        format!("{}/{}", gvk.group, gvk.version)
    }
}

/// How `response` differs from `expect`, one line per difference.
pub fn compare(expect: &Expect, response: &AdmissionResponse) -> Vec<String> {
    let mut failures = Vec::new();
    if expect.allowed != response.allowed {
        failures.push(format!(
            "allowed: expected {}, got {}",
            expect.allowed, response.allowed
        ));
    }
    let status = response.status.as_ref().filter(|_| !response.allowed);
    if let Some(code) = expect.code {
        match status {
            Some(s) if s.code == code => {}
            Some(s) => failures.push(format!("code: expected {code}, got {}", s.code)),
            None => failures.push(format!("code: expected {code}, got no status (allowed)")),
        }
    }
    let message = status.map_or("", |s| s.message.as_str());
    for wanted in expect.messages.iter().flatten() {
        if !message.contains(wanted.as_str()) {
            failures.push(format!("messages: {wanted:?} is not in the status message"));
        }
    }
    let causes: &[kube_core::response::StatusCause] = status
        .and_then(|s| s.details.as_ref())
        .map_or(&[], |d| d.causes.as_slice());
    match &expect.causes {
        Some(wanted) if wanted.is_empty() && !causes.is_empty() => {
            failures.push(format!("causes: expected none, got {}", causes.len()));
        }
        Some(wanted) => {
            for cause in wanted {
                let matches = |c: &kube_core::response::StatusCause| {
                    cause.field.as_ref().is_none_or(|f| *f == c.field)
                        && cause.reason.as_ref().is_none_or(|r| *r == c.reason)
                        && cause
                            .message
                            .as_ref()
                            .is_none_or(|m| c.message.contains(m.as_str()))
                };
                if !causes.iter().any(matches) {
                    let shown = serde_json::to_string(cause).unwrap_or_default();
                    failures.push(format!("causes: no cause matches {shown}"));
                }
            }
        }
        None => {}
    }
    match &expect.warnings {
        Some(wanted) if wanted.is_empty() && !response.warnings.is_empty() => failures.push(
            format!("warnings: expected none, got {}", response.warnings.len()),
        ),
        Some(wanted) => {
            for w in wanted {
                if !response.warnings.iter().any(|got| got.contains(w.as_str())) {
                    failures.push(format!("warnings: none contains {w:?}"));
                }
            }
        }
        None => {}
    }
    let annotations = &response.audit_annotations;
    match &expect.audit_annotations {
        Some(wanted) if wanted.is_empty() && !annotations.is_empty() => failures.push(format!(
            "auditAnnotations: expected none, got {}",
            annotations.len()
        )),
        Some(wanted) => {
            for (key, value) in wanted {
                match annotations.iter().find(|(k, _)| k == key) {
                    None => failures.push(format!("auditAnnotations: no annotation {key:?}")),
                    Some((_, got)) if !got.contains(value.as_str()) => failures.push(format!(
                        "auditAnnotations: {key:?} does not contain {value:?}"
                    )),
                    Some(_) => {}
                }
            }
        }
        None => {}
    }
    failures
}

#[cfg(test)]
mod tests;
