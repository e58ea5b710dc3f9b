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
    /// A string or bytes literal: its size is characters (or bytes).
    pub text: bool,
    /// Of a list literal: its elements' size (the rule's node's, as the
    /// size estimator resolves their path), and whether every element is
    /// a string or bytes value.
    pub items: Option<(f64, bool)>,
    /// How an equality with the value is priced.
    pub compared: Compared,
    /// An optional holding a value of this shape.
    pub optional: bool,
    /// Out of the Kubernetes size estimator's reach: a map's value read
    /// as a field (`m.key`, whose path it cannot follow) and all below
    /// it. cel-go then sizes a scalar by its type (1, not the 0 the size
    /// estimator gives a scalar field). It leaves anything else unsized;
    /// celhook sizes that by its schema (see docs/known-differences.md).
    pub pathless: bool,
    /// A loop variable over a value with no schema path (a literal, a
    /// call's or a loop's result): its path is the element step alone,
    /// which the Kubernetes size estimator resolves to the rule's own
    /// node, so it has that node's size. (A field of it would resolve
    /// against that node's fields too; celhook sizes a field by the
    /// element's schema instead, see docs/known-differences.md.)
    pub via_root: bool,
}

/// How cel-go's estimator (with the Kubernetes one) prices an equality
/// with a value: by the smaller side's size, or, for a value it cannot
/// size, at the largest size; from 1.32 the Kubernetes estimator prices
/// equality of its own types itself (before that they are unsized).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compared {
    /// Strings, bytes, lists, maps, scalars.
    Size,
    /// A type value.
    Unsized,
    /// Quantity, IP, CIDR, semver: 1.
    Unit,
    /// A named format: the longest format name's size.
    Format,
    /// A URL: the right-hand URL's size.
    Url,
}

impl<'s> Shape<'s> {
    pub fn of(schema: &'s Schema) -> Self {
        Shape {
            schema: Some(schema),
            ..Shape::sized(max_size(schema))
        }
    }

    pub fn sized(size: f64) -> Self {
        Shape {
            schema: None,
            size,
            bytes: false,
            text: false,
            items: None,
            compared: Compared::Size,
            optional: false,
            pathless: false,
            via_root: false,
        }
    }

    /// A value of `schema` the Kubernetes size estimator cannot reach.
    pub fn pathless(schema: &'s Schema) -> Self {
        let mut shape = Shape::of(schema);
        shape.pathless = true;
        if is_scalar_schema(schema) {
            shape.size = 1.0;
        }
        shape
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

    /// Whether the value is a string or bytes (a literal, or a field typed
    /// so; a date, date-time or duration field is not).
    pub fn is_text(&self) -> bool {
        self.text
            || self.schema.is_some_and(|s| {
                s.ty == Type::String
                    && !s.int_or_string
                    && !matches!(s.format, Format::Date | Format::DateTime | Format::Duration)
            })
    }

    /// The Kubernetes lists library's estimate of one pass over a list:
    /// 1 per element, plus a tenth of each element's size when the
    /// elements are strings or bytes.
    pub fn list_traversal(&self) -> f64 {
        let per_item = match (self.items, self.schema) {
            (Some((size, true)), _) => 1.0 + (size * 0.1).ceil(),
            (Some(_), _) => 1.0,
            (None, Some(s)) if s.ty == Type::Array => {
                let item = self.element(false);
                if item.is_text() {
                    1.0 + (item.size * 0.1).ceil()
                } else {
                    1.0
                }
            }
            _ => 1.0,
        };
        self.size * per_item
    }

    /// The shape of elements (list items, map keys for iteration).
    pub fn element(&self, keys: bool) -> Shape<'s> {
        let element = self.element_of_schema(keys);
        match element.schema {
            Some(s) if self.pathless => Shape::pathless(s),
            _ => element,
        }
    }

    fn element_of_schema(&self, keys: bool) -> Shape<'s> {
        // A list literal's elements: its largest element's size.
        if let (Some((size, text)), None) = (self.items, self.schema) {
            let mut element = Shape::sized(size);
            element.text = text;
            return element;
        }
        match self.schema {
            Some(s) if s.ty == Type::Array => {
                s.items.as_deref().map_or_else(Shape::unknown, Shape::of)
            }
            // The Kubernetes size estimator gives a map's keys no size.
            Some(s) if keys && s.is_map() => {
                let mut key = Shape::sized(0.0);
                key.text = true;
                key
            }
            Some(s) => s.element().map_or_else(Shape::unknown, Shape::of),
            None => Shape::unknown(),
        }
    }
}

/// A node whose values cel-go sizes by their type: a number, a boolean,
/// a timestamp or a duration.
pub fn is_scalar_schema(s: &Schema) -> bool {
    (matches!(s.ty, Type::Integer | Type::Number | Type::Boolean) && !s.int_or_string)
        || (s.ty == Type::String
            && matches!(s.format, Format::Date | Format::DateTime | Format::Duration))
}

/// Smallest JSON text a value of this node can have: how many of them fit
/// in a request bounds unbounded lists and maps.
pub fn min_serialized_size(s: &Schema) -> f64 {
    if s.int_or_string {
        return 1.0;
    }
    match s.ty {
        // The API server's smallest JSON of each string format: a date
        // `"YYYY-MM-DD"`, a date-time with its `T` and seconds, a duration
        // `"0"`.
        Type::String => match s.format {
            Format::Date => 12.0,
            Format::DateTime => 21.0,
            Format::Duration => 3.0,
            _ => 2.0,
        },
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
        // Formats first, as the API server sizes them: a date, a date-time
        // and a duration by their longest JSON whatever `maxLength` says;
        // bytes by `maxLength` itself.
        Type::String => match (&s.format, s.max_length) {
            (Format::Date, _) => 12.0,
            (Format::DateTime | Format::Duration, _) => 32.0,
            (Format::Byte, Some(n)) => n.max(0) as f64,
            (Format::Byte, None) => MAX_REQUEST_BYTES - 2.0,
            (_, Some(n)) => n.max(0) as f64 * 4.0,
            _ if s.max_enum_bytes.is_some() => s.max_enum_bytes.unwrap_or_default() as f64,
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
        // `maxLength` bounds an int-or-string from 1.34 (celhook applies it
        // at every version).
        _ if s.int_or_string => s
            .max_length
            .map_or(MAX_REQUEST_BYTES - 2.0, |n| n.max(0) as f64 * 4.0),
        _ => 1.0,
    }
}
