#!/usr/bin/env bash
# The full test suite, exactly as CI runs it (README's second set-up command).
#
# Docker end-to-end tests need the engine; they fail loudly without it unless
# PROBELAB_SKIP_DOCKER=1 is set on purpose. CI never sets it.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -x scripts/build-images.sh ] && [ "${PROBELAB_SKIP_DOCKER:-0}" != "1" ]; then
  scripts/build-images.sh
fi

if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --no-fail-fast "$@"
  # nextest does not run doctests
  cargo test --workspace --doc
else
  echo "cargo-nextest not found; falling back to cargo test (install: cargo install cargo-nextest --locked)" >&2
  cargo test --workspace --no-fail-fast "$@"
fi
