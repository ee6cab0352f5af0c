//! The client against the in-process fake ARM: pagination, retries, deadlines, long-running
//! operations, token refresh.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use azure_core::credentials::{AccessToken, Secret, TokenCredential, TokenRequestOptions};
use tokio::time::Instant;

use crate::*;
use testkit::fake_arm::{FakeArm, Fault};

fn scope() -> Scope {
    Scope::new(testkit::SUBSCRIPTION, "rg")
}

fn client(fake: &FakeArm, tweak: impl FnOnce(&mut ClientConfig)) -> ArmClient {
    let mut cfg = ClientConfig::new(fake.base_url().parse().unwrap());
    cfg.retry.base_delay = Duration::from_millis(20);
    cfg.call_timeout = Duration::from_secs(5);
    cfg.lro_poll = Duration::from_millis(10);
    tweak(&mut cfg);
    ArmClient::new(cfg, TokenSource::none()).unwrap()
}

fn fault(kind: &str, count: u32, retry_after_s: Option<u64>) -> Fault {
    Fault {
        kind: kind.into(),
        count,
        retry_after_s,
    }
}

#[tokio::test]
async fn lists_follow_next_link_across_pages() {
    let fake = FakeArm::start().await.unwrap();
    fake.add_simple_app("subject", 5, 3);
    fake.set_page_size(2);
    let c = client(&fake, |_| {});
    let revs = c.list_revisions(&scope(), "subject").await.unwrap();
    let names: Vec<_> = revs.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names.len(), 5, "{names:?}");
    assert_eq!(names[4], "subject--r4");
    assert_eq!(fake.seen().len(), 3, "three pages");
    let reps = c
        .list_replicas(&scope(), "subject", "subject--r4")
        .await
        .unwrap();
    assert_eq!(reps.len(), 3);
}

#[tokio::test]
async fn a_429_is_retried_after_the_retry_after_it_carries() {
    let fake = FakeArm::start().await.unwrap();
    fake.add_simple_app("subject", 1, 1);
    fake.inject(fault("429", 1, Some(1)));
    let c = client(&fake, |_| {});
    let t0 = Instant::now();
    let revs = c.list_revisions(&scope(), "subject").await.unwrap();
    assert_eq!(revs.len(), 1);
    assert!(t0.elapsed() >= Duration::from_secs(1), "{:?}", t0.elapsed());
    let statuses: Vec<u16> = fake.seen().iter().map(|s| s.status).collect();
    assert_eq!(statuses, [429, 200]);
}

#[tokio::test]
async fn persistent_500s_give_up_after_max_attempts_with_the_arm_code() {
    let fake = FakeArm::start().await.unwrap();
    fake.add_simple_app("subject", 1, 1);
    fake.inject(fault("500", 10, None));
    let c = client(&fake, |cfg| cfg.retry.max_attempts = 3);
    let err = c.list_revisions(&scope(), "subject").await.unwrap_err();
    assert_eq!(err.status(), Some(500));
    assert_eq!(err.code(), "InternalServerError");
    assert_eq!(err.message(), "injected failure");
    assert_eq!(fake.seen().len(), 3);
}

#[tokio::test]
async fn no_retry_is_made_that_would_pass_the_callers_deadline() {
    let fake = FakeArm::start().await.unwrap();
    fake.add_simple_app("subject", 1, 1);
    fake.inject(fault("429", 1, Some(2)));
    let c = client(&fake, |_| {}).with_deadline(Instant::now() + Duration::from_millis(800));
    let t0 = Instant::now();
    let err = c.list_revisions(&scope(), "subject").await.unwrap_err();
    assert!(
        t0.elapsed() < Duration::from_millis(500),
        "{:?}",
        t0.elapsed()
    );
    assert_eq!(err.code(), "TooManyRequests");
    assert_eq!(fake.seen().len(), 1);
}

#[tokio::test]
async fn a_hanging_call_times_out() {
    let fake = FakeArm::start().await.unwrap();
    fake.add_simple_app("subject", 1, 1);
    fake.set_hang(Duration::from_secs(5));
    fake.inject(fault("hang", 1, None));
    let c = client(&fake, |cfg| {
        cfg.call_timeout = Duration::from_millis(300);
        cfg.retry.max_attempts = 1;
    });
    let t0 = Instant::now();
    let err = c.list_revisions(&scope(), "subject").await.unwrap_err();
    assert!(matches!(err, ArmError::Timeout { .. }), "{err}");
    assert!(t0.elapsed() < Duration::from_secs(2));
    assert!(err.is_retryable());
}

#[tokio::test]
async fn a_404_carries_the_arm_code_and_is_not_retried() {
    let fake = FakeArm::start().await.unwrap();
    let c = client(&fake, |_| {});
    let err = c.list_revisions(&scope(), "nope").await.unwrap_err();
    assert!(err.is_not_found());
    assert_eq!(err.code(), "ResourceNotFound");
    assert_eq!(fake.seen().len(), 1);
}

#[tokio::test]
async fn setting_an_env_var_patches_the_whole_template_and_waits_on_azure_async_operation() {
    let fake = FakeArm::start().await.unwrap();
    fake.add_simple_app("subject", 1, 1);
    let c = client(&fake, |_| {});
    let app = c
        .set_app_env(
            &scope(),
            "subject",
            None,
            "SIMULATION",
            "zombie",
            Some("r2"),
        )
        .await
        .unwrap();
    let t = app.properties.template.unwrap();
    assert_eq!(t.containers[0].env_value("SIMULATION"), Some("zombie"));
    assert_eq!(t.containers[0].env_value("PORT"), Some("8080"), "kept");
    assert_eq!(t.revision_suffix.as_deref(), Some("r2"));
    let stored = fake.template("subject").unwrap();
    assert!(stored.get("volumes").is_some(), "unmodelled fields kept");
    let paths: Vec<String> = fake.seen().iter().map(|s| s.path.clone()).collect();
    assert!(
        paths.iter().any(|p| p.starts_with("/operations/")),
        "{paths:?}"
    );
    assert!(
        !paths.iter().any(|p| p.starts_with("/operationResults/")),
        "Azure-AsyncOperation preferred over Location: {paths:?}"
    );
}

#[tokio::test]
async fn restart_waits_on_location_until_it_stops_answering_202() {
    let fake = FakeArm::start().await.unwrap();
    fake.add_simple_app("subject", 1, 1);
    let c = client(&fake, |_| {});
    c.restart_revision(&scope(), "subject", "subject--r0")
        .await
        .unwrap();
    let polls: Vec<u16> = fake
        .seen()
        .iter()
        .filter(|s| s.path.starts_with("/operationResults/"))
        .map(|s| s.status)
        .collect();
    assert_eq!(polls, [202, 204]);
}

/// Issues `tok-1`, `tok-2`, ... each valid for `lifetime_s`.
#[derive(Debug)]
struct CountingCredential {
    issued: AtomicU32,
    lifetime_s: i64,
}

#[async_trait::async_trait]
impl TokenCredential for CountingCredential {
    async fn get_token(
        &self,
        _scopes: &[&str],
        _options: Option<TokenRequestOptions<'_>>,
    ) -> azure_core::Result<AccessToken> {
        let n = self.issued.fetch_add(1, Ordering::SeqCst) + 1;
        Ok(AccessToken::new(
            Secret::new(format!("tok-{n}")),
            azure_core::time::OffsetDateTime::now_utc()
                + azure_core::time::Duration::seconds(self.lifetime_s),
        ))
    }
}

#[tokio::test]
async fn tokens_are_cached_then_refreshed_before_expiry() {
    let fake = FakeArm::start().await.unwrap();
    fake.add_simple_app("subject", 1, 1);
    let cred = Arc::new(CountingCredential {
        issued: AtomicU32::new(0),
        // The cache keeps whole Unix seconds and refreshes halfway through a token's life: a
        // 6 s token is refreshed 3 whole seconds after it was fetched, so the first two calls
        // (well within 2 s, even on a loaded machine) share it and a call after 3.1 s cannot.
        // (A 2 s token was refreshable after as little as a few ms, when fetched late in a second.)
        lifetime_s: 6,
    });
    let source =
        TokenSource::from_credential(TokenSourceKind::ManagedIdentity, cred, token::DEFAULT_SCOPE);
    let c = ArmClient::new(ClientConfig::new(fake.base_url().parse().unwrap()), source).unwrap();
    c.list_revisions(&scope(), "subject").await.unwrap();
    c.list_revisions(&scope(), "subject").await.unwrap();
    tokio::time::sleep(Duration::from_millis(3100)).await;
    c.list_revisions(&scope(), "subject").await.unwrap();
    let auth: Vec<String> = fake
        .seen()
        .iter()
        .map(|s| s.authorization.clone().unwrap_or_default())
        .collect();
    assert_eq!(auth, ["Bearer tok-1", "Bearer tok-1", "Bearer tok-2"]);
    assert_eq!(c.token_source().fetch_count(), 2);
    assert!(!format!("{c:?}").contains("tok-"));
}

/// Never answers.
#[derive(Debug)]
struct HangingCredential;

#[async_trait::async_trait]
impl TokenCredential for HangingCredential {
    async fn get_token(
        &self,
        _scopes: &[&str],
        _options: Option<TokenRequestOptions<'_>>,
    ) -> azure_core::Result<AccessToken> {
        std::future::pending().await
    }
}

#[tokio::test]
async fn a_hanging_identity_endpoint_cannot_hold_a_call_past_its_deadline() {
    let fake = FakeArm::start().await.unwrap();
    fake.add_simple_app("subject", 1, 1);
    let source = TokenSource::from_credential(
        TokenSourceKind::ManagedIdentity,
        Arc::new(HangingCredential),
        token::DEFAULT_SCOPE,
    );
    let c = ArmClient::new(ClientConfig::new(fake.base_url().parse().unwrap()), source)
        .unwrap()
        .with_deadline(Instant::now() + Duration::from_millis(300));
    let t0 = Instant::now();
    let err = c.list_revisions(&scope(), "subject").await.unwrap_err();
    assert!(matches!(err, ArmError::Token(_)), "{err}");
    assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
    assert!(fake.seen().is_empty());
}
