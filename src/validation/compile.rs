//! Compiling a schema's rules: every `x-kubernetes-validations` entry of
//! every node, checked and cost-estimated as the API server checks them
//! when a CRD is written, into the [`Node`] tree the walk runs.

use super::*;
use crate::cel;
use crate::schema::ListType;

/// What compiling one schema collects: problems, and the estimated cost of
/// every expression for the schema-wide limit.
pub(super) struct Compilation {
    pub(super) problems: Vec<RuleProblem>,
    /// (path, rule, estimated cost) of every rule and messageExpression.
    costs: Vec<(String, String, f64)>,
    /// Estimate each rule per evaluation, not times how often it can run
    /// per object (see [`Validator::compile_per_evaluation`]).
    pub(super) per_evaluation: bool,
    /// The Kubernetes minor whose libraries the rules may use.
    pub(super) libraries: cel::environment::Version,
    /// The API server's own minor, which prices and runs them.
    pub(super) api_server: cel::environment::Version,
}

impl Default for Compilation {
    fn default() -> Self {
        Compilation {
            problems: Vec::new(),
            costs: Vec::new(),
            per_evaluation: false,
            libraries: cel::environment::LATEST,
            api_server: cel::environment::LATEST,
        }
    }
}

const COST_HINT: &str = "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)";

impl Compilation {
    /// The API server's limit on the estimated cost of all rules of a schema.
    pub(super) fn check_total(&mut self) {
        let total: f64 = self.costs.iter().map(|(_, _, c)| c).sum();
        if total <= cel::STATIC_CRD_COST_LIMIT {
            return;
        }
        let mut top: Vec<&(String, String, f64)> = self
            .costs
            .iter()
            .filter(|(_, _, c)| *c >= cel::STATIC_CRD_COST_LIMIT / 100.0)
            .collect();
        top.sort_by(|a, b| b.2.total_cmp(&a.2));
        for (path, rule, _) in top.into_iter().take(4) {
            self.problems.push(RuleProblem {
                path: path.clone(),
                rule: rule.clone(),
                reason: "Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema".into(),
            });
        }
        self.problems.push(RuleProblem {
            path: "openAPIV3Schema".into(),
            rule: String::new(),
            reason: format!(
                "Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of {} {COST_HINT}",
                cel::factor_text(total, cel::STATIC_CRD_COST_LIMIT)
            ),
        });
    }
}

/// `cardinality`: how many times a rule here can run per object, when every
/// enclosing list and map is bounded (`None` when one is not).
pub(super) fn compile_node(
    schema: &Schema,
    path: &str,
    uncorrelatable: Option<&str>,
    cardinality: Option<f64>,
    cx: &mut Compilation,
) -> Node {
    let mut node = Node::default();
    let runs = if cx.per_evaluation {
        1.0
    } else {
        cardinality.unwrap_or_else(|| cel::max_cardinality(schema))
    };
    let libraries = cx.libraries;
    let api_server = cx.api_server;
    let problems = &mut cx.problems;
    let costs = &mut cx.costs;
    // Data of unknown type has no CEL type: rules there cannot compile.
    if schema.is_unknown_type() && !schema.validations.is_empty() {
        problems.push(RuleProblem {
            path: format!("{path}.x-kubernetes-validations"),
            rule: String::new(),
            reason: "Internal error: internal error: failed to construct type information for x-kubernetes-validations rules: unable to convert structural schema to CEL declarations".into(),
        });
        return node;
    }
    for (i, v) in schema.validations.iter().enumerate() {
        let rule_path = format!("{path}.x-kubernetes-validations[{i}]");
        let mut problem = |field: &str, reason: String| {
            problems.push(RuleProblem {
                path: format!("{rule_path}.{field}"),
                rule: v.rule.clone(),
                reason,
            })
        };
        let trimmed = v.rule.trim();
        if trimmed.is_empty() {
            problem("rule", "Required value: rule is not specified".into());
            continue;
        }
        if let Some(m) = &v.message {
            if !m.is_empty() && m.trim().is_empty() {
                problem("message", "must be non-empty if specified".into());
            } else if m.trim().contains(['\n', '\r']) {
                problem("message", "must not contain line breaks".into());
            }
        }
        if trimmed.contains(['\n', '\r'])
            && v.message.as_deref().is_none_or(|m| m.trim().is_empty())
        {
            problem(
                "message",
                "Required value: message must be specified if rule contains line breaks".into(),
            );
        }
        if let Some(r) = v.reason.as_deref() {
            if !matches!(
                r,
                "FieldValueDuplicate"
                    | "FieldValueForbidden"
                    | "FieldValueInvalid"
                    | "FieldValueRequired"
            ) {
                problem(
                    "reason",
                    format!("Unsupported value: {r:?}: supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\""),
                );
            }
        }
        // The API server runs each fieldPath check on its own, so one
        // value may earn several errors.
        let field_path = match v.field_path.as_deref() {
            None | Some("") => None,
            Some(fp) => {
                if fp.trim().is_empty() {
                    problem("fieldPath", "must be non-empty if specified".into());
                }
                if fp.contains(['\n', '\r']) {
                    problem("fieldPath", "must not contain line breaks".into());
                }
                match field_path::normalize(fp, schema) {
                    Ok(p) => Some(p),
                    Err(_) => {
                        problem("fieldPath", "must be a valid path".into());
                        None
                    }
                }
            }
        };
        let optional_old_self = v.optional_old_self.unwrap_or(false);
        let opts = cel::Environment::crd_rule(optional_old_self)
            .at(libraries)
            .run_by(api_server);
        let program = match Program::compile(&v.rule, schema, opts) {
            Ok(p) if p.result_type() == "bool" => p,
            Ok(_) => {
                problem("rule", "cel expression must evaluate to a bool".into());
                continue;
            }
            Err(e) if e.instantiation => {
                problem(
                    "rule",
                    format!("program instantiation failed: {}", e.message),
                );
                continue;
            }
            Err(e) => {
                problem("rule", format!("compilation failed: {}", e.message));
                continue;
            }
        };
        if program.uses_old_self() {
            if let Some(at) = uncorrelatable {
                problem(
                    "rule",
                    format!("oldSelf cannot be used on the uncorrelatable portion of the schema within {at}"),
                );
                continue;
            }
        } else if v.optional_old_self.is_some() {
            problem(
                "optionalOldSelf",
                "may not be set if oldSelf is not used in rule".into(),
            );
            continue;
        }
        let cost = program.estimated_cost() * runs;
        costs.push((format!("{rule_path}.rule"), v.rule.clone(), cost));
        if cost > cel::STATIC_RULE_COST_LIMIT {
            problem(
                "rule",
                format!(
                    "Forbidden: estimated rule cost exceeds budget by factor of {} {COST_HINT}",
                    cel::factor_text(cost, cel::STATIC_RULE_COST_LIMIT)
                ),
            );
            continue;
        }
        let message_expression = match v.message_expression.as_deref() {
            None => None,
            Some(m) if m.trim().is_empty() => {
                if !m.is_empty() {
                    problem(
                        "messageExpression",
                        "Required value: messageExpression must be non-empty if specified".into(),
                    );
                }
                None
            }
            Some(m) => {
                let opts = cel::Environment::message_expression()
                    .at(libraries)
                    .run_by(api_server);
                match Program::compile(m, schema, opts) {
                    Ok(p) if p.result_type() == "string" => {
                        // Counted in the CRD's total even when over its own
                        // limit, as the API server counts it.
                        costs.push((
                            format!("{rule_path}.messageExpression"),
                            v.rule.clone(),
                            p.estimated_cost(),
                        ));
                        if p.estimated_cost() > cel::STATIC_RULE_COST_LIMIT {
                            problem(
                                "messageExpression",
                                format!(
                                    "Forbidden: estimated messageExpression cost exceeds budget by factor of {} {COST_HINT}",
                                    cel::factor_text(p.estimated_cost(), cel::STATIC_RULE_COST_LIMIT)
                                ),
                            );
                            continue;
                        }
                        Some(super::MessageExpression {
                            source: m.to_owned(),
                            program: p,
                        })
                    }
                    Ok(_) => {
                        problem(
                            "messageExpression",
                            "messageExpression must evaluate to a string".into(),
                        );
                        continue;
                    }
                    Err(e) => {
                        let stage = if e.instantiation {
                            "instantiation"
                        } else {
                            "compilation"
                        };
                        problem(
                            "messageExpression",
                            format!("messageExpression {stage} failed: {}", e.message),
                        );
                        continue;
                    }
                }
            }
        };
        node.rules.push(Rule {
            source: v.rule.clone(),
            program,
            message: v.message.clone(),
            message_expression,
            kind: ErrorType::from_reason(v.reason.as_deref()),
            field_path,
            optional_old_self,
            index: i,
            metrics: Default::default(),
        });
    }
    node.reads = SelfReads::of(
        schema,
        node.rules.iter().flat_map(|r| {
            std::iter::once(&r.program).chain(r.message_expression.as_ref().map(|m| &m.program))
        }),
    );
    node.shows_value = !node.rules.is_empty() && schema.ty.openapi_name() != "object";
    for (name, child) in &schema.properties {
        let child_path = format!("{path}.properties[{name}]");
        let n = compile_node(child, &child_path, uncorrelatable, cardinality, cx);
        if !n.is_empty() {
            node.properties.push((name.clone(), n));
        }
    }
    if let Some(items) = schema.items.as_deref() {
        let child_path = format!("{path}.items");
        let unc = match (uncorrelatable, schema.list_type) {
            (Some(u), _) => Some(u.to_owned()),
            (None, ListType::Map) => None,
            (None, _) => Some(path.to_owned()),
        };
        let card = cardinality.zip(schema.max_items).map(|(c, m)| c * m as f64);
        let n = compile_node(items, &child_path, unc.as_deref(), card, cx);
        if !n.is_empty() {
            node.element = Some(Box::new(n));
        }
    } else if let Some(values) = schema.additional_properties.as_deref() {
        let child_path = format!("{path}.additionalProperties");
        let card = cardinality
            .zip(schema.max_properties)
            .map(|(c, m)| c * m as f64);
        let n = compile_node(values, &child_path, uncorrelatable, card, cx);
        if !n.is_empty() {
            node.element = Some(Box::new(n));
        }
    }
    node.index_reads(schema);
    node
}
