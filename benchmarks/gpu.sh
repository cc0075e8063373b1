#!/usr/bin/env bash
# Every GPU check of bytegraph in one command, from a plain checkout (see benchmarks/gpu.py):
#   benchmarks/gpu.sh [--out gpu_report.md] [--budget 470] [--skip 1,2]
# Needs a python3 with torch and triton (PYTHON=... picks another). bytecode comes from a wheel in
# .whl/ when there is one (the lent GPU machines have no network: carry .whl there), else from
# PyPI. bytegraph is installed from this checkout (pip install --no-deps -e .) unless python3
# already imports it from here; if pip cannot, a symlinked package tree on PYTHONPATH stands in.
# Without a CUDA GPU it prints one "no GPU" line and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
here=$(pwd -P)
if ! "$PY" -c "import bytecode" 2>/dev/null; then
  if compgen -G ".whl/bytecode-*.whl" >/dev/null; then
    "$PY" -m pip install -q --no-index --no-deps .whl/bytecode-*.whl
  else
    "$PY" -m pip install -q bytecode
  fi
fi
from_here() {
  "$PY" -c "import bytegraph, os, sys; sys.exit(os.path.realpath(bytegraph.__file__) != '$here/bytegraph/__init__.py')" 2>/dev/null
}
if ! from_here; then
  if ! "$PY" -m pip install -q --no-deps --no-build-isolation -e . || ! from_here; then
    tree=$(mktemp -d)/site
    mkdir -p "$tree/bytegraph"
    for f in bytegraph/*.py; do ln -s "$here/$f" "$tree/bytegraph/"; done
    for pkg in tracer guards codegen backends; do ln -s "$here/$pkg" "$tree/bytegraph/$pkg"; done
    export PYTHONPATH="$tree${PYTHONPATH:+:$PYTHONPATH}"
    echo "[gpu.sh] pip could not install bytegraph; using $tree on PYTHONPATH" >&2
  fi
fi
exec "$PY" -m benchmarks.gpu "$@"
