//! What lists and maps answer: their size, elements, entries and
//! lookups, over the request's JSON (typed by its schema node), a table's
//! columns or computed values alike.

use super::*;
use celhook_schema::ListType;
use compare::key_equals;

impl<'a> List<'a> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            List::Json { items, .. } => items.len(),
            List::Table { table, .. } => table.len(),
            List::Owned(v) => v.len(),
            List::Const(c) => c.len(),
        }
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A JSON list's elements and schema node; a table's elements are
    /// built for it (once a request).
    #[inline]
    pub fn json(&self) -> Option<(&'a [Json], &'a Schema)> {
        match *self {
            List::Json { items, schema } => Some((items, schema)),
            List::Table { table, schema } => Some((table.items(), schema)),
            List::Owned(_) | List::Const(_) => None,
        }
    }

    /// The element at `i`, if in range.
    pub fn get(&self, i: usize) -> Option<Value<'a>> {
        match self {
            List::Table { .. } => {
                let (items, schema) = self.json()?;
                List::Json { items, schema }.get(i)
            }
            List::Json { items, schema } => {
                let item = items.get(i)?;
                Some(match schema.items.as_deref() {
                    Some(s) => Value::from_json(item, s),
                    None => Value::from_json(item, &ANY),
                })
            }
            List::Owned(v) => v.get(i).cloned(),
            List::Const(c) => c.get(i).map(crate::value::constant),
        }
    }

    /// The elements, in order.
    pub fn iter(&self) -> Elements<'a, '_> {
        match self {
            // The element schema is looked up once, not per element.
            List::Json { .. } | List::Table { .. } => match self.json() {
                Some((items, schema)) => Elements::Json {
                    items: items.iter(),
                    schema: schema.items.as_deref().unwrap_or(&ANY),
                },
                None => Elements::Const([].iter()),
            },
            List::Owned(v) => Elements::Owned(v.iter()),
            List::Const(c) => Elements::Const(c.iter()),
        }
    }

    /// The list type the schema gives it (computed lists are atomic).
    pub fn list_type(&self) -> (ListType, &[String]) {
        match self {
            List::Json { schema, .. } | List::Table { schema, .. } => {
                (schema.list_type, &schema.list_map_keys)
            }
            List::Owned(_) | List::Const(_) => (ListType::Atomic, &[]),
        }
    }
}

/// The elements of a [`List`], in order.
pub enum Elements<'a, 'l> {
    Json {
        items: std::slice::Iter<'a, Json>,
        schema: &'a Schema,
    },
    Owned(std::slice::Iter<'l, Value<'a>>),
    Const(std::slice::Iter<'a, crate::value::Const>),
}

impl<'a> Iterator for Elements<'a, '_> {
    type Item = Value<'a>;

    #[inline]
    fn next(&mut self) -> Option<Value<'a>> {
        match self {
            Elements::Json { items, schema } => items.next().map(|j| Value::from_json(j, schema)),
            Elements::Owned(v) => v.next().cloned(),
            Elements::Const(c) => c.next().map(crate::value::constant),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            Elements::Json { items, .. } => items.size_hint(),
            Elements::Owned(v) => v.size_hint(),
            Elements::Const(c) => c.size_hint(),
        }
    }
}

impl<'a> Map<'a> {
    /// [`Map::get_str`] for a field the checker found at `position` of
    /// the schema's properties: the schema is not searched when the name
    /// is there.
    #[inline(always)]
    pub fn get_field(&self, key: &str, position: Option<u32>) -> Option<Value<'a>> {
        match self.at_position(key, position) {
            Some(found) => match found? {
                (Json::Null, _) => None,
                (v, child) => Some(Value::from_json(v, child)),
            },
            None => self.get_str(key),
        }
    }

    /// The JSON object [`Map::get_field`] finds, with its schema node;
    /// `None` where it finds no object (a missing or null field, or a
    /// value of another type). Where the position applies, straight from
    /// the JSON, without making the field's value and dropping it again.
    #[inline(always)]
    pub(crate) fn get_object(
        &self,
        key: &str,
        position: Option<u32>,
    ) -> Option<(&'a celhook_json::Map, &'a Schema)> {
        match self.at_position(key, position) {
            Some(found) => match found? {
                (Json::Object(obj), schema) => Some((obj, schema)),
                _ => None,
            },
            None => match self.get_str(key)? {
                Value::Map(Map::Json { obj, schema }) => Some((obj, schema)),
                _ => None,
            },
        }
    }

    /// A JSON object's property `key` looked up at the schema position
    /// the checker found it at: `Some` with its JSON and schema node, or
    /// `Some(None)` when the object lacks it; `None` where the position
    /// does not apply (no position, another schema node, a map), and
    /// [`Map::get_str`] answers.
    #[inline(always)]
    pub(crate) fn at_position(
        &self,
        key: &str,
        position: Option<u32>,
    ) -> Option<Option<(&'a Json, &'a Schema)>> {
        let (Map::Json { obj, schema }, Some(p)) = (self, position) else {
            return None;
        };
        if schema.additional_properties.is_some() {
            return None;
        }
        let child = schema.properties.get_at(p as usize, key)?;
        Some(obj.get_hinted(key, p as usize).map(|v| (v, child)))
    }

    /// Looks a string key up: a map key, or an object field (by its JSON
    /// name). Null fields of objects count as absent, and object fields the
    /// schema does not declare are out of reach.
    pub fn get_str(&self, key: &str) -> Option<Value<'a>> {
        match self {
            Map::Json { obj, schema } => {
                let v = json_field(obj, key)?;
                if let Some(s) = schema.additional_properties.as_deref() {
                    return Some(Value::from_json(v, s));
                }
                // Untyped data is a map: its null entries are values.
                if schema.ty == Type::Any && schema.properties.is_empty() {
                    return Some(Value::from_json(v, &ANY));
                }
                if v.is_null() {
                    return None;
                }
                match schema.property(key) {
                    Some(s) => Some(Value::from_json(v, s)),
                    None if schema.ty == Type::Any && schema.properties.is_empty() => {
                        Some(Value::from_json(v, &ANY))
                    }
                    None => None,
                }
            }
            Map::Owned(entries) => entries
                .iter()
                .find(|(k, _)| matches!(k, Value::Str(s) if &**s == key))
                .map(|(_, v)| v.clone()),
        }
    }

    /// Looks any key up, with CEL's numeric key equivalence (`1`, `1u` and
    /// `1.0` are the same key).
    pub fn get(&self, key: &Value<'_>) -> Option<Value<'a>> {
        match (self, key) {
            (_, Value::Str(s)) => self.get_str(s),
            (Map::Json { .. }, _) => None,
            (Map::Owned(entries), _) => entries
                .iter()
                .find(|(k, _)| key_equals(k, key))
                .map(|(_, v)| v.clone()),
        }
    }

    /// Number of entries (for objects: fields set to a non-null value).
    pub fn len(&self) -> usize {
        match self {
            Map::Json { obj, schema } if !is_object(schema) => obj.len(),
            Map::Json { .. } => self.keys().count(),
            Map::Owned(entries) => entries.len(),
        }
    }

    /// Entries as stored, null and unknown fields of an object included:
    /// what the API server's values (and so cel-go's cost tracker) size an
    /// object by.
    pub fn stored_len(&self) -> usize {
        match self {
            Map::Json { obj, .. } => obj.len(),
            Map::Owned(entries) => entries.len(),
        }
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The keys, in the map's order.
    pub fn keys(&self) -> Box<dyn Iterator<Item = Value<'a>> + '_> {
        match self {
            Map::Json { obj, schema } => {
                let is_map = !is_object(schema);
                Box::new(
                    obj.iter()
                        .filter(move |(k, v)| {
                            is_map || (!v.is_null() && schema.property(k).is_some())
                        })
                        .map(|(k, _)| Value::Str(Str::Borrowed(k.as_str()))),
                )
            }
            Map::Owned(entries) => Box::new(entries.iter().map(|(k, _)| k.clone())),
        }
    }

    /// The entries, in the map's order.
    pub fn entries(&self) -> Vec<(Value<'a>, Value<'a>)> {
        match self {
            Map::Json { .. } => self
                .keys()
                .filter_map(|k| {
                    let v = match &k {
                        Value::Str(s) => self.get_str(s)?,
                        _ => return None,
                    };
                    Some((k, v))
                })
                .collect(),
            Map::Owned(entries) => entries.as_ref().clone(),
        }
    }
}
