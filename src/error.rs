//! The one place where failures become HTTP answers.
//!
//! A denial is not an error: it is a 200 with `allowed: false`. Non-200
//! answers are only for bodies we cannot read as a review (4xx, the caller's
//! fault, with a short plain-text body naming the problem) and for our own
//! failures (500, with an opaque body; the full cause chain goes to the log).

use actix_web::http::header::ContentType;
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};

use crate::review::{ConversionReviewError, ReviewError};

/// Everything that stops a request from getting a review answer.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    /// The body is not a review we can answer (400).
    #[error(transparent)]
    Review(#[from] ReviewError),
    /// The body is not a ConversionReview we can answer (400).
    #[error(transparent)]
    ConversionReview(#[from] ConversionReviewError),
    /// The body is larger than `--max-request-bytes` (413).
    #[error("request body exceeds the limit of {limit} bytes")]
    PayloadTooLarge {
        /// The configured limit.
        limit: usize,
    },
    /// The body could not be read: a bad Content-Length, an aborted upload (400).
    #[error("could not read the request body: {0}")]
    Body(String),
    /// `--max-concurrent-requests` stayed full until the request's deadline (503).
    #[error("overloaded: too many requests in flight")]
    Overloaded,
    /// The body does not fit in what `--max-in-flight-bytes` has left (503).
    #[error("overloaded: too many request body bytes in flight")]
    BodyBudgetExhausted,
    /// The client did not send its whole body within the deadline (408).
    #[error("request body not received within the deadline of {budget:?}")]
    BodyTimeout {
        /// The time the request had.
        budget: std::time::Duration,
    },
    /// The request was not answered within its deadline (504).
    #[error("request not answered within its deadline of {budget:?}")]
    DeadlineExceeded {
        /// The time the request had.
        budget: std::time::Duration,
    },
    /// A failure on our side (500); the client sees only "internal error".
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
}

impl ResponseError for WebhookError {
    fn status_code(&self) -> StatusCode {
        match self {
            WebhookError::Review(_) | WebhookError::ConversionReview(_) | WebhookError::Body(_) => {
                StatusCode::BAD_REQUEST
            }
            WebhookError::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            WebhookError::Overloaded | WebhookError::BodyBudgetExhausted => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            WebhookError::BodyTimeout { .. } => StatusCode::REQUEST_TIMEOUT,
            WebhookError::DeadlineExceeded { .. } => StatusCode::GATEWAY_TIMEOUT,
            WebhookError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        let status = self.status_code();
        match self {
            // `{:#}` prints anyhow's whole chain; the client gets none of it.
            WebhookError::Internal(err) => {
                tracing::error!(error = format!("{err:#}"), "internal error")
            }
            // Ours, but not a bug: capacity or a slow client.
            WebhookError::Overloaded
            | WebhookError::BodyBudgetExhausted
            | WebhookError::BodyTimeout { .. }
            | WebhookError::DeadlineExceeded { .. } => {
                tracing::warn!(status = status.as_u16(), error = %self, "request refused")
            }
            // The caller's mistake: worth a line, not an alarm.
            other => tracing::info!(status = status.as_u16(), error = %other, "rejected request"),
        }
        let mut body = self.to_string();
        body.push('\n');
        let mut res = HttpResponse::build(status);
        res.content_type(ContentType::plaintext());
        if status == StatusCode::SERVICE_UNAVAILABLE {
            // Capacity frees up as requests finish, within a second or so.
            res.insert_header((actix_web::http::header::RETRY_AFTER, "1"));
        }
        if matches!(self, WebhookError::BodyTimeout { .. }) {
            // The rest of the body may still be on its way: do not read it.
            res.insert_header((actix_web::http::header::CONNECTION, "close"));
        }
        res.body(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::body::MessageBody;

    fn body_text(err: &WebhookError) -> String {
        let body = err.error_response().into_body();
        let bytes = body.try_into_bytes().unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    #[test]
    fn review_errors_are_400_and_name_the_problem() {
        let err = WebhookError::from(ReviewError::MissingUid);
        assert_eq!(err.status_code(), StatusCode::BAD_REQUEST);
        assert_eq!(err.error_response().status(), StatusCode::BAD_REQUEST);
        assert!(body_text(&err).contains("request.uid"));
    }

    #[test]
    fn capacity_refusals_say_when_to_retry_and_slow_bodies_close() {
        let too_large = WebhookError::PayloadTooLarge { limit: 10 };
        assert_eq!(too_large.status_code(), StatusCode::PAYLOAD_TOO_LARGE);
        assert!(body_text(&too_large).contains("10 bytes"));
        for err in [WebhookError::Overloaded, WebhookError::BodyBudgetExhausted] {
            let res = err.error_response();
            assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
            assert_eq!(res.headers().get("retry-after").unwrap(), "1");
        }
        let slow = WebhookError::BodyTimeout {
            budget: std::time::Duration::from_secs(2),
        };
        let res = slow.error_response();
        assert_eq!(res.status(), StatusCode::REQUEST_TIMEOUT);
        assert_eq!(res.headers().get("connection").unwrap(), "close");
        assert!(res.headers().get("retry-after").is_none());
    }

    #[test]
    fn internal_errors_are_opaque() {
        let err = WebhookError::Internal(anyhow::anyhow!("secret detail"));
        assert_eq!(err.status_code(), StatusCode::INTERNAL_SERVER_ERROR);
        let text = body_text(&err);
        assert_eq!(text, "internal error\n");
    }
}
