"""Context managers and torch's global state: the ``ContextVariable`` family and ``with`` exits,
torch's state switches (grad mode, inference mode, autocast, devices, default dtype...) and what
each changes in the trace's ``GlobalStateLog``, Python-written context managers
(``contextlib.contextmanager``), and contexts carried into a resume function (``enter_carried``).
"""

from __future__ import annotations

import contextlib
import inspect
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from torch.amp.autocast_mode import _enter_autocast, _exit_autocast
from torch.autograd.grad_mode import _enter_inference_mode, _exit_inference_mode
from torch.overrides import TorchFunctionMode, _get_current_function_mode_stack
from torch.utils._contextlib import _DecoratorContextManager
from torch.utils._device import DeviceContext, _device_constructors
from torch.utils._python_dispatch import TorchDispatchMode

from ...codegen.emit import Codegen
from ...codegen.pyversion import returned_constants
from ...guards.sources import AttrSource, Source
from ..context_runtime import (
    ContextExit,
    ContextRecipe,
    apply_state,
    enter_autocast,
    enter_inference_mode,
    exit_autocast,
    exit_inference_mode,
    fork_rng_restore,
    fork_rng_save,
    read_state,
    set_default_dtype,
    set_deterministic,
)
from ..exc import PythonError, TracedException, Unsupported
from ..global_state import GlobalStateLog, StateEvent
from . import call_rules, dispatch
from .base import MethodCallVariable, VariableTracker
from .call_rules import call_rule, call_rules_for
from .constants import ConstantVariable
from .functions import CALL_HOOKS, UserFunctionVariable
from .iterators import GeneratorVariable
from .objects import CFunctionVariable, ExceptionVariable, UserObjectVariable

if TYPE_CHECKING:
    from ...codegen.emit import Codegen
    from ..translator import Translator


# Context managers in traced code: the tracker family, ``with`` exit slots and carried contexts.
#
# ``ContextVariable`` is the base of every context manager the tracer understands (the kinds are in
# torch's state switches below: grad mode, inference mode, autocast, ``torch.device``, ``fork_rng``,
# ``nullcontext``; and Python-written contexts: ``@contextmanager`` functions, user classes).
# BEFORE_WITH pushes a ``ContextExitVariable`` (the block's exit slot) and calls ``enter``; the
# block's exit calls ``exit``. What they change is recorded in the trace's ``GlobalStateLog``
# (``tracer/global_state.py``).
#
# At a graph break inside a block, the rewritten code builds and enters the real context from its
# ``recipe()``; the exit slot then holds that ``ContextExit``. A compiled resume function receiving
# one wraps it as a ``CarriedContextVariable`` (guarded on its key, not its identity): its rewritten
# code leaves the real context just before the graph, which enters it again and ends it where the
# block ends (``CarriedKind``, kinds in ``CARRIED_KINDS``). Contexts that cannot be rebuilt
# that way (``reenterable = False``: a suspended generator, user code) make a break inside their
# block a break at their ``with`` instead (``GlobalStateLog.rollback_point``).


@dataclass(eq=False)
class ContextVariable(VariableTracker):
    """A context manager object. Subclasses implement ``enter``/``exit`` (recording events in
    ``log``) and, when re-enterable, ``recipe``. Identity matters: events refer to the tracker."""

    log: GlobalStateLog = field(repr=False, default=None)  # type: ignore[assignment]
    name: str = ""  #: the rewritten code's local for its ``ContextExit``
    source: Source | None = None
    #: the real object, where the trace was given one (``wrap_context_object``)
    given: Any = field(default=None, repr=False)

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

    def exit_with(self, tx: Translator, args: list[VariableTracker]) -> VariableTracker:
        """Leave it as an exception leaves the block: ``args`` are ``__exit__``'s (the exception's
        type, itself, its traceback); the result says whether it swallows the exception."""
        if self.exit_ignores_exception:
            return self.exit(tx)  # None: the exception goes on
        raise Unsupported("context_manager", "a with-block's __exit__ called with an exception")

    def exit_may_swallow(self) -> bool:
        """May ``__exit__`` return a true value, swallowing the exception that leaves the block?
        Asked where an exception may leave the block (a graph break's handler, a traced raise)."""
        return not self.exit_ignores_exception

    def recipe(self) -> ContextRecipe:
        raise Unsupported("context_manager", f"{self} cannot be rebuilt after a graph break")

    def exit_entered_before(self, tx: Translator) -> VariableTracker:
        """``cm.__exit__(None, None, None)`` on a real object entered before the trace (a resume
        function's local, an input): what its exit restores lies in the object."""
        raise Unsupported("context_manager", f"leaving {self}, entered before the trace")

    def opening_event(self) -> StateEvent | None:
        """The event of the trace that entered it (what its exit undoes), None where it was
        entered before the trace or never."""
        return self.log.find(self, "enter") if self.log is not None else None

    def exit_reconstructable(self) -> bool:
        """Can the exit slot of an open block be rebuilt as a Python value at a graph break?"""
        return self.reenterable

    def load_exit(self, cg: Codegen) -> None:
        """Push the callable that leaves this (open) context for real."""
        if not self.reenterable:
            raise Unsupported("context_manager", f"the exit of {self} cannot be rebuilt")
        if self.source is not None and self.opening_event() is None:  # entered before the trace
            self.source.reconstruct(cg)
            cg.load_attr("__exit__")
            return
        cg.load_local(self.name)

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        """``torch.no_grad()(fn)`` (``@torch.no_grad()`` on a function made in the trace)."""
        if self.decorates and len(args) == 1 and not kwargs and _plain_function(args[0]):
            return ContextDecoratedVariable(self, args[0])
        raise Unsupported("call", f"calling {self}")

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        """``cm.__enter__`` and ``cm.__exit__``, called by the code itself (a context entered
        in one place and left in another): what a with-block's enter and exit do."""
        if name in ("__enter__", "__exit__"):
            return MethodCallVariable(self, name)
        return super().var_getattr(tx, name)

    def call_method(
        self,
        tx: Translator,
        name: str,
        args: list[VariableTracker],
        kwargs: dict[str, VariableTracker],
    ) -> VariableTracker:
        if name == "__enter__" and not args and not kwargs:
            return self.enter(tx)
        if name == "__exit__" and not kwargs and len(args) in (0, 3):
            if self.opening_event() is None:  # entered before the trace: the real object knows
                return self.exit_entered_before(tx)
            if all(a.is_python_constant() and a.as_python_constant() is None for a in args):
                return self.exit(tx)
            return self.exit_with(tx, args)
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
        # a new context, with its own name in the log (torch's decorator enters a clone)
        ctx = self.ctx.clone(name="", source=None, given=None)
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
        return self.ctx.exit(tx) if plain else self.ctx.exit_with(tx, args)

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


#: ``ContextExit.key[0]`` -> its ``CarriedKind`` (registered by the state switches below).
CARRIED_KINDS: dict[str, CarriedKind] = {}


@dataclass(eq=False)
class CarriedContextVariable(ContextVariable):
    """A context entered before this trace began, by rewritten code (a ``ContextExit`` argument of a
    resume function). ``key`` (guarded) says what it is and what its exit restores."""

    key: tuple = ()

    #: every kind carried (grad and inference mode, autocast, device, null, record_function)
    #: leaves the same way whatever exception leaves the block, and swallows none
    exit_ignores_exception = True

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


# Context managers written in Python: ``@contextlib.contextmanager`` functions and user classes
# with ``__enter__``/``__exit__``.
#
# ``GeneratorContextVariable`` is what calling a ``@contextmanager`` function gives: entering it
# runs the generator function (inlined) up to its ``yield``, exiting runs it on to its end, so the
# code before and after the ``yield`` (``try``/``finally`` cleanup included) is traced like any
# code. ``UserMethodContextVariable`` inlines a user object's ``__enter__`` and ``__exit__``.
# Neither can be rebuilt by rewritten code in the middle of its block (a generator suspended at its
# ``yield``, user code that would run twice), so a graph break inside such a block is taken at its
# ``with`` instead (``reenterable = False``); a user object that came from the inputs keeps its real
# ``__exit__``. TorchFunctionMode/TorchDispatchMode objects are refused: their ``with`` block runs
# in Python.

#: The code of the function ``@contextlib.contextmanager`` returns (``helper(*args, **kwds)``).
HELPER_CODE = contextlib.contextmanager(lambda: None).__code__


@dispatch.rule("throw")
def _throw_refused(tx: Translator, gen: VariableTracker, exc: VariableTracker) -> bool:
    """``dispatch.throw`` into what is not a generator made in the trace (its rule:
    ``opcodes/exceptions.py``, as throwing unwinds the generator's frame): a break."""
    raise Unsupported("generator", f"an exception thrown into {gen!r}")


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

    def exit_with(self, tx: Translator, args: list[VariableTracker]) -> VariableTracker:
        """The exception thrown into the generator at its ``yield``: swallowed where the
        generator then ends, as ``contextlib``'s ``__exit__`` does."""
        if len(args) != 3 or not isinstance(args[1], ExceptionVariable):
            return super().exit_with(tx, args)
        swallowed = dispatch.throw(tx, self.log.find(self, "enter").data["gen"], args[1])
        self.record(tx, "exit")
        return ConstantVariable(swallowed)

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
) -> VariableTracker | None:
    """Calling ``helper``, the function ``@contextmanager`` made around a generator function; a
    method's (``helper`` bound to an object) gives the generator function that object first. None
    (the call inlined as usual) where the generator function is not a Python function."""
    func = helper.closure_value(tx, "func")
    self_vt = getattr(helper, "self_vt", None)
    if self_vt is not None:
        if not isinstance(func, UserFunctionVariable) or func.self_vt is not None:
            return None
        func = func.clone(self_vt=self_vt)
    return GeneratorContextVariable(
        log=tx.output.state, helper=helper, fn=func, args=args, kwargs=kwargs
    )


_contextmanager_call.accepts_bound = True  # type: ignore[attr-defined]
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
        return self.exit_with(tx, [none, none, none])

    def exit_may_swallow(self) -> bool:
        """Not where ``__exit__`` is a Python function of the object's class whose every
        ``return`` gives None or False."""
        try:
            cls = self.obj.python_type()
        except Exception:  # noqa: BLE001 (a tracker that cannot say: it may)
            return True
        method = inspect.getattr_static(cls, "__exit__", None)
        if not isinstance(method, types.FunctionType):
            return True
        return any(
            not returned or returned[0] not in (None, False)
            for returned in returned_constants(method.__code__)
        )

    def exit_with(self, tx: Translator, args: list[VariableTracker]) -> VariableTracker:
        result = self.obj.call_method(tx, "__exit__", list(args), {})
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


# Context managers that switch torch global state: grad mode, inference mode, autocast,
# ``torch.device``, ``torch.random.fork_rng``, ``contextlib.nullcontext``.
#
# Calls of torch's context callables (``torch.no_grad()``, ``torch.set_grad_enabled(m)``,
# ``torch.inference_mode()``, ``fork_rng()``) are entries of ``call_rules`` that make the tracker;
# ``construct(tx, fn, args, kwargs)`` does it for ``torch.autocast`` classes and ``nullcontext``;
# ``wrap_context_object`` does the same for a real one the code reaches (``@torch.no_grad()`` and
# ``@torch.autocast(...)`` decorators hold one). Each tracker enters and exits with graph nodes
# torch's own tracer uses (``_set_grad_enabled``, ``_enter_autocast``/``_exit_autocast``,
# ``_enter_inference_mode``...), switching the real state at the same time while tracing.
# ``torch.device`` contexts have no node: factory calls under them get the device as an explicit
# argument (``device_for``). How a resume function starting inside a block traces these contexts is
# in ``CARRIED_KINDS``; traced setters (``set_default_dtype``, ``set_default_device``,
# ``use_deterministic_algorithms``) and queries of the state are entries of ``call_rules``.

_GRAD = frozenset({"grad"})


def _switch_grad(tx: Translator, mode: bool) -> Callable[[], None]:
    """Grad mode ``mode`` from here on, in the graph and for real; returns the real undo."""
    prev = torch.is_grad_enabled()
    tx.output.state_node(torch._C._set_grad_enabled, (mode,))
    torch._C._set_grad_enabled(mode)
    return lambda: torch._C._set_grad_enabled(prev)


@dataclass(eq=False)
class GradModeVariable(ContextVariable):
    """``torch.no_grad()``, ``torch.enable_grad()``, ``torch.set_grad_enabled(mode)`` (which
    switches when built: ``applied``; its exit restores the mode from before it was built)."""

    exit_ignores_exception = True

    mode: bool = False
    factory: Any = None
    applied: bool = False

    @property
    def decorates(self) -> bool:  # type: ignore[override]
        """``@torch.no_grad()``, ``@torch.enable_grad()``; ``set_grad_enabled`` switched already."""
        return not self.applied

    def created(self, tx: Translator) -> GradModeVariable:
        """``torch.set_grad_enabled(mode)`` was called: switch now (a "create" event)."""
        prev = torch.is_grad_enabled()
        undo = _switch_grad(tx, self.mode)
        key = ("grad", self.mode, prev)
        self.record(tx, "create", undo=undo, touches=_GRAD, key=key, data={"prev": prev})
        return self

    def enter(self, tx: Translator) -> VariableTracker:
        if self.applied:
            made = self.log.find(self, "create")
            self.record(tx, "enter", key=made.key, data=made.data)
            return NONE
        prev = torch.is_grad_enabled()
        undo = _switch_grad(tx, self.mode)
        key = ("grad", self.mode, prev)
        self.record(tx, "enter", undo=undo, touches=_GRAD, key=key, data={"prev": prev})
        return NONE

    def opening_event(self) -> StateEvent | None:
        """Its enter, or for ``set_grad_enabled(mode)`` the call that switched already."""
        entered = super().opening_event()
        if entered is None and self.applied and self.log is not None:
            return self.log.find(self, "create")
        return entered

    def exit(self, tx: Translator) -> VariableTracker:
        prev = self.opening_event().data["prev"]
        self.record(tx, "exit", undo=_switch_grad(tx, prev), touches=_GRAD)
        return NONE

    def exit_entered_before(self, tx: Translator) -> VariableTracker:
        """``no_grad``/``enable_grad``'s ``__exit__`` switches grad mode to the ``prev`` its
        ``__enter__`` stored on the object (read and guarded here); the replay after the graph
        calls the real ``__exit__`` (``load_exit``)."""
        value = self.given
        if self.applied or value is None or type(value.__dict__.get("prev")) is not bool:
            return super().exit_entered_before(tx)
        prev = tx.wrap(value.prev, AttrSource(self.source, "prev")).as_python_constant()
        self.record(tx, "exit", undo=_switch_grad(tx, prev), touches=_GRAD)
        return NONE

    def recipe(self) -> ContextRecipe:
        if self.applied:
            return ContextRecipe(torch.set_grad_enabled, (self.mode,))
        return ContextRecipe(self.factory)

    def __repr__(self) -> str:
        return f"GradModeVariable(grad_enabled={self.mode})"


@dataclass(eq=False)
class InferenceModeVariable(ContextVariable):
    """``torch.inference_mode(mode)``: a ``torch._C._InferenceMode`` guard, which also sets grad
    mode."""

    exit_ignores_exception = True
    decorates = True

    mode: bool = True

    def enter(self, tx: Translator) -> VariableTracker:
        key = ("inference", self.mode, torch.is_grad_enabled(), torch.is_inference_mode_enabled())
        holder = [_enter_inference_mode(self.mode)]
        node = tx.output.state_node(enter_inference_mode, (self.mode,))
        self.record(
            tx,
            "enter",
            undo=lambda: _exit_inference_mode(holder[0]),
            close=lambda g: _state_call(g, exit_inference_mode, (node,)),
            touches=_GRAD,
            key=key,
            data={"node": node, "holder": holder},
        )
        return NONE

    def exit(self, tx: Translator) -> VariableTracker:
        data = self.log.find(self, "enter").data
        holder = data["holder"]
        _exit_inference_mode(holder[0])
        tx.output.state_node(exit_inference_mode, (data["node"],))

        def undo() -> None:
            holder[0] = _enter_inference_mode(self.mode)

        self.record(tx, "exit", undo=undo, touches=_GRAD)
        return NONE

    def recipe(self) -> ContextRecipe:
        return ContextRecipe(torch.inference_mode, (self.mode,))


@dataclass(eq=False)
class AutocastVariable(ContextVariable):
    """``torch.autocast(device, dtype, enabled, cache_enabled)`` with its arguments resolved as
    torch resolves them (defaults, devices without autocast support)."""

    exit_ignores_exception = True

    device: str = "cpu"
    dtype: Any = None
    enabled: bool = True
    cache: bool = True

    @property
    def args(self) -> tuple:
        return (self.device, self.dtype, self.enabled, self.cache)

    def enter(self, tx: Translator) -> VariableTracker:
        prev = (
            torch.is_autocast_enabled(self.device),
            torch.get_autocast_dtype(self.device),
            torch.is_autocast_cache_enabled(),
        )
        holder = [_enter_autocast(*self.args)]
        node = tx.output.state_node(enter_autocast, self.args)
        self.record(
            tx,
            "enter",
            undo=lambda: _exit_autocast(holder[0]),
            close=lambda g: _state_call(g, exit_autocast, (node,)),
            key=("autocast", *self.args, *prev),
            data={"node": node, "holder": holder},
        )
        return self

    def exit(self, tx: Translator) -> VariableTracker:
        data = self.log.find(self, "enter").data
        holder = data["holder"]
        _exit_autocast(holder[0])
        tx.output.state_node(exit_autocast, (data["node"],))

        def undo() -> None:
            holder[0] = _enter_autocast(*self.args)

        self.record(tx, "exit", undo=undo)
        return ConstantVariable(False)

    def recipe(self) -> ContextRecipe:
        kwargs = (("dtype", self.dtype), ("enabled", self.enabled), ("cache_enabled", self.cache))
        return ContextRecipe(torch.autocast, (self.device,), kwargs)

    def __repr__(self) -> str:
        return f"AutocastVariable({self.device}, {self.dtype}, enabled={self.enabled})"


@dataclass(eq=False)
class DeviceContextVariable(ContextVariable):
    """``with torch.device(d):``: factory calls without a ``device`` get ``d`` (``device_for``)."""

    exit_ignores_exception = True

    device: Any = None

    def enter(self, tx: Translator) -> VariableTracker:
        prev = self.log.default_device() or torch.get_default_device()
        key = ("device", str(self.device), str(prev))
        self.record(tx, "enter", device=self.device, key=key)
        return ConstantVariable(self.device)

    def exit(self, tx: Translator) -> VariableTracker:
        self.record(tx, "exit")
        return NONE

    def recipe(self) -> ContextRecipe:
        return ContextRecipe(torch.device, (str(self.device),))


def device_for(tx: Translator, fn: Any, kwargs: dict[str, VariableTracker]) -> Any:
    """The device a ``torch.device`` context of the trace gives the factory call ``fn``, or None."""
    device = tx.output.state.default_device()
    if device is None or fn not in _device_constructors():
        return None
    given = kwargs.get("device")
    if given is not None and not (
        given.is_python_constant() and given.as_python_constant() is None
    ):
        return None
    return device


@dataclass(eq=False)
class ForkRngVariable(ContextVariable):
    """``torch.random.fork_rng(...)``: the RNG states saved by a graph node and restored by another.
    A break inside its block is taken at its ``with`` (re-entering would save the states again)."""

    device_type: str = "cuda"
    devices: tuple[int, ...] = ()

    reenterable = False

    def enter(self, tx: Translator) -> VariableTracker:
        node = tx.output.state_node(fork_rng_save, (self.device_type, self.devices), runtime=True)
        self.record(tx, "enter", data={"node": node})
        return NONE

    def exit(self, tx: Translator) -> VariableTracker:
        node = self.log.find(self, "enter").data["node"]
        tx.output.state_node(fork_rng_restore, (node, self.device_type, self.devices), runtime=True)
        self.record(tx, "exit")
        return NONE


@dataclass(eq=False)
class NullContextVariable(ContextVariable):
    """``contextlib.nullcontext(value)``: enters as ``value``, changes nothing."""

    exit_ignores_exception = True

    value: VariableTracker = field(default_factory=lambda: NONE)

    def enter(self, tx: Translator) -> VariableTracker:
        self.record(tx, "enter", key=("null",))
        return self.value

    def exit(self, tx: Translator) -> VariableTracker:
        self.record(tx, "exit")
        return NONE

    def recipe(self) -> ContextRecipe:
        return ContextRecipe(contextlib.nullcontext)


def _state_call(graph: torch.fx.Graph, fn: Any, args: tuple) -> None:
    node = graph.call_function(fn, args)
    node.meta["bytegraph_state"] = True


# -- state set by calls ----------------------------------------------------------------------------
def _set_state(
    tx: Translator, setter: Callable[..., Any], node_fn: Any, node_args: tuple, aspect: str
) -> VariableTracker:
    """A call switching one absolute aspect of the state (a "set" event): a graph node, the real
    switch now, and the same call again in the rewritten code after the graph."""
    before = read_state()
    try:
        setter()
    except Exception as e:  # noqa: BLE001 (bad arguments: it raises again when run in Python)
        raise Unsupported("torch_effect", f"setting torch state raised {e!r}") from None
    tx.output.state_node(node_fn, node_args, runtime=True)
    event = StateEvent(
        "set",
        call=(node_fn, node_args),
        undo=lambda: apply_state(before),
        touches=frozenset({aspect}),
    )
    tx.output.state.add(event)
    return NONE


@call_rule(torch.set_default_dtype)
def _set_default_dtype(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    (dtype,), _ = constant_args("set_default_dtype", args, kwargs)
    tx.output.before_text_state_change("set_default_dtype()")
    return _set_state(
        tx, lambda: torch.set_default_dtype(dtype), set_default_dtype, (dtype,), "dtype"
    )


@call_rule(torch.use_deterministic_algorithms)
def _use_deterministic(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    values, named = constant_args("use_deterministic_algorithms", args, kwargs)
    if len(values) != 1 or set(named) - {"warn_only"}:
        raise Unsupported("torch_effect", "use_deterministic_algorithms() with bad arguments")
    mode, warn_only = bool(values[0]), bool(named.get("warn_only", False))
    return _set_state(
        tx,
        lambda: torch.use_deterministic_algorithms(mode, warn_only=warn_only),
        set_deterministic,
        (mode, warn_only),
        "deterministic",
    )


@call_rule(torch.set_default_device)
def _set_default_device(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """``torch.set_default_device(device)``: in eager it installs a ``DeviceContext`` torch function
    mode (``None`` removes it). The trace does not install it (the mode would run on the tracer's
    own calls): from here on, factory calls get the device as an argument (``device_for``; ``cpu``
    after ``None``), and the rewritten code makes the same call after the graph, which leaves
    torch's state as eager's. Taken only where the device modes are the plain ones (at most the
    global context, as the only ``DeviceContext``, none entered before it): eager's bookkeeping
    when it is mixed with ``with torch.device(...)`` blocks still open is left to Python, as is a
    device whose factories could not run here."""
    (device,), _ = constant_args("set_default_device", args, kwargs)
    tx.output.before_text_state_change("set_default_device()")
    log = tx.output.state
    if any(e.device is not None for e in log.open_regions()) or not _plain_device_modes():
        raise Unsupported(
            "torch_effect",
            "set_default_device() while a torch.device block is open",
            hint="set the default device outside the with block",
        )
    try:
        target = torch.device("cpu") if device is None else torch.device(device)
    except Exception as e:  # noqa: BLE001 (bad arguments: it raises again when run in Python)
        raise Unsupported("torch_effect", f"set_default_device() raised {e!r}") from None
    accelerator = torch.accelerator.current_accelerator()
    if target.type not in ("cpu", "meta") and getattr(accelerator, "type", None) != target.type:
        raise Unsupported("torch_effect", f"set_default_device({device!r}): no such device here")
    log.add(StateEvent("set", call=(torch.set_default_device, (device,)), device=target))
    return NONE


def _plain_device_modes() -> bool:
    """The ``DeviceContext`` modes on the real stack are none, or exactly the global one of
    ``torch.set_default_device`` (which it replaces), itself entered outside any other."""
    modes = [m for m in _get_current_function_mode_stack() if isinstance(m, DeviceContext)]
    current = getattr(torch._GLOBAL_DEVICE_CONTEXT, "device_context", None)
    if current is None:
        return not modes
    return len(modes) == 1 and modes[0] is current and current.prev_mode is None


#: Queries of state the trace switches for real and the guards check at its start (autocast and
#: deterministic algorithms: ``guards.kinds.global_state_guards``): answered as constants.
call_rules_for(
    torch.is_autocast_enabled,
    torch.get_autocast_dtype,
    torch.is_autocast_cache_enabled,
    torch.are_deterministic_algorithms_enabled,
    torch.is_deterministic_algorithms_warn_only_enabled,
    owner=__name__,
    fold=True,
)


@call_rule(torch.is_inference_mode_enabled)
def _inference_mode_query(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """``torch.is_inference_mode_enabled()``: the state while tracing, guarded at the start."""
    start = tx.output.state.start_inference
    tx.output.assume_state(("inference",), torch.is_inference_mode_enabled, start)
    return ConstantVariable(torch.is_inference_mode_enabled())


# -- building trackers ---------------------------------------------------------------------------
@call_rule(torch.no_grad, torch.enable_grad)
def _grad_mode(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    constant_args(fn.__name__, args, kwargs)
    return GradModeVariable(log=tx.output.state, mode=fn is torch.enable_grad, factory=fn)


@call_rule(torch.set_grad_enabled, torch._C._set_grad_enabled)
def set_grad_enabled(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """``torch.set_grad_enabled(mode)`` switches at once and is a context too;
    ``torch._C._set_grad_enabled(mode)`` only switches."""
    (mode,), _ = constant_args("set_grad_enabled", args, kwargs)
    ctx = GradModeVariable(log=tx.output.state, mode=bool(mode), applied=True).created(tx)
    return ctx if fn is torch.set_grad_enabled else NONE


@call_rule(torch.inference_mode)
def _inference_mode(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    values, named = constant_args("inference_mode", args, kwargs)
    mode = named.get("mode", values[0] if values else True)
    if not isinstance(mode, bool):
        return None  # ``inference_mode(fn)``: the decorator form, made outside the trace
    return InferenceModeVariable(log=tx.output.state, mode=mode)


@call_rule(torch.random.fork_rng)
def _fork_rng_call(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    return _fork_rng(tx, *constant_args("fork_rng", args, kwargs))


def construct(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """The tracker for ``fn(*args, **kwargs)`` if ``fn`` is ``torch.autocast`` or a subclass of
    it, or ``contextlib.nullcontext``, else None (torch's other context callables are the call
    rules above)."""
    if isinstance(fn, type) and issubclass(fn, torch.autocast):
        values, named = constant_args("autocast", args, kwargs)
        try:
            real = fn(*values, **named)
        except Exception as e:  # noqa: BLE001 (it raises again when the call runs in Python)
            raise Unsupported("context_manager", f"torch.autocast(...) raised {e!r}") from None
        return _autocast_from(tx, real)
    if fn is contextlib.nullcontext:
        if kwargs or len(args) > 1:
            raise Unsupported("context_manager", "nullcontext() with bad arguments")
        return NullContextVariable(log=tx.output.state, value=args[0] if args else NONE)
    return None


def _autocast_from(tx: Translator, real: torch.autocast, source: Source | None = None) -> Any:
    """An autocast tracker with the settings of the real object ``real`` (built at trace time, which
    resolves the defaults and checks as torch does, warnings included)."""
    if source is not None:
        for name in ("device", "fast_dtype", "_enabled", "_cache_enabled"):
            tx.wrap(getattr(real, name), AttrSource(source, name))
    return AutocastVariable(
        log=tx.output.state,
        source=source,
        device=real.device,
        dtype=real.fast_dtype,
        enabled=real._enabled,
        cache=real._cache_enabled,
    )


def _fork_rng(tx: Translator, values: list[Any], named: dict[str, Any]) -> ContextVariable:
    """``fork_rng(devices=None, enabled=True, _caller=..., _devices_kw=..., device_type=None)``,
    resolved as torch resolves it (the default device type is the current accelerator's)."""
    names = ("devices", "enabled", "_caller", "_devices_kw", "device_type")
    bound = {
        "devices": None,
        "enabled": True,
        "device_type": None,
        **dict(zip(names, values, strict=False)),
    }
    bound.update(named)
    device_type = bound["device_type"]
    if device_type == "meta" or not bound["enabled"]:
        return NullContextVariable(log=tx.output.state)
    if device_type is None:
        accelerator = torch.accelerator.current_accelerator()
        device_type = accelerator.type if accelerator is not None else "cuda"
    module = torch.get_device_module(device_type)
    devices = bound["devices"]
    devices = tuple(range(module.device_count())) if devices is None else tuple(devices)
    return ForkRngVariable(log=tx.output.state, device_type=device_type, devices=devices)


def _make_context(tx: Translator, cls: type, args: list[VariableTracker]) -> VariableTracker:
    """A new context of one of the ``_INSTANCE_KINDS``, as a call of ``cls`` in the trace makes
    it (its entry in ``call_rules``)."""
    ctx = call_rules.CALL_RULES[cls].handler(tx, cls, args, {})
    assert ctx is not None
    return ctx


#: Real context classes whose instances the code may hold (decorators keep one): class -> tracker.
_INSTANCE_KINDS = (torch.no_grad, torch.enable_grad, torch.set_grad_enabled, torch.inference_mode)


def wrap_context_object(
    tx: Translator, value: Any, source: Source | None
) -> VariableTracker | None:
    """A real context object (or the bound ``clone`` of one, which torch's context decorators call
    on each call), guarded by identity and the settings read from it; None for anything else."""
    if isinstance(value, types.MethodType) and isinstance(value.__self__, _DecoratorContextManager):
        if value.__func__.__name__ != "clone" or type(value.__self__) not in _INSTANCE_KINDS:
            return None
        _guard_identity(tx, value, source)
        self_source = AttrSource(source, "__self__") if source is not None else None
        args = _instance_args(tx, value.__self__, self_source)
        return ContextFactoryVariable(type(value.__self__), args)
    if type(value) in _INSTANCE_KINDS:
        if type(value) is torch.set_grad_enabled:  # it switched when made; only its exit is left
            raise Unsupported("context_manager", "entering a set_grad_enabled object made earlier")
        _guard_kind(tx, value, source)
        ctx = _make_context(tx, type(value), _instance_args(tx, value, source))
        return ctx.clone(source=source, given=value)
    if isinstance(value, torch.autocast):
        _guard_kind(tx, value, source)
        return _autocast_from(tx, value, source).clone(given=value)
    return None


#: the kinds of real context objects given to the trace that ``_guard_kind`` guards
_GIVEN_KINDS = (*_INSTANCE_KINDS, torch.autocast)


def _guard_kind(tx: Translator, value: Any, source: Source | None) -> None:
    """A grad or inference mode or autocast object: its tracker reads its type and the
    attributes it guards (``mode``, ``prev``, autocast's settings), never its identity, so an
    object made anew at each call (the one a graph break enters and hands to the resume
    function) matches. It stays another object than every other such object the trace took in
    (an enter of one writes what an exit of the other would read); one object reached twice is
    one tracker (``builder.wrap``)."""
    if source is None:
        return
    output = tx.output
    output.assume_type(source, type(value))
    for other, known in list(output.wrapped.values()):
        if isinstance(other, _GIVEN_KINDS) and known.source is not None and other is not value:
            output.assume_distinct(source, known.source)


def _guard_identity(tx: Translator, value: Any, source: Source | None) -> None:
    if source is not None:
        tx.output.assume_identity(source, value)


def _instance_args(tx: Translator, value: Any, source: Source | None) -> list[VariableTracker]:
    if type(value) in (torch.no_grad, torch.enable_grad):
        return []
    mode_source = AttrSource(source, "mode") if source is not None else None
    return [tx.wrap(value.mode, mode_source) if mode_source else ConstantVariable(value.mode)]


@dataclass(eq=False)
class ContextFactoryVariable(VariableTracker):
    """The bound ``clone`` of a torch context decorator's object: each call makes a new context."""

    cls: type
    args: list[VariableTracker]
    source: Source | None = None

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        if args or kwargs:
            raise Unsupported("context_manager", "clone() takes no arguments")
        return _make_context(tx, self.cls, list(self.args))


def _device_context(tx: Translator, vt: VariableTracker) -> ContextVariable | None:
    """``with torch.device("meta"):`` (the device folded to a constant)."""
    if vt.is_python_constant() and isinstance(vt.as_python_constant(), torch.device):
        return DeviceContextVariable(log=tx.output.state, device=vt.as_python_constant())
    return None


WITH_CONVERTERS.append(_device_context)


# How a compiled resume function traces the contexts it receives open (``contexts.CarriedKind``):
# one entry of ``CARRIED_KINDS`` per kind of ``ContextExit`` key (grad mode, inference mode,
# autocast, ``torch.device``, ``nullcontext``), registered on import.
#
# The rewritten code leaves the real context just before the graph; ``enter`` enters it again at the
# start of the graph (no real change: while tracing, the real context is still on), ``exit`` ends
# that region where the block ends (and switches the real state, for the rest of the trace),
# ``leave`` switches the real state to outside it while the backend compiles, ``recipe`` rebuilds it
# for the rewritten code after the graph, and ``expects`` says what it makes the state inside.


def _grad_enter(tx: Translator, ctx: CarriedContextVariable) -> None:
    _, mode, prev = ctx.key
    tx.output.state_node(torch._C._set_grad_enabled, (mode,))
    ctx.record(tx, "enter", touches=_GRAD, key=ctx.key, data={"prev": prev})


def _grad_exit(tx: Translator, ctx: CarriedContextVariable) -> VariableTracker:
    ctx.record(tx, "exit", undo=_switch_grad(tx, ctx.key[2]), touches=_GRAD)
    return NONE


def _grad_leave(key: tuple) -> Callable[[], None]:
    inside = torch.is_grad_enabled()
    torch._C._set_grad_enabled(key[2])
    return lambda: torch._C._set_grad_enabled(inside)


def _grad_expects(key: tuple, expected: dict[str, Any]) -> None:
    expected["grad"] = key[1]


def _inference_enter(tx: Translator, ctx: CarriedContextVariable) -> None:
    node = tx.output.state_node(enter_inference_mode, (ctx.key[1],))
    ctx.record(
        tx,
        "enter",
        close=lambda g: _state_call(g, exit_inference_mode, (node,)),
        touches=_GRAD,
        key=ctx.key,
        data={"node": node},
    )


def _inference_exit(tx: Translator, ctx: CarriedContextVariable) -> VariableTracker:
    node = ctx.log.find(ctx, "enter").data["node"]
    tx.output.state_node(exit_inference_mode, (node,))
    ctx.record(tx, "exit", undo=_inference_leave(ctx.key), touches=_GRAD)
    return NONE


def _inference_leave(key: tuple) -> Callable[[], None]:
    """Outside a carried ``inference_mode(mode)`` while its guard stays on: a nested guard with the
    state from before it (``_InferenceMode(prev)`` sets grad mode too: set it back as it was)."""
    _, _mode, prev_grad, prev_inference = key
    grad = torch.is_grad_enabled()
    guard = _enter_inference_mode(prev_inference)
    torch._C._set_grad_enabled(prev_grad)

    def undo() -> None:
        torch._C._set_grad_enabled(grad)
        _exit_inference_mode(guard)

    return undo


def _inference_expects(key: tuple, expected: dict[str, Any]) -> None:
    expected["inference"] = key[1]
    expected["grad"] = not key[1]


def _autocast_enter(tx: Translator, ctx: CarriedContextVariable) -> None:
    node = tx.output.state_node(enter_autocast, ctx.key[1:5])
    ctx.record(
        tx,
        "enter",
        close=lambda g: _state_call(g, exit_autocast, (node,)),
        key=ctx.key,
        data={"node": node},
    )


def _autocast_exit(tx: Translator, ctx: CarriedContextVariable) -> VariableTracker:
    node = ctx.log.find(ctx, "enter").data["node"]
    tx.output.state_node(exit_autocast, (node,))
    ctx.record(tx, "exit", undo=_autocast_leave(ctx.key))
    return ConstantVariable(False)


def _autocast_leave(key: tuple) -> Callable[[], None]:
    """Outside a carried autocast while it stays on: a nested one with the settings from before."""
    device, _dtype, _enabled, _cache, prev_enabled, prev_dtype, prev_cache = key[1:]
    mode = _enter_autocast(device, prev_dtype, prev_enabled, prev_cache)
    return lambda: _exit_autocast(mode)


def _autocast_expects(key: tuple, expected: dict[str, Any]) -> None:
    device, dtype, enabled, cache = key[1:5]
    expected[f"autocast:{device}"] = (enabled, dtype)
    expected["autocast_cache"] = cache


def _autocast_recipe(key: tuple) -> ContextRecipe:
    device, dtype, enabled, cache = key[1:5]
    return AutocastVariable(device=device, dtype=dtype, enabled=enabled, cache=cache).recipe()


def _device_enter(tx: Translator, ctx: CarriedContextVariable) -> None:
    ctx.record(tx, "enter", device=torch.device(ctx.key[1]), key=ctx.key)


def _device_exit(tx: Translator, ctx: CarriedContextVariable) -> VariableTracker:
    # the real one stays on while tracing: what it would give is passed explicitly from here on
    ctx.record(tx, "exit")
    ctx.record(tx, "region", opens=True, device=torch.device(ctx.key[2]))
    return NONE


def _device_expects(key: tuple, expected: dict[str, Any]) -> None:
    """Inside the block, factories get its device, unless the code changed that directly (a
    ``torch.set_default_device`` in the block, run in Python at the break)."""
    expected["device"] = key[1]


def _null_enter(tx: Translator, ctx: CarriedContextVariable) -> None:
    ctx.record(tx, "enter", key=ctx.key)


def _null_exit(tx: Translator, ctx: CarriedContextVariable) -> VariableTracker:
    ctx.record(tx, "exit")
    return NONE


def _no_expectation(key: tuple, expected: dict[str, Any]) -> None:
    pass


def _stays(key: tuple) -> Callable[[], None]:
    return lambda: None


CARRIED_KINDS.update(
    grad=CarriedKind(
        _grad_enter,
        _grad_exit,
        lambda key: ContextRecipe(torch.set_grad_enabled, (key[1],)),
        _grad_expects,
        _grad_leave,
    ),
    inference=CarriedKind(
        _inference_enter,
        _inference_exit,
        lambda key: ContextRecipe(torch.inference_mode, (key[1],)),
        _inference_expects,
        _inference_leave,
    ),
    autocast=CarriedKind(
        _autocast_enter, _autocast_exit, _autocast_recipe, _autocast_expects, _autocast_leave
    ),
    device=CarriedKind(
        _device_enter,
        _device_exit,
        lambda key: ContextRecipe(torch.device, (key[1],)),
        _device_expects,
        _stays,
    ),
    null=CarriedKind(
        _null_enter,
        _null_exit,
        lambda key: ContextRecipe(contextlib.nullcontext),
        _no_expectation,
        _stays,
    ),
)
