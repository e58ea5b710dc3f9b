//! Break-glass exemptions of a rules document: requests by listed users,
//! groups or service accounts, in listed namespaces, or on objects whose
//! labels match a selector are not checked by that document.

use celhook_json::Value as Json;

use crate::selector::Selector;
/// The written selector; its home is [`crate::selector`].
pub use crate::selector::{LabelSelector, Requirement};

/// Who and what a document does not apply to.
#[derive(Debug, Clone, Default)]
pub struct Exemptions {
    users: Vec<String>,
    groups: Vec<String>,
    /// (namespace, name); name `*` is every account of the namespace.
    service_accounts: Vec<(String, String)>,
    namespaces: Vec<String>,
    selector: Option<Selector>,
}

/// The request's facts the exemptions read.
pub struct Requester<'a> {
    pub user: &'a str,
    pub groups: &'a [String],
    pub namespace: Option<&'a str>,
    pub object: Option<&'a Json>,
    /// The request as matchConditions see it (`request`), when a
    /// document of the kind has matchConditions.
    pub request: Option<&'a Json>,
}

impl Exemptions {
    /// Checks the written lists; problems as (document path, reason).
    pub fn new(
        users: Vec<String>,
        groups: Vec<String>,
        service_accounts: &[String],
        namespaces: Vec<String>,
        selector: Option<LabelSelector>,
    ) -> Result<Exemptions, Vec<(String, String)>> {
        let mut problems = Vec::new();
        let mut accounts = Vec::new();
        for (i, sa) in service_accounts.iter().enumerate() {
            match sa.split_once('/') {
                Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
                    accounts.push((ns.to_owned(), name.to_owned()));
                }
                _ => problems.push((
                    format!("spec.exempt.serviceAccounts[{i}]"),
                    format!("Invalid value: {sa:?}: must be NAMESPACE/NAME or NAMESPACE/*"),
                )),
            }
        }
        let selector = selector.and_then(|s| match Selector::compile(&s) {
            Ok(s) => Some(s),
            Err(found) => {
                problems.extend(
                    found
                        .into_iter()
                        .map(|(p, r)| (format!("spec.exempt.objectSelector.{p}"), r)),
                );
                None
            }
        });
        if !problems.is_empty() {
            return Err(problems);
        }
        Ok(Exemptions {
            users,
            groups,
            service_accounts: accounts,
            namespaces,
            selector,
        })
    }

    /// The exempt users.
    pub fn users(&self) -> &[String] {
        &self.users
    }

    /// The exempt groups.
    pub fn groups(&self) -> &[String] {
        &self.groups
    }

    /// The exempt service accounts as (namespace, name or `*`).
    pub fn service_accounts(&self) -> &[(String, String)] {
        &self.service_accounts
    }

    /// The exempt namespaces.
    pub fn namespaces(&self) -> &[String] {
        &self.namespaces
    }

    /// True when nothing is exempt (the request path skips the checks).
    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
            && self.groups.is_empty()
            && self.service_accounts.is_empty()
            && self.namespaces.is_empty()
            && self.selector.is_none()
    }

    /// True when the request is exempt from the document.
    /// True when deciding reads the object (its labels).
    pub fn reads_object(&self) -> bool {
        self.selector.is_some()
    }

    pub fn exempts(&self, r: &Requester<'_>) -> bool {
        if self.is_empty() {
            return false;
        }
        if self.users.iter().any(|u| u == r.user) {
            return true;
        }
        if r.groups.iter().any(|g| self.groups.contains(g)) {
            return true;
        }
        if let Some((ns, name)) = r
            .user
            .strip_prefix("system:serviceaccount:")
            .and_then(|rest| rest.split_once(':'))
        {
            if self
                .service_accounts
                .iter()
                .any(|(n, a)| n == ns && (a == "*" || a == name))
            {
                return true;
            }
        }
        if let Some(ns) = r.namespace {
            if self.namespaces.iter().any(|n| n == ns) {
                return true;
            }
        }
        match (&self.selector, r.object) {
            (Some(selector), Some(object)) => selector.matches(object.pointer("/metadata/labels")),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use celhook_json::json;

    fn exemptions() -> Exemptions {
        let selector: LabelSelector = celhook_json::from_value(json!({
            "matchLabels": {"celhook.dev/exempt": "true"},
            "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["prod"]}]
        }))
        .expect("selector");
        Exemptions::new(
            vec!["alice".into()],
            vec!["system:masters".into()],
            &["kube-system/*".into(), "ci/deployer".into()],
            vec!["sandbox".into()],
            Some(selector),
        )
        .expect("valid")
    }

    fn who<'a>(user: &'a str, groups: &'a [String], ns: Option<&'a str>) -> Requester<'a> {
        Requester {
            user,
            groups,
            namespace: ns,
            object: None,
            request: None,
        }
    }

    #[test]
    fn users_groups_accounts_and_namespaces_exempt() {
        let e = exemptions();
        let none: Vec<String> = vec![];
        let masters = vec![
            "system:authenticated".to_owned(),
            "system:masters".to_owned(),
        ];
        assert!(e.exempts(&who("alice", &none, Some("prod"))));
        assert!(!e.exempts(&who("bob", &none, Some("prod"))));
        assert!(e.exempts(&who("bob", &masters, Some("prod"))));
        assert!(e.exempts(&who(
            "system:serviceaccount:kube-system:anything",
            &none,
            None
        )));
        assert!(e.exempts(&who("system:serviceaccount:ci:deployer", &none, None)));
        assert!(!e.exempts(&who("system:serviceaccount:ci:other", &none, None)));
        assert!(e.exempts(&who("bob", &none, Some("sandbox"))));
        assert!(!e.exempts(&who("bob", &none, None)));
    }

    #[test]
    fn the_object_selector_reads_the_labels() {
        let e = exemptions();
        let none: Vec<String> = vec![];
        let object = |labels: Json| json!({"metadata": {"labels": labels}});
        let check = |o: &Json| {
            e.exempts(&Requester {
                user: "bob",
                groups: &none,
                namespace: Some("prod"),
                object: Some(o),
                request: None,
            })
        };
        assert!(check(&object(json!({"celhook.dev/exempt": "true"}))));
        assert!(!check(&object(
            json!({"celhook.dev/exempt": "true", "tier": "prod"})
        )));
        assert!(!check(&object(json!({"celhook.dev/exempt": "yes"}))));
        assert!(!check(&json!({"metadata": {}})));
    }

    #[test]
    fn bad_lists_are_refused_with_their_paths() {
        let selector: LabelSelector = celhook_json::from_value(json!({
            "matchExpressions": [
                {"key": "a", "operator": "In"},
                {"key": "b", "operator": "Exists", "values": ["x"]},
                {"key": "c", "operator": "Matches"}
            ]
        }))
        .expect("selector");
        let problems =
            Exemptions::new(vec![], vec![], &["no-slash".into()], vec![], Some(selector))
                .expect_err("refused");
        let paths: Vec<&str> = problems.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            [
                "spec.exempt.serviceAccounts[0]",
                "spec.exempt.objectSelector.matchExpressions[0].values",
                "spec.exempt.objectSelector.matchExpressions[1].values",
                "spec.exempt.objectSelector.matchExpressions[2].operator",
            ]
        );
    }
}
