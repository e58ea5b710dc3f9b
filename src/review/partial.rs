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

    /// [`Fields::keep`] of an object's keys in ascending order, `cursor`
    /// starting at 0 for each object (a plan may find each key from where
    /// the last one was found).
    fn keep_after(&self, field: &str, cursor: &mut usize) -> Keep<'_> {
        let _ = cursor;
        self.keep(field)
    }

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
    // While the keys come in order (as the API server writes them), the
    // plan is asked from where it found the last one, and the object
    // needs no sorting; the first key out of order ends both.
    let mut last: Option<std::borrow::Cow<'_, str>> = None;
    let mut sorted = true;
    let mut cursor = 0;
    while let Some(key) = p.next_key(&mut first)? {
        if sorted {
            sorted = last
                .as_deref()
                .is_none_or(|last| celhook_json::key_order(last, &key).is_lt());
        }
        let keep = if sorted {
            plan.keep_after(&key, &mut cursor)
        } else {
            plan.keep(&key)
        };
        let value = match keep {
            Keep::Whole => p.value()?,
            Keep::Part(inner) if p.peek() == Some(b'{') => fields(p, inner)?,
            Keep::Part(_) => p.value()?,
            Keep::Skip if plan.holds_places() => {
                p.skip()?;
                Value::Null
            }
            Keep::Skip => {
                p.skip()?;
                last = Some(key);
                continue;
            }
        };
        p.push_entry(Str::from(&*key), value);
        last = Some(key);
    }
    let entries = p.take_entries(base);
    // A repeated key keeps its last value, as when the object is whole.
    Ok(Value::Object(if sorted {
        Map::from_sorted_unique(entries)
    } else {
        Map::from_entries(entries)
    }))
}
