//! A ConversionReview read while it is converted: when the head of the
//! review comes as the API server writes it (`kind` and `apiVersion`, in
//! either order: Go's `TypeMeta` puts `kind` first, serde-derived structs
//! such as kube-core's `apiVersion`; then `request` with `uid` and `desiredAPIVersion` before
//! `objects`, the fields of Go's `ConversionRequest` in order), each
//! object is parsed where the parser meets it and handed to the conversion,
//! and the rest of the body is read after the last one. This spares the
//! first pass [`decode_conversion`](super::decode_conversion) makes to find
//! and check the objects (a twelfth of a large Pizza review's instructions).
//!
//! It only ever says yes or no: any other order, any field not as expected
//! and any error ends it (`start` gives `None`, the iterator stops,
//! `finish` says false), and the caller decodes the review again in two
//! passes, which gives every malformed review its answer as before.

use celhook_json::{Parser, Value as Json};

use super::conversion::ConversionReviewVersion;
use super::Review;

/// A review whose objects are being read one by one (see the module).
pub struct OnePass<'a> {
    p: Parser<'a>,
    version: ConversionReviewVersion,
    uid: String,
    desired_api_version: String,
    first: bool,
    state: State,
    objects: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Inside `objects`.
    Reading,
    /// Past the closing bracket of `objects`.
    Read,
    /// Something was not as expected: only two passes can answer.
    Broken,
}

/// Reads the key `want`, or nothing.
fn key(p: &mut Parser<'_>, first: &mut bool, want: &str) -> Option<()> {
    let key = p.next_key(first).ok()??;
    (key == want).then_some(())
}

/// The key `want` with a non-empty string value, or nothing.
fn text(p: &mut Parser<'_>, first: &mut bool, want: &str) -> Option<String> {
    key(p, first, want)?;
    nonempty(p)
}

/// A non-empty string value, or nothing.
fn nonempty(p: &mut Parser<'_>) -> Option<String> {
    let s = p.string("a string").ok()?;
    (!s.is_empty()).then(|| s.into_owned())
}

/// The review's `apiVersion` and `kind`, the first two keys in either
/// order, or nothing.
fn type_meta(p: &mut Parser<'_>, first: &mut bool) -> Option<(String, String)> {
    let key = p.next_key(first).ok()??;
    match &*key {
        "apiVersion" => {
            let api_version = nonempty(p)?;
            Some((api_version, text(p, first, "kind")?))
        }
        "kind" => {
            let kind = nonempty(p)?;
            Some((text(p, first, "apiVersion")?, kind))
        }
        _ => None,
    }
}

/// Reads the rest of an object whose keys `read` were read: its other keys
/// skipped, a repeat of one of them refused.
fn rest(p: &mut Parser<'_>, read: &[&str]) -> bool {
    let mut first = false;
    loop {
        match p.next_key(&mut first) {
            Ok(Some(key)) if read.contains(&&*key) => return false,
            Ok(Some(_)) => {
                if p.skip().is_err() {
                    return false;
                }
            }
            Ok(None) => return true,
            Err(_) => return false,
        }
    }
}

impl<'a> OnePass<'a> {
    /// Reads the review's head up to its first object; `None` when it is
    /// not as the API server writes it.
    pub fn start(body: &'a [u8]) -> Option<OnePass<'a>> {
        let mut p = Parser::from_slice(body).ok()?;
        p.begin_object("struct WireReview").ok()?;
        let mut first = true;
        let (api_version, kind) = type_meta(&mut p, &mut first)?;
        let version = Review::Conversion
            .expect_header(
                Some(&api_version),
                Some(kind),
                ConversionReviewVersion::V1,
                ConversionReviewVersion::V1Beta1,
            )
            .ok()?;
        key(&mut p, &mut first, "request")?;
        p.begin_object("struct WireRequest").ok()?;
        let mut first = true;
        let uid = text(&mut p, &mut first, "uid")?;
        let desired_api_version = text(&mut p, &mut first, "desiredAPIVersion")?;
        key(&mut p, &mut first, "objects")?;
        p.begin_array("a sequence").ok()?;
        Some(OnePass {
            p,
            version,
            uid,
            desired_api_version,
            first: true,
            state: State::Reading,
            objects: 0,
        })
    }

    /// The review's apiVersion.
    pub fn version(&self) -> ConversionReviewVersion {
        self.version
    }

    /// `request.uid`.
    pub fn uid(&self) -> &str {
        &self.uid
    }

    /// `request.desiredAPIVersion`.
    pub fn desired_api_version(&self) -> &str {
        &self.desired_api_version
    }

    /// Reads the rest of the body: the objects not yet read (checked, not
    /// built), then the rest of the request and of the review. The number
    /// of objects when the whole review is one two passes would accept as
    /// well, else `None`.
    pub fn finish(mut self) -> Option<usize> {
        while self.state == State::Reading {
            if self.element()? {
                self.p.skip().ok()?;
                self.objects += 1;
            }
        }
        if self.state == State::Broken
            || !rest(&mut self.p, &["uid", "desiredAPIVersion", "objects"])
            || !rest(&mut self.p, &["apiVersion", "kind", "request"])
        {
            return None;
        }
        self.p.end().ok()?;
        Some(self.objects)
    }

    /// Moves to the next element of `objects`: true when it is an object,
    /// false past the last; `None` when broken.
    fn element(&mut self) -> Option<bool> {
        match self.p.next_element(&mut self.first) {
            Ok(true) if self.p.peek() == Some(b'{') => Some(true),
            Ok(false) => {
                self.state = State::Read;
                Some(false)
            }
            _ => {
                self.state = State::Broken;
                None
            }
        }
    }
}

impl Iterator for OnePass<'_> {
    type Item = Result<Json, String>;

    /// The next object, parsed. Ends early, without an error, when the
    /// review is broken: `finish` then says so.
    fn next(&mut self) -> Option<Self::Item> {
        if self.state != State::Reading || !self.element()? {
            return None;
        }
        match self.p.value() {
            Ok(object) => {
                self.objects += 1;
                Some(Ok(object))
            }
            Err(_) => {
                self.state = State::Broken;
                None
            }
        }
    }
}

#[cfg(test)]
mod tests;
