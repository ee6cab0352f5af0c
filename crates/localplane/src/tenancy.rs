//! The ARM surface a real client touches before Microsoft.App: the cloud's metadata
//! (`az cloud register --endpoint-resource-manager`), a managed-identity token endpoint
//! (`az login --identity`, `ManagedIdentityCredential`), the subscription and its tenant,
//! resource groups, and the Microsoft.App provider's registration.
//!
//! localplane is one subscription ([`SUBSCRIPTION_ID`]) in one tenant ([`TENANT_ID`]); any
//! subscription id in a path is served as it always was, and listed when it holds resources.
//! Tokens: the identity endpoint hands out an unsigned JWT carrying the tenant (`tid`), which
//! the az CLI decodes without verifying; the ARM API accepts any bearer on loopback (with
//! `--token`, see [`crate::access`]).

use std::collections::BTreeSet;

use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use serde_json::{Value, json};

use crate::error::ArmError;
use crate::handler::{ApiState, Origin, parse_body, with_lro};
use crate::plane::{GroupRes, Plane, key};

/// The subscription localplane lists (any id in a path is served).
pub const SUBSCRIPTION_ID: &str = "00000000-0000-0000-0000-000000000000";
/// The tenant of that subscription and of the tokens the identity endpoint issues.
pub const TENANT_ID: &str = "00000000-0000-0000-0000-0000000000aa";
/// The identity endpoint's path, App Service style (`IDENTITY_ENDPOINT`).
pub const IDENTITY_PATH: &str = "/msi/token";
/// The identity endpoint's path, IMDS style (`AZURE_POD_IDENTITY_AUTHORITY_HOST` + this).
pub const IMDS_PATH: &str = "/metadata/identity/oauth2/token";
/// The audience tokens are issued for (Azure's own, so SDK defaults work unchanged).
pub const AUDIENCE: &str = "https://management.core.windows.net/";

/// The regions the provider lists for its resource types: Azure's public regions where
/// Container Apps runs (a user's `az group create -l <region>` then passes the CLI's location
/// check), and `local`, the default of a resource created without one.
const LOCATIONS: &[&str] = &[
    "Local",
    "East US",
    "East US 2",
    "West US",
    "West US 2",
    "West US 3",
    "Central US",
    "North Central US",
    "South Central US",
    "Canada Central",
    "Brazil South",
    "North Europe",
    "West Europe",
    "UK South",
    "France Central",
    "Germany West Central",
    "Sweden Central",
    "Switzerland North",
    "Norway East",
    "Poland Central",
    "Italy North",
    "Japan East",
    "Korea Central",
    "Australia East",
    "Southeast Asia",
    "East Asia",
    "Central India",
    "South Africa North",
    "UAE North",
];

/// The Microsoft.App resource types localplane serves, with the api-versions it answers.
const RESOURCE_TYPES: &[&str] = &[
    "managedEnvironments",
    "containerApps",
    "containerApps/revisions",
    "containerApps/revisions/replicas",
    "jobs",
    "jobs/executions",
    "locations",
    "locations/containerappOperationStatuses",
    "locations/containerappOperationResults",
];

/// `GET /metadata/endpoints`: the cloud's endpoints, on the origin the client called, in the
/// shape of `management.azure.com/metadata/endpoints?api-version=2022-09-01` (one cloud).
pub async fn metadata_endpoints(origin: Origin, State(s): State<ApiState>) -> Response {
    let base = format!("{}/", origin.base(&s.plane));
    axum::Json(json!({
        "name": "localplane",
        "resourceManager": base,
        "portal": base,
        "authentication": {
            "loginEndpoint": base,
            "audiences": [AUDIENCE, "https://management.azure.com/"],
            "tenant": TENANT_ID,
            "identityProvider": "AAD",
        },
        "graph": base,
        "graphAudience": base,
        "microsoftGraphResourceId": base,
        "gallery": base,
        "sqlManagement": base,
        "batch": base,
        "media": base,
        "activeDirectoryDataLake": base,
        "vmImageAliasDoc": format!("{base}metadata/vm-image-aliases"),
        "suffixes": {
            "acrLoginServer": "localplane.azurecr.io",
            "keyVaultDns": "vault.localplane",
            "storage": "core.localplane",
            "sqlServerHostname": "database.localplane",
        },
    }))
    .into_response()
}

/// The query of a token request: the resource a token is asked for.
#[derive(serde::Deserialize)]
pub struct TokenQuery {
    resource: Option<String>,
}

/// `GET /msi/token` (App Service: `X-IDENTITY-HEADER`) and `GET /metadata/identity/oauth2/token`
/// (IMDS: `Metadata: true`): a token for `resource`, in each source's answer shape (App
/// Service's `expires_on`, IMDS's `expires_in`; MSAL reads both).
pub async fn identity_token(
    State(s): State<ApiState>,
    headers: HeaderMap,
    Query(q): Query<TokenQuery>,
    uri: http::Uri,
) -> Result<Response, ArmError> {
    let token = s.token.clone();
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let imds = uri.path().eq_ignore_ascii_case(IMDS_PATH);
    let proof = if imds {
        header("metadata").filter(|v| v.eq_ignore_ascii_case("true"))
    } else {
        header("x-identity-header")
    };
    let Some(proof) = proof else {
        return Err(ArmError::bad_request(
            "BadRequest",
            if imds {
                "Required metadata header not specified"
            } else {
                "The X-IDENTITY-HEADER header is required (IDENTITY_HEADER)."
            },
        ));
    };
    // With a token on the listener the identity endpoint is the way to it: App Service style
    // only, and the header must be that token (IDENTITY_HEADER=$LOCALPLANE_TOKEN).
    if let Some(t) = &token
        && (imds || proof != &**t)
    {
        return Err(ArmError::new(
            StatusCode::UNAUTHORIZED,
            "AuthenticationFailed",
            "localplane runs with a token: use IDENTITY_ENDPOINT with IDENTITY_HEADER set to that token.",
        ));
    }
    let Some(resource) = q.resource.filter(|r| !r.is_empty()) else {
        return Err(ArmError::bad_request(
            "BadRequest",
            "The 'resource' query parameter is required.",
        ));
    };
    let now = chrono::Utc::now().timestamp();
    let expires = now + 24 * 3600;
    let access_token = local_jwt(
        token.as_deref(),
        &json!({
            "aud": resource,
            "iss": format!("https://sts.windows.net/{TENANT_ID}/"),
            "iat": now,
            "nbf": now,
            "exp": expires,
            "tid": TENANT_ID,
            "oid": "00000000-0000-0000-0000-0000000000bb",
            "sub": "00000000-0000-0000-0000-0000000000bb",
            "appid": "00000000-0000-0000-0000-0000000000cc",
            "xms_mirid": format!("/subscriptions/{SUBSCRIPTION_ID}/resourcegroups/localplane/providers/Microsoft.ManagedIdentity/userAssignedIdentities/localplane"),
        }),
    );
    let mut body = json!({
        "access_token": access_token,
        "resource": resource,
        "token_type": "Bearer",
        "client_id": "00000000-0000-0000-0000-0000000000cc",
    });
    if imds {
        body["expires_in"] = json!((expires - now).to_string());
        body["expires_on"] = json!(expires.to_string());
    } else {
        body["expires_on"] = json!(expires.to_string());
    }
    Ok(axum::Json(body).into_response())
}

/// A JWT with `claims`, as the az CLI reads one (it decodes the payload for `tid` without
/// verifying). Its third segment is [`token_proof`] of the listener's token, which
/// [`crate::access::require_token`] accepts in place of the token; without a token it proves
/// nothing (loopback accepts any bearer).
fn local_jwt(token: Option<&str>, claims: &Value) -> String {
    let header = json!({"typ": "JWT", "alg": "RS256", "kid": "localplane"});
    format!(
        "{}.{}.{}",
        base64url(header.to_string().as_bytes()),
        base64url(claims.to_string().as_bytes()),
        token_proof(token.unwrap_or(""))
    )
}

/// What the last segment of a token localplane issued holds: base64url(SHA-256 of a fixed
/// prefix and the listener's token). Every token issued is equal in power to the listener's
/// token, and only the identity endpoint, which demands that token, hands one out.
pub fn token_proof(token: &str) -> String {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    h.update(b"localplane-token-proof:");
    h.update(token.as_bytes());
    base64url(&h.finalize())
}

/// RFC 4648 §5 base64url, no padding.
fn base64url(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..=chunk.len() {
            out.push(char::from(A[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    out
}

fn subscription_json(sub: &str) -> Value {
    json!({
        "id": format!("/subscriptions/{sub}"),
        "subscriptionId": sub,
        "tenantId": TENANT_ID,
        "displayName": "localplane",
        "state": "Enabled",
        "subscriptionPolicies": {
            "locationPlacementId": "Public_2014-09-01",
            "quotaId": "PayAsYouGo_2014-09-01",
            "spendingLimit": "Off",
        },
        "authorizationSource": "RoleBased",
        "managedByTenants": [],
        "tags": {},
    })
}

/// `GET /subscriptions`: localplane's subscription, and any other that holds resources.
pub async fn list_subscriptions(State(s): State<ApiState>) -> Response {
    let mut subs: BTreeSet<String> = BTreeSet::from([SUBSCRIPTION_ID.to_owned()]);
    {
        let st = s.plane.lock();
        subs.extend(st.apps.values().map(|a| a.sub.clone()));
        subs.extend(st.jobs.values().map(|j| j.sub.clone()));
        subs.extend(st.envs.values().map(|e| e.sub.clone()));
        subs.extend(st.groups.values().map(|g| g.sub.clone()));
    }
    let value: Vec<Value> = subs.iter().map(|s| subscription_json(s)).collect();
    axum::Json(json!({ "value": value })).into_response()
}

/// `GET /subscriptions/{sub}`: any subscription id is served.
pub async fn get_subscription(Path(sub): Path<String>) -> Response {
    axum::Json(subscription_json(&sub)).into_response()
}

/// `GET /tenants`: the one tenant.
pub async fn list_tenants() -> Response {
    axum::Json(json!({"value": [{
        "id": format!("/tenants/{TENANT_ID}"),
        "tenantId": TENANT_ID,
        "tenantCategory": "Home",
        "displayName": "localplane",
        "defaultDomain": "localplane.onmicrosoft.com",
    }]}))
    .into_response()
}

fn group_json(g: &GroupRes) -> Value {
    json!({
        "id": format!("/subscriptions/{}/resourceGroups/{}", g.sub, g.name),
        "name": g.name,
        "type": "Microsoft.Resources/resourceGroups",
        "location": g.location,
        "tags": g.tags,
        "properties": {"provisioningState": "Succeeded"},
    })
}

fn group_not_found(rg: &str) -> ArmError {
    ArmError::new(
        StatusCode::NOT_FOUND,
        "ResourceGroupNotFound",
        format!("Resource group '{rg}' could not be found."),
    )
}

/// The groups of `sub`: those created, and those only named by a resource in it (localplane
/// never required a group before its resources, so a lab's group exists by use).
fn groups_of(st: &crate::plane::State, sub: &str) -> Vec<GroupRes> {
    let mut out: Vec<GroupRes> = st
        .groups
        .values()
        .filter(|g| g.sub.eq_ignore_ascii_case(sub))
        .cloned()
        .collect();
    let implied = st
        .apps
        .values()
        .map(|a| (&a.sub, &a.rg, &a.location))
        .chain(st.jobs.values().map(|j| (&j.sub, &j.rg, &j.location)))
        .chain(st.envs.values().map(|e| (&e.sub, &e.rg, &e.location)));
    for (s, rg, loc) in implied {
        if s.eq_ignore_ascii_case(sub) && !out.iter().any(|g| g.name.eq_ignore_ascii_case(rg)) {
            out.push(GroupRes {
                sub: s.clone(),
                name: rg.clone(),
                location: loc.clone(),
                tags: json!({}),
            });
        }
    }
    out
}

pub async fn list_groups(State(s): State<ApiState>, Path(sub): Path<String>) -> Response {
    let st = s.plane.lock();
    let value: Vec<Value> = groups_of(&st, &sub).iter().map(group_json).collect();
    axum::Json(json!({ "value": value })).into_response()
}

pub async fn get_group(
    State(s): State<ApiState>,
    Path((sub, rg)): Path<(String, String)>,
) -> Result<Response, ArmError> {
    let st = s.plane.lock();
    let g = groups_of(&st, &sub)
        .into_iter()
        .find(|g| g.name.eq_ignore_ascii_case(&rg))
        .ok_or_else(|| group_not_found(&rg))?;
    Ok(axum::Json(group_json(&g)).into_response())
}

/// `HEAD` (`az group exists`): 204 when it exists, 404 when not.
pub async fn head_group(
    State(s): State<ApiState>,
    Path((sub, rg)): Path<(String, String)>,
) -> StatusCode {
    let st = s.plane.lock();
    if groups_of(&st, &sub)
        .iter()
        .any(|g| g.name.eq_ignore_ascii_case(&rg))
    {
        StatusCode::NO_CONTENT
    } else {
        StatusCode::NOT_FOUND
    }
}

pub async fn put_group(
    State(s): State<ApiState>,
    Path((sub, rg)): Path<(String, String)>,
    body: Bytes,
) -> Result<Response, ArmError> {
    let body = parse_body(&body)?;
    let Some(location) = body.get("location").and_then(Value::as_str) else {
        return Err(ArmError::bad_request(
            "LocationRequired",
            "The location property is required for this definition.",
        ));
    };
    let mut st = s.plane.lock();
    let existed = groups_of(&st, &sub)
        .iter()
        .any(|g| g.name.eq_ignore_ascii_case(&rg));
    let g = GroupRes {
        sub,
        name: rg.clone(),
        location: location.to_owned(),
        tags: body
            .get("tags")
            .cloned()
            .filter(Value::is_object)
            .unwrap_or(json!({})),
    };
    let out = group_json(&g);
    st.groups.insert(key(&rg), g);
    drop(st);
    s.plane.persist();
    let code = if existed {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    Ok((code, axum::Json(out)).into_response())
}

/// `DELETE`: the group and everything in it (apps, jobs, environments), as ARM deletes a
/// group; 202 with an operation that ends when the apps' replicas have stopped.
pub async fn delete_group(
    State(s): State<ApiState>,
    origin: Origin,
    Path((sub, rg)): Path<(String, String)>,
) -> Result<Response, ArmError> {
    let (apps, jobs, location) = {
        let mut st = s.plane.lock();
        let Some(g) = groups_of(&st, &sub)
            .into_iter()
            .find(|g| g.name.eq_ignore_ascii_case(&rg))
        else {
            return Err(group_not_found(&rg));
        };
        st.groups.remove(&key(&rg));
        st.envs.retain(|_, e| !e.rg.eq_ignore_ascii_case(&rg));
        let apps: Vec<String> = st
            .apps
            .values()
            .filter(|a| a.rg.eq_ignore_ascii_case(&rg))
            .map(|a| a.name.clone())
            .collect();
        let jobs: Vec<String> = st
            .jobs
            .values()
            .filter(|j| j.rg.eq_ignore_ascii_case(&rg))
            .map(|j| j.name.clone())
            .collect();
        (apps, jobs, g.location)
    };
    for j in &jobs {
        crate::jobs::remove_job(&s.plane, j);
    }
    let waits: Vec<_> = apps
        .iter()
        .filter_map(|a| crate::api::remove_app(&s.plane, a).map(|(_, stopped)| stopped))
        .collect();
    let op = {
        let mut st = s.plane.lock();
        s.plane.new_op(&mut st, &sub, &location, false)
    };
    let plane = s.plane.clone();
    let op2 = op.clone();
    s.plane.ctx.tracker.spawn(async move {
        for w in waits {
            w.await;
        }
        let mut st = plane.lock();
        Plane::finish_op(&mut st, &op2, crate::plane::OpStatus::Succeeded, None);
    });
    s.plane.persist();
    Ok(with_lro(
        StatusCode::ACCEPTED.into_response(),
        &s.plane,
        &origin,
        &op,
        true,
    ))
}

fn provider_json(sub: &str) -> Value {
    let types: Vec<Value> = RESOURCE_TYPES
        .iter()
        .map(|t| {
            json!({
                "resourceType": t,
                "locations": LOCATIONS,
                "apiVersions": crate::handler::API_VERSIONS,
                "capabilities": "None",
            })
        })
        .collect();
    json!({
        "id": format!("/subscriptions/{sub}/providers/Microsoft.App"),
        "namespace": "Microsoft.App",
        "registrationState": "Registered",
        "registrationPolicy": "RegistrationRequired",
        "resourceTypes": types,
    })
}

/// `GET /subscriptions/{sub}/providers/Microsoft.App`: registered, with what localplane serves.
/// Any other namespace is ARM's 404 `InvalidResourceNamespace`.
pub async fn get_provider(
    Path((sub, namespace)): Path<(String, String)>,
) -> Result<Response, ArmError> {
    if !namespace.eq_ignore_ascii_case("Microsoft.App") {
        return Err(ArmError::new(
            StatusCode::NOT_FOUND,
            "InvalidResourceNamespace",
            format!(
                "The resource namespace '{namespace}' is invalid (localplane serves Microsoft.App only)."
            ),
        ));
    }
    Ok(axum::Json(provider_json(&sub)).into_response())
}

/// `GET .../providers/Microsoft.App`, and `POST .../register` (already registered: the
/// provider as it is).
pub async fn get_app_provider(Path(sub): Path<String>) -> Response {
    axum::Json(provider_json(&sub)).into_response()
}

/// `POST .../providers/{namespace}/{action}`: Microsoft.App's `register`, else a 404.
pub async fn register_provider(
    Path((sub, namespace, action)): Path<(String, String, String)>,
) -> Result<Response, ArmError> {
    if !action.eq_ignore_ascii_case("register") {
        return Err(ArmError::new(
            StatusCode::NOT_FOUND,
            "NotFound",
            format!("localplane does not serve the provider action '{action}'."),
        ));
    }
    get_provider(Path((sub, namespace))).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64url_matches_rfc_4648_vectors() {
        // RFC 4648 §10, without padding, in the URL alphabet.
        for (i, o) in [
            ("", ""),
            ("f", "Zg"),
            ("fo", "Zm8"),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg"),
            ("fooba", "Zm9vYmE"),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64url(i.as_bytes()), o, "{i}");
        }
        assert_eq!(base64url(&[0xfb, 0xff]), "-_8");
    }

    #[test]
    fn the_token_carries_the_tenant_the_cli_reads() {
        let jwt = local_jwt(Some("t0123456789abcdef"), &json!({"tid": TENANT_ID}));
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3, "{jwt}");
        assert_eq!(
            parts[1],
            base64url(json!({"tid": TENANT_ID}).to_string().as_bytes())
        );
        assert_eq!(parts[2], token_proof("t0123456789abcdef"));
        assert_ne!(parts[2], token_proof("another-token-000"));
    }
}
