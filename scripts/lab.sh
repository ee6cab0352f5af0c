#!/usr/bin/env bash
# README's first set-up command: build what a local lab needs, then run it on the emulator.
#
#   scripts/lab.sh labs/startup-degraded.toml --profile quick
#
# Builds the static binaries and images (`scripts/build-images.sh`; a no-op when they are
# current), then runs `labctl lab run` with the arguments given, using the static release labctl
# that build just made (target/x86_64-unknown-linux-gnu/release/labctl, under CARGO_TARGET_DIR
# when set): one release build, not a second one of labctl for the host target. The verdict and
# the paths of report.md and report.html are printed at the end; the evidence pack lands under
# evidence/.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then
  echo "usage: scripts/lab.sh LAB.toml [labctl lab run options], e.g. scripts/lab.sh labs/startup-degraded.toml --profile quick" >&2
  exit 2
fi
scripts/build-images.sh
labctl="${CARGO_TARGET_DIR:-target}/x86_64-unknown-linux-gnu/release/labctl"
[ -x "$labctl" ] || { echo "lab.sh: $labctl was not built by scripts/build-images.sh" >&2; exit 1; }
exec "$labctl" lab run "$@"
