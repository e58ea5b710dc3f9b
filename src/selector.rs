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

use crate::cel::value::k8s::format;
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
        for msg in format::qualified_name(k) {
            out.push(("matchLabels".into(), invalid(k, &msg)));
        }
        for msg in format::label_value(v) {
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
        for msg in format::qualified_name(&r.key) {
            out.push((format!("{at}.key"), invalid(&r.key, &msg)));
        }
        for (j, v) in r.values.iter().enumerate() {
            for msg in format::label_value(v) {
                out.push((format!("{at}.values[{j}]"), invalid(v, &msg)));
            }
        }
    }
    out
}

/// Checks a Kubernetes qualified name (a label key, a matchCondition's
/// name): apimachinery's `IsQualifiedName`, the problems in the API
/// server's words, joined as it joins them.
pub fn qualified_name(name: &str) -> Result<(), String> {
    joined(format::qualified_name(name))
}

/// apimachinery's `IsValidLabelValue`, joined as [`qualified_name`].
pub fn label_value(value: &str) -> Result<(), String> {
    joined(format::label_value(value))
}

/// apimachinery's `IsDNS1123Subdomain` (object names), its limit in bytes.
pub fn dns_subdomain(name: &str) -> Result<(), String> {
    joined(format::dns1123_subdomain(name, "bytes"))
}

fn joined(problems: Vec<String>) -> Result<(), String> {
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
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
