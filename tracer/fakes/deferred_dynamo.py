"""``torch._dynamo`` without its ``__init__``: the modules torch's fake tensors read, not Dynamo.

torch's fake tensors read ``torch._dynamo.config`` (a ``FakeTensorMode`` when made and while faking
ops) and ``torch._dynamo.source`` (every ``from_tensor``), and torch's ``_disable_dynamo`` wrappers
(on its decompositions) call ``torch._dynamo.disable``. Importing any of them runs the package's
``__init__`` first, which imports all of Dynamo (its tracer, Inductor's front modules): a second of
CPU on a cold start that uses none of it. ``defer_dynamo()`` (once per process, before the first
fake mode) registers the package without running its ``__init__`` and imports ``config`` on its
own. ``source`` is itself a second of CPU (it imports ``torch._dynamo.utils``, which imports
symbolic shapes and sympy), though a static trace only names its classes: every ``from_tensor``
imports ``RandomValueSource`` for an ``isinstance`` test. So until something needs the real module,
``torch._dynamo.source`` is a stand-in (``_SourceStandIn``) whose classes answer ``isinstance`` as
the real ones do (no instance of a real class can exist before the real module is loaded) and load
it, on its own, when called or asked for anything else. ``exc`` and ``utils`` load on their own
when imported (every ``ShapeEnv`` imports them, through ``torch.fx.experimental.validator``: the
first symbol of a trace, such as ``.item()``'s). The first read of anything else
(``torch._dynamo.explain``, ``torch.compile``'s ``torch._dynamo.optimize``) or import of another
submodule runs the real ``__init__`` first, in its own order, so torch.compile and the rest work
as if nothing had been deferred.
"""

from __future__ import annotations

import copy
import importlib
import importlib.abc
import importlib.util
import sys
import threading
import types
from typing import Any

PACKAGE = "torch._dynamo"
_lock = threading.RLock()


class _DeferredPackage(types.ModuleType):
    """``torch._dynamo`` before its ``__init__`` ran: it holds ``config``, ``source`` and the
    modules they import; reading anything else runs the ``__init__`` (``disable`` aside)."""

    def disable(self, fn: Any = None, recursive: bool = True, **kwargs: Any) -> Any:
        """``torch._dynamo.disable``. torch's own ``torch._disable_dynamo`` wrappers (on its
        decompositions, dispatch modes, optimizers) call it with ``wrapping=False`` the first time
        they run, and keep what it returns: for them, a function that runs ``fn`` as it is until
        Dynamo is loaded (nothing can be compiling with it before), then Dynamo's disabled
        ``fn``. Any other call loads Dynamo."""
        if fn is None or kwargs != {"wrapping": False}:
            load_package()
            return sys.modules[PACKAGE].disable(fn, recursive, **kwargs)
        disabled: list[Any] = []

        def run_outside_dynamo(*args: Any, **kw: Any) -> Any:
            if is_deferred():
                return fn(*args, **kw)
            if not disabled:
                disabled.append(sys.modules[PACKAGE].disable(fn, recursive, wrapping=False))
            return disabled[0](*args, **kw)

        return run_outside_dynamo

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # probes such as ``__file__``/``__wrapped__``: none defined
            raise AttributeError(name)
        load_package()
        return getattr(sys.modules[PACKAGE], name)


def load_package() -> None:
    """Run the real ``__init__`` in the deferred package (once; it then is an ordinary module)."""
    with _lock:
        pkg = sys.modules.get(PACKAGE)
        if type(pkg) is not _DeferredPackage:
            return
        if isinstance(sys.modules.get(SOURCE), _SourceStandIn):
            del sys.modules[SOURCE]  # the ``__init__`` imports the real one
            del pkg.source
        pkg.__class__ = types.ModuleType
        pkg.__spec__.loader.exec_module(pkg)


class _AlreadyLoaded(importlib.abc.Loader):
    """Hands the import system a module the package's ``__init__`` has just imported."""

    def __init__(self, module: types.ModuleType) -> None:
        self.module = module
        self.spec = module.__spec__

    def create_module(self, spec: Any) -> types.ModuleType:
        return self.module

    def exec_module(self, module: types.ModuleType) -> None:
        module.__spec__ = self.spec  # the import system set the copy: the real one again


class _SubmoduleFinder(importlib.abc.MetaPathFinder):
    """``import torch._dynamo.<x>`` while deferred: one of ``ALONE`` is imported on its own; for
    any other the package's ``__init__`` runs first (its submodules import each other in an order
    only it gets right)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if not name.startswith(PACKAGE + ".") or not is_deferred() or _standalone:
            return None
        with _lock:
            submodule = name[len(PACKAGE) + 1 :]
            if submodule in ALONE and is_deferred():
                _import_standalone(submodule)
            else:
                load_package()
        loaded = sys.modules.get(name)
        if loaded is None:
            return None  # a submodule the package does not import: found the ordinary way
        # Left in sys.modules, the import system would take the module's own spec and execute
        # the file again into a second module object (whose globals, such as Dynamo's counters,
        # are not the ones Dynamo uses); through ``_AlreadyLoaded`` it installs this one again.
        del sys.modules[name]
        spec = copy.copy(loaded.__spec__)
        spec.loader = _AlreadyLoaded(loaded)
        return spec


#: The submodules torch's fake tensors import, imported on their own (they import no Dynamo).
STANDALONE = ("config",)
#: The submodules imported on their own when something imports them while the package is
#: deferred (they import only ``config``, ``graph_utils`` and ``metrics_context``, no Dynamo):
#: every ``ShapeEnv`` imports ``torch.fx.experimental.validator``, which imports ``exc`` and
#: ``utils``.
ALONE = ("exc", "utils")
_standalone = False  #: True while importing them
SOURCE = PACKAGE + ".source"


def _import_standalone(name: str) -> types.ModuleType:
    """Import ``torch._dynamo.<name>`` on its own, without the package's ``__init__``."""
    global _standalone
    pkg = sys.modules[PACKAGE]
    deferred_class = pkg.__class__
    pkg.__class__ = types.ModuleType  # its ``from . import utils`` must not run the ``__init__``
    _standalone = True
    try:
        module = importlib.import_module(f"{PACKAGE}.{name}")
    finally:
        _standalone = False
        pkg.__class__ = deferred_class
    setattr(sys.modules[PACKAGE], name, module)
    return module


def real_source() -> types.ModuleType:
    """The real ``torch._dynamo.source``, imported (on its own while the package is deferred) in
    place of the stand-in."""
    with _lock:
        module = sys.modules.get(SOURCE)
        if not isinstance(module, _SourceStandIn):
            return importlib.import_module(SOURCE)
        del sys.modules[SOURCE]
        try:
            if is_deferred():
                return _import_standalone("source")
            return importlib.import_module(SOURCE)
        except BaseException:
            sys.modules.setdefault(SOURCE, module)
            raise


class _StandInClass(type):
    """A class of the stand-in ``source`` module: ``isinstance``/``issubclass`` ask the real class
    once the real module is loaded (before, nothing can be an instance of it); anything else loads
    the real module and asks its class."""

    def _loaded(cls) -> type | None:
        module = sys.modules.get(SOURCE)
        if module is None or isinstance(module, _SourceStandIn):
            return None
        return getattr(module, cls.__name__)

    def __instancecheck__(cls, obj: Any) -> bool:
        real = cls._loaded()
        return real is not None and isinstance(obj, real)

    def __subclasscheck__(cls, sub: type) -> bool:
        real = cls._loaded()
        return real is not None and issubclass(sub, real)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return getattr(real_source(), cls.__name__)(*args, **kwargs)

    def __getattr__(cls, name: str) -> Any:
        return getattr(getattr(real_source(), cls.__name__), name)


class _SourceStandIn(types.ModuleType):
    """``torch._dynamo.source`` until something needs it: each name is a ``_StandInClass`` of the
    same name while the real module is not loaded, the real attribute once it is."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if not name[:1].isupper():  # functions and constants: the real module's
            return getattr(real_source(), name)
        stand_in = _StandInClass(name, (), {"__module__": SOURCE})
        setattr(self, name, stand_in)
        return stand_in


def defer_dynamo() -> None:
    """Register ``torch._dynamo`` without running its ``__init__`` (nothing if already imported)."""
    with _lock:
        if PACKAGE in sys.modules:
            return
        pkg = importlib.util.module_from_spec(importlib.util.find_spec(PACKAGE))
        sys.modules[PACKAGE] = pkg
        try:
            for name in STANDALONE:
                _import_standalone(name)
        except BaseException:
            for name in [k for k in sys.modules if k == PACKAGE or k.startswith(PACKAGE + ".")]:
                del sys.modules[name]
            raise
        sys.modules[SOURCE] = pkg.source = _SourceStandIn(SOURCE)
        pkg.__class__ = _DeferredPackage
        sys.meta_path.insert(0, _SubmoduleFinder())


def is_deferred() -> bool:
    """Whether ``torch._dynamo``'s ``__init__`` has not run."""
    return type(sys.modules.get(PACKAGE)) is _DeferredPackage
