"""Structured records of every compile, for the HTML report (``report.py``).

``BYTEGRAPH_TRACE_DIR=dir python train.py`` (read at import) or ``start(dir)`` appends one JSON
line per compile event to ``dir/bytegraph-<pid>.jsonl``; ``read_dir(dir)`` reads every process's
records back and ``in_process()`` makes the same records from the compiled functions alive now.
A record is self-contained: the function (name, file:line, source, settings), the entry's graphs
(FX code), guards and the guard function, breaks with their user stacks and source context,
recompile reasons, original and rewritten bytecode, kernel sources and timings::

    {"type": "compile", "function": {"serial": 0, "root": 0, "name": "fn", ...}, "index": 0,
     "reason": "first call", "graphs": [{"name": "__compiled_fn_0", "code": "..."}], ...}
"""

from __future__ import annotations

import dis
import functools
import inspect
import json
import linecache
import os
import threading
from pathlib import Path
from typing import Any

from .tracer import driver
from .tracer.exc import Unsupported

#: Lines of source shown around each location a break or function points at.
CONTEXT_LINES = 4
#: Longest function source kept in a record.
MAX_SOURCE_LINES = 400
ENV_VAR = "BYTEGRAPH_TRACE_DIR"


def compile_record(state: driver.CompiledCode, event: driver.CompileEvent, index: int) -> dict:
    """The JSON-ready record of ``event``, the ``index``-th compile of ``state``."""
    rewritten = event.fn.__code__ if event.fn is not None else None
    return {
        "type": "compile",
        "pid": os.getpid(),
        "function": function_record(state),
        "index": index,
        "when": event.when,
        "reason": event.reason,
        "failures": list(event.failures),
        "graphs": [
            {"name": type(gm).__name__, "code": gm.code.strip(), "ops": ops}
            for gm, ops in zip(event.graphs, event.ops, strict=False)
        ],
        "guards": event.guards,
        "guard_function": state.cache.guard_source,
        "breaks": [break_record(e) for e in event.breaks],
        "speculated": [speculation_record(site) for site in event.speculated],
        "fallback": break_record(event.unsupported) if event.unsupported is not None else None,
        "bytecode": {
            "original": _dis(state.fn.__code__),
            "rewritten": _dis(rewritten) if rewritten is not None else "",
        },
        "kernels": [k for compiled in event.compiled for k in kernel_records(compiled)],
        "timings": {
            "trace_s": event.trace_s,
            "backend_s": event.backend_s,
            "guard_us": event.guard_us,
        },
    }


def function_record(state: driver.CompiledCode) -> dict:
    code = state.fn.__code__
    settings = state.settings
    return {
        "serial": state.serial,
        "root": state.root_serial,
        "name": settings.name or state.fn.__qualname__,
        "qualname": state.fn.__qualname__,
        "filename": code.co_filename,
        "lineno": code.co_firstlineno,
        "source": _source(state.fn),
        "settings": {
            "backend": _backend_name(settings.backend),
            "mode": settings.mode,
            "options": {k: repr(v) for k, v in settings.options.items()},
            "fullgraph": settings.fullgraph,
            "dynamic": settings.dynamic,
        },
    }


def break_record(e: Unsupported) -> dict:
    return {
        "kind": e.kind,
        "detail": e.detail,
        "reason": str(e),
        "hint": e.hint,
        "stack": [
            {
                "filename": loc.filename,
                "lineno": loc.lineno,
                "function": loc.function,
                "line": loc.line,
                "context": _context(loc.filename, loc.lineno),
            }
            for loc in e.user_stack
        ],
    }


def speculation_record(site: Any) -> dict:
    """A branch on tensor data the trace speculated on, with its counts when recorded."""
    return {
        "filename": site.filename,
        "lineno": site.lineno,
        "function": site.function,
        "line": site.line,
        "hits": site.hits,
        "misses": site.misses,
        "disabled": site.disabled,
    }


def kernel_records(compiled: Any) -> list[dict]:
    """Generated code a backend's result shows: the triton backend's graphs (wrapper and kernels)
    or any result with a ``source`` string. Backward graphs appear once they are compiled."""
    records = []
    for graph in getattr(compiled, "graphs", None) or []:
        kernels = getattr(graph, "kernels", None) or []
        records.append(
            {
                "name": getattr(graph, "name", type(graph).__name__),
                "wrapper": getattr(graph, "source", "") or "",
                "kernels": [{"name": k.name, "source": k.source} for k in kernels],
            }
        )
    if not records and isinstance(getattr(compiled, "source", None), str):
        records.append({"name": type(compiled).__name__, "wrapper": compiled.source, "kernels": []})
    return records


def in_process() -> list[dict]:
    """Records of every compile event of the compiled functions alive now (oldest first)."""
    records = [
        compile_record(state, event, i)
        for state in list(driver.ALL)
        for i, event in enumerate(list(state.events))
    ]
    return sorted(records, key=lambda r: (r["when"], r["function"]["serial"]))


def read_dir(path: str | os.PathLike) -> list[dict]:
    """Every record in ``path`` (all processes' files), oldest first; a malformed line (a process
    killed mid-write) is skipped."""
    records = []
    for file in sorted(Path(path).glob("bytegraph-*.jsonl")):
        for line in file.read_text(encoding="utf-8").splitlines():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return sorted(records, key=lambda r: (r.get("when", 0), r["function"]["serial"]))


class TraceDir:
    """A driver listener appending each compile's record to ``dir/bytegraph-<pid>.jsonl``."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.lock = threading.Lock()

    def __call__(self, state: driver.CompiledCode, event: driver.CompileEvent) -> None:
        index = len(state.events) - 1
        line = json.dumps(compile_record(state, event, index), default=repr)
        with self.lock, open(self.file, "a", encoding="utf-8") as out:
            out.write(line + "\n")

    @property
    def file(self) -> Path:
        return self.path / f"bytegraph-{os.getpid()}.jsonl"  # a forked child writes its own


_active: TraceDir | None = None


def start(path: str | os.PathLike) -> TraceDir:
    """Record every compile from now on under ``path`` (replacing a previous ``start``)."""
    global _active
    stop()
    _active = TraceDir(path)
    driver.LISTENERS.append(_active)
    return _active


def stop() -> None:
    global _active
    if _active is not None and _active in driver.LISTENERS:
        driver.LISTENERS.remove(_active)
    _active = None


def active_dir() -> Path | None:
    return _active.path if _active is not None else None


def _dis(code: Any) -> str:
    return dis.Bytecode(code).dis()


def _source(fn: Any) -> dict | None:
    """The function's source as ``{"lineno": first line, "lines": [...]}``, if it has a file."""
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return None
    return {"lineno": first, "lines": [line.rstrip("\n") for line in lines[:MAX_SOURCE_LINES]]}


def _context(filename: str, lineno: int) -> list[list[Any]]:
    """``[[lineno, text], ...]`` around ``lineno``, as far as the file has lines."""
    start = max(1, lineno - CONTEXT_LINES)
    rows = []
    for n in range(start, lineno + CONTEXT_LINES + 1):
        text = linecache.getline(filename, n)
        if not text and n > lineno:
            break
        rows.append([n, text.rstrip("\n")])
    return rows


def _backend_name(backend: Any) -> str:
    while isinstance(backend, functools.partial):
        backend = backend.func
    return getattr(backend, "__name__", None) or type(backend).__name__


if os.environ.get(ENV_VAR):
    start(os.environ[ENV_VAR])
