"""Errors of the tracer.

``Unsupported`` means "this cannot go in a graph": a graph break (or, where breaks are not possible,
an eager fallback). ``kind`` is a short constant, so reasons can be counted; ``user_location`` is
filled in by the translator with the user's file:line and source line. ``BytegraphError`` is what
users see with ``fullgraph=True``; ``InternalError`` marks a bug in bytegraph itself.
"""

from __future__ import annotations

import linecache
from dataclasses import dataclass


@dataclass
class UserLocation:
    filename: str
    lineno: int
    function: str

    @property
    def line(self) -> str:
        return linecache.getline(self.filename, self.lineno).strip()

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno} in {self.function}"


class Unsupported(Exception):
    """Tracing cannot continue here. ``kind`` is a short constant (e.g. ``"print"``,
    ``"data_dependent"``)."""

    def __init__(self, kind: str, detail: str = "", hint: str = "") -> None:
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind = kind
        self.detail = detail
        self.hint = hint
        self.user_stack: list[UserLocation] = []
        #: Set by the innermost ``error_on_graph_break(...)`` region the break happened in: whether
        #: it must raise instead of breaking; None outside any region (the global setting decides).
        self.strict: bool | None = None

    def is_error(self, fullgraph: bool, error_on_graph_break: bool) -> bool:
        """Whether this break must raise: always under ``fullgraph``, else as the innermost
        ``error_on_graph_break`` region (or, outside any, the global setting) says."""
        return fullgraph or (error_on_graph_break if self.strict is None else self.strict)

    @property
    def location(self) -> UserLocation | None:
        return self.user_stack[-1] if self.user_stack else None

    def detach(self) -> Unsupported:
        """Drop the traceback and chained exceptions before keeping this reason in reports: their
        frames hold the translator, its output graph and every object the trace wrapped."""
        self.__traceback__ = None
        self.__cause__ = self.__context__ = None
        return self

    def describe(self) -> str:
        text = str(self)
        if self.location is not None:
            text += f"\n  at {self.location}\n    {self.location.line}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


class PythonError(Unsupported):
    """The traced code raises ``exc`` here, exactly as CPython would (type and arguments). A
    handler in the traced frames catches it (``opcodes/exceptions.py``); otherwise it is a graph
    break and CPython raises it when the instruction runs."""

    def __init__(self, exc: BaseException) -> None:
        super().__init__("python_error", f"{type(exc).__name__}: {exc}")
        self.exc = exc


class TracedException(Exception):  # noqa: N818 (control flow, not an error)
    """An exception raised in the trace and caught by a handler of a traced frame: unwinds the
    translators up to that frame. ``exc`` is its ``ExceptionVariable``."""

    def __init__(self, exc: object) -> None:
        super().__init__(repr(exc))
        self.exc = exc


class BytegraphError(RuntimeError):
    """A clear, user-facing compile error (e.g. a graph break under ``fullgraph=True``)."""


class InternalError(RuntimeError):
    """A bug in bytegraph: never the user's fault."""


class Rerun(Exception):  # noqa: N818 (a signal to the entry, not an error)
    """Raised by rewritten code whose check on tensor data failed after the graph
    (``deferred_checks``): its entry runs the original code instead."""


class ReturnValue(Exception):  # noqa: N818 (control flow, not an error)
    """Raised by RETURN_VALUE to stop a translator's step loop; carries the returned variable."""

    def __init__(self, value: object) -> None:
        self.value = value


class NumbersAdvance(Exception):  # noqa: N818 (a signal to the driver, not an error)
    """The trace read numbers as constants that its own stores then change (a counter the call
    advances, ``self.steps += 1``): the next identical call would miss its variant. Raised before
    the graph is compiled, once the policy has made them dynamic (``DynamicPolicy.foresee``): the
    driver traces again, reading them symbolically."""

    def __init__(self, exprs: frozenset[str]) -> None:
        super().__init__(", ".join(sorted(exprs)))
        self.exprs = exprs


class TraceTooLong(Exception):  # noqa: N818 (not an Unsupported: no frame may turn it into a break)
    """The whole trace is abandoned (``translator.MAX_TRACE_INSTRUCTIONS``); the driver falls back
    to Python."""
