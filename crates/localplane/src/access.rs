//! Who may reach the ARM API.
//!
//! The ARM API starts containers on the host's Docker engine, so it is as powerful as the Docker
//! socket. By default it listens on loopback only (and, on the Docker runtime, on the gateway IP of
//! the bridge network localplane created itself, for the jobs inside it): [`Access::check_listen`]
//! refuses any other address. A non-loopback address needs both [`Access::allow_remote`] and a
//! bearer token (`LOCALPLANE_TOKEN`); then every request on that listener without
//! `Authorization: Bearer <token>` gets ARM's 401 ([`require_token`]), and our ARM client sends
//! the token as it sends ARM tokens (`arm::TokenSource`, `ARM_TOKEN_SOURCE=static` or auto with
//! `LOCALPLANE_TOKEN` set).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode};

use crate::error::{ArmError, Error};

/// The shortest token accepted (a token is a password to the Docker engine).
pub const MIN_TOKEN_LEN: usize = 16;

/// The environment variable holding the token (`localplane --token`, `labctl local up --token`).
pub const TOKEN_ENV: &str = "LOCALPLANE_TOKEN";

/// How the ARM API may be reached. The default: loopback only, no token.
#[derive(Clone, Default)]
pub struct Access {
    /// Allows a non-loopback `listen` address (requires [`Access::token`]).
    pub allow_remote: bool,
    /// When set, every request on the main listener must carry `Authorization: Bearer <token>`.
    pub token: Option<String>,
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Access")
            .field("allow_remote", &self.allow_remote)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl Access {
    /// Whether `listen` may be bound: loopback always; anything else only with `allow_remote`
    /// and a token of at least [`MIN_TOKEN_LEN`] characters.
    pub fn check_listen(&self, listen: SocketAddr) -> Result<(), Error> {
        if let Some(t) = &self.token
            && t.chars().count() < MIN_TOKEN_LEN
        {
            return Err(Error::Access(format!(
                "the token ({TOKEN_ENV} / --token) has {} characters; use at least \
                 {MIN_TOKEN_LEN} (e.g. `openssl rand -hex 32`)",
                t.chars().count()
            )));
        }
        if listen.ip().is_loopback() {
            return Ok(());
        }
        match (self.allow_remote, &self.token) {
            (true, Some(_)) => Ok(()),
            (false, _) => Err(Error::Access(format!(
                "refusing to listen on {listen}: the ARM API starts containers on this host's \
                 Docker engine, so it listens on loopback (127.0.0.1, ::1) only; to expose it, \
                 pass --allow-remote together with a bearer token ({TOKEN_ENV} or --token)"
            ))),
            (true, None) => Err(Error::Access(format!(
                "--allow-remote needs a bearer token ({TOKEN_ENV} or --token): every request on \
                 {listen} must then carry `Authorization: Bearer <token>`"
            ))),
        }
    }
}

/// Middleware: 401 with ARM's error body unless the request carries `Bearer <token>` or a
/// token the identity endpoint issued ([`crate::tenancy::token_proof`]). The cloud's metadata
/// and the identity endpoint are open: a client reads them before it has a token (the identity
/// endpoint demands the token itself as its `X-IDENTITY-HEADER`).
pub async fn require_token(State(token): State<Arc<str>>, req: Request, next: Next) -> Response {
    // This layer runs before routing normalises the path (`az cloud register` asks for
    // `//metadata/endpoints`), so leading slashes are not compared.
    let path = req.uri().path().trim_start_matches('/');
    if path == "metadata/endpoints" || path == crate::tenancy::IDENTITY_PATH.trim_start_matches('/')
    {
        return next.run(req).await;
    }
    let header = req.headers().get(http::header::AUTHORIZATION);
    let issued = |given: &[u8]| {
        let proof = crate::tenancy::token_proof(&token);
        given.split(|b| *b == b'.').count() == 3
            && given
                .rsplit(|b| *b == b'.')
                .next()
                .is_some_and(|sig| constant_time_eq(sig, proof.as_bytes()))
    };
    let error = match header.map(|h| h.as_bytes()) {
        None => Some((
            "AuthenticationFailed",
            "Authentication failed. The 'Authorization' header is missing.",
        )),
        Some(h) => match h.strip_prefix(b"Bearer ") {
            Some(given) if constant_time_eq(given, token.as_bytes()) || issued(given) => None,
            Some(_) => Some(("InvalidAuthenticationToken", "The access token is invalid.")),
            None => Some((
                "AuthenticationFailed",
                "Authentication failed. The 'Authorization' header is not a bearer token.",
            )),
        },
    };
    match error {
        None => next.run(req).await,
        Some((code, message)) => {
            let mut resp = ArmError::new(StatusCode::UNAUTHORIZED, code, message).into_response();
            resp.headers_mut().insert(
                http::header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"localplane\""),
            );
            resp
        }
    }
}

/// Compares without stopping at the first differing byte (the length is not secret).
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn loopback_needs_nothing_and_anything_else_needs_allow_remote_and_a_token() {
        let none = Access::default();
        assert!(none.check_listen(addr("127.0.0.1:8790")).is_ok());
        assert!(none.check_listen(addr("[::1]:8790")).is_ok());
        for a in [
            "0.0.0.0:8790",
            "[::]:8790",
            "192.168.1.10:8790",
            "10.0.0.1:0",
        ] {
            let e = none.check_listen(addr(a)).unwrap_err().to_string();
            assert!(e.contains("--allow-remote"), "{a}: {e}");
        }
        let no_token = Access {
            allow_remote: true,
            token: None,
        };
        let e = no_token
            .check_listen(addr("0.0.0.0:8790"))
            .unwrap_err()
            .to_string();
        assert!(e.contains(TOKEN_ENV), "{e}");
        let token_only = Access {
            allow_remote: false,
            token: Some("0123456789abcdef".into()),
        };
        assert!(token_only.check_listen(addr("0.0.0.0:8790")).is_err());
        let both = Access {
            allow_remote: true,
            token: Some("0123456789abcdef".into()),
        };
        assert!(both.check_listen(addr("0.0.0.0:8790")).is_ok());
        let short = Access {
            allow_remote: true,
            token: Some("short".into()),
        };
        assert!(short.check_listen(addr("127.0.0.1:0")).is_err());
    }

    #[test]
    fn the_token_never_shows_in_debug() {
        let a = Access {
            allow_remote: true,
            token: Some("s3cr3t-s3cr3t-s3cr3t".into()),
        };
        assert!(!format!("{a:?}").contains("s3cr3t"));
    }

    #[test]
    fn equal_means_equal() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }
}
