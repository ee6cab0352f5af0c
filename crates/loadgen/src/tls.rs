//! TLS for `https://` targets: rustls with the ring provider, ALPN `http/1.1`.
//!
//! Trust roots come from one PEM bundle (`--ca-file`, env `SSL_CERT_FILE`, default the Debian
//! bundle that the images ship at `/etc/ssl/certs/ca-certificates.crt`). `--insecure` skips
//! certificate verification (self-signed lab targets) but still checks the handshake
//! signatures, so the connection is encrypted, only not authenticated.

use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};

/// The CA bundle used when neither `--ca-file` nor `SSL_CERT_FILE` is given.
pub const DEFAULT_CA_FILE: &str = "/etc/ssl/certs/ca-certificates.crt";

/// Why no TLS client configuration could be built.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TlsError {
    #[error(
        "cannot read the CA bundle {path}: {msg} (set --ca-file / SSL_CERT_FILE to a PEM bundle, \
         or --insecure for a self-signed lab target)"
    )]
    Read { path: String, msg: String },
    #[error(
        "no trusted CA certificate could be loaded from {path} (set --ca-file / SSL_CERT_FILE to \
         a PEM bundle, or --insecure for a self-signed lab target)"
    )]
    NoRoots { path: String },
    #[error("TLS configuration: {0}")]
    Config(String),
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The client configuration every `https://` connection of the run uses.
pub fn client_config(ca_file: &Path, insecure: bool) -> Result<Arc<ClientConfig>, TlsError> {
    let provider = provider();
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?;
    let mut cfg = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerify(
                provider.signature_verification_algorithms,
            )))
            .with_no_client_auth()
    } else {
        builder
            .with_root_certificates(load_roots(ca_file)?)
            .with_no_client_auth()
    };
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}

/// Loads every certificate of a PEM bundle; an unparsable entry is skipped, none at all is an
/// error.
pub fn load_roots(path: &Path) -> Result<RootCertStore, TlsError> {
    let shown = path.display().to_string();
    let certs = CertificateDer::pem_file_iter(path).map_err(|e| TlsError::Read {
        path: shown.clone(),
        msg: e.to_string(),
    })?;
    let mut roots = RootCertStore::empty();
    for cert in certs.flatten() {
        let _ = roots.add(cert);
    }
    if roots.is_empty() {
        return Err(TlsError::NoRoots { path: shown });
    }
    Ok(roots)
}

/// `--insecure`: any certificate is accepted; handshake signatures are still verified.
#[derive(Debug)]
struct NoVerify(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_or_empty_bundle_is_a_clear_error() {
        let e = client_config(Path::new("/nonexistent/ca.pem"), false).unwrap_err();
        assert!(matches!(e, TlsError::Read { .. }), "{e}");
        assert!(e.to_string().contains("--insecure"), "{e}");
        let dir = std::env::temp_dir().join(format!("loadgen-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let e = client_config(&empty, false).unwrap_err();
        assert!(matches!(e, TlsError::NoRoots { .. }), "{e}");
        // --insecure needs no roots.
        assert!(client_config(&empty, true).is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
