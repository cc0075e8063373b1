"""``copy.deepcopy`` and the reduction protocol ``copy`` uses (``object.__reduce_ex__``,
``object.__getstate__``, ``copy._reconstruct``), in pure Python as CPython does them.

CPython's ``copy.deepcopy`` keeps a memo keyed by ``id()`` of each object copied; this one keeps
the pairs (original, copy) and finds an original by identity, so copies trace without ids. It
copies what CPython's dispatch table copies (builtin containers item by item, atomic values as
they are) and, for any other value, follows CPython's reduction: the class's ``__reduce_ex__(4)``
(``object``'s, written here: ``copyreg.__newobj__`` with the instance's ``__dict__`` as its
state, or a namedtuple's items as ``copyreg.__newobj__``'s arguments; ``torch.Size``'s and
``torch.device``'s ``__reduce__``, written here too), then ``_reconstruct``: the new object made
by the reduction's callable, its state deep-copied and set. A value the trace does not copy this
way (one with ``__deepcopy__``, an entry in ``copyreg.dispatch_table``, its own reduction in C,
``__slots__``, a builtin base type other than a namedtuple's, a tensor) makes the whole copy run
in Python, the real ``copy.deepcopy`` (a graph break at the call, which
keeps the sharing between the items), and so does a copy with a ``memo`` given. ``copy.copy`` is
CPython's own Python code, traced: its ``__reduce_ex__`` and ``_reconstruct`` are the ones here;
``copy.copy`` of a tensor runs in Python, whole, at one graph break (its reduction is the
tensor's storage, which no graph holds, and the copy a new tensor over that storage).

A dunder method is read on the class (``type(x).__reduce_ex__(x, 4)``), where CPython reads it on
the object: the two differ only for an object whose own ``__dict__`` holds such a method.
"""

from __future__ import annotations

import collections
import copy
import copyreg
import enum
import operator
import re
import types
import weakref

import torch

from .. import markers
from .registry import polyfill
from .slots import has_slot

#: the types ``copy.deepcopy`` gives back as they are (its ``_deepcopy_atomic``, and more)
_ATOMIC = frozenset(
    {
        type(None),
        type(Ellipsis),
        type(NotImplemented),
        int,
        float,
        bool,
        complex,
        bytes,
        str,
        types.CodeType,
        type,
        range,
        types.BuiltinFunctionType,
        types.FunctionType,
        weakref.ref,
        property,
        re.Pattern,  # immutable: their ``__deepcopy__`` gives them back
        re.Match,
        # torch's singletons, whose ``__reduce_ex__`` names them: copy gives them back
        torch.dtype,
        torch.layout,
        torch.memory_format,
    }
)
#: types whose C ``__reduce__`` has an equivalent here
_REDUCED_HERE = (torch.Size, torch.device)
_HEAP_TYPE = 1 << 9  #: ``Py_TPFLAGS_HEAPTYPE``: a class made by a class statement
_CLASS_DICT = vars(type)["__dict__"]  #: a class's own namespace, whatever its metaclass says
#: the code of the ``__getnewargs__`` every ``namedtuple()`` class is made with
_NAMEDTUPLE_GETNEWARGS = collections.namedtuple("_", "").__getnewargs__.__code__


@polyfill(copy.deepcopy)
def deepcopy(x, memo=None):
    """``copy.deepcopy``: builtin containers copied item by item (shared items stay shared,
    a tuple whose items all come back as they are is itself), atomic values as they are, other
    objects through their reduction."""
    if memo is not None or not _copied_here(x, []):
        return _in_python(x, memo)
    return _copy(x, [])


@polyfill(copy.copy)
def shallow_copy(x):
    """``copy.copy``: CPython's own code (``_cpython_copy``), traced; for a tensor whose class has
    no ``__copy__``, the real ``copy.copy`` run in Python: a new leaf tensor over the same storage,
    its ``requires_grad`` and ``__dict__`` as the original's."""
    if isinstance(x, torch.Tensor) and getattr(type(x), "__copy__", None) is None:
        return _copy_in_python(x)
    return _cpython_copy(x)


#: ``copy.copy`` itself under another identity (a call of ``copy.copy`` is ``shallow_copy``)
_cpython_copy = types.FunctionType(copy.copy.__code__, copy.copy.__globals__, "copy")


def _atomic(x):
    cls = type(x)
    if cls in _ATOMIC or issubclass(cls, type):
        return True
    return isinstance(x, enum.Enum) and cls.__deepcopy__ is enum.Enum.__deepcopy__


def _copied_here(x, seen):
    """Whether every value ``x`` holds is copied here: atomic, a builtin container, or an object
    reduced here (else the whole copy runs in Python, which keeps the sharing of the items)."""
    if _atomic(x):
        return True
    for visited in seen:
        if visited is x:
            return True
    cls = type(x)
    if cls in _REDUCED_HERE:
        return True
    if cls in (list, tuple, set, frozenset):
        items = x
    elif cls is slice:
        items = [x.start, x.stop, x.step]
    elif cls is dict:
        items = [*x.keys(), *x.values()]
    elif _default_reduction(x):
        items = _state_values(x)
    elif _namedtuple_reduction(x):
        items = x
    else:
        return False
    seen.append(x)
    return all(_copied_here(item, seen) for item in items)


def _default_reduction(x):
    """``x`` is an object of a Python class that keeps ``object``'s copy protocol: no
    ``__deepcopy__``, no ``copyreg`` entry, ``object``'s ``__reduce_ex__``, ``__reduce__`` and
    ``__getstate__``, no ``__setstate__``, no new-arguments hook; and no ``__getattr__`` or
    instance attribute that CPython's lookups on the object would find."""
    cls = type(x)
    if not (_plain_class(cls) and _object_protocol(cls)):
        return False
    own = vars(x) if cls.__dictoffset__ != 0 else {}
    return (
        getattr(cls, "__getnewargs__", None) is None
        and "__deepcopy__" not in own
        and "__reduce_ex__" not in own
    )


def _state_values(x):
    """The values ``object.__getstate__`` gives as the state of ``x``: its ``__dict__``'s and
    those of its slots that are set."""
    values = [*vars(x).values()] if type(x).__dictoffset__ != 0 else []
    for name in slot_names(type(x)):
        try:
            values.append(getattr(x, name))
        except AttributeError:  # an empty slot
            pass
    return values


def _namedtuple_reduction(x):
    """``x`` is an instance of a ``namedtuple()`` class that keeps the protocol it was made
    with: ``object``'s, whose ``__getnewargs__`` (the namedtuple's) gives the items, reduced to
    ``copyreg.__newobj__(cls, *items)`` with no state (no ``__dict__``, no slot names)."""
    cls = type(x)
    return _namedtuple_class(cls) and _object_protocol(cls)


def _namedtuple_class(cls):
    """A direct subclass of ``tuple`` without instance ``__dict__`` (so without slot names: a
    tuple subclass has none) whose ``__getnewargs__`` is the one ``namedtuple()`` makes."""
    getnewargs = getattr(cls, "__getnewargs__", None)
    return (
        cls.__bases__ == (tuple,)
        and cls.__dictoffset__ == 0
        and isinstance(getnewargs, types.FunctionType)
        and getnewargs.__code__ is _NAMEDTUPLE_GETNEWARGS
    )


def _object_protocol(cls):
    """``cls`` copies by ``object``'s protocol: no ``__deepcopy__``, no ``copyreg`` entry,
    ``object``'s ``__reduce_ex__``, ``__reduce__`` and ``__getstate__``, no ``__setstate__``, no
    ``__getnewargs_ex__``, no ``__getattr__`` (which CPython's lookups on an object reach)."""
    return (
        getattr(cls, "__getattr__", None) is None
        and getattr(cls, "__deepcopy__", None) is None
        and copyreg.dispatch_table.get(cls) is None
        and cls.__reduce_ex__ is object.__reduce_ex__
        and cls.__reduce__ is object.__reduce__
        and cls.__getstate__ is object.__getstate__
        and getattr(cls, "__setstate__", None) is None
        and getattr(cls, "__getnewargs_ex__", None) is None
    )


def _plain_class(cls):
    """Made by class statements over ``object`` alone (no builtin base's layout)."""
    for base in cls.__mro__:
        if base is not object and not base.__flags__ & _HEAP_TYPE:
            return False
    return True


def _copy(x, pairs):
    for original, made in pairs:
        if original is x:
            return made
    cls = type(x)
    if _atomic(x):
        return x
    if cls is list:
        y = []
        _remember(pairs, x, y)
        for item in x:
            y.append(_copy(item, pairs))
        return y
    if cls is dict:
        y = {}
        _remember(pairs, x, y)
        for key, value in x.items():
            y[_copy(key, pairs)] = _copy(value, pairs)
        return y
    if cls is tuple:
        items = [_copy(item, pairs) for item in x]
        for original, made in pairs:  # the tuple reached again through its items
            if original is x:
                return made
        if all(a is b for a, b in zip(x, items, strict=True)):
            return x
        y = tuple(items)
        _remember(pairs, x, y)
        return y
    if cls is slice:  # reduced to ``slice(start, stop, step)``: a new slice of copied parts
        y = slice(*[_copy(part, pairs) for part in (x.start, x.stop, x.step)])
        _remember(pairs, x, y)
        return y
    if cls is set or cls is frozenset:  # CPython rebuilds them from a copy of their items
        y = cls(_copy(list(x), pairs))
        _remember(pairs, x, y)
        return y
    reduced = cls.__reduce_ex__(x, 4)
    if isinstance(reduced, str):  # a global's name: the object itself
        return x
    return _rebuild(x, pairs, *reduced)


def _remember(pairs, x, y):
    """Enter ``y`` as the copy of ``x``, first, where lookups find it: CPython's memo keeps the
    last copy made of an object (one reached again through its reduction's arguments, a
    namedtuple holding a list that holds it, is made twice)."""
    pairs.insert(0, (x, y))


def _rebuild(x, pairs, func, args, state=None, listiter=None, dictiter=None):
    """``copy._reconstruct``: ``func(*args)`` given ``state`` (through ``__setstate__``, else
    into its ``__dict__`` and slots) and the items of ``listiter``/``dictiter``; deep where
    ``pairs`` (the memo) is given, the new object entered in it before its state is copied."""
    deep = pairs is not None
    if deep and args:
        args = _copy(args, pairs)
    y = func(*args)
    if deep:
        _remember(pairs, x, y)
    if state is not None:
        if deep:
            state = _copy(state, pairs)
        if hasattr(y, "__setstate__"):
            y.__setstate__(state)
        else:
            slotstate = None
            if isinstance(state, tuple) and len(state) == 2:
                state, slotstate = state
            if state is not None:
                _update_instance_dict(y, state)
            if slotstate is not None:
                for key, value in slotstate.items():
                    setattr(y, key, value)
    if listiter is not None:
        for item in listiter:
            y.append(_copy(item, pairs) if deep else item)
    if dictiter is not None:
        for key, value in dictiter:
            y[_copy(key, pairs) if deep else key] = _copy(value, pairs) if deep else value
    return y


def _update_instance_dict(y, state):
    """``y.__dict__.update(state)``: no ``__setattr__`` runs. A string key the class has no data
    descriptor for is stored by ``object.__setattr__``, which does just that."""
    cls = type(y)
    for key, value in state.items():
        if type(key) is str and not _data_descriptor(getattr(cls, key, None)):
            object.__setattr__(y, key, value)
        else:
            y.__dict__[key] = value


def _data_descriptor(attribute):
    kind = type(attribute)
    return hasattr(kind, "__set__") or hasattr(kind, "__delete__")


@polyfill(copy._reconstruct)
def reconstruct(x, memo, func, args, state=None, listiter=None, dictiter=None, *, deepcopy=None):
    """``copy._reconstruct`` as ``copy.copy`` calls it (no memo); with a memo (the real
    ``copy.deepcopy``'s) it runs in Python."""
    if memo is not None:
        return _reconstruct_in_python(x, memo, func, args, state, listiter, dictiter)
    return _rebuild(x, None, func, args, state, listiter, dictiter)


# -- the reduction protocol ------------------------------------------------------------------------
@polyfill(object.__reduce_ex__)
def object_reduce_ex(self, protocol):
    """``object.__reduce_ex__``: the class's own ``__reduce__`` if it has one; else, from
    protocol 2, ``(copyreg.__newobj__, (cls, *args), state, None, None)``, ``args`` what the
    class's ``__getnewargs__`` (a Python function) gives (a namedtuple's items), none for an
    object of a Python class without it (others in Python); ``copyreg._reduce_ex`` below 2."""
    protocol = _c_int(protocol)
    cls = type(self)
    override = cls.__reduce__
    if override is not object.__reduce__:
        if isinstance(override, types.FunctionType):
            return self.__reduce__()
        return override(self)
    if protocol < 2:
        return copyreg._reduce_ex(self, protocol)
    if getattr(cls, "__getnewargs_ex__", None) is not None or isinstance(self, (list, dict)):
        return _reduce_in_python(self, protocol)
    getnewargs = getattr(cls, "__getnewargs__", None)
    if getnewargs is None:
        if not _plain_class(cls):
            return _reduce_in_python(self, protocol)
        return (copyreg.__newobj__, (cls,), _state(self), None, None)
    if not isinstance(getnewargs, types.FunctionType):
        return _reduce_in_python(self, protocol)
    args = getnewargs(self)
    if not isinstance(args, tuple):
        name = type(args).__name__
        raise TypeError(f"__getnewargs__ should return a tuple, not '{name}'")
    return (copyreg.__newobj__, (cls, *args), _state(self), None, None)


@polyfill(types.MethodType.__reduce__)
def method_reduce(self):
    """``method.__reduce__``: ``getattr`` of the object it is bound to and its function's name."""
    return getattr, (self.__self__, self.__func__.__name__)


def _c_int(value):
    """``value`` as CPython's argument parser takes a C ``int``: an int, or an object whose
    type has ``__index__``."""
    if not isinstance(value, int):
        if not has_slot(type(value), "__index__"):
            name = type(value).__name__
            raise TypeError(f"'{name}' object cannot be interpreted as an integer")
        value = operator.index(value)
    if not -(2**31) <= value < 2**31:
        raise OverflowError("Python int too large to convert to C int")
    return value


def _state(self):
    """What ``object.__reduce_ex__`` takes as the state: the class's ``__getstate__()``, or
    ``object``'s."""
    if type(self).__getstate__ is not object.__getstate__:
        return self.__getstate__()
    return object_getstate(self)


@polyfill(object.__getstate__)
def object_getstate(self):
    """``object.__getstate__`` (CPython's ``object_getstate_default``) of an object of a class
    made over ``object`` alone, or of a namedtuple: the instance's ``__dict__`` itself (None where
    it has none or it is empty), and where the class has slot names (its ``__slots__`` and its
    bases', or names it was given), ``(that, {name: value})`` of the slots that are set, each
    read by ``getattr``, when any is. Like CPython's, it caches the class's slot names."""
    cls = type(self)
    namedtuple = _namedtuple_class(cls)
    if not namedtuple and not _plain_class(cls):
        return _getstate_in_python(self)
    names = slot_names(cls)
    if namedtuple and names:
        return _getstate_in_python(self)
    state = None
    if cls.__dictoffset__ != 0:
        attributes = vars(self)
        state = attributes if attributes else None
    slots = {}
    for name in names:
        try:
            slots[name] = getattr(self, name)
        except AttributeError:  # an empty slot
            pass
    return (state, slots) if slots else state


def slot_names(cls):
    """The names ``object.__getstate__`` reads from the slots, as a tuple: CPython's
    ``_PyType_GetSlotNames``, the class's own ``__slotnames__`` (a list or None), else
    ``copyreg._slotnames(cls)``, which finds them and caches them as ``cls.__slotnames__``. The
    trace runs it for real on a class it knows (``variables/objects.py``, ``slot_names``)."""
    namespace = _CLASS_DICT.__get__(cls)
    if "__slotnames__" in namespace:
        names = namespace["__slotnames__"]
        if names is not None and not isinstance(names, list):
            kind = type(names).__name__
            raise TypeError(f"{cls.__name__}.__slotnames__ should be a list or None, not {kind}")
    else:
        names = copyreg._slotnames(cls)
        if names is not None and not isinstance(names, list):
            raise TypeError("copyreg._slotnames didn't return a list or None")
    return tuple(names) if names else ()


@polyfill(torch.Size.__reduce__)
def size_reduce(self):
    """``torch.Size.__reduce__``."""
    return (torch.Size, (tuple(self),))


@polyfill(torch.device.__reduce__)
def device_reduce(self):
    """``torch.device.__reduce__``."""
    if self.index is None:
        return (torch.device, (self.type,))
    return (torch.device, (self.type, self.index))


# -- in Python -------------------------------------------------------------------------------------
def _in_python(x, memo):
    """The real ``copy.deepcopy`` (never traced)."""
    return copy.deepcopy(x, memo)


def _copy_in_python(x):
    """The real ``copy.copy`` (never traced)."""
    return copy.copy(x)


def _reconstruct_in_python(x, memo, func, args, state, listiter, dictiter):
    """The real ``copy._reconstruct`` (never traced)."""
    return copy._reconstruct(x, memo, func, args, state, listiter, dictiter)


def _reduce_in_python(x, protocol):
    """The real ``object.__reduce_ex__`` (never traced)."""
    return object.__reduce_ex__(x, protocol)


def _getstate_in_python(x):
    """The real ``object.__getstate__`` (never traced)."""
    return object.__getstate__(x)


for _fn, _why in (
    (_in_python, "copy.deepcopy of this value runs in Python"),
    (_copy_in_python, "copy.copy of a tensor runs in Python"),
    (_reconstruct_in_python, "copy._reconstruct with a memo runs in Python"),
    (_reduce_in_python, "object.__reduce_ex__ of an object of a builtin base type runs in Python"),
    (_getstate_in_python, "object.__getstate__ with slot names runs in Python"),
):
    setattr(_fn, markers.DISABLED_ATTR, markers.Disabled(_fn, reason=_why))
