//! ConversionReview wire types (apiextensions.k8s.io v1 and v1beta1):
//! decoding the API server's request and encoding our answer in the same
//! apiVersion.
//!
//! Why not kube-core's `ConversionReview`: it reads apiVersion and kind
//! through `#[serde(flatten)]`, which makes serde buffer the whole review
//! (tens of MiB for a large list) before decoding it again, it decodes every
//! object up front, and it accepts any apiVersion. Here the objects are only
//! located in the body (slices of it, checked as JSON) and each is parsed
//! when its turn to be converted comes, so a large list is never held
//! parsed. The envelope is read field by field with celhook-json's parser,
//! with serde's texts for shape errors, as the AdmissionReview's.

use celhook_json::{Error, Parser, Value as Json};
use serde::Serialize;

use super::request::{envelope, fields, string};
use super::{Review, ReviewError, WireAnswer};

/// apiVersion string of apiextensions.k8s.io/v1 reviews.
pub const CONVERSION_V1: &str = "apiextensions.k8s.io/v1";
/// apiVersion string of apiextensions.k8s.io/v1beta1 reviews.
pub const CONVERSION_V1BETA1: &str = "apiextensions.k8s.io/v1beta1";
/// kind of a ConversionReview.
pub const CONVERSION_REVIEW_KIND: &str = "ConversionReview";

/// The apiVersion a ConversionReview arrived in; the answer uses the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConversionReviewVersion {
    /// apiextensions.k8s.io/v1
    V1,
    /// apiextensions.k8s.io/v1beta1
    V1Beta1,
}

impl ConversionReviewVersion {
    /// The apiVersion string this version is sent as.
    pub fn api_version(self) -> &'static str {
        match self {
            ConversionReviewVersion::V1 => CONVERSION_V1,
            ConversionReviewVersion::V1Beta1 => CONVERSION_V1BETA1,
        }
    }
}

/// The fields of `request` that celhook reads, borrowing the body.
#[derive(Debug, Clone)]
pub struct ConversionRequest<'a> {
    /// `request.uid`, echoed in the answer.
    pub uid: String,
    /// `request.desiredAPIVersion`, `group/version`.
    pub desired_api_version: String,
    /// `request.objects`, each a JSON object's text, not yet parsed.
    pub objects: Vec<&'a str>,
}

impl ConversionRequest<'_> {
    /// The objects, each parsed when the iterator reaches it.
    pub fn parsed_objects(&self) -> impl Iterator<Item = Result<Json, String>> + '_ {
        self.objects.iter().map(|raw| {
            celhook_json::from_str(raw).map_err(|e| format!("cannot parse the object: {e}"))
        })
    }
}

#[derive(Default)]
struct WireRequest<'a> {
    uid: Option<String>,
    desired_api_version: Option<String>,
    objects: Option<Vec<&'a str>>,
}

/// Decodes a ConversionReview body, parsing it once.
pub fn decode_conversion(
    body: &[u8],
) -> Result<(ConversionReviewVersion, ConversionRequest<'_>), ReviewError> {
    let review = Review::Conversion;
    review.expect_object(body)?;
    let wire = Parser::from_slice(body)
        .and_then(|mut p| {
            let wire = envelope(&mut p, read_request)?;
            p.end().map(|()| wire)
        })
        .map_err(|e| ReviewError::from_parse(review, e))?;
    let (version, req) = wire.open(
        review,
        ConversionReviewVersion::V1,
        ConversionReviewVersion::V1Beta1,
    )?;
    let uid = req
        .uid
        .filter(|u| !u.is_empty())
        .ok_or(ReviewError::MissingUid(review))?;
    let desired_api_version = req
        .desired_api_version
        .filter(|d| !d.is_empty())
        .ok_or(ReviewError::MissingDesiredApiVersion)?;
    let objects = req.objects.ok_or(ReviewError::MissingObjects)?;
    // An object's text starts at its first byte: an object starts with '{'.
    if let Some(i) = objects.iter().position(|o| !o.starts_with('{')) {
        return Err(ReviewError::ObjectNotAnObject(i));
    }
    Ok((
        version,
        ConversionRequest {
            uid,
            desired_api_version,
            objects,
        },
    ))
}

fn read_request<'a>(p: &mut Parser<'a>) -> Result<WireRequest<'a>, Error> {
    let mut r = WireRequest::default();
    let names = ["uid", "desiredAPIVersion", "objects"];
    fields(p, "struct WireRequest", &names, |p, field| {
        match field {
            0 => r.uid = string(p)?,
            1 => r.desired_api_version = string(p)?,
            _ if p.null()? => r.objects = None,
            _ => {
                // Located and checked, not built (see the module comment).
                let mut objects = Vec::new();
                p.begin_array("a sequence")?;
                let mut first = true;
                while p.next_element(&mut first)? {
                    objects.push(p.raw()?);
                }
                r.objects = Some(objects);
            }
        }
        Ok(())
    })?;
    Ok(r)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WireResponse<'a> {
    uid: &'a str,
    // Before `result`, as [`SuccessWriter`] writes them.
    converted_objects: &'a [Json],
    result: WireResult<'a>,
}

#[derive(Serialize)]
struct WireResult<'a> {
    status: &'static str,
    #[serde(skip_serializing_if = "str::is_empty")]
    message: &'a str,
}

/// Encodes the answer: `Success` with the converted objects, or `Failure`
/// with `message` and no objects.
pub fn encode_conversion(
    version: ConversionReviewVersion,
    uid: &str,
    outcome: Result<&[Json], &str>,
) -> Result<Vec<u8>, serde_json::Error> {
    let (status, message, objects) = match outcome {
        Ok(objects) => ("Success", "", objects),
        Err(message) => ("Failure", message, &[][..]),
    };
    let answer = WireAnswer {
        api_version: version.api_version(),
        kind: CONVERSION_REVIEW_KIND,
        response: WireResponse {
            uid,
            result: WireResult { status, message },
            converted_objects: objects,
        },
    };
    serde_json::to_vec(&answer)
}

/// Writes an answer object by object, so that the converted objects need
/// not all be held at once: [`new`](Self::new), [`push`](Self::push) each
/// object in order, then [`finish`](Self::finish) (Success) or
/// [`fail`](Self::fail). Full chunks can be taken as they are written
/// ([`take_ready`](Self::take_ready)) and sent before the last object is
/// converted.
///
/// `result` comes after `convertedObjects`, so that an answer already partly
/// sent can still end as a Failure: the API server reads the status before
/// the objects and ignores them unless it is `Success` (its
/// `getConvertedObjectsFromResponse`), and the order of keys means nothing
/// to its decoder.
///
/// The answer is kept as chunks of about [`CHUNK_BYTES`] rather than one
/// buffer: chunks below the allocator's mmap threshold can reuse the memory
/// freed by the input objects already converted, where one buffer the size
/// of the whole answer would come on top of it.
#[derive(Debug)]
pub struct SuccessWriter {
    chunks: Vec<Vec<u8>>,
    current: Vec<u8>,
    count: usize,
    /// Bytes in `chunks` and in those already taken.
    done: usize,
}

/// Target size of one chunk of a streamed answer.
pub const CHUNK_BYTES: usize = 32 * 1024;

/// Room a chunk's buffer has past [`CHUNK_BYTES`]: one object of the usual
/// size passes the chunk's size without making the buffer grow.
const ROOM: usize = 4096;

/// An answer that passes this many bytes is sent while it is written, so
/// that the body and the whole answer are never held at once (a
/// 10,000-object review holds about its body).
pub const STREAM_AFTER: usize = 256 * 1024;

/// Chunks of a streamed answer written ahead of the connection; past them
/// the conversion waits for the caller to read. Their bytes are fewer than
/// the [`STREAM_AFTER`] the answer's budget counted when the stream began.
pub const AHEAD: usize = STREAM_AFTER / CHUNK_BYTES;

impl SuccessWriter {
    /// Starts the answer.
    pub fn new(version: ConversionReviewVersion, uid: &str) -> Result<Self, serde_json::Error> {
        let mut out = Self::buffer();
        out.extend_from_slice(b"{\"apiVersion\":");
        serde_json::to_writer(&mut out, version.api_version())?;
        out.extend_from_slice(b",\"kind\":\"ConversionReview\",\"response\":{\"uid\":");
        serde_json::to_writer(&mut out, uid)?;
        out.extend_from_slice(b",\"convertedObjects\":[");
        Ok(Self {
            chunks: Vec::new(),
            current: out,
            count: 0,
            done: 0,
        })
    }

    /// Appends the next converted object.
    pub fn push(&mut self, object: &Json) {
        if self.count > 0 {
            self.current.push(b',');
        }
        celhook_json::write(&mut self.current, object);
        self.count += 1;
        if self.current.len() >= CHUNK_BYTES {
            // Handed over as it is, not copied: a copy was a twentieth of a
            // CronTab conversion. Its room (at most `ROOM` bytes unless an
            // object made the buffer grow, when it is cut) lasts only while
            // the chunk waits to be sent, `AHEAD` chunks at the most.
            self.done += self.current.len();
            let mut full = std::mem::replace(&mut self.current, Self::buffer());
            if full.capacity() - full.len() > ROOM {
                full.shrink_to_fit();
            }
            self.chunks.push(full);
        }
    }

    /// A chunk's buffer: its size and room for the object that passes it.
    fn buffer() -> Vec<u8> {
        Vec::with_capacity(CHUNK_BYTES + ROOM)
    }

    /// The full chunks written since the last call, in order.
    pub fn take_ready(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.chunks)
    }

    /// Bytes of the answer written so far (taken chunks included).
    pub fn len(&self) -> usize {
        self.done + self.current.len()
    }

    /// True before anything is written (never: the answer starts with its head).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Objects written so far.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Closes the answer as a Success and returns its chunks not yet taken.
    pub fn finish(self) -> Vec<Vec<u8>> {
        self.close("Success", "")
    }

    /// Closes the answer as a Failure with `message` (the objects already
    /// written stay in it; the API server reads none of them).
    pub fn fail(self, message: &str) -> Vec<Vec<u8>> {
        self.close("Failure", message)
    }

    fn close(mut self, status: &'static str, message: &str) -> Vec<Vec<u8>> {
        // The same bytes as `WireResult` serialized: no `message` when empty.
        self.current.extend_from_slice(b"],\"result\":{\"status\":");
        celhook_json::write::string(&mut self.current, status);
        if !message.is_empty() {
            self.current.extend_from_slice(b",\"message\":");
            celhook_json::write::string(&mut self.current, message);
        }
        self.current.push(b'}');
        self.current.extend_from_slice(b"}}");
        self.chunks.push(self.current);
        self.chunks
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use celhook_json::json;

    fn body(v: Json) -> Vec<u8> {
        serde_json::to_vec(&v).expect("serializes")
    }

    fn review(api_version: &str) -> Json {
        json!({
            "apiVersion": api_version,
            "kind": "ConversionReview",
            "request": {"uid": "u-1", "desiredAPIVersion": "example.com/v1",
                        "objects": [{"apiVersion": "example.com/v1beta1", "kind": "CronTab"}]}
        })
    }

    #[test]
    fn decodes_v1_and_v1beta1() {
        for (api, version) in [
            (CONVERSION_V1, ConversionReviewVersion::V1),
            (CONVERSION_V1BETA1, ConversionReviewVersion::V1Beta1),
        ] {
            let bytes = body(review(api));
            let (v, req) = decode_conversion(&bytes).expect("valid");
            assert_eq!(v, version);
            assert_eq!(req.uid, "u-1");
            assert_eq!(req.desired_api_version, "example.com/v1");
            assert_eq!(req.objects.len(), 1);
            let parsed: Vec<_> = req.parsed_objects().collect();
            assert_eq!(
                parsed,
                [Ok(
                    json!({"apiVersion": "example.com/v1beta1", "kind": "CronTab"})
                )]
            );
        }
    }

    #[test]
    fn malformed_reviews_name_the_problem() {
        let mut no_uid = review(CONVERSION_V1);
        no_uid["request"]["uid"] = json!("");
        let mut no_desired = review(CONVERSION_V1);
        no_desired["request"]
            .as_object_mut()
            .map(|r| r.remove("desiredAPIVersion"));
        let mut bad_object = review(CONVERSION_V1);
        bad_object["request"]["objects"] = json!([{}, 3]);
        let mut wrong_kind = review(CONVERSION_V1);
        wrong_kind["kind"] = json!("AdmissionReview");
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (b"".to_vec(), "empty request body"),
            (b"{".to_vec(), "malformed JSON"),
            (b"[1]".to_vec(), "must be a JSON object"),
            (
                body(review("admission.k8s.io/v1")),
                "unsupported review apiVersion",
            ),
            (
                body(wrong_kind),
                "kind must be ConversionReview, got \"AdmissionReview\"",
            ),
            (body(no_uid), "request.uid"),
            (body(no_desired), "request.desiredAPIVersion"),
            (body(bad_object), "request.objects[1]"),
            (
                body(json!({"apiVersion": CONVERSION_V1, "kind": "ConversionReview"})),
                "request is missing",
            ),
        ];
        for (b, want) in cases {
            let err = decode_conversion(&b).expect_err("refused");
            assert!(
                err.to_string().contains(want),
                "{err} does not contain {want}"
            );
        }
    }

    #[test]
    fn the_success_writer_matches_the_one_shot_encoding() {
        let objects = vec![json!({"a": 1}), json!({"b": "\"quoted\""})];
        let mut w = SuccessWriter::new(ConversionReviewVersion::V1, "u\"1").expect("starts");
        for o in &objects {
            w.push(o);
        }
        assert_eq!(w.count(), 2);
        let streamed = w.finish().concat();
        let whole =
            encode_conversion(ConversionReviewVersion::V1, "u\"1", Ok(&objects)).expect("encodes");
        assert_eq!(
            String::from_utf8_lossy(&streamed),
            String::from_utf8_lossy(&whole)
        );
        let empty = SuccessWriter::new(ConversionReviewVersion::V1Beta1, "u").expect("starts");
        let empty: Json = serde_json::from_slice(&empty.finish().concat()).expect("valid JSON");
        assert_eq!(empty["response"]["convertedObjects"], json!([]));

        // Many objects span many chunks, still one valid answer in order.
        let many: Vec<Json> = (0..2000)
            .map(|i| json!({"i": i, "pad": "x".repeat(100)}))
            .collect();
        let mut w = SuccessWriter::new(ConversionReviewVersion::V1, "u").expect("starts");
        for o in &many {
            w.push(o);
        }
        let chunks = w.finish();
        assert!(chunks.len() > 4, "{} chunks", chunks.len());
        let whole: Json = serde_json::from_slice(&chunks.concat()).expect("valid JSON");
        assert_eq!(whole["response"]["convertedObjects"], json!(many));
    }

    #[test]
    fn an_answer_taken_in_part_can_still_end_as_a_failure() {
        let mut w = SuccessWriter::new(ConversionReviewVersion::V1, "u").expect("starts");
        let mut sent: Vec<u8> = Vec::new();
        for i in 0..1000 {
            w.push(&json!({"i": i, "pad": "x".repeat(100)}));
            sent.extend(w.take_ready().concat());
        }
        assert!(sent.len() > 3 * CHUNK_BYTES, "{} bytes taken", sent.len());
        // What is not taken yet is less than a chunk.
        assert!(
            w.len() - sent.len() < CHUNK_BYTES,
            "{} untaken",
            w.len() - sent.len()
        );
        sent.extend(w.fail("object 1000: \"bad\"").concat());
        let answer: Json = serde_json::from_slice(&sent).expect("valid JSON");
        assert_eq!(answer["response"]["result"]["status"], "Failure");
        assert_eq!(
            answer["response"]["result"]["message"],
            "object 1000: \"bad\""
        );
        let objects = answer["response"]["convertedObjects"].as_array();
        assert_eq!(objects.map(Vec::len), Some(1000));
        // Nothing taken: the whole answer comes at the close.
        let w = SuccessWriter::new(ConversionReviewVersion::V1Beta1, "u").expect("starts");
        let closed: Json = serde_json::from_slice(&w.fail("no").concat()).expect("JSON");
        assert_eq!(closed["response"]["convertedObjects"], json!([]));
        assert_eq!(closed["response"]["result"]["message"], "no");
    }

    #[test]
    fn encodes_success_and_failure_in_the_request_version() {
        let objects = vec![json!({"a": 1})];
        let ok: Json = serde_json::from_slice(
            &encode_conversion(ConversionReviewVersion::V1Beta1, "u", Ok(&objects))
                .expect("encodes"),
        )
        .expect("json");
        assert_eq!(
            ok,
            json!({"apiVersion": CONVERSION_V1BETA1, "kind": "ConversionReview",
                   "response": {"uid": "u", "result": {"status": "Success"}, "convertedObjects": [{"a": 1}]}})
        );
        let failed: Json = serde_json::from_slice(
            &encode_conversion(ConversionReviewVersion::V1, "u", Err("boom")).expect("encodes"),
        )
        .expect("json");
        assert_eq!(
            failed["response"]["result"],
            json!({"status": "Failure", "message": "boom"})
        );
        assert_eq!(failed["response"]["convertedObjects"], json!([]));
        assert_eq!(failed["apiVersion"], CONVERSION_V1);
    }
}
