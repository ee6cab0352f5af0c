#!/usr/bin/env bash
# Syntax check of infra/*.bicep with pycep-parser (a Python Bicep parser from PyPI).
#
# The Bicep CLI itself cannot be installed on our build machines (it ships from GitHub releases
# and NuGet, neither reachable here), so this is a parse check only: it catches syntax errors,
# not type errors or linter warnings. The cross-check of names and env vars against the code is
# a Rust test (crates/labctl/tests/infra_bicep.rs). Where `bicep` or `az bicep` is on PATH, it
# runs `bicep build` and `bicep lint` as well, and fails on errors and warnings.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${PROBELAB_VENV:-/var/tmp/probelab-venv}"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c 'import pycep' 2>/dev/null; then
  "$venv/bin/pip" install --quiet 'pycep-parser==0.7.1'
fi
"$venv/bin/python" - infra/*.bicep infra/modules/*.bicep <<'PY'
import sys
from pathlib import Path
from pycep import BicepParser

parser = BicepParser()
failed = 0
for name in sys.argv[1:]:
    try:
        parser.parse(file_path=Path(name))
        print(f"bicep parse ok: {name}")
    except Exception as e:  # the parser raises lark errors with line and column
        failed += 1
        print(f"bicep parse FAILED: {name}: {e}", file=sys.stderr)
sys.exit(1 if failed else 0)
PY
if command -v bicep >/dev/null 2>&1; then
  for f in infra/main.bicep; do
    bicep build --stdout "$f" >/dev/null
    out=$(bicep lint "$f" 2>&1 || true)
    if [ -n "$out" ]; then echo "$out" >&2; exit 1; fi
  done
fi
