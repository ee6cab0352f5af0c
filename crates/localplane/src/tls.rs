//! localplane's own certificate authority and the server certificate it signs, kept in
//! `<state dir>/tls/`, so that the real Azure clients (the az CLI, the Azure SDKs) reach the ARM
//! API over HTTPS: azure-core refuses to send a bearer token over plain HTTP.
//!
//! The files are made once and reused across restarts, so a user trusts the CA once
//! (`REQUESTS_CA_BUNDLE` / `SSL_CERT_FILE` = [`LocalCa::ca_path`]):
//! - `ca.pem`: the CA certificate (what a client trusts);
//! - `server.pem`, `server-key.pem`: the leaf for `localhost`, `127.0.0.1`, `::1` and
//!   `localplane` (the name containers resolve), signed by the CA. The CA's own key is not
//!   kept: a new leaf needs a new CA, so deleting the folder starts over.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::error::Error;

/// The folder under the state dir.
pub const TLS_DIR: &str = "tls";
/// The CA certificate's file name in [`TLS_DIR`].
pub const CA_FILE: &str = "ca.pem";
const SERVER_CERT: &str = "server.pem";
const SERVER_KEY: &str = "server-key.pem";

/// The names the server certificate is valid for.
pub const SERVER_NAMES: &[&str] = &["localhost", "127.0.0.1", "::1", "localplane"];

/// The CA and server certificate of one state dir.
#[derive(Clone)]
pub struct LocalCa {
    ca_path: PathBuf,
    server: Arc<rustls::ServerConfig>,
}

impl std::fmt::Debug for LocalCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalCa")
            .field("ca_path", &self.ca_path)
            .finish()
    }
}

impl LocalCa {
    /// Loads the CA and server certificate of `state_dir`, making them first when any of the
    /// three files is missing.
    pub fn load_or_create(state_dir: &Path) -> Result<LocalCa, Error> {
        let dir = state_dir.join(TLS_DIR);
        let (ca, cert, key) = (
            dir.join(CA_FILE),
            dir.join(SERVER_CERT),
            dir.join(SERVER_KEY),
        );
        if !(ca.is_file() && cert.is_file() && key.is_file()) {
            create(&dir)?;
        }
        let tls_err = |path: &Path, what: &str| Error::Tls(format!("{}: {what}", path.display()));
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&cert)
            .map_err(|e| tls_err(&cert, &e.to_string()))?
            .collect::<Result<_, _>>()
            .map_err(|e| tls_err(&cert, &e.to_string()))?;
        let key_der =
            PrivateKeyDer::from_pem_file(&key).map_err(|e| tls_err(&key, &e.to_string()))?;
        let mut server = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, key_der)
        .map_err(|e| tls_err(&cert, &e.to_string()))?;
        server.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(LocalCa {
            ca_path: ca,
            server: Arc::new(server),
        })
    }

    /// The CA certificate (PEM) a client trusts.
    pub fn ca_path(&self) -> &Path {
        &self.ca_path
    }

    /// The acceptor presenting the server certificate.
    pub fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        tokio_rustls::TlsAcceptor::from(self.server.clone())
    }
}

/// Makes a CA and a server certificate it signs into `dir` (written atomically, the key files
/// readable by the owner only).
fn create(dir: &Path) -> Result<(), Error> {
    let e = |step: &str, err: &dyn std::fmt::Display| Error::Tls(format!("{step}: {err}"));
    std::fs::create_dir_all(dir).map_err(|error| Error::Io {
        path: dir.to_path_buf(),
        error,
    })?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(|x| e("CA", &x))?;
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "localplane local CA");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_key = KeyPair::generate().map_err(|x| e("CA key", &x))?;
    let ca_cert = ca_params
        .self_signed(&ca_key)
        .map_err(|x| e("CA certificate", &x))?;
    let issuer = Issuer::new(ca_params, ca_key);
    let mut leaf_params = CertificateParams::new(
        SERVER_NAMES
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>(),
    )
    .map_err(|x| e("server certificate", &x))?;
    leaf_params
        .distinguished_name
        .push(DnType::CommonName, "localplane");
    leaf_params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    leaf_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    leaf_params.use_authority_key_identifier_extension = true;
    let leaf_key = KeyPair::generate().map_err(|x| e("server key", &x))?;
    let leaf = leaf_params
        .signed_by(&leaf_key, &issuer)
        .map_err(|x| e("server certificate", &x))?;
    write(&dir.join(SERVER_KEY), &leaf_key.serialize_pem(), true)?;
    write(&dir.join(SERVER_CERT), &leaf.pem(), false)?;
    // The CA last: its presence with the two others is what `load_or_create` reuses.
    write(&dir.join(CA_FILE), &ca_cert.pem(), false)
}

fn write(path: &Path, text: &str, private: bool) -> Result<(), Error> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let io = |error| Error::Io {
        path: path.to_path_buf(),
        error,
    };
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(if private { 0o600 } else { 0o644 })
        .open(&tmp)
        .map_err(io)?;
    f.write_all(text.as_bytes()).map_err(io)?;
    f.sync_all().map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ca_is_made_once_and_reused_across_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let first = LocalCa::load_or_create(dir.path()).unwrap();
        let pem = std::fs::read_to_string(first.ca_path()).unwrap();
        assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"), "{pem}");
        let again = LocalCa::load_or_create(dir.path()).unwrap();
        assert_eq!(std::fs::read_to_string(again.ca_path()).unwrap(), pem);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join(TLS_DIR).join(SERVER_KEY))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "the key is the owner's only: {mode:o}");
        // A missing file means a new pair: the old CA no longer signs the new leaf.
        std::fs::remove_file(dir.path().join(TLS_DIR).join(SERVER_KEY)).unwrap();
        let third = LocalCa::load_or_create(dir.path()).unwrap();
        assert_ne!(std::fs::read_to_string(third.ca_path()).unwrap(), pem);
    }

    #[test]
    fn a_damaged_certificate_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        LocalCa::load_or_create(dir.path()).unwrap();
        std::fs::write(dir.path().join(TLS_DIR).join(SERVER_CERT), "not a pem").unwrap();
        let e = LocalCa::load_or_create(dir.path()).unwrap_err().to_string();
        assert!(e.contains(SERVER_CERT), "{e}");
    }
}
