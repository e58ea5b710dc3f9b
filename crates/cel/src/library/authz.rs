//! Kubernetes' authorizer library (1.27; `fieldSelector` and
//! `labelSelector` 1.31 behind a feature gate on by default from 1.32):
//! builders of an authorization question on the `authorizer` variable,
//! `check(verb)`, and the decision's accessors. The API server declares
//! the functions in every environment; only those with an `authorizer`
//! variable can reach them.

use std::rc::Rc;

use super::METHOD;
use crate::registry::{
    arg, arg_size, first, is_string, lib_arg, lib_value, overload, shape_size, sig, str_arg,
    unit_scalar, Function,
};
use crate::shape::Shape;
use crate::types::Ty;
use crate::value::error::EvalError;
use crate::value::k8s::authz::{
    Asker, Authorizer, AuthzValue, Decision, Resource, Subject, Target,
};
use crate::value::k8s::format::{is_dns_label_name, is_dns_subdomain_name};
use crate::value::k8s::LibValue;
use crate::value::{TypeName, Value};

fn is(t: &Ty<'_>, name: TypeName) -> bool {
    matches!(t, Ty::Lib(n) if *n == name)
}

fn is_authorizer(t: &Ty<'_>) -> bool {
    is(t, TypeName::Authorizer)
}

fn is_group_check(t: &Ty<'_>) -> bool {
    is(t, TypeName::GroupCheck)
}

fn is_resource_check(t: &Ty<'_>) -> bool {
    is(t, TypeName::ResourceCheck)
}

fn is_question(t: &Ty<'_>) -> bool {
    is(t, TypeName::PathCheck) || is_resource_check(t)
}

fn is_decision(t: &Ty<'_>) -> bool {
    is(t, TypeName::Decision)
}

/// The library value an argument holds, or the overload error.
fn authz_arg<'v>(v: &'v Value<'_>) -> Result<&'v AuthzValue, EvalError> {
    match lib_arg(v)? {
        LibValue::Authz(a) => Ok(a),
        _ => Err(overload()),
    }
}

fn authz(v: AuthzValue) -> Value<'static> {
    lib_value(LibValue::Authz(v))
}

fn asker<'v>(v: &'v Value<'_>) -> Result<&'v Asker, EvalError> {
    match authz_arg(v)? {
        AuthzValue::Authorizer(asker) => Ok(asker),
        _ => Err(overload()),
    }
}

/// A resource question with the text argument as its `field`.
fn refine(
    a: &[Value<'_>],
    field: fn(&mut Resource) -> &mut String,
) -> Result<Value<'static>, EvalError> {
    let AuthzValue::Resource(asker, Target::Resource(resource)) = authz_arg(first(a)?)? else {
        return Err(overload());
    };
    let mut resource = resource.clone();
    *field(&mut resource) = str_arg(arg(a, 1)?)?.to_owned();
    Ok(authz(AuthzValue::Resource(
        asker.clone(),
        Target::Resource(resource),
    )))
}

fn decision<'v>(v: &'v Value<'_>) -> Result<&'v Decision, EvalError> {
    match authz_arg(v)? {
        AuthzValue::Decision(d) => Ok(d),
        _ => Err(overload()),
    }
}

/// A builder or accessor: one member argument at most, charged 1.
const STEP: Function = Function::BASE.estimates(unit_scalar);

/// A question the authorizer starts from one text: `path` and `group`.
const FROM_AUTHORIZER: Function = STEP
    .member_arities(&[1])
    .accepts(|a| sig(a, &[is_authorizer, is_string]));

/// The authorizer a question starts from, and the text it starts with.
fn asker_and_text<'v>(a: &'v [Value<'_>]) -> Result<(&'v Asker, &'v str), EvalError> {
    Ok((asker(first(a)?)?, str_arg(arg(a, 1)?)?))
}

pub static PATH: Function = FROM_AUTHORIZER
    .named("path", 27, "authorizer_path")
    .returns(TypeName::PathCheck)
    .calls(|a| {
        let (asker, path) = asker_and_text(a)?;
        // Blank is empty, as upstream trims before it looks.
        if path.trim().is_empty() {
            return Err(EvalError::new("path must not be empty"));
        }
        Ok(authz(AuthzValue::Path(
            asker.clone(),
            Target::Path(path.to_owned()),
        )))
    });

pub static GROUP: Function = FROM_AUTHORIZER
    .named("group", 27, "authorizer_group")
    .returns(TypeName::GroupCheck)
    .calls(|a| {
        let (asker, group) = asker_and_text(a)?;
        Ok(authz(AuthzValue::Group(asker.clone(), group.to_owned())))
    });

pub static SERVICE_ACCOUNT: Function = STEP
    .named("serviceAccount", 27, "authorizer_serviceaccount")
    .member_arities(&[2])
    .returns(TypeName::Authorizer)
    .accepts(|a| sig(a, &[is_authorizer, is_string, is_string]))
    .calls(|a| {
        let asker = asker(first(a)?)?;
        let namespace = str_arg(arg(a, 1)?)?;
        let name = str_arg(arg(a, 2)?)?;
        // The name is checked first, as upstream does.
        if !is_dns_subdomain_name(name) {
            return Err(EvalError::new("Invalid service account name"));
        }
        if !is_dns_label_name(namespace) {
            return Err(EvalError::new("Invalid service account namespace"));
        }
        Ok(authz(AuthzValue::Authorizer(Asker {
            authorizer: asker.authorizer.clone(),
            user: Some(Rc::new(Subject::service_account(namespace, name))),
        })))
    });

pub static RESOURCE: Function = STEP
    .named("resource", 27, "groupcheck_resource")
    .member_arities(&[1])
    .returns(TypeName::ResourceCheck)
    .accepts(|a| sig(a, &[is_group_check, is_string]))
    .calls(|a| {
        let AuthzValue::Group(asker, group) = authz_arg(first(a)?)? else {
            return Err(overload());
        };
        let resource = str_arg(arg(a, 1)?)?;
        if resource.trim().is_empty() {
            return Err(EvalError::new("resource must not be empty"));
        }
        Ok(authz(AuthzValue::Resource(
            asker.clone(),
            Target::Resource(Resource {
                group: group.clone(),
                resource: resource.to_owned(),
                ..Resource::default()
            }),
        )))
    });

/// A refinement of a resource question by one text.
const REFINEMENT: Function = STEP
    .member_arities(&[1])
    .returns(TypeName::ResourceCheck)
    .accepts(|a| sig(a, &[is_resource_check, is_string]));

pub static SUBRESOURCE: Function = REFINEMENT
    .named("subresource", 27, "resourcecheck_subresource")
    .calls(|a| refine(a, |r| &mut r.subresource));

pub static NAMESPACE: Function = REFINEMENT
    .named("namespace", 27, "resourcecheck_namespace")
    .calls(|a| refine(a, |r| &mut r.namespace));

pub static NAME: Function = REFINEMENT
    .named("name", 27, "resourcecheck_name")
    .calls(|a| refine(a, |r| &mut r.name));

/// What parsing a selector of `len` characters costs: a list's creation,
/// a tenth of the text, and a list element and a struct for each
/// requirement, counted as one per two characters.
fn selector_cost(len: f64) -> f64 {
    const BASE: f64 = 10.0;
    const PER_REQUIREMENT: f64 = 10.0 + 40.0;
    BASE + (len * 0.1).ceil() + ((len * 0.5).ceil() * PER_REQUIREMENT).ceil()
}

/// The selectors: parsed by whoever answers the question, priced here.
const SELECTOR: Function = REFINEMENT
    .gated_until(32)
    .costs(|a, _| selector_cost(arg_size(a, 1) as f64) as u64)
    .estimates(|s| (selector_cost(shape_size(s, 1)), Shape::sized(1.0)));

// Kept apart from the refinements above, which these rows mirror line for
// line: each is its own CEL function setting its own field, and what the
// selectors do differently (gate, minor, price) is in `SELECTOR` already.
pub static FIELD_SELECTOR: Function = SELECTOR
    .named("fieldSelector", 31, "authorizer_fieldselector")
    .calls(|a| refine(a, |r| &mut r.field_selector));

pub static LABEL_SELECTOR: Function = SELECTOR
    .named("labelSelector", 31, "authorizer_labelselector")
    .calls(|a| refine(a, |r| &mut r.label_selector));

/// cel-go's fixed price of one authorization check, which leaves room for
/// two in an expression's budget.
const CHECK_COST: u64 = 350_000;

pub static CHECK: Function = Function::BASE
    .named("check", 27, "pathcheck_check resourcecheck_check")
    .member_arities(&[1])
    .returns(TypeName::Decision)
    .accepts(|a| sig(a, &[is_question, is_string]))
    .costs(|_, _| CHECK_COST)
    .estimates(|_| (CHECK_COST as f64, Shape::sized(1.0)))
    .calls(|a| {
        let verb = str_arg(arg(a, 1)?)?;
        let answer = authz_arg(first(a)?)?.check(verb).ok_or_else(overload)?;
        Ok(authz(AuthzValue::Decision(answer)))
    });

/// An accessor of a decision.
const ACCESSOR: Function = METHOD.accepts(|a| sig(a, &[is_decision]));

pub static ALLOWED: Function = ACCESSOR
    .named("allowed", 27, "decision_allowed")
    .returns(TypeName::Bool)
    .calls(|a| Ok(Value::Bool(decision(first(a)?)?.allowed)));

pub static REASON: Function = ACCESSOR
    .named("reason", 27, "decision_reason")
    .returns(TypeName::String)
    .calls(|a| Ok(Value::string(decision(first(a)?)?.reason.clone())));

pub static ERRORED: Function = ACCESSOR
    .named("errored", 27, "decision_errored")
    .returns(TypeName::Bool)
    .calls(|a| Ok(Value::Bool(decision(first(a)?)?.error.is_some())));

pub static ERROR: Function = ACCESSOR
    .named("error", 27, "decision_error")
    .returns(TypeName::String)
    .calls(|a| {
        let error = decision(first(a)?)?.error.clone();
        Ok(Value::string(error.unwrap_or_default()))
    });

/// The value of the `authorizer` variable: questions go to `authorizer`
/// for `user` (none in upstream's library tests).
pub fn authorizer_value(authorizer: Rc<dyn Authorizer>, user: Option<Subject>) -> Value<'static> {
    authz(AuthzValue::Authorizer(Asker {
        authorizer,
        user: user.map(Rc::new),
    }))
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::rc::Rc;

    use super::{authorizer_value, selector_cost};
    use crate::value::k8s::authz::{Attributes, Authorizer, Decision, Subject, Target};
    use crate::{Environment, Program};

    /// Answers from a list of allowed verbs, and keeps every question.
    #[derive(Debug, Default)]
    struct Recorder {
        allow: &'static [&'static str],
        error: Option<&'static str>,
        asked: RefCell<Vec<(Option<Subject>, String, Target)>>,
    }

    impl Authorizer for Recorder {
        fn authorize(&self, q: &Attributes<'_>) -> Decision {
            self.asked
                .borrow_mut()
                .push((q.user.cloned(), q.verb.to_owned(), q.target.clone()));
            let allowed = self.allow.contains(&q.verb);
            Decision {
                allowed,
                reason: if allowed {
                    "by rule".into()
                } else {
                    String::new()
                },
                error: self.error.map(str::to_owned),
            }
        }
    }

    fn env(minor: u32) -> Environment {
        Environment {
            variables: &["authorizer"],
            ..Environment::match_condition()
        }
        .at(minor)
    }

    /// Asks `question` each accessor in turn and expects its answer.
    fn answers(question: &str, recorder: &Rc<Recorder>, expected: &[(&str, &str)]) {
        for (accessor, answer) in expected {
            let source = format!("{question}.{accessor}");
            assert_eq!(run(&source, recorder), Ok((*answer).into()), "{source}");
        }
    }

    fn run(source: &str, recorder: &Rc<Recorder>) -> Result<String, String> {
        let program = Program::compile_typed(source, env(37), None, &[])
            .map_err(|e| format!("compile: {}", e.message))?;
        let user = Subject {
            name: "alice".into(),
            ..Subject::default()
        };
        let authorizer = authorizer_value(recorder.clone(), Some(user));
        let (result, _) = program.eval_variables([authorizer], crate::PER_EXPRESSION_COST_LIMIT);
        match result {
            Ok(v) => Ok(crate::to_json(&v).to_string()),
            Err(e) => Err(e.message.to_string()),
        }
    }

    #[test]
    fn a_resource_question_reaches_the_authorizer_as_built() {
        let recorder = Rc::new(Recorder {
            allow: &["create"],
            ..Recorder::default()
        });
        let built = "authorizer.group('apps').resource('deployments').subresource('scale')\
                     .namespace('shop').name('web')";
        answers(
            built,
            &recorder,
            &[
                ("check('create').allowed()", "true"),
                ("check('create').reason()", "\"by rule\""),
                ("check('delete').allowed()", "false"),
            ],
        );
        let asked = recorder.asked.borrow();
        assert_eq!(asked.len(), 3);
        let (user, verb, target) = &asked[2];
        assert_eq!(user.as_ref().map(|u| u.name.as_str()), Some("alice"));
        assert_eq!(verb, "delete");
        let Target::Resource(r) = target else {
            panic!("a resource question, got {target:?}");
        };
        assert_eq!(
            (
                r.group.as_str(),
                r.resource.as_str(),
                r.subresource.as_str()
            ),
            ("apps", "deployments", "scale")
        );
        assert_eq!((r.namespace.as_str(), r.name.as_str()), ("shop", "web"));
    }

    #[test]
    fn paths_service_accounts_and_errors() {
        let recorder = Rc::new(Recorder {
            allow: &["get"],
            error: Some("webhook unreachable"),
            ..Recorder::default()
        });
        let check =
            "authorizer.serviceAccount('kube-system', 'builder').path('/healthz').check('get')";
        answers(
            check,
            &recorder,
            &[
                ("errored()", "true"),
                ("error()", "\"webhook unreachable\""),
            ],
        );
        let asked = recorder.asked.borrow();
        let (user, _, target) = &asked[0];
        let user = user.as_ref().expect("the service account");
        assert_eq!(user.name, "system:serviceaccount:kube-system:builder");
        assert_eq!(
            user.groups,
            [
                "system:serviceaccounts",
                "system:serviceaccounts:kube-system"
            ]
        );
        assert_eq!(target, &Target::Path("/healthz".into()));
        drop(asked);
        for (source, error) in [
            ("authorizer.path('').check('get')", "path must not be empty"),
            (
                "authorizer.path(' \\t').check('get')",
                "path must not be empty",
            ),
            (
                "authorizer.group('').resource(' ').check('get')",
                "resource must not be empty",
            ),
            (
                "authorizer.group('').resource('').check('get')",
                "resource must not be empty",
            ),
            (
                "authorizer.serviceAccount('ns', 'Bad_Name')",
                "Invalid service account name",
            ),
            (
                "authorizer.serviceAccount('a.b', 'ok')",
                "Invalid service account namespace",
            ),
        ] {
            assert_eq!(run(source, &recorder), Err(error.into()), "{source}");
        }
    }

    #[test]
    fn selectors_arrive_with_their_feature_gate() {
        let source =
            "authorizer.group('').resource('pods').fieldSelector('spec.nodeName=a').check('list')";
        assert!(Program::compile_typed(source, env(31), None, &[]).is_err());
        let gated = Environment {
            gated_features: true,
            ..env(31)
        };
        assert!(Program::compile_typed(source, gated, None, &[]).is_ok());
        // The gate follows the server's own minor: a 1.32 API server,
        // whose new expressions get 1.31's libraries, has the selectors on.
        assert!(Program::compile_typed(source, env(31).run_by(32), None, &[]).is_ok());
        let recorder = Rc::new(Recorder::default());
        assert_eq!(
            run(&format!("{source}.allowed()"), &recorder),
            Ok("false".into())
        );
        let asked = recorder.asked.borrow();
        let Target::Resource(r) = &asked[0].2 else {
            panic!("a resource question");
        };
        assert_eq!(r.field_selector, "spec.nodeName=a");
    }

    #[test]
    fn the_functions_exist_without_the_variable() {
        // As in the API server's base environment: a CRD rule finds the
        // functions but no overload for its values.
        let schema = celhook_schema::Schema::untyped(false);
        for (source, refusal) in [
            ("'x'.check('get')", "found no matching overload for 'check'"),
            (
                "authorizer.path('/')",
                "undeclared reference to 'authorizer'",
            ),
        ] {
            let err =
                Program::compile(source, &schema, Environment::crd_rule(false)).expect_err(source);
            assert!(err.message.contains(refusal), "{}", err.message);
        }
    }

    #[test]
    fn decisions_cannot_be_compared() {
        let recorder = Rc::new(Recorder::default());
        let source = "authorizer.path('/a').check('get') == authorizer.path('/a').check('get')";
        assert_eq!(run(source, &recorder), Err("no such overload".into()));
    }

    #[test]
    fn selectors_cost_as_upstream_prices_a_71_character_one() {
        // 10 + ceil(71 / 2) * 50 + ceil(71 / 10), upstream's worked figure.
        assert_eq!(selector_cost(71.0), 1818.0);
    }
}
