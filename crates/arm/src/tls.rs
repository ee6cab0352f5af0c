//! The workspace's one TLS crypto provider for HTTP clients: rustls with `ring`.
//!
//! reqwest is built with `rustls-no-provider` (its `rustls` feature would compile aws-lc-rs, a
//! C build, beside the `ring` that loadgen already uses), so it takes the process-wide default
//! rustls provider and panics at `Client::build` when none is installed. Every client probelab
//! builds (this crate's [`crate::ArmClient`], the credentials of [`crate::TokenSource`], whose
//! azure_core transport is a reqwest client, and the runner's clients) goes through
//! [`install_provider`] or [`client_builder`] first.

/// Installs `ring` as the process's default rustls provider (once; later calls are no-ops).
pub fn install_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Err only if a provider is installed already, which is then the one used (and the
        // only provider compiled in is ring).
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// A reqwest client builder, after [`install_provider`].
pub fn client_builder() -> reqwest::ClientBuilder {
    install_provider();
    reqwest::Client::builder()
}
