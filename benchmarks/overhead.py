"""Per-call overhead of bytegraph and ``torch.compile(backend="eager")`` on tiny functions.

Overhead is what a compiled call costs beyond the plain eager call: guard evaluation, dispatch and
the call into the graph. Tensors are tiny (4 elements) so the tensor work itself is as small as it
gets. Each case is compiled by both systems in this one process and warmed up; then eager, bytegraph
and torch.compile are timed in interleaved rounds (``timeit``, ``--number`` calls per sample),
keeping the minimum per-call time of each (the least disturbed by other processes). Times are the
thread's CPU time (one intra-op thread: torch works in it), so that other processes sharing the
machine's cores add little; ``--wall`` times wall-clock instead.

Then the costs of code that does not compile whole, for both engines (``target_rows``):

* a graph break: the overhead of a call of a function with one break, over the overhead of the
  same function without it (target: at most 2x);
* a fallback: a function that bytegraph runs in Python (a break while an exception is handled),
  over eager (target: at most 1.05x; torch.compile resumes after the break instead); the user
  function it calls runs compiled (routed, as torch.compile's frame hook would compile it), and
  that callee compiled on its own, over eager, is shown below it: the part of the fallback's
  cost that is a compiled call's (its guards and entry) rather than the fallback's own;
* a routed call: a tensor-free helper called from code run in plain Python (the fallback above,
  calling it in a loop), over the same code run eagerly (target: at most 1.05x), and the bare
  routed call of the helper over its plain call (what one call site costs), with the same for a
  bound method, a tensor's method and a library module (callables made anew, or looked up anew,
  at each call) and a function that falls back (run as its routed copy).

Run::

    python benchmarks/overhead.py           # the table, then the ratio bytegraph / torch.compile
    python benchmarks/overhead.py --quick       # fewer iterations (a smoke run)
    python benchmarks/overhead.py --targets     # only the targets
    python benchmarks/overhead.py --layers      # where the targets' overhead goes, check by check

A case is ``Case(name, fn, make_args, compile_kwargs)``: dynamic-shape cases add entries
to ``CASES`` with ``compile_kwargs={"dynamic": True}`` and arguments whose sizes vary per call.
"""

from __future__ import annotations

import argparse
import sys
import time
import timeit
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from bytegraph.tracer.entry import code_slot

import bytegraph


def add1(a):
    return a + 1


def add2(a, b):
    return a + b


def add4(a, b, c, d):
    return (a + b) * (c - d)


def add6(a, b, c, d, e, f):
    return (a + b) * (c - d) + e * f


def scale(a, n):
    return a * n + a.shape[0]


@dataclass
class Case:
    name: str
    fn: Callable[..., Any]
    make_args: Callable[[], tuple]  #: fresh arguments (same metadata every call: no recompiles)
    compile_kwargs: dict[str, Any] = field(default_factory=dict)  #: for both compilers


def tensors(n: int) -> Callable[[], tuple]:
    return lambda: tuple(torch.randn(4) for _ in range(n))


CASES = [
    Case("1 tensor", add1, tensors(1)),
    Case("2 tensors", add2, tensors(2)),
    Case("4 tensors", add4, tensors(4)),
    Case("6 tensors", add6, tensors(6)),
    # dynamic shapes: sizes and ints traced symbolically (guards include shape expressions)
    Case("2 dyn", add2, tensors(2), {"dynamic": True}),
    Case("6 dyn", add6, tensors(6), {"dynamic": True}),
    Case("int dyn", scale, lambda: (torch.randn(4), 3), {"dynamic": True}),
]


def no_break(a):
    b = a + 1
    return b * 2


def one_break(a):
    b = a + 1
    sys.stdout.write("")  # a graph break for both engines (writes nothing)
    return b * 2


def exists(val):
    return val is not None


def divisible_by(num, den):
    return (num % den) == 0


def _mixed(a, w):
    """A few small matrix products: tensor work of some microseconds."""
    for _ in range(4):
        a = torch.tanh(a @ w)
    return a


def falls_back(a, w):
    """bytegraph runs it in Python: a graph break while an exception is handled."""
    a = _mixed(a, w)
    try:
        raise KeyError("k")
    except KeyError:
        sys.stdout.write("")
    return a * 2


def falls_back_calling_helpers(a, w, vals):
    """``falls_back`` whose Python part calls two tensor-free helpers, routed, per item."""
    a = _mixed(a, w)
    try:
        raise KeyError("k")
    except KeyError:
        sys.stdout.write("")
    n = 0
    for v in vals:
        if exists(v) and divisible_by(v, 3):
            n += 1
    return a * n


def _calls_exists(vals):
    n = 0
    for v in vals:
        if exists(v):
            n += 1
    return n


def _fell_back(v):
    """Runs in Python (a break while an exception is handled) and calls something: routed code
    calls its routed copy."""
    try:
        raise KeyError(v)
    except KeyError:
        sys.stdout.write("")
    return v is not None


def _calls_a_fallback(vals):
    n = 0
    for v in vals:
        if _fell_back(v):
            n += 1
    return n


class _Counter:
    def has(self, v):
        return v is not None


def _calls_a_method(vals, obj):
    n = 0
    for v in vals:
        if obj.has(v):
            n += 1
    return n


def _calls_a_tensor_method(vals, t):
    n = 0
    for _ in vals:
        n += t.dim()
    return n


def _calls_a_module(vals, module, t):
    for _ in vals:
        t = module(t)
    return t


def _matrices() -> tuple:
    return torch.randn(8, 32), torch.randn(32, 32) / 6


#: What ``per_call_us`` reads: the thread's CPU time (``--wall``: wall-clock time).
CLOCK: list[Callable[[], float]] = [time.thread_time]


def per_call_us(fn: Callable[..., Any], args: tuple, number: int) -> float:
    """Microseconds per call of one timing sample of ``number`` calls."""
    return timeit.Timer(lambda: fn(*args), timer=CLOCK[0]).timeit(number) / number * 1e6


def measure(case: Case, number: int, repeat: int) -> dict[str, float]:
    """Minimum per-call time (us) of eager, bytegraph and torch.compile, timed in interleaved
    rounds."""
    return measure_together({case.name: case}, number, repeat)[case.name]


def measure_together(
    cases: dict[str, Case], number: int, repeat: int
) -> dict[str, dict[str, float]]:
    """``measure`` for several cases at once, all their runners timed in the same interleaved
    rounds: a ratio between cases (one break's overhead over the overhead without it) then
    compares times taken under the same load, not in two windows that load may differ between."""
    torch._dynamo.reset()
    runs, best = {}, {}
    for name, case in cases.items():
        args = case.make_args()
        runners = {
            "eager": case.fn,
            "bytegraph": bytegraph.compile(case.fn, backend="eager", **case.compile_kwargs),
            "torch.compile": torch.compile(case.fn, backend="eager", **case.compile_kwargs),
        }
        expected = case.fn(*args)
        for engine, run in runners.items():
            for _ in range(3):  # compile, then settle caches
                got = run(*args)
                torch.testing.assert_close(got, expected, msg=f"{engine} differs from eager")
        runs[name] = (runners, args)
        best[name] = dict.fromkeys(runners, float("inf"))
    for _ in range(repeat):
        for name, (runners, args) in runs.items():
            for engine, run in runners.items():
                best[name][engine] = min(best[name][engine], per_call_us(run, args, number))
    return best


def target_rows(number: int, repeat: int) -> None:
    """The three overhead targets, for bytegraph and torch.compile: the cases' times (us), then
    the ratios the targets bound."""
    warnings.simplefilter("ignore")  # bytegraph's fallback warning
    x, vals = torch.randn(4), list(range(16))
    cases = {
        "no break": Case("no break", no_break, lambda: (x,)),
        "one break": Case("one break", one_break, lambda: (x,)),
        "fallback": Case("fallback", falls_back, _matrices),
        "its callee": Case("its callee", _mixed, _matrices),
        "fallback+helpers": Case(
            "fallback+helpers", falls_back_calling_helpers, lambda: (*_matrices(), vals)
        ),
    }
    # the cases each ratio compares are timed together (``measure_together``)
    together = (("no break", "one break"), ("fallback", "its callee", "fallback+helpers"))
    t = {}
    for names in together:
        t |= measure_together({name: cases[name] for name in names}, number, repeat)
    print(f"\n{'case (us per call)':<46} {'eager':>8} {'bytegraph':>10} {'torch.compile':>14}")
    for name, times in t.items():
        eager, bg, tc = (times[e] for e in ("eager", *ENGINES))
        print(f"{name:<46} {eager:8.2f} {bg:10.2f} {tc:14.2f}")
    print(f"\n{'target':<46} {'bytegraph':>10} {'torch.compile':>14} {'target':>7}")
    row = "{:<46} {:10.2f} {:14.2f} {:>7}"
    plain, broken = t["no break"], t["one break"]
    over = [(broken[e] - broken["eager"]) / (plain[e] - plain["eager"]) for e in ENGINES]
    print(row.format("one break: overhead / overhead without it", *over, "<= 2"))
    print(row.format("a fallback: time / eager", *_over_eager(t["fallback"]), "<= 1.05"))
    callee = _over_eager(t["its callee"])
    print(row.format("  its callee, compiled alone / eager", *callee, ""))
    helpers = _over_eager(t["fallback+helpers"])
    print(row.format("a fallback calling tensor-free helpers / eager", *helpers, "<= 1.05"))
    bare = _bare_routed_calls(vals, number, repeat)
    print(row.format("  one routed call / one plain call (alone)", bare["function"], nan, ""))
    for kind in ("bound method", "tensor method", "library module", "fallback function"):
        print(row.format(f"    the same, calling a {kind}", bare[kind], nan, ""))
    kinds = sorted(k for k in bytegraph.stats() if k.startswith("fallback:"))
    print(f"(bytegraph fell back in {', '.join(kinds) or 'nothing: the fallback rows are wrong'})")
    reads = timeit.Timer("f.__code__", timer=CLOCK[0], globals={"f": no_break})
    code_ns = min(reads.repeat(repeat, number)) / number * 1e9
    slot = code_slot(no_break)
    if slot is None:
        how = "as fn.__code__ (its code slot is not known here)"
    else:
        slot_reads = timeit.Timer("s.value", timer=CLOCK[0], globals={"s": slot})
        how = f"from its code slot, {min(slot_reads.repeat(repeat, number)) / number * 1e9:.0f} ns"
    print(
        f"(each compiled call checks its function's code once, {how}; reading fn.__code__ "
        f"costs {code_ns:.0f} ns: an audit hook in the process, as filelock installs, makes each "
        "read call it)"
    )


ENGINES = ("bytegraph", "torch.compile")


def layer_rows(number: int, repeat: int) -> None:
    """Where bytegraph's overhead goes in the cases of the break and fallback targets: for each
    compiled function (and each resume function its variant calls), the call through its entry,
    its variant called directly, the graphs the variant calls, and each condition its guards test
    (as the dispatcher writes it, over the same arguments), timed as functions of the arguments
    less an empty function's call; the entry's own checks (``tracer/entry.py``) likewise. Each
    test is timed alone, in a loop that keeps what it reads in the caches: in a call, after the
    graph's work, the C checks cost more (the entry's time less its variant's is the sum there)."""
    warnings.simplefilter("ignore")
    x = torch.randn(4)
    for name, fn, args in (
        ("no break", no_break, (x,)),
        ("one break", one_break, (x,)),
        ("the fallback's callee", _mixed, _matrices()),
    ):
        entry = bytegraph.compile(fn, backend="eager")
        for _ in range(3):
            entry(*args)
        print(f"\n{name} (ns per call): eager {_ns(fn, args, number, repeat):.0f}")
        _layers(entry, args, number, repeat, "  ")


def _ns(fn: Callable[..., Any], args: tuple, number: int, repeat: int) -> float:
    return min(per_call_us(fn, args, number) for _ in range(repeat)) * 1e3


def _layers(entry: Any, args: tuple, number: int, repeat: int, pad: str) -> None:
    """``layer_rows`` for one entry called with ``args``."""
    from bytegraph.tracer.entry import _COMPILING

    state = entry.__bytegraph__
    cache = state.cache
    variant = cache.select(dict(zip(cache.arg_names, args, strict=True)))
    chosen = next(v for v in cache.variants if v.fn is variant)
    scope = {**cache.scope, **cache.consts.values, **entry.__globals__}
    params = ", ".join(cache.roots[n] for n in cache.arg_names)
    fused = {condition for condition, _ in chosen.guards.fusions}
    # the entry's own checks, where it makes them (a resume function's entry goes to its guards)
    names = entry.__code__.co_names
    own = [_COMPILING] if "___compiler" in names or "___is_compiling" in names else []
    code_now = "___code_slot.value" if "___code_slot" in names else "___fn.__code__"
    own += [f"{code_now} is ___code"] if "___code" in names else []
    tests = [*own, *chosen.guards.dispatch(fused)]
    nothing = _as_function(params, "None", scope)
    base = _ns(nothing, args, number, repeat)
    whole, alone = _ns(entry, args, number, repeat), _ns(variant, args, number, repeat)
    # a variant that only calls its graph is not called: the entry calls the graph itself
    graph = f"___graph_{chosen.index}__g"
    direct = any(name.startswith(graph) for name in entry.__code__.co_names)
    how = " (not called: the entry calls its graph)" if direct else ""
    print(
        f"{pad}{entry.__name__}: through its entry {whole:.0f}, its variant alone {alone:.0f}{how}"
    )
    for test in tests:
        cost = _ns(_as_function(params, test, scope), args, number, repeat) - base
        print(f"{pad}  {cost:5.0f}  {test[:90]}")
    cells = dict(zip(variant.__code__.co_freevars, variant.__closure__ or (), strict=True))
    for cell_name, cell in cells.items():
        value = cell.cell_contents
        if cell_name.startswith("__compiled_fn"):
            got = _arguments_of(variant, args, cell)
            print(f"{pad}  graph {cell_name}: {_ns(value, got, number, repeat):.0f}")
        elif hasattr(value, "__bytegraph__"):
            _layers(value, _arguments_of(variant, args, cell), number, repeat, pad + "  ")


def _as_function(params: str, expression: str, scope: dict[str, Any]) -> Callable[..., Any]:
    namespace = dict(scope)
    exec(f"def ___test({params}):\n    return {expression}\n", namespace)
    return namespace["___test"]


def _arguments_of(variant: Callable[..., Any], args: tuple, cell: Any) -> tuple:
    """The arguments ``variant(*args)`` calls what ``cell`` holds with (the first call)."""
    held, got = cell.cell_contents, []

    def record(*given: Any) -> Any:
        got.append(given)
        return held(*given)

    cell.cell_contents = record
    try:
        variant(*args)
    finally:
        cell.cell_contents = held
    return got[0]


def _over_eager(t: dict[str, float]) -> tuple[float, float]:
    return t["bytegraph"] / t["eager"], t["torch.compile"] / t["eager"]


nan = float("nan")


def _bare_routed_calls(vals: list[int], number: int, repeat: int) -> dict[str, float]:
    """Per kind of callable, routed over plain: a loop calling it through bytegraph's router from
    a function run in Python (``codegen/route_calls.py``) against the same loop run plainly. The
    kinds: a tensor-free function (``exists(v)``), a method of a user object, a tensor's method,
    a module of torch's (``nn.Identity``), a function whose trace fails (run as its routed
    copy)."""
    from bytegraph.codegen.route_calls import routed
    from bytegraph.tracer.driver import CompiledCode, Settings

    t = torch.randn(4)
    loops = {
        "function": (_calls_exists, (vals,)),
        "bound method": (_calls_a_method, (vals, _Counter())),
        "tensor method": (_calls_a_tensor_method, (vals, t)),
        "library module": (_calls_a_module, (vals, torch.nn.Identity(), t)),
        "fallback function": (_calls_a_fallback, (vals,)),
    }
    ratios = {}
    for kind, (loop, args) in loops.items():
        state = CompiledCode(loop, Settings(backend=lambda gm, inputs: gm))
        routed_fn = routed(loop, state.callees.route)
        routed_fn(*args)  # decides on each callable once (``exists`` is traced: tensor-free)
        best = {"plain": float("inf"), "routed": float("inf")}
        for _ in range(repeat):
            for name, fn in (("plain", loop), ("routed", routed_fn)):
                best[name] = min(best[name], per_call_us(fn, args, number))
        ratios[kind] = best["routed"] / best["plain"]
    return ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=5000, help="calls per timing sample")
    parser.add_argument("--repeat", type=int, default=15, help="samples per system (min kept)")
    parser.add_argument("--quick", action="store_true", help="--number 200 --repeat 3")
    parser.add_argument("--targets", action="store_true", help="only the overhead targets")
    parser.add_argument("--layers", action="store_true", help="where the targets' overhead goes")
    parser.add_argument("--wall", action="store_true", help="time wall-clock, not CPU time")
    opts = parser.parse_args()
    if opts.wall:
        CLOCK[0] = time.perf_counter
    number, repeat = (200, 3) if opts.quick else (opts.number, opts.repeat)
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, {number} calls x {repeat} samples, min per call (us)")
    if opts.layers:
        layer_rows(number, repeat)
        return
    if opts.targets:
        target_rows(number, repeat)
        return
    header = (
        f"{'case':<10} {'eager':>8} {'bytegraph':>10} {'torch.compile':>14} "
        f"{'bg overhead':>12} {'tc overhead':>12} {'ratio':>6}"
    )
    print(header)
    print("-" * len(header))
    ratios = []
    for case in CASES:
        t = measure(case, number, repeat)
        bg, tc = t["bytegraph"] - t["eager"], t["torch.compile"] - t["eager"]
        ratio = bg / tc if tc > 0 else float("nan")
        ratios.append(ratio)
        print(
            f"{case.name:<10} {t['eager']:8.2f} {t['bytegraph']:10.2f} "
            f"{t['torch.compile']:14.2f} {bg:12.2f} {tc:12.2f} {ratio:6.2f}"
        )
    print(
        f"\nbytegraph overhead / torch.compile overhead: max {max(ratios):.2f}, "
        f"mean {sum(ratios) / len(ratios):.2f} (target <= 0.5)"
    )
    target_rows(number, repeat)


if __name__ == "__main__":
    main()
