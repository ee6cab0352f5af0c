//! The evidence pack a run writes into, and `runs.json`: what was started and fired, and when.
//!
//! `runs.json` is rewritten (atomically) after every step, so a run stopped half-way leaves a
//! valid file marked `incomplete: true`; its types are the analysis's ([`RunsRecord`]), which
//! reads it back through them.

use std::path::{Path, PathBuf};

pub use analysis::read::runs::{
    ActionRecord, LogWriteFailure, RUNS_FILE, RunRecord, RunsRecord, StepRecord,
};
use chrono::{DateTime, Utc};

use crate::RunError;

/// The file recording which profile the lab ran with.
pub const PROFILE_FILE: &str = "profile";

/// `yyyymmddTHHMMSSZ`, the stamp in pack names and run ids.
pub fn stamp(t: DateTime<Utc>) -> String {
    t.format("%Y%m%dT%H%M%SZ").to_string()
}

/// RFC 3339 with milliseconds, UTC.
pub fn iso(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// The lab's name: the lab file's stem.
pub fn lab_name(lab_path: &Path) -> String {
    lab_path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "lab".to_owned())
}

/// Creates `<out>/<lab>-<stamp>/` (with `-2`, `-3`, ... if taken), copies the lab file in as
/// `lab.toml` and records the profile, before anything else happens.
pub fn create(
    out: &Path,
    lab_path: &Path,
    profile: &str,
    now: DateTime<Utc>,
) -> Result<PathBuf, RunError> {
    std::fs::create_dir_all(out).map_err(|e| RunError::io(out, e))?;
    let base = format!("{}-{}", lab_name(lab_path), stamp(now));
    let mut dir = out.join(&base);
    let mut n = 1;
    loop {
        match std::fs::create_dir(&dir) {
            Ok(()) => break,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 100 => {
                n += 1;
                dir = out.join(format!("{base}-{n}"));
            }
            Err(e) => return Err(RunError::io(&dir, e)),
        }
    }
    let text = std::fs::read(lab_path).map_err(|e| RunError::io(lab_path, e))?;
    write_atomic(&dir.join("lab.toml"), &text)?;
    write_atomic(&dir.join(PROFILE_FILE), format!("{profile}\n").as_bytes())?;
    Ok(dir)
}

/// Writes a file atomically (temp file beside it, then rename).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), RunError> {
    analysis::render::pack::write_atomic(path, bytes).map_err(RunError::from)
}

/// A log-write failure of localplane's sink as `runs.json` records it, with the path made
/// relative to `pack` when it lies inside.
pub fn log_write_failure(f: &localplane::logsink::WriteFailure, pack: &Path) -> LogWriteFailure {
    LogWriteFailure {
        file: f
            .file
            .strip_prefix(pack)
            .unwrap_or(&f.file)
            .to_string_lossy()
            .into_owned(),
        error: f.error.clone(),
        first_failed_ts: f.first_failed.to_rfc3339_ms(),
        rows_lost: f.rows_lost,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use chrono::TimeZone;

    #[test]
    fn pack_names_and_lab_copy_happen_first() {
        let dir = tempfile::tempdir().unwrap();
        let lab = dir.path().join("startup-degraded.toml");
        std::fs::write(&lab, "title = \"x\"\n").unwrap();
        let now = Utc.with_ymd_and_hms(2026, 6, 12, 14, 17, 45).unwrap();
        let out = dir.path().join("evidence");
        let a = create(&out, &lab, "quick", now).unwrap();
        assert!(a.ends_with("startup-degraded-20260612T141745Z"), "{a:?}");
        assert_eq!(
            std::fs::read_to_string(a.join("lab.toml")).unwrap(),
            "title = \"x\"\n"
        );
        assert_eq!(
            std::fs::read_to_string(a.join("profile")).unwrap(),
            "quick\n"
        );
        let b = create(&out, &lab, "quick", now).unwrap();
        assert!(b.ends_with("startup-degraded-20260612T141745Z-2"), "{b:?}");
    }

    #[test]
    fn runs_json_round_trips_with_the_documented_names() {
        let dir = tempfile::tempdir().unwrap();
        let rec = RunsRecord {
            lab: "l".into(),
            profile: "quick".into(),
            target: "local".into(),
            started: "2026-01-01T00:00:00.000Z".into(),
            ended: None,
            incomplete: true,
            stopped_by: None,
            time_scale: 1.0,
            localplane_timings: Some("recorded".into()),
            localplane_knobs: Some(BTreeMap::from([(
                "subject".to_owned(),
                BTreeMap::from([(
                    "localplane.revisionReady".to_owned(),
                    "firstReplica".to_owned(),
                )]),
            )])),
            log_write_failures: vec![LogWriteFailure {
                file: "logs/ContainerAppSystemLogs_CL.ndjson".into(),
                error: "No space left on device (os error 28)".into(),
                first_failed_ts: "2026-01-01T00:00:05.000Z".into(),
                rows_lost: 12,
            }],
            steps: vec![StepRecord {
                name: "perturbation".into(),
                phase: "perturbation".into(),
                start: "s".into(),
                end: None,
                perturbation_id: Some("p".into()),
                runs: vec![
                    RunRecord {
                        load: "main".into(),
                        run_id: "perturbation-20260101T000000Z".into(),
                        ..Default::default()
                    },
                    RunRecord {
                        load: "sampler".into(),
                        run_id: "perturbation-event-1-20260101T000000Z".into(),
                        event: Some(1),
                        ..Default::default()
                    },
                ],
                actions: vec![ActionRecord {
                    event: 1,
                    kind: "rollout".into(),
                    app: "subject".into(),
                    ts: "t".into(),
                    outcome: "ok".into(),
                    status: Some(200),
                    code: None,
                    dur_ms: 5,
                    detail: "d".into(),
                    perturbation_id: Some("perturbation-event-1-20260101T000000Z".into()),
                    ..Default::default()
                }],
            }],
        };
        rec.write(dir.path()).unwrap();
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.path().join(RUNS_FILE)).unwrap()).unwrap();
        for k in [
            "lab",
            "profile",
            "target",
            "started",
            "ended",
            "incomplete",
            "localplane_timings",
            "localplane_knobs",
            "steps",
        ] {
            assert!(v.get(k).is_some(), "{k}");
        }
        let f = &v["log_write_failures"][0];
        for k in ["file", "error", "first_failed_ts", "rows_lost"] {
            assert!(f.get(k).is_some(), "log_write_failures: {k}");
        }
        let a = &v["steps"][0]["actions"][0];
        for k in [
            "event",
            "kind",
            "app",
            "ts",
            "outcome",
            "status",
            "dur_ms",
            "detail",
            "perturbation_id",
        ] {
            assert!(a.get(k).is_some(), "{k}");
        }
        let runs = &v["steps"][0]["runs"];
        assert!(runs[0].get("event").is_none(), "a load run has no event");
        assert_eq!(runs[1]["event"], 1);
        assert_eq!(runs[1]["run_id"], a["perturbation_id"]);
        assert_eq!(RunsRecord::read(&dir.path().join(RUNS_FILE)).unwrap(), rec);
    }

    #[test]
    fn runs_json_written_before_per_event_ids_still_reads() {
        let old = r#"{"lab":"l","profile":"quick","target":"local","started":"s","ended":null,
            "incomplete":false,"steps":[{"name":"perturbation","phase":"perturbation","start":"s",
            "end":null,"perturbation_id":"perturbation-x","runs":[{"load":"sampler",
            "run_id":"perturbation-x"}],"actions":[{"event":1,"kind":"rollout","app":"subject",
            "ts":"t","outcome":"ok","dur_ms":1,"detail":"d"}]}]}"#;
        let rec: RunsRecord = serde_json::from_str(old).unwrap();
        assert_eq!(rec.steps[0].runs[0].event, None);
        assert_eq!(rec.steps[0].actions[0].perturbation_id, None);
    }
}
