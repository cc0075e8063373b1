"""``object.__init_subclass__`` and ``object.__subclasshook__``, the class hooks every class
inherits, as CPython's: the first takes no arguments and does nothing, the second takes any
positional ones and answers ``NotImplemented`` (``issubclass`` then decides as usual). Each is
registered for the class-method descriptor (bound to a user's class through
``variables/objects/polyfilled_methods``) and for its binding to each builtin type
(``int.__subclasshook__``), as those bound methods compare equal to each other."""

from __future__ import annotations

from .registry import polyfill

#: builtin types whose bound class hooks (``(7).__init_subclass__``) are registered
_BUILTIN_TYPES = (
    object,
    int,
    float,
    bool,
    complex,
    str,
    bytes,
    bytearray,
    tuple,
    list,
    dict,
    set,
    frozenset,
    type,
    range,
    slice,
)


@polyfill(vars(object)["__init_subclass__"])
def init_subclass(cls, *args, **kwargs):
    """``object.__init_subclass__``: no arguments, nothing done."""
    if kwargs:
        raise TypeError(f"{cls.__name__}.__init_subclass__() takes no keyword arguments")
    if args:
        given = len(args)
        raise TypeError(f"{cls.__name__}.__init_subclass__() takes no arguments ({given} given)")
    return None


@polyfill(vars(object)["__subclasshook__"])
def subclasshook(cls, *args, **kwargs):
    """``object.__subclasshook__``: any positional arguments, ``NotImplemented``."""
    if kwargs:
        raise TypeError("__subclasshook__() takes no keyword arguments")
    return NotImplemented


def _bound_to(hook, cls):
    def bound(*args, **kwargs):
        return hook(cls, *args, **kwargs)

    bound.__doc__ = f"``{cls.__name__}.{hook.__name__}``"
    return bound


for _cls in _BUILTIN_TYPES:
    polyfill(_cls.__init_subclass__)(_bound_to(init_subclass, _cls))
    polyfill(_cls.__subclasshook__)(_bound_to(subclasshook, _cls))
