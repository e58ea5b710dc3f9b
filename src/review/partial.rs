//! Decoding `object` and `oldObject` with only the top-level fields the
//! config reads: a CRD's rules rarely look past `spec`, while the object
//! carries `metadata` (managedFields, annotations) and `status`, often
//! most of its bytes. A skipped field is checked as strictly as a built
//! one (see `celhook_json::parse`) but never built into a tree.

use celhook_json::{Error, Map, Parser, Str, Value};

/// What decoding keeps of one top-level field of an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// The whole field.
    Whole,
    /// Of `metadata`, its `name` alone: a denial names the object by it.
    Name,
    /// Nothing: no rule reads it.
    Skip,
}

/// The top-level fields a config reads of objects of one kind.
pub trait RootFields {
    fn keep(&self, field: &str) -> Keep;
}

/// Which objects the config reads in part, asked once the request's kind
/// is known.
pub trait ObjectReads {
    type Plan<'r>: RootFields
    where
        Self: 'r;

    /// How to decode objects of `kind`: `None` for whole.
    fn plan(&self, kind: &super::GroupVersionKind) -> Option<Self::Plan<'_>>;
}

/// Every object whole: the offline tools, tests and fuzz targets.
pub struct Whole;

/// The plan of [`Whole`], never made.
pub enum NoPlan {}

impl RootFields for NoPlan {
    fn keep(&self, _: &str) -> Keep {
        match *self {}
    }
}

impl ObjectReads for Whole {
    type Plan<'r> = NoPlan;

    fn plan(&self, _: &super::GroupVersionKind) -> Option<NoPlan> {
        None
    }
}

/// An object decoded by `plan`, or whole without one. JSON null is `None`.
pub(super) fn object_value<P: RootFields>(
    p: &mut Parser<'_>,
    plan: Option<&P>,
) -> Result<Option<Value>, Error> {
    if p.null()? {
        return Ok(None);
    }
    match plan {
        Some(plan) if p.peek() == Some(b'{') => fields(p, &|field| plan.keep(field)).map(Some),
        // Without a plan, or not an object (reported as such by the caller).
        _ => p.value().map(Some),
    }
}

/// An object of which the fields are kept as `keep` says.
fn fields(p: &mut Parser<'_>, keep: &dyn Fn(&str) -> Keep) -> Result<Value, Error> {
    let mut entries = Vec::new();
    p.begin_object("a map")?;
    let mut first = true;
    while let Some(key) = p.next_key(&mut first)? {
        let value = match keep(&key) {
            Keep::Whole => p.value()?,
            // `metadata` with its `name` alone, when it is an object.
            Keep::Name if p.peek() == Some(b'{') => fields(p, &|field| {
                if field == "name" {
                    Keep::Whole
                } else {
                    Keep::Skip
                }
            })?,
            Keep::Name => p.value()?,
            Keep::Skip => {
                p.skip()?;
                continue;
            }
        };
        entries.push((Str::from(&*key), value));
    }
    // A repeated key keeps its last value, as when the object is whole.
    Ok(Value::Object(Map::from_entries(entries)))
}
