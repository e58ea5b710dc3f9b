//! The validation walk: runs each schema node's compiled rules against the
//! object (and, on UPDATE, the correlated old object), collecting field
//! errors worded as the API server words them, and answers the review.

mod field;
mod field_path;

use serde_json::Value as Json;

use crate::cel::{self, ErrorKind, Program, Value};
use crate::metrics::{Metrics, RuleResult};
use crate::review::{AdmissionRequest, AdmissionResponse, Operation};
use crate::schema::{ListType, Schema};

pub use field::{aggregate, invalid_status, ErrorType, FieldError};

/// One compiled `x-kubernetes-validations` entry.
#[derive(Debug)]
pub struct Rule {
    /// The rule text as written.
    pub source: String,
    pub program: Program,
    pub message: Option<String>,
    pub message_expression: Option<Program>,
    pub kind: ErrorType,
    /// `fieldPath`, normalised (`.a['b']` is `a.b`).
    pub field_path: Option<String>,
    pub optional_old_self: bool,
    /// Index of the rule in its node's list (for metrics and logs).
    pub index: usize,
    /// Metric handles, attached when the catalog is bound to a registry
    /// ([`bind_metrics`]); empty in `check` and unit tests.
    pub metrics: crate::metrics::RuleMetricsSlot,
}

impl Rule {
    /// The trimmed message if there is one, else the trimmed rule: how the
    /// API server names a rule in its errors.
    fn error_string(&self) -> &str {
        match self.message.as_deref().map(str::trim) {
            Some(m) if !m.is_empty() => m,
            _ => self.source.trim(),
        }
    }
}

/// The compiled rules of a schema tree, mirroring the schema node by node
/// where rules exist below.
#[derive(Debug, Default)]
pub struct Node {
    pub rules: Vec<Rule>,
    /// Properties with rules at or below them, by JSON name.
    pub properties: Vec<(String, Node)>,
    /// Items or map values, when they have rules at or below them.
    pub element: Option<Box<Node>>,
}

impl Node {
    fn is_empty(&self) -> bool {
        self.rules.is_empty() && self.properties.is_empty() && self.element.is_none()
    }

    /// Rules at this node and below it.
    pub fn rule_count(&self) -> usize {
        self.rules.len()
            + self
                .properties
                .iter()
                .map(|(_, n)| n.rule_count())
                .sum::<usize>()
            + self.element.as_ref().map_or(0, |e| e.rule_count())
    }
}

/// A problem in one rule, found at compile time.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleProblem {
    /// Schema path relative to the version's schema root, e.g.
    /// `openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule`.
    pub path: String,
    pub rule: String,
    pub reason: String,
}

/// The compiled schema and rules of one CRD version.
#[derive(Debug)]
pub struct Validator {
    pub schema: Schema,
    pub root: Node,
}

impl Validator {
    /// Rules of the whole schema.
    pub fn rule_count(&self) -> usize {
        self.root.rule_count()
    }

    /// Compiles every rule of `schema`, reporting every problem (not just the first).
    pub fn compile(schema: Schema) -> Result<Validator, Vec<RuleProblem>> {
        let mut cx = Compilation::default();
        let root = compile_node(&schema, "openAPIV3Schema", None, Some(1.0), &mut cx);
        cx.check_total();
        let problems = cx.problems;
        if problems.is_empty() {
            Ok(Validator { schema, root })
        } else {
            Err(problems)
        }
    }

    /// Builds the schema of a version's `openAPIV3Schema` and compiles its
    /// rules. A schema that is not structural is refused with every
    /// structural problem and the problems of the rules in its structural
    /// parts, as the API server reports them (`Schema::partial`).
    pub fn from_openapi(
        props: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps,
    ) -> Result<Validator, Vec<RuleProblem>> {
        // A structural schema has no additionalProperties at its root (a
        // resource is an object, not a map); the rules are still checked.
        let root_map = props.additional_properties.is_some().then(|| RuleProblem {
            path: "openAPIV3Schema.additionalProperties".into(),
            rule: String::new(),
            reason: "Forbidden: must not be used at the root".into(),
        });
        match Schema::from_openapi(props) {
            Ok(schema) => {
                let validator = match (Validator::compile(schema), root_map) {
                    (Ok(v), None) => v,
                    (Ok(_), Some(root)) => return Err(vec![root]),
                    (Err(mut problems), Some(root)) => {
                        problems.insert(0, root);
                        return Err(problems);
                    }
                    (Err(problems), None) => return Err(problems),
                };
                // Defaults must pass the rules of their node, as the API
                // server checks when the CRD is written.
                let mut problems = Vec::new();
                validator.check_defaults(
                    props,
                    &validator.schema,
                    Some(&validator.root),
                    "openAPIV3Schema",
                    &mut problems,
                );
                if problems.is_empty() {
                    Ok(validator)
                } else {
                    Err(problems)
                }
            }
            Err(_) => {
                let (errors, subtrees) = Schema::partial(props);
                let mut problems: Vec<RuleProblem> = errors
                    .into_iter()
                    .map(|e| RuleProblem {
                        path: e.path,
                        rule: String::new(),
                        reason: e.reason,
                    })
                    .collect();
                problems.extend(root_map);
                for subtree in subtrees {
                    problems.extend(Validator::check_subtree(&subtree));
                }
                Err(problems)
            }
        }
    }

    /// Runs the rules at and below every node that has a `default` on that
    /// default, reporting failures at `<node>.default`.
    fn check_defaults(
        &self,
        props: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps,
        schema: &Schema,
        node: Option<&Node>,
        path: &str,
        problems: &mut Vec<RuleProblem>,
    ) {
        use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
            JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
        };
        let Some(node) = node else {
            return;
        };
        if let Some(default) = &props.default {
            let mut w = Walk::new();
            let mut at = String::new();
            w.node(
                node,
                schema,
                &default.0,
                None,
                false,
                &Unchanged::never(),
                &mut at,
            );
            for e in w.errors {
                problems.push(RuleProblem {
                    path: format!("{path}.default"),
                    rule: String::new(),
                    reason: e.body(),
                });
            }
        }
        for (name, child_node) in &node.properties {
            if let (Some(child_props), Some(child_schema)) = (
                props.properties.as_ref().and_then(|p| p.get(name)),
                schema.properties.get(name),
            ) {
                let child_path = format!("{path}.properties[{name}]");
                self.check_defaults(
                    child_props,
                    child_schema,
                    Some(child_node),
                    &child_path,
                    problems,
                );
            }
        }
        let element_props = match (&props.items, &props.additional_properties) {
            (Some(JSONSchemaPropsOrArray::Schema(s)), _) => Some((s.as_ref(), "items")),
            (_, Some(JSONSchemaPropsOrBool::Schema(s))) => {
                Some((s.as_ref(), "additionalProperties"))
            }
            _ => None,
        };
        if let (Some((element_props, key)), Some(element_schema)) =
            (element_props, schema.element())
        {
            let child_path = format!("{path}.{key}");
            self.check_defaults(
                element_props,
                element_schema,
                node.element.as_deref(),
                &child_path,
                problems,
            );
        }
    }

    /// Checks the rules of one structural subtree of a schema that is not
    /// structural as a whole (see `Schema::partial`), at `path`. Costs are
    /// estimated as if the subtree ran once.
    fn check_subtree(subtree: &crate::schema::PartialSubtree) -> Vec<RuleProblem> {
        let mut cx = Compilation::default();
        compile_node(
            &subtree.schema,
            &subtree.path,
            subtree.uncorrelatable.as_deref(),
            Some(1.0),
            &mut cx,
        );
        cx.problems
    }

    /// Validates `object` (and `old` on UPDATE), returning every field error
    /// and the warnings of ratcheted errors.
    pub fn validate(&self, object: &Json, old: Option<&Json>) -> Outcome {
        let mut w = Walk::new();
        let mut path = String::new();
        w.node(
            &self.root,
            &self.schema,
            object,
            old,
            old.is_some(),
            &Unchanged::never(),
            &mut path,
        );
        Outcome {
            errors: w.errors,
            warnings: w.warnings,
        }
    }
}

/// The result of validating one object.
#[derive(Debug, Default)]
pub struct Outcome {
    pub errors: Vec<FieldError>,
    /// Ratcheted failures, as `<field>: <body>` texts.
    pub warnings: Vec<String>,
}

/// What compiling one schema collects: problems, and the estimated cost of
/// every expression for the schema-wide limit.
#[derive(Default)]
struct Compilation {
    problems: Vec<RuleProblem>,
    /// (path, rule, estimated cost) of every rule and messageExpression.
    costs: Vec<(String, String, f64)>,
}

const COST_HINT: &str = "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)";

impl Compilation {
    /// The API server's limit on the estimated cost of all rules of a schema.
    fn check_total(&mut self) {
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
fn compile_node(
    schema: &Schema,
    path: &str,
    uncorrelatable: Option<&str>,
    cardinality: Option<f64>,
    cx: &mut Compilation,
) -> Node {
    let mut node = Node::default();
    let runs = cardinality.unwrap_or_else(|| cel::max_cardinality(schema));
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
        let opts = cel::Options {
            old_self: true,
            optional_old_self,
        };
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
                let opts = cel::Options {
                    old_self: true,
                    optional_old_self: false,
                };
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
                        Some(p)
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
    node
}

struct Walk {
    errors: Vec<FieldError>,
    warnings: Vec<String>,
    budget: u64,
    /// A cost limit was reached: no further rules run anywhere.
    stopped: bool,
}

impl Walk {
    /// A walk of one object, with the object's whole cost budget.
    fn new() -> Self {
        Walk {
            errors: Vec::new(),
            warnings: Vec::new(),
            budget: cel::PER_OBJECT_COST_BUDGET,
            stopped: false,
        }
    }
}

fn push_child(path: &mut String, name: &str) -> usize {
    let len = path.len();
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(name);
    len
}

fn push_key(path: &mut String, key: &str) -> usize {
    let len = path.len();
    path.push('[');
    path.push_str(key);
    path.push(']');
    len
}

/// Whether a node's value is unchanged from the old object's, for
/// ratcheting (an unchanged value keeps passing a rule added later). Asked
/// only when a rule fails, so the deep comparison runs then, once per node,
/// rather than at every node of every update.
struct Unchanged<'j> {
    values: Option<(&'j Json, &'j Json)>,
    known: std::cell::Cell<Option<bool>>,
}

impl<'j> Unchanged<'j> {
    /// Never unchanged: creates, defaults, the root's apiVersion and kind.
    fn never() -> Unchanged<'static> {
        Unchanged {
            values: None,
            known: std::cell::Cell::new(Some(false)),
        }
    }

    fn new(new: &'j Json, old: Option<&'j Json>) -> Self {
        Unchanged {
            values: old.map(|old| (new, old)),
            known: std::cell::Cell::new(None),
        }
    }

    fn get(&self) -> bool {
        if let Some(known) = self.known.get() {
            return known;
        }
        let same = self.values.is_some_and(|(new, old)| new == old);
        self.known.set(Some(same));
        same
    }
}

impl Walk {
    /// Validates one node. `correlated` says whether `old` was found by
    /// correlation; an uncorrelatable node counts as unchanged when its
    /// nearest correlatable ancestor is (`ancestor`).
    #[allow(clippy::too_many_arguments)]
    fn node(
        &mut self,
        node: &Node,
        schema: &Schema,
        new: &Json,
        old: Option<&Json>,
        correlated: bool,
        ancestor: &Unchanged<'_>,
        path: &mut String,
    ) {
        if self.stopped || new.is_null() {
            return;
        }
        let old = old.filter(|o| !o.is_null());
        // Transition rules never ratchet (see `rules`).
        let own;
        let unchanged = if correlated {
            own = Unchanged::new(new, old);
            &own
        } else {
            ancestor
        };
        if !node.rules.is_empty() {
            self.rules(node, schema, new, old, unchanged, path);
            if self.stopped {
                return;
            }
        }
        match new {
            Json::Array(items) => {
                let (Some(el), Some(item_schema)) =
                    (node.element.as_deref(), schema.items.as_deref())
                else {
                    return;
                };
                let old_items = old.and_then(Json::as_array);
                for (i, item) in items.iter().enumerate() {
                    let old_item = match (schema.list_type, old_items) {
                        (ListType::Map, Some(olds)) => {
                            find_by_keys(item, olds, &schema.list_map_keys)
                        }
                        _ => None,
                    };
                    let len = push_key(path, &i.to_string());
                    self.node(
                        el,
                        item_schema,
                        item,
                        old_item,
                        old_item.is_some(),
                        unchanged,
                        path,
                    );
                    path.truncate(len);
                    if self.stopped {
                        return;
                    }
                }
            }
            Json::Object(obj) => {
                let old_obj = old.and_then(Json::as_object);
                if let (Some(el), Some(value_schema)) = (
                    node.element.as_deref(),
                    schema.additional_properties.as_deref(),
                ) {
                    for (k, v) in obj {
                        let old_v = old_obj.and_then(|o| o.get(k));
                        let len = push_key(path, k);
                        self.node(el, value_schema, v, old_v, old_v.is_some(), unchanged, path);
                        path.truncate(len);
                        if self.stopped {
                            return;
                        }
                    }
                }
                let never = Unchanged::never();
                for (name, child) in &node.properties {
                    let (Some(v), Some(child_schema)) = (obj.get(name), schema.property(name))
                    else {
                        continue;
                    };
                    let old_v = old_obj.and_then(|o| o.get(name));
                    // The root's apiVersion and kind never ratchet.
                    let typemeta = path.is_empty() && (name == "apiVersion" || name == "kind");
                    let len = push_child(path, name);
                    self.node(
                        child,
                        child_schema,
                        v,
                        old_v,
                        old_v.is_some() && !typemeta,
                        if typemeta { &never } else { unchanged },
                        path,
                    );
                    path.truncate(len);
                    if self.stopped {
                        return;
                    }
                }
            }
            _ => {}
        }
    }

    /// The object's cost budget is spent: one error, and no rule runs after it.
    fn out_of_budget(&mut self, path: &str, schema: &Schema) {
        self.error(
            ErrorType::Invalid,
            path,
            schema,
            "validation failed due to running out of cost budget, no further validation rules will be run".into(),
        );
        self.stopped = true;
    }

    fn error(&mut self, kind: ErrorType, path: &str, schema: &Schema, detail: String) {
        self.errors.push(FieldError {
            kind,
            field: path.to_owned(),
            value_type: schema.ty.openapi_name(),
            detail,
        });
    }

    fn rules(
        &mut self,
        node: &Node,
        schema: &Schema,
        new: &Json,
        old: Option<&Json>,
        unchanged: &Unchanged<'_>,
        path: &str,
    ) {
        if self.budget == 0 {
            return self.out_of_budget(path, schema);
        }
        for rule in &node.rules {
            // Past the request's deadline nothing more runs; the server
            // answers 504 (see `cel::interrupt`).
            if cel::interrupt::tick() {
                return;
            }
            let uses_old = rule.program.uses_old_self();
            let old_value = match (uses_old, rule.optional_old_self, old) {
                (true, false, None) => continue,
                (true, true, o) => Some(Value::Optional(
                    o.map(|o| std::rc::Rc::new(Value::from_json(o, schema))),
                )),
                (true, false, Some(o)) => Some(Value::from_json(o, schema)),
                (false, _, o) => o.map(|o| Value::from_json(o, schema)),
            };
            let limit = cel::PER_EXPRESSION_COST_LIMIT.min(self.budget);
            let this = Value::from_json(new, schema);
            let (result, cost) = rule.program.eval(this, old_value, limit);
            if cost > self.budget
                || (result
                    .as_ref()
                    .is_err_and(|e| e.kind == ErrorKind::CostLimit)
                    && self.budget < cel::PER_EXPRESSION_COST_LIMIT)
            {
                if let Some(m) = rule.metrics.get() {
                    m.observe(RuleResult::Error, cost);
                }
                return self.out_of_budget(path, schema);
            }
            self.budget -= cost;
            if let Some(m) = rule.metrics.get() {
                let observed = match &result {
                    Ok(Value::Bool(true)) => RuleResult::Passed,
                    Ok(Value::Bool(false)) => RuleResult::Failed,
                    _ => RuleResult::Error,
                };
                m.observe(observed, cost);
            }
            let passed = match result {
                Ok(Value::Bool(b)) => b,
                Ok(_) => {
                    self.error(
                        ErrorType::Invalid,
                        path,
                        schema,
                        format!("'no such overload': call arguments did not match a supported operator, function or macro signature for rule: {}", rule.error_string()),
                    );
                    continue;
                }
                Err(e) => {
                    let detail = match e.kind {
                        ErrorKind::NoSuchOverload => format!(
                            "'{e}': call arguments did not match a supported operator, function or macro signature for rule: {}",
                            rule.error_string()
                        ),
                        ErrorKind::CostLimit => format!(
                            "'{e}': no further validation rules will be run due to call cost exceeds limit for rule: {}",
                            rule.error_string()
                        ),
                        ErrorKind::Other => {
                            format!("{e} evaluating rule: {}", rule.error_string())
                        }
                    };
                    self.error(ErrorType::Invalid, path, schema, detail);
                    if e.kind == ErrorKind::CostLimit {
                        self.stopped = true;
                        return;
                    }
                    continue;
                }
            };
            if passed {
                continue;
            }
            let detail = self.message(rule, schema, new, old);
            let mut field = path.to_owned();
            if let Some(fp) = &rule.field_path {
                push_child(&mut field, fp);
            }
            let err = FieldError {
                kind: rule.kind,
                field,
                value_type: schema.ty.openapi_name(),
                detail,
            };
            if !uses_old && unchanged.get() {
                self.warnings.push(err.to_string());
            } else {
                self.errors.push(err);
            }
        }
    }

    /// The failure message: the messageExpression's result when it yields a
    /// usable string, else `message`, else `failed rule: <rule>`.
    fn message(&mut self, rule: &Rule, schema: &Schema, new: &Json, old: Option<&Json>) -> String {
        if let Some(expr) = &rule.message_expression {
            let this = Value::from_json(new, schema);
            let old_value = old.map(|o| Value::from_json(o, schema));
            let limit = cel::PER_EXPRESSION_COST_LIMIT.min(self.budget);
            let (result, cost) = expr.eval(this, old_value, limit);
            self.budget = self.budget.saturating_sub(cost);
            if let Ok(Value::Str(s)) = result {
                let t = s.trim();
                if !t.is_empty() && !t.contains('\n') && t.len() <= 5 * 1024 {
                    return t.to_owned();
                }
            }
        }
        match rule.message.as_deref().map(str::trim) {
            Some(m) if !m.is_empty() => m.to_owned(),
            _ => format!("failed rule: {}", rule.source.trim()),
        }
    }
}

/// The old element of a `list-type: map` list with the same key values.
fn find_by_keys<'o>(item: &Json, olds: &'o [Json], keys: &[String]) -> Option<&'o Json> {
    let item = item.as_object()?;
    let wanted: Vec<&Json> = keys.iter().map(|k| item.get(k)).collect::<Option<_>>()?;
    if wanted.iter().any(|v| v.is_object() || v.is_array()) {
        return None;
    }
    olds.iter().find(|o| {
        o.as_object().is_some_and(|o| {
            keys.iter()
                .zip(&wanted)
                .all(|(k, w)| o.get(k).is_some_and(|v| v == *w))
        })
    })
}

/// One served version of one CRD, with its rules compiled.
#[derive(Debug)]
pub struct CrdVersion {
    /// `metadata.name` of the CRD, e.g. `crontabs.stable.example.com`.
    pub crd_name: String,
    pub group: String,
    pub kind: String,
    pub version: String,
    /// The compiled schema and rules of this version.
    pub validator: Validator,
}

/// Answers one admission request for the CRD version of its kind (`None`:
/// a kind no loaded CRD serves, allowed): allowed, or denied with the API
/// server's `Invalid` status. Never panics; runtime errors of rules become
/// denials.
pub fn review(version: Option<&CrdVersion>, req: &AdmissionRequest) -> AdmissionResponse {
    let Some(version) = version else {
        return AdmissionResponse::allow(&req.uid);
    };
    let old = match req.operation {
        Operation::Create => None,
        Operation::Update => req.old_object.as_ref(),
        Operation::Delete | Operation::Connect => return AdmissionResponse::allow(&req.uid),
    };
    let Some(object) = req.object.as_ref() else {
        return AdmissionResponse::allow(&req.uid);
    };
    let outcome = version.validator.validate(object, old);
    let mut response = if outcome.errors.is_empty() {
        AdmissionResponse::allow(&req.uid)
    } else {
        let name = object
            .pointer("/metadata/name")
            .and_then(Json::as_str)
            .filter(|n| !n.is_empty())
            .unwrap_or(&req.name);
        AdmissionResponse::deny(
            &req.uid,
            invalid_status(&version.group, &version.kind, name, &outcome.errors),
        )
    };
    response.warnings = outcome.warnings;
    response
}

/// Creates the metric handles of every rule of `versions` and attaches them
/// to the rules, so the walk records without a lookup. Call before the
/// versions serve; rules already bound (to this or another registry) keep
/// their handles.
pub fn bind_metrics<'a>(versions: impl Iterator<Item = &'a CrdVersion>, metrics: &Metrics) {
    fn bind(node: &Node, crd: &str, version: &str, path: &mut String, metrics: &Metrics) {
        let shown = if path.is_empty() { "." } else { path.as_str() };
        for rule in &node.rules {
            let _already_bound = rule
                .metrics
                .set(metrics.rule(crd, version, shown, rule.index));
        }
        for (name, child) in &node.properties {
            let len = path.len();
            path.push('.');
            path.push_str(name);
            bind(child, crd, version, path, metrics);
            path.truncate(len);
        }
        if let Some(element) = node.element.as_deref() {
            let len = path.len();
            path.push_str("[*]");
            bind(element, crd, version, path, metrics);
            path.truncate(len);
        }
    }
    for version in versions {
        let mut path = String::new();
        bind(
            &version.validator.root,
            &version.crd_name,
            &version.version,
            &mut path,
            metrics,
        );
    }
}

#[cfg(test)]
mod tests;
