//! An AdmissionReview's envelope and request as they arrive, decoded in
//! one pass: `object` and `oldObject` are decoded by the plan of the
//! request's kind, which the API server writes before them. A review
//! that puts them first keeps them raw (borrowed from the body) until the
//! kind is read, then decodes them the same way.
//!
//! Hand-written rather than derived: a derived struct cannot pass what an
//! earlier field said to a later field's decoding.

use std::fmt;

use celhook_json::Value;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::partial::{ObjectReads, ObjectSeed};
use super::{GroupVersionKind, WireReview};

/// The request's fields celhook reads. The fields only policies read stay
/// raw, borrowed from the body (no allocation), and are parsed only when
/// the config has policies: see [`super::Details`].
pub(super) struct WireRequest<'de> {
    pub(super) uid: Option<String>,
    pub(super) kind: Option<GroupVersionKind>,
    pub(super) name: Option<String>,
    pub(super) namespace: Option<String>,
    pub(super) operation: Option<String>,
    pub(super) user_info: Option<WireUser<'de>>,
    // A JSON null lands here as None, like an absent field.
    pub(super) object: Option<Value>,
    pub(super) old_object: Option<Value>,
    pub(super) dry_run: Option<bool>,
    pub(super) resource: Option<&'de RawValue>,
    pub(super) sub_resource: Option<&'de RawValue>,
    pub(super) request_kind: Option<&'de RawValue>,
    pub(super) request_resource: Option<&'de RawValue>,
    pub(super) request_sub_resource: Option<&'de RawValue>,
    pub(super) options: Option<&'de RawValue>,
}

/// Of `userInfo`, the name and groups are read (for the denial log and
/// exemptions); uid and extra for the `request` of policies.
#[derive(Deserialize)]
pub(super) struct WireUser<'a> {
    pub(super) username: Option<String>,
    #[serde(default)]
    pub(super) groups: Vec<String>,
    #[serde(borrow)]
    pub(super) uid: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(super) extra: Option<&'a RawValue>,
}

/// The envelope's fields.
#[derive(Clone, Copy, Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum EnvelopeField {
    ApiVersion,
    Kind,
    Request,
    #[serde(other)]
    Other,
}

/// The request's fields.
#[derive(Clone, Copy, Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum Field {
    Uid,
    Kind,
    Name,
    Namespace,
    Operation,
    UserInfo,
    Object,
    OldObject,
    DryRun,
    Resource,
    SubResource,
    RequestKind,
    RequestResource,
    RequestSubResource,
    Options,
    #[serde(other)]
    Other,
}

/// The AdmissionReview envelope, its request decoded by `P`'s plans.
pub(super) struct ReviewSeed<'p, P>(pub(super) &'p P);

impl<'de, P: ObjectReads> DeserializeSeed<'de> for ReviewSeed<'_, P> {
    type Value = WireReview<WireRequest<'de>>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_struct("AdmissionReview", &["apiVersion", "kind", "request"], self)
    }
}

impl<'de, P: ObjectReads> Visitor<'de> for ReviewSeed<'_, P> {
    type Value = WireReview<WireRequest<'de>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("struct WireReview")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut review = WireReview {
            api_version: None,
            kind: None,
            request: None,
        };
        let mut seen = Seen::default();
        while let Some(field) = map.next_key()? {
            if !matches!(field, EnvelopeField::Other) {
                seen.first(
                    field as u32,
                    ["apiVersion", "kind", "request"][field as usize],
                )?;
            }
            match field {
                EnvelopeField::ApiVersion => set(&mut review.api_version, &mut map)?,
                EnvelopeField::Kind => set(&mut review.kind, &mut map)?,
                EnvelopeField::Request => {
                    review.request = map.next_value_seed(OptionalRequest(self.0))?;
                }
                EnvelopeField::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(review)
    }
}

/// `request`, or JSON null.
struct OptionalRequest<'p, P>(&'p P);

impl<'de, P: ObjectReads> DeserializeSeed<'de> for OptionalRequest<'_, P> {
    type Value = Option<WireRequest<'de>>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de, P: ObjectReads> Visitor<'de> for OptionalRequest<'_, P> {
    type Value = Option<WireRequest<'de>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("option")
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_struct("WireRequest", FIELDS, RequestVisitor(self.0))
            .map(Some)
    }
}

const FIELDS: &[&str] = &[
    "uid",
    "kind",
    "name",
    "namespace",
    "operation",
    "userInfo",
    "object",
    "oldObject",
    "dryRun",
    "resource",
    "subResource",
    "requestKind",
    "requestResource",
    "requestSubResource",
    "options",
];

struct RequestVisitor<'p, P>(&'p P);

impl<'de, P: ObjectReads> Visitor<'de> for RequestVisitor<'_, P> {
    type Value = WireRequest<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("struct WireRequest")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<WireRequest<'de>, A::Error> {
        let mut r = WireRequest {
            uid: None,
            kind: None,
            name: None,
            namespace: None,
            operation: None,
            user_info: None,
            object: None,
            old_object: None,
            dry_run: None,
            resource: None,
            sub_resource: None,
            request_kind: None,
            request_resource: None,
            request_sub_resource: None,
            options: None,
        };
        // Objects seen before the kind, decoded once it is known.
        let mut early: [Option<&'de RawValue>; 2] = [None, None];
        let mut seen = Seen::default();
        while let Some(field) = map.next_key()? {
            if !matches!(field, Field::Other) {
                seen.first(field as u32, FIELDS[field as usize])?;
            }
            match field {
                Field::Uid => set(&mut r.uid, &mut map)?,
                Field::Kind => set(&mut r.kind, &mut map)?,
                Field::Name => set(&mut r.name, &mut map)?,
                Field::Namespace => set(&mut r.namespace, &mut map)?,
                Field::Operation => set(&mut r.operation, &mut map)?,
                Field::UserInfo => set(&mut r.user_info, &mut map)?,
                Field::DryRun => set(&mut r.dry_run, &mut map)?,
                Field::Resource => set(&mut r.resource, &mut map)?,
                Field::SubResource => set(&mut r.sub_resource, &mut map)?,
                Field::RequestKind => set(&mut r.request_kind, &mut map)?,
                Field::RequestResource => set(&mut r.request_resource, &mut map)?,
                Field::RequestSubResource => set(&mut r.request_sub_resource, &mut map)?,
                Field::Options => set(&mut r.options, &mut map)?,
                Field::Object | Field::OldObject => {
                    let i = usize::from(matches!(field, Field::OldObject));
                    let value = match &r.kind {
                        Some(kind) => {
                            let plan = self.0.plan(kind);
                            map.next_value_seed(ObjectSeed(plan.as_ref()))?
                        }
                        None => {
                            early[i] = map.next_value()?;
                            continue;
                        }
                    };
                    *if i == 0 {
                        &mut r.object
                    } else {
                        &mut r.old_object
                    } = value;
                }
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        for (i, raw) in early.into_iter().enumerate() {
            let Some(raw) = raw else { continue };
            let plan = r.kind.as_ref().and_then(|kind| self.0.plan(kind));
            let mut de = serde_json::Deserializer::from_str(raw.get());
            let value = ObjectSeed(plan.as_ref())
                .deserialize(&mut de)
                .map_err(de::Error::custom)?;
            *if i == 0 {
                &mut r.object
            } else {
                &mut r.old_object
            } = value;
        }
        Ok(r)
    }
}

/// A field's value.
fn set<'de, T: Deserialize<'de>, A: MapAccess<'de>>(
    slot: &mut Option<T>,
    map: &mut A,
) -> Result<(), A::Error> {
    *slot = map.next_value()?;
    Ok(())
}

/// The fields read so far: a second one is refused, as a derived struct
/// refuses it (a null counts as present).
#[derive(Default)]
struct Seen(u32);

impl Seen {
    fn first<E: de::Error>(&mut self, bit: u32, name: &'static str) -> Result<(), E> {
        if self.0 & (1 << bit) != 0 {
            return Err(E::duplicate_field(name));
        }
        self.0 |= 1 << bit;
        Ok(())
    }
}
