"""User objects, classes, Python modules and ``nn.Module`` instances.

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

from ...guards.sources import AttrSource, Source
from ..exc import Unsupported
from .base import VariableTracker
from .constant import ConstantVariable
from .containers import ListVariable, TupleVariable
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
            raise Unsupported("getattr", f"{cls.__name__} object has no attribute {name!r}")
        if isinstance(static, types.FunctionType) and name not in _instance_dict(self.value):
            return UserFunctionVariable(static, None, self_vt=self)
        if isinstance(static, property) and isinstance(static.fget, types.FunctionType):
            return UserFunctionVariable(static.fget, None).call_function(tx, [self], {})
        if isinstance(static, (staticmethod, classmethod)):
            fn = static.__func__
            bound = UserFunctionVariable(fn, None)
            return bound if isinstance(static, staticmethod) else bound.clone(self_vt=tx.wrap_static(cls))
        if hasattr(static, "__get__") and not isinstance(static, types.FunctionType) \
                and name not in _instance_dict(self.value) and not _is_plain_data(static):
            raise Unsupported("descriptor", f"{cls.__name__}.{name} is a descriptor bytegraph cannot trace")
        if self.source is None:
            return tx.wrap_static(getattr(self.value, name))
        return tx.wrap(getattr(self.value, name), AttrSource(self.source, name))

    def call_function(self, tx: Translator, args: list[VariableTracker],
                      kwargs: dict[str, VariableTracker]) -> VariableTracker:
        call = inspect.getattr_static(type(self.value), "__call__", None)
        if isinstance(call, types.FunctionType):
            return UserFunctionVariable(call, None, self_vt=self).call_function(tx, args, kwargs)
        raise Unsupported("call", f"calling a {type(self.value).__name__} object")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({type(self.value).__name__})"


_MISSING = object()


def _instance_dict(obj: Any) -> dict[str, Any]:
    try:
        return object.__getattribute__(obj, "__dict__")
    except AttributeError:
        return {}


def _has_custom_getattr(cls: type) -> bool:
    if issubclass(cls, torch.nn.Module):
        return False  # nn.Module.__getattr__ is understood by NNModuleVariable
    return cls.__getattribute__ is not object.__getattribute__ or hasattr(cls, "__getattr__")


def _is_plain_data(value: Any) -> bool:
    return isinstance(value, (int, float, str, bool, bytes, tuple, type(None), torch.Tensor))


@dataclass(eq=False)
class NNModuleVariable(UserObjectVariable):
    """An ``nn.Module``: parameters, buffers and submodules are read through their sources (graph inputs
    and guards); calling it inlines ``forward`` as ``nn.Module.__call__`` would run it."""

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        module = self.value
        for table in ("_parameters", "_buffers", "_modules"):
            entries = module.__dict__.get(table, {})
            if name in entries:
                pending = tx.output.side_effects.load_attr(self, name)
                if pending is not None:
                    return pending
                return tx.wrap(entries[name], AttrSource(self.source, name) if self.source else None)
        return super().var_getattr(tx, name)

    def call_function(self, tx: Translator, args: list[VariableTracker],
                      kwargs: dict[str, VariableTracker]) -> VariableTracker:
        module = self.value
        if _has_hooks(module):
            raise Unsupported("module_hooks", f"{type(module).__name__} has hooks",
                              hint="compile the module itself (bytegraph.compile(model)) to keep hooks")
        forward = inspect.getattr_static(module, "forward")
        if not isinstance(forward, types.FunctionType):
            raise Unsupported("module_forward", f"{type(module).__name__}.forward is not a Python function")
        return UserFunctionVariable(forward, None, self_vt=self).call_function(tx, args, kwargs)

    def call_method(self, tx: Translator, name: str, args: list[VariableTracker],
                    kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if name in ("parameters", "buffers", "children", "named_parameters", "named_buffers",
                    "named_children") and not args and not kwargs:
            return self._members(tx, name)
        return super().call_method(tx, name, args, kwargs)

    def children_dict(self, tx: Translator) -> VariableTracker:
        """``_modules`` as a guarded ``DictVariable`` (keys guarded, each child by identity)."""
        return tx.wrap(self.value._modules, AttrSource(self.source, "_modules") if self.source else None)

    def unpack(self, tx: Translator) -> list[VariableTracker]:
        cls = type(self.value)
        children = self.children_dict(tx)
        if cls.__iter__ in (torch.nn.Sequential.__iter__, torch.nn.ModuleList.__iter__):
            return list(children.items.values())
        if cls.__iter__ is torch.nn.ModuleDict.__iter__:
            return [ConstantVariable(k) for k in children.items]
        raise Unsupported("unpack", f"iteration over a {cls.__name__} module")

    def getitem(self, tx: Translator, key: Any) -> VariableTracker:
        """``seq[i]`` / ``module_list[i]`` / ``module_dict["k"]`` for the standard containers."""
        cls = type(self.value)
        getitem = cls.__getitem__
        if getitem is torch.nn.ModuleDict.__getitem__ and isinstance(key, str):
            return self.children_dict(tx).items[key]
        if getitem in (torch.nn.Sequential.__getitem__, torch.nn.ModuleList.__getitem__) \
                and type(key) is int:
            children = list(self.children_dict(tx).items.values())
            if not -len(children) <= key < len(children):
                raise Unsupported("python_error", f"IndexError: index {key} out of range")
            return children[key]
        raise Unsupported("index", f"indexing a {cls.__name__} module with {key!r}")

    def _members(self, tx: Translator, name: str) -> VariableTracker:
        """``parameters()``, ``named_children()``...: each member read through ``_parameters``,
        ``_buffers`` or ``_modules`` of its owner, so it is guarded like an attribute read. Shared
        members are listed once, as ``nn.Module`` does."""
        kind = name.removeprefix("named_")
        table = {"parameters": "_parameters", "buffers": "_buffers", "children": "_modules"}[kind]
        owners = [("", self)] if kind == "children" else list(_submodules(tx, "", self, set()))
        items: list[VariableTracker] = []
        seen: set[int] = set()
        for prefix, owner in owners:
            entries = tx.wrap(getattr(owner.value, table),
                              AttrSource(owner.source, table) if owner.source else None)
            for key, vt in entries.items.items():
                if id(vt) in seen or (vt.is_python_constant() and vt.as_python_constant() is None):
                    continue
                seen.add(id(vt))
                items.append(TupleVariable([ConstantVariable(prefix + key), vt])
                             if name.startswith("named_") else vt)
        return ListVariable(items)


def _submodules(tx: Translator, prefix: str, module: NNModuleVariable, seen: set[int]):
    """(prefix, module) for ``module`` and every descendant, in ``named_modules`` order, each once."""
    if id(module.value) in seen:
        return
    seen.add(id(module.value))
    yield prefix, module
    for key, child in module.children_dict(tx).items.items():
        if isinstance(child, NNModuleVariable):
            yield from _submodules(tx, f"{prefix}{key}.", child, seen)


def _has_hooks(module: torch.nn.Module) -> bool:
    global_hooks = torch.nn.modules.module
    return bool(module._forward_hooks or module._forward_pre_hooks or module._backward_hooks
                or getattr(global_hooks, "_global_forward_hooks", None)
                or getattr(global_hooks, "_global_forward_pre_hooks", None))


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
            return UserFunctionVariable(static, AttrSource(self.source, name) if self.source else None)
        if static is _MISSING:
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


__all__ = ["ClassVariable", "ConstantVariable", "NNModuleVariable", "PythonModuleVariable",
           "UserObjectVariable"]
