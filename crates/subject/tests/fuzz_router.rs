//! Property test: random methods, paths, query strings, headers and bodies against the router
//! (in-process, tower `oneshot`). Never a panic, never a hang, never a 5xx except where the request
//! asked for one (`/status?code=5xx`), and every 4xx carries a JSON `{error}`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use http_body_util::BodyExt;
use proptest::prelude::*;
use subject::config::{AppMode, Secret};
use subject::{AppState, Config};
use tower::ServiceExt;

const KNOWN: &[&str] = &[
    "/",
    "/status",
    "/healthz",
    "/startup",
    "/ready",
    "/readyz",
    "/live",
    "/livez",
    "/delay",
    "/slow",
    "/cpu",
    "/alloc",
    "/health",
    "/dependency/health",
    "/admin/dependency",
    "/simulate/zombie",
    "/simulate/deadlock",
    "/simulate/crash",
    "/simulate/reset",
];

fn path() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::sample::select(KNOWN).prop_map(str::to_owned),
        1 => "/[a-zA-Z0-9/._~%-]{0,24}",
        1 => proptest::sample::select(KNOWN).prop_flat_map(|p| "[a-z/%.]{0,6}".prop_map(move |s| format!("{p}{s}"))),
    ]
}

fn query() -> impl Strategy<Value = Option<String>> {
    let num = prop_oneof![
        Just("0".to_owned()),
        Just("-1".to_owned()),
        Just("NaN".to_owned()),
        Just("1e999".to_owned()),
        Just("0.01".to_owned()),
        "-?[0-9]{1,6}(\\.[0-9]{0,3})?",
        "[a-z%+.]{0,6}",
    ];
    prop_oneof![
        Just(None),
        (
            proptest::sample::select(&["seconds", "code", "mib", "x"][..]),
            num
        )
            .prop_map(|(k, v)| Some(format!("{k}={v}"))),
        "[a-zA-Z0-9=&%+._-]{0,30}".prop_map(Some),
    ]
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(Vec::new()),
        proptest::collection::vec(any::<u8>(), 0..64),
        (
            any::<Option<bool>>(),
            any::<Option<i64>>(),
            any::<Option<f64>>()
        )
            .prop_map(|(h, d, r)| {
                let mut m = serde_json::Map::new();
                if let Some(h) = h {
                    m.insert("healthy".into(), h.into());
                }
                if let Some(d) = d {
                    m.insert("delay_ms".into(), (d % 100).into());
                }
                if let Some(r) = r {
                    m.insert("fail_rate".into(), serde_json::json!(r));
                }
                serde_json::to_vec(&m).unwrap()
            }),
    ]
}

fn method() -> impl Strategy<Value = &'static str> {
    proptest::sample::select(&["GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH"][..])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn random_requests_never_5xx_unless_asked_and_never_panic(
        dependency_mode in any::<bool>(),
        with_token in any::<bool>(),
        method in method(),
        path in path(),
        query in query(),
        body in body(),
    ) {
        let uri = match &query {
            Some(q) => format!("{path}?{q}"),
            None => path.clone(),
        };
        let mut b = Request::builder().method(method).uri(&uri);
        if with_token {
            b = b.header("x-simulate-token", "t");
        }
        let req = b.body(Body::from(body.clone()));
        prop_assume!(req.is_ok());
        let req = req.unwrap();

        let mut cfg = Config::defaults();
        cfg.app_mode = if dependency_mode { AppMode::Dependency } else { AppMode::Main };
        cfg.simulate_token = Some(Secret::new("t"));
        cfg.max_request_seconds = 0.05;
        // `/alloc` holds at most this much per router (each case builds its own).
        cfg.max_alloc_mib = 4;
        let exits = Arc::new(std::sync::Mutex::new(Vec::new()));
        let e = exits.clone();
        let state = AppState::started(cfg, Arc::new(move |c| e.lock().unwrap().push(c)));
        let app = subject::routes::router(state);

        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let (status, bytes) = rt.block_on(async {
            let resp = tokio::time::timeout(Duration::from_secs(5), app.oneshot(req))
                .await
                .expect("answered within 5 s")
                .unwrap();
            let status = resp.status();
            let bytes = resp.into_body().collect().await.unwrap().to_bytes();
            (status, bytes)
        });

        let asked_5xx = uri.starts_with("/status?") && query.as_deref().is_some_and(|q| q.contains("code="));
        prop_assert!(
            !status.is_server_error() || asked_5xx,
            "{method} {uri} -> {status}: {}", String::from_utf8_lossy(&bytes)
        );
        if status.is_client_error() && method != "HEAD" && path != "/status" {
            let v: serde_json::Value = serde_json::from_slice(&bytes)
                .unwrap_or_else(|e| panic!("{method} {uri} -> {status}: not JSON ({e})"));
            prop_assert!(v["error"].is_string(), "{method} {uri} -> {status}: {v}");
        }
    }
}
