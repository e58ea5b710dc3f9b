//! An AdmissionReview's envelope and request as they arrive, read in one
//! pass over the body with celhook's JSON parser: `object` and
//! `oldObject` are built by the plan of the request's kind, which the API
//! server writes before them. A review that puts them first keeps their
//! text (a slice of the body) until the kind is read, then builds them the
//! same way.
//!
//! Read field by field rather than derived: a derived struct cannot pass
//! what an earlier field said to a later field's decoding, and the parser
//! builds the objects without serde's visitors (see `celhook_json`).
//! The texts of shape errors are serde's ("invalid type: integer `42`,
//! expected a string", "duplicate field `kind`"), as before.

use std::borrow::Cow;

use celhook_json::{Error, Parser, Value};

use super::partial::{object_value, ObjectReads};
use super::{GroupVersionKind, WireReview};

/// The request's fields celhook reads. The fields only policies read stay
/// as text, slices of the body (no allocation), and are parsed only when
/// the config has policies: see [`super::Details`].
#[derive(Default)]
pub(super) struct WireRequest<'a> {
    pub(super) uid: Option<String>,
    pub(super) kind: Option<GroupVersionKind>,
    pub(super) name: Option<String>,
    pub(super) namespace: Option<String>,
    pub(super) operation: Option<String>,
    pub(super) user_info: Option<WireUser<'a>>,
    // A JSON null lands here as None, like an absent field.
    pub(super) object: Option<Value>,
    pub(super) old_object: Option<Value>,
    pub(super) dry_run: Option<bool>,
    pub(super) resource: Option<&'a str>,
    pub(super) sub_resource: Option<&'a str>,
    pub(super) request_kind: Option<&'a str>,
    pub(super) request_resource: Option<&'a str>,
    pub(super) request_sub_resource: Option<&'a str>,
    pub(super) options: Option<&'a str>,
}

/// Of `userInfo`, the name and groups are read (for the denial log and
/// exemptions); uid and extra, as text, for the `request` of policies.
#[derive(Default)]
pub(super) struct WireUser<'a> {
    pub(super) username: Option<String>,
    pub(super) groups: Vec<String>,
    pub(super) uid: Option<&'a str>,
    pub(super) extra: Option<&'a str>,
}

/// The request's fields, in the order of [`Seen`]'s bits.
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

/// Reads the AdmissionReview envelope, its request decoded by `P`'s plans.
pub(super) fn review<'a, P: ObjectReads>(
    p: &mut Parser<'a>,
    reads: &P,
) -> Result<WireReview<WireRequest<'a>>, Error> {
    envelope(p, |p| request(p, reads))
}

/// A review's envelope (either review): `apiVersion`, `kind` and
/// `request`, read by `request` unless null.
pub(super) fn envelope<'a, R>(
    p: &mut Parser<'a>,
    mut request: impl FnMut(&mut Parser<'a>) -> Result<R, Error>,
) -> Result<WireReview<R>, Error> {
    let mut review = WireReview {
        api_version: None,
        kind: None,
        request: None,
    };
    fields(
        p,
        "struct WireReview",
        &["apiVersion", "kind", "request"],
        |p, field| {
            match field {
                0 => review.api_version = string(p)?,
                1 => review.kind = string(p)?,
                _ if p.null()? => review.request = None,
                _ => review.request = Some(request(p)?),
            }
            Ok(())
        },
    )?;
    Ok(review)
}

/// Reads an object of which the fields `names` are read, by `read` with
/// the field's index, and the others skipped. A field read twice is
/// refused, as a derived struct refuses it (a null counts as present).
pub(super) fn fields<'a>(
    p: &mut Parser<'a>,
    expected: &str,
    names: &[&str],
    mut read: impl FnMut(&mut Parser<'a>, usize) -> Result<(), Error>,
) -> Result<(), Error> {
    let mut seen = 0u32;
    p.begin_object(expected)?;
    let mut first = true;
    while let Some(key) = p.next_key(&mut first)? {
        let Some(field) = names.iter().position(|name| *name == &*key) else {
            p.skip()?;
            continue;
        };
        if seen & (1 << field) != 0 {
            return Err(p.data_error(Cow::Owned(format!("duplicate field `{}`", names[field]))));
        }
        seen |= 1 << field;
        read(p, field)?;
    }
    Ok(())
}

fn request<'a, P: ObjectReads>(p: &mut Parser<'a>, reads: &P) -> Result<WireRequest<'a>, Error> {
    let mut r = WireRequest::default();
    // Objects seen before the kind, built once it is known (with the
    // nesting they were found at, which counts against the limit).
    let mut early: [Option<(&'a str, u8)>; 2] = [None, None];
    fields(p, "struct WireRequest", FIELDS, |p, field| {
        match FIELDS[field] {
            "uid" => r.uid = string(p)?,
            "kind" => r.kind = group_version_kind(p)?,
            "name" => r.name = string(p)?,
            "namespace" => r.namespace = string(p)?,
            "operation" => r.operation = string(p)?,
            "userInfo" => r.user_info = user(p)?,
            "dryRun" => {
                r.dry_run = if p.null()? {
                    None
                } else {
                    Some(p.boolean("a boolean")?)
                }
            }
            "resource" => r.resource = Some(p.raw()?),
            "subResource" => r.sub_resource = Some(p.raw()?),
            "requestKind" => r.request_kind = Some(p.raw()?),
            "requestResource" => r.request_resource = Some(p.raw()?),
            "requestSubResource" => r.request_sub_resource = Some(p.raw()?),
            "options" => r.options = Some(p.raw()?),
            object => {
                let i = usize::from(object == "oldObject");
                let creates = r.creates();
                match &r.kind {
                    Some(kind) => {
                        *r.object_mut(i) = object_value(p, reads.plan(kind, creates).as_ref())?
                    }
                    None => {
                        let depth = p.depth();
                        early[i] = Some((p.raw()?, depth));
                    }
                }
            }
        }
        Ok(())
    })?;
    for (i, text) in early.into_iter().enumerate() {
        let Some((text, depth)) = text else { continue };
        let plan = r
            .kind
            .as_ref()
            .and_then(|kind| reads.plan(kind, r.creates()));
        let mut again = Parser::new(text).at_depth(depth);
        *r.object_mut(i) = object_value(&mut again, plan.as_ref())?;
    }
    Ok(r)
}

impl WireRequest<'_> {
    /// The request is a CREATE, as far as read.
    fn creates(&self) -> bool {
        self.operation.as_deref() == Some("CREATE")
    }

    /// `object` (0) or `oldObject` (1).
    fn object_mut(&mut self, i: usize) -> &mut Option<Value> {
        if i == 0 {
            &mut self.object
        } else {
            &mut self.old_object
        }
    }
}

/// A string field; JSON null is `None`.
pub(super) fn string(p: &mut Parser<'_>) -> Result<Option<String>, Error> {
    if p.null()? {
        return Ok(None);
    }
    p.string("a string").map(|s| Some(s.into_owned()))
}

/// `request.kind`: group, version and kind, each empty when absent.
fn group_version_kind(p: &mut Parser<'_>) -> Result<Option<GroupVersionKind>, Error> {
    if p.null()? {
        return Ok(None);
    }
    let mut gvk = GroupVersionKind::default();
    let names = ["group", "version", "kind"];
    fields(p, "struct GroupVersionKind", &names, |p, field| {
        let slot = [&mut gvk.group, &mut gvk.version, &mut gvk.kind];
        *slot.into_iter().nth(field).expect("a field") = p.string("a string")?.into_owned();
        Ok(())
    })?;
    Ok(Some(gvk))
}

fn user<'a>(p: &mut Parser<'a>) -> Result<Option<WireUser<'a>>, Error> {
    if p.null()? {
        return Ok(None);
    }
    let mut user = WireUser::default();
    let names = ["username", "groups", "uid", "extra"];
    fields(p, "struct WireUser", &names, |p, field| {
        match field {
            0 => user.username = string(p)?,
            1 => {
                p.begin_array("a sequence")?;
                let mut first = true;
                while p.next_element(&mut first)? {
                    user.groups.push(p.string("a string")?.into_owned());
                }
            }
            2 => user.uid = Some(p.raw()?),
            _ => user.extra = Some(p.raw()?),
        }
        Ok(())
    })?;
    Ok(Some(user))
}
