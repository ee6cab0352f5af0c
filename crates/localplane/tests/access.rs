//! Who may reach the ARM API (issue 19, point 1), and what random requests get (point 6).
//!
//! Loopback needs nothing; a non-loopback address is refused unless `--allow-remote` comes with
//! a token; then every request without `Authorization: Bearer <token>` is ARM's 401, and our ARM
//! client, given the token, is answered.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use localplane::{Access, Localplane, LocalplaneConfig, RuntimeKind};
use serde_json::Value;

const TOKEN: &str = "test-token-0123456789abcdef";

async fn start(
    listen: &str,
    access: Access,
) -> (Result<Localplane, localplane::Error>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("bin");
    std::fs::create_dir_all(&empty).unwrap();
    let r = localplane::start_with_access(
        LocalplaneConfig {
            max_replicas: localplane::quota::DEFAULT_MAX_REPLICAS,
            tls: false,
            listen: listen.parse().unwrap(),
            state_dir: dir.path().join("state"),
            evidence_dir: dir.path().join("evidence"),
            // No binaries: nothing can be started, whatever a request asks for.
            runtime: RuntimeKind::Process { bin_dir: empty },
        },
        access,
    )
    .await;
    (r, dir)
}

async fn get(url: &str, auth: Option<&str>) -> (u16, http::HeaderMap, Value) {
    match auth {
        Some(a) => get_with(url, &[("authorization", a)]).await,
        None => get_with(url, &[]).await,
    }
}

async fn get_with(url: &str, headers: &[(&str, &str)]) -> (u16, http::HeaderMap, Value) {
    let client: Client<HttpConnector, Full<Bytes>> =
        Client::builder(TokioExecutor::new()).build(HttpConnector::new());
    let mut req = http::Request::builder().method("GET").uri(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = tokio::time::timeout(
        Duration::from_secs(10),
        client.request(req.body(Full::new(Bytes::new())).unwrap()),
    )
    .await
    .unwrap()
    .unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        headers,
        serde_json::from_slice(&body).unwrap_or(Value::Null),
    )
}

fn apps_url(base: &str) -> String {
    format!(
        "{base}/subscriptions/{}/resourceGroups/{}/providers/Microsoft.App/containerApps?{}",
        common::SUB,
        common::RG,
        common::AV
    )
}

/// With a token, what a real client reads before it has one is open (the cloud's metadata,
/// even as `az cloud register` asks for it with a doubled slash), the identity endpoint hands
/// out a token only for the listener's token as its header, and the ARM API takes the token it
/// issued, but not one whose proof was made with another token.
#[tokio::test]
async fn with_a_token_the_identity_endpoint_is_the_way_in() {
    let access = Access {
        allow_remote: false,
        token: Some(TOKEN.into()),
    };
    let (lp, _dir) = start("127.0.0.1:0", access).await;
    let lp = lp.unwrap();
    let base = lp.base_url();
    let (code, _, v) = get(
        &format!("{base}//metadata/endpoints?api-version=2022-09-01"),
        None,
    )
    .await;
    assert_eq!(code, 200, "{v}");
    let identity = format!(
        "{base}{}?api-version=2019-08-01&resource=https://management.azure.com/",
        localplane::tenancy::IDENTITY_PATH
    );
    let (code, _, _) = get_with(&identity, &[("x-identity-header", "not-the-token-000")]).await;
    assert_eq!(code, 401);
    let (code, _, v) = get_with(&identity, &[("x-identity-header", TOKEN)]).await;
    assert_eq!(code, 200, "{v}");
    let jwt = v["access_token"].as_str().unwrap().to_owned();
    assert_ne!(jwt, TOKEN, "the token itself is never handed out");
    let (code, _, v) = get(&apps_url(&base), Some(&format!("Bearer {jwt}"))).await;
    assert_eq!(code, 200, "{v}");
    let (head, _) = jwt.rsplit_once('.').unwrap();
    let forged = format!(
        "{head}.{}",
        localplane::tenancy::token_proof("another-token-0123456")
    );
    let (code, _, _) = get(&apps_url(&base), Some(&format!("Bearer {forged}"))).await;
    assert_eq!(code, 401);
    lp.shutdown().await.unwrap();
}

#[tokio::test]
async fn loopback_is_served_without_a_token() {
    let (lp, _dir) = start("127.0.0.1:0", Access::default()).await;
    let lp = lp.unwrap();
    let (code, _, v) = get(&apps_url(&lp.base_url()), None).await;
    assert_eq!(code, 200, "{v}");
    lp.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_non_loopback_address_is_refused_without_allow_remote_and_a_token() {
    for (listen, access) in [
        ("0.0.0.0:0", Access::default()),
        (
            "0.0.0.0:0",
            Access {
                allow_remote: false,
                token: Some(TOKEN.into()),
            },
        ),
        (
            "0.0.0.0:0",
            Access {
                allow_remote: true,
                token: None,
            },
        ),
        ("[::]:0", Access::default()),
    ] {
        let (r, _dir) = start(listen, access.clone()).await;
        let e = match r {
            Ok(lp) => {
                let addr = lp.addr();
                lp.shutdown().await.unwrap();
                panic!("{listen} with {access:?} was bound ({addr})");
            }
            Err(e) => e.to_string(),
        };
        assert!(
            e.contains("--allow-remote") || e.contains("LOCALPLANE_TOKEN"),
            "{listen} {access:?}: {e}"
        );
    }
}

#[tokio::test]
async fn with_allow_remote_every_request_needs_the_token() {
    let (lp, _dir) = start(
        "0.0.0.0:0",
        Access {
            allow_remote: true,
            token: Some(TOKEN.into()),
        },
    )
    .await;
    let lp = lp.unwrap();
    let url = apps_url(&lp.base_url());
    for (auth, code_name) in [
        (None, "AuthenticationFailed"),
        (
            Some("Bearer wrong-token-0123456789"),
            "InvalidAuthenticationToken",
        ),
        (Some(TOKEN), "AuthenticationFailed"),
    ] {
        let (code, headers, v) = get(&url, auth).await;
        assert_eq!(code, 401, "{auth:?}: {v}");
        assert_eq!(v["error"]["code"], code_name, "{auth:?}: {v}");
        assert!(v["error"]["message"].is_string(), "{v}");
        assert!(headers.contains_key("www-authenticate"));
        assert!(!v.to_string().contains(TOKEN), "the token never comes back");
    }
    // Admin endpoints too: nothing is served without it.
    let (code, _, _) = get(&format!("{}/localplane/healthz", lp.base_url()), None).await;
    assert_eq!(code, 401);
    let (code, _, v) = get(&url, Some(&format!("Bearer {TOKEN}"))).await;
    assert_eq!(code, 200, "{v}");
    // Our ARM client sends it as it sends ARM tokens.
    let endpoint: url::Url = lp.base_url().parse().unwrap();
    let client = arm::ArmClient::new(
        arm::ClientConfig::new(endpoint.clone()),
        arm::TokenSource::fixed(TOKEN),
    )
    .unwrap();
    let resp = client
        .send("list_apps", reqwest_get(), url.parse().unwrap(), None)
        .await
        .unwrap();
    assert_eq!(resp.status, 200);
    let without =
        arm::ArmClient::new(arm::ClientConfig::new(endpoint), arm::TokenSource::none()).unwrap();
    let e = without
        .send("list_apps", reqwest_get(), url.parse().unwrap(), None)
        .await
        .unwrap_err();
    assert_eq!(e.status(), Some(401), "{e}");
    lp.shutdown().await.unwrap();
}

fn reqwest_get() -> arm::client::Method {
    arm::client::Method::GET
}

mod property {
    //! Random requests to the ARM API: never a panic, never a 5xx; every 4xx has ARM's error
    //! shape. (`/localplane/faults` is left out: injecting 5xx answers is what it is for.)
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};
    use serde_json::{Value, json};

    use super::*;

    const WORDS: &[&str] = &[
        "subscriptions",
        "resourceGroups",
        "providers",
        "Microsoft.App",
        "microsoft.app",
        "managedEnvironments",
        "containerApps",
        "CONTAINERAPPS",
        "revisions",
        "replicas",
        "jobs",
        "executions",
        "start",
        "stop",
        "restart",
        "activate",
        "deactivate",
        "locations",
        "containerappOperationStatuses",
        "containerappOperationResults",
        "localplane",
        "apps",
        "endpoints",
        "healthz",
        common::SUB,
        "subject",
        "a--b",
    ];

    fn segment() -> impl Strategy<Value = String> {
        prop_oneof![
            3 => proptest::sample::select(WORDS).prop_map(str::to_owned),
            1 => "[a-zA-Z0-9._~-]{0,40}",
            1 => "(%[0-9A-F]{2}){1,4}",
        ]
    }

    fn path() -> impl Strategy<Value = String> {
        let arm = proptest::collection::vec(segment(), 0..6).prop_map(|rest| {
            let mut p = format!(
                "/subscriptions/{}/resourceGroups/{}/providers/Microsoft.App",
                common::SUB,
                common::RG
            );
            for s in rest {
                p.push('/');
                p.push_str(&s);
            }
            p
        });
        let any =
            proptest::collection::vec(segment(), 0..9).prop_map(|s| format!("/{}", s.join("/")));
        // The routes themselves, with random names in them.
        let routes = (
            proptest::sample::select(
                &[
                    "managedEnvironments/{}",
                    "containerApps",
                    "containerApps/{}",
                    "containerApps/{}/revisions",
                    "containerApps/{}/revisions/{}",
                    "containerApps/{}/revisions/{}/restart",
                    "containerApps/{}/revisions/{}/replicas",
                    "containerApps/{}/revisions/{}/replicas/{}",
                    "containerApps/{}/revisions/{}/{}",
                    "jobs/{}",
                    "jobs/{}/start",
                    "jobs/{}/executions",
                    "jobs/{}/executions/{}",
                    "jobs/{}/executions/{}/stop",
                ][..],
            ),
            proptest::collection::vec(segment(), 3),
        )
            .prop_map(|(t, names)| {
                let mut out = format!(
                    "/subscriptions/{}/resourceGroups/{}/providers/Microsoft.App/",
                    common::SUB,
                    common::RG
                );
                let mut names = names.into_iter();
                for (i, part) in t.split("{}").enumerate() {
                    if i > 0 {
                        out.push_str(&names.next().unwrap_or_default());
                    }
                    out.push_str(part);
                }
                out
            });
        let ops = (segment(), segment()).prop_map(|(loc, op)| {
            format!(
                "/subscriptions/{}/providers/Microsoft.App/locations/{loc}/containerappOperationStatuses/{op}",
                common::SUB
            )
        });
        prop_oneof![4 => routes, 1 => ops, 1 => arm, 1 => any]
    }

    fn query() -> impl Strategy<Value = String> {
        let pair = prop_oneof![
            Just("api-version=2025-07-01".to_owned()),
            Just("api-version=".to_owned()),
            "[a-z-]{0,12}=[a-zA-Z0-9.-]{0,12}",
            "(%[0-9A-F]{2}){0,3}",
        ];
        let extra = proptest::collection::vec(pair, 0..3).prop_map(|v| v.join("&"));
        prop_oneof![
            3 => extra.clone().prop_map(|e| format!("api-version=2025-07-01&{e}")),
            1 => extra,
        ]
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(|f| json!(f)),
            ".{0,20}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 5, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                proptest::collection::btree_map(
                    prop_oneof![
                        Just("properties".to_owned()),
                        Just("template".to_owned()),
                        Just("configuration".to_owned()),
                        Just("containers".to_owned()),
                        Just("ingress".to_owned()),
                        Just("scale".to_owned()),
                        Just("tags".to_owned()),
                        Just("location".to_owned()),
                        "[a-zA-Z]{1,10}",
                    ],
                    inner,
                    0..5
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// Valid JSON, often shaped like an ARM body with the wrong types inside; or not JSON.
    fn body() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            Just(Vec::new()),
            json_value().prop_map(|v| serde_json::to_vec(&v).unwrap()),
            (json_value(), json_value(), json_value()).prop_map(|(t, c, tags)| {
                serde_json::to_vec(&json!({
                    "location": "local",
                    "tags": tags,
                    "properties": {"template": t, "configuration": c,
                                   "environmentId": "/subscriptions/x"}
                }))
                .unwrap()
            }),
            proptest::collection::vec(any::<u8>(), 0..64),
        ]
    }

    fn method() -> impl Strategy<Value = &'static str> {
        proptest::sample::select(&["GET", "PUT", "PATCH", "POST", "DELETE", "HEAD", "OPTIONS"][..])
    }

    #[test]
    fn random_requests_get_an_arm_4xx_never_a_5xx() {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let (lp, _dir) = rt.block_on(start("127.0.0.1:0", Access::default()));
        let lp = lp.unwrap();
        let base = lp.base_url();
        let client: Client<HttpConnector, Full<Bytes>> =
            Client::builder(TokioExecutor::new()).build(HttpConnector::new());
        let mut runner = TestRunner::new(Config {
            cases: 300,
            ..Config::default()
        });
        let strategy = (method(), path(), query(), body());
        let seen = std::cell::RefCell::new(std::collections::BTreeMap::<u16, u32>::new());
        let result = runner.run(&strategy, |(m, p, q, b)| {
            let uri = if q.is_empty() {
                format!("{base}{p}")
            } else {
                format!("{base}{p}?{q}")
            };
            let Ok(req) = http::Request::builder()
                .method(m)
                .uri(&uri)
                .header("content-type", "application/json")
                .body(Full::new(Bytes::from(b.clone())))
            else {
                return Ok(()); // not a request a client could send
            };
            let (status, body) = rt.block_on(async {
                let resp = tokio::time::timeout(Duration::from_secs(10), client.request(req))
                    .await
                    .expect("an answer within 10 s")
                    .expect("the server answers (no panic closed the connection)");
                let s = resp.status().as_u16();
                (s, resp.into_body().collect().await.unwrap().to_bytes())
            });
            *seen.borrow_mut().entry(status).or_default() += 1;
            prop_assert!(
                status < 500,
                "{m} {uri} -> {status}: {}",
                String::from_utf8_lossy(&body)
            );
            if status >= 400 && m != "HEAD" {
                let v: Value = serde_json::from_slice(&body).map_err(|e| {
                    TestCaseError::fail(format!(
                        "{m} {uri} -> {status}: not JSON ({e}): {:?}",
                        String::from_utf8_lossy(&body)
                    ))
                })?;
                prop_assert!(
                    v["error"]["code"].is_string() && v["error"]["message"].is_string(),
                    "{m} {uri} -> {status}: not an ARM error: {v}"
                );
            }
            Ok(())
        });
        rt.block_on(lp.shutdown()).unwrap();
        if let Err(e) = result {
            panic!("{e}");
        }
        let seen = seen.into_inner();
        eprintln!("statuses seen: {seen:?}");
        assert!(
            seen.keys().filter(|s| (400..500).contains(*s)).count() >= 3,
            "the cases must reach several kinds of 4xx: {seen:?}"
        );
    }
}
