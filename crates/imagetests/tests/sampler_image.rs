//! The `probelab/perturbation-sampler:dev` image against localplane's ARM API: localplane runs
//! in-process on the Docker runtime with the subject image as app `subject`, and the sampler
//! container joins localplane's network and reads ARM at `http://<gateway>:<port>`, as a
//! sampler job does in a local lab. What a user reads in the container's stdout: a rollout or a
//! restart shows up in the ticks after it, the ticks keep their absolute schedule, no errors, the
//! window ends with exit 0 on its own and with 143 and an end marker on `docker stop`.

mod common;

use std::time::{Duration, Instant};

use common::plane::*;
use testkit::docker::{require_docker, wait_exit};
use testkit::lines::sampler_errors;
use testkit::now_ms;
use testkit::testcontainers::ImageExt;
use testkit::testcontainers::runners::AsyncRunner;

const IMAGE: &str = "perturbation-sampler";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampler_image_sees_a_rollout_on_cadence_and_exits_0_when_its_window_ends() {
    let Some(docker) = require_docker().await else {
        return;
    };
    docker.require_image("subject").await;
    docker.require_image(IMAGE).await;
    // Declared first, dropped last: on a panic the sampler container goes before localplane.
    let plane = start_plane().await;
    let rev1 = plane.put_subject(1).await;

    let (interval_ms, window_s) = (1000_i64, 14_u64);
    let sampler = sampler_container(&plane, IMAGE)
        .with_env_var("SAMPLE_INTERVAL_SECONDS", "1")
        .with_env_var("SAMPLE_DURATION_SECONDS", window_s.to_string())
        .with_env_var("PERTURBATION_ID", "p-rollout")
        .with_env_var("RUN_ID", "imagetests")
        .start()
        .await
        .unwrap_or_else(|e| panic!("sampler container did not start: {e}"));
    assert_pid1_non_root(&docker, &sampler, IMAGE, "/perturbation-sampler").await;

    // The perturbation: a rollout (a changed env makes a new revision; Single mode moves all
    // traffic to it once it is ready and deactivates the old one).
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let rollout_at = now_ms();
    let suffix = arm::fresh_revision_suffix();
    plane
        .arm
        .set_app_env(
            &plane.scope,
            APP,
            Some("subject"),
            "MARKER",
            "v2",
            Some(&suffix),
        )
        .await
        .unwrap_or_else(|e| panic!("rollout: {e}"));
    let (rev2, reps2) = plane.settle(2, 1, Duration::from_secs(30)).await;
    let settled_at = now_ms();
    assert!(rev2.name.ends_with(&suffix), "{}", rev2.name);

    let code = wait_exit(&sampler, Duration::from_secs(window_s + 20)).await;
    let lines = lines_of(&sampler).await;
    assert_eq!(
        code, 0,
        "the sampler exits 0 when its window ends: {lines:#?}"
    );

    let unexpected = unexpected_errors(&lines, &[]);
    assert!(unexpected.is_empty(), "errors: {unexpected:#?}");
    let (start, end) = markers(&lines);
    assert_eq!(start.apps, [APP]);
    assert_eq!(
        (start.interval_s, start.duration_s),
        (Some(1.0), Some(window_s as f64))
    );
    assert_eq!(
        (end.ticks_scheduled, end.ticks_completed),
        (Some(window_s), Some(window_s)),
        "every tick's ARM calls succeeded"
    );
    let window_ms = end.ts.epoch_ms() - start.ts.epoch_ms();
    assert!(
        (window_s as i64 * 1000..window_s as i64 * 1000 + CADENCE_TOLERANCE_MS)
            .contains(&window_ms),
        "the end marker closes the window on time: {window_ms} ms"
    );
    assert_on_cadence(&lines, window_s, interval_ms);
    for l in revision_samples(&lines) {
        assert_eq!(
            (
                l.app.as_str(),
                l.sampler.as_deref(),
                l.run_id.as_deref(),
                l.perturbation_id.as_deref()
            ),
            (APP, Some(IMAGE), Some("imagetests"), Some("p-rollout")),
            "{l:?}"
        );
    }

    // Before the rollout: the one revision, active with all traffic, and its ready replica.
    let before: Vec<u64> = (0..window_s)
        .filter(|k| tick_ts(&lines, *k) < rollout_at)
        .collect();
    assert!(before.len() >= 2, "ticks before the rollout: {before:?}");
    for &k in &before {
        assert_eq!(
            revisions_at(&lines, k),
            [(rev1.name.clone(), true, 1, 100)],
            "tick {k}"
        );
        let reps = replicas_at(&lines, k);
        assert!(
            reps.len() == 1 && reps[0].0 == rev1.name,
            "tick {k}: {reps:?}"
        );
    }
    // Once ARM showed the rollout settled: both revisions listed, the new one active with all
    // traffic and the same replica ARM lists, the old one inactive and empty.
    let after: Vec<u64> = (0..window_s)
        .filter(|k| tick_ts(&lines, *k) > settled_at)
        .collect();
    assert!(
        after.len() >= 2,
        "ticks after the rollout settled: {after:?}"
    );
    let mut want = vec![
        (rev1.name.clone(), false, 0, 0),
        (rev2.name.clone(), true, 1, 100),
    ];
    want.sort();
    for &k in &after {
        assert_eq!(revisions_at(&lines, k), want, "tick {k}");
        assert_eq!(
            replicas_at(&lines, k),
            [(rev2.name.clone(), reps2[0].name.clone())],
            "tick {k}"
        );
    }
    // The new revision appears once and stays: no tick after its first lacks it.
    let first_seen = (0..window_s)
        .find(|k| revisions_at(&lines, *k).iter().any(|r| r.0 == rev2.name))
        .unwrap_or_else(|| panic!("no tick listed {}", rev2.name));
    assert!(
        (first_seen..window_s).all(|k| revisions_at(&lines, k).iter().any(|r| r.0 == rev2.name))
    );

    sampler
        .rm()
        .await
        .unwrap_or_else(|e| panic!("removing the sampler container: {e}"));
    plane.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampler_image_sees_a_restart_and_ends_its_window_on_docker_stop() {
    let Some(docker) = require_docker().await else {
        return;
    };
    docker.require_image("subject").await;
    docker.require_image(IMAGE).await;
    let plane = start_plane().await;
    let rev = plane.put_subject(1).await;
    let (_, before_reps) = plane.settle(1, 1, Duration::from_secs(5)).await;
    let old_replica = before_reps[0].name.clone();

    let sampler = sampler_container(&plane, IMAGE)
        .with_env_var("SAMPLE_INTERVAL_SECONDS", "1")
        .with_env_var("SAMPLE_DURATION_SECONDS", "60")
        .start()
        .await
        .unwrap_or_else(|e| panic!("sampler container did not start: {e}"));

    // The perturbation: a revision restart replaces the replica with a new one.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let restart_at = now_ms();
    plane
        .arm
        .restart_revision(&plane.scope, APP, &rev.name)
        .await
        .unwrap_or_else(|e| panic!("restart: {e}"));
    let limit = Instant::now() + Duration::from_secs(30);
    let new_replica = loop {
        let (_, reps) = plane.settle(1, 1, Duration::from_secs(30)).await;
        if reps[0].name != old_replica {
            break reps[0].name.clone();
        }
        assert!(
            Instant::now() < limit,
            "replica {old_replica} was not replaced within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let settled_at = now_ms();
    tokio::time::sleep(Duration::from_millis(2200)).await;

    let stop_at = Instant::now();
    sampler
        .stop_with_timeout(Some(10))
        .await
        .unwrap_or_else(|e| panic!("docker stop: {e}"));
    let took = stop_at.elapsed();
    let code = wait_exit(&sampler, Duration::from_secs(5)).await;
    let lines = lines_of(&sampler).await;
    assert_eq!(
        code, 143,
        "SIGTERM reached the sampler as PID 1 and ended its window (137 would be a SIGKILL \
         after the grace): {lines:#?}"
    );
    assert!(took < Duration::from_secs(5), "docker stop took {took:?}");

    let unexpected = unexpected_errors(&lines, &["interrupted"]);
    assert!(unexpected.is_empty(), "errors: {unexpected:#?}");
    let interrupted = sampler_errors(&lines)
        .into_iter()
        .filter(|e| e.operation == "interrupted")
        .count();
    assert_eq!(interrupted, 1, "one `interrupted` line: {lines:#?}");
    let (start, end) = markers(&lines);
    let ran = ticks(&lines).len() as u64;
    assert_eq!(end.ticks_scheduled, Some(60));
    assert_eq!(end.ticks_completed, Some(ran), "{end:?}");
    assert!(
        ran >= 5,
        "at least 5 s of 1 s ticks before the stop, got {ran}"
    );
    assert_on_cadence(&lines, ran, 1000);
    assert!(
        end.ts.epoch_ms() - start.ts.epoch_ms() < (ran as i64 + 1) * 1000,
        "the end marker is written at the stop, not at the window's end"
    );

    let (mut before, mut after) = (0, 0);
    for k in 0..ran {
        let ts = tick_ts(&lines, k);
        let revs = revisions_at(&lines, k);
        assert!(
            revs.len() == 1 && revs[0].0 == rev.name && revs[0].1 && revs[0].3 == 100,
            "tick {k}: the restart keeps the one revision active with all traffic: {revs:?}"
        );
        // While the restart runs, old and new replica may both be listed, not all ready.
        if ts < restart_at {
            before += 1;
            assert_eq!(revs[0].2, 1, "tick {k}");
            assert_eq!(
                replicas_at(&lines, k),
                [(rev.name.clone(), old_replica.clone())],
                "tick {k} before the restart"
            );
        } else if ts > settled_at {
            after += 1;
            assert_eq!(revs[0].2, 1, "tick {k}");
            assert_eq!(
                replicas_at(&lines, k),
                [(rev.name.clone(), new_replica.clone())],
                "tick {k} after the restart"
            );
        }
    }
    assert!(
        before >= 2 && after >= 2,
        "ticks before the restart: {before}, after it settled: {after}"
    );

    sampler
        .rm()
        .await
        .unwrap_or_else(|e| panic!("removing the sampler container: {e}"));
    plane.stop().await;
}
