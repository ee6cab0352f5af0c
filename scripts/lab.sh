#!/usr/bin/env bash
# README's first set-up command: build what a local lab needs, then run it on the emulator.
#
#   scripts/lab.sh labs/startup-degraded.toml --profile quick
#
# Builds the images this lab runs (`scripts/build-images.sh --with-labctl`: the images its
# `[[apps]]` name as probelab/<name>:dev, plus loadgen and the perturbation sampler, which every
# lab deploys; a no-op when they are current), then runs `labctl lab run` with the arguments
# given, using the static labctl that same build made
# (target/x86_64-unknown-linux-gnu/image/labctl, under CARGO_TARGET_DIR when set): one
# build, not a second one of labctl for the host target, and none of the binaries the lab does
# not use (the lab image's, audit). The verdict and the paths of report.md and report.html are
# printed at the end; the evidence pack lands under evidence/.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then
  echo "usage: scripts/lab.sh LAB.toml [labctl lab run options], e.g. scripts/lab.sh labs/startup-degraded.toml --profile quick" >&2
  exit 2
fi
# The lab's file: a path, or a bare name in the labs directory (as `labctl lab run` resolves it).
lab_file=$1
[ -f "$lab_file" ] || lab_file="${PROBELAB_LABS_DIR:-labs}/$1.toml"
if [ -f "$lab_file" ]; then
  # The images the runner deploys for every lab (crates/runner/src/deploy.rs), then the lab's own.
  images=(loadgen perturbation-sampler)
  while read -r name; do
    [ -z "$name" ] || images+=("$name")
  done < <(sed -n 's|.*image *= *"probelab/\([a-z0-9-]*\):dev".*|\1|p' "$lab_file" | sort -u)
  scripts/build-images.sh --with-labctl "${images[@]}"
else
  # Not found here (labctl will say why, or --labs-dir points elsewhere): every image.
  scripts/build-images.sh --with-labctl
fi
labctl="${CARGO_TARGET_DIR:-target}/x86_64-unknown-linux-gnu/image/labctl"
[ -x "$labctl" ] || { echo "lab.sh: $labctl was not built by scripts/build-images.sh" >&2; exit 1; }
exec "$labctl" lab run "$@"
