#!/usr/bin/env bash
# The real Azure clients the conformance suite (crates/localplane/tests/real_clients.rs) drives,
# pinned, from PyPI, each in its own venv under $PROBELAB_PYCLIENTS (default
# /var/tmp/probelab-pyclients): `cli/` the Azure CLI, `sdk/` the Python SDK for Container Apps
# with azure-identity. The CLI pins an older azure-mgmt-appcontainers (no jobs), hence two venvs.
# A venv whose pins already match is kept; `scripts/test.sh` (README's test command) runs this beside its builds.
set -euo pipefail
root="${PROBELAB_PYCLIENTS:-/var/tmp/probelab-pyclients}"
python="${PYTHON:-python3}"
install() { # install <venv name> <requirement>...
  local dir="$root/$1"
  shift
  local want="$*"
  if [ -x "$dir/bin/python" ] && [ "$(cat "$dir/.pins" 2>/dev/null)" = "$want" ]; then
    echo "install-pyclients: $dir has $want" >&2
    return
  fi
  echo "install-pyclients: $want into $dir (about a minute)" >&2
  rm -rf "$dir"
  "$python" -m venv "$dir"
  "$dir/bin/pip" install --quiet --disable-pip-version-check "$@"
  echo "$want" >"$dir/.pins"
}
install cli azure-cli==2.91.0 &
cli=$!
install sdk azure-mgmt-appcontainers==5.1.0 azure-identity==1.27.0
wait "$cli"
