"""Context managers in traced code: the tracker family, ``with`` exit slots and carried contexts.

``ContextVariable`` is the base of every context manager the tracer understands (the kinds are in
``state_contexts.py``: grad mode, inference mode, autocast, ``torch.device``, ``fork_rng``,
``nullcontext``; and ``generator_contexts.py``: ``@contextmanager`` functions, user classes). BEFORE_WITH
pushes a ``ContextExitVariable`` (the block's exit slot) and calls ``enter``; the block's exit calls
``exit``. What they change is recorded in the trace's ``GlobalStateLog`` (``tracer/global_state.py``).

At a graph break inside a block, the rewritten code builds and enters the real context from its
``recipe()``; the exit slot then holds that ``ContextExit``. A compiled resume function receiving one
wraps it as a ``CarriedContextVariable`` (guarded on its key, not its identity) whose ``exit`` is
traced (modelled in the graph, replayed for real after it). Contexts that cannot be rebuilt that way
(``reenterable = False``: a suspended generator, user code) make a break inside their block a break at
their ``with`` instead (``GlobalStateLog.rollback_point``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...guards.guard import Guard
from ...guards.sources import AttrSource, Source
from ..context_runtime import ContextExit, ContextRecipe
from ..exc import Unsupported
from ..global_state import GlobalStateLog, StateEvent
from .base import VariableTracker
from .constant import ConstantVariable

if TYPE_CHECKING:
    from ...codegen.emit import Codegen
    from ..translator import Translator


@dataclass(eq=False)
class ContextVariable(VariableTracker):
    """A context manager object. Subclasses implement ``enter``/``exit`` (recording events in
    ``log``) and, when re-enterable, ``recipe``. Identity matters: events refer to the tracker."""

    log: GlobalStateLog = field(repr=False, default=None)  # type: ignore[assignment]
    name: str = ""  #: the rewritten code's local for its ``ContextExit``
    source: Source | None = None

    #: Whether rewritten code can build and enter it again at a graph break (see the module doc).
    reenterable = True

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


@dataclass(eq=False)
class ContextExitVariable(VariableTracker):
    """The exit slot BEFORE_WITH leaves on the stack: calling it (the block's end) exits ``ctx``."""

    ctx: ContextVariable
    source: Source | None = None

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        if len(args) != 3 or kwargs or not all(a.is_python_constant() for a in args):
            raise Unsupported("context_manager", "a with-block's __exit__ called with an exception")
        if any(a.as_python_constant() is not None for a in args):
            raise Unsupported("context_manager", "a with-block's __exit__ called with an exception")
        return self.ctx.exit(tx)

    def reconstruct(self, cg: Codegen) -> None:
        if self.source is not None:
            self.source.reconstruct(cg)
        else:
            self.ctx.load_exit(cg)

    def carried(self) -> bool:
        """Is it a ``ContextExit`` at run time (a compiled resume function can receive it)?"""
        return self.ctx.reenterable

    def __repr__(self) -> str:
        return f"ContextExitVariable({self.ctx!r})"


#: ``ContextExit.key[0]`` -> how a compiled resume function traces that context's exit.
CARRIED_EXITS: dict[str, Callable[[Translator, CarriedContextVariable], VariableTracker]] = {}


@dataclass(eq=False)
class CarriedContextVariable(ContextVariable):
    """A context entered before this trace began by rewritten code (a ``ContextExit`` argument of a
    resume function). ``key`` (guarded) says what it is and what its exit restores."""

    key: tuple = ()

    def enter(self, tx: Translator) -> VariableTracker:
        raise Unsupported("context_manager", "entering a context again after a graph break")

    def exit(self, tx: Translator) -> VariableTracker:
        result = CARRIED_EXITS[self.key[0]](tx, self)
        return result

    def load_exit(self, cg: Codegen) -> None:
        self.source.reconstruct(cg)

    def reconstruct(self, cg: Codegen) -> None:
        self.source.reconstruct(cg)
        cg.load_attr("ctx")


def wrap_context_exit(tx: Translator, value: ContextExit, source: Source) -> VariableTracker:
    """A resume function's ``ContextExit`` argument: guarded by type and key, never by identity
    (each call builds a new one)."""
    add = tx.output.add_guard
    add(Guard(source, "TYPE_MATCH", ContextExit, ContextExit))
    key_vt = tx.wrap(value.key, AttrSource(source, "key"))
    if not key_vt.is_python_constant() or value.key[0] not in CARRIED_EXITS or value.done:
        raise Unsupported("context_manager", f"an unknown context reached a resume function: {value}")
    ctx = CarriedContextVariable(log=tx.output.state, source=source, key=value.key)
    return ContextExitVariable(ctx, source)


#: Converters of other trackers into contexts at BEFORE_WITH (``torch.device`` constants, user
#: objects with ``__enter__``...), registered by the kind modules: ``fn(tx, vt) -> ctx | None``.
WITH_CONVERTERS: list[Callable[[Translator, VariableTracker], ContextVariable | None]] = []


def as_context(tx: Translator, vt: VariableTracker) -> ContextVariable:
    """The context a ``with`` statement enters, or ``Unsupported`` (a clean break at the ``with``)."""
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
