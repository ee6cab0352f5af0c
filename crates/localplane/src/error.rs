//! Errors: the library's [`Error`] and the ARM-shaped HTTP error ([`ArmError`]).

use std::path::PathBuf;

use axum::response::{IntoResponse, Response};
use http::StatusCode;

/// What can go wrong starting or running localplane.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot bind {addr}: {error}")]
    Bind {
        addr: std::net::SocketAddr,
        error: std::io::Error,
    },
    #[error("{path}: {error}")]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("state file {path} is not valid: {error}")]
    State {
        path: PathBuf,
        error: serde_json::Error,
    },
    /// A listen address or token that would expose the ARM API (see [`crate::access`]).
    #[error("{0}")]
    Access(String),
    /// The ARM API server task ended abnormally (a panic) or did not stop.
    #[error("ARM API server ({0}): {1}")]
    Server(String, String),
    #[error("runtime: {0}")]
    Runtime(String),
    #[error("docker: {0}")]
    Docker(String),
    /// The local CA or server certificate (`<state dir>/tls`) could not be made or read.
    #[error("TLS: {0}")]
    Tls(String),
}

/// An ARM error answer: `{"error":{"code":"...","message":"..."}}` with an HTTP status.
#[derive(Debug, Clone)]
pub struct ArmError {
    pub status: StatusCode,
    pub code: String,
    pub message: String,
}

impl ArmError {
    pub fn new(status: StatusCode, code: &str, message: impl Into<String>) -> Self {
        ArmError {
            status,
            code: code.to_string(),
            message: message.into(),
        }
    }

    /// 404 `ResourceNotFound`, worded as ARM words it.
    pub fn not_found(kind: &str, name: &str, rg: &str) -> Self {
        ArmError::new(
            StatusCode::NOT_FOUND,
            "ResourceNotFound",
            format!(
                "The Resource '{kind}/{name}' under resource group '{rg}' was not found. For more details please go to https://aka.ms/ARMResourceNotFoundFix"
            ),
        )
    }

    /// 400 `InvalidRequestContent` or a caller-chosen code.
    pub fn bad_request(code: &str, message: impl Into<String>) -> Self {
        ArmError::new(StatusCode::BAD_REQUEST, code, message)
    }

    pub fn body(&self) -> serde_json::Value {
        serde_json::json!({"error": {"code": self.code, "message": self.message}})
    }
}

impl IntoResponse for ArmError {
    fn into_response(self) -> Response {
        (self.status, axum::Json(self.body())).into_response()
    }
}
