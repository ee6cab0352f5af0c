//! `lab::load` rejects, before anything runs, what would otherwise surface after a whole run:
//! a check of an unknown kind or with the wrong parameters, a dangling reference, a value out of
//! range, a headroom staircase that cannot show headroom, a profile that changes the rule or
//! weakens a precondition. Each error names the file, the key and what is wrong; each boundary
//! is tested on both sides.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

fn labs_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../labs")
}

fn shipped(name: &str) -> String {
    std::fs::read_to_string(labs_dir().join(format!("{name}.toml"))).unwrap()
}

fn err(text: &str, profile: &str) -> String {
    match lab::parse(text, "x.toml".as_ref(), profile) {
        Ok(_) => panic!("loaded although it should not (profile {profile})"),
        Err(e) => e.to_string(),
    }
}

fn ok(text: &str, profile: &str) -> lab::Lab {
    lab::parse(text, "x.toml".as_ref(), profile).unwrap_or_else(|e| panic!("{e}"))
}

/// A small observation lab with one check, `check` being its extra keys.
fn obs(check: &str) -> String {
    format!(
        r#"
title = "t"
question = "q?"
kind = "observation"
[hypothesis]
text = "h"
[[apps]]
name = "web"
image = "probelab/subject:dev"
probes = [{{ type = "Liveness", path = "/live", port = 8080 }}]
[[apps]]
name = "idle"
image = "probelab/subject:dev"
[[load]]
name = "main"
target = "web"
rate = 5
also = ["rate=1,path=/slow?seconds=20,name=slow"]
[[load]]
name = "other"
target = "idle"
rate = 1
[[steps]]
name = "baseline"
phase = "baseline"
duration = "10s"
loads = ["main"]
[[steps]]
name = "kick"
phase = "kick"
action = {{ kind = "saturate", app = "web", path = "/delay?seconds=60" }}
events = 1
interval = "60s"
[[checks]]
name = "c"
{check}
"#
    )
}

#[test]
fn every_kind_loads_with_its_parameters() {
    for check in [
        "kind = \"status_seen\"\nload = \"main\"\nstatus = 503\nstep = \"baseline\"",
        "kind = \"status_seen\"\nload = \"main\"\nscenario = \"slow\"\nstatus = 599\nmin = 1",
        "kind = \"no_errors\"\nload = \"main\"\nstep = \"baseline\"",
        "kind = \"errors_at_least\"\nload = \"main\"\nmin = 10",
        "kind = \"recovers\"\nload = \"main\"",
        "kind = \"restart_count_at_least\"\napp = \"web\"\nstep = \"kick\"\nwithin = \"30s\"",
        "kind = \"restart_count_at_most\"\napp = \"idle\"\nmax = 0",
        "kind = \"probe_failed\"\napp = \"web\"\nprobe = \"Liveness\"\nmin = 3",
        "kind = \"probe_failed_first\"\napp = \"web\"\nprobe = \"readiness\"",
        "kind = \"action_failed\"\napp = \"web\"\nstep = \"kick\"",
        "kind = \"slowest_between\"\nload = \"main\"\nstep = \"baseline\"\nmin = 5000\nmax = 30000",
        "kind = \"system_event_at_least\"\napp = \"web\"\nreason = \"SuccessfulRescale\"\ncontains = \"New size: 2;\"",
        "kind = \"system_event_at_least\"\napp = \"web\"\nreason = \"KEDAScaleTargetActivated\"\nstep = \"kick\"\nwithin = \"30s\"\nmin = 2",
    ] {
        ok(&obs(check), "full");
    }
}

#[test]
fn a_check_with_the_wrong_kind_or_parameters_names_the_key() {
    for (check, want) in [
        (
            "kind = \"latency_below\"\nload = \"main\"",
            "checks[0].kind (check \"c\"): unknown check kind \"latency_below\"",
        ),
        (
            "kind = \"status_seen\"\nload = \"main\"",
            "checks[0].status (check \"c\"): check kind status_seen needs `status`",
        ),
        (
            "kind = \"no_errors\"\napp = \"web\"",
            "checks[0].load (check \"c\"): check kind no_errors needs `load`",
        ),
        (
            "kind = \"no_errors\"\nload = \"main\"\nwithin = \"10s\"",
            "checks[0].within (check \"c\"): check kind no_errors does not take `within`",
        ),
        (
            "kind = \"probe_failed\"\napp = \"web\"",
            "checks[0].probe (check \"c\"): check kind probe_failed needs `probe`",
        ),
        (
            "kind = \"probe_failed\"\napp = \"web\"\nprobe = \"Livenes\"",
            "checks[0].probe (check \"c\"): \"Livenes\" is not Startup, Readiness or Liveness",
        ),
        (
            "kind = \"restart_count_at_least\"\napp = \"wbe\"",
            "checks[0].app (check \"c\"): app \"wbe\" is not defined",
        ),
        (
            "kind = \"restart_count_at_least\"\napp = \"web\"\nstep = \"kik\"",
            "checks[0].step (check \"c\"): step \"kik\" is not defined (steps: baseline, kick)",
        ),
        (
            "kind = \"no_errors\"\nload = \"mian\"",
            "checks[0].load (check \"c\"): load \"mian\" is not defined",
        ),
        (
            "kind = \"no_errors\"\nload = \"main\"\nscenario = \"slwo\"",
            "checks[0].scenario (check \"c\"): load \"main\" has no stream \"slwo\" (streams: main, slow)",
        ),
        (
            "kind = \"no_errors\"\nload = \"other\"\nstep = \"baseline\"",
            "checks[0].load (check \"c\"): step \"baseline\" does not run load \"other\"",
        ),
        (
            "kind = \"action_failed\"\napp = \"idle\"\nstep = \"kick\"",
            "checks[0].step (check \"c\"): step \"kick\" has no action on app \"idle\"",
        ),
        (
            "kind = \"restart_count_at_least\"\napp = \"web\"\nwithin = \"soon\"",
            "checks[0].within (check \"c\"): ",
        ),
        (
            "kind = \"restart_count_at_least\"\napp = \"web\"\nmimimum = 1",
            "checks[0].mimimum: unknown field `mimimum`, expected one of `name`, `kind`",
        ),
    ] {
        let e = err(&obs(check), "full");
        assert!(e.starts_with("x.toml (profile full): "), "{e}");
        assert!(e.contains(want), "want {want:?} in\n{e}");
    }
}

#[test]
fn check_values_are_range_checked_on_both_sides() {
    let kind = "kind = \"errors_at_least\"\nload = \"main\"";
    ok(&obs(&format!("{kind}\nmin = 1")), "full");
    let e = err(&obs(&format!("{kind}\nmin = 0")), "full");
    assert!(
        e.contains("checks[0].min") && e.contains("cannot fail"),
        "{e}"
    );
    let e = err(&obs(&format!("{kind}\nmin = 1.5")), "full");
    assert!(e.contains("checks[0].min"), "{e}");

    let kind = "kind = \"restart_count_at_most\"\napp = \"web\"";
    ok(&obs(&format!("{kind}\nmax = 0")), "full");
    let e = err(&obs(&format!("{kind}\nmax = -1")), "full");
    assert!(e.contains("checks[0].max"), "{e}");

    let kind = "kind = \"status_seen\"\nload = \"main\"";
    ok(&obs(&format!("{kind}\nstatus = 100")), "full");
    let e = err(&obs(&format!("{kind}\nstatus = 600")), "full");
    assert!(e.contains("checks[0].status") && e.contains("600"), "{e}");
    let e = err(&obs(&format!("{kind}\nstatus = \"503\"")), "full");
    assert!(e.contains("checks[0].status: invalid type"), "{e}");

    // slowest_between: a window that holds one value is allowed, an empty one is not.
    let kind = "kind = \"slowest_between\"\nload = \"main\"";
    ok(&obs(&format!("{kind}\nmin = 5000\nmax = 5000")), "full");
    let e = err(&obs(&format!("{kind}\nmin = 5000\nmax = 4999")), "full");
    assert!(
        e.contains("checks[0].max") && e.contains("below min 5000"),
        "{e}"
    );
    let e = err(&obs(&format!("{kind}\nmin = 5000")), "full");
    assert!(e.contains("checks[0].max"), "{e}");
    let kind = "kind = \"system_event_at_least\"\napp = \"web\"";
    let e = err(&obs(kind), "full");
    assert!(e.contains("checks[0].reason"), "{e}");
    let e = err(&obs(&format!("{kind}\nreason = \" \"")), "full");
    assert!(e.contains("checks[0].reason") && e.contains("empty"), "{e}");
}

/// An app with `scale_line` (TOML keys of the app) on top of a minimal observation lab.
fn scaled(scale_line: &str) -> String {
    obs("kind = \"no_errors\"\nload = \"main\"").replacen(
        "[[apps]]\nname = \"idle\"\nimage = \"probelab/subject:dev\"\n",
        &format!("[[apps]]\nname = \"idle\"\nimage = \"probelab/subject:dev\"\n{scale_line}\n"),
        1,
    )
}

#[test]
fn a_scale_block_is_checked_against_container_apps_limits() {
    let l = ok(
        &scaled(
            "scale = { min_replicas = 0, max_replicas = 1000, concurrent_requests = 1, polling_seconds = 1, cooldown_seconds = 0 }",
        ),
        "full",
    );
    let idle = l.apps.iter().find(|a| a.name == "idle").unwrap();
    assert_eq!((idle.min_replicas(), idle.max_replicas()), (0, 1000));
    ok(
        &scaled("scale = { min_replicas = 3, max_replicas = 3 }"),
        "full",
    );
    for (line, want) in [
        (
            "scale = { min_replicas = 0, max_replicas = 1001 }",
            "apps[1].scale.max_replicas",
        ),
        (
            "scale = { min_replicas = 0, max_replicas = 0 }",
            "apps[1].scale.max_replicas",
        ),
        (
            "scale = { min_replicas = 4, max_replicas = 3 }",
            "apps[1].scale.min_replicas",
        ),
        (
            "scale = { min_replicas = 0, max_replicas = 3, concurrent_requests = 0 }",
            "apps[1].scale.concurrent_requests",
        ),
        (
            "scale = { min_replicas = 0, max_replicas = 3, polling_seconds = 0 }",
            "apps[1].scale.polling_seconds",
        ),
        (
            "replicas = 2\nscale = { min_replicas = 0, max_replicas = 3 }",
            "either `replicas` (a fixed count) or `scale`",
        ),
        (
            "scale = { min_replicas = 0, max_replicas = 3, cooldown = 5 }",
            "unknown field `cooldown`",
        ),
    ] {
        let e = err(&scaled(line), "full");
        assert!(e.contains(want), "{line}: {e}");
    }
}

#[test]
fn the_scaling_knobs_take_localplanes_values_only() {
    let l = ok(
        &scaled(
            "scale = { min_replicas = 1, max_replicas = 3 }\nhttp_metric = \"peakInFlight\"\nscale_up = \"atOnce\"\nscale_down_stabilization = \"cooldownPeriod\"",
        ),
        "full",
    );
    let idle = l.apps.iter().find(|a| a.name == "idle").unwrap();
    assert_eq!(idle.http_metric.as_deref(), Some("peakInFlight"));
    ok(&scaled("scale_down_stabilization = \"10\""), "full");
    for (line, want) in [
        ("http_metric = \"inFlight\"", "apps[1].http_metric"),
        ("scale_up = \"fast\"", "apps[1].scale_up"),
        (
            "scale_down_stabilization = \"5m\"",
            "apps[1].scale_down_stabilization",
        ),
    ] {
        let e = err(&scaled(line), "full");
        assert!(e.contains(want), "{line}: {e}");
    }
}

#[test]
fn sample_is_for_steps_without_an_action() {
    let base = obs("kind = \"no_errors\"\nload = \"main\"");
    let l = ok(
        &base.replacen(
            "loads = [\"main\"]\n",
            "loads = [\"main\"]\nsample = true\n",
            1,
        ),
        "full",
    );
    assert!(l.steps[0].sample && !l.steps[1].sample);
    let e = err(
        &base.replacen(
            "interval = \"60s\"\n",
            "interval = \"60s\"\nsample = true\n",
            1,
        ),
        "full",
    );
    assert!(e.contains("steps[1].sample"), "{e}");
}

#[test]
fn the_shipped_checks_stay_valid_and_a_typo_in_one_is_caught() {
    let text = shipped("dependency-coupled-probes");
    ok(&text, "full");
    let typo = text.replace("step = \"intermittent\"", "step = \"intermitent\"");
    let e = err(&typo, "quick");
    assert!(
        e.contains("checks[6].step (check \"intermittent failure makes readiness flap\")"),
        "{e}"
    );
}

fn rollout_with_quick_staircase(stairs: &str) -> String {
    // The quick profile's preflight entry, whatever its step length: the replacement must
    // happen, or every case below would test the shipped file instead.
    let quick =
        "[[profiles.quick.steps]]\nname = \"preflight\"\nstaircase = [100.0, 200.0, 400.0]\n";
    let text = shipped("startup-degraded");
    assert!(
        text.contains(quick),
        "startup-degraded.toml no longer has {quick:?}"
    );
    text.replace(
        quick,
        &format!("[[profiles.quick.steps]]\nname = \"preflight\"\nstaircase = {stairs}\n"),
    )
}

#[test]
fn a_headroom_staircase_holds_the_load_rate_and_the_step_below_it() {
    let l = ok(
        &rollout_with_quick_staircase("[100.0, 200.0, 400.0]"),
        "quick",
    );
    assert_eq!(l.steps[0].staircase, vec![100.0, 200.0, 400.0]);
    ok(&rollout_with_quick_staircase("[150.0, 200.0]"), "quick");
    for (stairs, lacks) in [
        ("[50.0, 100.0]", "lacks the load's rate 200 (load \"main\")"),
        (
            "[300.0, 400.0]",
            "lacks the load's rate 200 and a step below it",
        ),
        ("[100.0, 400.0]", "lacks the load's rate 200 (load"),
        ("[200.0, 400.0]", "lacks a step below the load's rate 200"),
    ] {
        let e = err(&rollout_with_quick_staircase(stairs), "quick");
        assert!(
            e.contains("steps[0].staircase (step \"preflight\")") && e.contains(lacks),
            "{stairs}: {e}"
        );
    }
    // The file as written is unaffected by a quick profile it does not load...
    ok(&rollout_with_quick_staircase("[50.0, 100.0]"), "full");
    // ... and a lab that does not require headroom may step as it likes.
    let no_headroom = rollout_with_quick_staircase("[50.0, 100.0]")
        .replace("headroom = true\nheadroom_factor = 5.0\n", "");
    ok(&no_headroom, "quick");
    // Without any staircase, headroom cannot be shown.
    let e = err(
        &shipped("startup-degraded-misconfigured").replace(
            "baseline_clean = true\n",
            "baseline_clean = true\nheadroom = true\n",
        ),
        "full",
    );
    assert!(
        e.contains("preconditions.headroom: headroom = true needs a step with a staircase"),
        "{e}"
    );
    let e = err(
        &rollout_with_quick_staircase("[200.0, 100.0, 400.0]"),
        "quick",
    );
    assert!(e.contains("rise strictly"), "{e}");
}

#[test]
fn a_profile_may_not_change_the_rule() {
    let text = format!(
        "{}\n[profiles.quick.rule]\nconsecutive = 2\n",
        shipped("startup-degraded")
    );
    for profile in ["quick", "full"] {
        let e = err(&text, profile);
        assert!(
            e.contains("profiles.quick.rule.consecutive: a profile may not change the pre-registered `rule`"),
            "{e}"
        );
    }
    for (key, line) in [
        (
            "hypothesis.expect",
            "[profiles.quick.hypothesis]\nexpect = \"falsified\"",
        ),
        ("kind", "[profiles.quick]\nkind = \"observation\""),
    ] {
        let base = shipped("startup-degraded");
        // The file defines `[profiles.quick]` (its `localplane_timings`): add the key there.
        let text = if key == "kind" {
            assert!(base.contains("[profiles.quick]\n"));
            base.replace(
                "[profiles.quick]\n",
                "[profiles.quick]\nkind = \"observation\"\n",
            )
        } else {
            format!("{base}\n{line}\n")
        };
        let e = err(&text, "quick");
        assert!(e.contains(&format!("profiles.quick.{key}")), "{e}");
    }
}

#[test]
fn a_profile_may_strengthen_but_never_weaken_a_precondition() {
    let base = shipped("startup-degraded");
    let with = |pre: &str| format!("{base}\n[profiles.quick.preconditions]\n{pre}\n");
    for (pre, key) in [
        ("headroom = false", "profiles.quick.preconditions.headroom"),
        (
            "baseline_clean = false",
            "profiles.quick.preconditions.baseline_clean",
        ),
        (
            "perturbations_observed = false",
            "profiles.quick.preconditions.perturbations_observed",
        ),
        (
            "headroom_factor = 4.9",
            "profiles.quick.preconditions.headroom_factor",
        ),
    ] {
        let e = err(&with(pre), "quick");
        assert!(e.contains(key) && e.contains("may not"), "{pre}: {e}");
    }
    let l = ok(&with("headroom_factor = 6.0"), "quick");
    assert_eq!(l.preconditions.headroom_factor, Some(6.0));
    ok(&with("headroom_factor = 5.0\nheadroom = true"), "quick");

    // Turning a precondition on is allowed.
    let control = shipped("startup-degraded-misconfigured");
    let on = format!("{control}\n[profiles.quick.preconditions]\nbaseline_clean = true\n");
    ok(&on, "quick");
}

#[test]
fn a_profile_changes_a_check_only_in_its_within() {
    let base = shipped("dependency-coupled-probes");
    ok(&base, "quick");
    for (extra, key) in [
        (
            "[[profiles.quick.checks]]\nname = \"readiness-only is never restarted\"\nmax = 3",
            "profiles.quick.checks[1].max",
        ),
        (
            "[[profiles.quick.checks]]\nname = \"a new check\"\nwithin = \"10s\"",
            "profiles.quick.checks[1].name",
        ),
    ] {
        let e = err(&format!("{base}\n{extra}\n"), "quick");
        assert!(e.contains(key), "{extra}: {e}");
    }
}

#[test]
fn expected_perturbations_follows_the_schedule() {
    let base = shipped("startup-degraded");
    let with = |n: u32| {
        base.replace(
            "perturbations_observed = true\n",
            &format!("perturbations_observed = true\nexpected_perturbations = {n}\n"),
        )
    };
    ok(&with(15), "full");
    let e = err(&with(14), "full");
    assert!(
        e.contains("preconditions.expected_perturbations: 14, but the schedule fires 15 event(s)"),
        "{e}"
    );
    // The quick schedule fires 3 + 2 events: the full file's 15 does not hold for it.
    let e = err(&with(15), "quick");
    assert!(e.contains("fires 5 event(s)"), "{e}");
}

#[test]
fn wrong_types_and_unknown_keys_name_their_key_path() {
    let base = shipped("startup-degraded");
    let e = err(
        &base.replace("replicas = 3", "replicas = \"three\""),
        "full",
    );
    assert!(
        e.contains("x.toml (profile full): apps[0].replicas: invalid type: string \"three\""),
        "{e}"
    );
    let e = err(
        &base.replace("threshold_pct = 0.5", "threshold_pct = 50.5e3"),
        "full",
    );
    assert!(
        e.contains("rule.threshold_pct: 50500 is not between 0 and 100"),
        "{e}"
    );
    let e = err(&base.replace("consecutive = 3", "consecutive = 0"), "full");
    assert!(e.contains("rule.consecutive: must be at least 1"), "{e}");
    let e = err(&base.replace("[rule]\n", "[rule]\nwindows = 3\n"), "full");
    assert!(e.contains("rule.windows: unknown field `windows`"), "{e}");
    let e = err(&base.replace("rate = 200", "rate = -200"), "full");
    assert!(e.contains("load[0].rate (load \"main\")"), "{e}");
    let e = err(
        &base.replace(
            "phases = [\"perturbation\", \"supplemental-restart\"]",
            "phases = [\"perturbation\", \"suplemental-restart\"]",
        ),
        "full",
    );
    assert!(
        e.contains("rule.phases[1]: no step has phase \"suplemental-restart\""),
        "{e}"
    );
    let e = err(
        &base.replace(
            "evidence_cap = \"Strongly Suggested\"",
            "evidence_cap = \"Strongly Suspected\"",
        ),
        "full",
    );
    assert!(e.contains("hypothesis.evidence_cap"), "{e}");
    let e = err(
        &base.replace("headroom_factor = 5.0", "headroom_factor = 1.0"),
        "full",
    );
    assert!(
        e.contains("preconditions.headroom_factor: 1 must be above 1"),
        "{e}"
    );
}

#[test]
fn load_replicas_are_one_to_twenty_and_split_workers_evenly() {
    let base = obs("kind = \"no_errors\"\nstep = \"baseline\"\nload = \"main\"");
    let main = "[[load]]\nname = \"main\"\ntarget = \"web\"\n";
    let with = |extra: &str| base.replace(main, &format!("{main}{extra}\n"));
    assert_eq!(ok(&base, "full").load[0].replica_count(), 1);
    for n in [1, 20] {
        let l = ok(&with(&format!("replicas = {n}")), "full");
        assert_eq!(l.load[0].replicas, Some(n));
    }
    let shown = lab::describe::pre_registration(&ok(&with("replicas = 4"), "full"), "x", "full");
    assert!(
        shown.contains("  - main: 5 RPS to web /, connection keep-alive, 4 loadgen replicas"),
        "{shown}"
    );
    for n in [0, 21] {
        let e = err(&with(&format!("replicas = {n}")), "full");
        assert!(
            e.contains(&format!(
                "load[0].replicas (load \"main\"): {n} is not between 1 and 20 loadgen replicas"
            )),
            "{e}"
        );
    }
    let closed = |w: u32, n: u32| {
        base.replace(
            &format!("{main}rate = 5\n"),
            &format!("{main}workers = {w}\nreplicas = {n}\n"),
        )
    };
    assert_eq!(ok(&closed(6, 3), "full").load[0].workers, Some(6));
    let e = err(&closed(7, 3), "full");
    assert!(
        e.contains("load[0].replicas (load \"main\"): 7 workers do not split evenly over 3"),
        "{e}"
    );
    let e = err(&with("replicas = \"3\""), "full");
    assert!(e.contains("load[0].replicas: invalid type: string"), "{e}");
}

#[test]
fn load_clients_need_the_open_model_one_replica_and_a_bounded_count() {
    let base = obs("kind = \"no_errors\"\nstep = \"baseline\"\nload = \"main\"");
    let main = "[[load]]\nname = \"main\"\ntarget = \"web\"\n";
    let with = |extra: &str| base.replace(main, &format!("{main}{extra}\n"));
    assert_eq!(ok(&base, "full").load[0].clients, None);
    for n in [1, 10_000] {
        assert_eq!(
            ok(&with(&format!("clients = {n}")), "full").load[0].clients,
            Some(n)
        );
    }
    let shown = lab::describe::pre_registration(&ok(&with("clients = 12"), "full"), "x", "full");
    assert!(
        shown.contains("5 RPS to web /, connection keep-alive, spread over 12 virtual clients"),
        "{shown}"
    );
    for n in [0, 10_001] {
        let e = err(&with(&format!("clients = {n}")), "full");
        assert!(
            e.contains(&format!(
                "load[0].clients (load \"main\"): {n} is not between 1 and 10000 virtual clients"
            )),
            "{e}"
        );
    }
    let e = err(&with("clients = 4\nreplicas = 2"), "full");
    assert!(
        e.contains("load[0].clients (load \"main\"): virtual clients need one loadgen replica"),
        "{e}"
    );
    let closed = base.replace(
        &format!("{main}rate = 5\n"),
        &format!("{main}workers = 4\nclients = 4\n"),
    );
    let e = err(&closed, "full");
    assert!(e.contains("set rate, not workers"), "{e}");
}

#[test]
fn clients_moved_needs_a_bound_and_a_load_with_clients_on_its_main_stream() {
    let check = |keys: &str| {
        obs(&format!(
            "kind = \"clients_moved\"\nload = \"main\"\n{keys}"
        ))
    };
    let main = "[[load]]\nname = \"main\"\ntarget = \"web\"\n";
    let sticky = |t: String| t.replace(main, &format!("{main}clients = 6\n"));
    for keys in ["max = 0", "min = 6", "min = 1\nmax = 5", "min = 2\nmax = 2"] {
        let l = ok(&sticky(check(keys)), "full");
        assert_eq!(l.checks[0].kind, lab::CheckKind::ClientsMoved);
    }
    let shown = lab::describe::pre_registration(
        &ok(&sticky(check("min = 1\nmax = 5")), "full"),
        "x",
        "full",
    );
    assert!(
        shown.contains("1 to 5 virtual client(s) of load main move to another replica"),
        "{shown}"
    );
    let e = err(&sticky(check("")), "full");
    assert!(
        e.contains("checks[0].min (check \"c\"): set min, max or both"),
        "{e}"
    );
    let e = err(&sticky(check("min = 3\nmax = 2")), "full");
    assert!(e.contains("2 is below min 3: no count could pass"), "{e}");
    let e = err(&check("max = 0"), "full");
    assert!(e.contains("load \"main\" sets no `clients`"), "{e}");
    let e = err(&sticky(check("max = 0\nscenario = \"slow\"")), "full");
    assert!(
        e.contains("virtual clients drive the main stream only"),
        "{e}"
    );
}

#[test]
fn sticky_sessions_are_refused_in_multiple_revision_mode() {
    let base = obs("kind = \"no_errors\"\nload = \"main\"");
    let web = "name = \"web\"\nimage = \"probelab/subject:dev\"\n";
    let with = |extra: &str| base.replace(web, &format!("{web}{extra}\n"));
    let single = ok(
        &with("ingress = { target_port = 8080, sticky_sessions = true }"),
        "full",
    );
    assert!(single.apps[0].ingress.as_ref().unwrap().sticky_sessions);
    let e = err(
        &with(
            "ingress = { target_port = 8080, sticky_sessions = true }\nrevisions_mode = \"multiple\"",
        ),
        "full",
    );
    assert!(e.contains("apps[0].ingress.sticky_sessions (app \"web\"): session affinity works in single revision mode only"), "{e}");
}

/// A two-revision lab in multiple mode: `blue` deployed with the traffic, `green` created by a
/// revision action with none, then `swap` (the traffic action), `retire` (deactivation) and
/// `check` (its extra check keys).
fn two_revisions(app_extra: &str, swap: &str, retire: &str, check: &str) -> String {
    format!(
        r#"
title = "t"
question = "q?"
kind = "observation"
[hypothesis]
text = "h"
[[apps]]
name = "web"
image = "probelab/subject:dev"
ingress = {{ target_port = 8080 }}
{app_extra}
[[load]]
name = "main"
target = "web"
rate = 5
[[steps]]
name = "green"
phase = "deploy"
duration = "10s"
action = {{ kind = "revision", app = "web", suffix = "green", env = {{ FAIL_RATE = "0.2" }}, traffic = [{{ revision = "blue", weight = 100 }}, {{ revision = "green", weight = 0, label = "green" }}] }}
[[steps]]
name = "swap"
phase = "swap"
duration = "10s"
action = {{ kind = "traffic", app = "web", traffic = {swap} }}
[[steps]]
name = "retire"
phase = "retire"
duration = "10s"
action = {{ kind = "deactivate", app = "web", revision = "{retire}" }}
[[checks]]
name = "c"
{check}
"#
    )
}

const MULTI: &str = r#"revisions_mode = "multiple"
revision_suffix = "blue"
traffic = [{ revision = "blue", weight = 100, label = "blue" }]"#;
const SWAP: &str = r#"[{ revision = "blue", weight = 10 }, { revision = "green", weight = 90 }]"#;
const RATE: &str =
    "kind = \"error_rate_between\"\nload = \"main\"\nstep = \"swap\"\nmin_pct = 1.5\nmax_pct = 2.5";

#[test]
fn multiple_mode_traffic_and_revision_actions_load_when_consistent() {
    let l = ok(&two_revisions(MULTI, SWAP, "blue", RATE), "full");
    assert_eq!(
        l.apps[0].revisions_mode,
        lab::schema::RevisionsMode::Multiple
    );
    ok(
        &two_revisions(
            MULTI,
            SWAP,
            "blue",
            "kind = \"errors_served_by\"\nload = \"main\"\napp = \"web\"\nrevision = \"green\"",
        ),
        "full",
    );
    // The latest revision, whichever it is, may take the weight.
    ok(
        &two_revisions(
            MULTI,
            r#"[{ revision = "blue", weight = 50 }, { latest = true, weight = 50 }]"#,
            "blue",
            RATE,
        ),
        "full",
    );
    // min_pct = max_pct and 0-100 are the edges of what can pass.
    ok(
        &two_revisions(
            MULTI,
            SWAP,
            "blue",
            "kind = \"error_rate_between\"\nload = \"main\"\nmin_pct = 0\nmax_pct = 0\nmin_requests = 1",
        ),
        "full",
    );
}

#[test]
fn traffic_rules_are_refused_as_container_apps_refuses_them() {
    for (app_extra, swap, retire, check, want) in [
        // weights must sum to 100, on either side.
        (
            MULTI,
            r#"[{ revision = "blue", weight = 10 }, { revision = "green", weight = 80 }]"#,
            "blue",
            RATE,
            "steps[1].action.traffic (step \"swap\"): the weights sum to 90, not 100",
        ),
        (
            MULTI,
            r#"[{ revision = "blue", weight = 10 }, { revision = "green", weight = 91 }]"#,
            "blue",
            RATE,
            "the weights sum to 101, not 100",
        ),
        // traffic in single mode.
        (
            "revision_suffix = \"blue\"",
            SWAP,
            "blue",
            RATE,
            "steps[1].action (step \"swap\"): a traffic action needs app \"web\" in revisions_mode = \"multiple\"",
        ),
        // a revision nobody created.
        (
            MULTI,
            r#"[{ revision = "red", weight = 100 }]"#,
            "blue",
            RATE,
            "steps[1].action.traffic[0].revision (step \"swap\"): no revision of \"web\" has suffix \"red\"",
        ),
        (
            MULTI,
            SWAP,
            "red",
            RATE,
            "steps[2].action.revision (step \"retire\"): no earlier revision of \"web\" has suffix \"red\"",
        ),
        // an entry is a revision or the latest, not both, not neither.
        (
            MULTI,
            r#"[{ revision = "blue", latest = true, weight = 100 }]"#,
            "blue",
            RATE,
            "give exactly one of revision (a suffix) or latest = true",
        ),
        (
            MULTI,
            r#"[{ weight = 100 }]"#,
            "blue",
            RATE,
            "give exactly one of revision (a suffix) or latest = true",
        ),
        // a label names one entry.
        (
            MULTI,
            r#"[{ revision = "blue", weight = 50, label = "x" }, { revision = "green", weight = 50, label = "x" }]"#,
            "blue",
            RATE,
            "label \"x\" is given twice",
        ),
        // a label that cannot be a host name.
        (
            MULTI,
            r#"[{ revision = "blue", weight = 10, label = "Blue" }, { revision = "green", weight = 90 }]"#,
            "blue",
            RATE,
            "steps[1].action.traffic[0].label (step \"swap\"): \"Blue\" is not a label",
        ),
        // a suffix Azure would refuse.
        (
            "revisions_mode = \"multiple\"\nrevision_suffix = \"Blue\"\ntraffic = [{ revision = \"Blue\", weight = 100 }]",
            SWAP,
            "blue",
            RATE,
            "apps[0].revision_suffix (app \"web\"): \"Blue\" is not a revision suffix",
        ),
        // the check's percentages and revision.
        (
            MULTI,
            SWAP,
            "blue",
            "kind = \"error_rate_between\"\nload = \"main\"\nmin_pct = 3\nmax_pct = 2",
            "checks[0].max_pct (check \"c\"): 2 is below min_pct 3: nothing could pass",
        ),
        (
            MULTI,
            SWAP,
            "blue",
            "kind = \"error_rate_between\"\nload = \"main\"\nmin_pct = 0\nmax_pct = 100.5",
            "checks[0].max_pct (check \"c\"): 100.5 is not a percentage (0-100)",
        ),
        (
            MULTI,
            SWAP,
            "blue",
            "kind = \"error_rate_between\"\nload = \"main\"\nmin_pct = 0\nmax_pct = 1\nmin_requests = 0",
            "checks[0].min_requests (check \"c\"): must be at least 1",
        ),
        (
            MULTI,
            SWAP,
            "blue",
            "kind = \"errors_served_by\"\nload = \"main\"\napp = \"web\"\nrevision = \"red\"",
            "checks[0].revision (check \"c\"): no revision of \"web\" has suffix \"red\" (suffixes: blue, green)",
        ),
        (
            MULTI,
            SWAP,
            "blue",
            "kind = \"errors_served_by\"\nload = \"main\"\napp = \"web\"",
            "checks[0].revision (check \"c\"): check kind errors_served_by needs `revision`",
        ),
    ] {
        let e = err(&two_revisions(app_extra, swap, retire, check), "full");
        assert!(e.contains(want), "want {want:?} in: {e}");
    }
    // The app's first traffic rules are checked too, and need multiple mode.
    let e = err(
        &two_revisions(
            "revision_suffix = \"blue\"\ntraffic = [{ revision = \"blue\", weight = 100 }]",
            SWAP,
            "blue",
            RATE,
        ),
        "full",
    );
    assert!(
        e.contains("apps[0].traffic (app \"web\"): traffic rules are for revisions_mode"),
        "{e}"
    );
    // A revision action fires once: its suffix names one revision.
    let e = err(
        &two_revisions(MULTI, SWAP, "blue", RATE).replacen(
            "duration = \"10s\"\naction = { kind = \"revision\"",
            "events = 2\ninterval = \"5s\"\naction = { kind = \"revision\"",
            1,
        ),
        "full",
    );
    assert!(
        e.contains("steps[0].events (step \"green\"): a revision action fires once"),
        "{e}"
    );
}

#[test]
fn wait_ready_defaults_to_true_and_a_load_on_an_app_not_waited_for_has_no_ready_path() {
    let base = obs("kind = \"no_errors\"\nstep = \"baseline\"\nload = \"main\"");
    let web = "[[apps]]\nname = \"web\"\nimage = \"probelab/subject:dev\"\n";
    let app = |extra: &str| base.replace(web, &format!("{web}{extra}\n"));
    let main = "[[load]]\nname = \"main\"\ntarget = \"web\"\n";
    let load = |lab: &str, extra: &str| lab.replace(main, &format!("{main}{extra}\n"));
    // Default: waited for, and a ready_path is fine.
    let l = ok(&load(&base, "ready_path = \"/\""), "full");
    assert!(l.apps.iter().all(|a| a.wait_ready));
    let shown = lab::describe::pre_registration(&l, "x", "full");
    assert!(!shown.contains("not waited for"), "{shown}");
    let l = ok(&app("wait_ready = true"), "full");
    assert!(l.apps[0].wait_ready);
    // Not waited for: loads, and `lab show` says so; a ready_path on a load of it is an error.
    let l = ok(&app("wait_ready = false"), "full");
    assert!(!l.apps[0].wait_ready && l.apps[1].wait_ready);
    let shown = lab::describe::pre_registration(&l, "x", "full");
    assert!(
        shown.contains("  - web: 1 × probelab/subject:dev, probes Liveness /live; not waited for (wait_ready = false)"),
        "{shown}"
    );
    assert!(
        !shown.contains("  - idle: 1 × probelab/subject:dev; not waited for"),
        "{shown}"
    );
    let e = err(
        &load(&app("wait_ready = false"), "ready_path = \"/\""),
        "full",
    );
    assert!(
        e.contains(
            "load[0].ready_path (load \"main\"): target app \"web\" has wait_ready = false, so nothing polls ready_path"
        ),
        "{e}"
    );
    let e = err(&app("wait_ready = \"no\""), "full");
    assert!(
        e.contains("apps[0].wait_ready: invalid type: string"),
        "{e}"
    );
}

#[test]
fn a_campaign_table_is_checked_on_both_sides_of_each_bound() {
    let base = shipped("startup-degraded");
    let with = |t: &str| format!("{base}\n[campaign]\n{t}\n");
    // Absent: 4 runs, one falsified run falsifies, every run must be valid.
    let l = ok(&base, "quick");
    assert_eq!(l.campaign, lab::Campaign::default());
    assert_eq!((l.campaign.runs, l.campaign.min_valid(4)), (4, 4));
    let l = ok(
        &with("runs = 4\nfalsified_runs = 4\nmin_valid_runs = 4"),
        "quick",
    );
    assert_eq!(l.campaign.min_valid_runs, Some(4));
    assert!(
        lab::describe::pre_registration(&l, "x", "quick")
            .contains("falsified when at least 4 valid run(s) are falsified; invalid unless at least 4 run(s) valid"),
    );
    for (t, key, msg) in [
        ("runs = 0", "campaign.runs", "must be at least 1"),
        (
            "falsified_runs = 0",
            "campaign.falsified_runs",
            "must be at least 1",
        ),
        (
            "runs = 3\nfalsified_runs = 4",
            "campaign.falsified_runs",
            "could never be falsified",
        ),
        (
            "runs = 3\nmin_valid_runs = 4",
            "campaign.min_valid_runs",
            "more than the campaign's 3 runs",
        ),
        (
            "min_valid_runs = 0",
            "campaign.min_valid_runs",
            "must be at least 1",
        ),
    ] {
        let e = err(&with(t), "quick");
        assert!(e.contains(key) && e.contains(msg), "{t}: {e}");
    }
    let e = err(&with("runs = 4\nevery = 2"), "quick");
    assert!(e.contains("every"), "{e}");
}

/// The ingress knobs: `ingress_timeout` is `idle` or `request`, `connect_retries` a count; both
/// reach the app as `localplane.*` tags (`arm_body`), a typo is named by its key.
#[test]
fn ingress_knobs_load_and_a_wrong_timeout_kind_is_named() {
    let with = |extra: &str| {
        obs("kind = \"no_errors\"\nload = \"main\"\nstep = \"baseline\"").replace(
            "probes = [{ type = \"Liveness\", path = \"/live\", port = 8080 }]",
            &format!(
                "probes = [{{ type = \"Liveness\", path = \"/live\", port = 8080 }}]\n{extra}"
            ),
        )
    };
    let l = ok(
        &with("ingress_timeout = \"request\"\nconnect_retries = 0"),
        "full",
    );
    assert_eq!(l.apps[0].ingress_timeout.as_deref(), Some("request"));
    assert_eq!(l.apps[0].connect_retries, Some(0));
    let e = err(&with("ingress_timeout = \"route\""), "full");
    assert!(e.contains("apps[0].ingress_timeout"), "{e}");
}

/// The maintenance knob is `rolling` or `stopFirst` (a typo is named by its key, `stopfirst`
/// included); the `maintenance` action names an app of the lab, and marks its step as one only
/// localplane performs.
#[test]
fn the_maintenance_knob_and_action_load_and_their_mistakes_are_named() {
    let with = |knob: &str, action_app: &str| {
        obs("kind = \"no_errors\"\nload = \"main\"\nstep = \"baseline\"")
            .replace(
                "probes = [{ type = \"Liveness\", path = \"/live\", port = 8080 }]",
                &format!(
                    "probes = [{{ type = \"Liveness\", path = \"/live\", port = 8080 }}]\n{knob}"
                ),
            )
            .replace(
                "action = { kind = \"saturate\", app = \"web\", path = \"/delay?seconds=60\" }",
                &format!("action = {{ kind = \"maintenance\", app = \"{action_app}\" }}"),
            )
    };
    for form in ["rolling", "stopFirst"] {
        let l = ok(&with(&format!("maintenance = \"{form}\""), "web"), "full");
        assert_eq!(l.apps[0].maintenance.as_deref(), Some(form));
        assert_eq!(
            l.apps[0]
                .localplane_tags()
                .get("localplane.maintenance")
                .map(String::as_str),
            Some(form)
        );
        assert_eq!(l.localplane_only_steps(), vec!["kick"]);
    }
    let l = ok(&with("", "web"), "full");
    assert!(
        l.apps[0].maintenance.is_none(),
        "unset: localplane's default"
    );
    let e = err(&with("maintenance = \"stopfirst\"", "web"), "full");
    assert!(e.contains("apps[0].maintenance"), "{e}");
    assert!(e.contains("rolling or stopFirst"), "{e}");
    let e = err(&with("", "nope"), "full");
    assert!(e.contains("steps[1].action"), "{e}");
    // A lab without the action runs on Azure too.
    let plain = obs("kind = \"no_errors\"\nload = \"main\"\nstep = \"baseline\"");
    assert!(ok(&plain, "full").localplane_only_steps().is_empty());
}

/// `progress_deadline_seconds` takes 1 to 3600 and reaches the app as its `localplane.*` tag;
/// 0 and 3601 are named by their key.
#[test]
fn the_progress_deadline_is_one_to_3600_seconds() {
    let with = |knob: &str| {
        obs("kind = \"no_errors\"\nload = \"main\"\nstep = \"baseline\"").replace(
            "probes = [{ type = \"Liveness\", path = \"/live\", port = 8080 }]",
            &format!("probes = [{{ type = \"Liveness\", path = \"/live\", port = 8080 }}]\n{knob}"),
        )
    };
    for secs in [1, 30, 3600] {
        let l = ok(
            &with(&format!("progress_deadline_seconds = {secs}")),
            "full",
        );
        assert_eq!(
            l.apps[0]
                .localplane_tags()
                .get("localplane.progressDeadlineSeconds")
                .map(String::as_str),
            Some(secs.to_string().as_str())
        );
    }
    for secs in [0, 3601] {
        let e = err(
            &with(&format!("progress_deadline_seconds = {secs}")),
            "full",
        );
        assert!(e.contains("apps[0].progress_deadline_seconds"), "{e}");
        assert!(e.contains("1 to 3600"), "{e}");
    }
}

/// An event-driven job lab: a queue app, a worker job, an enqueue step and `checks`.
fn job_lab(queue_app: &str, job_extra: &str, action: &str, checks: &str) -> String {
    format!(
        r#"
title = "t"
question = "q?"
kind = "observation"
[hypothesis]
text = "h"
[[apps]]
name = "queue"
image = "probelab/subject:dev"
ingress = {{ external = true, target_port = 8080 }}
[[apps]]
name = "plain"
image = "probelab/subject:dev"
[[jobs]]
name = "worker"
image = "probelab/subject:dev"
replica_timeout_seconds = 60
env = {{ APP_MODE = "queue-worker", QUEUE_URL = "http://queue" }}
{job_extra}
[jobs.event]
queue_app = "{queue_app}"
polling_seconds = 5
max_executions = 3
[[steps]]
name = "fill"
phase = "drain"
duration = "30s"
action = {action}
[[steps]]
name = "idle"
phase = "drain"
duration = "5s"
{checks}
"#
    )
}

const ENQUEUE: &str = r#"{ kind = "enqueue", app = "queue", items = 12 }"#;
const JOB_CHECKS: &str = r#"
[[checks]]
name = "once"
kind = "queue_items_once"
job = "worker"
step = "fill"
[[checks]]
name = "drained"
kind = "queue_drained_within"
job = "worker"
max = 30
[[checks]]
name = "cap"
kind = "job_replicas_at_most"
job = "worker"
max = 3
"#;

#[test]
fn an_event_driven_job_loads_and_its_mistakes_are_named() {
    let l = ok(&job_lab("queue", "", ENQUEUE, JOB_CHECKS), "full");
    assert_eq!(l.jobs[0].event_trigger().map(|e| e.max_executions), Some(3));
    assert_eq!(l.jobs[0].replicas_per_execution(), 1);
    for (text, want) in [
        (
            job_lab("nope", "", ENQUEUE, JOB_CHECKS),
            "jobs[0].event.queue_app (job \"worker\"): app \"nope\" is not defined",
        ),
        (
            job_lab("plain", "", ENQUEUE, JOB_CHECKS),
            "app \"plain\" has no ingress: the scaler reads its queue",
        ),
        (
            job_lab("queue", "parallelism = 0", ENQUEUE, JOB_CHECKS),
            "jobs[0].parallelism (job \"worker\"): must be at least 1",
        ),
        (
            job_lab(
                "queue",
                "",
                r#"{ kind = "enqueue", app = "queue", items = 0 }"#,
                JOB_CHECKS,
            ),
            "steps[0].action.items (step \"fill\"): 0 is not a whole number from 1 to 10000",
        ),
        (
            job_lab(
                "queue",
                "",
                r#"{ kind = "enqueue", app = "plain", items = 3 }"#,
                "",
            ),
            "app \"plain\" has no ingress: nothing can enqueue through it",
        ),
        (
            job_lab(
                "queue",
                "",
                ENQUEUE,
                &JOB_CHECKS.replace("job = \"worker\"\nstep", "job = \"wrk\"\nstep"),
            ),
            "checks[0].job (check \"once\"): job \"wrk\" is not defined",
        ),
        (
            job_lab(
                "queue",
                "",
                ENQUEUE,
                &JOB_CHECKS.replace("step = \"fill\"", "step = \"idle\""),
            ),
            "no `enqueue` on \"queue\" (job \"worker\"'s queue app) in step \"idle\"",
        ),
        (
            job_lab(
                "queue",
                "",
                ENQUEUE,
                &JOB_CHECKS.replace("max = 30", "max = 30\napp = \"queue\""),
            ),
            "check kind queue_drained_within does not take `app`",
        ),
        (
            job_lab("queue", "", ENQUEUE, JOB_CHECKS)
                .replace("name = \"worker\"", "name = \"queue\""),
            "jobs[0].name (job \"queue\"): \"queue\" is also an app's name",
        ),
    ] {
        let e = err(&text, "full");
        assert!(e.contains(want), "want {want:?} in: {e}");
    }
}

/// A lab of manual and scheduled jobs alone (no app): `trigger` (the `[[jobs]]` lines that set it),
/// a `job-start` and a `job-stop` step, and `checks`.
fn batch_lab(trigger: &str, checks: &str) -> String {
    format!(
        r#"
title = "t"
question = "q?"
kind = "observation"
[hypothesis]
text = "h"
[[jobs]]
name = "batch"
image = "probelab/subject:dev"
replica_timeout_seconds = 60
env = {{ APP_MODE = "batch", WORK_MS = "60000" }}
{trigger}
[[steps]]
name = "start"
phase = "run"
duration = "5s"
action = {{ kind = "job-start", job = "batch" }}
[[steps]]
name = "stop"
phase = "run"
duration = "40s"
action = {{ kind = "job-stop", job = "batch" }}
{checks}
"#
    )
}

const BATCH_CHECKS: &str = r#"
[[checks]]
name = "stopped"
kind = "job_executions_end"
job = "batch"
step = "start"
execution_status = "Stopped"
replicas = 1
[[checks]]
name = "killed"
kind = "job_replica_exit"
job = "batch"
step = "start"
since = "sigterm"
exit_code = 137
min = 29
max = 32
"#;

#[test]
fn manual_and_scheduled_jobs_load_without_apps_and_their_mistakes_are_named() {
    let l = ok(&batch_lab("manual = {}", BATCH_CHECKS), "full");
    assert!(l.apps.is_empty());
    assert_eq!(l.jobs[0].trigger(), Some(lab::Trigger::Manual));
    let l = ok(
        &batch_lab("[jobs.schedule]\ncron = \"*/1 * * * *\"", BATCH_CHECKS),
        "full",
    );
    assert!(
        matches!(l.jobs[0].trigger(), Some(lab::Trigger::Schedule(s)) if s.cron == "*/1 * * * *")
    );
    let bad_since = BATCH_CHECKS.replace("since = \"sigterm\"", "since = \"stop\"");
    for (text, want) in [
        (
            batch_lab("", BATCH_CHECKS),
            "jobs[0].manual (job \"batch\"): give exactly one trigger",
        ),
        (
            batch_lab(
                "manual = {}\n[jobs.schedule]\ncron = \"* * * * *\"",
                BATCH_CHECKS,
            ),
            "give exactly one trigger",
        ),
        (
            batch_lab("[jobs.schedule]\ncron = \"* * * *\"", BATCH_CHECKS),
            "jobs[0].schedule.cron (job \"batch\"): \"* * * *\" has 4 field(s)",
        ),
        (
            batch_lab("manual = {}", BATCH_CHECKS).replace("job = \"batch\" }", "job = \"bach\" }"),
            "steps[0].action.job (step \"start\"): action targets undefined job \"bach\"",
        ),
        (
            batch_lab(
                "manual = {}",
                &BATCH_CHECKS.replace("\"Stopped\"", "\"Running\""),
            ),
            "checks[0].execution_status (check \"stopped\"): \"Running\" is not a final execution status",
        ),
        (
            batch_lab(
                "manual = {}",
                &BATCH_CHECKS.replace("replicas = 1", "replicas = 0"),
            ),
            "checks[0].replicas (check \"stopped\"): must be at least 1",
        ),
        (
            batch_lab("manual = {}", &bad_since),
            "checks[1].since (check \"killed\"): \"stop\" is not one of start, created, execution, sigterm",
        ),
        (
            batch_lab("manual = {}", &BATCH_CHECKS.replace("min = 29", "min = 33")),
            "checks[1].max (check \"killed\"): 32 is below min 33",
        ),
        (
            batch_lab("manual = {}", &BATCH_CHECKS.replace("max = 32\n", "")),
            "checks[1].max (check \"killed\")",
        ),
        (
            batch_lab("manual = {}", "")
                .replace("[[jobs]]", "[[jobs]]\nreplica_timeout_scope = \"pod\""),
            "replica_timeout_scope",
        ),
        (
            batch_lab(
                "manual = {}",
                &BATCH_CHECKS
                    .replace(
                        "kind = \"job_executions_end\"",
                        "kind = \"queue_items_once\"\nexecution_status = \"x\"",
                    )
                    .replace("execution_status = \"Stopped\"\n", ""),
            ),
            "job \"batch\" is not event-driven: no queue feeds it",
        ),
    ] {
        let e = err(&text, "full");
        assert!(e.contains(want), "want {want:?} in: {e}");
    }
}
