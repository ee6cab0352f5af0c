//! arm: the Microsoft.App Azure Resource Manager client probelab's samplers and orchestrator use.
//!
//! - [`models`]: the `appmodel` crate, re-exported: serde types for containerApps, revisions,
//!   replicas, jobs and executions that keep unknown fields and unknown enum values, so a
//!   GET-modify-PATCH loses nothing (localplane parses the same types on the other side).
//! - [`client`]: [`ArmClient`] — requests with a bearer token, retries with exponential back-off
//!   and jitter honouring `Retry-After`, a per-call timeout and an optional caller deadline,
//!   `nextLink` pagination, long-running operations (`Azure-AsyncOperation` before `Location`).
//! - [`token`]: [`TokenSource`] — managed identity, Azure CLI or none (`ARM_TOKEN_SOURCE`),
//!   cached and refreshed before expiry, never logged.
//! - [`error`]: [`ArmError`], carrying the ARM error code and message.
//! - [`tls`]: the one crypto provider (rustls + ring) every HTTP client is built with.
//!
//! The same client talks to Azure and to localplane: only `ARM_ENDPOINT` differs.

pub mod client;
pub mod error;
pub mod operations;
pub mod template;
/// The Microsoft.App resource model (the `appmodel` crate, shared with localplane).
pub use appmodel as models;
pub mod tls;
pub mod token;

#[cfg(test)]
mod client_tests;
#[cfg(test)]
mod https_tests;

pub use client::{ArmClient, ClientConfig, RetryPolicy, Scope};
pub use error::ArmError;
pub use template::{fresh_revision_suffix, set_env_in_template};
pub use token::{BearerToken, IdentityEnv, TokenSource, TokenSourceKind};
