//! Decoding `object` and `oldObject` with only the fields the config
//! reads: a CRD's rules rarely look past `spec`, while the object carries
//! `metadata` (managedFields, annotations) and `status`, often most of its
//! bytes; on CREATE, of `spec` only the fields its rules select. A skipped
//! field is checked as strictly as a built one (see `celhook_json::parse`)
//! but never built into a tree.

use std::borrow::Cow;

use celhook_json::{key_order, Error, Map, NextKey, Parser, PlainKey, Str, Value};

/// What decoding keeps of one field of an object.
#[derive(Clone, Copy)]
pub enum Keep<'p> {
    /// The whole field.
    Whole,
    /// The whole field; a list of flat objects kept by column
    /// (`Parser::value_rows`), which reads as the list it is.
    Rows,
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

    /// The fields the plan knows by name, strictly ascending in key order
    /// (as `celhook_json::key_order` sorts; a name twice would be matched
    /// twice and the object taken for sorted): an object's keys that are
    /// these, spelled as they are, are matched in the text without being
    /// built, and decided by [`Fields::keep_known`], which must decide as
    /// [`Fields::keep`] does for the same name. A plan may know none (every
    /// key is then built and asked of [`Fields::keep`]).
    fn known(&self) -> &[PlainKey] {
        &[]
    }

    /// [`Fields::keep`] of the `i`th known field.
    fn keep_known(&self, i: usize) -> Keep<'_> {
        self.known()
            .get(i)
            .map_or(Keep::Skip, |k| self.keep(k.as_str()))
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

/// Of `metadata`, its `name`, which a denial names the object by, and
/// what the plan given keeps besides (nothing without one).
pub struct WithName<'p>(pub Option<&'p dyn Fields>);

impl Fields for WithName<'_> {
    fn keep(&self, field: &str) -> Keep<'_> {
        match self.0 {
            _ if field == "name" => Keep::Whole,
            Some(plan) => plan.keep(field),
            None => Keep::Skip,
        }
    }

    fn known(&self) -> &[PlainKey] {
        self.0.map_or(&[], |plan| plan.known())
    }

    fn keep_known(&self, i: usize) -> Keep<'_> {
        match (self.0, self.known().get(i)) {
            (_, Some(key)) if key.as_str() == "name" => Keep::Whole,
            (Some(plan), _) => plan.keep_known(i),
            (None, _) => Keep::Skip,
        }
    }

    fn holds_places(&self) -> bool {
        self.0.is_some_and(|plan| plan.holds_places())
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
    let known = plan.known();
    let holds_places = plan.holds_places();
    let mut first = true;
    // `next`: the known field the next key is expected to be. While the
    // keys come in order (as the API server writes them) each is that
    // field or one after it, and the object needs no sorting; the first
    // key out of order ends that (a known key is still matched by name).
    let mut next = 0;
    let mut last = Last::Start;
    let mut sorted = true;
    loop {
        // The key is built only once it is kept.
        let (at, keep) = match p.next_key_known(&mut first, known.get(next))? {
            NextKey::End => break,
            // In order when the keys were: after the key before (the known
            // field before it, or past another key as found below).
            NextKey::Known => {
                next += 1;
                last = Last::Known(next - 1);
                (Ok(next - 1), plan.keep_known(next - 1))
            }
            NextKey::Other(key) => {
                if sorted {
                    sorted = match &last {
                        Last::Start => true,
                        Last::Known(at) => key_order(known[*at].as_str(), &key).is_lt(),
                        Last::Other(before) => key_order(before, &key).is_lt(),
                    };
                }
                // In order, the known fields before it are passed (the
                // object lacks them), and it may be the one after them.
                if sorted {
                    while known
                        .get(next)
                        .is_some_and(|k| key_order(k.as_str(), &key).is_lt())
                    {
                        next += 1;
                    }
                }
                let decided = match known.get(next) {
                    Some(k) if sorted && k.as_str() == key => {
                        next += 1;
                        (Ok(next - 1), plan.keep_known(next - 1))
                    }
                    _ => (Err(key.clone()), plan.keep(&key)),
                };
                last = Last::Other(key);
                decided
            }
        };
        let value = match keep {
            Keep::Whole => p.value()?,
            Keep::Rows => p.value_rows()?,
            Keep::Part(inner) if p.peek() == Some(b'{') => fields(p, inner)?,
            Keep::Part(_) => p.value()?,
            Keep::Skip if holds_places => {
                p.skip()?;
                Value::Null
            }
            Keep::Skip => {
                p.skip()?;
                continue;
            }
        };
        let key = match at {
            Ok(at) => known[at].to_key(),
            Err(key) => Str::from(&*key),
        };
        p.push_entry(key, value);
    }
    let entries = p.take_entries(base);
    // A repeated key keeps its last value, as when the object is whole.
    Ok(Value::Object(if sorted {
        Map::from_sorted_unique(entries)
    } else {
        Map::from_entries(entries)
    }))
}

/// The key before the one being read, for the order check: none yet, the
/// known field at an index, or another key.
enum Last<'k> {
    Start,
    Known(usize),
    Other(Cow<'k, str>),
}
