//! What a node's rules read of its value, by field: the plan a request's
//! object is decoded by on CREATE, so that only those fields are built,
//! and of an object whose fields the rules select (`self.spec.replicas`),
//! only those fields.

use std::collections::BTreeMap;

use super::{FieldRead, Node, SelfReads, Want};
use crate::cel::Program;
use crate::schema::{Schema, Type};

/// What is read of one field, by name (see [`FieldRead`], of which this is
/// the stored form).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Read {
    Whole,
    /// Whole, and a list of flat objects: see [`FieldRead::Rows`].
    Rows,
    /// In part: the plan at this index of [`Plan::parts`].
    Part(usize),
    /// The node's property at this index has rules below.
    Below(usize),
}

/// What a decoder builds of an object: by field name, sorted, what is read
/// of it; and the schema's properties with the fields read, sorted, those
/// JSON writes without escapes, which a decoder matches in the text as
/// they are ([`Plan::known_fields`]), with what is read of each (`None`:
/// nothing).
#[derive(Debug, Default)]
pub struct Plan {
    by_name: Vec<(String, Read)>,
    known: Vec<celhook_json::PlainKey>,
    known_reads: Vec<Option<Read>>,
    parts: Vec<Plan>,
}

impl Plan {
    /// The plan of an object of `schema` of which `wants` are read.
    fn of(schema: &Schema, wants: &[(String, Want)]) -> Plan {
        let mut plan = Plan::default();
        let mut by_name = BTreeMap::new();
        for (field, want) in wants {
            let read = plan.read(schema, field, want);
            by_name.insert(field.clone(), read);
        }
        plan.index(schema, by_name);
        plan
    }

    /// How `field` of an object of `schema` is read when `want` is: whole
    /// (a list of flat objects by rows), or in part by a plan of its own.
    fn read(&mut self, schema: &Schema, field: &str, want: &Want) -> Read {
        let child = schema.properties.get(field);
        match want {
            Want::Whole if child.is_some_and(flat_rows) => Read::Rows,
            Want::Whole => Read::Whole,
            Want::Part(wants) => match child {
                Some(child) => {
                    self.parts.push(Plan::of(child, wants));
                    Read::Part(self.parts.len() - 1)
                }
                // Not met: a field is wanted in part only as a property.
                None => Read::Whole,
            },
        }
    }

    /// Keeps `by_name` and the known fields it makes, with `schema`'s
    /// other properties known as read for nothing.
    fn index(&mut self, schema: &Schema, by_name: BTreeMap<String, Read>) {
        // A BTreeMap of strings iterates bytewise, as `key_order` sorts.
        let mut known: BTreeMap<&str, Option<Read>> = schema
            .properties
            .keys()
            .map(|name| (name.as_str(), None))
            .collect();
        for (name, read) in &by_name {
            known.insert(name, Some(*read));
        }
        (self.known, self.known_reads) = known
            .into_iter()
            .filter_map(|(name, read)| Some((celhook_json::PlainKey::new(name)?, read)))
            .unzip();
        self.by_name = by_name.into_iter().collect();
    }

    /// What is read of `field` ([`FieldRead`]), `below` resolving a
    /// property with rules below it.
    fn field_read<'p>(
        &'p self,
        field: &str,
        below: impl Fn(usize) -> FieldRead<'p>,
    ) -> FieldRead<'p> {
        let found = self
            .by_name
            .binary_search_by(|(name, _)| celhook_json::key_order(name, field))
            .ok()
            .map(|i| self.by_name[i].1);
        self.read_of(found, below)
    }

    fn read_of<'p>(
        &'p self,
        read: Option<Read>,
        below: impl Fn(usize) -> FieldRead<'p>,
    ) -> FieldRead<'p> {
        match read {
            Some(Read::Whole) => FieldRead::Whole,
            Some(Read::Rows) => FieldRead::Rows,
            Some(Read::Part(i)) => FieldRead::Part(&self.parts[i]),
            Some(Read::Below(i)) => below(i),
            None => FieldRead::Nothing,
        }
    }

    /// What is read of `field` of the object.
    pub fn read_field(&self, field: &str) -> FieldRead<'_> {
        // A plan in part has no properties with rules below.
        self.field_read(field, |_| FieldRead::Whole)
    }

    /// The fields a decoder may match without building their keys.
    pub fn known_fields(&self) -> &[celhook_json::PlainKey] {
        &self.known
    }

    /// [`Plan::read_field`] of the `i`th of [`Plan::known_fields`].
    pub fn known_read(&self, i: usize) -> FieldRead<'_> {
        self.known_read_with(i, |_| FieldRead::Whole)
    }

    fn known_read_with<'p>(
        &'p self,
        i: usize,
        below: impl Fn(usize) -> FieldRead<'p>,
    ) -> FieldRead<'p> {
        self.read_of(self.known_reads.get(i).copied().flatten(), below)
    }
}

/// True for a list of objects of int, string and boolean fields alone:
/// what a decoder may keep by column (`celhook_json::Table`).
fn flat_rows(schema: &Schema) -> bool {
    let Some(items) = schema.items.as_deref() else {
        return false;
    };
    schema.ty == Type::Array
        && items.ty == Type::Object
        && items.additional_properties.is_none()
        && !items.preserve_unknown_fields
        && !items.properties.is_empty()
        && items
            .properties
            .values()
            .all(|p| matches!(p.ty, Type::Integer | Type::String | Type::Boolean))
}

/// True for an object a plan may build in part: typed by its properties
/// alone, so that a field's name is the one JSON key it can be.
fn in_part(schema: &Schema) -> bool {
    schema.ty == Type::Object
        && schema.additional_properties.is_none()
        && !schema.preserve_unknown_fields
        && !schema.properties.is_empty()
}

/// The fields wanted of a value while they are gathered: by JSON key,
/// `None` for a field wanted whole.
#[derive(Default)]
struct Wanted(BTreeMap<String, Option<Wanted>>);

impl Wanted {
    /// Adds the chain `fields` (CEL names) selected from a value of
    /// `schema`, its last field's value read, or only its presence; false
    /// when the first name is none of `schema`'s properties.
    fn add(&mut self, schema: &Schema, fields: &[String], presence: bool) -> bool {
        let Some((first, rest)) = fields.split_first() else {
            return false;
        };
        let Some((key, child)) = schema.cel_property(first, true) else {
            return false;
        };
        let partly = in_part(child);
        let entry = self
            .0
            .entry(key.into_owned())
            .or_insert_with(|| partly.then(Wanted::default));
        if let Some(below) = entry {
            let more = match rest {
                [] => presence,
                // Further down a name the schema does not resolve may
                // still be read: the field whole.
                _ => below.add(child, rest, presence),
            };
            if !more {
                *entry = None;
            }
        }
        true
    }

    fn wants(self) -> Vec<(String, Want)> {
        let want = |w: Option<Wanted>| w.map_or(Want::Whole, |w| Want::Part(w.wants()));
        self.0.into_iter().map(|(k, w)| (k, want(w))).collect()
    }
}

impl SelfReads {
    /// What the programs `programs`, compiled for `schema`, read together,
    /// by JSON key: a field selected by its escaped name (`x__dash__prop`)
    /// reads the key it stands for (`x-prop`), found as the checker finds
    /// it; a name the schema does not resolve counts as reading all. A
    /// field of which the programs only select fields, or test presence,
    /// is read in part when its schema allows (see [`Want::Part`]).
    pub(super) fn of<'p>(
        schema: &Schema,
        programs: impl IntoIterator<Item = &'p Program>,
    ) -> SelfReads {
        let mut wanted = Wanted::default();
        for program in programs {
            let Some(paths) = program.self_paths() else {
                return SelfReads::Whole;
            };
            for path in paths {
                if !wanted.add(schema, &path.fields, path.presence) {
                    return SelfReads::Whole;
                }
            }
        }
        SelfReads::Fields(wanted.wants())
    }
}

impl Node {
    /// What the rules read of `field` of the node's value (with a rule here
    /// reading it whole, all of it; a decoder also builds whole a node
    /// whose elements have rules: see [`Node::reads_whole`]).
    pub fn field_read(&self, field: &str) -> FieldRead<'_> {
        if self.needs_whole() {
            return FieldRead::Whole;
        }
        self.plan
            .field_read(field, |i| FieldRead::Below(&self.properties[i].1))
    }

    /// The fields a decoder may match without building their keys (see
    /// [`Plan`]); none when a rule here reads the node's value whole.
    pub fn known_fields(&self) -> &[celhook_json::PlainKey] {
        self.plan.known_fields()
    }

    /// [`Node::field_read`] of the `i`th of [`Node::known_fields`].
    pub fn known_read(&self, i: usize) -> FieldRead<'_> {
        self.plan
            .known_read_with(i, |i| FieldRead::Below(&self.properties[i].1))
    }

    /// Indexes the fields read by name, once the node is complete (a
    /// field its rules select is read as they select it, and whole when
    /// it also has rules below), and notes whether all its rules wait for
    /// an old object.
    pub(super) fn index_reads(&mut self, schema: &Schema) {
        let mut plan = Plan::default();
        // A node read whole plans nothing: `field_read` answers whole.
        if !self.needs_whole() {
            let mut by_name: BTreeMap<String, Read> = BTreeMap::new();
            for (i, (name, _)) in self.properties.iter().enumerate() {
                by_name.insert(name.clone(), Read::Below(i));
            }
            if let SelfReads::Fields(wants) = &self.reads {
                for (field, want) in wants {
                    // A list with no rules below it, of flat objects, may
                    // be kept by column; one with rules below is walked
                    // element by element, which wants the elements; a
                    // field with rules below that the rules here also
                    // select is built whole.
                    let read = match by_name.get(field) {
                        Some(_) => Read::Whole,
                        None => plan.read(schema, field, want),
                    };
                    by_name.insert(field.clone(), read);
                }
            }
            plan.index(schema, by_name);
        }
        self.plan = plan;
        // On CREATE a node may hold transition rules alone, none of which
        // runs (the walk then binds nothing).
        self.waits_for_old = !self.rules.is_empty()
            && self
                .rules
                .iter()
                .all(|r| r.program.uses_old_self() && !r.optional_old_self);
    }
}

#[cfg(test)]
mod tests;
