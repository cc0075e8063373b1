"""``object.__init_subclass__`` and ``object.__subclasshook__``, the class hooks every class
inherits, as CPython's: the first takes no arguments and does nothing, the second takes one (or
any positional ones, as this CPython's does) and answers ``NotImplemented`` (``issubclass`` then
decides as usual). Each is registered for the class-method descriptor (bound to a user's class
through ``variables/objects/polyfilled_methods``) and for its binding to each builtin type
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


def _subclasshook_form() -> tuple[bool, str]:
    """How this CPython's ``object.__subclasshook__`` takes its arguments: exactly one
    (``METH_O``) or any positional ones, and whether its errors name the class."""
    try:
        object.__subclasshook__()
    except TypeError:
        one = True
    else:
        one = False
    try:
        object.__subclasshook__(k=1)
    except TypeError as e:
        return one, str(e).startswith("object.")
    raise AssertionError("object.__subclasshook__ took a keyword argument")


_ONE_ARGUMENT, _NAMES_CLASS = _subclasshook_form()


@polyfill(vars(object)["__subclasshook__"])
def subclasshook(cls, *args, **kwargs):
    """``object.__subclasshook__``: ``NotImplemented``, for one argument (or, where this CPython
    takes any, for any positional ones)."""
    name = f"{cls.__name__}.__subclasshook__()" if _NAMES_CLASS else "__subclasshook__()"
    if kwargs:
        raise TypeError(f"{name} takes no keyword arguments")
    if _ONE_ARGUMENT and len(args) != 1:
        raise TypeError(f"{name} takes exactly one argument ({len(args)} given)")
    return NotImplemented


def _bound_to(hook, cls):
    def bound(*args, **kwargs):
        return hook(cls, *args, **kwargs)

    bound.__doc__ = f"``{cls.__name__}.{hook.__name__}``"
    return bound


for _cls in _BUILTIN_TYPES:
    polyfill(_cls.__init_subclass__)(_bound_to(init_subclass, _cls))
    polyfill(_cls.__subclasshook__)(_bound_to(subclasshook, _cls))
