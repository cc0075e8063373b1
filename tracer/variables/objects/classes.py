"""Classes in the trace: ``ClassVariable`` (a class reached from an input or a global: calling it
constructs, its attributes are read through the class with guards) and ``super()``
(``SuperVariable``: attribute lookups that start after a class in an object's MRO).
"""

from __future__ import annotations

import enum
import inspect
import types
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from ....guards.sources import (
    AttrSource,
    ItemSource,
    Source,
)
from ...exc import PythonError, Unsupported
from ..base import ConstantLikeVariable, VariableTracker
from ..functions.callables import (
    OBJECT_METHODS,
    BuiltinVariable,
    MethodCallVariable,
    PartialVariable,
    UserFunctionVariable,
)
from ..torch_calls.autograd_function import (
    AutogradFunctionApplyVariable,
    apply_overriders,
    has_torch_apply,
    is_autograd_function,
)
from .attributes import MISSING, type_lookup
from .existing_objects import DictReadVariable, guard_no_class_attr, method_source
from .polyfilled_methods import bind_polyfilled

if TYPE_CHECKING:
    from ....codegen.emit import Codegen
    from ...translator import Translator


@dataclass(eq=False)
class ClassVariable(ConstantLikeVariable):
    """A class used as a value: ``isinstance`` targets, ``type(x) is Foo``, constructing simple
    objects."""

    value: type
    source: Source | None = None

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        effects = tx.output.side_effects
        if effects.class_attr_changed(self.value, name):
            pending = effects.load_attr(self, name)
            if pending is None:  # assigned through another tracker of the same class
                raise Unsupported(
                    "class_attr", f"{self.value.__name__}.{name} changed in the trace"
                )
            return pending
        if name == "apply" and is_autograd_function(self.value):
            if self.source is not None:  # still torch's ``apply`` (a class could override it)
                for i in range(len(apply_overriders(self.value))):
                    cls_source = (
                        self.source if i == 0 else ItemSource(AttrSource(self.source, "__mro__"), i)
                    )
                    tx.output.assume_key_absent(AttrSource(cls_source, "__dict__"), "apply")
            if not has_torch_apply(self.value):
                raise Unsupported(
                    "autograd_function", f"{self.value.__qualname__}.apply overridden"
                )
            return AutogradFunctionApplyVariable(self.value, self.source)
        if name == "__members__" and _enum_members(self.value):
            # a read-only view of the members, which an enum class never changes: read as a dict
            # of them (as ``Signature.parameters``), so iteration, views and lookups are traced
            return tx.fold(dict(self.value.__members__))
        static = inspect.getattr_static(self.value, name, MISSING)
        if isinstance(static, types.FunctionType):
            if self.source is None:
                return UserFunctionVariable(static, None)
            return tx.wrap(
                static, AttrSource(self.source, name)
            )  # guarded: it can be monkeypatched
        if static is MISSING:
            if self.source is not None:
                guard_no_class_attr(tx, self.source, name)
            meta = type(self.value)
            if meta.__getattribute__ is type.__getattribute__ and not hasattr(meta, "__getattr__"):
                # CPython's AttributeError, which a traced ``except AttributeError`` can catch
                raise PythonError(
                    AttributeError(f"type object '{self.value.__name__}' has no attribute '{name}'")
                )
            raise Unsupported("getattr", f"class {self.value.__name__} has no attribute {name!r}")
        try:
            value = getattr(self.value, name)
        except AttributeError as e:  # a descriptor raising it (``type.__abstractmethods__``)
            raise PythonError(e) from None
        bound = tx.wrap(value, AttrSource(self.source, name) if self.source else None)
        if isinstance(static, types.ClassMethodDescriptorType):  # ``Plain.__subclasshook__``
            return bind_polyfilled(self, name, static) or bound
        return bound

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        return dispatch.construct(tx, self, args, kwargs)

    def reconstruct(self, cg: Codegen) -> None:
        if self.source is not None:
            return self.source.reconstruct(cg)
        cg.load_const(self.value)
        return None


@dataclass(eq=False)
class SuperVariable(VariableTracker):
    """``super()`` inside a traced method: attribute lookups start after ``cls`` in the MRO of
    ``self``'s class; functions found there are bound to ``self``. In a classmethod ``obj`` is a
    class (a subclass of ``cls``): lookups go through its own MRO, classmethods found there are
    bound to it, plain functions stay unbound."""

    cls: type
    obj: VariableTracker
    source: Source | None = None

    @classmethod
    def of(cls, tx: Translator, start: VariableTracker, obj: VariableTracker) -> SuperVariable:
        """``super(start, obj)`` written out (two arguments) for an instance ``obj`` of the class
        ``start``; other forms (``super(C, cls)`` in a classmethod, an unbound super) break."""
        klass = start.as_python_constant() if start.is_python_constant() else None
        if not isinstance(klass, type):
            raise Unsupported("super", f"super() of {start}")
        return cls(klass, obj)

    def __post_init__(self) -> None:
        if not (self._of_class() or self.cls in self.obj.python_type().__mro__):
            # the frame's first argument is no instance of its class: CPython raises TypeError
            raise Unsupported("super", f"super({self.cls.__name__}, {self.obj})")

    def _of_class(self) -> bool:
        """``super(cls, klass)`` for a subclass ``klass`` (in a classmethod)."""
        obj = self.obj
        return (
            isinstance(obj, ClassVariable)
            and isinstance(obj.value, type)
            and self.cls in obj.value.__mro__
            and self.cls not in type(obj.value).__mro__  # a metaclass's own super(): instance
        )

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name == "__class__":  # ``super`` answers it itself, not the MRO
            return tx.wrap_static(super)
        if self._of_class():
            return self._class_getattr(tx, name)
        mro = self.obj.python_type().__mro__
        for klass in mro[mro.index(self.cls) + 1 :]:
            if name in vars(klass):
                attr = vars(klass)[name]
                if (
                    klass is torch.nn.Module
                    and name == "__init__"
                    and hasattr(self.obj, "init_called")
                ):  # (whatever ``nn.Module.__init__`` is now: torch._dynamo replaces it)
                    self.obj.init_called = True  # a module made in the trace: already done
                    return UserFunctionVariable(_module_init_done)
                if klass is torch.nn.Module and name in _MODULE_CALLS:
                    # ``super().__call__(x)`` under a module class's own ``__call__``: the
                    # module's standard call (hooks, ``forward``), which its tracker runs
                    return MethodCallVariable(self.obj, _MODULE_CALLS[name])
                if isinstance(attr, types.FunctionType):
                    return UserFunctionVariable(
                        attr, self._method_source(tx, mro.index(klass), name, attr), self.obj
                    )
                if klass is type and name == "__call__":  # in a metaclass's ``__call__``
                    return PartialVariable(BuiltinVariable(type.__call__), [self.obj], {})
                if klass is dict and name in DictReadVariable.METHODS:
                    return DictReadVariable(self.obj, name)
                if klass is object and name in OBJECT_METHODS:  # bound to ``self``
                    return PartialVariable(BuiltinVariable(OBJECT_METHODS[name]), [self.obj], {})
                break
        raise Unsupported("super", f"super().{name} is not a plain method")

    def _class_getattr(self, tx: Translator, name: str) -> VariableTracker:
        """``super().name`` in a classmethod: the class's MRO after ``cls``."""
        mro = self.obj.value.__mro__
        for index in range(mro.index(self.cls) + 1, len(mro)):
            if name not in vars(mro[index]):
                continue
            attr = vars(mro[index])[name]
            fn = attr.__func__ if isinstance(attr, (classmethod, staticmethod)) else attr
            if not isinstance(fn, types.FunctionType):
                break
            source = None
            if self.obj.source is not None:
                owner = ItemSource(AttrSource(self.obj.source, "__mro__"), index)
                source = ItemSource(AttrSource(owner, "__dict__"), name)
                source = AttrSource(source, "__func__") if fn is not attr else source
                source = method_source(tx, self.obj, source, fn)
            bound = self.obj if isinstance(attr, classmethod) else None
            return UserFunctionVariable(fn, source, bound)
        raise Unsupported("super", f"super().{name} in a classmethod is not a plain method")

    def _method_source(
        self, tx: Translator, index: int, name: str, fn: types.FunctionType
    ) -> Source | None:
        """``type(self).__mro__[index].__dict__[name]``, guarded (the method's closure cells then
        get sources too)."""
        class_source = getattr(self.obj, "class_source", lambda: None)()
        if class_source is None:
            return None
        owner = ItemSource(AttrSource(class_source, "__mro__"), index)
        return method_source(tx, self.obj, ItemSource(AttrSource(owner, "__dict__"), name), fn)


def _enum_members(cls: type) -> bool:
    """Is ``cls.__members__`` the enum metaclass's own read-only view of the members?"""
    return isinstance(cls, enum.EnumMeta) and type_lookup(type(cls), "__members__") is _MEMBERS


_MEMBERS = vars(enum.EnumMeta)["__members__"]

#: ``nn.Module``'s call methods, each as the name its tracker's ``call_method`` answers
_MODULE_CALLS = {
    "__call__": "_wrapped_call_impl",
    "_wrapped_call_impl": "_wrapped_call_impl",
    "_call_impl": "_call_impl",
}


def _module_init_done() -> None:
    """``nn.Module.__init__()`` of a module made in the trace (``modules/new_modules.py``): its
    blank instance was initialized when it was made."""


# Bound last: the dispatcher imports this module (a cycle), and needs what it defines above.
from .. import dispatch  # noqa: E402
