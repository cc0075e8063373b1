"""Warnings of a computation the trace ran, given again by every compiled call, as CPython gives.

A builtin computed at trace time on values (``variables/constants.computed``: ``~True`` on 3.12
and later, 3.13's ``re.sub`` with a positional count) may warn. CPython warns on every call,
naming the line of the Python frame that runs the operation, under the filters of that moment and
with that module's registry, so a warning seen once while tracing is not the program's. Each
warning CPython names the calling frame for (a C function's ``PyErr_WarnEx`` at stacklevel 1, a
Python one's ``stacklevel=2``) is kept as an effect the rewritten code makes after the graph
(``SideEffects.call_after``): ``warn_at``, CPython's ``warn_explicit`` with the category, text,
file, line, module and registry its own warning takes, so the filters, the
``once``/``default`` registries, ``showwarning`` and ``catch_warnings(record=True)`` see what
eager's call gives them; guarded: the filters do not make it an error. Where they do, CPython
raises in the middle of the call: the trace breaks there, and CPython runs the operation
(whatever the filters of a later call, the variant with that break is right for it).

Entry point: ``keep(tx, caught, code)``.
"""

from __future__ import annotations

import functools
import os
import types
import warnings
from typing import TYPE_CHECKING, Any

from . import polyfills
from .exc import Unsupported

if TYPE_CHECKING:
    from .translator import Translator

#: polyfills stand for C code, or for the user's own call (``polyfills/substitution.py``'s
#: ``matches`` makes the ``re.sub`` call the program made): a warning naming a frame of theirs
#: names the frame that called them
_POLYFILLS = os.path.dirname(polyfills.__file__) + os.sep


def keep(tx: Translator, caught: list[warnings.WarningMessage], code: types.CodeType) -> bool:
    """Keep the ``caught`` warnings of a computation for the compiled call to give, as the
    frame ``tx`` runs (the innermost one that is not a polyfill's) would: True, or False (nothing
    kept) where one names another frame than the one the computation ran in (running ``code``)
    or a polyfill's, or carries more than a text. Raises ``Unsupported`` where the filters make
    one an error."""
    lines = {line for _, _, line in code.co_lines() if line is not None}
    if not all(_by_the_caller(w, code.co_filename, lines) for w in caught):
        return False
    while tx.parent is not None and in_polyfill(tx.code.co_filename):
        tx = tx.parent
    for w in caught:
        give_later(tx, w.category, str(w.message))
    return True


def give_later(tx: Translator, category: type[Warning], text: str) -> None:
    """The warning ``text`` of ``category``, named by the frame ``tx`` runs at its line, given by
    the compiled call after the graph (``warn_at``); guarded: the filters do not make it an
    error. Raises ``Unsupported`` where they do."""
    location = tx.location()
    module = _module_name(tx.f_globals, location.filename)
    check = functools.partial(error_filtered, category, text, module, location.lineno)
    if check():
        raise Unsupported(
            "warning_error",
            f"{category.__name__} is an error under the filters: {text}",
            "CPython raises it in the middle of the call",
        )
    label = ("warning_error", category.__qualname__, text, module, location.lineno)
    tx.output.assume_state(label, check, False)
    warn = functools.partial(
        warn_at, text, category, location.filename, location.lineno, tx.f_globals
    )
    tx.output.side_effects.call_after(warn, [])


def _warn_arguments(
    message: Any, category: Any = None, stacklevel: Any = 1, source: Any = None, **kw: Any
) -> dict[str, Any]:
    return {"message": message, "category": category, "stacklevel": stacklevel, "source": source}


def warn_call(tx: Translator, args: list[Any], kwargs: dict[str, Any]) -> bool:
    """``warnings.warn(text, category)`` called in the trace with these values: its warning
    given by the compiled call (``give_later``), named by the frame calling it. False (nothing
    kept: the call runs in Python, where CPython finds the frame) for any other form: a
    ``stacklevel`` naming a caller (eager's caller may be a frame the trace does not have, as
    ``Module._call_impl`` for a ``forward``), a warning object, a ``source``,
    ``skip_file_prefixes``, arguments CPython refuses."""
    try:
        given = _warn_arguments(*args, **kwargs)
    except TypeError:
        return False
    category, stacklevel = given["category"], given["stacklevel"]
    category = UserWarning if category is None else category
    if kwargs.keys() - given.keys() or given["source"] is not None:
        return False
    if type(given["message"]) is not str or type(stacklevel) is not int or stacklevel < 1:
        return False
    if not (isinstance(category, type) and issubclass(category, Warning)):
        return False
    if stacklevel != 1 or in_polyfill(tx.code.co_filename):
        return False  # a caller's frame: the trace's parent may not be it (``Module.__call__``)
    give_later(tx, category, given["message"])
    return True


def in_polyfill(filename: str) -> bool:
    return filename.startswith(_POLYFILLS)


def _by_the_caller(caught: warnings.WarningMessage, filename: str, lines: set[int]) -> bool:
    message = caught.message
    return (
        (caught.filename == filename and caught.lineno in lines or in_polyfill(caught.filename))
        and isinstance(message, Warning)
        and message.args == (str(message),)
        and caught.source is None
    )


def warn_at(
    text: str, category: type[Warning], filename: str, lineno: int, module_globals: dict
) -> None:
    """The warning CPython's ``PyErr_WarnEx`` gives in a frame of ``filename`` at ``lineno``
    running in ``module_globals``: its module (``__name__``) and registry
    (``__warningregistry__``, made where missing) read from them now, as CPython reads them; no
    module globals given on (CPython's own warning reads its source line by file name)."""
    registry = module_globals.get("__warningregistry__")
    if not isinstance(registry, dict):
        registry = module_globals["__warningregistry__"] = {}
    module = _module_name(module_globals, filename)
    warnings.warn_explicit(text, category, filename, lineno, module, registry)


def _module_name(module_globals: dict, filename: str) -> str:
    """The module CPython names a warning's frame by: its globals' ``__name__`` where that is a
    string, the file's name without ``.py`` where it is None (``warn_explicit``'s default), else
    ``<string>``."""
    name = module_globals.get("__name__")
    if name is None:
        return filename.removesuffix(".py")
    return name if isinstance(name, str) else "<string>"


def error_filtered(category: type[Warning], text: str, module: str, lineno: int) -> bool:
    """Whether the warnings filters now turn this warning into an exception: the first filter
    matching it (its text, category, module and line, as CPython's ``get_filter`` matches),
    else the default action, is ``error``."""
    for action, message, kind, mod, line in warnings.filters:
        if (
            _matched(message, text)
            and issubclass(category, kind)
            and _matched(mod, module)
            and (line == 0 or line == lineno)
        ):
            return action == "error"
    return warnings.defaultaction == "error"


def _matched(pattern: Any, text: str) -> bool:
    """CPython's ``check_matched``: None matches all, a plain string only itself, else a regex's
    ``match``."""
    if pattern is None:
        return True
    if type(pattern) is str:
        return pattern == text
    return bool(pattern.match(text))
