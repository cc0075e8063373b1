"""Conformance of the tracer's builtin types with CPython: random operation sequences, run by
CPython and through bytegraph, must give the same results, raise the same exceptions and leave the
same objects behind.

A *program* is a function whose body is ``setup`` followed by operations drawn from a list of
templates (``Op``): ``Op("d[{k}] = {v}")`` is a statement, ``Op("d.get({k})", value=True)`` an
expression whose value is recorded, ``raises=True`` wraps it in ``try``/``except`` recording the
exception's type and message instead. Template fields are filled by ``fill(rng)``. The function
returns the recorded values and the objects named in ``finals`` (iterators and views escape the
call this way: ``normalize`` consumes them afterwards, so their position and liveness count).

``check_conformance`` runs ``count`` seeded programs, each once eagerly and once compiled on
copies of the same inputs, and asserts equal normalized outputs. It also asserts that at least
``min_traced`` of the programs ran without any graph break: conformance of code that ran in
Python would prove nothing.
"""

from __future__ import annotations

import copy
import random
import textwrap
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

import bytegraph
from bytegraph.explain import Recorder


@dataclass(frozen=True)
class Op:
    template: str
    value: bool = False  #: an expression whose value is recorded
    raises: bool = False  #: may raise: recorded as ("error", type, message)


Filler = Callable[[random.Random], dict[str, Any]]


def program_source(ops: list[Op], fields: list[dict[str, Any]], setup: str, finals: str) -> str:
    lines = ["def prog(x, inp):", textwrap.indent(setup.strip(), "    "), "    out = []"]
    for op, values in zip(ops, fields, strict=True):
        text = op.template.format(**values)
        line = f"out.append({text})" if op.value else text
        if op.raises:
            lines += [
                "    try:",
                f"        {line}",
                "    except Exception as e:",
                "        out.append(('error', type(e).__name__, str(e)))",
            ]
        else:
            lines.append(f"    {line}")
    lines.append(f"    return out, ({finals},)")
    return "\n".join(lines) + "\n"


def normalize(value: Any, depth: int = 0) -> Any:
    """A comparable snapshot: tensors by dtype and values, containers by type and items (in
    order), iterators and views by what they still yield (consuming iterators)."""
    assert depth < 20
    if isinstance(value, torch.Tensor):
        return ("tensor", str(value.dtype), tuple(value.shape), value.tolist())
    if isinstance(value, dict):
        return (type(value).__name__, [(k, normalize(v, depth + 1)) for k, v in value.items()])
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [normalize(v, depth + 1) for v in value])
    if isinstance(value, (set, frozenset)):
        return (type(value).__name__, sorted(map(repr, value)))
    if isinstance(value, (str, bytes, int, float, bool, type(None), range, slice)):
        return value
    if hasattr(value, "__next__") or type(value).__name__.startswith("dict_"):
        items = []
        try:
            for item in value:
                items.append(normalize(item, depth + 1))
        except Exception as e:  # noqa: BLE001 (a dict that changed size: CPython's error)
            items.append(("error", type(e).__name__, str(e)))
        return (type(value).__name__, items)
    return ("other", type(value).__name__, repr(value))


def check_conformance(
    ops: list[Op],
    fill: Filler,
    *,
    setup: str,
    finals: str,
    make_input: Callable[[], Any] = lambda: None,
    count: int = 30,
    length: int = 12,
    seed: int = 0,
    min_traced: float = 0.8,
    namespace: dict[str, Any] | None = None,
) -> None:
    rng = random.Random(seed)
    traced = 0
    for number in range(count):
        chosen = [rng.choice(ops) for _ in range(length)]
        source = program_source(chosen, [fill(rng) for _ in chosen], setup, finals)
        scope: dict[str, Any] = {"torch": torch, **(namespace or {})}
        exec(compile(source, f"<conformance program {number}>", "exec"), scope)  # noqa: S102
        prog = scope["prog"]
        x = torch.arange(1.0, 4.0)
        inp = make_input()
        expected = _outcome(prog, x, copy.deepcopy(inp))
        bytegraph.reset()
        recorder = Recorder()
        with recorder, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            actual = _outcome(bytegraph.compile(prog, backend="eager"), x, copy.deepcopy(inp))
        assert actual == expected, (
            f"program {number} differs from CPython:\n{source}\n"
            f"CPython:   {expected!r}\nbytegraph: {actual!r}"
        )
        traced += recorder.report().graph_break_count == 0
    assert traced >= min_traced * count, f"only {traced} of {count} programs traced without a break"


def _outcome(fn: Callable[..., Any], x: torch.Tensor, inp: Any) -> Any:
    try:
        out, finals = fn(x, inp)
    except Exception as e:  # noqa: BLE001 (compared with CPython's)
        return ("raised", type(e).__name__, str(e))
    return normalize(out), normalize(finals), normalize(inp)
