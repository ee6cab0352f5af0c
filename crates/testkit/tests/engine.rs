//! Why testcontainers 0.28 needs no API version shim on an engine older than its bollard's
//! default (1.53), pinned against a fake socket and the real engine; see `testkit::docker`.

use std::collections::HashMap;
use std::process::Command;

use bollard::query_parameters::{
    BuildImageOptionsBuilder, CreateContainerOptionsBuilder, InspectContainerOptions,
    RemoveContainerOptionsBuilder,
};
use bollard::{API_DEFAULT_VERSION, Docker as Bollard, body_full};
use bytes::Bytes;
use futures::StreamExt;
use testkit::docker::{OWNER_LABEL, require_docker, unique_name};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};

/// One raw HTTP/1.1 request over a unix socket; returns (status, body).
async fn raw_get(socket: &std::path::Path, path: &str) -> (u16, String) {
    let mut s = UnixStream::connect(socket)
        .await
        .expect("connect to socket");
    s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: docker\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await
    .expect("write");
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).await.expect("read");
    let text = String::from_utf8_lossy(&buf).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status line");
    (status, text)
}

#[tokio::test]
async fn bollard_sends_paths_without_an_api_version_prefix() {
    let dir = tempfile::tempdir().expect("tempdir");
    let socket = dir.path().join("fake-docker.sock");
    let listener = UnixListener::bind(&socket).expect("bind");
    let server = tokio::spawn(async move {
        let (mut conn, _) = listener.accept().await.expect("accept");
        let mut buf = vec![0u8; 4096];
        let n = conn.read(&mut buf).await.expect("read");
        let body = r#"{"ApiVersion":"1.41"}"#;
        let _ = conn
            .write_all(
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                )
                .as_bytes(),
            )
            .await;
        String::from_utf8_lossy(&buf[..n]).into_owned()
    });
    let client = Bollard::connect_with_unix(&socket.to_string_lossy(), 5, API_DEFAULT_VERSION)
        .expect("client");
    let version = client
        .version()
        .await
        .expect("version from the fake engine");
    assert_eq!(version.api_version.as_deref(), Some("1.41"));
    let request = server.await.expect("server task");
    let request_line = request.lines().next().unwrap_or_default();
    assert_eq!(
        request_line, "GET /version HTTP/1.1",
        "bollard now sends an API version prefix: an engine older than {}.{} will refuse it \
         ('client version is too new'). Negotiate (bollard's negotiate_version) or route \
         testcontainers through a version-rewriting proxy; see docs/ARCHITECTURE.md (images).",
        API_DEFAULT_VERSION.major_version, API_DEFAULT_VERSION.minor_version
    );
}

#[tokio::test]
async fn engine_refuses_a_newer_versioned_path_and_serves_an_unversioned_one() {
    let Some(docker) = require_docker().await else {
        return;
    };
    let (status, body) = raw_get(docker.socket(), "/version").await;
    assert_eq!(status, 200, "{body}");
    let engine: Vec<u64> = docker
        .engine_api_version()
        .split('.')
        .map(|p| p.parse().expect("numeric API version"))
        .collect();
    let bollard_default = vec![
        API_DEFAULT_VERSION.major_version as u64,
        API_DEFAULT_VERSION.minor_version as u64,
    ];
    let versioned = format!(
        "/v{}.{}/version",
        API_DEFAULT_VERSION.major_version, API_DEFAULT_VERSION.minor_version
    );
    let (status, body) = raw_get(docker.socket(), &versioned).await;
    if engine < bollard_default {
        assert_eq!(status, 400, "{body}");
        assert!(body.contains("too new"), "{body}");
    } else {
        assert_eq!(status, 200, "{body}");
    }
}

/// Removes what the test made even when an assertion fails (the docker CLI negotiates its API
/// version, so it works against any engine).
struct Cleanup {
    container: String,
    image: String,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = Command::new("docker")
            .args(["rm", "-f", &self.container])
            .output();
        let _ = Command::new("docker")
            .args(["rmi", "-f", &self.image])
            .output();
    }
}

/// A one-file ustar archive: a build context.
fn tar_with(name: &str, content: &[u8]) -> Vec<u8> {
    let mut header = [0u8; 512];
    header[..name.len()].copy_from_slice(name.as_bytes());
    header[100..108].copy_from_slice(b"0000644\0");
    header[108..116].copy_from_slice(b"0000000\0");
    header[116..124].copy_from_slice(b"0000000\0");
    header[124..136].copy_from_slice(format!("{:011o}\0", content.len()).as_bytes());
    header[136..148].copy_from_slice(b"00000000000\0");
    header[148..156].copy_from_slice(b"        ");
    header[156] = b'0';
    header[257..263].copy_from_slice(b"ustar\0");
    header[263..265].copy_from_slice(b"00");
    let sum: u32 = header.iter().map(|b| u32::from(*b)).sum();
    header[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    let mut out = header.to_vec();
    out.extend_from_slice(content);
    out.resize(out.len().div_ceil(512) * 512, 0);
    out.extend_from_slice(&[0u8; 1024]);
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn testcontainers_client_builds_creates_inspects_and_removes_on_this_engine() {
    let Some(_docker) = require_docker().await else {
        return;
    };
    // The very client testcontainers configures for itself (DOCKER_HOST or the default socket,
    // bollard's default API version, no negotiation).
    let client = testkit::testcontainers::core::client::docker_client_instance()
        .await
        .expect("testcontainers' docker client");
    let cleanup = Cleanup {
        container: unique_name("engine"),
        image: format!("probelab-testkit-engine:{}", std::process::id()),
    };

    // A streamed POST body (the tar context) and a streamed answer (build progress).
    let dockerfile = format!(
        "FROM scratch\nLABEL {OWNER_LABEL}={}\nCMD [\"/none\"]\n",
        std::process::id()
    );
    let mut build = client.build_image(
        BuildImageOptionsBuilder::new()
            .t(&cleanup.image)
            .rm(true)
            .build(),
        None,
        Some(body_full(Bytes::from(tar_with(
            "Dockerfile",
            dockerfile.as_bytes(),
        )))),
    );
    let mut built = false;
    while let Some(step) = build.next().await {
        let step = step.expect("build step");
        assert!(step.error_detail.is_none(), "build failed: {step:?}");
        built |= step.aux.is_some()
            || step
                .stream
                .as_deref()
                .is_some_and(|s| s.contains("Successfully built"));
    }
    assert!(built, "the build never reported success");

    let labels = HashMap::from([(OWNER_LABEL.to_string(), std::process::id().to_string())]);
    let created = client
        .create_container(
            Some(
                CreateContainerOptionsBuilder::new()
                    .name(&cleanup.container)
                    .build(),
            ),
            bollard::models::ContainerCreateBody {
                image: Some(cleanup.image.clone()),
                labels: Some(labels),
                ..Default::default()
            },
        )
        .await
        .expect("create");
    let inspected = client
        .inspect_container(&created.id, None::<InspectContainerOptions>)
        .await
        .expect("inspect");
    assert_eq!(
        inspected.name.as_deref(),
        Some(&*format!("/{}", cleanup.container))
    );
    assert_eq!(
        inspected
            .state
            .and_then(|s| s.status)
            .map(|s| s.to_string())
            .as_deref(),
        Some("created")
    );
    client
        .remove_container(
            &created.id,
            Some(RemoveContainerOptionsBuilder::new().force(true).build()),
        )
        .await
        .expect("remove");
    let gone = client
        .inspect_container(&created.id, None::<InspectContainerOptions>)
        .await;
    assert!(
        matches!(
            gone,
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404,
                ..
            })
        ),
        "container still there: {gone:?}"
    );
}
