//! The one place where failures become HTTP answers.
//!
//! A denial is not an error: it is a 200 with `allowed: false`. Non-200
//! answers are only for bodies we cannot read as a review (4xx, the caller's
//! fault, with a short plain-text body naming the problem) and for our own
//! failures (500, with an opaque body; the full cause chain goes to the log).

use hyper::StatusCode;

use crate::review::ReviewError;

/// Everything that stops a request from getting a review answer.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    /// The body is not a review we can answer (400).
    #[error(transparent)]
    Review(#[from] ReviewError),
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
    /// The client sent nothing of its body for `--body-idle-timeout` (408).
    #[error("request body stalled: no byte for {idle:?}")]
    BodyIdle {
        /// The idle time allowed.
        idle: std::time::Duration,
    },
    /// The connection already holds its share of the in-flight byte
    /// budget (503): one client cannot take all of it.
    #[error("overloaded: this connection holds too many request bytes in flight")]
    ConnectionBudgetExhausted,
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

/// An error as the server sends it: status, headers to add and a short
/// plain-text body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorAnswer {
    /// The HTTP status.
    pub status: StatusCode,
    /// `Retry-After: 1` (capacity frees up as requests finish, within a
    /// second or so).
    pub retry_after: bool,
    /// `Connection: close`: the rest of the body may still be on its way,
    /// so the connection is not read any further.
    pub close: bool,
    /// The body: the error's text and a newline.
    pub body: String,
}

impl WebhookError {
    /// The HTTP status of this error.
    pub fn status_code(&self) -> StatusCode {
        match self {
            WebhookError::Review(_) | WebhookError::Body(_) => StatusCode::BAD_REQUEST,
            WebhookError::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            WebhookError::Overloaded
            | WebhookError::BodyBudgetExhausted
            | WebhookError::ConnectionBudgetExhausted => StatusCode::SERVICE_UNAVAILABLE,
            WebhookError::BodyTimeout { .. } | WebhookError::BodyIdle { .. } => {
                StatusCode::REQUEST_TIMEOUT
            }
            WebhookError::DeadlineExceeded { .. } => StatusCode::GATEWAY_TIMEOUT,
            WebhookError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// Logs the error (once, at the level it deserves) and gives the answer.
    pub fn answer(&self) -> ErrorAnswer {
        let status = self.status_code();
        match self {
            // `{:#}` prints anyhow's whole chain; the client gets none of it.
            WebhookError::Internal(err) => {
                tracing::error!(error = format!("{err:#}"), "internal error")
            }
            // Ours, but not a bug: capacity or a slow client.
            WebhookError::Overloaded
            | WebhookError::BodyBudgetExhausted
            | WebhookError::ConnectionBudgetExhausted
            | WebhookError::BodyTimeout { .. }
            | WebhookError::BodyIdle { .. }
            | WebhookError::DeadlineExceeded { .. } => {
                tracing::warn!(status = status.as_u16(), error = %self, "request refused")
            }
            // The caller's mistake: worth a line, not an alarm.
            other => tracing::info!(status = status.as_u16(), error = %other, "rejected request"),
        }
        let mut body = self.to_string();
        body.push('\n');
        ErrorAnswer {
            status,
            retry_after: status == StatusCode::SERVICE_UNAVAILABLE,
            close: matches!(
                self,
                WebhookError::BodyTimeout { .. } | WebhookError::BodyIdle { .. }
            ),
            body,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn review_errors_are_400_and_name_the_problem() {
        let err = WebhookError::from(ReviewError::MissingUid(crate::review::Review::Admission));
        let answer = err.answer();
        assert_eq!(answer.status, StatusCode::BAD_REQUEST);
        assert!(answer.body.contains("request.uid"), "{}", answer.body);
    }

    #[test]
    fn capacity_refusals_say_when_to_retry_and_slow_bodies_close() {
        let too_large = WebhookError::PayloadTooLarge { limit: 10 }.answer();
        assert_eq!(too_large.status, StatusCode::PAYLOAD_TOO_LARGE);
        assert!(too_large.body.contains("10 bytes"));
        for err in [
            WebhookError::Overloaded,
            WebhookError::BodyBudgetExhausted,
            WebhookError::ConnectionBudgetExhausted,
        ] {
            let answer = err.answer();
            assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE);
            assert!(answer.retry_after && !answer.close);
        }
        for slow in [
            WebhookError::BodyTimeout {
                budget: std::time::Duration::from_secs(2),
            },
            WebhookError::BodyIdle {
                idle: std::time::Duration::from_secs(2),
            },
        ] {
            let answer = slow.answer();
            assert_eq!(answer.status, StatusCode::REQUEST_TIMEOUT);
            assert!(answer.close && !answer.retry_after);
        }
    }

    #[test]
    fn internal_errors_are_opaque() {
        let answer = WebhookError::Internal(anyhow::anyhow!("secret detail")).answer();
        assert_eq!(answer.status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(answer.body, "internal error\n");
    }
}
