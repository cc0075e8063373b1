#!/usr/bin/env bash
# bytegraph developer entry point: does all set-up on a fresh machine.
#   ./run.sh example        create the Python 3.11 venv if needed, run examples/quickstart.py
#   ./run.sh test [ARGS]    create the 3.11 and 3.12 venvs if needed, run the test suite on both
# Virtual environments live outside the checkout, keyed by the dependency lines of pyproject.toml and the
# torch version, so fresh clones (CI) reuse them and only a dependency change rebuilds them.
set -euo pipefail
shopt -s inherit_errexit
cd "$(dirname "$0")"
VENV_ROOT="${BYTEGRAPH_VENV_ROOT:-$HOME/.cache/bytegraph/venvs}"
TORCH_VERSION="${BYTEGRAPH_TORCH:-2.13.0}"

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
  key=$( (grep -E '^(dependencies|test) =' pyproject.toml; echo "$TORCH_VERSION") | sha1sum | cut -c1-12)
  dir="$VENV_ROOT/py$py-$key"
  if [ ! -f "$dir/.ready" ]; then
    echo "[run.sh] creating $dir" >&2
    rm -rf "$dir"
    "$(find_python "$py")" -m venv "$dir"
    quiet "$dir" -m pip install --upgrade pip
    quiet "$dir" -m pip install "torch==$TORCH_VERSION"
    quiet "$dir" -m pip install -e ".[test]"
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
    for py in 3.11 3.12; do
      dir=$(venv_for "$py")
      echo "=== Python $py ($("$dir/bin/python" -c 'import torch; print("torch", torch.__version__)')) ==="
      "$dir/bin/python" -m pytest -q -p no:cacheprovider "$@" tests || status=1
    done
    exit $status
    ;;
  *)
    echo "usage: ./run.sh example | ./run.sh test [pytest args]" >&2
    exit 2
    ;;
esac
