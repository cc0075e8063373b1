"""The conformance matrix in CI: every cell runs through CPython and bytegraph.

- No cell is wrong, crashed or recompiled (on a call identical to the last) beyond the
  checked-in known lists of the running Python (``known_cells.json``, printed when not empty);
  listed cells that are right now are printed (a few cells, ``id()`` of temporary objects, change
  verdict between runs, so they do not fail).
- No cell breaks where torch.compile traces beyond the known gaps (or the known wrong cells: a
  wrong cell that breaks instead is no regression). torch.compile's counts come from
  ``dynamo_baseline.json`` (written by ``python -m tests.python_semantics.matrix
  --write-baseline``); a breaking cell the baseline lacks is asked of torch.compile here, and a
  fixed sample of the baseline is rerun against the installed torch.
- Every operation the types and modules list is exercised, except the ones ``SKIP`` names.
"""

from __future__ import annotations

import gc
import pathlib
import subprocess
import sys
import zlib

import pytest
import torch
from dynamo_baseline import untimed_guards

import bytegraph
from python_semantics import matrix
from python_semantics.cells import dynamo_breaks
from python_semantics.operations import SKIP, operations

pytestmark = pytest.mark.heavy  # minutes of work: run first (tests/conftest.py)

SAMPLE_EVERY = 64  #: one baseline cell in this many is rerun through torch.compile
REWRITE = "python -m tests.python_semantics.matrix --write-known"
#: The matrix is compared with lists recorded on one Python and torch (``known_cells.json``,
#: ``dynamo_baseline.json``); stacks without them have nothing to compare with yet.
needs_record = pytest.mark.skipif(
    not matrix.recorded(),
    reason=f"no matrix recorded for {matrix.python_tag()} / torch {matrix.torch_tag()}: "
    "run the matrix with --write-known and --write-baseline",
)


def _selected(ops):
    # the extended cells (later types, kinds, placement) where lists were recorded for them
    return matrix.cells(ops, extended=matrix.extended_recorded())


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """Every cell's outcome, run in a process of its own (``_run_cells``): the ~17,000 compiles
    leave the test process as they found it. Run in the test process, what they left there
    (compile states that stay alive, and the garbage a full collection then walks) made the tests
    after them in the same worker run slower: ``bytegraph.reset()``, which each test calls twice,
    visits every compile state alive."""
    ops = operations()
    selected = _selected(ops)
    path = tmp_path_factory.mktemp("matrix") / "outcomes.json"
    done = subprocess.run(
        [sys.executable, "-m", "python_semantics.test_matrix", "--outcomes", str(path)],
        cwd=pathlib.Path(__file__).parent.parent,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results, _ = matrix.load_outcomes([str(path)])
    assert list(results) == [c.id for c in selected], "the cell process ran other cells"
    return ops, {c.id: c for c in selected}, results


def _listed(cells, results, ids, dynamo=None):
    return "\n".join(matrix.describe(cells[i], results[i], (dynamo or {}).get(i)) for i in ids)


@needs_record
def test_wrong_and_crashed_cells_are_the_known_ones(run):
    ops, cells, results = run
    bad = sorted(i for i, o in results.items() if o.verdict in matrix.BAD)
    known = matrix.load_known()["wrong"]
    if bad:
        print(f"\n{len(bad)} wrong or crashed cells:\n" + _listed(cells, results, bad))
    new = sorted(set(bad) - set(known))
    fixed = sorted(set(known) - set(bad))
    assert not new, "new wrong or crashed cells:\n" + _listed(cells, results, new)
    if fixed:  # reported, not failed: a few cells (id() of temporaries) differ between runs
        print(f"\nright now, still listed ({REWRITE}): {fixed}")


@needs_record
def test_breaks_where_torch_compile_traces_are_the_known_gaps(run):
    ops, cells, results = run
    selected = list(cells.values())
    with untimed_guards():  # counts only: Dynamo's timing of its guards is not read
        dynamo = matrix.dynamo_counts(selected, results)
    gaps = matrix.gaps(results, dynamo)
    print(matrix.table(ops, results, dynamo))
    known = matrix.load_known()
    # a cell listed as wrong that now breaks instead is no regression: breaking is never wrong
    new = sorted(set(gaps) - set(known["gaps"]) - set(known["wrong"]))
    fixed = sorted(set(known["gaps"]) - set(gaps))
    assert not new, "new breaks where torch.compile traces:\n" + _listed(
        cells, results, new, dynamo
    )
    if fixed:  # reported, not failed: a few cells (id() of temporaries) differ between runs
        print(f"\ntraced now, still listed ({REWRITE}): {fixed}")


@needs_record
def test_torch_compile_baseline_holds_for_the_installed_torch(run):
    ops, cells, results = run
    baseline = matrix.load_baseline()
    sample = sorted(
        i for i in baseline if i in cells and zlib.crc32(i.encode()) % SAMPLE_EVERY == 0
    )
    assert len(sample) >= 10, f"no baseline for torch {matrix.torch_tag()}: run --write-baseline"
    with untimed_guards():  # counts only: Dynamo's timing of its guards is not read
        changed = {i: (baseline[i], dynamo_breaks(cells[i])) for i in sample}
    changed = {i: counts for i, counts in changed.items() if counts[0] != counts[1]}
    assert not changed, f"torch.compile's breaks changed (baseline, now): {changed}"


def test_every_operation_is_exercised():
    missing = [op.id for op in operations() if not op.forms and op.id not in SKIP]
    assert not missing, f"operations with no argument pattern: {missing}"


def _run_cells(path: str) -> None:
    """Run every cell and save the outcomes to ``path``, in a process started as pytest's
    workers are set up (``tests/conftest.py``): the eager backend, the imports frozen out of the
    collector's reach, a fresh bytegraph and a fixed seed."""
    bytegraph.config.default_backend = "eager"
    gc.collect()
    gc.freeze()
    bytegraph.reset()
    torch.manual_seed(0)
    results = matrix.run_all(_selected(operations()))
    matrix.save_outcomes(path, results, {})


if __name__ == "__main__" and sys.argv[1:2] == ["--outcomes"]:
    _run_cells(sys.argv[2])
