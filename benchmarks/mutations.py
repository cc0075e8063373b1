"""Mutation run: does a behavioural test catch a small bug in a central behaviour?

    python benchmarks/mutations.py              # every mutant, on a fresh copy of HEAD
    python benchmarks/mutations.py -k resume    # the mutants whose name contains "resume"

The run works on a copy of the repository (``git worktree add`` of HEAD in a temporary folder,
removed at the end unless ``--keep``), never on the checkout it is started from. bytegraph is
imported from the copy (a folder laid out as the installed package, first on the path), which the
run checks before anything else. Each mutant changes one snippet of one file of the copy; its
behavioural tests run first on the unchanged copy (they must pass), then with the snippet changed
(the file is restored in a ``finally``). A mutant is *caught* when a test fails; the run prints
one line per mutant and exits with 1 if one was not caught.

The mutants cover a guard kind, a container method, a shape rule, a break/resume path and a
lowering; their tests compare with eager (results, arguments after the call, what was read in the
trace), never a printed snapshot.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

REPO = pathlib.Path(__file__).resolve().parent.parent
#: The package's folders as the installed package maps them (pyproject's package-dir).
PACKAGE_DIRS = {
    "tracer": "tracer",
    "guards": "guards",
    "codegen": "codegen",
    "backends": "backends",
}


@dataclass(frozen=True)
class Mutant:
    name: str
    path: str  #: file of the repository the mutant changes
    old: str  #: snippet replaced (must occur exactly once)
    new: str
    tests: tuple[str, ...]  #: behavioural tests expected to catch it


MUTANTS = [
    Mutant(
        "guard kind: TENSOR_MATCH of a non-contiguous input checks no strides",
        "guards/kinds.py",
        '    elif spec.sizes:\n        parts += _dims_check(f"{expr}.stride()"',
        '    elif False:\n        parts += _dims_check(f"{expr}.stride()"',
        ("tests/guards/test_stride_changes.py",),
    ),
    Mutant(
        "container method: OrderedDict.popitem(last=False) pops the last item",
        "tracer/variables/containers.py",
        "    key = next(iter(obj.items))\n"
        "    return TupleVariable([key_vt(key), obj.items.pop(key)])",
        "    key = next(reversed(obj.items))\n"
        "    return TupleVariable([key_vt(key), obj.items.pop(key)])",
        ("tests/tracer/test_ordereddict_ends.py",),
    ),
    Mutant(
        "container method: OrderedDict.move_to_end ignores last=False",
        "tracer/variables/containers.py",
        "    at_end = True if last is None else dispatch.truth(tx, last)",
        "    at_end = True",
        ("tests/tracer/test_ordereddict_ends.py",),
    ),
    Mutant(
        "shape rule: an elementwise result of permuted operands is laid out row-major",
        "tracer/fakes/layouts.py",
        "    else:\n        perm = _sorted_dims(shape, operands)",
        "    else:\n        perm = list(range(ndim))",
        ("tests/guards/test_stride_changes.py",),
    ),
    Mutant(
        "break/resume: a resume function binds the stack values in reverse order",
        "codegen/resume.py",
        'stack_args = tuple(f"__stack{i}" for i in range(nstack) if i not in null_slots)',
        "stack_args = tuple(reversed("
        '[f"__stack{i}" for i in range(nstack) if i not in null_slots]))',
        ("tests/breaks/test_displays.py", "tests/breaks/test_operand_counts.py"),
    ),
    Mutant(
        "lowering: the Triton maximum drops NaN propagation",
        "backends/triton/ops.py",
        '"maximum": "tl.where(({0} > {1}) | ({0} != {0}), {0}, {1})"',
        '"maximum": "tl.where({0} > {1}, {0}, {1})"',
        (
            "tests/backends/triton/test_triton_pointwise.py",
            "tests/backends/triton/test_triton_nan.py",
        ),
    ),
]


def make_copy() -> pathlib.Path:
    """A worktree of HEAD in a temporary folder, with ``_import/bytegraph`` laid out as the
    installed package (the editable install maps ``bytegraph`` to the original checkout)."""
    tree = pathlib.Path(tempfile.mkdtemp(prefix="bytegraph-mutations-")) / "tree"
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "--detach", str(tree), "HEAD"],
        check=True,
        capture_output=True,
    )
    package = tree / "_import" / "bytegraph"
    package.mkdir(parents=True)
    for source in (tree / "bytegraph").glob("*.py"):
        (package / source.name).symlink_to(source)
    for name, folder in PACKAGE_DIRS.items():
        (package / name).symlink_to(tree / folder, target_is_directory=True)
    return tree


def remove_copy(tree: pathlib.Path) -> None:
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)],
        check=False,
        capture_output=True,
    )
    shutil.rmtree(tree.parent, ignore_errors=True)


def _env(tree: pathlib.Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree / "_import")
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # a restored file is never shadowed by a stale .pyc
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def check_imports(tree: pathlib.Path) -> None:
    """bytegraph and its tracer load from the copy, not from the original checkout."""
    out = subprocess.run(
        [sys.executable, "-c", "import bytegraph.tracer.driver as d; print(d.__file__)"],
        cwd=tree / "_import",
        env=_env(tree),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert out.startswith(str(tree)), f"bytegraph loads from {out}, not from the copy {tree}"


def run_tests(tree: pathlib.Path, tests: tuple[str, ...], timeout: int) -> tuple[int, str]:
    """pytest's exit status on ``tests`` of the copy (run from the import folder, so that the
    copy's bytegraph is the one found first), and the last line of its output."""
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-x",
        "-q",
        "-p",
        "no:cacheprovider",
        "--rootdir",
        str(tree),
        "-c",
        str(tree / "pyproject.toml"),
        *[str(tree / t) for t in tests],
    ]
    try:
        done = subprocess.run(
            cmd,
            cwd=tree / "_import",
            env=_env(tree),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return -1, f"timed out after {timeout}s"
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    return done.returncode, lines[-1] if lines else done.stderr[-300:]


def run_mutant(tree: pathlib.Path, mutant: Mutant, timeout: int) -> tuple[str, str]:
    """``(verdict, detail)``: ``caught``, ``NOT CAUGHT``, or why the mutant could not be judged."""
    rc, line = run_tests(tree, mutant.tests, timeout)
    if rc != 0:
        return "baseline fails", line
    path = tree / mutant.path
    original = path.read_text()
    if original.count(mutant.old) != 1:
        return "snippet not found", f"{mutant.old!r} occurs {original.count(mutant.old)} times"
    try:
        path.write_text(original.replace(mutant.old, mutant.new))
        rc, line = run_tests(tree, mutant.tests, timeout)
    finally:
        path.write_text(original)
    if rc == 1:  # pytest: tests ran and some failed
        return "caught", line
    if rc == 0:
        return "NOT CAUGHT", line
    return f"error (pytest exit {rc})", line


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-k", default="", help="only mutants whose name contains this")
    parser.add_argument("--keep", action="store_true", help="keep the copy of the tree")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per pytest run")
    args = parser.parse_args()
    mutants = [m for m in MUTANTS if args.k in m.name]
    tree = make_copy()
    print(f"copy of HEAD: {tree}", flush=True)
    results = []
    try:
        check_imports(tree)
        for mutant in mutants:
            start = time.time()
            verdict, detail = run_mutant(tree, mutant, args.timeout)
            results.append(verdict)
            print(f"{verdict:>12}  {mutant.name}  [{', '.join(mutant.tests)}]", flush=True)
            print(f"{'':>12}  {detail}  ({time.time() - start:.0f}s)", flush=True)
    finally:
        if not args.keep:
            remove_copy(tree)
    caught = results.count("caught")
    print(f"{caught} of {len(results)} mutants caught")
    return 0 if caught == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
