//! One object's conversion with the lossless [`stash`]: there, straight
//! back, the difference kept on the answer. What it gives back of the input
//! ([`Given`]) is what the [`guard`](super::guard) compares the answer with.
//!
//! Most of a stored object's bytes are its metadata (annotations such as
//! kubectl's last-applied configuration, managedFields), and most
//! conversion documents never read or write it. For those the input's
//! metadata is moved into the answer instead of copied, and the guard is
//! told what changed in it (at most the stash annotation) instead of being
//! handed a copy to compare: 9% of a Pizza review's instructions were that
//! copy, its comparisons and its freeing.

use celhook_json::Value as Json;

use super::{keeps_metadata, stash, Conversion, ObjectError};

/// What [`Conversion::convert_keeping`] gives back of its input.
#[derive(Debug, Clone, PartialEq)]
pub enum Given {
    /// The answer is the input itself: it was at the target version.
    Same,
    /// The input as it came.
    Input(Json),
    /// The input's metadata, moved into the answer: no assignment on either
    /// way reads or writes metadata and no stash entry restores into it,
    /// so the answer's metadata is the input's but for the stash
    /// annotation. `kind` is the input's.
    Carried {
        /// The input's `kind`.
        kind: Option<Json>,
        /// Whether the stash annotation (so the annotations) changed.
        annotations_changed: bool,
    },
}

impl Conversion {
    /// [`Conversion::convert`], giving back what the caller's guard needs
    /// of the input (see [`Given`]) without a copy of it.
    pub fn convert_keeping(
        &self,
        mut object: Json,
        from: &str,
        to: &str,
    ) -> Result<(Json, Given), ObjectError> {
        if from == to {
            return Ok((object, Given::Same));
        }
        let raw = stash::take_raw(&mut object);
        let mut stash = match &raw {
            Some(raw) => stash::parse(raw).map_err(ObjectError::Object)?,
            None => stash::Stash::new(),
        };
        let (there, back_route) = (self.route(from, to)?, self.route(to, from)?);
        let entries = stash.remove(self.api_version(to).as_ref());
        let carried = keeps_metadata(there)
            && keeps_metadata(back_route)
            && entries
                .as_deref()
                .is_none_or(|e| !stash::restores_metadata(e));
        let metadata = match object.as_object_mut() {
            Some(map) if carried && map.get("metadata").is_some_and(Json::is_object) => {
                map.remove("metadata")
            }
            _ => None,
        };
        let mut out = self.translate(&object, there)?;
        if let Some(entries) = &entries {
            stash::restore(&mut out, entries);
        }
        // Convert straight back: whatever differs from the input is what
        // this conversion would lose. Without its metadata the input and
        // the way back differ in it nowhere; otherwise, when nothing on the
        // way back reads or writes metadata, that way carries `out`'s over
        // unchanged, and it is lent out of `out` for the trip.
        let lent = match out.as_object_mut() {
            Some(map) if metadata.is_none() && keeps_metadata(back_route) => map.remove("metadata"),
            _ => None,
        };
        let lending = lent.is_some();
        let mut back = self.translate(&out, back_route)?;
        // Into the way back's result for the comparison, then back into
        // `out` (`step` always answers an object).
        if let (Some(lent), Some(map)) = (lent, back.as_object_mut()) {
            map.insert("metadata", lent);
        }
        let lost = stash::diff(&object, &back);
        let returned = lending.then(|| back.as_object_mut()?.remove("metadata"));
        drop(back);
        let carrying = metadata.is_some();
        if let (Some(metadata), Some(map)) = (returned.flatten().or(metadata), out.as_object_mut())
        {
            map.insert("metadata", metadata);
        }
        let from_api = self.api_version(from).into_owned();
        if lost.is_empty() {
            stash.remove(&from_api);
        } else {
            stash.insert(from_api, lost);
        }
        stash::put(&mut out, &stash).map_err(ObjectError::Object)?;
        if carrying {
            let annotations_changed = raw.as_ref() != stash::annotation(&out);
            let kind = object.as_object_mut().and_then(|map| map.remove("kind"));
            return Ok((
                out,
                Given::Carried {
                    kind,
                    annotations_changed,
                },
            ));
        }
        if let Some(raw) = raw {
            stash::give_back(&mut object, raw);
        }
        Ok((out, Given::Input(object)))
    }
}

#[cfg(test)]
mod tests;
