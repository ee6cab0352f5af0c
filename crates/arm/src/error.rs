//! What can go wrong talking to ARM, with the ARM error code and message kept.

use std::time::Duration;

/// A failed ARM call (after retries, when the failure was retryable).
#[derive(Debug, thiserror::Error)]
pub enum ArmError {
    /// ARM answered with an error status; `code` and `message` come from its error body.
    #[error("{operation}: HTTP {status} {code}: {message}")]
    Api {
        operation: String,
        status: u16,
        code: String,
        message: String,
        /// The `Retry-After` the last answer carried, if any.
        retry_after: Option<Duration>,
    },
    /// No answer within the per-call timeout (or before the caller's deadline).
    #[error("{operation}: no answer within {after:?}")]
    Timeout { operation: String, after: Duration },
    /// The connection failed (refused, reset, TLS, ...).
    #[error("{operation}: transport error: {error}")]
    Transport {
        operation: String,
        error: reqwest::Error,
    },
    /// The answer was not the JSON we expected.
    #[error("{operation}: cannot decode the answer: {error}")]
    Decode {
        operation: String,
        error: serde_json::Error,
    },
    /// No token could be had. The message never contains a token.
    #[error("token: {0}")]
    Token(String),
    /// A long-running operation ended `Failed`/`Canceled`, or did not end in time.
    #[error("{operation}: long-running operation {status}: {code}: {message}")]
    Operation {
        operation: String,
        status: String,
        code: String,
        message: String,
    },
    /// The request could not be built (bad base URL, missing container, ...).
    #[error("{0}")]
    Invalid(String),
}

impl ArmError {
    /// The HTTP status, when ARM answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            ArmError::Api { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The ARM error code (`TooManyRequests`, `ResourceNotFound`, ...) or a code of ours for
    /// failures without an answer (`Timeout`, `Transport`, `Decode`, `Token`, `Invalid`).
    pub fn code(&self) -> &str {
        match self {
            ArmError::Api { code, .. } | ArmError::Operation { code, .. } => code,
            ArmError::Timeout { .. } => "Timeout",
            ArmError::Transport { .. } => "Transport",
            ArmError::Decode { .. } => "Decode",
            ArmError::Token(_) => "Token",
            ArmError::Invalid(_) => "Invalid",
        }
    }

    /// The ARM error message, or this error's text.
    pub fn message(&self) -> String {
        match self {
            ArmError::Api { message, .. } | ArmError::Operation { message, .. } => message.clone(),
            other => other.to_string(),
        }
    }

    /// True for a 404 answer.
    pub fn is_not_found(&self) -> bool {
        self.status() == Some(404)
    }

    /// Whether trying again may help: 408, 429, 5xx, timeouts and transport failures.
    pub fn is_retryable(&self) -> bool {
        match self {
            ArmError::Api { status, .. } => is_retryable_status(*status),
            ArmError::Timeout { .. } | ArmError::Transport { .. } => true,
            _ => false,
        }
    }
}

/// 408, 429 and every 5xx except 501 and 505.
pub fn is_retryable_status(status: u16) -> bool {
    status == 408 || status == 429 || (500..600).contains(&status) && status != 501 && status != 505
}
