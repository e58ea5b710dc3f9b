//! Why a body is not a review celhook can answer: one error type for
//! AdmissionReview and ConversionReview bodies. Each becomes a 400 whose
//! body is the `Display` text, so the text names the problem and the review.

use super::{ADMISSION_V1, ADMISSION_V1BETA1, CONVERSION_V1, CONVERSION_V1BETA1};

/// Which review a body was sent as (by the route it arrived on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Review {
    /// `POST /validate`: an AdmissionReview.
    Admission,
    /// `POST /convert`: a ConversionReview.
    Conversion,
}

impl Review {
    /// The review's `kind`.
    pub fn kind(self) -> &'static str {
        match self {
            Review::Admission => "AdmissionReview",
            Review::Conversion => "ConversionReview",
        }
    }

    /// `an AdmissionReview`, `a ConversionReview`.
    fn with_article(self) -> &'static str {
        match self {
            Review::Admission => "an AdmissionReview",
            Review::Conversion => "a ConversionReview",
        }
    }

    /// The review's two apiVersions: v1 and v1beta1.
    fn api_versions(self) -> (&'static str, &'static str) {
        match self {
            Review::Admission => (ADMISSION_V1, ADMISSION_V1BETA1),
            Review::Conversion => (CONVERSION_V1, CONVERSION_V1BETA1),
        }
    }

    /// The apiVersions celhook speaks for this review, as the errors list them.
    fn versions(self) -> String {
        let (v1, v1beta1) = self.api_versions();
        format!("{v1} or {v1beta1}")
    }

    /// Refuses a body that is empty or not a JSON object before its fields
    /// are read, with a message that says so.
    pub(super) fn expect_object(self, body: &[u8]) -> Result<(), ReviewError> {
        match body.iter().find(|b| !b.is_ascii_whitespace()) {
            None => Err(ReviewError::Empty(self)),
            Some(b'{') => Ok(()),
            // Still report genuinely malformed JSON with its position.
            Some(_) => {
                let checked = celhook_json::Parser::from_slice(body)
                    .and_then(|mut p| p.skip().and_then(|()| p.end()));
                match checked {
                    Err(err) => Err(ReviewError::from_parse(self, err)),
                    Ok(()) => Err(ReviewError::NotAnObject(self)),
                }
            }
        }
    }

    /// Checks a review's apiVersion and kind; answers `v1` or `v1beta1`
    /// for the review's two apiVersions.
    pub(super) fn expect_header<V>(
        self,
        api_version: Option<&str>,
        kind: Option<String>,
        v1: V,
        v1beta1: V,
    ) -> Result<V, ReviewError> {
        let (a, b) = self.api_versions();
        let version = match api_version {
            None => return Err(ReviewError::MissingApiVersion(self)),
            Some(v) if v == a => v1,
            Some(v) if v == b => v1beta1,
            Some(other) => return Err(ReviewError::UnsupportedApiVersion(self, other.to_owned())),
        };
        if kind.as_deref() != Some(self.kind()) {
            return Err(ReviewError::WrongKind(self, kind));
        }
        Ok(version)
    }
}

/// Why a body is not a review we can answer (each a 400).
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    /// The body is empty.
    #[error("empty request body: expected {}", .0.with_article())]
    Empty(Review),
    /// The body is not JSON (the message carries line and column).
    #[error("malformed JSON: {0}")]
    Syntax(String),
    /// The body is JSON, but a field has the wrong type or is duplicated.
    #[error("invalid {}: {}", .0.kind(), .1)]
    Data(Review, String),
    /// The top-level value is not a JSON object.
    #[error("invalid {}: the body must be a JSON object", .0.kind())]
    NotAnObject(Review),
    /// `apiVersion` is missing.
    #[error("invalid {}: apiVersion is missing (expected {})", .0.kind(), .0.versions())]
    MissingApiVersion(Review),
    /// `apiVersion` is not one we speak.
    #[error("unsupported review apiVersion {:?} (expected {})", .1, .0.versions())]
    UnsupportedApiVersion(Review, String),
    /// `kind` is missing or names another review.
    #[error("{}", wrong_kind(*.0, .1.as_deref()))]
    WrongKind(Review, Option<String>),
    /// `request` is missing or null.
    #[error("invalid {}: request is missing", .0.kind())]
    MissingRequest(Review),
    /// `request.uid` is missing, null or empty.
    #[error("invalid {}: request.uid is missing or empty", .0.kind())]
    MissingUid(Review),
    /// AdmissionReview: `request.kind` is missing or lacks its version or kind.
    #[error("invalid AdmissionReview: request.kind must name a version and a kind")]
    MissingRequestKind,
    /// AdmissionReview: `request.operation` is missing.
    #[error("invalid AdmissionReview: request.operation is missing")]
    MissingOperation,
    /// AdmissionReview: `request.operation` is not one of the four admission operations.
    #[error("invalid AdmissionReview: request.operation {0:?} is not one of CREATE, UPDATE, DELETE, CONNECT")]
    UnsupportedOperation(String),
    /// AdmissionReview: `request.object` or `request.oldObject` is present but not an object.
    #[error("invalid AdmissionReview: request.{field} must be a JSON object, got {found}")]
    NotAJsonObject {
        /// `object` or `oldObject`.
        field: &'static str,
        /// The JSON type received.
        found: &'static str,
    },
    /// ConversionReview: `request.desiredAPIVersion` is missing or empty.
    #[error("invalid ConversionReview: request.desiredAPIVersion is missing or empty")]
    MissingDesiredApiVersion,
    /// ConversionReview: `request.objects` is missing.
    #[error("invalid ConversionReview: request.objects is missing")]
    MissingObjects,
    /// ConversionReview: an element of `request.objects` is not a JSON object.
    #[error("invalid ConversionReview: request.objects[{0}] must be a JSON object")]
    ObjectNotAnObject(usize),
}

impl ReviewError {
    /// serde's error, as a syntax error or a data error of `review`.
    pub(super) fn from_json(review: Review, err: serde_json::Error) -> ReviewError {
        match err.classify() {
            serde_json::error::Category::Data => ReviewError::Data(review, err.to_string()),
            // Syntax, Eof, and Io (which cannot happen when reading a slice).
            _ => ReviewError::Syntax(err.to_string()),
        }
    }

    /// The JSON parser's error, as a syntax error or a data error of `review`.
    pub(super) fn from_parse(review: Review, err: celhook_json::Error) -> ReviewError {
        if err.is_data() {
            ReviewError::Data(review, err.to_string())
        } else {
            ReviewError::Syntax(err.to_string())
        }
    }
}

// The two decoders have worded a wrong kind differently since they were
// written; the texts are kept as they are (clients and tests match them).
fn wrong_kind(review: Review, got: Option<&str>) -> String {
    match (review, got) {
        (Review::Admission, None) => {
            "invalid AdmissionReview: kind is missing (expected AdmissionReview)".to_owned()
        }
        (Review::Admission, Some(other)) => {
            format!("unsupported review kind {other:?} (expected AdmissionReview)")
        }
        (Review::Conversion, None) => {
            "invalid ConversionReview: kind is missing (expected ConversionReview)".to_owned()
        }
        (Review::Conversion, Some(other)) => {
            format!("invalid ConversionReview: kind must be ConversionReview, got {other:?}")
        }
    }
}
