//! Environments as data: what an expression may refer to (its variables
//! and their types), which functions it may call (the registry filtered by
//! the Kubernetes version it answers as), and the macros. The API
//! server's environments for CRD rules, messageExpressions and conversion
//! expressions are values of [`Environment`]; the checker reads nothing
//! else, so a new kind of expression is a new value, not a new checker.

use crate::library::ALL;
use crate::registry::{Func, Since};

/// The Kubernetes version an environment answers as (`1.<minor>`).
pub type Version = Since;

/// The libraries an expression may use, and the API server that prices and
/// runs it: the same minor for a stored expression, one minor apart for
/// one being written (compiled against the compatibility version).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Versions {
    pub libraries: Version,
    pub api_server: Version,
}

/// The newest Kubernetes minor whose libraries this build carries.
pub const LATEST: Version = 37;

/// The API server's per-expression runtime cost limit.
pub const PER_EXPRESSION_COST_LIMIT: u64 = 1_000_000;

/// What an expression may refer to and call. `self` is declared, typed by
/// the schema node the expression is compiled for, unless the environment
/// lists `variables` of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Environment {
    /// Named variables of dynamic type, in the order their values are
    /// given to `Program::eval_variables`; when there are any, `self` and
    /// `oldSelf` are not declared (admission expressions such as a
    /// webhook's matchConditions see `object`, `oldObject` and `request`).
    pub variables: &'static [&'static str],
    /// Of `variables`, those this environment leaves undeclared (a
    /// policy without paramKind has no `params`); they keep their slots so
    /// that every expression of a policy takes the same values.
    pub hidden: &'static [&'static str],
    /// `oldSelf` is declared (a rule that uses it is a transition rule).
    pub old_self: bool,
    /// `oldSelf` is an optional value (`optionalOldSelf: true`).
    pub optional_old_self: bool,
    /// Functions first available in a later Kubernetes minor are
    /// undeclared.
    pub version: Version,
    /// The API server's own minor, also for an expression written against
    /// its compatibility version (one minor behind): its cost estimator
    /// prices the expression, and its cel-go charges it.
    pub api_server: Version,
    /// cel-go's homogeneous aggregate literals (`[1, 2u]` refused), which
    /// every Kubernetes environment sets.
    pub homogeneous_literals: bool,
    /// The size the size estimator gives a string or bytes value whose path
    /// it is asked about and no schema reaches (an element of a literal, a
    /// loop variable over one): none in the API server (the rule's node
    /// decides); 12 in upstream's library cost tests, which the exact-cost
    /// ports run as written ([`Environment::as_in_library_tests`]).
    pub unknown_text_size: Option<u32>,
    /// MutatingAdmissionPolicy's libraries (JSONPatch): in none of
    /// celhook's environments; upstream's library cost tests have them.
    pub mutating: bool,
    /// Libraries behind feature gates that are off by default in the
    /// version (upstream's library tests enable them all).
    pub gated_features: bool,
    /// celhook's additions to what Kubernetes enables (today `cel.bind`).
    pub extensions: bool,
}

/// The variables of [`Environment::admission_policy`], in the order
/// their values are given.
pub const POLICY_VARIABLES: [&str; 6] = [
    "object",
    "oldObject",
    "request",
    "params",
    "namespaceObject",
    "authorizer",
];

/// The macros: the call the parser expands each into, its iteration
/// variables, and the Kubernetes minor it arrives in (`None`: never in
/// Kubernetes, a celhook extension). `has()` is always there.
const MACROS: &[(&str, usize, Option<Version>)] = &[
    ("@all", 1, Some(23)),
    ("@exists", 1, Some(23)),
    ("@exists_one", 1, Some(23)),
    ("@map", 1, Some(23)),
    ("@filter", 1, Some(23)),
    // The optional library.
    ("@optMap", 1, Some(28)),
    ("@optFlatMap", 1, Some(29)),
    // Two-variable comprehensions.
    ("@all", 2, Some(32)),
    ("@exists", 2, Some(32)),
    ("@exists_one", 2, Some(32)),
    ("@transformList", 2, Some(32)),
    ("@transformMap", 2, Some(32)),
    ("@transformMapEntry", 2, Some(32)),
    // cel-go's lists extension, version 3.
    ("@sortBy", 1, Some(34)),
    // Kubernetes never enables cel-go's bindings for CRD rules; celhook
    // has accepted `cel.bind` (the version issue decides its default).
    ("@bind", 1, None),
];

impl Environment {
    /// An `x-kubernetes-validations` rule: `self` and `oldSelf`.
    pub const fn crd_rule(optional_old_self: bool) -> Environment {
        Environment {
            variables: &[],
            hidden: &[],
            old_self: true,
            optional_old_self,
            version: LATEST,
            api_server: LATEST,
            homogeneous_literals: true,
            unknown_text_size: None,
            mutating: false,
            gated_features: false,
            extensions: true,
        }
    }

    /// A rule's `messageExpression`: `self` and `oldSelf`, never optional.
    pub const fn message_expression() -> Environment {
        Environment::crd_rule(false)
    }

    /// A conversion expression, or any expression over `self` alone
    /// (`celhook eval --expr`).
    pub const fn conversion() -> Environment {
        Environment {
            old_self: false,
            ..Environment::crd_rule(false)
        }
    }

    /// A webhook's `matchConditions` expression: `object`, `oldObject` and
    /// `request` (JSON null when absent), the Kubernetes libraries, no
    /// celhook extensions.
    pub const fn match_condition() -> Environment {
        Environment {
            variables: &["object", "oldObject", "request"],
            old_self: false,
            extensions: false,
            ..Environment::crd_rule(false)
        }
    }

    /// A ValidatingAdmissionPolicy's expressions: `object`, `oldObject`,
    /// `request`, `params`, `namespaceObject` and `authorizer` (declared
    /// so that a policy using it is refused by name, see
    /// `Program::reads_variable`); its `variables` come with
    /// `Program::compile_composited`.
    pub const fn admission_policy() -> Environment {
        Environment {
            variables: &POLICY_VARIABLES,
            ..Environment::match_condition()
        }
    }

    /// The same environment with `hidden` of its variables undeclared.
    pub const fn without(self, hidden: &'static [&'static str]) -> Environment {
        Environment { hidden, ..self }
    }

    /// The same environment answering as Kubernetes `1.<version>`.
    pub const fn at(self, version: Version) -> Environment {
        Environment {
            version,
            api_server: version,
            ..self
        }
    }

    /// The same environment as upstream's library cost tests build it:
    /// one variable, `authorizer`, in place of `self`; mixed literals
    /// allowed, strings and bytes of unknown size sized 12, the JSONPatch
    /// library and the gated authorizer selectors.
    /// No API server environment is so; only the exact-cost ports use it.
    pub const fn as_in_library_tests(self) -> Environment {
        Environment {
            variables: &["authorizer"],
            homogeneous_literals: false,
            unknown_text_size: Some(12),
            mutating: true,
            gated_features: true,
            ..self
        }
    }

    /// The same environment at `versions`.
    pub const fn at_versions(self, versions: Versions) -> Environment {
        Environment {
            version: versions.libraries,
            api_server: versions.api_server,
            ..self
        }
    }

    /// The same environment run by API server `1.<version>`.
    pub const fn run_by(self, version: Version) -> Environment {
        Environment {
            api_server: version,
            ..self
        }
    }

    /// The function `name` called as a member (`x.f(..)`) or globally,
    /// with `arity` arguments (the target not counted), if this
    /// environment has it.
    pub(crate) fn lookup(&self, name: &str, member: bool, arity: usize) -> Option<Func> {
        self.function(name).filter(|f| f.takes(member, arity))
    }

    /// True when the macro the parser expanded into `expanded` (`@all`,
    /// ...) with `vars` iteration variables is enabled here.
    pub(crate) fn has_macro(&self, expanded: &str, vars: usize) -> bool {
        MACROS.iter().any(|(name, n, since)| {
            *name == expanded && *n == vars && since.map_or(self.extensions, |v| v <= self.version)
        })
    }

    /// True when this environment has some overload of `name`.
    pub(crate) fn declares(&self, name: &str) -> bool {
        self.function(name).is_some()
    }

    fn function(&self, name: &str) -> Option<Func> {
        // A function exists in a version when one of its overloads does.
        ALL.iter()
            .find(|f| {
                f.name == name
                    && (self.mutating || !f.mutating)
                    && (self.gated_features || f.gated_until <= self.api_server)
                    && f.overload_ids().any(|(_, v)| v <= self.version)
            })
            .map(|f| f.as_run_by(self.api_server))
    }
}

impl Default for Environment {
    /// The conversion environment: `self` alone.
    fn default() -> Environment {
        Environment::conversion()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn functions_arrive_with_their_kubernetes_version() {
        let env = Environment::crd_rule(false);
        assert!(env.lookup("quantity", false, 1).is_some());
        assert!(env.at(27).lookup("quantity", false, 1).is_none());
        assert!(!env.at(27).declares("quantity"));
        assert!(env.at(33).lookup("lists.range", false, 1).is_none());
        assert!(env.at(34).lookup("lists.range", false, 1).is_some());
        assert!(
            env.lookup("size", true, 1).is_none(),
            "size takes no argument as a member"
        );
    }

    #[test]
    fn mutating_policy_functions_are_only_where_asked_for() {
        let crd = Environment::crd_rule(false);
        assert!(!crd.declares("jsonpatch.escapeKey"));
        let library_tests = crd.as_in_library_tests();
        assert!(library_tests.declares("jsonpatch.escapeKey"));
        assert!(!library_tests.at(31).declares("jsonpatch.escapeKey"));
    }

    #[test]
    fn macros_arrive_with_their_kubernetes_version() {
        let env = Environment::crd_rule(false);
        assert!(env.has_macro("@all", 1) && env.at(23).has_macro("@all", 1));
        assert!(env.has_macro("@all", 2) && !env.at(31).has_macro("@all", 2));
        assert!(!env.at(31).has_macro("@transformList", 2));
        assert!(env.at(28).has_macro("@optMap", 1) && !env.at(28).has_macro("@optFlatMap", 1));
        assert!(!env.at(33).has_macro("@sortBy", 1));
        let kubernetes_only = Environment {
            extensions: false,
            ..env
        };
        assert!(env.has_macro("@bind", 1) && !kubernetes_only.has_macro("@bind", 1));
    }
}
