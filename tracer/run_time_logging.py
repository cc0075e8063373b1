"""Calls into ``logging`` the program makes, emitted by every compiled call as eager's call emits.

A logger's level methods (``logger.info(msg, *args)``, ``debug``, ``warning``, ``error``,
``critical``, ``log(level, msg, *args)``) first ask ``isEnabledFor(level)``, an answer made of the
logger's ``disabled`` flag, its effective level, ``manager.disable`` and its ``_cache``: the trace
asks the real logger and guards the answer (``enabled``), so a level changed between calls
(``setLevel``, ``logging.disable``) makes the next call find another variant. A disabled call is
nothing. An enabled one is the record ``Logger._log`` makes, handled by the compiled call after
its graph (``SideEffects.call_after``, in order with the other calls kept there, before the
instruction a graph break runs in Python, a ``print``): ``_emit``, which makes it with
``makeRecord`` and gives it to ``handle`` as ``_log`` does, naming the frame ``findCaller`` names
in eager, the innermost frame of the trace that is not logging's own (a frame of generated code
would name the wrong line), so handlers, filters and ``propagate`` see the record eager's call
gives them. Only a message and arguments the trace knows the values of are kept
(``emit_later``), copied as they are at the call; any other form (a tensor's value, ``exc_info``,
``extra``, ``stack_info``, a ``stacklevel`` naming a caller, a message its arguments do not
format) runs in Python. A handler runs after the stores of the graph's code are made, so the
record is kept only where every handler it reaches is logging's own (or pytest's capture), with
their own formatters and no filters (``known_handlers``, guarded): code that reads and changes
nothing of the program's. A handler of the user's could read or change what the program changes
in that code (a list both append to) and would see it as the graph leaves it: such a call runs in
Python.

Entry points: ``LEVEL_METHODS``, ``plain_logger``, ``enabled``, ``emit_later``.
"""

from __future__ import annotations

import collections
import functools
import io
import logging
import os
import types
from typing import TYPE_CHECKING, Any

from .exc import Unsupported
from .run_time_warnings import in_polyfill

if TYPE_CHECKING:
    from .translator import Translator

_Logger = logging.Logger

#: a level method of ``Logger`` -> the level it logs at (``fatal`` is ``critical``); ``log`` takes
#: its level as its first argument
LEVEL_METHODS: dict[Any, int | None] = {
    _Logger.debug: logging.DEBUG,
    _Logger.info: logging.INFO,
    _Logger.warning: logging.WARNING,
    _Logger.error: logging.ERROR,
    _Logger.critical: logging.CRITICAL,
    _Logger.log: None,
}

#: the methods a record passes through on its way from a level method to ``handle``: a logger
#: whose class or instance replaces one of them is traced as written
_RECORD_PATH = ("isEnabledFor", "_log", "findCaller", "makeRecord", "handle")

#: the options ``Logger._log`` takes with the values it is kept for (the record then carries no
#: exception, extra attributes or stack, and names the calling frame)
_PLAIN_OPTIONS = {"exc_info": None, "extra": None, "stack_info": False, "stacklevel": 1}


#: the names of the level methods, which an instance attribute would shadow
_LEVEL_NAMES = frozenset(fn.__name__ for fn in LEVEL_METHODS)


def plain_logger(logger: Any) -> bool:
    """Whether ``logger`` is a ``logging.Logger`` whose record path is ``Logger``'s own."""
    if not isinstance(logger, _Logger):
        return False
    cls = type(logger)
    if any(getattr(cls, name, None) is not getattr(_Logger, name) for name in _RECORD_PATH):
        return False
    return not vars(logger).keys() & {*_RECORD_PATH, *_LEVEL_NAMES}


def enabled(tx: Translator, logger: logging.Logger, level: int) -> bool:
    """``logger.isEnabledFor(level)`` now, guarded: the answer stays the same (the guard asks the
    logger as the call would, filling its cache as the call does)."""
    answer = logger.isEnabledFor(level)
    check = functools.partial(logger.isEnabledFor, level)
    tx.output.assume_state(("logging_enabled", id(logger), level), check, answer)
    return answer


def emit_later(
    tx: Translator, logger_vt: Any, level: int, args: list[Any], kwargs: dict[str, Any]
) -> None:
    """The record of an enabled call with the values ``args`` (message first) and options
    ``kwargs``, handled by the compiled call after the graph (``_emit``), named by the calling
    frame of the trace. Raises ``Unsupported`` (the call runs in Python) for any other form: an
    exception, ``extra``, a stack or a caller's frame asked for, a message its arguments do not
    format (logging reports that from each handler, printing the stack of the call)."""
    if not args:
        raise Unsupported("logging", "a logging call without a message")
    msg, *values = args
    given = {name: kwargs.pop(name, default) for name, default in _PLAIN_OPTIONS.items()}
    if kwargs or given["exc_info"] or given["extra"] is not None or given["stack_info"]:
        raise Unsupported("logging", f"logging with {sorted(kwargs) or given}", _HINT)
    if given["stacklevel"] != 1:
        raise Unsupported("logging", "logging naming a caller's frame (stacklevel)", _HINT)
    record = logging.LogRecord("", level, "", 0, msg, tuple(values), None)
    try:
        record.getMessage()
    except Exception as error:
        raise Unsupported("logging", f"a message its arguments do not format: {error}") from None
    if not known_handlers(logger_vt.value):
        raise Unsupported("logging", "a record handled by code of the program's", _HINT)
    check = functools.partial(known_handlers, logger_vt.value)
    tx.output.assume_state(("logging_handlers", id(logger_vt.value)), check, True)
    frame = _calling_frame(tx)
    location = frame.location()
    emit = functools.partial(
        _emit, level, msg, tuple(values), location.filename, location.lineno, frame.code.co_name
    )
    writes = _handled_by(logger_vt.value)
    tx.output.call_after(emit, [logger_vt], writes, f"{logging.getLevelName(level).lower()}()")


_HINT = "log outside the compiled function, or with a message and values only"

#: the modules whose handlers and formatters read nothing of the program's: logging's own, and
#: pytest's log capture (``caplog``)
_KNOWN_MODULES = frozenset({"logging", "logging.handlers", "_pytest.logging"})


def known_handlers(logger: logging.Logger) -> bool:
    """Whether every handler a record of ``logger`` reaches (those of ``logger`` and its parents
    while ``propagate``; ``lastResort`` where there are none) is of a class of ``_KNOWN_MODULES``,
    with no formatter or one of those modules' and no filters, and ``logger`` has no filters."""
    if logger.filters:
        return False
    return all(_known(h) and _known(h.formatter or h) and not h.filters for h in _handlers(logger))


def _known(obj: Any) -> bool:
    return type(obj).__module__ in _KNOWN_MODULES


def _handlers(logger: logging.Logger) -> list[Any]:
    """The handlers a record of ``logger`` reaches, as ``Logger.callHandlers`` finds them."""
    found: list[Any] = []
    node: Any = logger
    while node is not None:
        found += node.handlers
        node = node.parent if node.propagate else None
    if not found and logging.lastResort is not None:
        found.append(logging.lastResort)
    return found


#: what a known handler's ``emit`` changes: its containers (a buffer, pytest's records) and streams
_WRITTEN_KINDS = (list, dict, set, collections.deque, bytearray, io.IOBase)


def _handled_by(logger: logging.Logger) -> list[Any]:
    """What handling a record of ``logger`` changes: its handlers' containers and streams (the
    handlers themselves, whose attributes the trace reads as they are, are not changed)."""
    return [
        obj
        for handler in _handlers(logger)
        for obj in vars(handler).values()
        if isinstance(obj, _WRITTEN_KINDS)
    ]


def _calling_frame(tx: Translator) -> Translator:
    """The frame ``findCaller`` names: the innermost one that is not logging's own (nor
    ``importlib``'s bootstrap, nor a polyfill standing for C code)."""
    while _internal(tx.code.co_filename):
        if tx.parent is None:
            raise Unsupported("logging", "a logging call from logging's own code")
        tx = tx.parent
    return tx


def names_its_caller(code: types.CodeType) -> bool:
    """Is ``code`` logging's own, which names the first frame above it in a record?"""
    return _logging_file(code.co_filename)


def _internal(filename: str) -> bool:
    name = os.path.normcase(filename)
    bootstrap = "importlib" in name and "_bootstrap" in name
    return _logging_file(filename) or bootstrap or in_polyfill(filename)


def _logging_file(filename: str) -> bool:
    """Is ``filename`` logging's own source file (``logging._srcfile``, compared as
    ``findCaller`` compares it: normalised by ``os.path.normcase``)?"""
    return os.path.normcase(filename) == logging._srcfile


def _emit(
    level: int,
    msg: Any,
    args: tuple,
    filename: str,
    lineno: int,
    function: str,
    logger: logging.Logger,
) -> None:
    """What ``Logger._log`` does for a call from ``function`` at ``filename:lineno``: the record
    made by ``makeRecord``, given to ``handle``; an unknown caller where ``logging._srcfile`` is
    unset, as there."""
    if not logging._srcfile:
        filename, lineno, function = "(unknown file)", 0, "(unknown function)"
    record = logger.makeRecord(logger.name, level, filename, lineno, msg, args, None, function)
    logger.handle(record)
