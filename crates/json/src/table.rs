//! An array of flat objects kept by column: every element an object of
//! the same keys, and each key's values of one scalar kind (an int, a
//! string or a boolean in every element).
//!
//! Lists of such objects (a workload's ports, its env) are what rules
//! loop over most, and as a tree each element costs an allocation, an
//! entry per field and a drop. Kept by column, an element costs its
//! values alone, and a loop testing one field reads one typed column.
//! The table means exactly the array it stands for: anything that asks
//! for the elements (`Table::items`, `Value::as_array`) gets them built
//! once, as the parser would have built them.

use std::fmt;
use std::sync::OnceLock;

use crate::{Map, Number, Str, Value};

/// The values of one key, one per element.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Column {
    Int(Vec<i64>),
    Str(Vec<Str>),
    Bool(Vec<bool>),
}

impl Column {
    fn len(&self) -> usize {
        match self {
            Column::Int(v) => v.len(),
            Column::Str(v) => v.len(),
            Column::Bool(v) => v.len(),
        }
    }

    /// Keeps the first `n` values.
    pub(crate) fn truncate(&mut self, n: usize) {
        match self {
            Column::Int(v) => v.truncate(n),
            Column::Str(v) => v.truncate(n),
            Column::Bool(v) => v.truncate(n),
        }
    }

    /// The `i`th value as the tree holds it.
    fn value(&self, i: usize) -> Value {
        match self {
            Column::Int(v) => Value::Number(Number::from(v[i])),
            Column::Str(v) => Value::String(v[i].clone()),
            Column::Bool(v) => Value::Bool(v[i]),
        }
    }
}

/// An array of flat objects, kept by column (see the module's comment).
pub struct Table {
    /// The elements' keys, strictly ascending (as `key_order` sorts), each
    /// written without escapes. This and `columns` are vectors, not boxed
    /// slices: a parsed table's are given room, and shrinking them to fit
    /// was two reallocations a table.
    keys: Vec<Str>,
    /// One per key, each as long as the table.
    columns: Vec<Column>,
    len: usize,
    /// The elements as a tree, built when first asked for.
    items: OnceLock<Vec<Value>>,
}

impl Table {
    /// A table of `columns` under `keys` (ascending, unique); `None` when
    /// their counts or lengths differ, the keys are out of order, or there
    /// is no row (an empty list is a list, whatever keys it was given).
    pub fn new(keys: Vec<Str>, columns: Vec<Column>) -> Option<Table> {
        let len = columns.first().map_or(0, Column::len);
        let fits = keys.len() == columns.len()
            && !keys.is_empty()
            && len > 0
            && columns.iter().all(|c| c.len() == len)
            && keys
                .windows(2)
                .all(|w| crate::key_order(&w[0], &w[1]).is_lt());
        fits.then(|| Table {
            keys,
            columns,
            len,
            items: OnceLock::new(),
        })
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The elements' keys, ascending.
    pub fn keys(&self) -> &[Str] {
        &self.keys
    }

    /// The values of `key`, when the elements have it.
    #[inline]
    pub fn column(&self, key: &str) -> Option<&Column> {
        let at = self.keys.iter().position(|k| crate::same_key(k, key))?;
        self.columns.get(at)
    }

    /// The elements as the tree holds them, built on the first call.
    pub fn items(&self) -> &Vec<Value> {
        self.items.get_or_init(|| self.build())
    }

    /// The elements, taken as a tree.
    pub fn into_items(self) -> Vec<Value> {
        match self.items.into_inner() {
            Some(items) => items,
            None => Table::build_of(&self.keys, &self.columns, self.len),
        }
    }

    fn build(&self) -> Vec<Value> {
        Table::build_of(&self.keys, &self.columns, self.len)
    }

    pub(crate) fn build_of(keys: &[Str], columns: &[Column], len: usize) -> Vec<Value> {
        (0..len)
            .map(|i| {
                let entries = keys
                    .iter()
                    .zip(columns)
                    .map(|(k, c)| (k.clone(), c.value(i)))
                    .collect();
                Value::Object(Map::from_sorted_unique(entries))
            })
            .collect()
    }
}

impl Clone for Table {
    /// Without the built elements: a copy builds its own if asked.
    fn clone(&self) -> Table {
        Table {
            keys: self.keys.clone(),
            columns: self.columns.clone(),
            len: self.len,
            items: OnceLock::new(),
        }
    }
}

impl PartialEq for Table {
    fn eq(&self, other: &Table) -> bool {
        self.len == other.len && self.keys == other.keys && self.columns == other.columns
    }
}

impl Eq for Table {}

impl fmt::Debug for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.items()).finish()
    }
}

#[cfg(test)]
mod tests;
