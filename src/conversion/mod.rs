//! The declarative conversion engine: converts custom resources between the
//! versions of their CRD as a [conversion document](document) says, through
//! the hub version (source -> hub -> target), copying every field no
//! assignment mentions, pruning what the target schema cannot hold, keeping
//! whatever a round trip would lose in the [`stash`], and checking every
//! answer with the API server's rules ([`guard`]) before it is returned.
//!
//! Pure functions over `celhook_json::Value`: no IO.

pub mod coverage;
pub mod document;
pub mod files;
pub mod guard;
mod keeping;
pub mod round_trip;
pub mod stash;
mod tree;

use std::collections::HashMap;

use celhook_json::Value as Json;

use crate::cel::{self, Program, Value};
use crate::schema::Schema;

pub use document::{DocumentProblem, CONVERSION_API_VERSION, CONVERSION_KIND};
pub use guard::GuardError;
pub use keeping::Given;
pub use tree::prune;
use tree::{copy_below, mismatch, place};

/// What conversion needs of the loaded config (the config's catalog is
/// one): the conversion documents, and which CRDs serve which kinds.
pub trait Conversions {
    /// True when a loaded CRD has this group.
    fn has_group(&self, group: &str) -> bool;
    /// The conversion document of the CRD serving a group and kind.
    fn conversion(&self, group: &str, kind: &str) -> Option<&Conversion>;
    /// `metadata.name` of the CRD serving a group and kind.
    fn crd_of(&self, group: &str, kind: &str) -> Option<&str>;
}

/// A compiled conversion document for one CRD.
#[derive(Debug)]
pub struct Conversion {
    /// `metadata.name` of the CRD.
    pub crd_name: String,
    /// The CRD's group.
    pub group: String,
    /// The CRD's kind.
    pub kind: String,
    /// The hub version every conversion passes through.
    pub hub: String,
    /// Every version of the CRD, in the CRD's order.
    versions: Vec<String>,
    /// Looked up for every object (its version and the desired one): keys
    /// from the config, so a fixed fast hash, as the catalog's.
    plans: HashMap<String, VersionPlan, foldhash::fast::FixedState>,
    /// `spec.lossy`: per version, the fields acknowledged to reach other
    /// versions only through the stash.
    lossy: std::collections::BTreeMap<String, Vec<String>>,
}

/// How one version converts to and from the hub.
#[derive(Debug)]
struct VersionPlan {
    /// The version's structural schema (for `self` and for pruning).
    schema: Schema,
    to_hub: Vec<Assignment>,
    from_hub: Vec<Assignment>,
    /// `group/version`, the apiVersion of objects at this version.
    api_version: String,
}

/// One hop of a conversion: source and target version, and the
/// assignments that make the target.
type Hop<'c> = (&'c VersionPlan, &'c VersionPlan, &'c [Assignment]);

/// The hops of a conversion: one, or two through the hub.
type Route<'c> = (Hop<'c>, Option<Hop<'c>>);

/// True when no assignment on `route` reads or writes `metadata`.
fn keeps_metadata((first, then): Route<'_>) -> bool {
    std::iter::once(first)
        .chain(then)
        .all(|(_, _, assignments)| assignments.iter().all(|a| !a.touches_metadata))
}

/// `path = expr`, compiled.
#[derive(Debug)]
struct Assignment {
    /// Where it sits in the document, e.g. `spec.versions.v1beta1.toHub[0]`.
    at: String,
    path: Vec<String>,
    /// The target schema at `path`, to check the value's type against.
    value_schema: Option<Schema>,
    expr: String,
    program: Program,
    /// It writes below `metadata` or its expression may read it (see
    /// `Conversion::convert`).
    touches_metadata: bool,
}

/// Why one object could not be converted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ObjectError {
    /// An expression failed at run time.
    #[error("{at} (path {path}, expr {expr:?}) failed: {reason}")]
    Expression {
        /// Where the assignment sits in the conversion document.
        at: String,
        /// The assignment's target path.
        path: String,
        /// The expression.
        expr: String,
        /// The runtime error.
        reason: String,
    },
    /// A value could not be placed or the object is not convertible.
    #[error("{0}")]
    Object(String),
}

/// Why a review could not be answered with Success: the `result.message`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReviewFailure {
    /// `desiredAPIVersion` is not `group/version` of a loaded CRD.
    #[error("desiredAPIVersion {desired:?}: {reason}")]
    Desired {
        /// The requested apiVersion.
        desired: String,
        /// What is wrong with it.
        reason: String,
    },
    /// One object could not be converted.
    #[error("object {index} ({name}): {reason}")]
    Object {
        /// Position in the request.
        index: usize,
        /// `namespace/name`.
        name: String,
        /// Why.
        reason: String,
    },
    /// The answer would break an API server rule.
    #[error("{0}")]
    Guard(#[from] GuardError),
    /// The review ran out of time or of answer bytes before its last object.
    #[error("conversion stopped after {converted} objects: {reason}")]
    Stopped {
        /// Objects converted before the stop.
        converted: usize,
        /// Which limit stopped it.
        reason: String,
    },
    /// The review, read while its objects were converted, turned out
    /// malformed once part of the answer was sent (too late for a 400).
    #[error("the review is malformed: {0}")]
    Malformed(String),
}

impl Conversion {
    /// Every version of the CRD.
    pub fn versions(&self) -> &[String] {
        &self.versions
    }

    /// True when the document acknowledges that `field` (a path as the
    /// coverage report writes it, or an object path) of version `from`
    /// may reach other versions only through the stash: the field, one of
    /// its parents or one of its parts is listed in `spec.lossy`.
    pub fn acknowledges(&self, from: &str, field: &str) -> bool {
        let below = |a: &str, b: &str| a.strip_prefix(b).is_some_and(|r| r.starts_with(['.', '[']));
        self.lossy.get(from).is_some_and(|paths| {
            paths
                .iter()
                .any(|p| field == p || below(field, p) || below(p, field))
        })
    }

    /// The acknowledged stash-only fields, per version.
    pub fn lossy(&self) -> &std::collections::BTreeMap<String, Vec<String>> {
        &self.lossy
    }

    /// True when `version` is a version of the CRD.
    pub fn has_version(&self, version: &str) -> bool {
        self.plans.contains_key(version)
    }

    fn api_version(&self, version: &str) -> std::borrow::Cow<'_, str> {
        match self.plans.get(version) {
            Some(plan) => plan.api_version.as_str().into(),
            None => format!("{}/{version}", self.group).into(),
        }
    }

    /// The hops from `from` to `to`: through the hub, or one hop when
    /// either end is the hub.
    fn route(&self, from: &str, to: &str) -> Result<Route<'_>, ObjectError> {
        let plan = |v: &str| {
            self.plans.get(v).ok_or_else(|| {
                ObjectError::Object(format!("{v} is not a version of {}", self.crd_name))
            })
        };
        let (source, target, hub) = (plan(from)?, plan(to)?, plan(&self.hub)?);
        let to_hub = (source, hub, source.to_hub.as_slice());
        let from_hub = (hub, target, target.from_hub.as_slice());
        Ok(if from == self.hub {
            (from_hub, None)
        } else if to == self.hub {
            (to_hub, None)
        } else {
            (to_hub, Some(from_hub))
        })
    }

    /// True when `from` and `to` are versions and no assignment on the way
    /// between them reads or writes `metadata`: the result's metadata is
    /// then the source's.
    #[cfg(test)]
    fn keeps_metadata(&self, from: &str, to: &str) -> bool {
        self.route(from, to).is_ok_and(keeps_metadata)
    }

    /// Converts `object` (at `from`) to `to`, stashing what the target
    /// cannot hold and restoring what an earlier conversion stashed. An
    /// object already at `to` comes back unchanged.
    pub fn convert(&self, object: Json, from: &str, to: &str) -> Result<Json, ObjectError> {
        self.convert_keeping(object, from, to).map(|(out, _)| out)
    }

    /// The plain conversion, without the stash: source -> hub -> target.
    fn translate(&self, object: &Json, (first, then): Route<'_>) -> Result<Json, ObjectError> {
        let out = self.step(object, first)?;
        match then {
            Some(hop) => self.step(&out, hop),
            None => Ok(out),
        }
    }

    /// One hop: evaluate every assignment against the source, copy the
    /// source, set the apiVersion, place the values, prune to the target.
    fn step(
        &self,
        object: &Json,
        (source, target, assignments): Hop<'_>,
    ) -> Result<Json, ObjectError> {
        let mut values = Vec::with_capacity(assignments.len());
        for a in assignments {
            let this = Value::from_json(object, &source.schema);
            let (result, _cost) = a.program.eval(this, None, cel::PER_EXPRESSION_COST_LIMIT);
            let value = result.map_err(|e| ObjectError::Expression {
                at: a.at.clone(),
                path: a.path.join("."),
                expr: a.expr.clone(),
                reason: e.to_string(),
            })?;
            let value = match value {
                Value::Optional(None) => None,
                other => Some(cel::to_json(&other)),
            };
            if let (Some(v), Some(schema)) = (&value, &a.value_schema) {
                if let Some(m) = mismatch(v, schema) {
                    let path = a.path.join(".");
                    return Err(ObjectError::Expression {
                        at: a.at.clone(),
                        reason: m.describe(&path),
                        path,
                        expr: a.expr.clone(),
                    });
                }
            }
            values.push(value);
        }
        let mut out = copy_but(object, assignments);
        let Some(map) = out.as_object_mut() else {
            return Err(ObjectError::Object(
                "the object is not a JSON object".into(),
            ));
        };
        map.insert("apiVersion", Json::from(target.api_version.as_str()));
        for (a, value) in assignments.iter().zip(values) {
            place(&mut out, &a.path, value).map_err(|reason| ObjectError::Expression {
                at: a.at.clone(),
                path: a.path.join("."),
                expr: a.expr.clone(),
                reason,
            })?;
        }
        prune(&mut out, &target.schema, true);
        Ok(out)
    }
}

/// `object` copied but for the values the assignments replace or remove:
/// a copy of a list about to be overwritten would be made only to be
/// freed (a tenth of a Pizza's conversion). Parents on the way are copied,
/// so that `place` meets what it would have met in a whole copy.
fn copy_but(object: &Json, assignments: &[Assignment]) -> Json {
    let paths: Vec<&[String]> = assignments.iter().map(|a| a.path.as_slice()).collect();
    copy_below(object, &paths)
}

/// Splits `group/version`; the core group has no slash.
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.rsplit_once('/') {
        Some((group, version)) => (group, version),
        None => ("", api_version),
    }
}

/// Converts every object of a review to `desired`, in order, all or nothing,
/// and checks the answer with the [`guard`]. Objects are moved, not copied.
pub fn convert_all(
    catalog: &(impl Conversions + ?Sized),
    desired: &str,
    objects: Vec<Json>,
) -> Result<Vec<Json>, ReviewFailure> {
    let mut out = Vec::with_capacity(objects.len());
    convert_each(catalog, desired, objects.into_iter().map(Ok), |converted| {
        out.push(converted);
        Ok(())
    })?;
    Ok(out)
}

/// Converts the objects one by one, in order, and hands each converted and
/// guard-checked object to `emit` before converting the next, so that a
/// caller can serialize the answer as it goes instead of holding every
/// converted object. Stops at the first failure (the caller then discards
/// what it was given). Each input object is freed once converted; an input
/// may also be parsed only when its turn comes (an `Err` is a parse error).
pub fn convert_each(
    catalog: &(impl Conversions + ?Sized),
    desired: &str,
    objects: impl IntoIterator<Item = Result<Json, String>>,
    mut emit: impl FnMut(Json) -> Result<(), ReviewFailure>,
) -> Result<(), ReviewFailure> {
    let (group, version) = split_api_version(desired);
    if version.is_empty() || !catalog.has_group(group) {
        return Err(ReviewFailure::Desired {
            desired: desired.to_owned(),
            reason: format!("no CRD of group {group:?} is loaded"),
        });
    }
    let mut expected = 0usize;
    let mut emitted = 0usize;
    for (index, object) in objects.into_iter().enumerate() {
        expected += 1;
        let object = object.map_err(|reason| ReviewFailure::Object {
            index,
            name: "unparsed".into(),
            reason,
        })?;
        // Formatted only for a failure: most objects never need it.
        let name = guard::Name::of(object.get("metadata"));
        let (converted, input) =
            convert_one_keeping(catalog, desired, object).map_err(|reason| {
                ReviewFailure::Object {
                    index,
                    name: name.to_string(),
                    reason,
                }
            })?;
        // Only kind and metadata are kept for the guard: moved out of the
        // input the conversion gives back, or only what changed when the
        // metadata was moved or the answer is the input itself.
        let original = match input {
            Given::Input(input) => guard::Original::from_input(input),
            Given::Same => guard::Original::carried(converted.get("kind").cloned(), false),
            Given::Carried {
                kind,
                annotations_changed,
            } => guard::Original::carried(kind, annotations_changed),
        };
        guard::check(index, &original, &converted, desired)?;
        emit(converted)?;
        emitted += 1;
    }
    // One answer per input, by construction; checked all the same, as the
    // API server will.
    guard::check_count(expected, emitted)?;
    Ok(())
}

/// Converts one object to `desired`; the error is the reason, without the
/// object's name.
pub fn convert_one(
    catalog: &(impl Conversions + ?Sized),
    desired: &str,
    object: Json,
) -> Result<Json, String> {
    convert_one_keeping(catalog, desired, object).map(|(out, _)| out)
}

/// [`convert_one`], giving back the input as well (see
/// [`Conversion::convert_keeping`]).
fn convert_one_keeping(
    catalog: &(impl Conversions + ?Sized),
    desired: &str,
    object: Json,
) -> Result<(Json, Given), String> {
    let (group, version) = split_api_version(desired);
    let Some(api_version) = object.get("apiVersion").and_then(Json::as_str) else {
        return Err("apiVersion is missing".into());
    };
    let (obj_group, from) = split_api_version(api_version);
    if obj_group != group {
        return Err(format!(
            "apiVersion {api_version:?} is not in the group of desiredAPIVersion {desired:?}"
        ));
    }
    let Some(kind) = object.get("kind").and_then(Json::as_str) else {
        return Err("kind is missing".into());
    };
    let Some(conversion) = catalog.conversion(group, kind) else {
        return Err(match catalog.crd_of(group, kind) {
            Some(crd) => format!("CRD {crd} has no conversion document"),
            None => format!("kind {kind:?} of group {group:?} is not served by any loaded CRD"),
        });
    };
    let versions = || conversion.versions().join(", ");
    if !conversion.has_version(version) {
        return Err(format!(
            "desiredAPIVersion {desired:?} is not a version of {} (versions: {})",
            conversion.crd_name,
            versions()
        ));
    }
    if !conversion.has_version(from) {
        return Err(format!(
            "apiVersion {api_version:?} is not a version of {} (versions: {})",
            conversion.crd_name,
            versions()
        ));
    }
    let from = from.to_owned();
    conversion
        .convert_keeping(object, &from, version)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests;
