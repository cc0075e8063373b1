"""Parity corpus: everyday PyTorch idioms run eagerly, through bytegraph and through torch.compile,
compared on everything a program can observe.

A case is a *factory* registered with ``@case``: each call builds a fresh world (function, objects,
closures, modules) and returns a ``Setup``. Every engine gets its own world, so side effects on
objects the function reaches are compared without any reset::

    @case("contexts", graphs=1, breaks=0, tc_breaks=0)
    def autocast_bf16():
        def fn(x):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return x @ x.T
        return Setup(fn, lambda: (torch.randn(4, 4),))

``run_eager``/``run_bytegraph``/``run_torch_compile`` call the function ``CALLS`` times on fresh,
seeded inputs and record per call an ``Observation``: the result, the exception (type and message)
if one was raised, the arguments after the call (in-place changes), ``setup.observe()`` (objects,
globals, optimizer state) and torch's global state (grad and inference mode, autocast per device,
default dtype and device, deterministic algorithms, torch function modes, the RNG state byte for
byte).
``compare`` checks tensors on values AND dtype, shape, device, layout, ``requires_grad`` and
``.grad``; everything else on type and value, plain objects attribute by attribute.

``tests/corpus/test_corpus.py`` asserts bytegraph's counts per case; ``benchmarks/parity.py`` prints
bytegraph beside torch.compile.
"""

from __future__ import annotations

import contextlib
import copy
import enum
import hashlib
import math
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

import bytegraph
from bytegraph.explain import Recorder

#: Calls per engine: the first traces; the later ones must hit the cache (no new trace).
CALLS = 4


@dataclass
class Setup:
    """One fresh world of a case."""

    fn: Callable[..., Any]  #: what gets compiled
    inputs: Callable[[], tuple] = tuple  #: fresh positional arguments, called once per call
    observe: Callable[[], Any] | None = None  #: state to compare after each call (side effects)
    kwargs: Callable[[], dict] | None = None  #: fresh keyword arguments, if any


@dataclass
class Case:
    name: str
    category: str
    factory: Callable[[], Setup]
    graphs: int  #: graphs bytegraph compiles on the first call
    breaks: int  #: graph breaks (fallbacks included) bytegraph takes on the first call
    tc_breaks: int  #: graph breaks torch.compile 2.13 counts (measured by benchmarks/parity.py)
    retraces: int = 0  #: traces bytegraph starts after the first call (expected 0)
    why: str = ""  #: where breaks > tc_breaks or retraces > 0: the reason, stated
    atol: float | None = None  #: for cases whose compiled arithmetic may round differently


CASES: dict[str, Case] = {}


def case(
    category: str,
    *,
    graphs: int,
    breaks: int,
    tc_breaks: int,
    retraces: int = 0,
    why: str = "",
    atol: float | None = None,
) -> Callable[[Callable[[], Setup]], Callable[[], Setup]]:
    """Register a case factory under its function name (which must be unique)."""

    def register(factory: Callable[[], Setup]) -> Callable[[], Setup]:
        name = factory.__name__
        assert name not in CASES, f"duplicate corpus case {name}"
        if breaks > tc_breaks or retraces:
            assert why, f"{name}: say why bytegraph breaks more or retraces"
        CASES[name] = Case(name, category, factory, graphs, breaks, tc_breaks, retraces, why, atol)
        return factory

    return register


# -- observing -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class RngState:
    """torch's CPU generator state, compared byte for byte (printed as a digest)."""

    data: bytes

    def __repr__(self) -> str:
        return f"RngState(sha1 {hashlib.sha1(self.data).hexdigest()[:12]})"


def global_state() -> dict[str, Any]:
    """torch's process-wide state a compiled call must leave exactly as eager does."""
    state: dict[str, Any] = {
        "grad": torch.is_grad_enabled(),
        "inference": torch.is_inference_mode_enabled(),
        "default_dtype": torch.get_default_dtype(),
        "default_device": str(torch.get_default_device()),
        "deterministic": torch.are_deterministic_algorithms_enabled(),
        "function_modes": torch._C._len_torch_function_stack(),
        "anomaly": torch.is_anomaly_enabled(),
        "rng": RngState(torch.random.get_rng_state().numpy().tobytes()),
    }
    for device in ("cpu", "cuda"):
        state[f"autocast_{device}"] = (
            torch.is_autocast_enabled(device),
            torch.get_autocast_dtype(device),
        )
    state["autocast_cache"] = torch.is_autocast_cache_enabled()
    return state


@dataclass
class Observation:
    result: Any = None
    error: tuple[str, str] | None = None
    args: Any = None
    observed: Any = None
    state: dict[str, Any] = field(default_factory=dict)


@dataclass
class Run:
    """What one engine did over ``CALLS`` calls."""

    calls: list[Observation]
    graphs: int = 0  #: graphs compiled during the first call
    breaks: int = 0  #: breaks (fallbacks included) during the first call
    fell_back: list[str] = field(default_factory=list)  #: reasons the first call ran in Python
    retraces: int = 0  #: traces started after the first call
    crash: str | None = None  #: the engine itself failed (not the user's code)


def _call(setup: Setup, fn: Callable[..., Any], call: int) -> Observation:
    torch.manual_seed(call)
    args = setup.inputs()
    kwargs = setup.kwargs() if setup.kwargs is not None else {}
    torch.manual_seed(1000 + call)
    obs = Observation()
    try:
        obs.result = _snapshot(fn(*args, **kwargs))
    except Exception as e:  # noqa: BLE001 (compared with eager's)
        obs.error = (type(e).__name__, str(e))
    obs.state = global_state()
    obs.args = _snapshot((args, kwargs))
    obs.observed = _snapshot(setup.observe()) if setup.observe is not None else None
    return obs


@contextlib.contextmanager
def _clean_global_state():
    """Each run starts from eager's defaults, whatever an earlier (wrong) run left behind."""
    saved = global_state()
    try:
        yield
    finally:
        torch._C._set_grad_enabled(saved["grad"])
        torch.set_default_dtype(saved["default_dtype"])
        torch.set_default_device(
            None if saved["default_device"] == "cpu" else saved["default_device"]
        )
        torch.use_deterministic_algorithms(saved["deterministic"])
        torch.set_anomaly_enabled(saved["anomaly"])
        for device in ("cpu", "cuda"):
            torch.set_autocast_enabled(device, saved[f"autocast_{device}"][0])
            torch.set_autocast_dtype(device, saved[f"autocast_{device}"][1])
        while torch._C._len_torch_function_stack() > saved["function_modes"]:
            torch._C._pop_torch_function_stack()


def _world(c: Case) -> Setup:
    """A fresh world, built under a fixed seed (so every engine gets the same parameters)."""
    torch.manual_seed(12345)
    return c.factory()


def run_eager(c: Case) -> Run:
    setup = _world(c)
    with _clean_global_state():
        return Run([_call(setup, setup.fn, i) for i in range(CALLS)])


def run_bytegraph(c: Case, *, speculate: bool = False) -> Run:
    """bytegraph on a fresh world. The recorded counts are those of ``speculate=False`` (a branch
    on tensor data breaks, as in torch.compile), whatever the configured default."""
    bytegraph.reset()
    setup = _world(c)
    recorder = Recorder()
    with _clean_global_state(), bytegraph.config.patch(speculate=speculate):
        compiled = bytegraph.compile(setup.fn, backend="eager")
        calls = []
        with warnings.catch_warnings(), recorder:
            warnings.filterwarnings("ignore", message="bytegraph: ")
            for i in range(CALLS):
                before = len(recorder.records)
                calls.append(_call(setup, compiled, i))
                if i == 0:
                    first = recorder.report()
                    run = Run(calls, first.graph_count, first.graph_break_count)
                    run.fell_back = [r.reason for r in first.break_reasons if r.fell_back]
                else:
                    run.retraces += len(recorder.records) - before
    internal = [r for r in run.fell_back if r.startswith("internal_error")]
    if internal:
        run.crash = internal[0]
    return run


def run_torch_compile(c: Case) -> Run:
    """torch.compile(backend="eager") on a fresh world. Breaks are Dynamo's own count of graph
    breaks (``torch._dynamo.utils.counters["graph_break"]``) during the first call: ``explain``'s
    ``graph_break_count`` is ``graph_count - 1`` (a break whose second part compiles nothing, or
    one that makes Dynamo skip the frame, counts 0 there)."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    setup = _world(c)
    counter = _GraphCounter()
    with _clean_global_state(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = torch.compile(setup.fn, backend=counter)
        calls = []
        for i in range(CALLS):
            calls.append(_call(setup, compiled, i))
            if i == 0:
                first_graphs = counter.count
                first_breaks = sum(counters["graph_break"].values())
        run = Run(calls, first_graphs, first_breaks, retraces=counter.count - first_graphs)
    torch._dynamo.reset()
    counters.clear()
    return run


class _GraphCounter:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
        self.count += 1
        return gm.forward


# -- comparing -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class TensorSnapshot:
    value: torch.Tensor
    dtype: torch.dtype
    shape: tuple[int, ...]
    device: str
    layout: torch.layout
    requires_grad: bool
    grad: Any


@dataclass(frozen=True)
class ObjectSnapshot:
    cls: str  #: qualified name: each world of a case may define its own class
    attrs: dict[str, Any]


def _snapshot(value: Any, depth: int = 0) -> Any:
    """A deep copy of what can be observed of ``value`` (tensors detached, objects by attribute)."""
    if depth > 12:
        return "<deep>"
    if isinstance(value, torch.Tensor):
        dense = value.detach()
        if dense.layout != torch.strided:
            dense = dense.to_dense()
        grad = None
        if value.is_leaf and value.grad is not None:  # .grad of a non-leaf warns (and is None)
            grad = _snapshot(value.grad, depth + 1)
        return TensorSnapshot(
            dense.clone(),
            value.dtype,
            tuple(value.shape),
            str(value.device),
            value.layout,
            value.requires_grad,
            grad,
        )
    if isinstance(value, np.ndarray):  # compared as a tensor of its values, dtype and shape
        return ("ndarray", _snapshot(torch.from_numpy(np.array(value, copy=True)), depth + 1))
    if isinstance(value, (list, tuple)) and type(value) in (list, tuple):
        return type(value)(_snapshot(v, depth + 1) for v in value)
    if isinstance(value, dict) and type(value) is dict:
        return {k: _snapshot(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return value.copy()
    if isinstance(value, torch.optim.Optimizer):
        state = {i: _snapshot(s, depth + 1) for i, s in enumerate(value.state.values())}
        groups = [
            {k: _snapshot(v, depth + 1) for k, v in g.items() if k != "params"}
            for g in value.param_groups
        ]
        return ObjectSnapshot(_name(type(value)), {"state": state, "param_groups": groups})
    if isinstance(value, torch.nn.Module):
        return ObjectSnapshot(
            _name(type(value)),
            {
                "state": _snapshot(dict(value.state_dict(keep_vars=True)), depth + 1),
                "training": value.training,
            },
        )
    if isinstance(value, (int, float, complex, str, bytes, bool, type(None), enum.Enum)):
        return value
    if isinstance(value, (torch.dtype, torch.device, torch.Size, range, slice)):
        return value
    if isinstance(value, type):
        return ("class", _name(value))
    if isinstance(value, tuple):  # namedtuple and other tuple subclasses
        return (_name(type(value)), tuple(_snapshot(v, depth + 1) for v in value))
    if isinstance(value, dict):
        return (_name(type(value)), {k: _snapshot(v, depth + 1) for k, v in value.items()})
    if isinstance(value, list):
        return (_name(type(value)), [_snapshot(v, depth + 1) for v in value])
    if isinstance(value, types.FunctionType):
        return ("function", value.__qualname__)
    attrs = _attributes(value)
    if attrs is not None:
        return ObjectSnapshot(
            _name(type(value)), {k: _snapshot(v, depth + 1) for k, v in attrs.items()}
        )
    try:
        return copy.deepcopy(value)
    except Exception:  # noqa: BLE001
        return ("opaque", _name(type(value)))


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _attributes(value: Any) -> dict[str, Any] | None:
    attrs: dict[str, Any] = {}
    if hasattr(value, "__dict__"):
        attrs.update(vars(value))
    for klass in type(value).__mro__:
        for slot in getattr(klass, "__slots__", ()):
            if isinstance(slot, str) and hasattr(value, slot) and slot not in ("__dict__",):
                attrs[slot] = getattr(value, slot)
    if not attrs and not hasattr(value, "__dict__"):
        return None
    return attrs


def differences(actual: Run, expected: Run, atol: float | None = None) -> list[str]:
    """Every observable difference of ``actual`` from ``expected`` (eager), per call."""
    found: list[str] = []
    for i, (a, e) in enumerate(zip(actual.calls, expected.calls, strict=True)):
        for part in ("error", "result", "args", "observed", "state"):
            diff = _diff(getattr(a, part), getattr(e, part), part, atol)
            if diff:
                found.append(f"call {i}: {diff}")
    return found


def _diff(a: Any, e: Any, where: str, atol: float | None) -> str | None:
    if isinstance(e, TensorSnapshot):
        if not isinstance(a, TensorSnapshot):
            return f"{where}: {type(a).__name__} instead of a tensor"
        for attr in ("dtype", "shape", "device", "layout", "requires_grad"):
            if getattr(a, attr) != getattr(e, attr):
                return f"{where}.{attr}: {getattr(a, attr)} != {getattr(e, attr)}"
        try:
            kwargs = {} if atol is None else {"atol": atol, "rtol": atol}
            torch.testing.assert_close(a.value, e.value, equal_nan=True, **kwargs)
        except AssertionError as err:
            return f"{where}: values differ: {str(err).splitlines()[0]}"
        return _diff(a.grad, e.grad, f"{where}.grad", atol)
    if type(a) is not type(e):
        return f"{where}: {type(a).__name__} != {type(e).__name__} ({a!r} vs {e!r})"
    if isinstance(e, (list, tuple)):
        if len(a) != len(e):
            return f"{where}: length {len(a)} != {len(e)}"
        for i, (x, y) in enumerate(zip(a, e, strict=True)):
            d = _diff(x, y, f"{where}[{i}]", atol)
            if d:
                return d
        return None
    if isinstance(e, dict):
        if list(a) != list(e):
            return f"{where}: keys {list(a)} != {list(e)}"
        for k in e:
            d = _diff(a[k], e[k], f"{where}[{k!r}]", atol)
            if d:
                return d
        return None
    if isinstance(e, ObjectSnapshot):
        if a.cls != e.cls:
            return f"{where}: {a.cls} != {e.cls}"
        return _diff(a.attrs, e.attrs, f"{where}.", atol)
    if isinstance(e, float) and isinstance(a, float):
        if math.isnan(e) and math.isnan(a):
            return None
        if atol is not None and abs(a - e) <= atol * (1 + abs(e)):
            return None
    try:
        same = bool(a == e)
    except Exception:  # noqa: BLE001
        same = False
    return None if same else f"{where}: {a!r} != {e!r}"


def load_all() -> dict[str, Case]:
    """Import every ``cases_*.py`` module beside this one (registration happens on import)."""
    import importlib
    import pkgutil
    from pathlib import Path

    folder = Path(__file__).parent
    for info in sorted(pkgutil.iter_modules([str(folder)]), key=lambda m: m.name):
        if info.name.startswith("cases_"):
            importlib.import_module(f"corpus.{info.name}")
    return CASES
