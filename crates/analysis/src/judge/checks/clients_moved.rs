//! `clients_moved`: the virtual clients of a load (loadgen `--clients`, the lab's `clients`)
//! that moved to another replica in the check's scope, read from loadgen's `client` lines of
//! the step's runs of the load: a client moved when a response came from another replica than
//! its previous response (the replica header). Counted once per client however often it moved;
//! the moves are counted by the replica they left and with whether the response set a new
//! cookie (the affinity renewed), and the first ones are listed, so a failure says who moved
//! where. Not evaluated without a `client` line in scope
//! (the load ran without virtual clients, or no response named its replica). [Measured]

use std::collections::BTreeMap;

use lab::Check;
use logline::line::ClientChange;
use serde_json::json;

use super::{Eval, bounds_text, invalid, judged, load_runs, within_bounds};
use crate::read::clients::{ClientTally, RunKey};
use crate::read::model::Acc;
use crate::read::runs::RunsRecord;
use crate::ts::iso_ms;

/// Evaluates a `clients_moved` check.
pub(super) fn clients_moved(c: &Check, runs: &RunsRecord, acc: &Acc) -> Eval {
    let Some(load) = &c.load else {
        return invalid("clients_moved needs `load`");
    };
    let (run_ids, where_) = match load_runs(c, load, runs) {
        Ok(x) => x,
        Err(e) => return e,
    };
    let in_scope: Vec<(&RunKey, &BTreeMap<u32, ClientTally>)> = acc
        .clients
        .runs
        .iter()
        .filter(|((run, scenario), _)| scenario == "main" && run_ids.contains(&run.as_str()))
        .collect();
    if in_scope.is_empty() {
        return invalid(format!(
            "no `client` line of load {load:?} in {where_}: loadgen ran without virtual \
             clients, or no response named its replica"
        ));
    }
    let clients: usize = in_scope.iter().map(|(_, c)| c.len()).sum();
    let tallies = || in_scope.iter().flat_map(|(_, c)| c.values());
    let moved = tallies().filter(|t| t.moves > 0).count();
    let moves: u64 = tallies().map(|t| t.moves).sum();
    let with_cookie: u64 = tallies().map(|t| t.with_cookie).sum();
    let mut from: BTreeMap<&str, u64> = BTreeMap::new();
    for ((key, _), w) in &acc.clients.windows {
        if in_scope.iter().any(|(k, _)| *k == key) {
            for ((f, _), n) in &w.paths {
                *from.entry(f.as_str()).or_insert(0) += n;
            }
        }
    }
    let mut listed: Vec<&ClientChange> = in_scope
        .iter()
        .filter_map(|(k, _)| acc.clients.listed.get(*k))
        .flatten()
        .collect();
    listed.sort_by_key(|m| m.ts);
    let n = moved as f64;
    let ok = within_bounds(c, n);
    let need = bounds_text(c);
    let first = listed.first().map_or(String::new(), |m| {
        format!(
            "; first: client {} {} -> {} at {}",
            m.client,
            m.previous_replica.as_deref().unwrap_or("?"),
            m.replica.as_deref().unwrap_or("?"),
            iso_ms(m.ts.epoch_ms())
        )
    });
    let from_text = if from.is_empty() {
        String::new()
    } else {
        let f: Vec<String> = from.iter().map(|(r, k)| format!("{r} ×{k}")).collect();
        format!("; moved from {}", f.join(", "))
    };
    judged(
        ok,
        format!(
            "{} of {} virtual client(s) of load {load} moved to another replica in {where_} \
             ({need}): {} move(s), {with_cookie} with a new cookie{from_text}{first}",
            moved, clients, moves,
        ),
        json!({
            "load": load,
            "run_ids": run_ids,
            "clients": clients,
            "moved": moved,
            "moves": moves,
            "moves_with_new_cookie": with_cookie,
            "min": c.min,
            "max": c.max,
            "listed": listed.iter().map(|m| json!({
                "ts": iso_ms(m.ts.epoch_ms()),
                "client": m.client,
                "from": m.previous_replica,
                "to": m.replica,
                "set_cookie": m.set_cookie,
            })).collect::<Vec<_>>(),
        }),
        Vec::new(),
    )
}

#[cfg(test)]
mod tests {
    use logline::Timestamp;

    use super::*;

    fn line(run: &str, client: u32, prev: Option<&str>, to: &str, cookie: bool) -> ClientChange {
        ClientChange {
            ts: Timestamp::from_epoch_ms(1_000 + i64::from(client)),
            run_id: Some(run.to_owned()),
            perturbation_id: None,
            scenario: "main".to_owned(),
            client,
            code: Some(200),
            replica: Some(to.to_owned()),
            revision: None,
            previous_replica: prev.map(str::to_owned),
            set_cookie: if cookie {
                vec![format!("aff={to}")]
            } else {
                Vec::new()
            },
        }
    }

    fn runs() -> RunsRecord {
        serde_json::from_value(json!({
            "steps": [
                {"name": "rollout", "phase": "rollout", "start": "2026-01-01T00:00:00Z",
                 "runs": [{"load": "sticky", "run_id": "rollout-1"}]},
                {"name": "other", "phase": "other", "start": "2026-01-01T00:01:00Z",
                 "runs": [{"load": "sticky", "run_id": "other-1"}]}
            ]
        }))
        .unwrap()
    }

    fn check(min: Option<f64>, max: Option<f64>) -> Check {
        Check {
            name: "c".into(),
            kind: lab::CheckKind::ClientsMoved,
            load: Some("sticky".into()),
            step: Some("rollout".into()),
            min,
            max,
            ..serde_json::from_value(json!({"name": "c", "kind": "clients_moved"})).unwrap()
        }
    }

    fn acc() -> Acc {
        let mut acc = Acc::new(10_000);
        for l in [
            // Three clients pinned, two moved (one twice), in scope.
            line("rollout-1", 0, None, "r1", true),
            line("rollout-1", 1, None, "r2", true),
            line("rollout-1", 2, None, "r1", true),
            line("rollout-1", 0, Some("r1"), "r3", true),
            line("rollout-1", 0, Some("r3"), "r4", false),
            line("rollout-1", 2, Some("r1"), "r3", true),
            // Another step's run: out of scope.
            line("other-1", 1, Some("r2"), "r9", true),
        ] {
            acc.clients.add(l, 10_000);
        }
        acc.clients.finish();
        acc
    }

    #[test]
    fn counts_each_moved_client_once_within_the_steps_runs() {
        let e = clients_moved(&check(Some(2.0), Some(2.0)), &runs(), &acc());
        assert_eq!(
            e.status,
            crate::judge::verdict::Status::Pass,
            "{}",
            e.detail
        );
        assert_eq!(e.numbers["clients"], 3);
        assert_eq!(e.numbers["moved"], 2);
        assert_eq!(e.numbers["moves"], 3);
        assert_eq!(e.numbers["moves_with_new_cookie"], 2);
        assert!(e.detail.contains("moved from r1 ×2, r3 ×1"), "{}", e.detail);
    }

    #[test]
    fn both_sides_of_each_bound() {
        let status = |min, max| clients_moved(&check(min, max), &runs(), &acc()).status;
        use crate::judge::verdict::Status::{Fail, Pass};
        assert_eq!(status(Some(2.0), None), Pass);
        assert_eq!(status(Some(3.0), None), Fail);
        assert_eq!(status(None, Some(2.0)), Pass);
        assert_eq!(status(None, Some(1.0)), Fail);
    }

    #[test]
    fn without_client_lines_it_is_not_evaluated() {
        let e = clients_moved(&check(None, Some(0.0)), &runs(), &Acc::new(10_000));
        assert_eq!(e.status, crate::judge::verdict::Status::NotEvaluated);
        assert!(e.detail.contains("no `client` line"), "{}", e.detail);
    }
}
