#!/usr/bin/env bash
# bytegraph developer entry point: does all set-up on a fresh machine.
#   ./run.sh example        create the Python 3.11 venv if needed, run examples/quickstart.py
#   ./run.sh test [ARGS]    create the 3.11, 3.12 and 3.13 venvs if needed, run the test suite on all
#                           three at once, each in BYTEGRAPH_TEST_WORKERS pytest-xdist workers (2) that
#                           take whole files (one log each, printed in order; BYTEGRAPH_PYTHONS="3.11"
#                           picks versions)
# Every install is pinned by constraints.txt: 3.11 gets torch 2.13, 3.13 torch 2.15, 3.12 the GPU machines'
# stack (torch 2.11, triton 3.6). Virtual environments live outside the checkout, keyed by the
# dependency lines of pyproject.toml and constraints.txt, so fresh clones (CI) reuse them and only a
# dependency change rebuilds them.
set -euo pipefail
shopt -s inherit_errexit
cd "$(dirname "$0")"
VENV_ROOT="${BYTEGRAPH_VENV_ROOT:-$HOME/.cache/bytegraph/venvs}"
PYTHONS="${BYTEGRAPH_PYTHONS:-3.11 3.12 3.13}"

find_python() {  # find_python 3.12 -> an interpreter for that version (PATH first, then pyenv's tree)
  local py="$1" cand
  for cand in "python$py" "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$py".*/bin/python"$py" /usr/bin/python"$py"; do
    if "$cand" -c 'import sys' >/dev/null 2>&1; then echo "$cand"; return; fi
  done
  echo "[run.sh] no Python $py found (install it, e.g. with pyenv or apt)" >&2
  return 1
}

quiet() {  # quiet VENV ARGS...: run the venv's python, showing its output only if it fails
  local dir="$1"; shift
  if ! "$dir/bin/python" "$@" >"$dir/.last.log" 2>&1; then
    cat "$dir/.last.log" >&2
    return 1
  fi
}

venv_for() {  # venv_for 3.11 -> prints the path of a ready venv for that Python
  local py="$1" key dir
  key=$( (grep -E '^(dependencies|test) =' pyproject.toml; cat constraints.txt) | sha1sum | cut -c1-12)
  dir="$VENV_ROOT/py$py-$key"
  if [ ! -f "$dir/.ready" ]; then
    echo "[run.sh] creating $dir" >&2
    rm -rf "$dir"
    "$(find_python "$py")" -m venv "$dir"
    quiet "$dir" -m pip install --upgrade pip
    quiet "$dir" -m pip install -c constraints.txt torch
    quiet "$dir" -m pip install -c constraints.txt -e ".[test]"
    touch "$dir/.ready"
  else
    quiet "$dir" -m pip install --no-deps -e .  # point the editable install at this checkout
  fi
  echo "$dir"
}

case "${1:-}" in
  example)
    dir=$(venv_for 3.11)
    "$dir/bin/python" examples/quickstart.py
    ;;
  test)
    shift
    status=0
    logs=$(mktemp -d)
    declare -A dirs
    for py in $PYTHONS; do dirs[$py]=$(venv_for "$py"); done
    # The versions run at once, each in its own xdist workers (one torch thread each): while any
    # version still runs, every core has work, where three processes on two cores left one idle once
    # two versions were done. Each log is printed when its turn comes, in order.
    for py in $PYTHONS; do
      (
        export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
        start=$SECONDS
        rc=0
        "${dirs[$py]}/bin/python" -m pytest -q -p no:cacheprovider --durations=30 \
          -n "${BYTEGRAPH_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder "$@" tests \
          >"$logs/$py.log" 2>&1 || rc=$?
        echo $rc >"$logs/$py.rc"
        echo "[run.sh] Python $py: $((SECONDS - start)) s" >>"$logs/$py.log"
      ) &
    done
    wait
    for py in $PYTHONS; do
      torch=$("${dirs[$py]}/bin/python" -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)')
      echo "=== Python $py ($torch) ==="
      cat "$logs/$py.log"
      [ "$(cat "$logs/$py.rc")" = 0 ] || status=1
    done
    rm -rf "$logs"
    exit $status
    ;;
  *)
    echo "usage: ./run.sh example | ./run.sh test [pytest args]" >&2
    exit 2
    ;;
esac
