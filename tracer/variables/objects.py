"""User objects, classes and Python modules (``nn.Module`` instances are in ``modules.py``).

Attribute reads on these go back through ``builder.wrap`` with an ``AttrSource``, so every attribute the
trace depends on is guarded. Methods are inlined with ``self`` bound. Attribute writes on objects that
came from inputs are side effects (replayed by the rewritten code).
"""

from __future__ import annotations

import inspect
import types
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from ...guards.guard import Guard
from ...guards.sources import AttrSource, Source, TypeSource
from ..exc import Unsupported
from .base import VariableTracker
from .constant import ConstantVariable
from .functions import UserFunctionVariable

if TYPE_CHECKING:
    from ...codegen.emit import Codegen
    from ..translator import Translator


@dataclass(eq=False)
class PythonModuleVariable(VariableTracker):
    value: types.ModuleType
    source: Source | None = None

    def is_python_constant(self) -> bool:
        return True

    def as_python_constant(self) -> Any:
        return self.value

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if not hasattr(self.value, name):
            if self.source is not None:  # ``hasattr``/``getattr(m, name, default)`` rely on the absence
                for key in (name, "__getattr__"):
                    tx.output.add_guard(Guard(AttrSource(self.source, "__dict__"), "KEY_ABSENT", key, key))
            raise Unsupported("getattr", f"module {self.value.__name__} has no attribute {name!r}")
        attr_source = AttrSource(self.source, name) if self.source is not None else None
        return tx.wrap(getattr(self.value, name), attr_source)


@dataclass(eq=False)
class UserObjectVariable(VariableTracker):
    """An instance of a user class (or any object bytegraph has no special tracker for)."""

    value: Any
    source: Source | None = None

    def python_type(self) -> type:
        return type(self.value)

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        pending = tx.output.side_effects.load_attr(self, name)
        if pending is not None:
            return pending
        cls = type(self.value)
        if _has_custom_getattr(cls):
            raise Unsupported("custom_getattr", f"{cls.__name__} defines __getattr__/__getattribute__")
        static = inspect.getattr_static(self.value, name, _MISSING)
        if static is _MISSING:
            if self.source is not None:  # ``hasattr``/``getattr(o, name, default)`` rely on the absence
                self._guard_not_shadowed(tx, name)
                _guard_no_class_attr(tx, TypeSource(self.source), name)
            raise Unsupported("getattr", f"{cls.__name__} object has no attribute {name!r}")
        # Attributes found on the class are guarded where they live (``type(obj).name``): a class
        # attribute can be monkeypatched after compiling, and an instance attribute set later would
        # shadow a method (``'name' not in obj.__dict__``; properties are data descriptors: no shadowing).
        class_source = AttrSource(TypeSource(self.source), name) if self.source is not None else None
        if isinstance(static, types.FunctionType) and name not in _instance_dict(self.value):
            self._guard_not_shadowed(tx, name)
            method = tx.wrap(static, class_source)
            return UserFunctionVariable(static, getattr(method, "source", None), self_vt=self)
        if isinstance(static, property) and isinstance(static.fget, types.FunctionType):
            fget_source = AttrSource(class_source, "fget") if class_source is not None else None
            fget = tx.wrap(static.fget, fget_source) if fget_source is not None else None
            return UserFunctionVariable(static.fget, getattr(fget, "source", None)).call_function(tx, [self], {})
        if isinstance(static, (staticmethod, classmethod)) and name not in _instance_dict(self.value):
            self._guard_not_shadowed(tx, name)
            fn = static.__func__
            fn_source = None if class_source is None else \
                class_source if isinstance(static, staticmethod) else AttrSource(class_source, "__func__")
            if fn_source is not None:
                tx.wrap(fn, fn_source)
            bound = UserFunctionVariable(fn, fn_source)
            if isinstance(static, staticmethod):
                return bound
            cls_vt = tx.wrap(cls, TypeSource(self.source)) if self.source is not None else tx.wrap_static(cls)
            return bound.clone(self_vt=cls_vt)
        if hasattr(static, "__get__") and not isinstance(static, types.FunctionType) \
                and name not in _instance_dict(self.value) and not _is_plain_data(static):
            raise Unsupported("descriptor", f"{cls.__name__}.{name} is a descriptor bytegraph cannot trace")
        if self.source is None:
            return tx.wrap_static(getattr(self.value, name))
        return tx.wrap(getattr(self.value, name), AttrSource(self.source, name))

    def _guard_not_shadowed(self, tx: Translator, name: str) -> None:
        """Guard that no instance attribute ``name`` hides the class attribute the trace used."""
        if self.source is not None and _has_instance_dict(self.value):
            tx.output.add_guard(Guard(AttrSource(self.source, "__dict__"), "KEY_ABSENT", name, name))

    def call_function(self, tx: Translator, args: list[VariableTracker],
                      kwargs: dict[str, VariableTracker]) -> VariableTracker:
        call = inspect.getattr_static(type(self.value), "__call__", None)
        if isinstance(call, types.FunctionType):
            return UserFunctionVariable(call, None, self_vt=self).call_function(tx, args, kwargs)
        raise Unsupported("call", f"calling a {type(self.value).__name__} object")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({type(self.value).__name__})"


@dataclass(eq=False)
class CFunctionVariable(UserObjectVariable):
    """A C function or method bytegraph cannot trace (``os.getpid``, ``np.asarray``): loading it is
    fine, calling it is a graph break *at the call*, which then runs inline in the rewritten code."""

    def call_function(self, tx: Translator, args: list[VariableTracker],
                      kwargs: dict[str, VariableTracker]) -> VariableTracker:
        raise Unsupported("c_function", f"call to the C function {getattr(self.value, '__qualname__', self.value)}",
                          hint="move the call out of the compiled function")


_MISSING = object()


def _instance_dict(obj: Any) -> dict[str, Any]:
    try:
        return object.__getattribute__(obj, "__dict__")
    except AttributeError:
        return {}


def _guard_no_class_attr(tx: Translator, class_source: Source, name: str) -> None:
    """Guard that no class of the MRO gains ``name`` (or a ``__getattr__`` that would supply it)."""
    names = (name, "__getattr__")
    tx.output.add_guard(Guard(class_source, "CLASS_ATTR_ABSENT", names, names))


def _has_instance_dict(obj: Any) -> bool:
    try:
        object.__getattribute__(obj, "__dict__")
    except AttributeError:
        return False
    return True


def _has_custom_getattr(cls: type) -> bool:
    if issubclass(cls, torch.nn.Module):
        return False  # nn.Module.__getattr__ is understood by NNModuleVariable
    return cls.__getattribute__ is not object.__getattribute__ or hasattr(cls, "__getattr__")


def _is_plain_data(value: Any) -> bool:
    return isinstance(value, (int, float, str, bool, bytes, tuple, type(None), torch.Tensor))


@dataclass(eq=False)
class ClassVariable(VariableTracker):
    """A class used as a value: ``isinstance`` targets, ``type(x) is Foo``, constructing simple objects."""

    value: type
    source: Source | None = None

    def is_python_constant(self) -> bool:
        return True

    def as_python_constant(self) -> Any:
        return self.value

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        static = inspect.getattr_static(self.value, name, _MISSING)
        if isinstance(static, types.FunctionType):
            if self.source is None:
                return UserFunctionVariable(static, None)
            return tx.wrap(static, AttrSource(self.source, name))  # guarded: it can be monkeypatched
        if static is _MISSING:
            if self.source is not None:
                _guard_no_class_attr(tx, self.source, name)
            raise Unsupported("getattr", f"class {self.value.__name__} has no attribute {name!r}")
        value = getattr(self.value, name)
        return tx.wrap(value, AttrSource(self.source, name) if self.source else None)

    def call_function(self, tx: Translator, args: list[VariableTracker],
                      kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return tx.dispatch.construct(tx, self.value, args, kwargs)

    def reconstruct(self, cg: Codegen) -> None:
        if self.source is not None:
            return self.source.reconstruct(cg)
        cg.load_const(self.value)
        return None


__all__ = ["ClassVariable", "ConstantVariable", "PythonModuleVariable", "UserObjectVariable"]


@dataclass(eq=False)
class SuperVariable(VariableTracker):
    """``super()`` (zero-argument form) inside a traced method: attribute lookups start after ``cls`` in
    the MRO of ``self``'s class; functions found there are bound to ``self``."""

    cls: type
    obj: VariableTracker
    source: Source | None = None

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        mro = self.obj.python_type().__mro__
        for klass in mro[mro.index(self.cls) + 1:]:
            if name in vars(klass):
                attr = vars(klass)[name]
                if isinstance(attr, types.FunctionType):
                    return UserFunctionVariable(attr, None, self_vt=self.obj)
                break
        raise Unsupported("super", f"super().{name} is not a plain method")
