//! What a node's rules read of its value, by field: the plan a request's
//! object is decoded by, so that only those fields are built.

use std::collections::BTreeMap;

use super::{FieldRead, Node, SelfReads};
use crate::schema::Schema;

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

    fn read_of(&self, read: Option<Option<usize>>) -> FieldRead<'_> {
        match read {
            Some(None) => FieldRead::Whole,
            Some(Some(i)) => FieldRead::Below(&self.properties[i].1),
            None => FieldRead::Nothing,
        }
    }

    /// Indexes the fields read by name, once the node is complete (a
    /// field its rules select reads it whole, whatever is below it), and
    /// notes whether all its rules wait for an old object.
    pub(super) fn index_reads(&mut self, schema: &Schema) {
        let mut by_name: BTreeMap<String, Option<usize>> = BTreeMap::new();
        for (i, (name, _)) in self.properties.iter().enumerate() {
            by_name.insert(name.clone(), Some(i));
        }
        if let SelfReads::Fields(fields) = &self.reads {
            for field in fields {
                by_name.insert(field.clone(), None);
            }
        }
        // A BTreeMap of strings iterates bytewise, as `key_order` sorts.
        let mut known: BTreeMap<&str, Option<Option<usize>>> = schema
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
