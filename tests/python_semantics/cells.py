"""One cell of the matrix: an operation's form, a value kind and a placement, as a generated
function beside a tensor op; how it runs in CPython, through bytegraph and through torch.compile,
and how the runs are compared.

The generated function (``source``) computes ``y = x + 1`` (so that there is a graph), runs the
form on containers read from globals (``G_D``), from an attribute of a global object (``H.D``),
built in the function (``D = {V: 'a', 'b': V}``) or passed as arguments (``arg``), and returns
``y``, the result ``r`` and the containers. A cell that takes arguments (the ``arg`` placement, a
``passed`` kind) is called first with other ones (the containers around ``'zz'``, the kind's
``variants``), then with its own, whose outcome is compared; then, everything put back, once more
with equal arguments, which must not compile again (verdict ``recompiled``). Where CPython
raises, the form runs inside ``try``/``except`` that records the exception's type and message
instead (only there: a ``try`` block is itself something a tracer may break on).

``run(cell)`` runs CPython first, then bytegraph on fresh containers holding the same values
(kind values and receivers are restored between runs), and returns an ``Outcome``: the verdict,
bytegraph's break count and, for a wrong cell, where the outcomes differ. Verdicts: ``clean`` (as
CPython, no break), ``breaking`` (as CPython, with breaks or a fallback), ``wrong`` (a different
result, identity, exception or mutation), ``crashed`` (an exception CPython did not raise, or an
internal error), and ``order``: a cell that builds a set and differs from CPython only in the
order of items. Its order is a real difference, but CPython's depends on the hashes of strings and
objects, which change from process to process, so it is reported and not gated on.

``normalize`` names every object the cell was given (``("is", "V")``), so that a result CPython
returns unchanged must come back as the same object; ints, floats, complex numbers, strings,
bytes, bools and None compare by value and type only (their identity is not part of the
language).
"""

from __future__ import annotations

import collections
import contextlib
import io
import logging
import re
import signal
import types
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

import bytegraph
from bytegraph.explain import Recorder

from . import catalogue
from .catalogue import CONTAINERS, KIND, RECEIVERS, SCOPE, hashable

PLACEMENTS = ("global", "attr", "local", "arg")
#: What the containers of a cell called with other arguments first hold in that call.
OTHER = "zz"
VALUE_TYPES = (bool, int, float, complex, str, bytes, type(None))
TIMEOUT_S = 10


@dataclass(frozen=True)
class Cell:
    op: str  #: operation id
    form: int  #: index of the form among the operation's forms
    template: str
    kind: str  #: a catalogue kind, or "-" for an operation without one
    placement: str
    receiver: str = ""  #: the type whose receiver ``{R}`` is, for non-container types

    @property
    def id(self) -> str:
        return f"{self.op}#{self.form}/{self.kind}@{self.placement}"


@dataclass
class Outcome:
    verdict: str  #: "clean", "breaking", "wrong", "order", "crashed" or "recompiled"
    breaks: int  #: bytegraph's graph breaks and fallbacks
    detail: str = ""  #: for wrong and crashed cells: what differed
    reasons: tuple[str, ...] = ()  #: bytegraph's break reasons


class _Holder:
    """The object whose attributes hold the containers of the ``attr`` placement."""


# -- values: one object per kind for the whole process, restored between runs ------------------

VALUES: dict[str, Any] = {k.name: k.make() for k in catalogue.KINDS}
RECEIVER_VALUES: dict[str, Any] = {}
for _name, _src in RECEIVERS.items():
    RECEIVER_VALUES[_name] = eval(_src, dict(SCOPE))  # noqa: S307 (our own constant sources)


class _ReceiverClass:
    """The receiver of ``type``'s methods (a class of its own: they may set attributes on it)."""


RECEIVER_VALUES["type"] = _ReceiverClass
SINK = io.StringIO()


def _snapshot(value: Any) -> Any:
    """What ``_restore`` needs to undo a cell's mutations of ``value`` (None: immutable)."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone(), value.requires_grad, dict(vars(value))
    if isinstance(value, (list, dict, set, collections.deque, bytearray)):
        return list(value.items()) if isinstance(value, dict) else list(value)
    if isinstance(value, collections.ChainMap):
        return [(m, _snapshot(m)) for m in value.maps]
    if hasattr(value, "__dict__"):
        return dict(vars(value))
    return None


def _restore(value: Any, snap: Any) -> None:
    if snap is None:
        return
    if isinstance(value, torch.Tensor):
        data, grad, attributes = snap
        with torch.no_grad():
            value.requires_grad_(False)
            value.set_(data.clone())
            value.requires_grad_(grad)
        vars(value).clear()
        vars(value).update(attributes)
    elif isinstance(value, (list, bytearray)):
        value[:] = type(value)(snap)
    elif isinstance(value, collections.Counter):
        value.clear()
        dict.update(value, snap)  # its own ``update`` would count the (key, count) pairs
    elif isinstance(value, (dict, set)):
        value.clear()
        value.update(snap)
    elif isinstance(value, collections.deque):
        value.clear()
        value.extend(snap)
    elif isinstance(value, collections.ChainMap):
        value.maps[:] = [m for m, _ in snap]
        for m, inner in snap:
            _restore(m, inner)
    elif isinstance(value, (type, types.ModuleType)):
        # A class's namespace is read-only and a module's must not be emptied: undo by name.
        for name in set(vars(value)) - set(snap):
            delattr(value, name)
        for name, item in snap.items():
            if vars(value).get(name, _MISSING) is not item and not name.startswith("__"):
                setattr(value, name, item)
    else:
        vars(value).clear()
        vars(value).update(snap)


_MISSING = object()


_SNAPSHOTS = {id(v): (v, _snapshot(v)) for v in [*VALUES.values(), *RECEIVER_VALUES.values()]}


def restore_all() -> None:
    for value, snap in _SNAPSHOTS.values():
        _restore(value, snap)
    for kind in catalogue.KINDS:
        if kind.fresh:
            VALUES[kind.name] = kind.make()
    SINK.seek(0)
    SINK.truncate()


# -- source ----------------------------------------------------------------------------------------


def letters(template: str) -> list[str]:
    return [c for c in (*CONTAINERS, "R") if "{" + c + "}" in template]


def value_source(cell: Cell) -> str:
    """How the body writes the kind's value: the kind's expression where it has one, a literal
    where one exists and the container is built in the body, else ``V`` (a global, or the
    argument of a passed kind)."""
    kind = KIND.get(cell.kind)
    if kind is not None and kind.expr:
        return kind.expr
    if kind is not None and kind.passed:
        return "V"
    literal = kind.literal if kind is not None else None
    return literal if cell.placement == "local" and literal else "V"


def passed(cell: Cell) -> bool:
    return cell.kind != "-" and KIND[cell.kind].passed


def parameters(cell: Cell) -> list[str]:
    """The cell's arguments after ``x``: ``V`` for a passed kind, the containers for ``arg``."""
    names = ["V"] if passed(cell) else []
    if cell.placement == "arg":
        names += [letter for letter in letters(cell.template) if letter != "R"]
    return names


def container_source(cell: Cell, letter: str, v: str) -> str:
    if letter == "R":
        if cell.receiver in ("type", "object"):
            return "G_R"  # one object for all runs: its hash and repr are by identity
        return RECEIVERS[cell.receiver]
    value = VALUES[cell.kind] if cell.kind != "-" else "b"
    return CONTAINERS[letter][1](v, hashable(value))


def source(cell: Cell, guarded: bool) -> str:
    v = value_source(cell)
    used = letters(cell.template)
    lines = [f"def cell({', '.join(['x', *parameters(cell)])}):", "    y = x + 1"]
    refs = {}
    for letter in used:
        if cell.placement == "arg" and letter != "R":
            refs[letter] = letter
        elif cell.placement == "global" or (cell.placement == "arg" and letter == "R"):
            refs[letter] = f"G_{letter}"
        elif cell.placement == "attr":
            refs[letter] = f"H.{letter}"
        else:
            refs[letter] = letter
            lines.append(f"    {letter} = {container_source(cell, letter, v)}")
    statement = cell.template.format(**refs, v=v)
    if guarded:
        lines += [
            "    try:",
            f"        {statement}",
            "    except Exception as e:",
            "        r = ('raised', type(e).__name__, str(e))",
        ]
    else:
        lines.append(f"    {statement}")
    returned = "".join(f"{refs[letter]}, " for letter in used)
    lines.append(f"    return y, r, ({returned})")
    return "\n".join(lines) + "\n"


def scope(cell: Cell) -> dict[str, Any]:
    """The cell's globals: fresh containers around the kind's (restored) value."""
    value = VALUES[cell.kind] if cell.kind != "-" else "b"
    names: dict[str, Any] = {**SCOPE, "V": value, "SINK": SINK}
    names["G_R"] = RECEIVER_VALUES.get(cell.receiver)
    holder = _Holder()
    for module in ("builtins", "operator", "functools", "itertools", "collections", "copy"):
        names[module] = __import__(module)
    for letter in letters(cell.template):
        if letter == "R":
            container = RECEIVER_VALUES[cell.receiver]
        elif cell.placement == "arg":
            continue
        else:
            container = make_container(cell, letter, value)
        if cell.placement in ("global", "arg"):
            names[f"G_{letter}"] = container
        elif cell.placement == "attr":
            setattr(holder, letter, container)
    names["H"] = holder
    return names


def make_container(cell: Cell, letter: str, value: Any) -> Any:
    """A new container of the cell's around ``value``."""
    held = VALUES[cell.kind] if cell.kind != "-" else "b"
    text = CONTAINERS[letter][1]("V", hashable(held) and hashable(value))
    return eval(text, {**SCOPE, "V": value})  # noqa: S307 (our own constant sources)


def arguments(cell: Cell, value: Any) -> list[Any]:
    """The arguments after ``x`` of a call of the cell whose kind's value is ``value``."""
    out = [value] if passed(cell) else []
    if cell.placement == "arg":
        out += [make_container(cell, c, value) for c in letters(cell.template) if c != "R"]
    return out


def calls(cell: Cell) -> list[list[Any]]:
    """The arguments of each call of the cell: the other ones first, its own last."""
    value = VALUES[cell.kind] if cell.kind != "-" else "b"
    if passed(cell):
        firsts = KIND[cell.kind].variants
    elif cell.placement == "arg":
        firsts = (OTHER,)
    else:
        firsts = ()
    return [arguments(cell, first) for first in firsts] + [arguments(cell, value)]


def repeatable(cell: Cell, consumed_only: bool = False) -> bool:
    """The cell's state can be put back as it was before a call: an identical call is defined
    (``consumed_only``: the cell consumes nothing, whether it takes arguments or not)."""
    return (consumed_only or bool(parameters(cell))) and not (
        set(letters(cell.template)) & catalogue.CONSUMED
        or (cell.kind != "-" and KIND[cell.kind].fresh)
    )


# -- normalization ---------------------------------------------------------------------------------

_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
_ITEMS_CAP = 20


def clean_text(text: str) -> str:
    return _ADDRESS.sub("0x?", text)


def normalize(value: Any, names: dict[int, str], depth: int = 0, top: bool = False) -> Any:
    """A comparable snapshot of ``value``; objects named in ``names`` (by id) by their name."""
    if depth > 8:
        return "..."
    if not top and id(value) in names and not isinstance(value, VALUE_TYPES):
        return ("is", names[id(value)])

    def sub(item: Any) -> Any:
        return normalize(item, names, depth + 1)

    kind = type(value)
    if isinstance(value, VALUE_TYPES):
        return (kind.__name__, repr(value))
    if isinstance(value, torch.Tensor):
        return ("tensor", str(value.dtype), tuple(value.shape), value.tolist(), value.requires_grad)
    if isinstance(value, (torch.dtype, torch.device, torch.Size, range, slice)):
        return (kind.__name__, repr(value))
    if isinstance(value, dict):
        return (kind.__qualname__, [(sub(k), sub(v)) for k, v in value.items()])
    if isinstance(value, (list, tuple)):
        return (kind.__qualname__, [sub(v) for v in value])
    if isinstance(value, (set, frozenset)):
        return (kind.__qualname__, sorted((sub(v) for v in value), key=repr))
    if isinstance(value, types.ModuleType):
        return ("module", value.__name__)
    if isinstance(value, type):
        return ("class", value.__module__, value.__qualname__)
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
        return (kind.__name__, getattr(value, "__qualname__", repr(value)))
    if isinstance(value, BaseException):
        return (kind.__qualname__, sub(value.args))
    if hasattr(value, "__next__") or kind.__name__.startswith(("dict_", "odict_")):
        return (kind.__name__, _consume(value, sub))
    if hasattr(value, "__dict__") and not callable(value):
        return (kind.__qualname__, sub(dict(vars(value))))
    try:
        text = repr(value)
    except Exception as e:  # noqa: BLE001 (the repr's failure is its outcome)
        text = f"<repr raised {type(e).__name__}>"
    return (kind.__qualname__, clean_text(text))


def _consume(iterator: Any, sub: Any) -> list[Any]:
    items = []
    try:
        for item in iterator:
            items.append(sub(item))
            if len(items) >= _ITEMS_CAP:
                break
    except Exception as e:  # noqa: BLE001 (a view of a dict that changed size: CPython's error)
        items.append(("raised", type(e).__name__, clean_text(str(e))))
    return items


# -- runs ------------------------------------------------------------------------------------------


class _Timeout(BaseException):  # noqa: N818
    """A cell ran too long (a BaseException: neither the cell's ``except Exception`` nor the
    tracer's fallback may swallow it)."""


def _alarm(signum: int, frame: Any) -> None:
    raise _Timeout(f"cell ran over {TIMEOUT_S}s of CPU time")


def _names(cell: Cell, g: dict[str, Any]) -> dict[int, str]:
    names = {id(RECEIVER_VALUES[cell.receiver]): "R"} if cell.receiver else {}
    for kind, value in VALUES.items():
        names[id(value)] = f"kind:{kind}"
    for key, value in g.items():
        if key.startswith("G_"):
            names[id(value)] = key
    for key, value in vars(g["H"]).items():
        names[id(value)] = f"H.{key}"
    names[id(g["V"])] = "V"
    return names


def observe(
    cell: Cell, fn: Any, g: dict[str, Any], x: torch.Tensor, args: list[Any]
) -> tuple[str, Any]:
    """``("returned", snapshot)`` or ``("raised", (type, message))``: the snapshot holds the
    result, the containers after the call and the kind's value and receiver after the call."""
    names = _names(cell, g)
    for name, arg in zip(parameters(cell), args, strict=True):
        names.setdefault(id(arg), f"argument {name}")
    try:
        y, r, containers = fn(x, *args)
    except _Timeout:
        raise
    except Exception as e:  # noqa: BLE001 (compared with CPython's)
        return "raised", (type(e).__name__, clean_text(str(e)))
    for letter, container in zip(letters(cell.template), containers, strict=True):
        names.setdefault(id(container), f"local {letter}")
    state = [normalize(c, names, top=True) for c in containers]
    state.append(normalize(g["V"], names, top=True))
    if cell.receiver:
        state.append(normalize(RECEIVER_VALUES[cell.receiver], names, top=True))
    state.append(SINK.getvalue())
    result = normalize((y, r), names)
    if not repeatable(cell, consumed_only=True):  # texts may hold addresses of this run's objects
        result, state = _addressless(result), _addressless(state)
    return "returned", (result, state)


def _addressless(value: Any) -> Any:
    """A normalized outcome with the addresses in its texts masked."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, (tuple, list)):
        return type(value)(_addressless(v) for v in value)
    return value


def build(cell: Cell, guarded: bool) -> tuple[Any, dict[str, Any]]:
    restore_all()
    g = scope(cell)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)  # ``a is 'ab'``: what the cell means
        code = compile(source(cell, guarded), f"<cell {cell.id}>", "exec")
    exec(code, g)  # noqa: S102
    return g["cell"], g


def play(cell: Cell, fn: Any, g: dict[str, Any]) -> list[tuple[str, Any]]:
    """The outcome of each of the cell's calls (``calls``), in turn."""
    return [observe(cell, fn, g, torch.ones(2), args) for args in calls(cell)]


def eager(cell: Cell) -> tuple[bool, list[tuple[str, Any]]]:
    """CPython's outcomes, and whether the form must run guarded (CPython raised)."""
    fn, g = build(cell, guarded=False)
    outcomes = play(cell, fn, g)
    if all(outcome[0] == "returned" for outcome in outcomes):
        return False, outcomes
    fn, g = build(cell, guarded=True)
    return True, play(cell, fn, g)


def run(cell: Cell) -> Outcome:
    # CPU time, not wall time: a loaded machine must not turn a slow cell into a crashed one.
    previous = signal.signal(signal.SIGVTALRM, _alarm)
    signal.setitimer(signal.ITIMER_VIRTUAL, TIMEOUT_S)
    try:
        return _run(cell)
    except _Timeout as e:
        return Outcome("crashed", 0, str(e))
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, previous)


def _run(cell: Cell) -> Outcome:
    guarded, expected = eager(cell)
    fn, g = build(cell, guarded)
    recorder = Recorder()
    with recorder, quiet_torch(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # A new function each cell: no cache is shared, so no ``bytegraph.reset()`` is needed
        # (it visits every function compiled so far).
        compiled = bytegraph.compile(fn, backend="eager")
        *firsts, last = calls(cell)
        actuals = [observe(cell, compiled, g, torch.ones(2), args) for args in firsts]
        kept = _state(g)  # as the last call finds it, put back for an identical call
        actuals.append(observe(cell, compiled, g, torch.ones(2), last))
        compiles = len(recorder.records)
        if repeatable(cell):
            for value, snap in kept:
                _restore(value, snap)
            SINK.seek(0)
            SINK.truncate()
            observe(cell, compiled, g, torch.ones(2), calls(cell)[-1])
    report = recorder.report()
    reasons = tuple(clean_text(str(r).splitlines()[0]) for r in report.break_reasons)
    # a break met again by a recompile of a cell called several times is one place
    breaks = len(set(reasons)) if len(actuals) > 1 else len(reasons)
    internal = [r for r in reasons if r.startswith("internal_error")]
    for actual, outcome in zip(actuals, expected, strict=True):
        if actual[0] == "raised" and outcome[0] != "raised":
            return Outcome("crashed", breaks, f"raised {actual[1]}; CPython {outcome}", reasons)
    if internal:
        return Outcome("crashed", breaks, internal[0], reasons)
    if actuals != expected:
        verdict = (
            "order"
            if _hash_ordered(cell) and unordered(actuals) == unordered(expected)
            else "wrong"
        )
        actual, outcome = next((a, e) for a, e in zip(actuals, expected, strict=True) if a != e)
        return Outcome(verdict, breaks, difference(actual, outcome), reasons)
    if len(recorder.records) > compiles:
        failures = recorder.records[-1].event.failures
        return Outcome("recompiled", breaks, f"an identical call recompiled: {failures}", reasons)
    return Outcome("breaking" if breaks else "clean", breaks, "", reasons)


def _state(g: dict[str, Any]) -> list[tuple[Any, Any]]:
    """What a call may change: the kinds' values, the receivers and the containers of the cell's
    globals and holder, each with its snapshot."""
    held = [c for k, c in g.items() if k.startswith("G_")]
    held += [c for k, c in vars(g["H"]).items() if k in CONTAINERS]
    values = [*VALUES.values(), *RECEIVER_VALUES.values(), *held]
    return [(v, _snapshot(v)) for v in {id(v): v for v in values}.values()]


_TORCH_LOGGERS = ("torch._dynamo", "torch._guards", "torch._subclasses.fake_tensor")


@contextlib.contextmanager
def quiet_torch() -> Iterator[None]:
    """torch's logs of graph breaks and of fake-tensor failures, silenced: a cell's outcome and
    counts say what happened. Loggers already silenced (``run_all`` silences them once for all
    cells) are left alone: each ``setLevel`` walks every logger of the process."""
    loggers = [logging.getLogger(name) for name in _TORCH_LOGGERS]
    loggers = [logger for logger in loggers if logger.level != logging.CRITICAL]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def _hash_ordered(cell: Cell) -> bool:
    """The cell builds a set whose iteration order CPython takes from hashes (which change from
    one process to the next for strings and objects)."""
    return (
        bool({"S", "F"} & set(letters(cell.template)))
        or "set" in cell.op
        or ("{0, " in cell.template)
    )


def unordered(value: Any) -> Any:
    """``value`` (a normalized outcome) with the items of every list sorted: equal for two
    outcomes that differ only in the order of items."""
    if isinstance(value, tuple):
        return tuple(unordered(v) for v in value)
    if isinstance(value, list):
        return sorted((unordered(v) for v in value), key=repr)
    return value


def difference(actual: tuple[str, Any], expected: tuple[str, Any]) -> str:
    """Where two outcomes differ: the result ``r`` or the state after the call."""
    if actual[0] != "returned" or expected[0] != "returned":
        return f"bytegraph {actual}\nCPython   {expected}"
    (result, state), (e_result, e_state) = actual[1], expected[1]
    if result[1][1] != e_result[1][1]:
        return f"r: bytegraph {result[1][1]}\n   CPython   {e_result[1][1]}"
    if result != e_result:
        return f"y, r: bytegraph {result}\n      CPython   {e_result}"
    return f"state after: bytegraph {state}\n             CPython   {e_state}"


def dynamo_breaks(cell: Cell) -> int:
    """torch.compile's graph breaks for the cell (``torch._dynamo.explain``; -1 where it ran the
    whole call in Python, -2 where it raised)."""
    import torch._dynamo

    guarded, _ = eager(cell)
    fn, _ = build(cell, guarded)
    torch._dynamo.reset()
    reports = []
    try:
        with quiet_torch(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for args in calls(cell):
                reports.append(torch._dynamo.explain(fn)(torch.ones(2), *args))
    except Exception:  # noqa: BLE001 (recorded as its own count)
        return -2
    finally:
        torch._dynamo.reset()
    if reports[-1].graph_count == 0:
        return -1
    # Its ``graph_break_count`` counts graphs after the first, so a break with no tensor op after
    # it would count 0: count the breaks themselves, as bytegraph does (one per place).
    places = {
        (r.reason, tuple((f.filename, f.lineno) for f in r.user_stack))
        for report in reports
        for r in report.break_reasons
        if r.graph_break
    }
    return len(places)
