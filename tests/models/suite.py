"""The engine-neutral run of one ``zoo`` architecture: build it, compile it with an ``Engine``,
compare inference and training steps with an eager copy, count graphs, breaks and recompiles.

Nothing here imports bytegraph (``modeltest.BytegraphEngine`` is bytegraph's engine): importing
bytegraph patches ``nn.Module`` for its change detection, which torch.compile would then trace, so
``benchmarks/models.py`` runs torch.compile (``TorchCompileEngine``) in a process without it.
``run_arch`` is the entry point; ``differences`` is the comparison.
"""

from __future__ import annotations

import collections
import contextlib
import copy
import os
import shutil
import sys
import tempfile
import time
import warnings
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import torch
import torch._dynamo
from models import zoo
from torch import nn


def first_tensor(out: Any) -> torch.Tensor:
    """The main output of a model: a tensor, the first of a tuple, ``.logits`` or
    ``.last_hidden_state``."""
    for name in ("logits", "last_hidden_state"):
        if hasattr(out, name):
            return getattr(out, name)
    return out if isinstance(out, torch.Tensor) else first_tensor(out[0])


@dataclass
class Phase:
    """What an engine did on the first call of a phase (inference or training) and after it."""

    graphs: int = 0
    breaks: int = 0  #: graph breaks; for bytegraph fallbacks to Python count too
    retraces: int = 0  #: traces after the phase's first call (same inputs: should be 0)
    first_s: float = 0.0  #: seconds of the first call (tracing and compiling included)
    reasons: list[str] = field(default_factory=list)  #: break reasons, first call
    internal: list[str] = field(default_factory=list)  #: internal errors (bytegraph's own bugs)


class Engine:
    """How to compile a model and count what compiling it did; the base class is eager.

    ``backend`` is the one both engines name (``None``: their default arguments)."""

    name = "eager"
    backend: str | None = "eager"

    def compile(self, model: nn.Module) -> Callable[..., Any]:
        return model

    def start(self) -> None:
        """Begin counting (the events of the next calls)."""

    def counts(self) -> Phase:
        """Graphs, breaks and reasons since ``start``."""
        return Phase()


class TorchCompileEngine(Engine):
    """``torch.compile(model, backend=...)``; breaks counted as ``torch._dynamo.explain`` counts
    them (graphs compiled on the call, minus one), reasons from dynamo's ``graph_break`` counter.
    ``backend=None`` is torch.compile's default, ``"inductor"``."""

    name = "torch.compile"

    def __init__(self, backend: str | None = "eager") -> None:
        self.backend = backend
        self.graphs = 0
        self.mark = (0, collections.Counter())

    def _count(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
        self.graphs += 1
        return torch._dynamo.lookup_backend(self.backend or "inductor")(gm, example_inputs)

    def compile(self, model: nn.Module) -> Callable[..., Any]:
        torch._dynamo.reset()
        return torch.compile(model, backend=self._count)

    def start(self) -> None:
        self.mark = (self.graphs, collections.Counter(torch._dynamo.utils.counters["graph_break"]))

    def counts(self) -> Phase:
        graphs = self.graphs - self.mark[0]
        now = collections.Counter(torch._dynamo.utils.counters["graph_break"])
        return Phase(graphs=graphs, breaks=max(0, graphs - 1), reasons=list(now - self.mark[1]))

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield


@dataclass
class ArchRun:
    """One architecture and variant (with or without labels) through one engine."""

    phases: dict[str, Phase] = field(default_factory=dict)  #: "inf", "train"
    wrong: list[str] = field(default_factory=list)  #: differences from eager
    error: str | None = None  #: the engine made the user's program raise (eager did not)
    speedup: float | None = None  #: eager seconds / compiled seconds per inference call


def run_arch(arch: Any, labels: bool, engine: Engine, time_calls: int = 0) -> ArchRun:
    """Inference (eval, ``no_grad``, two calls) then two training steps (SGD) of ``zoo.build(arch)``
    compiled by ``engine``, each compared with an eager copy: outputs (values, dtype, shape,
    ``requires_grad``), the loss, every gradient, every parameter and buffer after the step (a run
    that may use Inductor starts its second step from eager's weights: ``_train``). With
    ``time_calls``, also the steady-state speedup over eager (``speedup``: that many calls each)."""
    built = zoo.build(arch)  # both copies: equal down to what ``__deepcopy__`` leaves out
    model, reference = copy.deepcopy(built), copy.deepcopy(built)
    run = ArchRun()
    inductor = engine.backend != "eager"
    if inductor:
        arch = replace(arch, atol=max(arch.atol or 0.0, INDUCTOR_TOLERANCE))
    with engine.active(), fresh_inductor_cache(inductor), eager_random(inductor):
        compiled = engine.compile(model)
        note_compiled(model, reference)
        try:
            _infer(arch, labels, engine, compiled, (model, reference), run)
            _train(arch, labels, engine, compiled, (model, reference), run, realign=inductor)
            if time_calls and not run.wrong:
                run.speedup = _speedup(arch, labels, compiled, reference, time_calls)
        except Exception as e:  # noqa: BLE001 (the eager copy ran the same call without error)
            run.error = f"{type(e).__name__}: {e}"
    return run


#: Tolerance (absolute and relative) of a model that may run through Inductor (either engine, any
#: backend but ``eager``). Inductor's kernels fuse and reorder float arithmetic (reductions in
#: softmax, norms, the backward's sums), so its results differ from eager's by rounding: mt5's
#: logits after a training step by 1.5e-5 (relative 9e-5), through both engines alike.
INDUCTOR_TOLERANCE = 1e-4


@contextlib.contextmanager
def eager_random(inductor: bool = True) -> Iterator[None]:
    """While a model may run through Inductor: random operators (dropout) drawn by torch's own
    kernels, as eager draws them (Inductor's ``fallback_random``; bytegraph's default backend sets
    it for its graphs), so a training step compares with eager's, for both engines alike."""
    if not inductor:
        yield
        return
    from torch._inductor import config

    with config.patch(fallback_random=True):
        yield


@contextlib.contextmanager
def fresh_inductor_cache(fresh: bool = True) -> Iterator[None]:
    """Inductor's caches empty (a new ``TORCHINDUCTOR_CACHE_DIR``, its in-memory caches cleared),
    so a run compiles everything itself: neither engine nor an earlier model profits from another's
    kernels. The folder is removed afterwards."""
    if not fresh:
        yield
        return
    folder = tempfile.mkdtemp(prefix="bytegraph-inductor-")
    old = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = folder
    _clear_inductor_caches()
    try:
        yield
    finally:
        if old is None:
            del os.environ["TORCHINDUCTOR_CACHE_DIR"]
        else:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = old
        _clear_inductor_caches()
        shutil.rmtree(folder, ignore_errors=True)


def _clear_inductor_caches() -> None:
    utils = sys.modules.get("torch._inductor.utils")  # not imported: nothing cached yet
    if utils is not None:
        utils.clear_caches()


def _phase(engine: Engine, fn: Callable[[], Any]) -> tuple[Any, Phase]:
    engine.start()
    start = time.perf_counter()
    out = fn()
    seconds = time.perf_counter() - start
    phase = engine.counts()
    phase.first_s = seconds
    return out, phase


def _infer(arch, labels, engine, compiled, models, run: ArchRun) -> None:
    model, reference = models
    for m in models:
        m.eval()
    with torch.no_grad():
        expected = reference(**zoo.inputs(arch, labels))
        out, phase = _phase(engine, lambda: compiled(**zoo.inputs(arch, labels)))
        run.wrong += differences(out, expected, "inference output", arch.atol)
        engine.start()
        expected = reference(**zoo.inputs(arch, labels))
        again = compiled(**zoo.inputs(arch, labels))
        phase.retraces = engine.counts().graphs
        run.wrong += differences(again, expected, "inference output (2nd call)", arch.atol)
    run.wrong += state_differences(model, reference, "after inference", arch.atol)
    run.phases["inf"] = phase


def _train(arch, labels, engine, compiled, models, run: ArchRun, realign: bool = False) -> None:
    """Two training steps. With ``realign`` (a run that may use Inductor), the parameters after the
    first step are compared, then the compiled model takes eager's values: the second step checks
    the compiled code from equal weights, not Inductor's rounding carried through the first update
    (rwkv's tiny embeddings, std 1e-4 under a LayerNorm, turn a gradient that rounds differently
    by 1.6e-5 into logits 0.02 apart one step later, for both engines alike)."""
    model, reference = models
    opts = [torch.optim.SGD(m.parameters(), lr=0.05) for m in models]
    for m in models:
        m.train()
    for step in range(2):
        for opt in opts:
            opt.zero_grad()
        expected = reference(**zoo.inputs(arch, labels))
        _loss(expected, labels).backward()

        def call():
            out = compiled(**zoo.inputs(arch, labels))
            _loss(out, labels).backward()
            return out

        out, phase = _phase(engine, call)
        where = f"training step {step}"
        run.wrong += differences(out, expected, f"{where} output", arch.atol)
        for (name, p), (_, q) in zip(
            model.named_parameters(), reference.named_parameters(), strict=True
        ):
            run.wrong += differences(p.grad, q.grad, f"{where} grad {name}", arch.atol)
        for opt in opts:
            opt.step()
        if step == 0:
            run.phases["train"] = phase
            if realign:
                run.wrong += _parameter_differences(models, "after the first step", arch.atol)
                with torch.no_grad():
                    for p, q in zip(model.parameters(), reference.parameters(), strict=True):
                        p.copy_(q)
        else:
            run.phases["train"].retraces = phase.graphs
    run.wrong += _parameter_differences(models, "after training", arch.atol)
    run.wrong += state_differences(model, reference, "after training", arch.atol)


#: Plain values a module may keep as attributes, compared between the engines (a cache's length,
#: a step counter, a flag; a tensor kept outside the buffers)
_STATE_TYPES = (bool, int, float, str, type(None))


#: module -> the attribute names its engine's ``compile`` added (``torch.compile`` marks the model
#: ``_is_torch_compile``): bookkeeping of the compiler, not state a forward left
_COMPILE_MARKS: weakref.WeakKeyDictionary[nn.Module, set[str]] = weakref.WeakKeyDictionary()


def note_compiled(model: nn.Module, reference: nn.Module) -> None:
    """Right after ``engine.compile(model)``: remember the attributes compiling added to each of
    ``model``'s modules (``state_differences`` leaves them out)."""
    pairs = zip(model.modules(), reference.modules(), strict=True)
    for sub, ref in pairs:
        _COMPILE_MARKS[sub] = set(vars(sub)) - set(vars(ref))


def state_differences(model: nn.Module, reference: nn.Module, when: str, atol=None) -> list[str]:
    """How the state a forward may change differs between the compiled model and its eager copy
    (two deep copies of one model, so that what ``__deepcopy__`` leaves out differs in neither):
    every buffer (names and values), and each submodule's plain attributes (``_STATE_TYPES`` and
    tuples/lists of them: what the model counts or caches in Python, which the outputs may not
    show)."""
    wrong: list[str] = []
    mine, theirs = dict(model.named_buffers()), dict(reference.named_buffers())
    if list(mine) != list(theirs):
        return [f"buffers {when}: {sorted(set(mine) ^ set(theirs))} in one model only"]
    for name in theirs:
        wrong += differences(mine[name], theirs[name], f"buffer {name} {when}", atol)
    pairs = zip(model.named_modules(), reference.named_modules(), strict=True)
    for (prefix, sub), (_, ref) in pairs:
        ours, eager = _plain_attributes(sub), _plain_attributes(ref)
        for name in _COMPILE_MARKS.get(sub, ()):
            ours.pop(name, None)
        if list(ours) != list(eager):
            only = sorted(set(ours) ^ set(eager))
            what = f"{only} in one model only" if only else "in another order"
            wrong.append(f"attributes of {prefix or 'the model'} {when}: {what}")
            continue
        for key in eager:
            where = f"{prefix}.{key}" if prefix else key
            wrong += differences(ours[key], eager[key], f"attribute {where} {when}", atol)
    return wrong


def _plain_attributes(module: nn.Module) -> dict[str, Any]:
    def plain(v: Any) -> bool:  # builtin types themselves (e3nn's Irreps, a tuple, has no len())
        if type(v) in (tuple, list):
            return all(plain(x) for x in v)
        return type(v) in _STATE_TYPES or type(v) is torch.Tensor

    return {k: v for k, v in vars(module).items() if not k.startswith("__") and plain(v)}


def _parameter_differences(models, when: str, atol: float | None) -> list[str]:
    model, reference = models
    wrong: list[str] = []
    for (name, p), (_, q) in zip(
        model.named_parameters(), reference.named_parameters(), strict=True
    ):
        wrong += differences(p, q, f"parameter {name} {when}", atol)
    return wrong


def _loss(out: Any, labels: bool) -> torch.Tensor:
    return out.loss if labels else first_tensor(out).float().square().mean()


def _speedup(arch, labels, compiled, reference, calls: int) -> float:
    kwargs = zoo.inputs(arch, labels)
    return speedup(
        lambda: reference(**kwargs), lambda: compiled(**kwargs), (compiled, reference), calls
    )


def speedup(eager: Callable[[], Any], ours: Callable[[], Any], models: tuple, calls: int) -> float:
    """Steady-state speedup of ``ours`` over ``eager`` (the models in eval mode, no grad): each
    called ``calls`` times, in turns, each call timed on the thread's CPU clock (one intra-op
    thread: torch works in this thread), the least time of each kept. Wall-clock medians on a
    shared machine measured other processes: on a loaded 2-core machine they gave speedups of
    0.2x to 7x for the same rows, where CPU-time minima stay within a few percent."""
    best = [float("inf"), float("inf")]
    with torch.no_grad():
        for m in models:
            getattr(m, "eval", lambda: None)()
        for _ in range(calls):
            for i, fn in enumerate((eager, ours)):
                start = time.thread_time()
                fn()
                best[i] = min(best[i], time.thread_time() - start)
    return best[0] / best[1]


def differences(actual: Any, expected: Any, where: str, atol: float | None = None) -> list[str]:
    """How ``actual`` differs from ``expected``: tensors on dtype, shape, device, ``requires_grad``
    and values; ``ModelOutput``/dicts on keys then items; sequences item by item; caches and other
    objects attribute by attribute; the rest with ``==``."""
    if isinstance(expected, torch.Tensor):
        if not isinstance(actual, torch.Tensor):
            return [f"{where}: {type(actual).__name__} instead of a tensor"]
        for attr in ("dtype", "shape", "device", "requires_grad"):
            if getattr(actual, attr) != getattr(expected, attr):
                return [f"{where}.{attr}: {getattr(actual, attr)} != {getattr(expected, attr)}"]
        tol = {} if atol is None else {"atol": atol, "rtol": atol}
        try:
            torch.testing.assert_close(actual.detach(), expected.detach(), equal_nan=True, **tol)
        except AssertionError as e:
            return [f"{where}: values differ: {str(e).splitlines()[-3:]}"]
        return []
    if type(actual) is not type(expected):
        return [f"{where}: {type(actual).__name__} != {type(expected).__name__}"]
    if isinstance(expected, dict):
        if list(actual) != list(expected):
            return [f"{where}: keys {list(actual)} != {list(expected)}"]
        return [
            d for k in expected for d in differences(actual[k], expected[k], f"{where}.{k}", atol)
        ]
    if isinstance(expected, (list, tuple)):
        if len(actual) != len(expected):
            return [f"{where}: length {len(actual)} != {len(expected)}"]
        return [
            d
            for i, (a, e) in enumerate(zip(actual, expected, strict=True))
            for d in differences(a, e, f"{where}[{i}]", atol)
        ]
    if hasattr(expected, "__dict__") and not isinstance(expected, (type, nn.Module)):
        return differences(vars(actual), vars(expected), where, atol)
    return [] if actual == expected else [f"{where}: {actual!r} != {expected!r}"]
