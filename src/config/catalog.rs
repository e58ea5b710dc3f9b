//! The compiled config as requests see it: CRD versions, rules documents
//! and conversion documents, looked up by group, kind and version.

use std::collections::HashMap;
use std::sync::Arc;

use crate::conversion::{self, Conversion};
use crate::rules::RuleSet;
use crate::validation::CrdVersion;

/// A map by name, looked up several times per request. The keys come from
/// the config, not from requests, so a fixed-seed hash does (SipHash, the
/// std default, cost five times as much).
type Lookup<V> = HashMap<String, V, foldhash::fast::FixedState>;

/// Every loaded CRD version and rules document, by (group, version, kind).
#[derive(Debug, Default)]
pub struct Catalog {
    // group -> kind -> version: nested maps so that a lookup borrows the
    // request's strings instead of building an owned key per request.
    versions: Lookup<Lookup<Lookup<Arc<CrdVersion>>>>,
    count: usize,
    /// group -> kind -> compiled conversion document.
    conversions: Lookup<Lookup<Arc<Conversion>>>,
    /// group -> kind -> the rules documents on that kind.
    rules: Lookup<Lookup<KindRules>>,
    /// The ValidatingAdmissionPolicies and what they look up.
    pub(super) policies: Arc<crate::policy::Set>,
    /// Something reads the request's resource, options and the like
    /// (policies, matchConditions): see `review::Details`.
    pub(super) request_details: bool,
}

/// The rules documents of one group and kind.
#[derive(Debug, Default)]
struct KindRules {
    /// version -> rule sets, in load order.
    by_version: Lookup<Vec<Arc<RuleSet>>>,
    /// Every version the kind's schema has (targeted or not).
    known: Vec<String>,
    /// The metrics label of the kind (`crd` label): the CRD's name, or
    /// `kind.group` in lowercase for a built-in kind.
    label: String,
}

/// What the config holds for one request's group, version and kind.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    /// The CRD version in the config serving it.
    pub crd: Option<&'a CrdVersion>,
    /// Rule sets of documents targeting it.
    pub rules: &'a [Arc<RuleSet>],
    /// The config knows the group and kind but has no schema of this
    /// version: a gap the unknown-version policy answers.
    pub unknown_version: bool,
    /// The `crd` metrics label: the CRD's name, `kind.group` of a built-in
    /// kind, or `unknown`; bounded by the config whatever a caller sends.
    pub label: &'a str,
}

impl Catalog {
    /// The compiled version for a group/version/kind, if a loaded CRD serves it.
    pub fn lookup(&self, group: &str, version: &str, kind: &str) -> Option<&CrdVersion> {
        self.versions
            .get(group)?
            .get(kind)?
            .get(version)
            .map(|v| v.as_ref())
    }

    /// Everything the config holds for a group/version/kind: one lookup
    /// per request.
    pub fn target(&self, group: &str, version: &str, kind: &str) -> Target<'_> {
        let crd_kind = self.versions.get(group).and_then(|k| k.get(kind));
        let crd = crd_kind.and_then(|v| v.get(version)).map(|v| v.as_ref());
        let kind_rules = self.rules.get(group).and_then(|k| k.get(kind));
        let rules = kind_rules
            .and_then(|k| k.by_version.get(version))
            .map_or(&[][..], Vec::as_slice);
        let known_by_rules = kind_rules.is_some_and(|k| k.known.iter().any(|v| v == version));
        let unknown_version =
            (crd_kind.is_some() || kind_rules.is_some()) && crd.is_none() && !known_by_rules;
        let label = match (crd_kind, kind_rules) {
            (Some(versions), _) => versions.values().next().map(|v| v.crd_name.as_str()),
            (None, Some(k)) => Some(k.label.as_str()),
            (None, None) => None,
        };
        Target {
            crd,
            rules,
            unknown_version,
            label: label.unwrap_or("unknown"),
        }
    }

    /// The ValidatingAdmissionPolicies of the config.
    pub fn policies(&self) -> &crate::policy::Set {
        &self.policies
    }

    /// Which fields of a request to decode for this config: those only
    /// policies and matchConditions read are skipped when nothing reads them.
    pub fn request_details(&self) -> crate::review::Details {
        if self.request_details {
            crate::review::Details::Decode
        } else {
            crate::review::Details::Skip
        }
    }

    /// Every loaded rule set, in no particular order.
    pub fn rule_sets(&self) -> impl Iterator<Item = &RuleSet> {
        self.rules
            .values()
            .flat_map(|kinds| kinds.values())
            .flat_map(|k| k.by_version.values())
            .flatten()
            .map(|s| s.as_ref())
    }

    /// The conversion document of a CRD, by group and kind.
    pub fn conversion(&self, group: &str, kind: &str) -> Option<&Conversion> {
        self.conversions.get(group)?.get(kind).map(|c| c.as_ref())
    }

    /// True when a loaded CRD has this group.
    pub fn has_group(&self, group: &str) -> bool {
        self.versions.contains_key(group)
    }

    /// `metadata.name` of the CRD serving a group and kind.
    pub fn crd_of(&self, group: &str, kind: &str) -> Option<&str> {
        let versions = self.versions.get(group)?.get(kind)?;
        versions.values().next().map(|v| v.crd_name.as_str())
    }

    /// Number of conversion documents loaded.
    pub fn conversion_count(&self) -> usize {
        self.conversions.values().map(HashMap::len).sum()
    }

    /// Every loaded CRD version, in no particular order.
    pub fn versions(&self) -> impl Iterator<Item = &CrdVersion> {
        self.versions
            .values()
            .flat_map(|kinds| kinds.values())
            .flat_map(|versions| versions.values())
            .map(|v| v.as_ref())
    }

    /// Number of CRD versions loaded.
    pub fn len(&self) -> usize {
        self.count
    }

    /// True when no CRD is loaded.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Attaches metric handles to every rule (`validation::bind_metrics`).
    /// (See also the [`conversion::Conversions`] view of the catalog.)
    pub fn bind_metrics(&self, metrics: &crate::metrics::Metrics) {
        crate::validation::bind_metrics(self.versions(), metrics);
        for set in self.rule_sets() {
            let label = format!("{}/{}", crate::rules::KIND, set.info.name);
            crate::validation::bind_tree_metrics(
                &set.validator.root,
                &label,
                &set.version,
                metrics,
            );
        }
    }

    pub(super) fn insert(&mut self, v: CrdVersion) {
        self.count += 1;
        self.versions
            .entry(v.group.clone())
            .or_default()
            .entry(v.kind.clone())
            .or_default()
            .insert(v.version.clone(), Arc::new(v));
    }
}

impl Catalog {
    /// Adds a compiled rules document on `group`/`kind`: its sets, every
    /// version the kind's schema has, and the kind's metrics label.
    pub(super) fn insert_rules(
        &mut self,
        (group, kind): (&str, &str),
        sets: Vec<RuleSet>,
        known: &[String],
        label: &str,
    ) {
        let k = self
            .rules
            .entry(group.to_owned())
            .or_default()
            .entry(kind.to_owned())
            .or_default();
        for set in sets {
            k.by_version
                .entry(set.version.clone())
                .or_default()
                .push(Arc::new(set));
        }
        for v in known {
            if !k.known.contains(v) {
                k.known.push(v.clone());
            }
        }
        label.clone_into(&mut k.label);
    }

    pub(super) fn insert_conversion(&mut self, c: Conversion) {
        self.conversions
            .entry(c.group.clone())
            .or_default()
            .insert(c.kind.clone(), Arc::new(c));
    }
}

impl conversion::Conversions for Catalog {
    fn has_group(&self, group: &str) -> bool {
        Catalog::has_group(self, group)
    }

    fn conversion(&self, group: &str, kind: &str) -> Option<&Conversion> {
        Catalog::conversion(self, group, kind)
    }

    fn crd_of(&self, group: &str, kind: &str) -> Option<&str> {
        Catalog::crd_of(self, group, kind)
    }
}
