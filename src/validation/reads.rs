//! What a node's rules read of its value, by field: the plan a request's
//! object is decoded by, so that only those fields are built.

use std::collections::BTreeMap;

use super::{FieldRead, Node, SelfReads};
use crate::schema::{Schema, Type};

/// What a node's rules read of one of its fields, by name (see
/// [`FieldRead`], of which this is the stored form).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Read {
    Whole,
    /// Whole, and a list of flat objects: see [`FieldRead::Rows`].
    Rows,
    /// The property at this index has rules below it.
    Below(usize),
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

impl Node {
    /// What the rules read of `field` of the node's value (with a rule
    /// reading it whole, all of it: see [`Node::reads_whole`]).
    pub fn field_read(&self, field: &str) -> FieldRead<'_> {
        if self.needs_whole() {
            return FieldRead::Whole;
        }
        let found = self
            .reads_by_name
            .binary_search_by(|(name, _)| celhook_json::key_order(name, field))
            .ok()
            .map(|i| self.reads_by_name[i].1);
        self.read_of(found)
    }

    /// The fields a decoder may match without building their keys (see
    /// `known`); none when the node reads its value whole.
    pub fn known_fields(&self) -> &[celhook_json::PlainKey] {
        &self.known
    }

    /// [`Node::field_read`] of the `i`th of [`Node::known_fields`].
    pub fn known_read(&self, i: usize) -> FieldRead<'_> {
        self.read_of(self.known_reads.get(i).copied().flatten())
    }

    fn read_of(&self, read: Option<Read>) -> FieldRead<'_> {
        match read {
            Some(Read::Whole) => FieldRead::Whole,
            Some(Read::Rows) => FieldRead::Rows,
            Some(Read::Below(i)) => FieldRead::Below(&self.properties[i].1),
            None => FieldRead::Nothing,
        }
    }

    /// Indexes the fields read by name, once the node is complete (a
    /// field its rules select reads it whole, whatever is below it), and
    /// notes whether all its rules wait for an old object.
    pub(super) fn index_reads(&mut self, schema: &Schema) {
        let mut by_name: BTreeMap<String, Read> = BTreeMap::new();
        for (i, (name, _)) in self.properties.iter().enumerate() {
            by_name.insert(name.clone(), Read::Below(i));
        }
        if let SelfReads::Fields(fields) = &self.reads {
            for field in fields {
                // A list with no rules below it, of flat objects, may be
                // kept by column; one with rules below is walked element
                // by element, which wants the elements.
                let rows = !by_name.contains_key(field)
                    && schema.properties.get(field.as_str()).is_some_and(flat_rows);
                let read = if rows { Read::Rows } else { Read::Whole };
                by_name.insert(field.clone(), read);
            }
        }
        // A BTreeMap of strings iterates bytewise, as `key_order` sorts.
        let mut known: BTreeMap<&str, Option<Read>> = schema
            .properties
            .keys()
            .map(|name| (name.as_str(), None))
            .collect();
        for (name, read) in &by_name {
            known.insert(name, Some(*read));
        }
        // A node read whole knows none: every key is asked of `field_read`,
        // which keeps it whole, and the requests ask nothing more.
        if !self.needs_whole() {
            (self.known, self.known_reads) = known
                .into_iter()
                .filter_map(|(name, read)| Some((celhook_json::PlainKey::new(name)?, read)))
                .unzip();
        }
        self.reads_by_name = by_name.into_iter().collect();
        // On CREATE a node may hold transition rules alone, none of which
        // runs (the walk then binds nothing).
        self.waits_for_old = !self.rules.is_empty()
            && self
                .rules
                .iter()
                .all(|r| r.program.uses_old_self() && !r.optional_old_self);
    }
}
