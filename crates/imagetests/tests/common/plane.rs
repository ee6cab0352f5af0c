//! localplane in-process on the Docker runtime (testkit's [`ArmPlane`]) as the ARM endpoint that
//! the `perturbation-sampler` and `audit` images reach from inside its network, plus what their
//! tests share: the images' ARM environment, typed stdout lines, schedule checks and the PID 1 /
//! non-root check.

use std::collections::BTreeSet;

use localplane::RuntimeKind;
use logline::line::{
    Line, MarkerPhase, PerturbationWindowMarker, ReplicaInventorySample, RevisionStateSample,
};
pub use testkit::arm_plane::{APP, ArmPlane, SUBSCRIPTION as SUB};
use testkit::docker::Docker;
use testkit::localplane::Harness;
use testkit::testcontainers::{ContainerAsync, ContainerRequest, GenericImage, ImageExt};

pub const RG: &str = "rg-images";

/// How far from `start + k * interval` a tick may start in these tests. The sampler reports a
/// tick more than 50 ms late as `tick_late` (its own cadence test pins 50 ms on a quiet machine);
/// here the container shares two cores with localplane, the subject containers and the rest of
/// the suite, so a late tick is tolerated up to this bound and anything else is an error.
pub const CADENCE_TOLERANCE_MS: i64 = 250;

/// Starts localplane on the Docker runtime (ARM API on 127.0.0.1 and on its network's gateway)
/// with the managed environment. Call after `require_docker` and `require_image`; `stop` shuts
/// it down, and if a test panics first, dropping it removes whatever it left in Docker.
pub async fn start_plane() -> ArmPlane {
    ArmPlane::on(Harness::start(RuntimeKind::Docker).await, RG).await
}

/// A request for `probelab/<image>:dev` on localplane's network with the ARM environment every
/// sampler needs (no token: localplane takes none; `auto` would pick the Azure CLI for a
/// non-loopback `http` endpoint) and sampling app [`APP`].
pub fn sampler_container(plane: &ArmPlane, image: &str) -> ContainerRequest<GenericImage> {
    let lp = plane.plane.localplane();
    let network = lp
        .docker_network()
        .unwrap_or_else(|| panic!("localplane on Docker has a network"));
    testkit::docker::container(image, &[])
        .with_network(network.to_owned())
        .with_env_var("SUBSCRIPTION_ID", SUB)
        .with_env_var("RESOURCE_GROUP", RG)
        .with_env_var("CONTAINER_APP_NAMES", APP)
        .with_env_var("ARM_ENDPOINT", lp.container_arm_endpoint())
        .with_env_var("ARM_TOKEN_SOURCE", "none")
}

/// The container's stdout as typed lines; panics on a torn line or one that is not a known kind.
pub async fn lines_of(c: &ContainerAsync<GenericImage>) -> Vec<Line> {
    let out = c
        .stdout_to_vec()
        .await
        .unwrap_or_else(|e| panic!("docker logs {}: {e}", c.id()));
    parse_lines(&String::from_utf8_lossy(&out))
}

/// Parses JSON lines as logline's `Line`; panics naming the first line that does not parse.
pub fn parse_lines(text: &str) -> Vec<Line> {
    text.lines()
        .enumerate()
        .map(|(i, l)| {
            Line::from_json(l).unwrap_or_else(|e| panic!("stdout line {}: {e}: {l}", i + 1))
        })
        .collect()
}

/// The `start` and `end` markers, which must be the first and last lines.
pub fn markers(lines: &[Line]) -> (&PerturbationWindowMarker, &PerturbationWindowMarker) {
    let samples: Vec<&Line> = lines
        .iter()
        .filter(|l| !matches!(l, Line::Log(_)))
        .collect();
    match (samples.first().copied(), samples.last().copied()) {
        (Some(Line::PerturbationWindowMarker(s)), Some(Line::PerturbationWindowMarker(e)))
            if s.phase == MarkerPhase::Start && e.phase == MarkerPhase::End =>
        {
            (s, e)
        }
        _ => panic!("the window's start and end markers open and close the output: {lines:#?}"),
    }
}

pub fn revision_samples(lines: &[Line]) -> Vec<&RevisionStateSample> {
    lines
        .iter()
        .filter_map(|l| match l {
            Line::RevisionStateSample(s) => Some(s),
            _ => None,
        })
        .collect()
}

pub fn replica_samples(lines: &[Line]) -> Vec<&ReplicaInventorySample> {
    lines
        .iter()
        .filter_map(|l| match l {
            Line::ReplicaInventorySample(s) => Some(s),
            _ => None,
        })
        .collect()
}

/// Every `SamplerError` except `tick_late` within [`CADENCE_TOLERANCE_MS`] and the operations in
/// `expected`, plus every `log` line at `error` or `warn` level, as readable strings.
pub fn unexpected_errors(lines: &[Line], expected: &[&str]) -> Vec<String> {
    lines
        .iter()
        .filter_map(|l| match l {
            Line::SamplerError(e)
                if expected.contains(&e.operation.as_str())
                    || (e.operation == "tick_late"
                        && e.late_ms
                            .is_some_and(|ms| ms as i64 <= CADENCE_TOLERANCE_MS)) =>
            {
                None
            }
            Line::SamplerError(e) => Some(format!("{e:?}")),
            Line::Log(log) if log.level == "error" || log.level == "warn" => {
                Some(format!("{log:?}"))
            }
            _ => None,
        })
        .collect()
}

/// The tick numbers that printed samples, in order.
pub fn ticks(lines: &[Line]) -> BTreeSet<u64> {
    revision_samples(lines)
        .iter()
        .filter_map(|s| s.tick)
        .chain(replica_samples(lines).iter().filter_map(|s| s.tick))
        .collect()
}

/// The `ts` (ms since the epoch) of tick `k`'s lines; panics unless they all share one.
pub fn tick_ts(lines: &[Line], k: u64) -> i64 {
    let all: BTreeSet<i64> = revision_samples(lines)
        .iter()
        .filter(|s| s.tick == Some(k))
        .map(|s| s.ts.epoch_ms())
        .chain(
            replica_samples(lines)
                .iter()
                .filter(|s| s.tick == Some(k))
                .map(|s| s.ts.epoch_ms()),
        )
        .collect();
    assert_eq!(all.len(), 1, "tick {k}'s lines share one ts: {all:?}");
    all.into_iter().next().unwrap_or_default()
}

/// Asserts ticks `0..n` all printed and each started within [`CADENCE_TOLERANCE_MS`] of
/// `start + k * interval` (absolute schedule: no drift however long the window).
pub fn assert_on_cadence(lines: &[Line], n: u64, interval_ms: i64) {
    let (start, _) = markers(lines);
    let t0 = start.ts.epoch_ms();
    let seen = ticks(lines);
    assert_eq!(
        seen,
        (0..n).collect::<BTreeSet<_>>(),
        "ticks that printed samples"
    );
    for k in 0..n {
        let off = tick_ts(lines, k) - (t0 + k as i64 * interval_ms);
        assert!(
            (0..=CADENCE_TOLERANCE_MS).contains(&off),
            "tick {k} started {off} ms from its slot (start + {k} x {interval_ms} ms)"
        );
    }
}

/// The revisions tick `k` listed, as (name, active, replicas, traffic weight), sorted by name.
pub fn revisions_at(lines: &[Line], k: u64) -> Vec<(String, bool, u32, u32)> {
    let mut v: Vec<_> = revision_samples(lines)
        .into_iter()
        .filter(|s| s.tick == Some(k))
        .map(|s| (s.revision.clone(), s.active, s.replicas, s.traffic_weight))
        .collect();
    v.sort();
    v
}

/// The replicas tick `k` listed, as (revision, replica), sorted; panics if one of them is not
/// running with every container started and ready (the apps here are steady between changes).
pub fn replicas_at(lines: &[Line], k: u64) -> Vec<(String, String)> {
    let mut v: Vec<_> = replica_samples(lines)
        .into_iter()
        .filter(|s| s.tick == Some(k))
        .map(|s| (s.revision.clone(), s.replica.clone(), s))
        .collect();
    v.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    v.into_iter()
        .map(|(rev, rep, s)| {
            assert!(
                !s.containers.is_empty() && s.containers.iter().all(|c| c.ready && c.started),
                "tick {k}: replica {rep} of {rev} not ready: {s:?}"
            );
            (rev, rep)
        })
        .collect()
}

/// Asserts the image runs as `USER 65532:65532` and that the running container's init process
/// is `binary` as PID 1 in its namespace with uid 65532, seen from the host's /proc.
pub async fn assert_pid1_non_root(
    docker: &Docker,
    c: &ContainerAsync<GenericImage>,
    image: &str,
    binary: &str,
) {
    let img = docker
        .client()
        .inspect_image(&testkit::docker::image_ref(image))
        .await
        .unwrap_or_else(|e| panic!("inspect image {image}: {e}"));
    let user = img.config.and_then(|c| c.user);
    assert_eq!(user.as_deref(), Some("65532:65532"), "{image} USER");
    let inspected = docker
        .client()
        .inspect_container(c.id(), None)
        .await
        .unwrap_or_else(|e| panic!("inspect container {}: {e}", c.id()));
    let state = inspected.state.unwrap_or_default();
    assert_eq!(
        state.running,
        Some(true),
        "{image} still running: {state:?}"
    );
    let pid = state
        .pid
        .unwrap_or_else(|| panic!("{image}: no pid in {state:?}"));
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
        .unwrap_or_else(|e| panic!("/proc/{pid}/cmdline: {e}"));
    assert_eq!(
        cmdline.split(|b| *b == 0).next(),
        Some(binary.as_bytes()),
        "{image}: the binary is the init process"
    );
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_else(|e| panic!("/proc/{pid}/status: {e}"));
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} line in /proc/{pid}/status"))
            .to_owned()
    };
    let nspid = field("NSpid:");
    assert_eq!(
        nspid.split_whitespace().last(),
        Some("1"),
        "{image}: {nspid}"
    );
    let uid = field("Uid:");
    assert!(
        uid.split_whitespace().skip(1).all(|u| u == "65532"),
        "{image} runs as uid 65532: {uid}"
    );
}
