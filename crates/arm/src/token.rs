//! Where ARM bearer tokens come from, and keeping them fresh without ever printing them.
//!
//! [`TokenSourceKind`] is chosen by `ARM_TOKEN_SOURCE`:
//!
//! - `managed-identity`: azure_identity's `ManagedIdentityCredential`, with the user-assigned
//!   client id from `MANAGED_IDENTITY_CLIENT_ID` or `AZURE_CLIENT_ID` (system-assigned when
//!   neither is set). Inside Container Apps it talks to `IDENTITY_ENDPOINT` with the
//!   `X-IDENTITY-HEADER: $IDENTITY_HEADER` secret (the App Service protocol, api-version
//!   2019-08-01); elsewhere it falls back to IMDS.
//! - `cli`: azure_identity's `AzureCliCredential` (`az account get-access-token`), for an
//!   operator's machine.
//! - `none`: no `Authorization` header, for localplane on loopback.
//! - `static`: the fixed bearer token in `LOCALPLANE_TOKEN`, for a localplane started with
//!   `--allow-remote --token` (it answers 401 to any request without it).
//! - `auto` (the default): `static` when `LOCALPLANE_TOKEN` is set and the endpoint is plain
//!   `http` (localplane; never sent to an `https` endpoint such as Azure's); managed identity when `IDENTITY_ENDPOINT` or `MSI_ENDPOINT` is set or a
//!   `MANAGED_IDENTITY_CLIENT_ID` is given (IMDS); `none` when the ARM endpoint is plain `http`
//!   on a loopback address (localplane: a real token must never travel unencrypted); `cli`
//!   otherwise.
//!
//! Tokens are cached and refreshed before they expire (at the earlier of 5 minutes before
//! expiry and half their lifetime), and after a 401. [`BearerToken`]'s `Debug` prints no secret,
//! and nothing in this crate formats a token into a message.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use azure_core::credentials::TokenCredential;
use tokio::sync::Mutex;

use crate::ArmError;

/// The default token scope: Azure Resource Manager.
pub const DEFAULT_SCOPE: &str = "https://management.azure.com/.default";

/// The identity variables whose presence (never value) is logged at start.
pub const IDENTITY_VARS: &[&str] = &[
    "IDENTITY_ENDPOINT",
    "IDENTITY_HEADER",
    "MSI_ENDPOINT",
    "MSI_SECRET",
    "IMDS_ENDPOINT",
    "AZURE_CLIENT_ID",
    "MANAGED_IDENTITY_CLIENT_ID",
    "AZURE_TENANT_ID",
    "AZURE_FEDERATED_TOKEN_FILE",
    LOCALPLANE_TOKEN_VAR,
];

/// The variable holding localplane's bearer token (the `static` source).
pub const LOCALPLANE_TOKEN_VAR: &str = "LOCALPLANE_TOKEN";

/// Which token source to use (`ARM_TOKEN_SOURCE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenSourceKind {
    Auto,
    ManagedIdentity,
    Cli,
    None,
    /// A fixed bearer token (`LOCALPLANE_TOKEN`), for a localplane that requires one.
    Static,
}

impl FromStr for TokenSourceKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "" | "auto" => Ok(TokenSourceKind::Auto),
            "managed-identity" | "managed_identity" | "mi" | "msi" => {
                Ok(TokenSourceKind::ManagedIdentity)
            }
            "cli" | "az" | "azure-cli" => Ok(TokenSourceKind::Cli),
            "none" | "off" => Ok(TokenSourceKind::None),
            "static" | "localplane" => Ok(TokenSourceKind::Static),
            other => Err(format!(
                "{other:?} is not a token source: use managed-identity, cli, static, none or auto"
            )),
        }
    }
}

impl fmt::Display for TokenSourceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TokenSourceKind::Auto => "auto",
            TokenSourceKind::ManagedIdentity => "managed-identity",
            TokenSourceKind::Cli => "cli",
            TokenSourceKind::None => "none",
            TokenSourceKind::Static => "static",
        })
    }
}

/// Which identity variables are set (a snapshot of the process environment, or a test's).
#[derive(Clone, Debug, Default)]
pub struct IdentityEnv {
    vars: Vec<(&'static str, Option<String>)>,
}

impl IdentityEnv {
    /// Reads [`IDENTITY_VARS`] from the process environment (empty values count as unset).
    pub fn from_process() -> Self {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// Reads [`IDENTITY_VARS`] through `lookup` (for tests).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        IdentityEnv {
            vars: IDENTITY_VARS
                .iter()
                .map(|k| (*k, lookup(k).filter(|v| !v.is_empty())))
                .collect(),
        }
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.vars
            .iter()
            .find(|(k, _)| *k == key)
            .and_then(|(_, v)| v.as_deref())
    }

    /// Whether `key` is set.
    pub fn is_set(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The names of the identity variables that are set (values are never exposed here).
    pub fn present(&self) -> Vec<&'static str> {
        self.vars
            .iter()
            .filter(|(_, v)| v.is_some())
            .map(|(k, _)| *k)
            .collect()
    }

    /// The user-assigned client id: `MANAGED_IDENTITY_CLIENT_ID`, else `AZURE_CLIENT_ID`.
    pub fn client_id(&self) -> Option<String> {
        self.get("MANAGED_IDENTITY_CLIENT_ID")
            .or_else(|| self.get("AZURE_CLIENT_ID"))
            .map(str::to_owned)
    }

    /// Logs which identity variables are present, by name only.
    pub fn log_presence(&self) {
        let present = self.present().join(",");
        let absent: Vec<&str> = self
            .vars
            .iter()
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| *k)
            .collect();
        tracing::info!(
            present = present.as_str(),
            absent = absent.join(",").as_str(),
            "identity variables (names only)"
        );
    }
}

/// Resolves `auto` (see the module docs); any other kind is returned as is.
pub fn resolve_kind(
    requested: TokenSourceKind,
    env: &IdentityEnv,
    endpoint: &url::Url,
) -> TokenSourceKind {
    if requested != TokenSourceKind::Auto {
        return requested;
    }
    if env.is_set(LOCALPLANE_TOKEN_VAR) && endpoint.scheme() == "http" {
        return TokenSourceKind::Static;
    }
    if env.is_set("IDENTITY_ENDPOINT")
        || env.is_set("MSI_ENDPOINT")
        || env.is_set("MANAGED_IDENTITY_CLIENT_ID")
    {
        return TokenSourceKind::ManagedIdentity;
    }
    let loopback = match endpoint.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        None => false,
    };
    if endpoint.scheme() == "http" && loopback {
        TokenSourceKind::None
    } else {
        TokenSourceKind::Cli
    }
}

/// A bearer token. Its `Debug` and `Display` never show the secret.
#[derive(Clone)]
pub struct BearerToken(String);

impl BearerToken {
    /// The secret, for the `Authorization` header only.
    pub fn secret(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BearerToken(<redacted>)")
    }
}

struct Cached {
    token: BearerToken,
    /// Unix seconds after which the token is refreshed.
    refresh_at: i64,
}

enum Inner {
    None,
    Static(BearerToken),
    Credential(Arc<dyn TokenCredential>),
}

/// A source of ARM bearer tokens with a refresh-before-expiry cache.
pub struct TokenSource {
    kind: TokenSourceKind,
    inner: Inner,
    scope: String,
    cache: Mutex<Option<Cached>>,
    fetches: std::sync::atomic::AtomicU64,
}

impl fmt::Debug for TokenSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenSource")
            .field("kind", &self.kind)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

impl TokenSource {
    /// No token at all (localplane).
    pub fn none() -> Self {
        Self::with(TokenSourceKind::None, Inner::None, DEFAULT_SCOPE)
    }

    /// A fixed bearer token (localplane's `LOCALPLANE_TOKEN`).
    pub fn fixed(token: impl Into<String>) -> Self {
        Self::with(
            TokenSourceKind::Static,
            Inner::Static(BearerToken(token.into())),
            DEFAULT_SCOPE,
        )
    }

    /// Any azure_core credential (used for managed identity, the CLI, and tests).
    pub fn from_credential(
        kind: TokenSourceKind,
        credential: Arc<dyn TokenCredential>,
        scope: &str,
    ) -> Self {
        Self::with(kind, Inner::Credential(credential), scope)
    }

    fn with(kind: TokenSourceKind, inner: Inner, scope: &str) -> Self {
        TokenSource {
            kind,
            inner,
            scope: scope.to_owned(),
            cache: Mutex::new(None),
            fetches: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Builds the source `requested` resolves to, logging the identity variables' presence.
    pub fn build(
        requested: TokenSourceKind,
        env: &IdentityEnv,
        endpoint: &url::Url,
        scope: &str,
    ) -> Result<Self, ArmError> {
        env.log_presence();
        // azure_identity's credentials fetch tokens through azure_core's reqwest client.
        crate::tls::install_provider();
        let kind = resolve_kind(requested, env, endpoint);
        tracing::info!(
            requested = %requested,
            token_source = %kind,
            user_assigned = env.client_id().is_some(),
            "ARM token source chosen"
        );
        match kind {
            TokenSourceKind::None | TokenSourceKind::Auto => Ok(Self::none()),
            TokenSourceKind::Static => match env.get(LOCALPLANE_TOKEN_VAR) {
                Some(t) => Ok(Self::fixed(t)),
                None => Err(ArmError::Token(format!(
                    "token source static needs {LOCALPLANE_TOKEN_VAR} (the token localplane \
                     was started with)"
                ))),
            },
            TokenSourceKind::ManagedIdentity => {
                use azure_identity::{
                    ManagedIdentityCredential, ManagedIdentityCredentialOptions, UserAssignedId,
                };
                let options = ManagedIdentityCredentialOptions {
                    user_assigned_id: env.client_id().map(UserAssignedId::ClientId),
                    ..Default::default()
                };
                let cred = ManagedIdentityCredential::new(Some(options))
                    .map_err(|e| ArmError::Token(format!("managed identity: {e}")))?;
                Ok(Self::from_credential(kind, cred, scope))
            }
            TokenSourceKind::Cli => {
                let cred = azure_identity::AzureCliCredential::new(None)
                    .map_err(|e| ArmError::Token(format!("azure cli: {e}")))?;
                Ok(Self::from_credential(kind, cred, scope))
            }
        }
    }

    /// The kind this source is.
    pub fn kind(&self) -> TokenSourceKind {
        self.kind
    }

    /// How many tokens were fetched from the credential so far (refreshes included).
    pub fn fetch_count(&self) -> u64 {
        self.fetches.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A valid token, from the cache or freshly fetched; `None` for the `none` source.
    pub async fn token(&self) -> Result<Option<BearerToken>, ArmError> {
        let cred = match &self.inner {
            Inner::None => return Ok(None),
            Inner::Static(t) => return Ok(Some(t.clone())),
            Inner::Credential(cred) => cred,
        };
        let mut cache = self.cache.lock().await;
        let now = unix_now();
        if let Some(c) = cache.as_ref().filter(|c| now < c.refresh_at) {
            return Ok(Some(c.token.clone()));
        }
        let scopes = [self.scope.as_str()];
        let access = cred
            .get_token(&scopes, None)
            .await
            .map_err(|e| ArmError::Token(format!("{} credential: {e}", self.kind)))?;
        self.fetches
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let expires = access.expires_on.unix_timestamp();
        let lifetime = (expires - now).max(0);
        let margin = (lifetime / 2).min(300);
        let token = BearerToken(access.token.secret().to_owned());
        tracing::debug!(
            token_source = %self.kind,
            expires_in_s = lifetime,
            "ARM token fetched"
        );
        *cache = Some(Cached {
            token: token.clone(),
            refresh_at: expires - margin,
        });
        Ok(Some(token))
    }

    /// Forgets the cached token (after a 401), so the next call fetches a new one.
    pub async fn invalidate(&self) {
        *self.cache.lock().await = None;
    }
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_secs() as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> IdentityEnv {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        IdentityEnv::from_lookup(|k| {
            pairs
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn token_source_names_parse() {
        for (s, k) in [
            ("managed-identity", TokenSourceKind::ManagedIdentity),
            ("cli", TokenSourceKind::Cli),
            ("none", TokenSourceKind::None),
            ("", TokenSourceKind::Auto),
            ("AUTO", TokenSourceKind::Auto),
        ] {
            assert_eq!(s.parse::<TokenSourceKind>(), Ok(k), "{s}");
        }
        assert!("password".parse::<TokenSourceKind>().is_err());
    }

    #[test]
    fn auto_prefers_the_container_apps_identity_endpoint() {
        let https: url::Url = "https://management.azure.com".parse().unwrap();
        let local: url::Url = "http://127.0.0.1:8080".parse().unwrap();
        let aca = env(&[
            ("IDENTITY_ENDPOINT", "http://localhost:42356/msi/token"),
            ("IDENTITY_HEADER", "x"),
        ]);
        let auto = TokenSourceKind::Auto;
        assert_eq!(
            resolve_kind(auto, &aca, &https),
            TokenSourceKind::ManagedIdentity
        );
        assert_eq!(
            resolve_kind(auto, &aca, &local),
            TokenSourceKind::ManagedIdentity
        );
        let vm = env(&[("MANAGED_IDENTITY_CLIENT_ID", "abc")]);
        assert_eq!(
            resolve_kind(auto, &vm, &https),
            TokenSourceKind::ManagedIdentity
        );
        let laptop = env(&[]);
        assert_eq!(resolve_kind(auto, &laptop, &https), TokenSourceKind::Cli);
        assert_eq!(resolve_kind(auto, &laptop, &local), TokenSourceKind::None);
        assert_eq!(
            resolve_kind(TokenSourceKind::Cli, &aca, &local),
            TokenSourceKind::Cli
        );
    }

    #[test]
    fn client_id_prefers_the_original_variable_name_and_values_stay_out_of_presence() {
        let e = env(&[
            ("AZURE_CLIENT_ID", "from-azure"),
            ("MANAGED_IDENTITY_CLIENT_ID", "from-lab"),
            ("IDENTITY_HEADER", ""),
        ]);
        assert_eq!(e.client_id().as_deref(), Some("from-lab"));
        assert_eq!(
            e.present(),
            vec!["AZURE_CLIENT_ID", "MANAGED_IDENTITY_CLIENT_ID"]
        );
        let e = env(&[("AZURE_CLIENT_ID", "from-azure")]);
        assert_eq!(e.client_id().as_deref(), Some("from-azure"));
    }

    #[test]
    fn a_localplane_token_is_used_for_http_endpoints_only() {
        let https: url::Url = "https://management.azure.com".parse().unwrap();
        let remote: url::Url = "http://10.1.2.3:8790".parse().unwrap();
        let e = env(&[(LOCALPLANE_TOKEN_VAR, "0123456789abcdef")]);
        let auto = TokenSourceKind::Auto;
        assert_eq!(resolve_kind(auto, &e, &remote), TokenSourceKind::Static);
        assert_eq!(resolve_kind(auto, &e, &https), TokenSourceKind::Cli);
        assert_eq!(
            "static".parse::<TokenSourceKind>(),
            Ok(TokenSourceKind::Static)
        );
        assert_eq!(e.present(), vec![LOCALPLANE_TOKEN_VAR]);
    }

    #[tokio::test]
    async fn the_static_source_returns_its_token_and_never_prints_it() {
        let e = env(&[(LOCALPLANE_TOKEN_VAR, "s3cr3t-0123456789")]);
        let remote: url::Url = "http://10.1.2.3:8790".parse().unwrap();
        let src = TokenSource::build(TokenSourceKind::Static, &e, &remote, DEFAULT_SCOPE).unwrap();
        let t = src.token().await.unwrap().unwrap();
        assert_eq!(t.secret(), "s3cr3t-0123456789");
        assert!(!format!("{src:?} {t:?}").contains("s3cr3t"));
        let missing =
            TokenSource::build(TokenSourceKind::Static, &env(&[]), &remote, DEFAULT_SCOPE)
                .unwrap_err()
                .to_string();
        assert!(missing.contains(LOCALPLANE_TOKEN_VAR), "{missing}");
    }

    #[test]
    fn bearer_token_debug_is_redacted() {
        let t = BearerToken("s3cr3t-token".into());
        assert!(!format!("{t:?}").contains("s3cr3t"));
    }
}
