#!/usr/bin/env bash
# README's first set-up command: build what a local lab needs, then run it on the emulator.
#
#   scripts/lab.sh labs/startup-degraded.toml --profile quick
#
# Builds the static binaries and images (`scripts/build-images.sh`; a no-op when they are
# current), then `labctl lab run` with the arguments given. The verdict and the path of
# report.md are printed at the end; the evidence pack lands under evidence/.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then
  echo "usage: scripts/lab.sh LAB.toml [labctl lab run options], e.g. scripts/lab.sh labs/startup-degraded.toml --profile quick" >&2
  exit 2
fi
scripts/build-images.sh
exec cargo run --release -p labctl -- lab run "$@"
