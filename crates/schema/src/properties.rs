//! The `properties` of a schema node: sorted by name, looked up by name or
//! by position. Compiled rules remember the position of each field they
//! select, so reading `self.spec.replicas` checks one name instead of
//! searching the node. Hand-written rather than a map crate: `BTreeMap` has
//! no positions and `IndexMap` keeps insertion order and cannot be built in
//! a `const` (the shared untyped node is a static).

use super::Schema;

/// A node's properties, sorted by JSON name.
#[derive(Debug, Clone, Default)]
pub struct Properties(Vec<(String, Schema)>);

impl Properties {
    pub const fn new() -> Self {
        Properties(Vec::new())
    }

    /// The position of `name`, if the node declares it.
    pub fn position(&self, name: &str) -> Option<usize> {
        // As the JSON maps look up keys: a few entries in order, word-wise;
        // more by halves (each a `memcmp`).
        if self.0.len() <= 8 {
            self.0
                .iter()
                .position(|(k, _)| celhook_json::same_key(k, name))
        } else {
            self.0.binary_search_by(|(k, _)| k.as_str().cmp(name)).ok()
        }
    }

    /// The schema of `name`.
    pub fn get(&self, name: &str) -> Option<&Schema> {
        self.position(name).map(|i| &self.0[i].1)
    }

    /// The schema of `name` when it is at `position`: one comparison, for
    /// positions a compiled program remembered.
    #[inline(always)]
    pub fn get_at(&self, position: usize, name: &str) -> Option<&Schema> {
        match self.0.get(position) {
            Some((k, s)) if celhook_json::same_key(k, name) => Some(s),
            _ => None,
        }
    }

    /// The schema of `name`, to change it (rules attached after loading).
    pub fn get_mut(&mut self, name: &str) -> Option<&mut Schema> {
        self.position(name).map(|i| &mut self.0[i].1)
    }

    /// Every property's schema, to change them.
    pub fn values_mut(&mut self) -> impl ExactSizeIterator<Item = &mut Schema> {
        self.0.iter_mut().map(|(_, s)| s)
    }

    pub fn contains_key(&self, name: &str) -> bool {
        self.position(name).is_some()
    }

    /// Sets `name`, returning the schema it replaced.
    pub fn insert(&mut self, name: String, schema: Schema) -> Option<Schema> {
        match self.0.binary_search_by(|(k, _)| k.as_str().cmp(&name)) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, schema)),
            Err(i) => {
                self.0.insert(i, (name, schema));
                None
            }
        }
    }

    pub fn remove(&mut self, name: &str) -> Option<Schema> {
        self.position(name).map(|i| self.0.remove(i).1)
    }

    /// The schema of `name`, added by `make` when missing.
    pub fn get_or_insert_with(&mut self, name: &str, make: impl FnOnce() -> Schema) -> &mut Schema {
        let i = match self.0.binary_search_by(|(k, _)| k.as_str().cmp(name)) {
            Ok(i) => i,
            Err(i) => {
                self.0.insert(i, (name.to_owned(), make()));
                i
            }
        };
        &mut self.0[i].1
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Name and schema, by name.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&String, &Schema)> {
        self.0.iter().map(|(k, v)| (k, v))
    }

    pub fn keys(&self) -> impl ExactSizeIterator<Item = &String> {
        self.0.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl ExactSizeIterator<Item = &Schema> {
        self.0.iter().map(|(_, v)| v)
    }
}

impl<'a> IntoIterator for &'a Properties {
    type Item = (&'a String, &'a Schema);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (String, Schema)>,
        fn(&'a (String, Schema)) -> (&'a String, &'a Schema),
    >;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(k, v)| (k, v))
    }
}

impl FromIterator<(String, Schema)> for Properties {
    fn from_iter<I: IntoIterator<Item = (String, Schema)>>(iter: I) -> Self {
        let mut out = Properties::new();
        for (k, v) in iter {
            out.insert(k, v);
        }
        out
    }
}

impl std::ops::Index<&str> for Properties {
    type Output = Schema;
    /// Panics when `name` is missing, as map indexing does (tests only).
    fn index(&self, name: &str) -> &Schema {
        match self.get(name) {
            Some(s) => s,
            None => panic!("no property {name:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(ty: super::super::Type) -> Schema {
        Schema {
            ty,
            ..Schema::default()
        }
    }

    #[test]
    fn stays_sorted_and_finds_by_name_or_position() {
        use super::super::Type;
        let mut p: Properties = [
            ("spec".to_owned(), named(Type::Object)),
            ("apiVersion".to_owned(), named(Type::String)),
            ("kind".to_owned(), named(Type::String)),
        ]
        .into_iter()
        .collect();
        assert_eq!(p.keys().collect::<Vec<_>>(), ["apiVersion", "kind", "spec"]);
        assert_eq!(p.position("kind"), Some(1));
        assert_eq!(p.get("spec").map(|s| s.ty), Some(Type::Object));
        assert!(p.get_at(2, "spec").is_some());
        // A stale or wrong position finds nothing rather than another field.
        assert!(p.get_at(1, "spec").is_none());
        assert!(p.get_at(9, "spec").is_none());
        assert!(p.insert("kind".to_owned(), named(Type::Integer)).is_some());
        assert_eq!(p.len(), 3);
        p.get_or_insert_with("metadata", || named(Type::Object));
        assert_eq!(
            p.keys().collect::<Vec<_>>(),
            ["apiVersion", "kind", "metadata", "spec"]
        );
        assert_eq!(p.remove("apiVersion").map(|s| s.ty), Some(Type::String));
        assert!(!p.contains_key("apiVersion"));
    }
}
