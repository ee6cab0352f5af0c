//! `revision_state_seen`: the perturbation sampler's `RevisionStateSample`s of `app`'s revisions
//! in the check's scope (as [`super::scope`] sets it for event checks; with `new_revision =
//! true`, only of revisions whose `created_time` falls within it) with `running_state`, and
//! `provisioning_state` and `health_state` when given, number at least `min` (1). What ARM
//! reported is read as the sampler read it, every tick; the states it saw are listed whether the
//! check passes or not, so a failure says what the revisions reported instead. Not evaluated
//! without a sample of `app` in scope (the sampler runs in action steps and in steps with
//! `sample = true`). [Observed]

use std::collections::BTreeMap;

use lab::Check;
use logline::line::RevisionStateSample;
use serde_json::json;

use super::{Eval, invalid, judged, scope};
use crate::read::model::Acc;
use crate::read::runs::RunsRecord;
use crate::ts::{iso_ms, parse_ms};

/// Evaluates a `revision_state_seen` check.
pub(super) fn revision_state_seen(c: &Check, runs: &RunsRecord, acc: &Acc) -> Eval {
    let (Some(app), Some(running)) = (&c.app, &c.running_state) else {
        return invalid("revision_state_seen needs `app` and `running_state`");
    };
    let (from, to, what) = match scope(c, runs) {
        Ok(x) => x,
        Err(e) => return e,
    };
    let within = |t: i64| t >= from && to.is_none_or(|end| t <= end);
    let new_only = c.new_revision == Some(true);
    let in_scope: Vec<&RevisionStateSample> = acc
        .rev_samples
        .iter()
        .filter(|s| &s.app == app && within(s.ts.epoch_ms()))
        .filter(|s| {
            !new_only
                || s.created_time
                    .as_deref()
                    .and_then(parse_ms)
                    .is_some_and(within)
        })
        .collect();
    if in_scope.is_empty() {
        let which = if new_only {
            " of a revision created there"
        } else {
            ""
        };
        return invalid(format!(
            "no revision sample of {app}{which} in {what} (the perturbation sampler runs in \
             action steps and in steps with `sample = true`)"
        ));
    }
    let wanted = |s: &RevisionStateSample| {
        s.running_state.as_deref() == Some(running.as_str())
            && c.provisioning_state
                .as_ref()
                .is_none_or(|p| &s.provisioning_state == p)
            && c.health_state
                .as_ref()
                .is_none_or(|h| s.health_state.as_deref() == Some(h.as_str()))
    };
    let hits: Vec<&&RevisionStateSample> = in_scope.iter().filter(|s| wanted(s)).collect();
    let min = c.min.unwrap_or(1.0);
    let seen = states_seen(&in_scope);
    let first = hits.first().map_or(String::new(), |s| {
        format!("; first: {} at {}", s.revision, iso_ms(s.ts.epoch_ms()))
    });
    judged(
        hits.len() as f64 >= min,
        format!(
            "{} sample(s) of {app} with {} (need >= {min}) in {what}{first}; seen: {}",
            hits.len(),
            lab::describe::state_text(c),
            seen.join(", ")
        ),
        json!({
            "app": app,
            "from": iso_ms(from),
            "to": to.map(iso_ms),
            "count": hits.len(),
            "min": min,
            "samples": in_scope.len(),
            "seen": seen,
        }),
        hits.iter()
            .map(|s| {
                format!(
                    "q3-revision-timeline:{} {}",
                    iso_ms(s.ts.epoch_ms()),
                    s.revision
                )
            })
            .collect(),
    )
}

/// Each revision's (provisioning, running, health) states in the samples, with their counts:
/// `app--r2 Provisioning/Processing/None ×4`.
fn states_seen(samples: &[&RevisionStateSample]) -> Vec<String> {
    let mut seen: BTreeMap<(&str, &str, &str, &str), usize> = BTreeMap::new();
    for s in samples {
        let key = (
            s.revision.as_str(),
            s.provisioning_state.as_str(),
            s.running_state.as_deref().unwrap_or("-"),
            s.health_state.as_deref().unwrap_or("-"),
        );
        *seen.entry(key).or_insert(0) += 1;
    }
    seen.iter()
        .map(|((r, p, run, h), n)| format!("{r} {p}/{run}/{h} ×{n}"))
        .collect()
}
