//! What the cost estimator knows of a value before any request: the schema
//! node typing it and the largest size it can have, bounded by `maxLength`,
//! `maxItems`, `maxProperties`, else by what fits in the API server's
//! largest request. Function rows estimate their cost from these shapes.

use celhook_schema::{Format, Schema, Type};

/// The API server's largest request body: every size bound derives from it.
pub const MAX_REQUEST_BYTES: f64 = 3.0 * 1024.0 * 1024.0;

/// What the estimator knows of a value: the schema node typing it, if any,
/// and the largest size it can have (characters, items or entries).
#[derive(Clone, Copy)]
pub struct Shape<'s> {
    pub schema: Option<&'s Schema>,
    pub size: f64,
    /// Set by the estimator on a call's arguments: the argument is bytes
    /// (a literal, a `bytes()` call or a `format: byte` field).
    /// `string()` of bytes has a size, of anything else none.
    pub bytes: bool,
}

impl<'s> Shape<'s> {
    pub fn of(schema: &'s Schema) -> Self {
        Shape {
            schema: Some(schema),
            size: max_size(schema),
            bytes: false,
        }
    }

    pub fn sized(size: f64) -> Self {
        Shape {
            schema: None,
            size,
            bytes: false,
        }
    }

    pub fn unknown() -> Self {
        Shape::sized(MAX_REQUEST_BYTES)
    }

    /// The result of a call cel-go gives no size to (a string or list it
    /// cannot bound from the arguments): its largest unsigned integer, so
    /// that concatenating it prices beyond any limit, as there.
    pub fn unbounded() -> Self {
        Shape::sized(u64::MAX as f64)
    }

    /// The shape of elements (list items, map keys for iteration).
    pub fn element(&self, keys: bool) -> Shape<'s> {
        match self.schema {
            Some(s) if s.ty == Type::Array => {
                s.items.as_deref().map_or_else(Shape::unknown, Shape::of)
            }
            Some(s) if keys && s.is_map() => Shape::sized(MAX_REQUEST_BYTES),
            Some(s) => s.element().map_or_else(Shape::unknown, Shape::of),
            None => Shape::unknown(),
        }
    }
}

/// Smallest JSON text a value of this node can have: how many of them fit
/// in a request bounds unbounded lists and maps.
pub fn min_serialized_size(s: &Schema) -> f64 {
    if s.int_or_string {
        return 1.0;
    }
    match s.ty {
        Type::String => 2.0,
        Type::Integer | Type::Number => 1.0,
        Type::Boolean => 4.0,
        Type::Array => 2.0,
        // `{}` plus every required property: its name in quotes, a colon,
        // a comma and its own smallest value.
        Type::Object => {
            2.0 + s
                .required
                .iter()
                .filter_map(|name| s.property(name).map(|p| (name, p)))
                .map(|(name, p)| min_serialized_size(p) + name.len() as f64 + 4.0)
                .sum::<f64>()
        }
        Type::Any => 1.0,
    }
}

/// The largest size (characters, items, entries) a value of `s` can have.
pub fn max_size(s: &Schema) -> f64 {
    match s.ty {
        // In bytes, as the API server sizes strings: maxLength counts code
        // points, each up to 4 bytes; an enum bounds by its longest value.
        Type::String => match (&s.format, s.max_length) {
            _ if s.max_enum_bytes.is_some() => s.max_enum_bytes.unwrap_or_default() as f64,
            (_, Some(n)) => n as f64 * 4.0,
            (Format::Date, _) => 10.0,
            (Format::DateTime, _) => 64.0,
            (Format::Duration, _) => 64.0,
            _ => MAX_REQUEST_BYTES - 2.0,
        },
        Type::Array => match s.max_items {
            Some(n) => n as f64,
            None => {
                let item = s.items.as_deref().map_or(1.0, min_serialized_size);
                ((MAX_REQUEST_BYTES - 2.0) / (item + 1.0)).floor()
            }
        },
        Type::Object => match (s.max_properties, s.additional_properties.as_deref()) {
            (Some(n), _) => n as f64,
            (None, Some(v)) => ((MAX_REQUEST_BYTES - 2.0) / (min_serialized_size(v) + 6.0)).floor(),
            (None, None) => s.properties.len() as f64,
        },
        _ if s.int_or_string => MAX_REQUEST_BYTES - 2.0,
        _ => 1.0,
    }
}
