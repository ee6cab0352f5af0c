//! Where requests go: a URL checked once, when the configuration is validated, into what every
//! request needs (host and port, the address of an IP literal, the TLS connector and server
//! name, and the request bytes of each connection mode). The bottom of loadgen's module graph:
//! `config` builds it and `client` connects with it, so neither depends on the other for it.

use std::net::SocketAddr;
use std::sync::Arc;

use http::Uri;
use http::header::HeaderValue;
use rustls_pki_types::ServerName;
use tokio_rustls::TlsConnector;

/// The `user-agent` of every request.
const UA: &str = concat!("probelab-loadgen/", env!("CARGO_PKG_VERSION"));

/// Where requests go, computed once from the URL when the configuration is validated.
pub struct Target {
    uri: Uri,
    pub(crate) host: String,
    pub(crate) port: u16,
    /// The address when the host is an IP literal (no lookup per connection).
    pub(crate) literal: Option<SocketAddr>,
    pub(crate) tls: Option<(TlsConnector, ServerName<'static>)>,
    /// The whole request of each mode, written as it is on every exchange.
    pub(crate) keep_alive_request: Box<[u8]>,
    pub(crate) close_request: Box<[u8]>,
}

/// Why a URL cannot be a target.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("{0}: no host")]
    NoHost(Uri),
    #[error("{0}: https needs a TLS configuration")]
    NoTls(Uri),
    #[error("{0}: {1}")]
    Invalid(Uri, String),
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("uri", &self.uri)
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

impl Target {
    /// Checks the URL (an `https://` one needs `tls`) and precomputes what every request needs.
    pub fn new(uri: &Uri, tls: Option<&Arc<rustls::ClientConfig>>) -> Result<Target, TargetError> {
        let authority = uri
            .authority()
            .ok_or_else(|| TargetError::NoHost(uri.clone()))?;
        let https = uri.scheme_str() == Some("https");
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let port = authority.port_u16().unwrap_or(if https { 443 } else { 80 });
        let host_part = authority.as_str().rsplit('@').next().unwrap_or_default();
        // The request line and Host header must be valid header text: checked here once.
        HeaderValue::from_str(host_part)
            .map_err(|e| TargetError::Invalid(uri.clone(), e.to_string()))?;
        let path = match uri.query() {
            Some(q) => format!("{}?{q}", uri.path()),
            None => uri.path().to_owned(),
        };
        if path
            .bytes()
            .any(|b| b.is_ascii_whitespace() || b.is_ascii_control())
        {
            return Err(TargetError::Invalid(
                uri.clone(),
                "the path holds whitespace or a control character".into(),
            ));
        }
        let literal = host
            .parse::<std::net::IpAddr>()
            .ok()
            .map(|ip| SocketAddr::new(ip, port));
        let tls = if https {
            let cfg = tls.ok_or_else(|| TargetError::NoTls(uri.clone()))?;
            let name = ServerName::try_from(host.clone())
                .map_err(|e| TargetError::Invalid(uri.clone(), e.to_string()))?;
            Some((TlsConnector::from(cfg.clone()), name))
        } else {
            None
        };
        let request = |connection: &str| {
            // `with_cookie` inserts before the final blank line.
            format!(
                "GET {path} HTTP/1.1\r\nhost: {host_part}\r\nuser-agent: {UA}\r\n{connection}\r\n"
            )
            .into_bytes()
            .into_boxed_slice()
        };
        Ok(Target {
            uri: uri.clone(),
            host,
            port,
            literal,
            keep_alive_request: request(""),
            close_request: request("connection: close\r\n"),
            tls,
        })
    }
}

/// `request` (one of a [`Target`]'s) with a `Cookie` header: a virtual client's jar. The value
/// comes from `Set-Cookie` headers the server sent, which are header text; a CR or LF in it
/// would end the header, so such bytes are dropped.
pub(crate) fn with_cookie(request: &[u8], cookie: &str) -> Vec<u8> {
    // Every request ends with its blank line; the header goes before it.
    let head = request.strip_suffix(b"\r\n").unwrap_or(request);
    let mut r = Vec::with_capacity(request.len() + cookie.len() + 10);
    r.extend_from_slice(head);
    r.extend_from_slice(b"cookie: ");
    r.extend(cookie.bytes().filter(|b| *b != b'\r' && *b != b'\n'));
    r.extend_from_slice(b"\r\n\r\n");
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cookie_header_goes_before_the_blank_line_without_line_breaks() {
        let t = Target::new(&"http://h:1/p".parse().unwrap(), None).unwrap();
        let r = with_cookie(&t.keep_alive_request, "a=1; b=2\r\nx: y");
        let text = String::from_utf8(r).unwrap();
        assert!(
            text.starts_with("GET /p HTTP/1.1\r\nhost: h:1\r\n"),
            "{text}"
        );
        assert!(text.ends_with("\r\ncookie: a=1; b=2x: y\r\n\r\n"), "{text}");
        assert_eq!(text.matches("\r\n\r\n").count(), 1);
    }
}
