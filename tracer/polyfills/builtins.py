"""Builtins and methods of builtin types in pure Python."""

from __future__ import annotations

from .registry import polyfill


@polyfill(dict.fromkeys)
def fromkeys(iterable, value=None):
    """``dict.fromkeys`` (on ``dict`` itself: a subclass's ``fromkeys`` builds the subclass)."""
    d = {}
    for key in iterable:
        d[key] = value
    return d


@polyfill(object.__repr__)
def object_repr(self):
    """``object.__repr__``: the class's qualified name (after its module, unless that is
    ``builtins`` or not a string) and the object's address."""
    cls = type(self)
    module = cls.__module__
    where = f"{module}." if isinstance(module, str) and module != "builtins" else ""
    return f"<{where}{cls.__qualname__} object at {hex(id(self))}>"


@polyfill(object.__str__)
def object_str(self):
    """``object.__str__``: the class's ``__repr__`` called directly (its result unchecked)."""
    return type(self).__repr__(self)


@polyfill(object.__format__)
def object_format(self, format_spec):
    """``object.__format__``: ``str(self)`` for an empty spec; any other is refused."""
    if not isinstance(format_spec, str):
        raise TypeError(f"__format__() argument must be str, not {type(format_spec).__name__}")
    if format_spec:
        raise TypeError(f"unsupported format string passed to {_c_name(type(self))}.__format__")
    return str(self)


def _c_name(cls):
    """The name CPython's messages give a class: a static type outside ``builtins`` with its
    module (``torch.device``)."""
    heap = cls.__flags__ & (1 << 9)  # Py_TPFLAGS_HEAPTYPE
    if heap or cls.__module__ == "builtins":
        return cls.__name__
    return f"{cls.__module__}.{cls.__name__}"


def callable_iterator(fn, sentinel):
    """``iter(fn, sentinel)``: calls ``fn`` until it returns ``sentinel``."""
    while True:
        value = fn()
        if value == sentinel:
            return
        yield value
