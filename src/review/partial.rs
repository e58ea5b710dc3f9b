//! Decoding `object` and `oldObject` with only the fields the config
//! reads: a CRD's rules rarely look past `spec`, while the object carries
//! `metadata` (managedFields, annotations) and `status`, often most of its
//! bytes; on CREATE, of `spec` only the fields its rules select. A skipped
//! field is checked as strictly as a built one (see `celhook_json::parse`)
//! but never built into a tree.

use celhook_json::{Error, Map, Parser, Str, Value};

/// What decoding keeps of one field of an object.
#[derive(Clone, Copy)]
pub enum Keep<'p> {
    /// The whole field.
    Whole,
    /// Of an object, the fields `plan` keeps; a value of another type is
    /// kept whole (the plan was made for an object).
    Part(&'p dyn Fields),
    /// Nothing: no rule reads it.
    Skip,
}

/// The fields a config reads of an object (the request's object at the
/// top, and any object a plan goes into with [`Keep::Part`]).
pub trait Fields {
    fn keep(&self, field: &str) -> Keep<'_>;

    /// True when a skipped field keeps its key, with null for its value:
    /// the fields built then sit where they sit in the whole object, which
    /// is where compiled rules look first (`Map::get_hinted`, by schema
    /// position). CEL reads a null field as absent; a plan skips only
    /// fields no rule reads.
    fn holds_places(&self) -> bool {
        false
    }
}

/// Of `metadata`, its `name` alone: a denial names the object by it.
pub struct NameOnly;

impl Fields for NameOnly {
    fn keep(&self, field: &str) -> Keep<'_> {
        if field == "name" {
            Keep::Whole
        } else {
            Keep::Skip
        }
    }
}

/// Which objects the config reads in part, asked once the request's kind
/// is known.
pub trait ObjectReads {
    type Plan<'r>: Fields
    where
        Self: 'r;

    /// How to decode objects of `kind`: `None` for whole. `creates` when
    /// the request is known (from a field before the object) to be a
    /// CREATE, which has no old object to compare values with.
    fn plan(&self, kind: &super::GroupVersionKind, creates: bool) -> Option<Self::Plan<'_>>;
}

/// Every object whole: the offline tools, tests and fuzz targets.
pub struct Whole;

/// The plan of [`Whole`], never made.
pub enum NoPlan {}

impl Fields for NoPlan {
    fn keep(&self, _: &str) -> Keep<'_> {
        match *self {}
    }
}

impl ObjectReads for Whole {
    type Plan<'r> = NoPlan;

    fn plan(&self, _: &super::GroupVersionKind, _: bool) -> Option<NoPlan> {
        None
    }
}

/// An object decoded by `plan`, or whole without one. JSON null is `None`.
pub(super) fn object_value<P: Fields>(
    p: &mut Parser<'_>,
    plan: Option<&P>,
) -> Result<Option<Value>, Error> {
    if p.null()? {
        return Ok(None);
    }
    match plan {
        Some(plan) if p.peek() == Some(b'{') => fields(p, plan).map(Some),
        // Without a plan, or not an object (reported as such by the caller).
        _ => p.value().map(Some),
    }
}

/// An object of which the fields are kept as `plan` says.
fn fields(p: &mut Parser<'_>, plan: &dyn Fields) -> Result<Value, Error> {
    p.begin_object("a map")?;
    let base = p.entries_base();
    let mut first = true;
    while let Some(key) = p.next_key(&mut first)? {
        let value = match plan.keep(&key) {
            Keep::Whole => p.value()?,
            Keep::Part(inner) if p.peek() == Some(b'{') => fields(p, inner)?,
            Keep::Part(_) => p.value()?,
            Keep::Skip if plan.holds_places() => {
                p.skip()?;
                Value::Null
            }
            Keep::Skip => {
                p.skip()?;
                continue;
            }
        };
        p.push_entry(Str::from(&*key), value);
    }
    // A repeated key keeps its last value, as when the object is whole.
    Ok(Value::Object(Map::from_entries(p.take_entries(base))))
}
