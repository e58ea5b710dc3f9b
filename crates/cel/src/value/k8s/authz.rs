//! The values of Kubernetes' authorizer library (k8s.io/apiserver
//! `pkg/cel/library/authz.go`): an expression builds a question
//! (`authorizer.group('apps').resource('deployments').namespace('x')`),
//! asks it with a verb (`.check('create')`) and reads the decision
//! (`.allowed()`, `.reason()`, `.errored()`, `.error()`). Who answers is
//! the embedder's [`Authorizer`]: the API server asks its own authorizer,
//! a webhook would send a SubjectAccessReview.

use std::fmt;
use std::rc::Rc;

/// Whom a question is asked for: the request's user, or the service
/// account `authorizer.serviceAccount(namespace, name)` names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Subject {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
}

impl Subject {
    /// A service account's user, as the API server names it and the
    /// groups it gives every service account of the namespace.
    pub fn service_account(namespace: &str, name: &str) -> Subject {
        Subject {
            name: format!("system:serviceaccount:{namespace}:{name}"),
            uid: String::new(),
            groups: vec![
                "system:serviceaccounts".to_owned(),
                format!("system:serviceaccounts:{namespace}"),
            ],
        }
    }
}

/// The resource a resource question is about (any API version: the
/// library asks with version `*`). Selectors stay as written; parsing
/// them is the authorizer's part, as it is in a SubjectAccessReview.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resource {
    pub group: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
    pub field_selector: String,
    pub label_selector: String,
}

/// What a question is about: a non-resource path or a resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Path(String),
    Resource(Resource),
}

/// One authorization question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attributes<'q> {
    /// `None` when the embedder gave no user (upstream's library tests).
    pub user: Option<&'q Subject>,
    pub verb: &'q str,
    pub target: &'q Target,
}

/// An authorizer's answer: allowed or not (denied and "no opinion" read
/// the same to an expression), why, and whether it failed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    pub reason: String,
    pub error: Option<String>,
}

/// Answers authorization questions for the `authorizer` variable.
pub trait Authorizer: fmt::Debug {
    fn authorize(&self, question: &Attributes<'_>) -> Decision;
}

/// The authorizer and the user a question is asked for.
#[derive(Debug, Clone)]
pub struct Asker {
    pub authorizer: Rc<dyn Authorizer>,
    pub user: Option<Rc<Subject>>,
}

/// A value of the library: the authorizer, a question being built, or a
/// decision.
#[derive(Debug, Clone)]
pub enum AuthzValue {
    Authorizer(Asker),
    /// `authorizer.path(p)`.
    Path(Asker, Target),
    /// `authorizer.group(g)`, before `.resource(r)`.
    Group(Asker, String),
    /// `….resource(r)` and its refinements.
    Resource(Asker, Target),
    Decision(Decision),
}

impl AuthzValue {
    /// Asks the question with `verb` (`check`); `None` for a value that
    /// is not a path or resource question.
    pub fn check(&self, verb: &str) -> Option<Decision> {
        let (AuthzValue::Path(asker, target) | AuthzValue::Resource(asker, target)) = self else {
            return None;
        };
        Some(asker.authorizer.authorize(&Attributes {
            user: asker.user.as_deref(),
            verb,
            target,
        }))
    }
}
