"""``nn.Module`` instances created during the trace.

``construct_module(tx, cls_vt, args, kwargs)`` is ``cls(...)`` for a module class. Two cases:

* a class of ``torch`` itself (``nn.CrossEntropyLoss()``, ``nn.Linear(4, 3)``) built from
  constants: the module is built for real now and rebuilt by the rewritten code before the graph
  runs (``SideEffects.prologue``), see ``_build_torch_module``. Like everything in ``torch``'s
  namespaces, its classes are constants of the trace: nothing reached from it is guarded;
* a user subclass of ``nn.Module`` (its ``__init__``, if any, chaining through user classes to
  ``nn.Module.__init__``): a ``NewModuleVariable``, whose ``__init__`` is inlined like any new
  object's and whose class attributes are guarded through its class, see ``_trace_user_module``.

Anything else (a ``__setattr__`` override, a ``torch`` base class with its own ``__init__`` under a
user one, non-constant arguments to a ``torch`` module) raises ``Unsupported``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from ....guards.sources import FreshSource, Source
from ... import deferred_checks
from ...exc import Unsupported
from ..base import VariableTracker
from ..constants.constant import ConstantVariable
from ..functions.callables import UserFunctionVariable
from ..objects.attributes import (
    MISSING,
    bind_class_attribute,
    class_attr_source,
    is_data_descriptor,
    read_descriptor,
    type_lookup,
)
from .nn_modules import MODULE_MEMBER_METHODS, NNModuleVariable

if TYPE_CHECKING:
    from ....codegen.emit import Codegen
    from ...translator import Translator


def construct_module(
    tx: Translator,
    cls_vt: VariableTracker,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker:
    """``cls(*args, **kwargs)`` for a subclass ``cls`` of ``nn.Module``."""
    cls = cls_vt.as_python_constant()
    if all(_is_torch_class(k) for k in cls.__mro__ if k is not object):
        return _build_torch_module(tx, cls, args, kwargs)
    return _trace_user_module(tx, cls_vt, args, kwargs)


#: Types of constructor arguments a ``torch.nn`` module may be rebuilt from (immutable values,
#: loaded as constants by the rewritten code).
_MODULE_ARG_TYPES = (int, float, bool, str, type(None), torch.dtype, torch.device, enum.Enum)
_CLASS_HOOKS = ("__init__", "__new__", "__setattr__", "__getattr__", "__getattribute__", "__del__")
#: Substrings of the names of ops that draw from the random number generator.
_RANDOM_OPS = (
    "rand",
    "dropout",
    "normal",
    "bernoulli",
    "multinomial",
    "poisson",
    "uniform",
    "exponential",
    "geometric",
    "cauchy",
    "gumbel",
    "rrelu",
    "fractional",
)


def _build_torch_module(
    tx: Translator, cls: type, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """``nn.CrossEntropyLoss()``, ``nn.Linear(4, 3)`` in a traced function: a module of a class
    whose construction is ``torch.nn``'s own code, from constant arguments. It is built now (the
    random number generator is put back as it was), traced as a module reached through a
    ``FreshSource``, and the rewritten code builds the same module *before the graph runs*
    (``SideEffects.prologue``): a fresh one on every call, with fresh parameters, as eager.
    Building it earlier than eager does is only visible through the random number generator:
    refused when the constructor draws from it and the graph already drew before this point."""
    values = [_module_arg(cls, a) for a in args]
    kwvalues = {k: _module_arg(cls, v) for k, v in kwargs.items()}
    _check_entry_state(tx, cls)
    module, drew = _build_keeping_rng(cls, values, kwvalues)
    if drew and any(_is_random(node) for node in tx.output.graph.nodes):
        raise Unsupported(
            "rng_order",
            f"{cls.__name__}() draws random numbers after random ops of the graph",
            hint="create the module before the random ops (or outside the compiled function)",
        )
    effects = tx.output.side_effects
    # built by the rewritten code before the graph runs (its __init__ may draw random numbers)
    deferred_checks.note_effect(tx.output, f"creating a {cls.__name__} module")
    name = effects.new_name("__bg_fresh")
    effects.add_prologue((name, cls, tuple(values), kwvalues))
    return tx.wrap(module, FreshSource(name))


def _is_torch_class(cls: type) -> bool:
    return cls.__module__ == "torch" or cls.__module__.startswith("torch.")


def _module_arg(cls: type, vt: VariableTracker) -> Any:
    value = vt.as_python_constant() if vt.is_python_constant() else MISSING
    if not _immutable(value):
        raise Unsupported(
            "new_object", f"creating a {cls.__name__} module from non-constant argument {vt}"
        )
    return value


def _immutable(value: Any) -> bool:
    if type(value) is tuple:
        return all(_immutable(v) for v in value)
    return isinstance(value, _MODULE_ARG_TYPES) and value is not MISSING


def _check_entry_state(tx: Translator, cls: type) -> None:
    """The prologue builds the module under the state the call started with; the trace must be
    under the same state here (parameters take the default dtype and device; a ``torch.device``
    block of the trace is not entered for real while tracing: its device is the trace's)."""
    device = tx.output.state.default_device() or torch.get_default_device()
    now = (torch.get_default_dtype(), str(device))
    now += (torch.is_inference_mode_enabled(),)
    if now != tx.output.side_effects.entry_state:
        raise Unsupported(
            "new_object", f"creating a {cls.__name__} module under a changed default dtype/device"
        )


def _build_keeping_rng(
    cls: type, args: list[Any], kwargs: dict[str, Any]
) -> tuple[nn.Module, bool]:
    """Build the module now; put the random number generators back. Returns whether it drew."""
    cuda = list(range(torch.cuda.device_count())) if torch.cuda.is_initialized() else []
    cpu_state = torch.random.get_rng_state()
    cuda_states = [torch.cuda.get_rng_state(d) for d in cuda]
    try:
        module = cls(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 (runs again in Python, where it raises for the user)
        raise Unsupported(
            "python_error", f"{cls.__name__}() raised {type(e).__name__}: {e}"
        ) from None
    finally:
        drew = not torch.equal(cpu_state, torch.random.get_rng_state()) or any(
            not torch.equal(s, torch.cuda.get_rng_state(d))
            for d, s in zip(cuda, cuda_states, strict=True)
        )
        torch.random.set_rng_state(cpu_state)
        for d, s in zip(cuda, cuda_states, strict=True):
            torch.cuda.set_rng_state(s, d)
    return module, drew


def _is_random(node: torch.fx.Node) -> bool:
    if not node.op.startswith("call_"):
        return False
    name = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", "")
    return any(word in str(name).lower() for word in _RANDOM_OPS)


# -- user subclasses with their own __init__ ------------------------------------------------------
def _blank_module(cls: type) -> nn.Module:
    """An instance of ``cls`` on which only ``nn.Module.__init__`` ran (an empty module)."""
    module = object.__new__(cls)
    nn.Module.__init__(module)
    return module


def _trace_user_module(
    tx: Translator,
    cls_vt: VariableTracker,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker:
    """A user subclass whose ``__init__`` chains (through user classes only) to
    ``nn.Module.__init__``: that one ran already on the blank instance, the user's are inlined."""
    cls = cls_vt.as_python_constant()
    first_torch = next(k for k in cls.__mro__ if _is_torch_class(k))
    user = [k for k in cls.__mro__ if not _is_torch_class(k) and k is not object]
    why = None
    if any(set(vars(k)) & (set(_CLASS_HOOKS) - {"__init__"}) for k in user):
        why = "a user class of its MRO defines __new__, __setattr__, __getattr__ or __del__"
    elif first_torch is not nn.Module:
        why = f"it derives from {first_torch.__name__}, whose __init__ is not traced"
    elif type(cls).__call__ is not type.__call__:
        why = "its metaclass defines __call__"
    if why is not None:
        raise Unsupported(
            "new_object",
            f"creating a {cls.__name__} module: {why}",
            hint="create the module outside the compiled function (e.g. in __init__)",
        )
    effects = tx.output.side_effects
    module = NewModuleVariable(_blank_module(cls), cls_vt=cls_vt, name=effects.new_name())
    effects.track_new(module)
    init = type_lookup(cls, "__init__")
    if init is vars(nn.Module)["__init__"]:  # no __init__ of its own: the blank is the module
        if args or kwargs:
            raise Unsupported("python_error", f"TypeError: {cls.__name__}() takes no arguments")
        module.init_called = True
        return module
    method = (
        tx.wrap(init, class_attr_source(cls_vt.source, cls, "__init__")) if cls_vt.source else None
    )
    fn = UserFunctionVariable(init, getattr(method, "source", None), self_vt=module)
    result = fn.call_function(tx, args, kwargs)
    if not (result.is_python_constant() and result.as_python_constant() is None):
        raise Unsupported("python_error", f"TypeError: {cls.__name__}.__init__ returned a value")
    if not module.init_called:  # eager fails later, on the first use of the module's tables
        raise Unsupported("new_module", f"{cls.__name__}.__init__ does not call super().__init__()")
    return module


@dataclass(eq=False)
class NewModuleVariable(NNModuleVariable):
    """A user ``nn.Module`` created during the trace. ``value`` is a blank instance (only
    ``nn.Module.__init__`` ran on it) used for its type, its empty tables and its class
    attributes; what the inlined ``__init__`` stores lives in ``side_effects`` and is replayed with
    ``STORE_ATTR`` (``nn.Module.__setattr__`` files submodules and buffers) if the module
    escapes. Listing members (``parameters()``, iteration, indexing) is refused: the blank tables
    do not show the pending stores."""

    value: Any = None
    source: Source | None = None
    cls_vt: VariableTracker | None = None
    name: str = ""
    #: set when ``super().__init__()`` reaches ``nn.Module.__init__``, which then does nothing
    #: (it ran on ``value``): see ``SuperVariable``
    init_called: bool = False
    #: stores are replayed with ``STORE_ATTR``, not ``object.__setattr__``
    raw_replay = False

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        """Pending stores, then the blank instance's own scalars (``training``), then the class
        (guarded through ``cls_vt``); ``nn.Module.__getattr__`` would only look in the (empty)
        member tables."""
        pending = tx.output.side_effects.load_attr(self, name)
        if pending is not None:
            return pending
        own = self.value.__dict__
        if name in own:
            if not isinstance(own[name], (bool, int, float, str, type(None))):
                raise Unsupported("new_module", f"{name} of a module made in the trace")
            return ConstantVariable(own[name])
        cls = self.python_type()
        if tx.output.side_effects.class_attr_changed(cls, name):
            raise Unsupported("class_attr", f"{cls.__name__}.{name} was assigned in the trace")
        static = type_lookup(cls, name)
        if static is MISSING:
            if self.cls_vt.source is not None:
                tx.output.assume_class_lacks(self.cls_vt.source, (name,))
            raise Unsupported("getattr", f"{cls.__name__} object has no attribute {name!r}")
        source = class_attr_source(self.cls_vt.source, cls, name)
        if is_data_descriptor(static):
            return read_descriptor(tx, self, self.cls_vt, static, source)
        return bind_class_attribute(tx, self, self.cls_vt, static, name, source)

    def class_source(self) -> Source | None:
        return self.cls_vt.source

    def call_method(
        self,
        tx: Translator,
        name: str,
        args: list[VariableTracker],
        kwargs: dict[str, VariableTracker],
    ) -> VariableTracker:
        if name in _REFUSED_METHODS:
            raise Unsupported("new_module", f"{name}() of a module made in the trace")
        return super().call_method(tx, name, args, kwargs)

    def children_dict(self, tx: Translator) -> VariableTracker:
        raise Unsupported("new_module", "the submodules of a module made in the trace")

    def create(self, cg: Codegen) -> None:
        cg.load_const(_blank_module)
        cg.load_const(self.python_type())
        cg.call_function(1)

    def reconstruct(self, cg: Codegen) -> None:
        if self.name not in cg.new_objects:
            raise AssertionError(f"module {self.name} made in the trace used before it is created")
        cg.load_local(self.name)

    def __repr__(self) -> str:
        return f"NewModuleVariable({self.python_type().__name__})"


#: Methods refused on a module made in the trace: its members are not in guarded tables (the
#: listings), and what changes or reads them all is not modelled for it.
_REFUSED_METHODS = MODULE_MEMBER_METHODS | {"state_dict", "apply", "to", "train", "eval"}
