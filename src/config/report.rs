//! The config report as people and tools read it: one line per problem
//! (`file: crd NAME version V: PATH: rule "R": REASON`) and a summary, or
//! the report as JSON. Used by `celhook check`, `serve` at start and the
//! reloader.

use std::fmt::Write as _;

use super::{Problem, Report};

/// One problem as a line: `file: crd NAME version V: PATH: rule "R": REASON`,
/// leaving out the parts the problem does not have. A multi-line reason
/// continues on indented lines.
pub fn format_problem(problem: &Problem) -> String {
    let mut line = problem.file.clone();
    if let Some(document) = &problem.document {
        let _ = write!(line, ": {document}");
    }
    if let Some(crd) = &problem.crd {
        let _ = write!(line, ": crd {crd}");
        if let Some(version) = &problem.version {
            let _ = write!(line, " version {version}");
        }
    } else if let Some(version) = &problem.version {
        let _ = write!(line, ": version {version}");
    }
    if let Some(path) = &problem.path {
        let _ = write!(line, ": {path}");
    }
    if let Some(rule) = &problem.rule {
        // Debug quoting escapes quotes and newlines inside the rule.
        let _ = write!(line, ": rule {rule:?}");
    }
    // Compiler messages span lines (a caret under the rule): indent the
    // continuation so every problem still starts a line with its file.
    let _ = write!(
        line,
        ": {}",
        problem.reason.trim_end().replace('\n', "\n    ")
    );
    line
}

/// Every problem of `report` in order (file-level problems first), each
/// with the CRD's name and file filled in when the problem lacks them.
pub fn problems(report: &Report) -> impl Iterator<Item = std::borrow::Cow<'_, Problem>> {
    let general = report.errors.iter().map(std::borrow::Cow::Borrowed);
    let per_crd = report.crds.iter().flat_map(|crd| {
        crd.errors.iter().map(move |p| {
            if p.crd.is_some() && !p.file.is_empty() {
                std::borrow::Cow::Borrowed(p)
            } else {
                let mut p = p.clone();
                p.crd.get_or_insert_with(|| crd.name.clone());
                if p.file.is_empty() {
                    p.file.clone_from(&crd.file);
                }
                std::borrow::Cow::Owned(p)
            }
        })
    });
    general.chain(per_crd)
}

/// `check`'s text report: one line per problem (conversion documents'
/// problems included), one per warning (a skipped file or document, a
/// conversion field kept only in the stash; `warning: ` first), one per
/// note (`note: `), then a summary line.
pub fn render_text(report: &Report) -> String {
    let mut out = String::new();
    let mut count = 0usize;
    for problem in problems(report) {
        count += 1;
        out.push_str(&format_problem(&problem));
        out.push('\n');
    }
    for skipped in &report.warnings {
        let _ = writeln!(out, "warning: {}", format_problem(skipped));
    }
    for note in &report.notes {
        let _ = writeln!(out, "note: {}", format_problem(note));
    }
    let versions: usize = report.crds.iter().map(|c| c.versions.len()).sum();
    let _ = write!(
        out,
        "checked {} ({})",
        counted(report.crds.len(), "CRD", "CRDs"),
        counted(versions, "version", "versions")
    );
    // What the config holds besides CRDs: (how many, of what, in them).
    let rules: usize = report.documents.iter().map(|d| d.rules).sum();
    let bindings: usize = report.policies.iter().map(|p| p.bindings.len()).sum();
    let others = [
        (
            report.documents.len(),
            ["rules document", "rules documents"],
            counted(rules, "rule", "rules"),
        ),
        (
            report.policies.len(),
            ["ValidatingAdmissionPolicy", "ValidatingAdmissionPolicies"],
            counted(bindings, "binding", "bindings"),
        ),
    ];
    for (n, [one, many], inside) in others {
        if n > 0 {
            let _ = write!(out, " and {} ({inside})", counted(n, one, many));
        }
    }
    out.push_str(": ");
    if count == 0 {
        out.push_str("no problems");
    } else {
        out.push_str(&counted(count, "problem", "problems"));
    }
    let warnings = report.warnings.len();
    if warnings > 0 {
        let _ = write!(out, ", {}", counted(warnings, "warning", "warnings"));
    }
    out.push('\n');
    out
}

/// `check`'s JSON report: the [`Report`] as it serializes.
pub fn render_json(report: &Report) -> Result<String, serde_json::Error> {
    let mut out = serde_json::to_string_pretty(report)?;
    out.push('\n');
    Ok(out)
}

/// `1 CRD`, `2 CRDs`.
fn counted(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::CrdReport;

    fn problem() -> Problem {
        Problem {
            file: "crds/crontab.yaml".into(),
            crd: Some("crontabs.stable.example.com".into()),
            version: Some("v1".into()),
            path: Some(
                "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
                    .into(),
            ),
            rule: Some("self.replicas <= self.\"max\"".into()),
            reason: "compilation failed: undefined field 'max'".into(),
            document: None,
        }
    }

    #[test]
    fn a_problem_line_names_every_location_part() {
        assert_eq!(
            format_problem(&problem()),
            "crds/crontab.yaml: crd crontabs.stable.example.com version v1: \
             spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: \
             rule \"self.replicas <= self.\\\"max\\\"\": compilation failed: undefined field 'max'"
        );
        let bare = Problem {
            file: "crds/bad.yaml".into(),
            crd: None,
            version: None,
            path: None,
            rule: None,
            reason: "not YAML".into(),
            document: None,
        };
        assert_eq!(format_problem(&bare), "crds/bad.yaml: not YAML");
        let multi = Problem {
            reason: "compilation failed: ERROR: <input>:1:5: Syntax error\n | self >\n | ....^\n"
                .into(),
            ..bare
        };
        assert_eq!(
            format_problem(&multi),
            "crds/bad.yaml: compilation failed: ERROR: <input>:1:5: Syntax error\n     | self >\n     | ....^"
        );
    }

    #[test]
    fn the_text_report_ends_with_a_summary() {
        let mut report = Report::default();
        assert_eq!(
            render_text(&report),
            "checked 0 CRDs (0 versions): no problems\n"
        );

        let mut p = problem();
        p.crd = None;
        report.crds.push(CrdReport {
            name: "crontabs.stable.example.com".into(),
            file: "crds/crontab.yaml".into(),
            versions: vec!["v1".into()],
            errors: vec![p],
        });
        let text = render_text(&report);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(
            lines[0].starts_with("crds/crontab.yaml: crd crontabs.stable.example.com version v1: ")
        );
        assert_eq!(lines[1], "checked 1 CRD (1 version): 1 problem");
    }

    #[test]
    fn the_json_report_is_the_serialized_report() {
        let report = Report {
            crds: vec![CrdReport {
                name: "crontabs.stable.example.com".into(),
                file: "crds/crontab.yaml".into(),
                versions: vec!["v1".into()],
                errors: vec![problem()],
            }],
            errors: vec![],
            warnings: vec![],
            notes: vec![],
            documents: vec![],
            policies: vec![],
        };
        let value: serde_json::Value =
            serde_json::from_str(&render_json(&report).expect("renders")).expect("json");
        assert_eq!(value["crds"][0]["name"], "crontabs.stable.example.com");
        assert_eq!(
            value["crds"][0]["errors"][0]["rule"],
            "self.replicas <= self.\"max\""
        );
        assert_eq!(value["errors"], serde_json::json!([]));
    }
}
