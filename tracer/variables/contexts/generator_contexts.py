"""Context managers written in Python: ``@contextlib.contextmanager`` functions and user classes
with ``__enter__``/``__exit__``.

``GeneratorContextVariable`` is what calling a ``@contextmanager`` function gives: entering it runs
the generator function (inlined) up to its ``yield``, exiting runs it on to its end, so the code
before and after the ``yield`` (``try``/``finally`` cleanup included) is traced like any code.
``UserMethodContextVariable`` inlines a user object's ``__enter__`` and ``__exit__``. Neither can be
rebuilt by rewritten code in the middle of its block (a generator suspended at its ``yield``, user
code that would run twice), so a graph break inside such a block is taken at its ``with`` instead
(``reenterable = False``); a user object that came from the inputs keeps its real ``__exit__``.
TorchFunctionMode/TorchDispatchMode objects are refused: their ``with`` block runs in Python.
"""

from __future__ import annotations

import contextlib
import inspect
import types
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from ....codegen.emit import Codegen
from ...exc import Unsupported
from ..base import VariableTracker
from ..constants.constant import ConstantVariable
from ..functions.callables import CALL_HOOKS, UserFunctionVariable
from ..iterators.iterator_trackers import GeneratorVariable
from ..objects.existing_objects import CFunctionVariable, UserObjectVariable
from .context_trackers import WITH_CONVERTERS, ContextVariable

if TYPE_CHECKING:
    from ...translator import Translator

#: The code of the function ``@contextlib.contextmanager`` returns (``helper(*args, **kwds)``).
HELPER_CODE = contextlib.contextmanager(lambda: None).__code__


@dataclass(eq=False)
class GeneratorContextVariable(ContextVariable):
    """``cm(*args, **kwargs)`` for a ``@contextmanager`` function ``cm`` (``fn``: the generator
    function it wraps); its generator, once entered, is kept by its "enter" event."""

    helper: VariableTracker | None = None  #: the ``@contextmanager`` function called
    fn: VariableTracker | None = None
    args: list[VariableTracker] = field(default_factory=list)
    kwargs: dict[str, VariableTracker] = field(default_factory=dict)

    reenterable = False

    def enter(self, tx: Translator) -> VariableTracker:
        if self.log.find(self, "enter") is not None:
            raise Unsupported("context_manager", "a @contextmanager object entered twice")
        gen = self.fn.call_function(tx, list(self.args), dict(self.kwargs))
        if not isinstance(gen, GeneratorVariable):
            raise Unsupported("context_manager", f"{self.fn} is not a generator function")
        self.record(tx, "enter", data={"gen": gen})  # before the contexts its code enters
        value = gen.pull()
        if value is None:
            raise Unsupported("python_error", "RuntimeError: generator didn't yield")
        return value

    def exit(self, tx: Translator) -> VariableTracker:
        if self.log.find(self, "enter").data["gen"].pull() is not None:
            raise Unsupported("python_error", "RuntimeError: generator didn't stop")
        self.record(tx, "exit")
        return ConstantVariable(False)

    def reconstruct(self, cg: Codegen) -> None:
        """Not entered yet (a break at its ``with``): call the ``@contextmanager`` function again,
        which only makes the generator."""
        if self.log.find(self, "enter") is not None:
            raise Unsupported("context_manager", "a @contextmanager object suspended at its yield")
        self.helper.reconstruct(cg)
        for arg in self.args:
            arg.reconstruct(cg)
        for value in self.kwargs.values():
            value.reconstruct(cg)
        cg.call_function(len(self.args) + len(self.kwargs), tuple(self.kwargs))

    def __repr__(self) -> str:
        return f"GeneratorContextVariable({self.fn!r})"


def _contextmanager_call(
    tx: Translator,
    helper: UserFunctionVariable,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker:
    """Calling ``helper``, the function ``@contextmanager`` made around a generator function."""
    func = helper.closure_value(tx, "func")
    return GeneratorContextVariable(
        log=tx.output.state, helper=helper, fn=func, args=args, kwargs=kwargs
    )


CALL_HOOKS[HELPER_CODE] = _contextmanager_call


@dataclass(eq=False)
class UserMethodContextVariable(ContextVariable):
    """A user object with Python ``__enter__``/``__exit__`` methods, both inlined."""

    obj: VariableTracker | None = None

    reenterable = False

    def exit_reconstructable(self) -> bool:
        return self.obj.source is not None  # its real ``__exit__`` runs after a break

    def enter(self, tx: Translator) -> VariableTracker:
        self.record(tx, "enter")
        return self.obj.call_method(tx, "__enter__", [], {})

    def exit(self, tx: Translator) -> VariableTracker:
        none = ConstantVariable(None)
        result = self.obj.call_method(tx, "__exit__", [none, none, none], {})
        self.record(tx, "exit")
        return result

    def load_exit(self, cg: Codegen) -> None:
        if self.obj.source is None:
            raise Unsupported("context_manager", f"the exit of {self.obj} cannot be rebuilt")
        self.obj.reconstruct(cg)
        cg.load_attr("__exit__")

    def reconstruct(self, cg: Codegen) -> None:
        self.obj.reconstruct(cg)


def _user_context(tx: Translator, vt: VariableTracker) -> ContextVariable | None:
    try:
        cls = vt.python_type()
    except Unsupported:
        return None
    if issubclass(cls, (TorchFunctionMode, TorchDispatchMode)):
        raise Unsupported(
            "context_manager",
            f"a {cls.__name__} mode is entered",
            hint="torch function and dispatch modes are not traced; their block runs in Python",
        )
    methods = [inspect.getattr_static(cls, n, None) for n in ("__enter__", "__exit__")]
    if (
        not isinstance(vt, UserObjectVariable)
        or isinstance(vt, CFunctionVariable)
        or not all(isinstance(m, types.FunctionType) for m in methods)
    ):
        return None
    return UserMethodContextVariable(log=tx.output.state, obj=vt)


WITH_CONVERTERS.append(_user_context)
