//! HTTPS with the workspace's one crypto provider (rustls + ring, [`crate::tls`]): a managed
//! identity token fetched by azure_identity (through azure_core's reqwest transport) and an ARM
//! call made with it, both over TLS to 127.0.0.1 (testkit's HTTPS front, with a certificate of
//! its test CA).
//!
//! The test runs the client in a child process (this test binary, re-run on
//! [`https_child`]) because azure_identity reads `IDENTITY_ENDPOINT` from the process
//! environment and the platform verifier trusts the test CA only through `SSL_CERT_FILE`.

use std::net::SocketAddr;
use std::time::Duration;

use testkit::https_front::HttpsFront;
use testkit::test_ca::TestCa;

use crate::*;
use testkit::fake_arm::{FakeArm, FakeIdentity};

const CHILD_ENV: &str = "PROBELAB_ARM_HTTPS_CHILD";
const TOKEN_PREFIX: &str = "probelab-https-token";
const SECRET_HEADER: &str = "https-identity-header";

fn addr_of(base: &str) -> SocketAddr {
    let u: url::Url = base.parse().unwrap();
    format!("{}:{}", u.host_str().unwrap(), u.port().unwrap())
        .parse()
        .unwrap()
}

#[tokio::test]
async fn managed_identity_and_arm_calls_go_over_https_with_ring() {
    let fake = FakeArm::start().await.unwrap();
    fake.add_simple_app("subject", 1, 1);
    let identity = FakeIdentity::start(SECRET_HEADER, None, TOKEN_PREFIX, 3600)
        .await
        .unwrap();
    let ca = TestCa::new().unwrap();
    let arm_front = HttpsFront::start(&ca, addr_of(&fake.base_url()))
        .await
        .unwrap();
    let id_front = HttpsFront::start(&ca, addr_of(&identity.endpoint()))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.pem");
    ca.write_pem(&ca_file).unwrap();

    let child = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "https_tests::https_child",
            "--ignored",
            "--nocapture",
        ])
        .env(CHILD_ENV, "1")
        .env("SSL_CERT_FILE", &ca_file)
        .env_remove("SSL_CERT_DIR")
        .env_remove("MANAGED_IDENTITY_CLIENT_ID")
        .env_remove("AZURE_CLIENT_ID")
        .env("IDENTITY_ENDPOINT", format!("{}/msi/token", id_front.url()))
        .env("IDENTITY_HEADER", SECRET_HEADER)
        .env("ARM_ENDPOINT", arm_front.url())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(60), child)
        .await
        .expect("the child finishes within 60 s")
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed:\n{text}");
    assert!(text.contains("https child: got app subject"), "{text}");

    // The token came over TLS from the identity endpoint (the fronts speak nothing else), and
    // ARM saw it over TLS.
    assert!(
        !id_front.seen().is_empty(),
        "no request over TLS at the identity endpoint"
    );
    let bearer = format!("Bearer {TOKEN_PREFIX}-1");
    assert!(
        arm_front
            .seen()
            .iter()
            .any(|s| s.authorization.as_deref() == Some(bearer.as_str())),
        "no ARM call with the token over TLS: {:?}",
        arm_front.seen()
    );
    assert_eq!(identity.issued(), 1);
    assert!(
        fake.seen()
            .iter()
            .any(|s| s.authorization.as_deref() == Some(&format!("Bearer {TOKEN_PREFIX}-1"))),
        "{:?}",
        fake.seen()
    );
}

/// The client half of the test above, in its own process (ignored unless run by it).
#[tokio::test]
#[ignore = "run by managed_identity_and_arm_calls_go_over_https_with_ring in a child process"]
async fn https_child() {
    assert_eq!(
        std::env::var(CHILD_ENV).as_deref(),
        Ok("1"),
        "only managed_identity_and_arm_calls_go_over_https_with_ring runs this, with its environment"
    );
    let endpoint: url::Url = std::env::var("ARM_ENDPOINT").unwrap().parse().unwrap();
    let token = TokenSource::build(
        TokenSourceKind::ManagedIdentity,
        &IdentityEnv::from_process(),
        &endpoint,
        token::DEFAULT_SCOPE,
    )
    .unwrap();
    let mut cfg = ClientConfig::new(endpoint);
    cfg.call_timeout = Duration::from_secs(10);
    cfg.retry.max_attempts = 1;
    let c = ArmClient::new(cfg, token).unwrap();
    let app = c
        .get_app(&Scope::new(testkit::SUBSCRIPTION, "rg"), "subject")
        .await
        .unwrap();
    println!("https child: got app {}", app.name.unwrap_or_default());
}
