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

Entry points: ``keep(tx, caught, code)``; for ``warnings.warn`` called by the program,
``warning_called``, then ``give_later`` or ``give_from_above`` (``variables/frames.py``).
"""

from __future__ import annotations

import functools
import itertools
import os
import sys
import types
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..codegen.frame_locals import WaitingFrame, user_frames
from ..codegen.pyversion import WARNING_PAST_THE_STACK
from . import polyfills
from .exc import Unsupported

if TYPE_CHECKING:
    from .translator import Translator

#: polyfills stand for C code, or for the user's own call (``polyfills/substitution.py``'s
#: ``matches`` makes the ``re.sub`` call the program made): a warning naming a frame of theirs
#: names the frame that called them
_POLYFILLS = os.path.dirname(polyfills.__file__) + os.sep


@dataclass(frozen=True)
class Site:
    """Where CPython names a warning from: a frame's file and line, and its globals (their
    ``__name__`` is the warning's module, their ``__warningregistry__`` its registry)."""

    filename: str
    lineno: int
    module_globals: dict[str, Any] = field(compare=False, repr=False)


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


def give_later(tx: Translator, category: type[Warning], text: str, at: Site | None = None) -> None:
    """The warning ``text`` of ``category``, named by the frame ``tx`` runs at its line (or by
    ``at``: a frame the trace knows that no translator runs, ``nn.Module.__call__``'s), given by
    the compiled call after the graph (``warn_at``); guarded: the filters do not make it an
    error. Raises ``Unsupported`` where they do."""
    if at is None:
        location = tx.location()
        at = Site(location.filename, location.lineno, tx.f_globals)
    module = _module_name(at.module_globals, at.filename)
    _guard_no_error(tx, category, text, module, at.lineno)
    warn = functools.partial(warn_at, text, category, at.filename, at.lineno, at.module_globals)
    registry = at.module_globals.get("__warningregistry__")
    changed = [*_shown_into(tx), warnings.onceregistry, *([registry] if registry else [])]
    tx.output.call_after(warn, [], changed, "warnings.warn()")


def give_from_above(tx: Translator, category: type[Warning], text: str, depth: int) -> None:
    """The warning ``text`` of ``category``, named by the user's frame ``depth`` calls above the
    compiled function's (a caller, found by the compiled call: ``warn_above``), given after the
    graph; guarded: the filters make it an error for no module and line. Raises
    ``Unsupported`` where they may."""
    _guard_no_error(tx, category, text, None, None)
    warn = functools.partial(warn_above, depth, text, category)
    changed = [*_shown_into(tx), warnings.onceregistry]
    tx.output.call_after(warn, [], changed, "warnings.warn()")


def _shown_into(tx: Translator) -> list[Any]:
    """What showing a warning changes that the program could read: the list
    ``catch_warnings(record=True)`` records into (``_showwarnmsg_impl`` is its ``append``);
    warnings' own function writes to a stream, in order with ``print``. A function of the
    program's showing them (``warnings.showwarning`` replaced) could read or change anything, at
    a time the graph's stores are made: ``Unsupported``, the call runs in Python where it stands.
    Guarded: which of the two shows them."""
    how = _showing()
    if how is None:
        raise Unsupported(
            "warning",
            "warnings shown by a function of the program's (warnings.showwarning replaced)",
            "the warning is given where it stands, in Python",
        )
    tx.output.assume_state(("warnings_shown",), _showing, how)
    return [warnings._showwarnmsg_impl.__self__] if how == "record" else []


def _showing() -> str | None:
    """How a warning given now is shown: ``record`` (into a list), ``stream`` (warnings' own
    function), or None (a function of the program's)."""
    shown = warnings._showwarnmsg
    if warnings.showwarning is not warnings._showwarning_orig or shown.__module__ != "warnings":
        return None
    impl = warnings._showwarnmsg_impl
    if type(impl) is types.BuiltinMethodType and type(impl.__self__) is list:
        return "record" if impl.__name__ == "append" else None
    own = getattr(impl, "__module__", None) == "warnings"
    return "stream" if own and impl.__name__ == "_showwarnmsg_impl" else None


def _guard_no_error(
    tx: Translator, category: type[Warning], text: str, module: str | None, lineno: int | None
) -> None:
    check = functools.partial(error_filtered, category, text, module, lineno)
    if check():
        raise Unsupported(
            "warning_error",
            f"{category.__name__} is an error under the filters: {text}",
            "CPython raises it in the middle of the call",
        )
    label = ("warning_error", category.__qualname__, text, module, lineno)
    tx.output.assume_state(label, check, False)


def _warn_arguments(
    message: Any, category: Any = None, stacklevel: Any = 1, source: Any = None, **kw: Any
) -> dict[str, Any]:
    return {"message": message, "category": category, "stacklevel": stacklevel, "source": source}


def warning_called(
    args: list[Any], kwargs: dict[str, Any]
) -> tuple[type[Warning], str, int] | None:
    """``(category, text, stacklevel)`` of ``warnings.warn(text, category, stacklevel)`` called
    with these values; None (the call runs in Python, where CPython reads them) for any other
    form: a warning object, a ``source``, ``skip_file_prefixes``, arguments CPython refuses."""
    try:
        given = _warn_arguments(*args, **kwargs)
    except TypeError:
        return None
    category, stacklevel = given["category"], given["stacklevel"]
    category = UserWarning if category is None else category
    if kwargs.keys() - given.keys() or given["source"] is not None:
        return None
    if type(given["message"]) is not str or type(stacklevel) is not int or stacklevel < 1:
        return None
    if not (isinstance(category, type) and issubclass(category, Warning)):
        return None
    return category, given["message"], stacklevel


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


def warn_above(depth: int, text: str, category: type[Warning]) -> None:
    """Run by the compiled call: the warning of ``warnings.warn(text, category, depth + 1)``
    called in the user's frame that the calling generated frame runs. It is named by the user's
    frame ``depth`` calls above that one (``frame_locals.user_frames``: a caller waiting for a
    resumed callee too), passing over importlib's frames as CPython does, or past the outermost
    frame by ``sys`` (``WARNING_PAST_THE_STACK``), as CPython names it."""
    frames = user_frames(sys._getframe(1), own_waiting=False)
    next(frames, None)  # the user's frame the warning is called in
    outer = (f for f in frames if not _importlib_frame(f))
    found = next(itertools.islice(outer, depth - 1, None), None)
    if found is None:
        warn_at(text, category, *WARNING_PAST_THE_STACK, sys.__dict__)
    elif isinstance(found, WaitingFrame):
        warn_at(text, category, found.filename, found.lineno, found.globals)
    else:
        warn_at(text, category, found.f_code.co_filename, found.f_lineno, found.f_globals)


def _importlib_frame(frame: types.FrameType | WaitingFrame) -> bool:
    """A frame of importlib's bootstrap, which CPython's ``stacklevel`` does not count."""
    name = frame.filename if isinstance(frame, WaitingFrame) else frame.f_code.co_filename
    return "importlib" in name and "_bootstrap" in name


def _module_name(module_globals: dict, filename: str) -> str:
    """The module CPython names a warning's frame by: its globals' ``__name__`` where that is a
    string, the file's name without ``.py`` where it is None (``warn_explicit``'s default), else
    ``<string>``."""
    name = module_globals.get("__name__")
    if name is None:
        return filename.removesuffix(".py")
    return name if isinstance(name, str) else "<string>"


def error_filtered(
    category: type[Warning], text: str, module: str | None, lineno: int | None
) -> bool:
    """Whether the warnings filters now turn this warning into an exception: the first filter
    matching it (its text, category, module and line, as CPython's ``get_filter`` matches),
    else the default action, is ``error``. A ``module`` or ``lineno`` of None stands for any
    (a frame found at run time): whether they may, for some module and line."""
    for action, message, kind, mod, line in warnings.filters:
        if not (_matched(message, text) and issubclass(category, kind)):
            continue
        if module is not None and not _matched(mod, module):
            continue
        if lineno is not None and line not in (0, lineno):
            continue
        if action == "error":
            return True
        if (module is not None or mod is None) and (lineno is not None or line == 0):
            return False  # it matches the warning wherever it is named
    return warnings.defaultaction == "error"


def _matched(pattern: Any, text: str) -> bool:
    """CPython's ``check_matched``: None matches all, a plain string only itself, else a regex's
    ``match``."""
    if pattern is None:
        return True
    if type(pattern) is str:
        return pattern == text
    return bool(pattern.match(text))
