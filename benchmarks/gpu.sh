#!/usr/bin/env bash
# Every GPU check of bytegraph in one command, from a plain checkout (see benchmarks/gpu.py):
#   benchmarks/gpu.sh [--out gpu_report.md] [--budget 470] [--skip 1,2]
# Needs a python3 with torch and triton (PYTHON=... picks another). bytegraph is installed from this
# checkout (pip install --no-deps -e .) unless that is what python3 already imports; bytecode from
# a wheel in .whl/ when there is no network (the lent GPU machines have none: carry .whl there).
# Without a CUDA GPU it prints one "no GPU" line and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if ! "$PY" -c "import bytecode" 2>/dev/null; then
  if compgen -G ".whl/bytecode-*.whl" >/dev/null; then
    "$PY" -m pip install -q --no-index --no-deps .whl/bytecode-*.whl
  else
    "$PY" -m pip install -q bytecode
  fi
fi
here=$(pwd -P)
if ! "$PY" -c "import bytegraph, os, sys; sys.exit(os.path.dirname(os.path.dirname(os.path.realpath(bytegraph.__file__))) != '$here')" 2>/dev/null; then
  "$PY" -m pip install -q --no-deps --no-build-isolation -e .
fi
exec "$PY" -m benchmarks.gpu "$@"
