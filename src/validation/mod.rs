//! The validation walk: runs each schema node's compiled rules against the
//! object (and, on UPDATE, the correlated old object), collecting field
//! errors worded as the API server words them, and answers the review.

mod compile;
mod field_path;
mod reads;
mod walk;

use celhook_json::Value as Json;

use crate::cel::{self, Program};
use crate::kube_version::KubeVersion;
use crate::metrics::{Metrics, RuleObservation};
use crate::schema::Schema;
use compile::{compile_node, Compilation};
pub use reads::Plan;
use walk::{Unchanged, Walk};

pub use crate::field_error::{
    aggregate, invalid_status, qualified, BadValue, ErrorType, FieldError,
};

/// One compiled `x-kubernetes-validations` entry.
#[derive(Debug)]
pub struct Rule {
    /// The rule text as written.
    pub source: String,
    pub program: Program,
    pub message: Option<String>,
    pub message_expression: Option<MessageExpression>,
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

/// A rule's compiled `messageExpression`, with its text for the error that
/// names it when it reaches the per-call cost limit.
#[derive(Debug)]
pub struct MessageExpression {
    pub source: String,
    pub program: Program,
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
    /// What the rules and message expressions here read of the node's
    /// value, found statically from their texts.
    pub reads: SelfReads,
    /// A failed rule here shows the node's value in its error (from 1.35,
    /// a node with rules not typed `object`): the value is needed whole.
    pub shows_value: bool,
    /// What a decoder builds of the node's value on CREATE, by field
    /// ([`Node::field_read`]): what its rules select, and the properties
    /// with rules below, which the node's `properties` plan; empty when a
    /// rule here reads the value whole.
    plan: Plan,
    /// Every rule here is a transition rule without `optionalOldSelf`:
    /// none runs without an old object.
    waits_for_old: bool,
}

/// What a node's rules, and those below it, read of one field of its value.
pub enum FieldRead<'n> {
    /// The whole field: a rule uses its value (a chain of selections from
    /// `self` ends at it), or selects it and has rules below it too.
    Whole,
    /// As `Whole`, of a list of objects of scalar fields with no rules
    /// below it: a decoder may keep it by column (`celhook_json::Table`),
    /// which reads as the list it is.
    Rows,
    /// No rule here selects it; these below it read it.
    Below(&'n Node),
    /// The rules here select fields of it (`self.spec.replicas`) or test
    /// its presence, and use it no other way: of an object, what this
    /// plan names.
    Part(&'n Plan),
    /// Nothing.
    Nothing,
}

/// What a node's expressions read of `self`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SelfReads {
    /// Only these fields, by JSON key, sorted (`self.x`, `self.?x`,
    /// `has(self.x)`), each whole or in part.
    Fields(Vec<(String, Want)>),
    /// Possibly all of it: `self` whole, indexed, sized, passed on.
    Whole,
}

impl Default for SelfReads {
    fn default() -> Self {
        SelfReads::Fields(Vec::new())
    }
}

/// What expressions read of one field of a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Want {
    /// Its value, all of it.
    Whole,
    /// Of an object that its schema types by its properties alone, these
    /// of its fields (by JSON key, sorted) and its presence; only its
    /// presence when none.
    Part(Vec<(String, Want)>),
}

impl Node {
    fn is_empty(&self) -> bool {
        self.rules.is_empty() && self.properties.is_empty() && self.element.is_none()
    }

    /// True when the node's value is read whole by its own expressions or
    /// by an element's: only a value with no old one to compare (CREATE)
    /// may be built in part below such a node, and then only what
    /// [`Node::field_read`] names.
    pub fn reads_whole(&self) -> bool {
        self.needs_whole() || self.element.is_some()
    }

    /// True when the node's own expressions, or its errors, need all of it.
    fn needs_whole(&self) -> bool {
        self.reads == SelfReads::Whole || self.shows_value
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
    /// The whole `openAPIV3Schema` (types, formats, bounds, ...), for the
    /// callers that check it (`openapi`); compiled by `from_openapi`.
    pub schema_check: Option<crate::openapi::SchemaCheck>,
    /// The Kubernetes version whose texts failed rules answer with.
    pub kubernetes: KubeVersion,
}

impl Validator {
    /// Rules of the whole schema.
    pub fn rule_count(&self) -> usize {
        self.root.rule_count()
    }

    /// Compiles every rule of `schema`, reporting every problem (not just the first).
    pub fn compile(schema: Schema) -> Result<Validator, Vec<RuleProblem>> {
        Self::compile_with(schema, Compilation::default())
    }

    /// [`Validator::compile`] with the libraries of Kubernetes
    /// `1.<libraries>`, each rule's estimate checked per evaluation when
    /// `per_evaluation` (see [`Validator::compile_per_evaluation`]).
    pub fn compile_as(
        schema: Schema,
        libraries: cel::environment::Version,
        per_evaluation: bool,
    ) -> Result<Validator, Vec<RuleProblem>> {
        let mut cx = Compilation::default();
        cx.libraries = libraries;
        cx.api_server = libraries;
        cx.per_evaluation = per_evaluation;
        Self::compile_with(schema, cx)
    }

    /// [`Validator::compile`] for the schema of a built-in kind: the API
    /// server bounds the lists and strings of those in code, not in their
    /// OpenAPI schema, so the CRD estimate (each rule's cost times how many
    /// times an unbounded schema lets it run) would refuse nearly every
    /// rule. Each rule's estimate is checked as one evaluation (as a
    /// ValidatingAdmissionPolicy expression's is) against the same limits;
    /// the runtime budget per object is unchanged.
    pub fn compile_per_evaluation(schema: Schema) -> Result<Validator, Vec<RuleProblem>> {
        Self::compile_as(schema, cel::environment::LATEST, true)
    }

    fn compile_with(schema: Schema, mut cx: Compilation) -> Result<Validator, Vec<RuleProblem>> {
        let root = compile_node(&schema, "openAPIV3Schema", None, Some(1.0), &mut cx);
        cx.check_total();
        let problems = cx.problems;
        if problems.is_empty() {
            Ok(Validator {
                schema,
                root,
                schema_check: None,
                kubernetes: KubeVersion::default(),
            })
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
        Self::from_openapi_as(props, cel::environment::LATEST, KubeVersion::default())
    }

    /// [`Validator::from_openapi`] with the libraries of Kubernetes
    /// `1.<libraries>`, answering with the texts and schema checks of
    /// `kubernetes`.
    pub fn from_openapi_as(
        props: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps,
        libraries: cel::environment::Version,
        kubernetes: KubeVersion,
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
                // Written or stored, the rules are priced by the version's
                // own estimator.
                let mut cx = Compilation::default();
                cx.libraries = libraries;
                cx.api_server = kubernetes.stored();
                let validator = match (Self::compile_with(schema, cx), root_map) {
                    (Ok(v), None) => v.answering_as(kubernetes),
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
                let mut validator = validator;
                match crate::openapi::SchemaCheck::compile(props, kubernetes) {
                    Ok(check) => validator.schema_check = Some(check),
                    Err(e) => {
                        let (path, reason) = e.split_once(": ").unwrap_or(("openAPIV3Schema", &e));
                        problems.push(RuleProblem {
                            path: path.to_owned(),
                            rule: String::new(),
                            reason: reason.to_owned(),
                        });
                    }
                }
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
            let default = Json::from(&default.0);
            let mut w = Walk::new(self.kubernetes);
            let mut at = String::new();
            w.node(
                node,
                schema,
                &default,
                None,
                false,
                &Unchanged::never(),
                &mut at,
                &mut cel::Scratch::default(),
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

    /// Failed rules answer with the texts of `kubernetes`.
    pub fn answering_as(mut self, kubernetes: KubeVersion) -> Validator {
        self.kubernetes = kubernetes;
        self
    }

    /// Validates `object` (and `old` on UPDATE), returning every field error
    /// and the warnings of ratcheted errors.
    pub fn validate(&self, object: &Json, old: Option<&Json>) -> Findings<'_> {
        let w = self.walk(Walk::new(self.kubernetes), object, old);
        Findings {
            errors: w.errors,
            warnings: w.warnings,
            observed: w.observed,
        }
    }

    fn walk<'v: 'x, 'x>(
        &'v self,
        mut w: Walk<'v>,
        object: &'x Json,
        old: Option<&'x Json>,
    ) -> Walk<'v> {
        let mut path = String::new();
        w.node(
            &self.root,
            &self.schema,
            object,
            old,
            old.is_some(),
            &Unchanged::never(),
            &mut path,
            &mut cel::Scratch::default(),
        );
        w
    }

    /// [`Validator::validate`] with another object budget and per-call
    /// limit, as upstream's tests set them; also the budget left, `None`
    /// when a cost limit stopped the walk.
    #[cfg(test)]
    fn validate_within(
        &self,
        object: &Json,
        budget: u64,
        per_call: u64,
    ) -> (Vec<FieldError>, Option<u64>) {
        let mut w = Walk::new(self.kubernetes);
        w.budget = budget;
        w.per_call = per_call;
        let w = self.walk(w, object, None);
        (w.errors, (!w.stopped).then_some(w.budget))
    }
}

/// The result of validating one object.
#[derive(Debug, Default)]
pub struct Findings<'a> {
    pub errors: Vec<FieldError>,
    /// Ratcheted failures, as `<field>: <body>` texts.
    pub warnings: Vec<String>,
    /// The rules evaluated (those with metric handles), to be recorded
    /// once the answer stands.
    pub observed: Vec<RuleObservation<'a>>,
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

/// Creates the metric handles of every rule of `versions` and attaches them
/// to the rules, so the walk records without a lookup. Call before the
/// versions serve; rules already bound (to this or another registry) keep
/// their handles.
pub fn bind_metrics<'a>(versions: impl Iterator<Item = &'a CrdVersion>, metrics: &Metrics) {
    for version in versions {
        bind_tree_metrics(
            &version.validator.root,
            &version.crd_name,
            &version.version,
            metrics,
        );
    }
}

/// [`bind_metrics`] for one compiled tree, its rules labelled `crd`
/// (a CRD's name, or `ValidationRules/<name>` for a rules document) and
/// `version`.
pub fn bind_tree_metrics(root: &Node, crd: &str, version: &str, metrics: &Metrics) {
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
    let mut path = String::new();
    bind(root, crd, version, &mut path, metrics);
}

#[cfg(test)]
mod tests;
