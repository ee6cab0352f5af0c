//! A certificate authority made for one test: its PEM (for a client's trust store, or
//! `SSL_CERT_FILE` through [`TestCa::write_pem`]) and a rustls server config (ring, the
//! workspace's one crypto provider) for a leaf `127.0.0.1` it signed, for any TLS server a test
//! runs on 127.0.0.1 (the HTTPS front, loadgen's TLS target, arm's TLS front).

use std::path::Path;
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A step of making the test CA that failed, and what the library said.
#[derive(Debug, thiserror::Error)]
#[error("test CA: {step}: {message}")]
pub struct CaError {
    step: &'static str,
    message: String,
}

/// A certificate authority made for one test, and a server config for `127.0.0.1` it signed.
pub struct TestCa {
    pem: String,
    server: Arc<rustls::ServerConfig>,
}

impl TestCa {
    /// A new CA and leaf (`127.0.0.1`, as an IP subject alternative name).
    pub fn new() -> Result<TestCa, CaError> {
        let e = |step: &'static str, err: &dyn std::fmt::Display| CaError {
            step,
            message: err.to_string(),
        };
        let mut ca_params =
            CertificateParams::new(Vec::<String>::new()).map_err(|x| e("params", &x))?;
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_key = KeyPair::generate().map_err(|x| e("CA key", &x))?;
        let ca_cert = ca_params
            .self_signed(&ca_key)
            .map_err(|x| e("CA cert", &x))?;
        let issuer = Issuer::new(ca_params, ca_key);
        let leaf_key = KeyPair::generate().map_err(|x| e("leaf key", &x))?;
        let leaf = CertificateParams::new(vec!["127.0.0.1".to_owned()])
            .map_err(|x| e("leaf params", &x))?
            .signed_by(&leaf_key, &issuer)
            .map_err(|x| e("leaf cert", &x))?;
        let server = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|x| e("protocols", &x))?
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(leaf.der().to_vec())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der())),
        )
        .map_err(|x| e("server config", &x))?;
        Ok(TestCa {
            pem: ca_cert.pem(),
            server: Arc::new(server),
        })
    }

    /// The CA certificate, PEM.
    pub fn pem(&self) -> &str {
        &self.pem
    }

    /// A rustls server config that presents the `127.0.0.1` leaf this CA signed.
    pub fn server_config(&self) -> Arc<rustls::ServerConfig> {
        self.server.clone()
    }

    /// Writes the CA certificate to `path` (for `SSL_CERT_FILE`).
    pub fn write_pem(&self, path: &Path) -> std::io::Result<()> {
        std::fs::write(path, &self.pem)
    }
}
