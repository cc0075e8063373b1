"""CPython's slot lookup for the polyfills: whether a C function of CPython's would find the
special method ``name`` on a class (``_PyType_Lookup``: the classes of ``cls.__mro__`` only).
``hasattr(cls, name)`` asks more: the metaclass, and a metaclass's ``__getattr__`` answers any
name, so ``hasattr(type(x), "__len__")`` is no test of whether ``x`` has a length. The trace
answers a call of ``has_slot`` on a class it knows at trace time, guarded
(``variables/operations.py``, ``has_slot``); run in Python, it reads the classes' namespaces
through ``type``'s own descriptors, so no metaclass code runs."""

from __future__ import annotations

_MRO, _CLASS_DICT = type.__dict__["__mro__"], type.__dict__["__dict__"]


def has_slot(cls, name):
    """Whether a class of ``cls.__mro__`` defines ``name`` (``_PyType_Lookup`` finds it)."""
    return any(name in _CLASS_DICT.__get__(klass) for klass in _MRO.__get__(cls))
