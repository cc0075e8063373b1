"""Context managers in traced code: the tracker family, ``with`` exit slots and carried contexts.

``ContextVariable`` is the base of every context manager the tracer understands (the kinds are in
``state_contexts.py``: grad mode, inference mode, autocast, ``torch.device``, ``fork_rng``,
``nullcontext``; and ``generator_contexts.py``: ``@contextmanager`` functions, user classes).
BEFORE_WITH pushes a ``ContextExitVariable`` (the block's exit slot) and calls ``enter``; the
block's exit calls ``exit``. What they change is recorded in the trace's ``GlobalStateLog``
(``tracer/global_state.py``).

At a graph break inside a block, the rewritten code builds and enters the real context from its
``recipe()``; the exit slot then holds that ``ContextExit``. A compiled resume function receiving
one wraps it as a ``CarriedContextVariable`` (guarded on its key, not its identity): its rewritten
code leaves the real context just before the graph, which enters it again and ends it where the
block ends (``CarriedKind``, kinds in ``carried_contexts.py``). Contexts that cannot be rebuilt that
way (``reenterable = False``: a suspended generator, user code) make a break inside their block a
break at their ``with`` instead (``GlobalStateLog.rollback_point``).
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from torch.overrides import _get_current_function_mode_stack
from torch.utils._device import DeviceContext

from ....guards.sources import AttrSource, Source
from ...context_runtime import ContextExit, ContextRecipe
from ...exc import PythonError, TracedException, Unsupported
from ...global_state import GlobalStateLog, StateEvent
from ..base import VariableTracker
from ..constants.constant import ConstantVariable

if TYPE_CHECKING:
    from ....codegen.emit import Codegen
    from ...translator import Translator


@dataclass(eq=False)
class ContextVariable(VariableTracker):
    """A context manager object. Subclasses implement ``enter``/``exit`` (recording events in
    ``log``) and, when re-enterable, ``recipe``. Identity matters: events refer to the tracker."""

    log: GlobalStateLog = field(repr=False, default=None)  # type: ignore[assignment]
    name: str = ""  #: the rewritten code's local for its ``ContextExit``
    source: Source | None = None

    #: Whether rewritten code can build and enter it again at a graph break (see the module doc).
    reenterable = True
    #: Whether its ``__exit__`` does the same whatever exception leaves the block, and never
    #: suppresses it (an exception raised in the block is then traced through it).
    exit_ignores_exception = False
    #: Whether calling it on a function decorates the function (torch's
    #: ``_DecoratorContextManager``: each call runs in a fresh copy of the context).
    decorates = False

    def __post_init__(self) -> None:
        if self.log is not None and not self.name:
            self.name = self.log.new_name()

    def enter(self, tx: Translator) -> VariableTracker:
        raise NotImplementedError

    def exit(self, tx: Translator) -> VariableTracker:
        raise NotImplementedError

    def recipe(self) -> ContextRecipe:
        raise Unsupported("context_manager", f"{self} cannot be rebuilt after a graph break")

    def exit_reconstructable(self) -> bool:
        """Can the exit slot of an open block be rebuilt as a Python value at a graph break?"""
        return self.reenterable

    def load_exit(self, cg: Codegen) -> None:
        """Push the callable that leaves this (open) context for real."""
        if not self.reenterable:
            raise Unsupported("context_manager", f"the exit of {self} cannot be rebuilt")
        cg.load_local(self.name)

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        """``torch.no_grad()(fn)`` (``@torch.no_grad()`` on a function made in the trace)."""
        if self.decorates and len(args) == 1 and not kwargs and _plain_function(args[0]):
            return ContextDecoratedVariable(self, args[0])
        raise Unsupported("call", f"calling {self}")

    def call_method(
        self,
        tx: Translator,
        name: str,
        args: list[VariableTracker],
        kwargs: dict[str, VariableTracker],
    ) -> VariableTracker:
        if name == "__enter__" and not args and not kwargs:
            return self.enter(tx)
        if name == "__exit__":
            return self.exit(tx)
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, cg: Codegen) -> None:
        """The context object itself (``cm = torch.autocast(...)`` live at a break)."""
        if self.source is not None:
            self.source.reconstruct(cg)
        elif self.log.is_replayed(self):
            cg.load_local(self.name)
            cg.load_attr("ctx")
        else:
            cg.load_const(self.recipe().build)
            cg.call_function(0)

    def record(self, tx: Translator, kind: str, **fields: Any) -> StateEvent:
        """Add a ``kind`` event of this context to the log (a non re-enterable context's enter also
        remembers where its ``with`` began, for ``Translator.step``)."""
        if kind == "enter" and not self.exit_reconstructable():
            fields.setdefault("rollback", tx.with_start())
        if kind == "enter":
            fields.setdefault("opens", True)
        return self.log.add(StateEvent(kind, self, **fields))


def _plain_function(vt: VariableTracker) -> bool:
    """A function (not a class, generator or coroutine function: torch wraps those otherwise)."""
    code = getattr(vt, "code", None) or getattr(getattr(vt, "fn", None), "__code__", None)
    if code is None or vt.python_type() is not types.FunctionType:
        return False
    return not code.co_flags & (
        inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
    )


@dataclass(eq=False)
class ContextDecoratedVariable(VariableTracker):
    """``torch.no_grad()(fn)``: a function whose every call runs ``fn`` inside a fresh copy of
    ``ctx`` (torch's decorator enters ``ctx.clone()``), exited also when ``fn`` raises."""

    ctx: ContextVariable
    fn: VariableTracker
    source: Source | None = None

    def python_type(self) -> type:
        return types.FunctionType

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        ctx = self.ctx.clone(name="")  # a new context, with its own name in the log
        ctx.enter(tx)
        try:
            result = dispatch.call(tx, self.fn, args, kwargs)
        except (PythonError, TracedException):  # the decorator's ``with`` exits on the way out
            ctx.exit(tx)
            raise
        ctx.exit(tx)
        return result

    def reconstruct(self, cg: Codegen) -> None:
        """``ctx(fn)`` again: the context object decorating the function."""
        self.ctx.reconstruct(cg)
        self.fn.reconstruct(cg)
        cg.call_function(1)

    def __repr__(self) -> str:
        return f"ContextDecoratedVariable({self.ctx!r}, {self.fn!r})"


@dataclass(eq=False)
class ContextExitVariable(VariableTracker):
    """The exit slot BEFORE_WITH leaves on the stack: calling it (the block's end) exits ``ctx``."""

    ctx: ContextVariable
    source: Source | None = None

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        if len(args) != 3 or kwargs:
            raise Unsupported("context_manager", "a with-block's __exit__ with other arguments")
        plain = all(a.is_python_constant() and a.as_python_constant() is None for a in args)
        if not plain and not self.ctx.exit_ignores_exception:
            raise Unsupported("context_manager", "a with-block's __exit__ called with an exception")
        return self.ctx.exit(tx)  # None: an exception goes on

    def reconstruct(self, cg: Codegen) -> None:
        self.ctx.load_exit(cg)

    def carried(self) -> bool:
        """Is it a ``ContextExit`` at run time (a compiled resume function can receive it)?"""
        return self.ctx.reenterable

    def __repr__(self) -> str:
        return f"ContextExitVariable({self.ctx!r})"


@dataclass(frozen=True)
class CarriedKind:
    """How a compiled resume function traces a context of one kind (``ContextExit.key[0]``) that it
    receives open: ``enter`` adds the nodes entering it again at the start of the graph (the
    rewritten code exits the real one just before calling the graph, so that every graph starts in
    the state of its call: AOT backends decide at call time whether to record autograd); ``exit``
    ends that region where the block ends (and switches the real state, while tracing); ``recipe``
    rebuilds it for the rewritten code to enter again after the graph if still open; ``expects`` is
    the state it leaves inside, checked against the real state at the start; ``leave`` switches the
    real state to outside it while the backend compiles (returns the undo)."""

    enter: Callable[[Translator, CarriedContextVariable], None]
    exit: Callable[[Translator, CarriedContextVariable], VariableTracker]
    recipe: Callable[[tuple], ContextRecipe]
    expects: Callable[[tuple, dict[str, Any]], None]
    leave: Callable[[tuple], Callable[[], None]]


#: ``ContextExit.key[0]`` -> its ``CarriedKind`` (registered by ``state_contexts.py``).
CARRIED_KINDS: dict[str, CarriedKind] = {}


@dataclass(eq=False)
class CarriedContextVariable(ContextVariable):
    """A context entered before this trace began, by rewritten code (a ``ContextExit`` argument of a
    resume function). ``key`` (guarded) says what it is and what its exit restores."""

    key: tuple = ()

    @property
    def kind(self) -> CarriedKind:
        return CARRIED_KINDS[self.key[0]]

    def enter(self, tx: Translator) -> VariableTracker:
        raise Unsupported("context_manager", "entering a context again after a graph break")

    def exit(self, tx: Translator) -> VariableTracker:
        return self.kind.exit(tx, self)

    def recipe(self) -> ContextRecipe:
        return self.kind.recipe(self.key)

    def load_exit(self, cg: Codegen) -> None:
        if self.log.reentered:  # the real one was exited before the graph: see ``CarriedKind``
            super().load_exit(cg)
        else:
            self.source.reconstruct(cg)

    def reconstruct(self, cg: Codegen) -> None:
        self.load_exit(cg)
        cg.load_attr("ctx")


def wrap_context_exit(tx: Translator, value: ContextExit, source: Source) -> VariableTracker:
    """A resume function's ``ContextExit`` argument: guarded by type and key, never by identity
    (each call builds a new one)."""
    if not value.key or value.key[0] not in CARRIED_KINDS or value.done:
        raise Unsupported(
            "context_manager", f"an unknown context reached a resume function: {value}"
        )
    tx.output.assume_type(source, ContextExit)
    # keys hold only str/bool/int/None/dtype items: the tuple's own == (one check)
    tx.output.assume_equal(AttrSource(source, "key"), value.key)
    ctx = CarriedContextVariable(log=tx.output.state, source=source, key=value.key)
    tx.output.state.carried.append(ctx)
    return ContextExitVariable(ctx, source)


def enter_carried(tx: Translator) -> None:
    """At the start of a resume function's trace: check that the state is what its open contexts
    make it (no direct change such as ``torch.set_grad_enabled`` inside their blocks, which exiting
    and entering them again would lose), then enter them again in the graph (``CarriedKind``)."""
    carried = tx.output.state.carried
    if not carried:
        return
    expected: dict[str, Any] = {}
    for ctx in carried:
        ctx.kind.expects(ctx.key, expected)
    for aspect, value in expected.items():
        if current_state(aspect) != value:
            raise Unsupported(
                "context_manager",
                f"{aspect} changed directly inside a with block that a graph break split",
                hint="the rest of the function runs in Python",
            )
    tx.output.state.note_carried()
    for ctx in carried:
        ctx.kind.enter(tx, ctx)


def current_state(aspect: str) -> Any:
    """One aspect of the real state, named as ``CarriedKind.expects`` names them."""
    kind, _, device = aspect.partition(":")
    if kind == "grad":
        return torch.is_grad_enabled()
    if kind == "inference":
        return torch.is_inference_mode_enabled()
    if kind == "autocast":
        return (torch.is_autocast_enabled(device), torch.get_autocast_dtype(device))
    if kind == "autocast_cache":
        return torch.is_autocast_cache_enabled()
    if kind == "device":  # what factory calls get: the ``DeviceContext`` mode on the stack
        modes = [m for m in _get_current_function_mode_stack() if isinstance(m, DeviceContext)]
        return str(modes[-1].device) if modes else None
    raise AssertionError(aspect)


#: Converters of other trackers into contexts at BEFORE_WITH (``torch.device`` constants, user
#: objects with ``__enter__``...), registered by the kind modules: ``fn(tx, vt) -> ctx | None``.
WITH_CONVERTERS: list[Callable[[Translator, VariableTracker], ContextVariable | None]] = []


def as_context(tx: Translator, vt: VariableTracker) -> ContextVariable:
    """The context a ``with`` statement enters, else ``Unsupported`` (a clean break at the with)."""
    if isinstance(vt, ContextVariable):
        return vt
    for convert in WITH_CONVERTERS:
        ctx = convert(tx, vt)
        if ctx is not None:
            return ctx
    raise Unsupported(
        "context_manager",
        f"with-block on {vt}",
        hint="the block runs in Python; see docs for the context managers bytegraph traces",
    )


def constant_args(
    what: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> tuple[list[Any], dict[str, Any]]:
    """The Python values of constant arguments, or ``Unsupported``."""
    if not all(v.is_python_constant() for v in [*args, *kwargs.values()]):
        raise Unsupported("context_manager", f"{what} with arguments known only at run time")
    return [a.as_python_constant() for a in args], {
        k: v.as_python_constant() for k, v in kwargs.items()
    }


NONE = ConstantVariable(None)


# Bound last: the dispatcher imports this module (a cycle), and needs what it defines above.
from .. import dispatch  # noqa: E402
