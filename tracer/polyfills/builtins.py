"""Builtins and methods of builtin types in pure Python."""

from __future__ import annotations

from .registry import generator_of, polyfill


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


@generator_of(iter, kind=type(iter(int, 1)))
def callable_iterator(fn, sentinel):
    """``iter(fn, sentinel)``: calls ``fn`` until it returns ``sentinel``."""
    while True:
        value = fn()
        if value == sentinel:
            return
        yield value


class _Sequence:
    def __getitem__(self, index):
        raise IndexError(index)


SEQUENCE_ITERATOR = type(iter(_Sequence()))


def sequence_iterator_at(seq, index):
    """CPython's sequence iterator of ``seq`` whose next item is ``seq[index]`` (``iter(seq)`` of
    an object whose class has ``__getitem__`` and no ``__iter__``; nothing of ``seq`` is read).
    What rewritten code calls to make one again; traced, its polyfill below."""
    it = iter(seq)
    it.__setstate__(index)
    return it


def exhausted_at(it, index):
    """Runtime helper: the sequence iterator ``it`` taken to its end, which ``seq[index]``
    raising marks (the trace saw it raise)."""
    it.__setstate__(index)
    next(it, None)


def _sequence_after(state):
    """``sequence_items`` suspended at its ``yield``: the C iterator after the item it gave."""
    return sequence_iterator_at, (state["seq"], state["index"] + 1)


def _sequence_seek(position, done):
    """The real sequence iterator ``sequence_items`` stood for, moved after the items the trace
    took (``position``), or to its end, which ``seq[position]`` raising marked."""
    if done:
        return exhausted_at, (position,)
    return SEQUENCE_ITERATOR.__setstate__, (position,)


@polyfill(sequence_iterator_at, kind=SEQUENCE_ITERATOR, resume=_sequence_after, seek=_sequence_seek)
def sequence_items(seq, index):
    """CPython's sequence iterator (``iter(seq)`` from ``index=0``): ``seq[index]``,
    ``seq[index + 1]``... until one raises ``IndexError`` or ``StopIteration``, each item asked for
    when the consumer takes it."""
    while True:
        try:
            item = seq[index]
        except (IndexError, StopIteration):
            return
        yield item
        index += 1
