//! Multiple revision mode against the process runtime (real `subject` binaries on 127.0.0.1):
//! traffic rules checked on PUT/PATCH with the service's error shape, a new revision started
//! without traffic, an exact 90/10 split by smooth weighted round-robin, label host names,
//! deactivation refused while a revision has weight, the system rows of weight changes (both
//! modes), session affinity (`stickySessions`, single mode only), the label host names an app
//! GET lists, and the purge of inactive revisions beyond `maxInactiveRevisions` (both modes).

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::*;
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};
use testkit::eventually;

const APP: &str = "split";

/// The app in multiple revision mode, revision suffix `suffix`, generation `generation`, with
/// `traffic` as its `ingress.traffic` (none when null).
fn body(suffix: &str, generation: u32, traffic: Value) -> Value {
    let mut b = subject_app(
        json!([{"name": "ROLLOUT_GENERATION", "value": generation.to_string()}]),
        1,
        readiness(),
    );
    b["properties"]["configuration"]["activeRevisionsMode"] = json!("Multiple");
    b["properties"]["template"]["revisionSuffix"] = json!(suffix);
    b["properties"]["template"]["terminationGracePeriodSeconds"] = json!(2);
    if !traffic.is_null() {
        b["properties"]["configuration"]["ingress"]["traffic"] = traffic;
    }
    b
}

async fn put(lab: &Plane, b: Value) -> (u16, http::HeaderMap, Value) {
    lab.call("PUT", &format!("{}?{AV}", lab.app_url(APP)), Some(b))
        .await
}

async fn revision(lab: &Plane, rev: &str) -> Value {
    let (code, _, v) = lab
        .call(
            "GET",
            &format!("{}/revisions/{rev}?{AV}", lab.app_url(APP)),
            None,
        )
        .await;
    assert_eq!(code, 200, "{v}");
    v["properties"].clone()
}

/// One request through the app's ingress (`host`: the `Host` header, else the fqdn's): the
/// status and the `revision` of the subject's JSON answer (empty when it is not JSON).
async fn hit(lab: &Plane, fqdn: &str, host: Option<&str>) -> (u16, String) {
    let req = http::Request::get(format!("http://{fqdn}/"))
        .header("host", host.unwrap_or(fqdn))
        .body(Full::new(Bytes::new()))
        .unwrap();
    let resp = tokio::time::timeout(Duration::from_secs(30), lab.client.request(req))
        .await
        .unwrap()
        .unwrap();
    let status = resp.status().as_u16();
    let b = resp.into_body().collect().await.unwrap().to_bytes();
    let v: Value = serde_json::from_slice(&b).unwrap_or(Value::Null);
    (status, v["revision"].as_str().unwrap_or("").to_string())
}

/// How many of `n` requests each revision answered (status 200 only; others counted by code).
async fn tally(lab: &Plane, fqdn: &str, host: Option<&str>, n: usize) -> Vec<(String, usize)> {
    let mut m = std::collections::BTreeMap::new();
    for _ in 0..n {
        let (st, rev) = hit(lab, fqdn, host).await;
        let k = if st == 200 {
            rev
        } else {
            format!("status {st}")
        };
        *m.entry(k).or_insert(0) += 1;
    }
    m.into_iter().collect()
}

/// The environment's `defaultDomain` (its GET), after a PUT of environment `env`.
async fn default_domain(lab: &Plane) -> String {
    lab.put_env().await;
    let (code, _, v) = lab.call("GET", &lab.env_url(), None).await;
    assert_eq!(code, 200, "{v}");
    v["properties"]["defaultDomain"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The app GET's labels as `(label, host name, address)`: the `localplaneLabel` extension of
/// each labelled `ingress.traffic` entry (`url` without its `http://`). The GET must still
/// read as the wire model `arm` uses, the extension kept among the entry's unknown fields.
async fn label_hosts(lab: &Plane) -> Vec<(String, String, String)> {
    let (code, _, v) = lab
        .call("GET", &format!("{}?{AV}", lab.app_url(APP)), None)
        .await;
    assert_eq!(code, 200, "{v}");
    let typed: appmodel::ContainerApp = serde_json::from_value(v.clone()).unwrap();
    let ingress = typed.properties.configuration.unwrap().ingress.unwrap();
    ingress
        .traffic
        .iter()
        .filter_map(|t| {
            let ext = t.extra.get("localplaneLabel")?;
            let url = ext["url"].as_str().unwrap();
            Some((
                t.label.clone().unwrap(),
                ext["host"].as_str().unwrap().to_string(),
                url.strip_prefix("http://").unwrap().to_string(),
            ))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multiple_mode_splits_by_weight_routes_labels_and_guards_deactivation() {
    let lab = Plane::process().await;
    let v1 = format!("{APP}--v1");
    let v2 = format!("{APP}--v2");

    // The first revision takes the default rule: all traffic to the latest.
    let (code, h, v) = put(&lab, body("v1", 1, Value::Null)).await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(lab.wait_op(&h, Duration::from_secs(60)).await, "Succeeded");
    let (_, _, v) = lab
        .call("GET", &format!("{}?{AV}", lab.app_url(APP)), None)
        .await;
    let cfg = &v["properties"]["configuration"];
    assert_eq!(cfg["activeRevisionsMode"], "Multiple");
    assert_eq!(
        cfg["ingress"]["traffic"],
        json!([{"weight": 100, "latestRevision": true}])
    );
    let fqdn = cfg["ingress"]["fqdn"].as_str().unwrap().to_string();
    assert_eq!(tally(&lab, &fqdn, None, 5).await, vec![(v1.clone(), 5)]);

    // Weights summing to 90: Azure's error shape, nothing created.
    let bad = json!([{"revisionName": v1, "weight": 80}, {"revisionName": v2, "weight": 10}]);
    let (code, _, v) = put(&lab, body("v2", 2, bad)).await;
    assert_eq!(code, 400, "{v}");
    assert_eq!(
        v["error"]["code"], "ContainerAppInvalidTrafficWeight",
        "{v}"
    );
    assert!(
        v["error"]["message"].as_str().unwrap().contains("100"),
        "{v}"
    );
    assert_eq!(v.as_object().unwrap().len(), 1, "only `error`: {v}");
    for bad in [
        json!([{"revisionName": v1, "weight": 50.5}, {"revisionName": v2, "weight": 49.5}]),
        json!([{"revisionName": format!("{APP}--nope"), "weight": 100}]),
        json!([{"revisionName": v1, "weight": 100, "label": "Blue_1"}]),
        json!([{"revisionName": v1, "weight": 50, "label": "x"}, {"revisionName": v2, "weight": 50, "label": "x"}]),
    ] {
        let (code, _, v) = put(&lab, body("v2", 2, bad.clone())).await;
        assert_eq!(code, 400, "{bad}: {v}");
        assert!(v["error"]["code"].is_string(), "{v}");
    }
    let (_, _, v) = lab
        .call("GET", &format!("{}/revisions?{AV}", lab.app_url(APP)), None)
        .await;
    assert_eq!(
        v["value"].as_array().unwrap().len(),
        1,
        "a refused PUT creates nothing"
    );

    // Blue-green: the new revision is named in the same PUT, started, and takes no traffic.
    let blue_green = json!([
        {"revisionName": v1, "weight": 100, "label": "blue"},
        {"revisionName": v2, "weight": 0, "label": "green"}
    ]);
    let (code, h, v) = put(&lab, body("v2", 2, blue_green.clone())).await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(lab.wait_op(&h, Duration::from_secs(60)).await, "Succeeded");
    eventually(
        Duration::from_secs(20),
        "v2 ready, v1 still active",
        || async {
            let (a, b) = (revision(&lab, &v1).await, revision(&lab, &v2).await);
            (a["active"] == true
                && a["trafficWeight"] == 100
                && b["active"] == true
                && b["trafficWeight"] == 0
                && b["replicas"] == 1
                && b["healthState"] == "Healthy")
                .then_some(())
        },
    )
    .await;
    assert_eq!(tally(&lab, &fqdn, None, 20).await, vec![(v1.clone(), 20)]);
    // Labels: the GET lists each label's host name and address (localplane's extension);
    // sent there, only the labelled revision answers; an unknown label is a 404.
    let hosts = label_hosts(&lab).await;
    let domain = default_domain(&lab).await;
    assert_eq!(
        hosts,
        vec![
            (
                "blue".into(),
                format!("{APP}---blue.{domain}"),
                fqdn.clone()
            ),
            (
                "green".into(),
                format!("{APP}---green.{domain}"),
                fqdn.clone()
            ),
        ]
    );
    let (_, green, url) = &hosts[1];
    assert_eq!(
        tally(&lab, url, Some(green), 10).await,
        vec![(v2.clone(), 10)]
    );
    let (_, blue, url) = &hosts[0];
    assert_eq!(tally(&lab, url, Some(blue), 5).await, vec![(v1.clone(), 5)]);
    let nope = format!("{APP}---nope.{domain}");
    assert_eq!(hit(&lab, &fqdn, Some(&nope)).await.0, 404);

    // 90/10 by PATCH (application scope: no new revision): exactly 90/10 over 100 requests.
    let split = json!({"properties": {"configuration": {"ingress": {"traffic": [
        {"revisionName": v1, "weight": 90, "label": "blue"},
        {"revisionName": v2, "weight": 10, "label": "green"}
    ]}}}});
    let (code, _, v) = lab
        .call("PATCH", &format!("{}?{AV}", lab.app_url(APP)), Some(split))
        .await;
    assert_eq!(code, 202, "{v}");
    eventually(
        Duration::from_secs(10),
        "weights 90/10 reported",
        || async {
            (revision(&lab, &v1).await["trafficWeight"] == 90
                && revision(&lab, &v2).await["trafficWeight"] == 10)
                .then_some(())
        },
    )
    .await;
    assert_eq!(
        tally(&lab, &fqdn, None, 100).await,
        vec![(v1.clone(), 90), (v2.clone(), 10)]
    );

    // A revision with weight cannot be deactivated.
    let deactivate = |rev: String| {
        let lab = &lab;
        async move {
            lab.call(
                "POST",
                &format!("{}/revisions/{rev}/deactivate?{AV}", lab.app_url(APP)),
                None,
            )
            .await
        }
    };
    let (code, _, v) = deactivate(v2.clone()).await;
    assert_eq!(code, 400, "{v}");
    assert_eq!(v["error"]["code"], "ContainerAppRevisionHasTraffic", "{v}");
    assert_eq!(revision(&lab, &v2).await["active"], true);

    // Back to blue; then green (weight 0) deactivates as a retired revision does.
    let (code, h, v) = put(&lab, body("v2", 2, blue_green)).await;
    assert_eq!(code, 200, "{v}");
    assert_eq!(lab.wait_op(&h, Duration::from_secs(10)).await, "Succeeded");
    eventually(Duration::from_secs(10), "v2 weight 0", || async {
        (revision(&lab, &v2).await["trafficWeight"] == 0).then_some(())
    })
    .await;
    let (code, _, v) = deactivate(v2.clone()).await;
    assert_eq!(code, 200, "{v}");
    eventually(Duration::from_secs(20), "v2 deprovisioned", || async {
        let p = revision(&lab, &v2).await;
        (p["active"] == false && p["replicas"] == 0 && p["provisioningState"] == "Deprovisioned")
            .then_some(())
    })
    .await;
    eventually(
        Duration::from_secs(10),
        "v2's ManuallyStopped row",
        || async {
            lab.system_rows()
                .iter()
                .any(|r| {
                    r["Reason_s"] == "ContainerTerminated"
                        && r["RevisionName_s"] == v2.as_str()
                        && r["Log_s"]
                            .as_str()
                            .is_some_and(|l| l.contains("ManuallyStopped"))
                })
                .then_some(())
        },
    )
    .await;
    assert_eq!(tally(&lab, &fqdn, None, 10).await, vec![(v1.clone(), 10)]);
    // v1 kept running throughout: multiple mode deactivates nothing by itself.
    assert_eq!(revision(&lab, &v1).await["active"], true);
    lab.stop().await;
}

/// The `RevisionUpdate` rows of app `app`, oldest first: `(RevisionName_s, Log_s)`.
fn weight_rows(lab: &Plane, app: &str) -> Vec<(String, String)> {
    lab.system_rows()
        .iter()
        .filter(|r| r["ContainerAppName_s"] == app && r["Reason_s"] == "RevisionUpdate")
        .map(|r| {
            (
                r["RevisionName_s"].as_str().unwrap_or("").to_string(),
                r["Log_s"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// The row Learn lists for a traffic weight ("Monitor logs in Azure Container Apps with Log
/// Analytics", source "Traffic weight").
fn weight_row(rev: &str, weight: u32) -> (String, String) {
    (
        rev.to_string(),
        format!("Setting a traffic weight of {weight}% for revision {rev}"),
    )
}

/// Waits until app `app`'s `RevisionUpdate` rows are exactly `want`, and that they stay so
/// while the controller runs a few more passes (no duplicate row for a weight already set).
async fn expect_weight_rows(lab: &Plane, app: &str, want: &[(String, String)]) {
    eventually(Duration::from_secs(20), "the weight rows", || async {
        (weight_rows(lab, app) == want).then_some(())
    })
    .await;
    // The controller passes at least every 500 ms: two seconds is several passes.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(weight_rows(lab, app), want);
}

/// Multiple mode: every change of a revision's weight writes one `RevisionUpdate` row for that
/// revision with its new weight (100/0 → 90/10 → 0/100: one row per revision whose weight
/// changed); a PUT that leaves the weights alone writes none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traffic_weight_changes_write_system_rows() {
    let lab = Plane::process().await;
    let v1 = format!("{APP}--v1");
    let v2 = format!("{APP}--v2");
    let (code, h, v) = put(&lab, body("v1", 1, Value::Null)).await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(lab.wait_op(&h, Duration::from_secs(60)).await, "Succeeded");
    let mut want = vec![weight_row(&v1, 100)];
    expect_weight_rows(&lab, APP, &want).await;

    // 100/0: v2 starts beside v1 and takes nothing; no weight changed, no row.
    let split = |a: u32, b: u32| json!([{"revisionName": v1, "weight": a}, {"revisionName": v2, "weight": b}]);
    let (code, h, v) = put(&lab, body("v2", 2, split(100, 0))).await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(lab.wait_op(&h, Duration::from_secs(60)).await, "Succeeded");
    expect_weight_rows(&lab, APP, &want).await;

    for (a, b) in [(90, 10), (0, 100)] {
        let patch = json!({"properties": {"configuration": {"ingress": {"traffic": split(a, b)}}}});
        let (code, _, v) = lab
            .call("PATCH", &format!("{}?{AV}", lab.app_url(APP)), Some(patch))
            .await;
        assert_eq!(code, 202, "{v}");
        want.extend([weight_row(&v1, a), weight_row(&v2, b)]);
        expect_weight_rows(&lab, APP, &want).await;
        assert_eq!(revision(&lab, &v1).await["trafficWeight"], a);
        assert_eq!(revision(&lab, &v2).await["trafficWeight"], b);
    }
    lab.stop().await;
}

/// Single mode: each rollout's traffic switch writes one row, 100 % for the new revision.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_mode_writes_a_weight_row_at_each_switch() {
    let lab = Plane::process().await;
    let url = format!("{}?{AV}", lab.app_url("single"));
    let mut want = Vec::new();
    for (g, suffix) in [(1, "v1"), (2, "v2")] {
        let mut b = subject_app(
            json!([{"name": "ROLLOUT_GENERATION", "value": g.to_string()}]),
            1,
            readiness(),
        );
        b["properties"]["template"]["revisionSuffix"] = json!(suffix);
        b["properties"]["template"]["terminationGracePeriodSeconds"] = json!(2);
        let (code, h, v) = lab.call("PUT", &url, Some(b)).await;
        assert_eq!(code, 201, "{v}");
        assert_eq!(lab.wait_op(&h, Duration::from_secs(60)).await, "Succeeded");
        want.push(weight_row(&format!("single--{suffix}"), 100));
        expect_weight_rows(&lab, "single", &want).await;
    }
    lab.stop().await;
}

/// One request through `fqdn` with `cookie` as its `Cookie` header: the status, the replica
/// that answered (the subject's JSON) and the `Set-Cookie` header of the response.
async fn hit_with_cookie(
    fqdn: &str,
    lab: &Plane,
    cookie: Option<&str>,
) -> (u16, String, Option<String>) {
    let mut req = http::Request::get(format!("http://{fqdn}/")).header("host", fqdn);
    if let Some(c) = cookie {
        req = req.header("cookie", c);
    }
    let resp = tokio::time::timeout(
        Duration::from_secs(30),
        lab.client
            .request(req.body(Full::new(Bytes::new())).unwrap()),
    )
    .await
    .unwrap()
    .unwrap();
    let status = resp.status().as_u16();
    let set_cookie = resp
        .headers()
        .get("set-cookie")
        .map(|v| v.to_str().unwrap().to_string());
    let b = resp.into_body().collect().await.unwrap().to_bytes();
    let v: Value = serde_json::from_slice(&b).unwrap_or(Value::Null);
    (
        status,
        v["replica"].as_str().unwrap_or("").to_string(),
        set_cookie,
    )
}

/// An app with `replicas` replicas, each ready, and session affinity `affinity`.
fn affinity_app(mode: &str, replicas: u32, affinity: &str) -> Value {
    let mut b = subject_app(json!([]), replicas, readiness());
    b["properties"]["configuration"]["activeRevisionsMode"] = json!(mode);
    b["properties"]["configuration"]["ingress"]["stickySessions"] = json!({"affinity": affinity});
    b["properties"]["template"]["terminationGracePeriodSeconds"] = json!(2);
    b
}

/// Deploys `body` as app `app` and waits until `replicas` replicas answer through its
/// ingress; returns its fqdn.
async fn deploy_ready(lab: &Plane, app: &str, body: Value, replicas: usize) -> String {
    let url = format!("{}?{AV}", lab.app_url(app));
    let (code, h, v) = lab.call("PUT", &url, Some(body)).await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(lab.wait_op(&h, Duration::from_secs(60)).await, "Succeeded");
    let (_, _, v) = lab.call("GET", &url, None).await;
    let fqdn = v["properties"]["configuration"]["ingress"]["fqdn"]
        .as_str()
        .unwrap()
        .to_string();
    eventually(
        Duration::from_secs(30),
        "every replica routable",
        || async {
            let mut seen = std::collections::BTreeSet::new();
            for _ in 0..2 * replicas {
                let (st, rep, _) = hit_with_cookie(&fqdn, lab, None).await;
                if st == 200 {
                    seen.insert(rep);
                }
            }
            (seen.len() == replicas).then_some(())
        },
    )
    .await;
    fqdn
}

/// `stickySessions.affinity: sticky` in single mode: the first response sets the affinity
/// cookie naming its replica, and every request carrying it goes to that replica; a cookie
/// naming a replica that is gone is routed as any request and gets a new cookie. Without the
/// cookie, or with affinity `none`, requests go round-robin over the replicas. In multiple
/// mode the setting is accepted and returned but not acted on (Learn: single revision mode
/// only).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sticky_sessions_keep_a_client_on_its_replica_in_single_mode() {
    let lab = Plane::process().await;
    let url = format!("{}?{AV}", lab.app_url("sticky"));
    let fqdn = deploy_ready(&lab, "sticky", affinity_app("Single", 3, "sticky"), 3).await;
    let (_, _, v) = lab.call("GET", &url, None).await;
    assert_eq!(
        v["properties"]["configuration"]["ingress"]["stickySessions"]["affinity"], "sticky",
        "{v}"
    );

    // The first response names its replica in the cookie.
    let (st, first, set) = hit_with_cookie(&fqdn, &lab, None).await;
    assert_eq!(st, 200);
    let set = set.expect("a Set-Cookie on the first response");
    assert_eq!(
        set,
        format!("localplane-affinity={first}; Path=/; HttpOnly")
    );
    let cookie = format!("theme=dark; localplane-affinity={first}");
    // With the cookie: always that replica, and no new cookie.
    for _ in 0..20 {
        let (st, rep, set) = hit_with_cookie(&fqdn, &lab, Some(&cookie)).await;
        assert_eq!((st, rep.as_str(), set), (200, first.as_str(), None));
    }
    // Without it: round-robin, each response naming the replica that served it.
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..6 {
        let (st, rep, set) = hit_with_cookie(&fqdn, &lab, None).await;
        assert_eq!(st, 200);
        assert_eq!(
            set,
            Some(format!("localplane-affinity={rep}; Path=/; HttpOnly"))
        );
        seen.insert(rep);
    }
    assert_eq!(seen.len(), 3, "{seen:?}");
    // A replica that is gone: served by another, which the new cookie names.
    let (st, rep, set) = hit_with_cookie(
        &fqdn,
        &lab,
        Some("localplane-affinity=sticky--gone-000000000-00000"),
    )
    .await;
    assert_eq!(st, 200);
    assert_eq!(
        set,
        Some(format!("localplane-affinity={rep}; Path=/; HttpOnly"))
    );

    // Affinity `none` (an application-scope change: no new revision): the cookie is ignored.
    let patch = json!({"properties": {"configuration": {"ingress": {"stickySessions": {"affinity": "none"}}}}});
    let (code, _, v) = lab.call("PATCH", &url, Some(patch)).await;
    assert_eq!(code, 202, "{v}");
    eventually(Duration::from_secs(10), "affinity off", || async {
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..6 {
            let (st, rep, set) = hit_with_cookie(&fqdn, &lab, Some(&cookie)).await;
            if st != 200 || set.is_some() {
                return None;
            }
            seen.insert(rep);
        }
        (seen.len() == 3).then_some(())
    })
    .await;

    // Multiple mode: accepted, returned, not acted on.
    let multi = format!("{}?{AV}", lab.app_url("multi"));
    let fqdn = deploy_ready(&lab, "multi", affinity_app("Multiple", 2, "sticky"), 2).await;
    let (_, _, v) = lab.call("GET", &multi, None).await;
    assert_eq!(
        v["properties"]["configuration"]["ingress"]["stickySessions"]["affinity"], "sticky",
        "{v}"
    );
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..4 {
        let (st, rep, set) = hit_with_cookie(&fqdn, &lab, Some(&cookie)).await;
        assert_eq!((st, set), (200, None));
        seen.insert(rep);
    }
    assert_eq!(seen.len(), 2, "{seen:?}");
    lab.stop().await;
}

/// App `app` in mode `mode` at revision suffix `suffix` (generation `generation`), with
/// `maxInactiveRevisions` `max` (unset when `None`) and `traffic` (none when null).
fn retention_app(
    mode: &str,
    suffix: &str,
    generation: u32,
    max: Option<i64>,
    traffic: Value,
) -> Value {
    let mut b = body(suffix, generation, traffic);
    b["properties"]["configuration"]["activeRevisionsMode"] = json!(mode);
    if let Some(m) = max {
        b["properties"]["configuration"]["maxInactiveRevisions"] = json!(m);
    }
    b
}

/// PUTs `b` as app `app` and waits for its operation to succeed.
async fn deploy(lab: &Plane, app: &str, b: Value) {
    let (code, h, v) = lab
        .call("PUT", &format!("{}?{AV}", lab.app_url(app)), Some(b))
        .await;
    assert!(code == 200 || code == 201, "{v}");
    assert_eq!(lab.wait_op(&h, Duration::from_secs(60)).await, "Succeeded");
}

/// App `app`'s revisions as `GET .../revisions` lists them: `(name, properties)`.
async fn revisions_of(lab: &Plane, app: &str) -> Vec<(String, Value)> {
    let (code, _, v) = lab
        .call("GET", &format!("{}/revisions?{AV}", lab.app_url(app)), None)
        .await;
    assert_eq!(code, 200, "{v}");
    v["value"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                r["properties"].clone(),
            )
        })
        .collect()
}

async fn revision_names(lab: &Plane, app: &str) -> Vec<String> {
    revisions_of(lab, app)
        .await
        .into_iter()
        .map(|(n, _)| n)
        .collect()
}

/// Waits until app `app` lists exactly the revisions `want` (oldest first).
async fn expect_revisions(lab: &Plane, app: &str, want: &[String]) {
    eventually(Duration::from_secs(30), "the revisions listed", || async {
        (revision_names(lab, app).await == want).then_some(())
    })
    .await;
}

/// Waits until a controller pass of app `app` has run after this call began: the serving
/// revision `serving`'s `lastActiveTime` is set by every pass (GETs and passes take the same
/// lock), so a value later than the one read now was written by a later pass.
async fn a_later_pass(lab: &Plane, app: &str, serving: &str) {
    let last = || async move {
        let (_, _, v) = lab
            .call(
                "GET",
                &format!("{}/revisions/{serving}?{AV}", lab.app_url(app)),
                None,
            )
            .await;
        v["properties"]["lastActiveTime"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let before = last().await;
    eventually(
        Duration::from_secs(10),
        "a later controller pass",
        || async { (last().await > before).then_some(()) },
    )
    .await;
}

/// `POST .../revisions/{rev}/{action}` and `GET .../revisions/{rev}`: both status codes and
/// the error codes.
async fn unknown_revision_answers(lab: &Plane, app: &str, rev: &str) -> Vec<(u16, Value)> {
    let base = format!("{}/revisions/{rev}", lab.app_url(app));
    let (get, _, g) = lab.call("GET", &format!("{base}?{AV}"), None).await;
    let (post, _, p) = lab
        .call("POST", &format!("{base}/activate?{AV}"), None)
        .await;
    vec![
        (get, g["error"]["code"].clone()),
        (post, p["error"]["code"].clone()),
    ]
}

/// Single mode, `maxInactiveRevisions: 1`: after three template updates the app lists the
/// latest revision and the newest inactive one only; the purged ones are unknown to GET and
/// to the revision actions. Lowered to 0 (an application-scope PATCH), no inactive revision is
/// kept. A negative value or one above 100 is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inactive_revisions_beyond_max_inactive_revisions_are_purged_oldest_first() {
    let lab = Plane::process().await;
    let app = "purge";
    let names: Vec<String> = (1..=4).map(|g| format!("{app}--v{g}")).collect();
    for g in 1..=4u32 {
        let b = retention_app("Single", &format!("v{g}"), g, Some(1), Value::Null);
        deploy(&lab, app, b).await;
    }
    expect_revisions(&lab, app, &names[2..]).await;
    let revs = revisions_of(&lab, app).await;
    assert_eq!(revs[0].1["active"], false, "{revs:?}");
    assert_eq!(revs[1].1["active"], true, "{revs:?}");
    let gone = (404, json!("ContainerAppRevisionNotFound"));
    for rev in &names[..2] {
        assert_eq!(
            unknown_revision_answers(&lab, app, rev).await,
            vec![gone.clone(), gone.clone()]
        );
    }
    let url = format!("{}?{AV}", lab.app_url(app));
    let (_, _, v) = lab.call("GET", &url, None).await;
    assert_eq!(v["properties"]["configuration"]["maxInactiveRevisions"], 1);

    // Out of range: a 400 in ARM's shape, and nothing changes.
    for bad in [json!(-1), json!(101), json!(2.5)] {
        let patch = json!({"properties": {"configuration": {"maxInactiveRevisions": bad}}});
        let (code, _, v) = lab.call("PATCH", &url, Some(patch)).await;
        assert_eq!(code, 400, "{bad}: {v}");
        assert_eq!(
            v["error"]["code"], "ContainerAppInvalidMaxInactiveRevisions",
            "{v}"
        );
        assert_eq!(v.as_object().unwrap().len(), 1, "only `error`: {v}");
    }

    // The boundary: 0 keeps no inactive revision.
    let patch = json!({"properties": {"configuration": {"maxInactiveRevisions": 0}}});
    let (code, _, v) = lab.call("PATCH", &url, Some(patch)).await;
    assert_eq!(code, 202, "{v}");
    expect_revisions(&lab, app, &names[3..]).await;
    lab.stop().await;
}

/// Without `maxInactiveRevisions` (100 kept) a handful of revisions are all kept, stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_max_inactive_revisions_nothing_is_purged() {
    let lab = Plane::process().await;
    let app = "keep";
    let names: Vec<String> = (1..=4).map(|g| format!("{app}--v{g}")).collect();
    for g in 1..=4u32 {
        let b = retention_app("Single", &format!("v{g}"), g, None, Value::Null);
        deploy(&lab, app, b).await;
    }
    eventually(
        Duration::from_secs(30),
        "the old revisions stopped",
        || async {
            let revs = revisions_of(&lab, app).await;
            revs[..revs.len() - 1]
                .iter()
                .all(|(_, p)| p["provisioningState"] == "Deprovisioned")
                .then_some(())
        },
    )
    .await;
    // A pass that saw them stopped has run (it would have purged them by now).
    a_later_pass(&lab, app, &names[3]).await;
    assert_eq!(revision_names(&lab, app).await, names);
    lab.stop().await;
}

/// Multiple mode, `maxInactiveRevisions: 0`: a deactivated revision is purged once its replica
/// has stopped, except while a `revisionName` traffic rule names it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multiple_mode_purges_deactivated_revisions_not_named_by_a_rule() {
    let lab = Plane::process().await;
    let app = "mpurge";
    let [v1, v2, v3] = ["v1", "v2", "v3"].map(|s| format!("{app}--{s}"));
    let pinned = json!([
        {"revisionName": v1, "weight": 0, "label": "old"},
        {"latestRevision": true, "weight": 100}
    ]);
    deploy(
        &lab,
        app,
        retention_app("Multiple", "v1", 1, Some(0), Value::Null),
    )
    .await;
    deploy(
        &lab,
        app,
        retention_app("Multiple", "v2", 2, Some(0), Value::Null),
    )
    .await;
    deploy(
        &lab,
        app,
        retention_app("Multiple", "v3", 3, Some(0), pinned),
    )
    .await;
    // Multiple mode deactivates nothing by itself: all three are kept while active.
    assert_eq!(
        revision_names(&lab, app).await,
        vec![v1.clone(), v2.clone(), v3.clone()]
    );
    for rev in [&v1, &v2] {
        let (code, _, v) = lab
            .call(
                "POST",
                &format!("{}/revisions/{rev}/deactivate?{AV}", lab.app_url(app)),
                None,
            )
            .await;
        assert_eq!(code, 200, "{rev}: {v}");
    }
    // v2 goes; v1, named by a rule, stays.
    expect_revisions(&lab, app, &[v1.clone(), v3.clone()]).await;
    // Without the rule, v1 goes too.
    let patch = json!({"properties": {"configuration": {"ingress": {"traffic": [
        {"latestRevision": true, "weight": 100}
    ]}}}});
    let (code, _, v) = lab
        .call("PATCH", &format!("{}?{AV}", lab.app_url(app)), Some(patch))
        .await;
    assert_eq!(code, 202, "{v}");
    expect_revisions(&lab, app, std::slice::from_ref(&v3)).await;
    lab.stop().await;
}
