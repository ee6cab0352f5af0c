#!/usr/bin/env bash
# The full test suite, exactly as CI runs it (README's second set-up command).
#
#   scripts/test.sh [--phase build|alone|shared|doc] [-- <nextest args>]
#
# Without --phase it runs every phase in order:
#   build   the images (scripts/build-images.sh), the pinned Azure clients, the test build;
#   alone   the tests that need the machine to themselves (.config/nextest.toml, ALONE), one at
#           a time: what they assert is latency or schedule accuracy;
#   shared  every other test, the platform group six at once beside the light group;
#   doc     the doctests (nextest does not run them).
# .ci/run calls the phases one by one so that clippy can run beside `shared`, never beside
# `alone`. Arguments after `--` go to each `cargo nextest run` (a name filter there narrows both
# test phases; one that leaves a phase empty is a warning, not a failure).
#
# Docker end-to-end tests need the engine; they fail loudly without it unless
# PROBELAB_SKIP_DOCKER=1 is set on purpose. CI never sets it.
set -euo pipefail
cd "$(dirname "$0")/.."

phases=(build alone shared doc)
nextest_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --phase)
      [ $# -ge 2 ] || { echo "test.sh: --phase needs one of: build alone shared doc" >&2; exit 2; }
      case "$2" in
        build | alone | shared | doc) phases=("$2") ;;
        *) echo "test.sh: unknown phase '$2' (build, alone, shared or doc)" >&2; exit 2 ;;
      esac
      shift 2
      ;;
    --) shift; nextest_args=("$@"); break ;;
    -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) nextest_args+=("$1"); shift ;;
  esac
done

# Each phase prints its start time (seconds since this script began), so a CI log shows where
# the time went (bench/runs/ci/wall-times.md keeps the measured figures).
start=$(date +%s)
step() { echo "==> [test.sh $(($(date +%s) - start))s] $*"; }

# The ALONE tests, as .config/nextest.toml's overrides that give them every test thread name
# them; tidy's NextestAlone rule checks the two lists are the same.
ALONE='binary(labs_docker) | (package(localplane) & binary(docker_e2e) & test(/^e2e_1_/)) | (package(sampler) & test(cadence))'

# The schedule (.config/nextest.toml) is nextest's: installed from crates.io when missing.
if ! cargo nextest --version >/dev/null 2>&1; then
  step "cargo install cargo-nextest --locked (not found; the test schedule needs it)"
  cargo install cargo-nextest --locked
fi

build() {
  # The real-clients conformance suite (crates/localplane/tests/real_clients.rs) drives the
  # pinned az CLI and Python SDK from PyPI, installed into /var/tmp/probelab-pyclients (kept
  # while the pins match): network-bound, so it runs beside the builds.
  # PROBELAB_SKIP_REAL_CLIENTS=1 skips both the install and the suite.
  local pyclients=""
  if [ "${PROBELAB_SKIP_REAL_CLIENTS:-0}" != "1" ]; then
    step "scripts/install-pyclients.sh in the background (az CLI 2.91.0, azure-mgmt-appcontainers 5.1.0)"
    scripts/install-pyclients.sh &
    pyclients=$!
  fi
  if [ "${PROBELAB_SKIP_DOCKER:-0}" != "1" ]; then
    step "scripts/build-images.sh"
    scripts/build-images.sh
  fi
  if [ -n "$pyclients" ]; then
    wait "$pyclients" || { echo "test.sh: installing the pinned Azure clients failed (above)" >&2; exit 1; }
  fi
  # The same build nextest would start, as its own step so the log separates compile time from
  # test time; nextest then finds everything fresh.
  step "cargo test --workspace --no-run (the test build)"
  cargo test --workspace --no-run
}

# A failing test phase does not stop the next (nextest's --no-fail-fast, across phases); the
# script fails at the end if one did. A failed build stops it.
failed=()
for phase in "${phases[@]}"; do
  case "$phase" in
    build) build ;;
    alone)
      step "cargo nextest run: the ALONE tests, one at a time"
      cargo nextest run --workspace --no-fail-fast --no-tests=warn -E "$ALONE" ${nextest_args[@]+"${nextest_args[@]}"} ||
        failed+=(alone)
      ;;
    shared)
      step "cargo nextest run: every other test (schedule: .config/nextest.toml)"
      cargo nextest run --workspace --no-fail-fast --no-tests=warn -E "not ($ALONE)" ${nextest_args[@]+"${nextest_args[@]}"} ||
        failed+=(shared)
      ;;
    doc)
      step "cargo test --workspace --doc"
      cargo test --workspace --doc || failed+=(doc)
      ;;
  esac
done
if [ ${#failed[@]} -gt 0 ]; then
  step "failed phase(s): ${failed[*]}"
  exit 1
fi
step "done"
