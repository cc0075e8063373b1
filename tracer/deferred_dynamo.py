"""``torch._dynamo`` without its ``__init__``: the modules torch's fake tensors read, not Dynamo.

torch's fake tensors read ``torch._dynamo.config`` (a ``FakeTensorMode`` when made and while faking
ops) and ``torch._dynamo.source`` (every ``from_tensor``), and torch's ``_disable_dynamo`` wrappers
(on its decompositions) call ``torch._dynamo.disable``. Importing any of them runs the package's
``__init__`` first, which imports all of Dynamo (its tracer, Inductor's front modules): a second of
CPU on a cold start that uses none of it. ``defer_dynamo()`` (once per process, before the first
fake mode) registers the package without running its ``__init__`` and imports ``config`` and
``source`` (with the few modules ``source`` needs) on their own. The first read of anything else
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
    """``import torch._dynamo.<x>`` while deferred: the package's ``__init__`` runs first (its
    submodules import each other in an order only it gets right)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if not name.startswith(PACKAGE + ".") or not is_deferred() or _standalone:
            return None
        load_package()
        loaded = sys.modules.get(name)
        if loaded is None:
            return None  # a submodule the package does not import: found the ordinary way
        spec = copy.copy(loaded.__spec__)
        spec.loader = _AlreadyLoaded(loaded)
        return spec


#: The submodules torch's fake tensors import, imported on their own (they import no Dynamo).
STANDALONE = ("config", "source")
_standalone = False  #: True while importing them


def defer_dynamo() -> None:
    """Register ``torch._dynamo`` without running its ``__init__`` (nothing if already imported)."""
    global _standalone
    with _lock:
        if PACKAGE in sys.modules:
            return
        pkg = importlib.util.module_from_spec(importlib.util.find_spec(PACKAGE))
        sys.modules[PACKAGE] = pkg
        _standalone = True
        try:
            for name in STANDALONE:
                importlib.import_module(f"{PACKAGE}.{name}")
        except BaseException:
            for name in [k for k in sys.modules if k == PACKAGE or k.startswith(PACKAGE + ".")]:
                del sys.modules[name]
            raise
        finally:
            _standalone = False
        pkg.__class__ = _DeferredPackage
        sys.meta_path.insert(0, _SubmoduleFinder())


def is_deferred() -> bool:
    """Whether ``torch._dynamo``'s ``__init__`` has not run."""
    return type(sys.modules.get(PACKAGE)) is _DeferredPackage
