#!/usr/bin/env bash
# Runs deploy/local/compose.yaml.
#
#   deploy/local/run.sh
#     The scenario, once, keeping what every container printed:
#       evidence/local-<UTC timestamp>/{loadgen,subject,dependency}.ndjson   (stdout: JSON lines)
#       evidence/local-<UTC timestamp>/*.stderr                               (stderr, usually empty)
#
#   deploy/local/run.sh lab NAME|FILE [labctl lab run flags...]
#     A whole lab inside the probelab/lab container, e.g. `lab startup-degraded --profile quick`;
#     the evidence pack lands in evidence/<lab>-<UTC>/ (or $PROBELAB_EVIDENCE), owned by you.
#     Exits with labctl's code (0 held, 3 falsified, 4 invalid, 1 error).
#
# Builds the images first when one is missing. Same knobs as compose.yaml (environment).
# Uses `docker compose` (v2) when present, else Debian's `docker-compose` 1.29.
set -euo pipefail
cd "$(dirname "$0")/../.."

if docker compose version >/dev/null 2>&1; then
  compose=(docker compose)
elif command -v docker-compose >/dev/null; then
  compose=(docker-compose)
else
  echo "run.sh: neither 'docker compose' nor 'docker-compose' is installed" >&2
  exit 1
fi
project=probelab-local
dc() { "${compose[@]}" -f deploy/local/compose.yaml -p "$project" "$@"; }

if [ "${1:-}" = lab ]; then
  shift
  [ $# -gt 0 ] || { echo "usage: deploy/local/run.sh lab NAME|FILE [labctl lab run flags...]" >&2; exit 2; }
  for image in lab subject loadgen perturbation-sampler audit; do
    if ! docker image inspect "probelab/$image:dev" >/dev/null 2>&1; then
      echo "run.sh: probelab/$image:dev missing; running scripts/build-images.sh" >&2
      scripts/build-images.sh
      break
    fi
  done
  # Created here, so it is yours (the lab hands its files to this directory's owner); a missing
  # bind-mount source would be created by the engine, as root.
  evidence="${PROBELAB_EVIDENCE:-evidence}"
  mkdir -p "$evidence"
  export PROBELAB_EVIDENCE
  PROBELAB_EVIDENCE=$(cd "$evidence" && pwd)
  project=probelab-lab-$$
  # `run` also creates the project's default network; `down` removes it.
  trap 'dc down >/dev/null 2>&1 || true' EXIT
  code=0
  dc run --rm lab "$@" || code=$?
  exit "$code"
fi

for image in subject loadgen; do
  if ! docker image inspect "probelab/$image:dev" >/dev/null 2>&1; then
    echo "run.sh: probelab/$image:dev missing; running scripts/build-images.sh" >&2
    scripts/build-images.sh
    break
  fi
done

out="evidence/local-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out"
trap 'dc down --timeout 30 >/dev/null 2>&1 || true' EXIT

dc up -d
loadgen_id=$(dc ps -q loadgen)
echo "run.sh: loadgen running (${DURATION_SECONDS:-60} s at ${TARGET_RPS:-200} RPS); output goes to $out/" >&2
exit_code=$(docker wait "$loadgen_id")

# Stop the services first (graceful SIGTERM), so their logs end with SHUTDOWN_COMPLETE.
dc stop --timeout 30 subject dependency >/dev/null 2>&1
for service in loadgen subject dependency; do
  id=$(dc ps -q "$service")
  docker logs "$id" >"$out/$service.ndjson" 2>"$out/$service.stderr"
done
echo "run.sh: loadgen exited $exit_code; lines: $(wc -l <"$out/loadgen.ndjson") loadgen, $(wc -l <"$out/subject.ndjson") subject, $(wc -l <"$out/dependency.ndjson") dependency" >&2
echo "$out"
[ "$exit_code" = 0 ]
