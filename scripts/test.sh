#!/usr/bin/env bash
# The full test suite, exactly as CI runs it (README's second set-up command).
#
# Docker end-to-end tests need the engine; they fail loudly without it unless
# PROBELAB_SKIP_DOCKER=1 is set on purpose. CI never sets it.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each phase prints its start time (seconds since this script began), so a CI log shows where
# the time went (docs/ARCHITECTURE.md, Testing, keeps the measured figures).
start=$(date +%s)
step() { echo "==> [test.sh $(($(date +%s) - start))s] $*"; }

# The real-clients conformance suite (crates/localplane/tests/real_clients.rs) drives the pinned
# az CLI and Python SDK from PyPI, installed into /var/tmp/probelab-pyclients (kept while the
# pins match): network-bound, so it runs beside the builds. PROBELAB_SKIP_REAL_CLIENTS=1 skips
# both the install and the suite.
pyclients=""
if [ "${PROBELAB_SKIP_REAL_CLIENTS:-0}" != "1" ]; then
  step "scripts/install-pyclients.sh in the background (az CLI 2.91.0, azure-mgmt-appcontainers 5.1.0)"
  scripts/install-pyclients.sh &
  pyclients=$!
fi

if [ -x scripts/build-images.sh ] && [ "${PROBELAB_SKIP_DOCKER:-0}" != "1" ]; then
  step "scripts/build-images.sh"
  scripts/build-images.sh
fi

if [ -n "$pyclients" ]; then
  wait "$pyclients" || { echo "test.sh: installing the pinned Azure clients failed (above)" >&2; exit 1; }
fi

if cargo nextest --version >/dev/null 2>&1; then
  # The same build nextest would start (cargo test --no-run), as its own step so the log
  # separates compile time from test time; nextest then finds everything fresh.
  step "cargo test --workspace --no-run (the test build)"
  cargo test --workspace --no-run
  step "cargo nextest run --workspace (schedule: .config/nextest.toml)"
  cargo nextest run --workspace --no-fail-fast "$@"
  # nextest does not run doctests
  step "cargo test --workspace --doc"
  cargo test --workspace --doc
else
  echo "cargo-nextest not found; falling back to cargo test (install: cargo install cargo-nextest --locked)" >&2
  cargo test --workspace --no-fail-fast "$@"
fi
step "done"
