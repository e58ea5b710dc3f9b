//! The walk over an object (and its correlated old object on UPDATE):
//! runs each node's compiled rules, follows list-map keys and map keys for
//! transition rules, ratchets unchanged values, and collects field errors.

use super::*;
use crate::cel::{self, ErrorKind, Value};
use crate::metrics::{RuleObservation, RuleResult};
use crate::schema::ListType;

pub(super) struct Walk<'a> {
    pub(super) errors: Vec<FieldError>,
    pub(super) warnings: Vec<String>,
    /// The rules evaluated, for their metrics (recorded by the caller).
    pub(super) observed: Vec<RuleObservation<'a>>,
    pub(super) budget: u64,
    /// The cost one evaluation may take.
    pub(super) per_call: u64,
    /// A cost limit was reached: no further rules run anywhere.
    pub(super) stopped: bool,
    kubernetes: KubeVersion,
}

impl Walk<'_> {
    /// A walk of one object, with the object's whole cost budget.
    pub(super) fn new(kubernetes: KubeVersion) -> Self {
        Walk {
            errors: Vec::new(),
            warnings: Vec::new(),
            observed: Vec::new(),
            budget: cel::PER_OBJECT_COST_BUDGET,
            per_call: cel::PER_EXPRESSION_COST_LIMIT,
            stopped: false,
            kubernetes,
        }
    }
}

/// Why a messageExpression stops the walk: the texts of the error the API
/// server then reports at the rule's field, in place of the failure.
enum MessageStop {
    OutOfBudget,
    CallLimit,
}

/// The value a failed rule shows: up to 1.34 the node's schema type; from
/// 1.35 the value of a scalar node, and none for an object or a list.
fn failed_value(kubernetes: KubeVersion, schema: &Schema, value: &Json) -> BadValue {
    let ty = schema.ty.openapi_name();
    if !kubernetes.failed_rules_show_values() {
        BadValue::Type(ty)
    } else if matches!(ty, "object" | "array") {
        BadValue::Omitted
    } else {
        BadValue::Shown(crate::openapi::render_for(value, kubernetes))
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
pub(super) struct Unchanged<'j> {
    values: Option<(&'j Json, &'j Json)>,
    known: std::cell::Cell<Option<bool>>,
}

impl<'j> Unchanged<'j> {
    /// Never unchanged: creates, defaults, the root's apiVersion and kind.
    pub(super) fn never() -> Unchanged<'static> {
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

impl<'a> Walk<'a> {
    /// Validates one node. `correlated` says whether `old` was found by
    /// correlation; an uncorrelatable node counts as unchanged when its
    /// nearest correlatable ancestor is (`ancestor`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn node<'x>(
        &mut self,
        node: &'a Node,
        schema: &'x Schema,
        new: &'x Json,
        old: Option<&'x Json>,
        correlated: bool,
        ancestor: &Unchanged<'_>,
        path: &mut String,
        scratch: &mut cel::Scratch<'x>,
    ) where
        'a: 'x,
    {
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
            self.rules(node, schema, new, old, unchanged, path, scratch);
            if self.stopped {
                return;
            }
        }
        match new {
            Json::Array(_) | Json::Table(_) => {
                let (Some(el), Some(item_schema)) =
                    (node.element.as_deref(), schema.items.as_deref())
                else {
                    return;
                };
                // A table's elements are built only for rules below it.
                let items = new.as_array().map_or(&[][..], |items| &items[..]);
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
                        scratch,
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
                        self.node(
                            el,
                            value_schema,
                            v,
                            old_v,
                            old_v.is_some(),
                            unchanged,
                            path,
                            scratch,
                        );
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
                        scratch,
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
            value: BadValue::Type(schema.ty.openapi_name()),
            detail,
        });
    }

    /// Runs the node's rules, `self` and `oldSelf` bound once for all of
    /// them (and their message expressions).
    #[allow(clippy::too_many_arguments)]
    fn rules<'x>(
        &mut self,
        node: &'a Node,
        schema: &'x Schema,
        new: &'x Json,
        old: Option<&'x Json>,
        unchanged: &Unchanged<'_>,
        path: &str,
        scratch: &mut cel::Scratch<'x>,
    ) where
        'a: 'x,
    {
        if self.budget == 0 {
            return self.out_of_budget(path, schema);
        }
        // Nothing runs, so nothing to bind.
        if old.is_none() && node.waits_for_old {
            return;
        }
        let this = Value::from_json(new, schema);
        let old_value = old.map(|o| Value::from_json(o, schema));
        let bound = &mut scratch.bind(this, old_value);
        // Room for the node's observations at once, rather than growing
        // through three or four sizes (4, 8, 16, 32) for a node of a dozen
        // or more rules.
        if node
            .rules
            .first()
            .is_some_and(|r| r.metrics.get().is_some())
        {
            self.observed.reserve(node.rules.len());
        }
        for rule in &node.rules {
            // Past the request's deadline nothing more runs; the server
            // answers 504 (see `cel::interrupt`).
            if cel::interrupt::tick() {
                return;
            }
            let uses_old = rule.program.uses_old_self();
            let limit = self.limit();
            // `oldSelf` is bound as the old value (null without one) but
            // for a transition rule that may see none.
            let (result, cost) = match (uses_old, rule.optional_old_self, old) {
                (true, false, None) => continue,
                (true, true, o) => bound.eval_with_old_self(
                    &rule.program,
                    Value::Optional(o.map(|o| std::rc::Rc::new(Value::from_json(o, schema)))),
                    limit,
                ),
                _ => bound.eval(&rule.program, limit),
            };
            if self.over_budget(&result, cost) {
                if let Some(m) = rule.metrics.get() {
                    self.observed.push(RuleObservation {
                        metrics: m,
                        result: RuleResult::Error,
                        cost,
                    });
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
                self.observed.push(RuleObservation {
                    metrics: m,
                    result: observed,
                    cost,
                });
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
            let mut field = path.to_owned();
            if let Some(fp) = &rule.field_path {
                push_child(&mut field, fp);
            }
            let err = match self.message(bound, rule) {
                Ok(detail) => FieldError {
                    kind: rule.kind,
                    field,
                    value: failed_value(self.kubernetes, schema, new),
                    detail,
                },
                // Reported in place of the failure (and ratcheted as it
                // would be); nothing runs after it.
                Err(stop) => FieldError {
                    kind: ErrorType::Invalid,
                    field,
                    value: BadValue::Type(schema.ty.openapi_name()),
                    detail: match stop {
                        MessageStop::OutOfBudget => "messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run".into(),
                        MessageStop::CallLimit => format!(
                            "no further validation rules will be run due to call cost exceeds limit for messageExpression: {}",
                            cel::go_quote(rule.message_expression.as_ref().map_or("", |m| &m.source))
                        ),
                    },
                },
            };
            if !uses_old && unchanged.get() {
                self.warnings.push(err.to_string());
            } else {
                self.errors.push(err);
            }
            if self.stopped {
                return;
            }
        }
    }

    /// The limit of one evaluation: the per-call limit, or what is left of
    /// the object's budget when that is less.
    fn limit(&self) -> u64 {
        self.per_call.min(self.budget)
    }

    /// Whether an evaluation spent more than the object's budget had left
    /// (rather than only its own per-call limit).
    fn over_budget(&self, result: &Result<Value<'_>, cel::EvalError>, cost: u64) -> bool {
        cost > self.budget
            || (result
                .as_ref()
                .is_err_and(|e| e.kind == ErrorKind::CostLimit)
                && self.budget < self.per_call)
    }

    /// The failure message: the messageExpression's result when it yields a
    /// usable string, else `message`, else `failed rule: <rule>`. A
    /// messageExpression that reaches a cost limit stops the walk instead,
    /// as the API server's does.
    fn message<'x>(
        &mut self,
        bound: &mut cel::Bound<'_, 'x>,
        rule: &'a Rule,
    ) -> Result<String, MessageStop>
    where
        'a: 'x,
    {
        if let Some(expr) = &rule.message_expression {
            let limit = self.limit();
            let (result, cost) = bound.eval(&expr.program, limit);
            if self.over_budget(&result, cost) {
                self.stopped = true;
                return Err(MessageStop::OutOfBudget);
            }
            if result
                .as_ref()
                .is_err_and(|e| e.kind == ErrorKind::CostLimit)
            {
                self.stopped = true;
                return Err(MessageStop::CallLimit);
            }
            self.budget -= cost;
            if let Ok(Value::Str(s)) = result {
                let t = s.trim();
                if !t.is_empty() && !t.contains('\n') && t.len() <= 5 * 1024 {
                    return Ok(t.to_owned());
                }
            }
        }
        Ok(match rule.message.as_deref().map(str::trim) {
            Some(m) if !m.is_empty() => m.to_owned(),
            _ => format!("failed rule: {}", rule.source.trim()),
        })
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
