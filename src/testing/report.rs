//! The results of `celhook test` as text, JSON or JUnit XML.

use std::fmt::Write as _;

use celhook_json::{json, Value as Json};

use super::{Outcome, Problem, Run};

/// `ERROR` lines for what did not load, one `PASS`/`FAIL file: test/case`
/// line per case (a failure followed by what differed and the answer),
/// then `N passed, M failed`.
pub(super) fn text(run: &Run) -> String {
    let mut out = String::new();
    for problem in &run.problems {
        let _ = writeln!(out, "ERROR {problem}");
    }
    for outcome in &run.outcomes {
        let verdict = if outcome.failures.is_empty() {
            "PASS"
        } else {
            "FAIL"
        };
        let _ = writeln!(out, "{verdict} {}", title(outcome));
        if outcome.failures.is_empty() {
            continue;
        }
        for failure in &outcome.failures {
            let _ = writeln!(out, "  {failure}");
        }
        out.push_str(&answer(outcome));
    }
    let _ = write!(out, "{} passed, {} failed", run.passed(), run.failed());
    if !run.problems.is_empty() {
        let _ = write!(out, ", {} not loaded", run.problems.len());
    }
    out.push('\n');
    out
}

/// `file: test/case`.
fn title(outcome: &Outcome) -> String {
    format!("{}: {}/{}", outcome.file, outcome.test, outcome.case)
}

/// The answer of a failed case, indented under it: `answer: allowed` or
/// `answer: denied: ...` with its causes, warnings and audit annotations.
fn answer(outcome: &Outcome) -> String {
    let mut out = String::new();
    let rendered = crate::eval::render_answer(&outcome.response);
    for (i, line) in rendered.lines().enumerate() {
        let lead = if i == 0 { "  answer: " } else { "    " };
        let _ = writeln!(out, "{lead}{}", line.trim_start());
    }
    for (key, value) in &outcome.response.audit_annotations {
        let _ = writeln!(out, "    audit annotation {key}: {value}");
    }
    out
}

/// `{"passed", "failed", "errors": [{"file", "document", "case",
/// "reason"}], "cases": [{"file", "test", "case", "passed", "failures",
/// "response"}]}`, `response` as the webhook sends it.
pub(super) fn json(run: &Run) -> String {
    let cases: Vec<Json> = run
        .outcomes
        .iter()
        .map(|o| {
            let review =
                crate::review::encode_admission(crate::review::ReviewVersion::V1, &o.response)
                    .ok()
                    .and_then(|bytes| serde_json::from_slice::<Json>(&bytes).ok());
            json!({
                "file": o.file,
                "test": o.test,
                "case": o.case,
                "passed": o.failures.is_empty(),
                "failures": o.failures,
                "response": review.map_or(Json::Null, |mut r| r["response"].take()),
            })
        })
        .collect();
    let report = json!({
        "passed": run.passed(),
        "failed": run.failed(),
        "errors": run.problems,
        "cases": cases,
    });
    serde_json::to_string_pretty(&report).unwrap_or_default() + "\n"
}

/// JUnit XML: a `testsuite` per test (named after it), a `testcase` per
/// case (`classname` the file), a `failure` in a failed one; what did not
/// load as `error`s in a last suite. Written by hand: a few elements and
/// one escaping function do not call for an XML crate.
pub(super) fn junit(run: &Run) -> String {
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"celhook test\" tests=\"{}\" failures=\"{}\" errors=\"{}\">",
        run.outcomes.len() + run.problems.len(),
        run.failed(),
        run.problems.len()
    );
    // Consecutive cases of one test (same file and name) form its suite.
    let mut rest = run.outcomes.as_slice();
    while let Some(first) = rest.first() {
        let len = rest
            .iter()
            .take_while(|o| o.file == first.file && o.test == first.test)
            .count();
        let (suite, tail) = rest.split_at(len);
        rest = tail;
        let failures = suite.iter().filter(|o| !o.failures.is_empty()).count();
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\">",
            escape(&first.test, true),
            suite.len()
        );
        for outcome in suite {
            let open = format!(
                "    <testcase classname=\"{}\" name=\"{}\"",
                escape(&outcome.file, true),
                escape(&outcome.case, true)
            );
            if outcome.failures.is_empty() {
                let _ = writeln!(out, "{open}/>");
                continue;
            }
            let details = format!("{}\n{}", outcome.failures.join("\n"), answer(outcome));
            let _ = writeln!(
                out,
                "{open}>\n      <failure message=\"{}\">{}</failure>\n    </testcase>",
                escape(&outcome.failures.join("; "), true),
                escape(&details, false)
            );
        }
        out.push_str("  </testsuite>\n");
    }
    if !run.problems.is_empty() {
        let _ = writeln!(
            out,
            "  <testsuite name=\"not loaded\" tests=\"{0}\" failures=\"0\" errors=\"{0}\">",
            run.problems.len()
        );
        for problem in &run.problems {
            let _ = writeln!(
                out,
                "    <testcase classname=\"{}\" name=\"{}\">\n      <error message=\"{}\">{}</error>\n    </testcase>",
                escape(&problem.file, true),
                escape(&problem_name(problem), true),
                escape(&problem.reason, true),
                escape(&problem.to_string(), false)
            );
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

/// What a problem is about, for a `testcase` name: its document and case.
fn problem_name(problem: &Problem) -> String {
    match (&problem.document, &problem.case) {
        (Some(document), Some(case)) => format!("{document}/{case}"),
        (Some(document), None) => document.clone(),
        (None, _) => problem.file.clone(),
    }
}

/// `text` for XML: `&`, `<`, `>`, `"` and `'` as entities; in an attribute
/// (`attribute`) also tabs and line feeds as character references, which
/// a parser would otherwise turn into spaces, and carriage returns
/// everywhere; control characters XML 1.0 cannot carry in any form become
/// U+FFFD.
pub(super) fn escape(text: &str, attribute: bool) -> String {
    crate::field_error::escape_each(text, |c| match c {
        '&' => Some("&amp;"),
        '<' => Some("&lt;"),
        '>' => Some("&gt;"),
        '"' => Some("&quot;"),
        '\'' => Some("&apos;"),
        '\t' | '\n' if !attribute => None,
        '\t' => Some("&#9;"),
        '\n' => Some("&#10;"),
        // A parser would turn a bare carriage return into a line feed.
        '\r' => Some("&#13;"),
        c if u32::from(c) < 0x20 || matches!(c, '\u{fffe}' | '\u{ffff}') => Some("\u{fffd}"),
        _ => None,
    })
}
