//! Kubernetes label selectors (`matchLabels`, `matchExpressions`): checked
//! as the API server checks one when it is written, then compiled once into
//! requirements that read an object's `metadata.labels`.
//!
//! Rules documents (their exemptions) and ValidatingAdmissionPolicy
//! matching use this one implementation.

use std::collections::BTreeMap;

use celhook_json::Value as Json;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use serde::Deserialize;

use crate::field_error::invalid;

/// A label selector as rules documents write it.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelSelector {
    #[serde(default)]
    pub match_labels: BTreeMap<String, String>,
    #[serde(default)]
    pub match_expressions: Vec<Requirement>,
}

/// One `matchExpressions` entry as written.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Requirement {
    pub key: String,
    pub operator: String,
    #[serde(default)]
    pub values: Vec<String>,
}

impl LabelSelector {
    /// True when `labels` (an object's `metadata.labels`) satisfy the
    /// selector; an operator that does not compile matches nothing.
    pub fn matches(&self, labels: Option<&Json>) -> bool {
        Selector::build(self).matches(labels)
    }
}

impl From<&meta::LabelSelector> for LabelSelector {
    fn from(s: &meta::LabelSelector) -> LabelSelector {
        LabelSelector {
            match_labels: s.match_labels.clone().unwrap_or_default(),
            match_expressions: s
                .match_expressions
                .iter()
                .flatten()
                .map(|r| Requirement {
                    key: r.key.clone(),
                    operator: r.operator.clone(),
                    values: r.values.clone().unwrap_or_default(),
                })
                .collect(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    In,
    NotIn,
    Exists,
    DoesNotExist,
    /// Only from an unchecked build: matches nothing, as a selector that
    /// failed to parse selects nothing.
    Invalid,
}

#[derive(Debug, Clone, PartialEq)]
struct Term {
    key: String,
    op: Op,
    values: Vec<String>,
}

/// A compiled selector: every term must hold. No term selects everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Selector {
    terms: Vec<Term>,
}

impl Selector {
    /// The selector that matches every object (the API's default).
    pub fn everything() -> Selector {
        Selector::default()
    }

    /// Checks and compiles a written selector. Problems are (path relative
    /// to the selector, e.g. `matchExpressions[0].operator`, reason).
    pub fn compile(s: &LabelSelector) -> Result<Selector, Vec<(String, String)>> {
        let problems = problems(s);
        if problems.is_empty() {
            Ok(Selector::build(s))
        } else {
            Err(problems)
        }
    }

    /// [`Selector::compile`] for the API type.
    pub fn from_k8s(s: &meta::LabelSelector) -> Result<Selector, Vec<(String, String)>> {
        Selector::compile(&LabelSelector::from(s))
    }

    /// Compiles without checking (an unknown operator matches nothing).
    fn build(s: &LabelSelector) -> Selector {
        let equals = s.match_labels.iter().map(|(k, v)| Term {
            key: k.clone(),
            op: Op::In,
            values: vec![v.clone()],
        });
        let expressions = s.match_expressions.iter().map(|r| Term {
            key: r.key.clone(),
            op: match r.operator.as_str() {
                "In" => Op::In,
                "NotIn" => Op::NotIn,
                "Exists" => Op::Exists,
                "DoesNotExist" => Op::DoesNotExist,
                _ => Op::Invalid,
            },
            values: r.values.clone(),
        });
        Selector {
            terms: equals.chain(expressions).collect(),
        }
    }

    /// True when the selector matches everything, so that callers may skip
    /// finding the labels (as the API server skips the namespace lookup).
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// True when `labels` (a `metadata.labels` map; `None` for no labels)
    /// satisfy every term. A label that is not a string is taken as absent.
    pub fn matches(&self, labels: Option<&Json>) -> bool {
        let label = |key: &str| labels.and_then(|l| l.get(key)).and_then(Json::as_str);
        self.terms.iter().all(|t| {
            let value = label(&t.key);
            match t.op {
                Op::In => value.is_some_and(|v| t.values.iter().any(|x| x == v)),
                Op::NotIn => value.is_none_or(|v| !t.values.iter().any(|x| x == v)),
                Op::Exists => value.is_some(),
                Op::DoesNotExist => value.is_none(),
                Op::Invalid => false,
            }
        })
    }
}

/// The API server's checks of a selector (strict: label values in
/// expressions must be valid too, as for admission policies).
fn problems(s: &LabelSelector) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (k, v) in &s.match_labels {
        for msg in label_key_problems(k) {
            out.push(("matchLabels".into(), invalid(k, &msg)));
        }
        for msg in label_value_problems(v) {
            out.push(("matchLabels".into(), invalid(v, &msg)));
        }
    }
    for (i, r) in s.match_expressions.iter().enumerate() {
        let at = format!("matchExpressions[{i}]");
        match r.operator.as_str() {
            "In" | "NotIn" if r.values.is_empty() => out.push((
                format!("{at}.values"),
                "Required value: must be specified when `operator` is 'In' or 'NotIn'".into(),
            )),
            "Exists" | "DoesNotExist" if !r.values.is_empty() => out.push((
                format!("{at}.values"),
                "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
                    .into(),
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => out.push((
                format!("{at}.operator"),
                invalid(other, "not a valid selector operator"),
            )),
        }
        for msg in label_key_problems(&r.key) {
            out.push((format!("{at}.key"), invalid(&r.key, &msg)));
        }
        for (j, v) in r.values.iter().enumerate() {
            for msg in label_value_problems(v) {
                out.push((format!("{at}.values[{j}]"), invalid(v, &msg)));
            }
        }
    }
    out
}

/// apimachinery's `RegexError`: the reason, examples, and the pattern.
fn regex_error(msg: &str, pattern: &str, examples: &[&str]) -> String {
    let examples: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{msg} (e.g. {}regex used for validation is '{pattern}')",
        examples.join(" or ")
    )
}

const KEY_PATTERN: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const KEY_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const VALUE_PATTERN: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const SUBDOMAIN_PATTERN: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

/// `KEY_PATTERN` without a regex engine.
fn is_label_token(s: &str) -> bool {
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    edge(s.chars().next())
        && edge(s.chars().last())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// `SUBDOMAIN_PATTERN` without a regex engine.
pub(crate) fn is_dns_subdomain(s: &str) -> bool {
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    s.split('.').all(|label| {
        edge(label.chars().next())
            && edge(label.chars().last())
            && label
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    })
}

/// apimachinery's `IsQualifiedName` (a label key), its messages verbatim.
/// Checks a Kubernetes qualified name (a label key, a matchCondition's
/// name): the problems in the API server's words, joined as it joins them.
pub fn qualified_name(name: &str) -> Result<(), String> {
    joined(label_key_problems(name))
}

/// apimachinery's `IsValidLabelValue`, joined as [`qualified_name`].
pub fn label_value(value: &str) -> Result<(), String> {
    joined(label_value_problems(value))
}

/// apimachinery's `IsDNS1123Subdomain` (object names), its messages
/// verbatim.
pub fn dns_subdomain(name: &str) -> Result<(), String> {
    let mut problems = Vec::new();
    if name.len() > 253 {
        problems.push("must be no more than 253 bytes".to_owned());
    }
    if !is_dns_subdomain(name) {
        problems.push(regex_error(
            SUBDOMAIN_MSG,
            SUBDOMAIN_PATTERN,
            &["example.com"],
        ));
    }
    joined(problems)
}

fn joined(problems: Vec<String>) -> Result<(), String> {
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

fn label_key_problems(key: &str) -> Vec<String> {
    let mut out = Vec::new();
    let parts: Vec<&str> = key.split('/').collect();
    let name = match parts.as_slice() {
        [name] => name,
        [prefix, name] => {
            if prefix.is_empty() {
                out.push("prefix part must be non-empty".to_owned());
            } else {
                if prefix.len() > 253 {
                    out.push("prefix part must be no more than 253 bytes".to_owned());
                }
                if !is_dns_subdomain(prefix) {
                    let e = regex_error(SUBDOMAIN_MSG, SUBDOMAIN_PATTERN, &["example.com"]);
                    out.push(format!("prefix part {e}"));
                }
            }
            name
        }
        _ => {
            let e = regex_error(KEY_MSG, KEY_PATTERN, &["MyName", "my.name", "123-abc"]);
            out.push(format!(
                "a valid label key {e} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ));
            return out;
        }
    };
    if name.is_empty() {
        out.push("name part must be non-empty".to_owned());
    } else if name.len() > 63 {
        out.push("name part must be no more than 63 bytes".to_owned());
    }
    if !is_label_token(name) {
        let e = regex_error(KEY_MSG, KEY_PATTERN, &["MyName", "my.name", "123-abc"]);
        out.push(format!("name part {e}"));
    }
    out
}

/// apimachinery's `IsValidLabelValue`, its messages verbatim.
fn label_value_problems(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    if value.len() > 63 {
        out.push("must be no more than 63 bytes".to_owned());
    }
    if !value.is_empty() && !is_label_token(value) {
        out.push(regex_error(
            VALUE_MSG,
            VALUE_PATTERN,
            &["MyValue", "my_value", "12345"],
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use celhook_json::json;

    fn wire(v: Json) -> LabelSelector {
        celhook_json::from_value(v).expect("selector")
    }

    #[test]
    fn name_rules() {
        for ok in ["app", "example.com/app", "a.b-c_d", "A1", "x/y"] {
            assert!(qualified_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "/a",
            "a/",
            "-a",
            "a-",
            "a b",
            "Example.com/a",
            "a/b/c",
            &"x".repeat(64),
        ] {
            assert!(qualified_name(bad).is_err(), "{bad}");
        }
        assert!(label_value("").is_ok());
        assert!(label_value("v1.2_3").is_ok());
        assert!(label_value("v/1").is_err());
        assert!(dns_subdomain("replica-limits.example.com").is_ok());
        assert_eq!(
            dns_subdomain("Bad_Name"),
            Err("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".to_owned())
        );
        assert!(dns_subdomain(&"a".repeat(254)).is_err());
    }

    #[test]
    fn operators_read_the_labels() {
        let labels = json!({"env": "prod", "tier": "web", "n": 1});
        let cases = [
            (json!({}), true),
            (json!({"matchLabels": {"env": "prod"}}), true),
            (json!({"matchLabels": {"env": "dev"}}), false),
            (json!({"matchLabels": {"env": "prod", "tier": "db"}}), false),
            (ex("env", "In", &["dev", "prod"]), true),
            (ex("env", "In", &["dev"]), false),
            (ex("zone", "In", &["a"]), false),
            (ex("env", "NotIn", &["prod"]), false),
            (ex("env", "NotIn", &["dev"]), true),
            (ex("zone", "NotIn", &["a"]), true),
            (ex("tier", "Exists", &[]), true),
            (ex("zone", "Exists", &[]), false),
            (ex("zone", "DoesNotExist", &[]), true),
            (ex("env", "DoesNotExist", &[]), false),
            // A label that is not a string is not a label.
            (ex("n", "Exists", &[]), false),
        ];
        for (selector, want) in cases {
            let s = Selector::compile(&wire(selector.clone())).expect("valid");
            assert_eq!(s.matches(Some(&labels)), want, "{selector}");
            assert_eq!(wire(selector.clone()).matches(Some(&labels)), want);
        }
        let none = Selector::compile(&wire(ex("env", "DoesNotExist", &[]))).expect("valid");
        assert!(none.matches(None));
        assert!(Selector::everything().is_empty() && Selector::everything().matches(None));
    }

    fn ex(key: &str, op: &str, values: &[&str]) -> Json {
        json!({"matchExpressions": [{"key": key, "operator": op, "values": values}]})
    }

    #[test]
    fn an_unknown_operator_unchecked_matches_nothing() {
        let s = wire(ex("env", "Matches", &["x"]));
        assert!(!s.matches(Some(&json!({"env": "x"}))));
    }

    #[test]
    fn problems_are_the_api_servers() {
        let s = wire(json!({
            "matchLabels": {"a/b/c": "ok", "good": "bad value"},
            "matchExpressions": [
                {"key": "a", "operator": "In"},
                {"key": "b", "operator": "Exists", "values": ["x"]},
                {"key": "c", "operator": "Matches"},
                {"key": "key ", "operator": "In", "values": ["bad value"]},
                {"key": "/x", "operator": "Exists"},
                {"key": "Example.com/x", "operator": "Exists"}
            ]
        }));
        let key_re = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
        let value_re = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
        let sub_re = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
        let want: Vec<(String, String)> = [
            ("matchLabels", format!("Invalid value: \"a/b/c\": a valid label key {key_re} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')")),
            ("matchLabels", format!("Invalid value: \"bad value\": {value_re}")),
            ("matchExpressions[0].values", "Required value: must be specified when `operator` is 'In' or 'NotIn'".into()),
            ("matchExpressions[1].values", "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'".into()),
            ("matchExpressions[2].operator", "Invalid value: \"Matches\": not a valid selector operator".into()),
            ("matchExpressions[3].key", format!("Invalid value: \"key \": name part {key_re}")),
            ("matchExpressions[3].values[0]", format!("Invalid value: \"bad value\": {value_re}")),
            ("matchExpressions[4].key", "Invalid value: \"/x\": prefix part must be non-empty".into()),
            ("matchExpressions[5].key", format!("Invalid value: \"Example.com/x\": prefix part {sub_re}")),
        ]
        .into_iter()
        .map(|(p, r)| (p.to_owned(), r))
        .collect();
        assert_eq!(Selector::compile(&s).expect_err("refused"), want);
    }

    #[test]
    fn lengths_and_empty_names_are_checked() {
        let long = "a".repeat(64);
        let s = wire(json!({"matchExpressions": [
            {"key": long.clone(), "operator": "In", "values": [long.clone(), ""]},
            {"key": "x/", "operator": "Exists"}
        ]}));
        let found = Selector::compile(&s).expect_err("refused");
        let reasons: Vec<&str> = found.iter().map(|(_, r)| r.as_str()).collect();
        assert_eq!(found[0].0, "matchExpressions[0].key");
        assert!(reasons[0].ends_with(": name part must be no more than 63 bytes"));
        assert_eq!(found[1].0, "matchExpressions[0].values[0]");
        assert!(reasons[1].ends_with(": must be no more than 63 bytes"));
        // "x/" has an empty name: both the emptiness and the pattern fail.
        assert_eq!(found[2].0, "matchExpressions[1].key");
        assert!(reasons[2].ends_with("name part must be non-empty"));
        assert!(reasons[3].contains("name part must consist of"));
        assert_eq!(found.len(), 4);
    }

    #[test]
    fn the_api_type_compiles_the_same() {
        let k8s: meta::LabelSelector = celhook_json::from_value(json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "example.com/tier", "operator": "NotIn", "values": ["db"]}]
        }))
        .expect("k8s selector");
        let s = Selector::from_k8s(&k8s).expect("valid");
        assert!(s.matches(Some(&json!({"app": "web"}))));
        assert!(!s.matches(Some(&json!({"app": "web", "example.com/tier": "db"}))));
        let bad: meta::LabelSelector =
            celhook_json::from_value(json!({"matchExpressions": [{"key": "k", "operator": "In"}]}))
                .expect("k8s selector");
        let found = Selector::from_k8s(&bad).expect_err("refused");
        assert_eq!(found[0].0, "matchExpressions[0].values");
    }
}
