//! The loadgen job's side of a step: the env of one loadgen run (one replica's share of the
//! load) and the run id that ties its lines to the step.

use lab::{Load, Step};

use crate::jobs::EnvChange;
use crate::schedule::{scaled, step_duration, whole_seconds};

/// The env of one loadgen run (every variable the runner manages is set or removed, so nothing
/// leaks from the previous run of the same job). It is one replica's share of the load when the
/// load runs `replicas` of them: every rate (the main one, each staircase step, each `also`
/// stream's `rate=`) and the closed model's workers divided by the replica count; the replicas'
/// lines share the run_id, so the analysis sums them.
pub fn loadgen_env(
    step: &Step,
    load: &Load,
    base_url: &str,
    run_id: &str,
    perturbation_id: &str,
    scale: f64,
) -> Vec<EnvChange> {
    let s = |v: String| Some(v);
    let d = |x: &Option<String>| {
        x.as_deref()
            .and_then(|v| logline::config::parse_duration(v).ok())
            .map(|v| format!("{}ms", scaled(v, scale).as_millis().max(1)))
    };
    let n = load.replica_count().max(1);
    let share = |r: f64| (r / f64::from(n)).to_string();
    let rate = if step.staircase.is_empty() {
        load.rate.map(share)
    } else {
        step.staircase
            .iter()
            .copied()
            .fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.max(r))))
            .map(share)
    };
    vec![
        ("SUBJECT_URL".into(), s(format!("{base_url}{}", load.path))),
        ("TARGET_RPS".into(), rate),
        (
            "DURATION_SECONDS".into(),
            s(whole_seconds(step_duration(step, scale)).to_string()),
        ),
        ("RUN_ID".into(), s(run_id.to_owned())),
        ("PERTURBATION_ID".into(), s(perturbation_id.to_owned())),
        ("CONNECTION".into(), s(load.connection.clone())),
        ("WORKERS".into(), load.workers.map(|w| (w / n).to_string())),
        ("CLIENTS".into(), load.clients.map(|c| c.to_string())),
        ("THINK".into(), load.think.clone()),
        ("REQUEST_TIMEOUT".into(), load.timeout.clone()),
        (
            "ALSO".into(),
            (!load.also.is_empty()).then(|| {
                load.also
                    .iter()
                    .map(|a| side_share(a, n))
                    .collect::<Vec<_>>()
                    .join(";")
            }),
        ),
        ("LOG_REQUESTS".into(), load.log_requests.clone()),
        (
            "STAIRCASE".into(),
            (!step.staircase.is_empty()).then(|| {
                step.staircase
                    .iter()
                    .map(|r| share(*r))
                    .collect::<Vec<_>>()
                    .join(",")
            }),
        ),
        (
            "STEP".into(),
            if step.staircase.is_empty() {
                None
            } else {
                d(&step.staircase_step)
            },
        ),
        (
            "PAUSE".into(),
            if step.staircase.is_empty() {
                None
            } else {
                d(&step.staircase_pause)
            },
        ),
    ]
}

/// One replica's share of a side stream (`rate=4,path=/x` over 2 replicas: `rate=2,path=/x`;
/// without `rate=`, a share of loadgen's default of 1 per second); a `rate` that is not a number
/// is left for loadgen to reject.
fn side_share(spec: &str, n: u32) -> String {
    if n <= 1 {
        return spec.to_owned();
    }
    let n = f64::from(n);
    let mut rated = false;
    let mut parts: Vec<String> = spec
        .split(',')
        .map(|part| match part.split_once('=') {
            Some((k, v)) if k.trim() == "rate" => {
                rated = true;
                match v.trim().parse::<f64>() {
                    Ok(r) => format!("{k}={}", r / n),
                    Err(_) => part.to_owned(),
                }
            }
            _ => part.to_owned(),
        })
        .collect();
    if !rated {
        parts.push(format!("rate={}", 1.0 / n));
    }
    parts.join(",")
}

/// The run id of a load in a step: `<phase>-<load>-<stamp>`, or `<phase>-<stamp>` when the lab
/// has one load.
pub fn run_id(step: &Step, load: &Load, single: bool, ts: &str) -> String {
    if single {
        format!("{}-{ts}", step.phase)
    } else {
        format!("{}-{}-{ts}", step.phase, load.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lab::Lab;
    use std::path::Path;

    fn lab() -> Lab {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../labs/startup-degraded.toml");
        lab::load(&p, "quick").unwrap()
    }

    #[test]
    fn loadgen_env_sets_or_clears_every_managed_variable() {
        let lab = lab();
        let pre = &lab.steps[0];
        let env = loadgen_env(
            pre,
            &lab.load[0],
            "http://subject",
            "preflight-x",
            "none",
            1.0,
        );
        let get = |k: &str| {
            env.iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
                .unwrap()
        };
        assert_eq!(get("SUBJECT_URL").as_deref(), Some("http://subject/"));
        assert_eq!(get("STAIRCASE").as_deref(), Some("100,200,400"));
        assert_eq!(get("STEP").as_deref(), Some("30000ms"));
        assert_eq!(get("TARGET_RPS").as_deref(), Some("400"));
        // 3 steps of 30 s and 2 pauses of 10 s.
        assert_eq!(get("DURATION_SECONDS").as_deref(), Some("110"));
        assert_eq!(get("CONNECTION").as_deref(), Some("close"));
        assert_eq!(get("CLIENTS"), None, "no virtual clients unless asked for");
        let mut sticky = lab.load[0].clone();
        sticky.clients = Some(12);
        let env = loadgen_env(pre, &sticky, "http://subject", "p", "none", 1.0);
        let clients = env.iter().find(|(n, _)| n == "CLIENTS").unwrap();
        assert_eq!(clients.1.as_deref(), Some("12"));
        let base = &lab.steps[1];
        let env = loadgen_env(
            base,
            &lab.load[0],
            "http://subject",
            "baseline-x",
            "none",
            1.0,
        );
        let staircase = env.iter().find(|(n, _)| n == "STAIRCASE").unwrap();
        assert_eq!(
            staircase.1, None,
            "a later run must not inherit the staircase"
        );
        assert_eq!(
            run_id(base, &lab.load[0], true, "20260101T000000Z"),
            "baseline-20260101T000000Z"
        );
        let mut three = lab.load[0].clone();
        three.replicas = Some(3);
        three.also = vec!["rate=1.5,path=/slow,name=slow".into(), "path=/x".into()];
        let env = loadgen_env(pre, &three, "http://subject", "p", "none", 1.0);
        let get = |k: &str| env.iter().find(|(n, _)| n == k).unwrap().1.clone();
        assert_eq!(
            get("TARGET_RPS").as_deref(),
            Some(&*(400.0f64 / 3.0).to_string())
        );
        let stairs: Vec<f64> = get("STAIRCASE")
            .unwrap()
            .split(',')
            .map(|r| r.parse().unwrap())
            .collect();
        let total: Vec<f64> = stairs.iter().map(|r| (r * 3.0).round()).collect();
        assert_eq!(total, [100.0, 200.0, 400.0]);
        assert_eq!(
            get("ALSO").as_deref(),
            Some(&*format!(
                "rate=0.5,path=/slow,name=slow;path=/x,rate={}",
                1.0f64 / 3.0
            ))
        );
        three.rate = None;
        three.workers = Some(6);
        let env = loadgen_env(base, &three, "http://subject", "b", "none", 1.0);
        let get = |k: &str| env.iter().find(|(n, _)| n == k).unwrap().1.clone();
        assert_eq!(get("WORKERS").as_deref(), Some("2"));
        assert_eq!(
            run_id(base, &lab.load[0], false, "20260101T000000Z"),
            "baseline-main-20260101T000000Z"
        );
    }
}
