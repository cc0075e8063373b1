"""Turning bytegraph's log artifacts on and off: ``BYTEGRAPH_LOGS`` (read at import), ``set_logs``.

Each artifact is a ``logging`` logger named ``bytegraph.<artifact>``; the layers below log to it and
know nothing of this module (``tracer/driver.py``: graph_code, graph_breaks, guards, recompiles;
``tracer/breaks/speculation.py``: speculation, each miss of a speculated branch;
``backends/triton``: output_code, fusion). The one artifact produced here is ``bytecode``: a driver
listener that logs the original and rewritten bytecode of every function it installs.

    BYTEGRAPH_LOGS=graph_code,+guards python train.py  # +name: DEBUG level; "all": every artifact
    >>> bytegraph.set_logs("graph_breaks,recompiles")  # the same from Python; set_logs("") = off

Enabled artifacts print to ``sys.stderr`` as ``[bytegraph.<artifact>] message``. With nothing
enabled the loggers are left alone, so ordinary ``logging`` configuration (or ``caplog``) works.
"""

from __future__ import annotations

import dis
import logging
import os
import sys
import warnings
from typing import Any

from .tracer import driver

#: Every artifact name ``set_logs`` accepts (logger ``bytegraph.<name>``).
ARTIFACTS = (
    "graph_code",
    "graph_breaks",
    "guards",
    "recompiles",
    "bytecode",
    "output_code",
    "fusion",
    "speculation",
)

bytecode_log = logging.getLogger("bytegraph.bytecode")
_root = logging.getLogger("bytegraph")


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time of the record (so capture tools see it)."""

    def __init__(self) -> None:
        logging.Handler.__init__(self)

    @property
    def stream(self) -> Any:  # type: ignore[override]
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


_handler = _StderrHandler()
_handler.setFormatter(logging.Formatter("[%(name)s] %(message)s"))


def parse(spec: str) -> dict[str, int]:
    """``"graph_code,+guards"`` -> ``{"graph_code": INFO, "guards": DEBUG}``; unknown ones raise."""
    levels: dict[str, int] = {}
    for token in (t.strip() for t in spec.split(",")):
        if not token:
            continue
        level = logging.DEBUG if token.startswith("+") else logging.INFO
        name = token.lstrip("+")
        if name == "all":
            levels.update(dict.fromkeys(ARTIFACTS, level))
        elif name in ARTIFACTS:
            levels[name] = level
        else:
            known = ", ".join(("all",) + ARTIFACTS)
            raise ValueError(f"unknown bytegraph log artifact {name!r}; known: {known}")
    return levels


def set_logs(spec: str = "") -> dict[str, int]:
    """Enable exactly the artifacts in ``spec`` (comma list, ``+name`` for DEBUG, ``all``), turning
    every other artifact off; ``set_logs("")`` restores plain ``logging`` behaviour. Returns the
    levels.

    >>> bytegraph.set_logs("graph_code,+recompiles")
    {'graph_code': 20, 'recompiles': 10}
    """
    levels = parse(spec)
    for name in ARTIFACTS:
        logging.getLogger(f"bytegraph.{name}").setLevel(levels.get(name, logging.NOTSET))
    if levels:
        _root.setLevel(logging.WARNING)  # artifacts left NOTSET inherit this: they stay quiet
        if _handler not in _root.handlers:
            _root.addHandler(_handler)
        _root.propagate = False  # printed once, by our handler, not again by the root logger's
    else:
        _root.setLevel(logging.NOTSET)
        _root.removeHandler(_handler)
        _root.propagate = True
    return levels


def log_bytecode(state: driver.CompiledCode, event: driver.CompileEvent) -> None:
    """Driver listener: log the original and rewritten bytecode (and decompiled source, where
    ``depyf`` is installed) of each function installed."""
    if event.fn is None or not bytecode_log.isEnabledFor(logging.INFO):
        return
    original, rewritten = state.fn.__code__, event.fn.__code__
    where = f"{original.co_filename}:{original.co_firstlineno}"
    text = [
        f"ORIGINAL BYTECODE {original.co_qualname} {where}",
        dis.Bytecode(original).dis(),
        f"MODIFIED BYTECODE {rewritten.co_qualname} ({event.reason})",
        dis.Bytecode(rewritten).dis(),
    ]
    source = _decompile(rewritten)
    if source:
        text += ["DECOMPILED SOURCE", source]
    bytecode_log.info("%s", "\n".join(text))


def _decompile(code: Any) -> str:
    try:
        import depyf  # optional and heavy: only looked for when the bytecode artifact is on
    except ImportError:
        return ""
    try:
        return depyf.decompile(code)
    except Exception as e:  # a decompiler failure must not break compilation
        return f"(depyf could not decompile {code.co_name}: {type(e).__name__}: {e})"


def _from_environment() -> None:
    spec = os.environ.get("BYTEGRAPH_LOGS", "")
    if not spec:
        return
    try:
        set_logs(spec)
    except ValueError as e:
        warnings.warn(f"BYTEGRAPH_LOGS ignored: {e}", stacklevel=2)


if log_bytecode not in driver.LISTENERS:
    driver.LISTENERS.append(log_bytecode)
_from_environment()
