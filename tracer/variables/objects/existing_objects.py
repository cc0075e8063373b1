"""Existing user objects and Python modules (classes are in ``classes.py``, ``nn.Module`` instances
in ``modules/``).

Attribute reads on these go back through ``builder.wrap`` with an ``AttrSource``, so every attribute
the trace depends on is guarded. Methods are inlined with ``self`` bound. Attribute writes on
objects that came from inputs are side effects (replayed by the rewritten code). Classes with a
custom ``__getattr__``/``__getattribute__`` are refused (``custom_getattr``) except the allowlist
``PURE_GETATTR_CLASSES`` (``transformers`` configs), whose reads use the real ``getattr`` and whose
guards therefore call that ``__getattribute__``.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
import types
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from ....guards.sources import (
    AttrSource,
    DictItemSource,
    ItemSource,
    ModuleGlobalSource,
    Source,
    TypeSource,
    WeakRefSource,
)
from ...exc import PythonError, Unsupported
from ..base import BoundAttributeVariable, ConstantLikeVariable, VariableTracker
from ..constants.constant import ConstantVariable
from ..containers.builtin_containers import BaseSequenceVariable, DictVariable, SetVariable
from ..functions.callables import (
    UserFunctionVariable,
)
from ..functions.memoized import LRU_CACHE_WRAPPER, MemoizedFunctionVariable
from .attributes import (
    MISSING,
    class_attr_source,
    is_data_descriptor,
    python_method,
    read_descriptor,
    type_lookup,
)
from .polyfilled_methods import bind_polyfilled

if TYPE_CHECKING:
    from ....codegen.emit import Codegen
    from ...translator import Translator


@dataclass(eq=False)
class PythonModuleVariable(ConstantLikeVariable):
    value: types.ModuleType
    source: Source | None = None

    def reconstruct(self, cg: Codegen) -> None:
        if self.source is not None:
            return self.source.reconstruct(cg)
        cg.load_const(self.value)  # a module reached without a source (a key folded back)
        return None

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if not hasattr(self.value, name):
            if self.source is not None:  # ``hasattr``/``getattr(m, name, default)`` rely on it
                namespace = AttrSource(self.source, "__dict__")
                for key in (name, "__getattr__"):
                    tx.output.assume_key_absent(namespace, key)
                if "__getattr__" not in vars(self.value):  # the generic lookup's own error
                    raise PythonError(_lookup_error(self.value, name))
            raise Unsupported("getattr", f"module {self.value.__name__} has no attribute {name!r}")
        if name == "__dict__" and self.source is not None:
            return unstored_dict(tx, self, self.value, self.source)
        attr_source = AttrSource(self.source, name) if self.source is not None else None
        module_name = getattr(self.value, "__name__", None)
        if (
            attr_source is None
            and name in vars(self.value)
            and sys.modules.get(module_name) is self.value
        ):
            # a module from ``import m`` inside the function: its attributes are its globals,
            # ``M['m']['name']`` (guarded, and what the trace mutates there is replayed)
            attr_source = ModuleGlobalSource(module_name, name)
        return tx.wrap(getattr(self.value, name), attr_source)


@dataclass(eq=False)
class InstanceDictVariable(DictVariable):
    """``obj.__dict__`` (``SideEffects.instance_dict``): the trace reads it as a dict of the
    object's attributes, the rewritten code loads the object's real one (the same object)."""

    owner: VariableTracker | None = None

    def reconstruct(self, cg: Codegen) -> None:
        self.owner.reconstruct(cg)
        cg.load_attr("__dict__")


def unstored_dict(tx: Translator, owner: VariableTracker, value: Any, source: Source) -> Any:
    """``value.__dict__`` (``value`` at ``source``, tracked by ``owner``) of an object whose
    attributes the trace never stores (a module, a function, an enum member): its real dict,
    guarded, and the owner's instance dict, so that a write through it breaks rather than leave
    later reads of those attributes stale."""

    def make(stored: dict) -> VariableTracker:
        if stored:
            raise Unsupported("instance_dict", f"__dict__ of {owner} after a store")
        own = object.__getattribute__(value, "__dict__")
        return tx.wrap(own, AttrSource(source, "__dict__"))

    return tx.output.side_effects.instance_dict(owner, make)


def _generic_dict(value: Any, static: Any) -> bool:
    """``static``, found on the class as ``__dict__``, is the getter of the instance dict CPython
    gives instances of classes written in Python."""
    return (
        isinstance(static, types.GetSetDescriptorType)
        and static.__name__ == "__dict__"
        and type(static.__get__(value, type(value))) is dict
    )


def _lookup_error(value: Any, name: str) -> BaseException:
    """The ``AttributeError`` CPython raises for ``getattr(value, name)``, which must fail."""
    try:
        getattr(value, name)
    except AttributeError as e:
        return e
    raise AssertionError(f"{value!r} has attribute {name!r}")


#: Methods written in C: reading one binds it (nothing else), so the read is traced and a call of
#: it is what breaks, once.
_C_METHODS = (types.MethodDescriptorType, types.WrapperDescriptorType)


@dataclass(eq=False)
class UserObjectVariable(VariableTracker):
    """An instance of a user class (or any object bytegraph has no special tracker for)."""

    value: Any
    source: Source | None = None

    def python_type(self) -> type:
        return type(self.value)

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        effects = tx.output.side_effects
        pending = effects.load_attr(self, name)
        if pending is not None:
            return pending
        cls = type(self.value)
        if effects.is_deleted(self, name):
            if type_lookup(cls, name) is MISSING and not _has_custom_getattr(cls):
                message = f"'{cls.__name__}' object has no attribute '{name}'"
                raise PythonError(AttributeError(message))
            raise Unsupported("getattr", f"{cls.__name__}.{name} was deleted in the trace")
        if tx.output.side_effects.class_attr_changed(cls, name):
            raise Unsupported("class_attr", f"{cls.__name__}.{name} was assigned in the trace")
        if cls is os._Environ and name in DictReadVariable.METHODS and self.source is not None:
            return DictReadVariable(self, name)  # ``os.environ`` reads, guarded key by key
        static = inspect.getattr_static(self.value, name, MISSING)
        if _has_custom_getattr(cls):
            if _pure_getattr(cls):
                return self._pure_getattr(tx, name)
            hook = _getattr_fallback(cls)
            if hook is not None and static is MISSING:
                return self._call_getattr_hook(tx, name, hook)
            if hook is None or not _plain_lookup(self.value, static, name):
                raise Unsupported(
                    "custom_getattr", f"{cls.__name__} defines __getattr__/__getattribute__"
                )
        if (
            name == "__dict__"
            and self.source is not None
            and _generic_dict(self.value, static)
            and not isinstance(self.value, torch.nn.Module)  # its stores file members elsewhere
        ):
            return effects.instance_dict(self, lambda stored: self._instance_dict(tx, stored))
        if name == "__class__" and static is _OBJECT_CLASS:  # ``obj.__class__`` is ``type(obj)``
            return (
                tx.wrap(cls, TypeSource(self.source))
                if self.source is not None
                else tx.wrap_static(cls)
            )
        if static is MISSING:
            if self.source is not None:  # ``hasattr``/``getattr(o, name, default)`` rely on it
                self._guard_not_shadowed(tx, name)
                # ``nn.Module.__getattr__`` only reads the member tables (NNModuleVariable guards
                # them): the class must not gain ``name``, and its ``__getattr__`` must stay torch's
                module_getattr = (
                    isinstance(self.value, torch.nn.Module)
                    and cls.__getattr__ is torch.nn.Module.__getattr__
                )
                guard_no_class_attr(
                    tx, TypeSource(self.source), name, "__getattr__" if not module_getattr else None
                )
                if not module_getattr and not _has_custom_getattr(cls):
                    # CPython's AttributeError, which a traced ``except AttributeError`` catches
                    raise PythonError(
                        AttributeError(
                            f"'{cls.__name__}' object has no attribute '{name}'",
                            name=name,
                            obj=self.value,
                        )
                    )
            raise Unsupported("getattr", f"{cls.__name__} object has no attribute {name!r}")
        # Attributes found on the class are guarded where they live (``type(obj).name``): a class
        # attribute can be monkeypatched after compiling, and an instance attribute set later would
        # shadow a method (``'name' not in obj.__dict__``; a property is a data descriptor: it
        # cannot be shadowed).
        class_source = None if self.source is None else AttrSource(TypeSource(self.source), name)
        if isinstance(static, types.FunctionType) and name not in _instance_dict(self.value):
            self._guard_not_shadowed(tx, name)
            method = tx.wrap(static, class_source)
            return UserFunctionVariable(static, getattr(method, "source", None), self_vt=self)
        if isinstance(static, LRU_CACHE_WRAPPER) and name not in _instance_dict(self.value):
            self._guard_not_shadowed(tx, name)  # ``logger.warning_once``: a memoized method
            method = tx.wrap(static, class_source)
            return MemoizedFunctionVariable(static, getattr(method, "source", None), self_vt=self)
        if isinstance(static, property) and isinstance(static.fget, types.FunctionType):
            fget_source = None if class_source is None else AttrSource(class_source, "fget")
            if fget_source is not None:
                tx.wrap(static.fget, fget_source)
            return UserFunctionVariable(static.fget, fget_source).call_function(tx, [self], {})
        if isinstance(static, (staticmethod, classmethod)) and name not in _instance_dict(
            self.value
        ):
            self._guard_not_shadowed(tx, name)
            fn = static.__func__
            fn_source = class_source
            if class_source is not None and isinstance(static, classmethod):
                fn_source = AttrSource(class_source, "__func__")
            if fn_source is not None:
                tx.wrap(fn, fn_source)
            bound = UserFunctionVariable(fn, fn_source)
            if isinstance(static, staticmethod):
                return bound
            cls_vt = (
                tx.wrap_static(cls)
                if self.source is None
                else tx.wrap(cls, TypeSource(self.source))
            )
            return bound.clone(self_vt=cls_vt)
        if name in DictReadVariable.METHODS and static is vars(dict).get(name):
            return DictReadVariable(self, name)  # a dict read by key, guarded key by key
        if python_method(static, "__get__") is not None and (
            is_data_descriptor(static) or name not in _instance_dict(self.value)
        ):  # a descriptor written in Python: its ``__get__`` is inlined
            if not is_data_descriptor(static):
                self._guard_not_shadowed(tx, name)
            cls_vt = (
                tx.wrap_static(cls)
                if self.source is None
                else tx.wrap(cls, TypeSource(self.source))
            )
            source = None if self.source is None else class_attr_source(cls_vt.source, cls, name)
            return read_descriptor(tx, self, cls_vt, static, source)
        polyfilled = None
        if name not in _instance_dict(self.value):  # a C method with a polyfill runs it
            owner = self
            if isinstance(static, types.ClassMethodDescriptorType):  # bound to the class
                owner = (
                    tx.wrap_static(cls)
                    if self.source is None
                    else tx.wrap(cls, TypeSource(self.source))
                )
            polyfilled = bind_polyfilled(owner, name, static)
        if isinstance(static, types.MemberDescriptorType):
            # a ``__slots__`` entry (``dataclasses.Field.name``): a plain read of the slot,
            # guarded like an instance attribute; an empty slot raises AttributeError
            if not hasattr(self.value, name):
                raise Unsupported("getattr", f"slot {cls.__name__}.{name} is empty")
        elif (
            polyfilled is None
            and hasattr(static, "__get__")
            and not isinstance(static, (types.FunctionType, *_C_METHODS))
            and name not in _instance_dict(self.value)
            and not _is_plain_data(static)
        ):
            raise Unsupported(
                "descriptor", f"{cls.__name__}.{name} is a descriptor bytegraph cannot trace"
            )
        if self.source is None:
            if polyfilled is not None:
                return polyfilled
            return tx.wrap_unsourced(getattr(self.value, name), f"{cls.__name__}.{name}")
        value = tx.wrap(getattr(self.value, name), AttrSource(self.source, name))  # guarded
        return polyfilled if polyfilled is not None else value

    def _instance_dict(self, tx: Translator, stored: dict) -> VariableTracker:
        """``obj.__dict__``, the object's real dict (guarded) with the trace's stores applied."""
        real = tx.wrap(_instance_dict(self.value), AttrSource(self.source, "__dict__"))
        if type(real) is not DictVariable:
            raise Unsupported("instance_dict", f"{type(self.value).__name__}.__dict__ is {real}")
        return InstanceDictVariable({**real.items, **stored}, owner=self)

    def _pure_getattr(self, tx: Translator, name: str) -> VariableTracker:
        """``obj.name`` on an allowlisted class (``PURE_GETATTR_CLASSES``): the real lookup at trace
        time, guarded through ``AttrSource`` (present) or ``ATTR_ABSENT`` (missing); both guards run
        the class's ``__getattribute__``. Functions found on the class are inlined as methods."""
        try:
            value = getattr(self.value, name)
        except AttributeError:
            if self.source is not None:
                tx.output.assume_attr_absent(self.source, name)
            raise Unsupported(
                "getattr", f"{type(self.value).__name__} object has no attribute {name!r}"
            ) from None
        except Exception as e:  # noqa: BLE001 (an error of the real lookup runs again in Python)
            raise Unsupported(
                "custom_getattr", f"{type(self.value).__name__}.{name} raised {e!r}"
            ) from None
        if isinstance(value, types.MethodType) and value.__self__ is self.value:
            static = inspect.getattr_static(self.value, name, MISSING)
            if isinstance(static, types.FunctionType) and name not in _instance_dict(self.value):
                self._guard_not_shadowed(tx, name)
                source = (
                    AttrSource(TypeSource(self.source), name) if self.source is not None else None
                )
                method = tx.wrap(static, source)
                return UserFunctionVariable(static, getattr(method, "source", None), self_vt=self)
            raise Unsupported(
                "descriptor", f"{type(self.value).__name__}.{name} is not a plain method"
            )
        if self.source is None:
            return tx.wrap_unsourced(value, f"{type(self.value).__name__}.{name}")
        return tx.wrap(value, AttrSource(self.source, name))

    def _call_getattr_hook(self, tx: Translator, name: str, hook: Any) -> VariableTracker:
        """``obj.name`` that the generic lookup does not find: the class's ``__getattr__`` (a
        Python function, or ``dict.__getitem__`` on a dict subclass: the ``AttrDict`` pattern).
        Guarded: no instance or class attribute ``name`` appears, the hook stays the same."""
        cls = type(self.value)
        if self.source is not None:
            self._guard_not_shadowed(tx, name)
            guard_no_class_attr(tx, TypeSource(self.source), name, None)
            hook_source = class_attr_source(TypeSource(self.source), cls, "__getattr__")
            tx.output.assume_identity(hook_source, hook)
        key = ConstantVariable(name)
        if isinstance(hook, types.FunctionType):
            return UserFunctionVariable(hook, None, self_vt=self).call_function(tx, [key], {})
        return DictReadVariable(self, "__getitem__").call_function(tx, [key], {})

    def _guard_not_shadowed(self, tx: Translator, name: str) -> None:
        """Guard that no instance attribute ``name`` hides the class attribute the trace used."""
        if self.source is not None and _has_instance_dict(self.value):
            tx.output.assume_key_absent(AttrSource(self.source, "__dict__"), name)

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        call = inspect.getattr_static(type(self.value), "__call__", None)
        unbound = _container_method_call(tx, self.value, args, kwargs)
        if unbound is not None:
            return unbound
        if type(self.value) is weakref.ref and self.source is not None and not args and not kwargs:
            return tx.wrap(self.value(), WeakRefSource(self.source))  # guarded like any input
        if isinstance(call, types.FunctionType):
            return self.class_method(tx, "__call__", call).call_function(tx, args, kwargs)
        if self.source is not None and plain_partial(type(self.value)):
            # an instance of a ``functools.partial`` subclass that keeps partial's call: its
            # function with the stored arguments first, each read (and guarded) through it
            func, stored, keywords = (
                tx.wrap(getattr(self.value, name), AttrSource(self.source, name))
                for name in ("func", "args", "keywords")
            )
            return dispatch.call(
                tx, func, [*stored.items, *args], {**_keywords(keywords), **kwargs}
            )
        raise Unsupported("call", f"calling a {type(self.value).__name__} object")

    def class_source(self) -> Source | None:
        """Where guards read this object's class (``type(L['obj'])``), if anywhere."""
        return TypeSource(self.source) if self.source is not None else None

    def class_method(self, tx: Translator, name: str, fn: types.FunctionType) -> VariableTracker:
        """``fn``, found as ``name`` on the class, bound to this object and read through the class
        (see ``method_source``)."""
        source = self.class_source()
        source = None if source is None else method_source(tx, self, AttrSource(source, name), fn)
        return UserFunctionVariable(fn, source, self_vt=self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({type(self.value).__name__})"


@dataclass(eq=False)
class CFunctionVariable(UserObjectVariable):
    """A C function or method bytegraph cannot trace (``os.getpid``, ``np.asarray``): loading it is
    fine, calling it is a graph break *at the call*, which then runs inline in the rewritten
    code."""

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        raise Unsupported(
            "c_function",
            f"call to the C function {getattr(self.value, '__qualname__', self.value)}",
            hint="move the call out of the compiled function",
        )


def _container_method_call(
    tx: Translator, method: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """``list.copy(xs)``, ``dict.update(d, ...)``: a C method of a builtin container type called
    unbound on a container of exactly that type (whose own method it is) is that container's
    method call; None for anything else."""
    if (
        not isinstance(method, (types.MethodDescriptorType, types.WrapperDescriptorType))
        or not args
    ):
        return None
    receiver = args[0]
    owner = method.__objclass__
    if owner not in (list, dict, set, frozenset, tuple):
        return None
    if not isinstance(receiver, (BaseSequenceVariable, DictVariable, SetVariable)):
        return None
    if receiver.python_type() is not owner:
        return None
    return receiver.call_method(tx, method.__name__, list(args[1:]), kwargs)


def plain_partial(cls: type) -> bool:
    """A subclass of ``functools.partial`` whose construction, call and stored parts are
    partial's own (it may add methods)."""
    return issubclass(cls, functools.partial) and all(
        type_lookup(cls, name) is type_lookup(functools.partial, name)
        for name in ("__new__", "__init__", "__call__", "func", "args", "keywords")
    )


def _keywords(vt: VariableTracker) -> dict[str, VariableTracker]:
    """The stored keyword arguments of a partial, a dict of str keys."""
    items = getattr(vt, "items", None)
    if not isinstance(items, dict) or not all(type(k) is str for k in items):
        raise Unsupported("call", f"keyword arguments of a partial: {vt}")
    return dict(items)


def method_source(
    tx: Translator, obj: VariableTracker, source: Source, fn: types.FunctionType
) -> Source | None:
    """The source to inline ``fn``, a method of ``obj``'s class read at ``source``, with. It is
    guarded (the class can be monkeypatched), and its closure cells get sources: what it reads
    there is guarded, what it mutates there is replayed. The class of a module reached from an
    input is trusted as its ``MODULE_TREE`` check trusts it (one guard per layer would make guards
    grow with depth): no guard, a source only when the method has closure cells."""
    if isinstance(getattr(obj, "value", None), torch.nn.Module) and obj.source is not None:
        closure = [n for n in fn.__code__.co_freevars if n != "__class__"]
        return source if closure else None
    return getattr(tx.wrap(fn, source), "source", None)


_OBJECT_CLASS = vars(object)["__class__"]


def _instance_dict(obj: Any) -> dict[str, Any]:
    try:
        return object.__getattribute__(obj, "__dict__")
    except AttributeError:
        return {}


def guard_no_class_attr(
    tx: Translator, class_source: Source, name: str, getattr_name: str | None = "__getattr__"
) -> None:
    """Guard that no class of the MRO gains ``name`` (or a ``__getattr__`` that would supply it)."""
    names = (name, getattr_name) if getattr_name else (name,)
    tx.output.assume_class_lacks(class_source, names)


def _has_instance_dict(obj: Any) -> bool:
    try:
        object.__getattribute__(obj, "__dict__")
    except AttributeError:
        return False
    return True


#: Builtin bases whose ``__getattribute__`` is the generic one (``PyObject_GenericGetAttr``).
#: Classes whose ``__getattribute__`` (if in their ``__dict__``) is the generic lookup. NOTE(3.13):
#: 3.11 and 3.12 list ``SimpleNamespace``'s generic slot wrapper in its ``__dict__``, 3.13 does not.
_GENERIC_GETATTR_BASES = frozenset(
    {object, dict, list, tuple, set, frozenset, int, float, str, bytes, types.SimpleNamespace}
)


def _getattr_fallback(cls: type) -> Any:
    """The ``__getattr__`` of a class whose ``__getattribute__`` is the generic one, when the trace
    can call it (a Python function, or ``dict.__getitem__`` of a dict subclass); else None."""
    if any(
        "__getattribute__" in vars(klass) and klass not in _GENERIC_GETATTR_BASES
        for klass in cls.__mro__
    ):
        return None
    hook = type_lookup(cls, "__getattr__")
    if isinstance(hook, types.FunctionType):
        return hook
    if hook is dict.__getitem__ and type_lookup(cls, "__getitem__") is dict.__getitem__:
        return hook
    return None


def _plain_lookup(obj: Any, static: Any, name: str) -> bool:
    """A found attribute whose read cannot raise AttributeError (which would call ``__getattr__``):
    an instance attribute, a function or C method, or plain class data."""
    return (
        name in _instance_dict(obj)
        or isinstance(static, (types.FunctionType, *_C_METHODS))
        or _is_plain_data(static)
    )


def _has_custom_getattr(cls: type) -> bool:
    """A ``__getattr__`` anywhere in the MRO, or a ``__getattribute__`` other than the generic one
    (an ``OrderedDict`` subclass inherits dict's slot wrapper, which is the generic lookup)."""
    if issubclass(cls, torch.nn.Module):
        return False  # nn.Module.__getattr__ is understood by NNModuleVariable
    return hasattr(cls, "__getattr__") or any(
        "__getattribute__" in vars(klass) and klass not in _GENERIC_GETATTR_BASES
        for klass in cls.__mro__
    )


#: Classes (by ``(module, qualname)`` of a class in the MRO) whose custom ``__getattribute__`` is
#: known to be free of side effects and deterministic for a given instance state, so the tracer may
#: read attributes with the real ``getattr``. ``transformers``'
#: ``PreTrainedConfig.__getattribute__`` only maps aliases through the class's ``attribute_map``
#: before the generic lookup; its ``HeterogeneousConfigMixin`` only raises (or warns once) for
#: per-layer attributes of heterogeneous configs (an error at trace time becomes a graph break, the
#: read then runs in Python). Such reads are guarded through their ``AttrSource``
#: (``L['self'].config.use_cache``), so *these guards call that ``__getattribute__``*: the one
#: exception to "guards never run user code".
PURE_GETATTR_CLASSES = frozenset(
    {
        ("transformers.configuration_utils", "PreTrainedConfig"),
        ("transformers.configuration_utils", "PretrainedConfig"),
        ("transformers.integrations.heterogeneity.configuration_utils", "HeterogeneousConfigMixin"),
    }
)


def store_config_attribute(
    tx: Translator, obj: VariableTracker, name: str, value: VariableTracker
) -> bool:
    """``config.name = constant`` on an allowlisted class (``PURE_GETATTR_CLASSES``: its
    ``__setattr__`` maps aliases through ``attribute_map`` and runs the strict dataclass
    validators of the field before setting it). The validators run now, on the constant (an
    invalid value raises in Python, at the store); the store is a side effect replayed with the
    real ``__setattr__``. Aliased names are refused: reads of the other name would not see it.
    False when this does not apply (not such a class, not a constant)."""
    cls = obj.python_type()
    if obj.source is None or not _pure_getattr(cls) or not value.is_python_constant():
        return False
    aliases = getattr(cls, "attribute_map", None) or {}
    if name in aliases or name in aliases.values():
        raise Unsupported("store_attr", f"{cls.__name__}.{name} has an alias")
    constant = value.as_python_constant()
    try:
        for validator in (getattr(cls, "__validators__", None) or {}).get(name, ()):
            validator(constant)
    except Exception as e:  # noqa: BLE001 (the store runs in Python, where it raises)
        raise Unsupported("python_error", f"{cls.__name__}.{name} = {constant!r}: {e}") from None
    tx.output.side_effects.store_attr(obj, name, value)
    return True


def _pure_getattr(cls: type) -> bool:
    """Whether every custom attribute hook of ``cls`` comes from an allowlisted class."""
    if hasattr(cls, "__getattr__"):
        return False
    allowed = {k for k in cls.__mro__ if (k.__module__, k.__qualname__) in PURE_GETATTR_CLASSES}
    return bool(allowed) and all(
        k in allowed or k in _GENERIC_GETATTR_BASES
        for k in cls.__mro__
        if "__getattribute__" in vars(k)
    )


def _is_plain_data(value: Any) -> bool:
    return isinstance(value, (int, float, str, bool, bytes, tuple, type(None), torch.Tensor))


__all__ = ["ConstantVariable", "PythonModuleVariable", "UserObjectVariable"]


#: Keys ``DictReadVariable`` reads by: compared exactly, written back by their ``repr`` in guards.
_KEY_TYPES = (str, int, bytes, bool, type(None))


@dataclass(eq=False, repr=False)
class DictReadVariable(BoundAttributeVariable):
    """``dict.get``/``dict.__getitem__``/``dict.__contains__`` on an input-reachable dict that is
    not a ``DictVariable``: an instance of a ``dict`` subclass (``super().get(key)`` in a registry
    class), a dict with keys other than str/int, or ``os.environ`` (keyed by bytes). Only
    constant str, int, bytes, bool or None keys; a present key is read and guarded through
    ``ItemSource`` (``G['reg']['key']``), an absent one by ``KEY_ABSENT``: only the keys read are
    guarded. Both checks run ``dict``'s own lookup, so the class must not override ``__getitem__``
    or ``__contains__`` in Python."""

    METHODS = ("get", "__getitem__", "__contains__")

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        name = self.name
        if kwargs or not args or not all(a.is_python_constant() for a in args):
            raise Unsupported("super", f"dict.{name} on {self.obj} with these arguments")
        key = args[0].as_python_constant()
        if type(key) not in _KEY_TYPES or len(args) > (2 if name == "get" else 1):
            raise Unsupported("super", f"dict.{name} with key {key!r}")
        mapping, source, key, decode = self._target(tx, key)
        if not dict.__contains__(mapping, key):
            tx.output.assume_key_absent(source, key)
            if name == "__getitem__":
                raise Unsupported("python_error", f"KeyError: {key!r}")
            return (
                ConstantVariable(False)
                if name == "__contains__"
                else (args[1] if len(args) > 1 else ConstantVariable(None))
            )
        raw = dict.__getitem__(mapping, key)
        # a Python ``__getitem__`` (``super().__getitem__`` in an override) must not run in guards
        item = ItemSource if type(mapping).__getitem__ is dict.__getitem__ else DictItemSource
        value = tx.wrap(raw, item(source, key))
        if name == "__contains__":
            return ConstantVariable(True)
        return value if decode is None else ConstantVariable(decode(raw))

    def _target(self, tx: Translator, key: Any) -> tuple[dict, Source, Any, Any]:
        """The real dict, its source, the key in it and how to decode its values. ``os.environ``
        keeps encoded keys and values in ``_data``: reads go there (``G['os'].environ._data[b'K']``)
        and the value read is decoded at trace time."""
        obj = self.obj
        cls = type(getattr(obj, "value", None))
        if isinstance(obj, UserObjectVariable) and obj.source is not None and cls is os._Environ:
            if type(key) is not str:
                raise Unsupported("super", f"os.environ[{key!r}]")
            env = obj.value
            source = AttrSource(obj.source, "_data")
            # its type only (a dict): wrapping it would guard every variable of the environment
            tx.output.assume_type(source, dict)
            return env._data, source, env.encodekey(key), env.decodevalue
        if (
            not isinstance(obj, UserObjectVariable)
            or obj.source is None
            or not issubclass(cls, dict)
            or cls.__contains__ is not dict.__contains__  # the ``KEY_ABSENT`` guard uses ``in``
        ):
            raise Unsupported("super", f"dict.{self.name} on {obj}")
        return obj.value, obj.source, key, None


# Bound last: the dispatcher imports this module (a cycle), and needs what it defines above.
from .. import dispatch  # noqa: E402
