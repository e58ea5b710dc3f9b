//! Decoding `object` and `oldObject` with only the top-level fields the
//! config reads: a CRD's rules rarely look past `spec`, while the object
//! carries `metadata` (managedFields, annotations) and `status`, often
//! most of its bytes. A skipped field is scanned (serde_json still checks
//! it is JSON) but never built into a tree.
//!
//! Hand-written visitors rather than `celhook_json::Value`'s own: which
//! fields to build is only known once the request's kind is.

use std::borrow::Cow;
use std::fmt;

use celhook_json::{Map, Value};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

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
pub(super) struct ObjectSeed<'p, P>(pub(super) Option<&'p P>);

impl<'de, P: RootFields> DeserializeSeed<'de> for ObjectSeed<'_, P> {
    type Value = Option<Value>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Option<Value>, D::Error> {
        let value = match self.0 {
            None => Value::deserialize(d)?,
            Some(plan) => d.deserialize_any(Partial(|field: &str| plan.keep(field)))?,
        };
        Ok((!value.is_null()).then_some(value))
    }
}

/// A JSON value whose object fields are kept as `keep` says; any other
/// value is built whole, so that a wrong shape is reported as before.
struct Partial<F>(F);

impl<'de, F: Fn(&str) -> Keep> Visitor<'de> for Partial<F> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(Key(key)) = map.next_key()? {
            match (self.0)(&key) {
                Keep::Whole => {
                    let value = map.next_value::<Value>()?;
                    out.insert(key.into_owned(), value);
                }
                Keep::Name => {
                    let value = map.next_value_seed(NameOnly)?;
                    out.insert(key.into_owned(), value);
                }
                Keep::Skip => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Value::Object(out))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Value::deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Value, A::Error> {
        Value::deserialize(de::value::SeqAccessDeserializer::new(seq))
    }
}

/// `metadata` with its `name` alone.
struct NameOnly;

impl<'de> DeserializeSeed<'de> for NameOnly {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(Partial(|field: &str| {
            if field == "name" {
                Keep::Whole
            } else {
                Keep::Skip
            }
        }))
    }
}

/// An object key, borrowed from the body unless it has escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;

        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string key")
            }

            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }

            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }

        d.deserialize_str(KeyVisitor)
    }
}
