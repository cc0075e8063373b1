"""Python values known at trace time: ``ConstantVariable`` (folded: operations on it are computed
by CPython during the trace), ``SymNodeVariable`` (a symbolic int/float/bool recorded in the graph),
``SliceVariable`` (a slice with a non-constant bound, ``make_slice``), the ids of objects
(``id(a) == id(b)`` as ``a is b``) and the texts of tensors made after the graph
(``TextVariable``). The bottom family: it imports no other. What operations on these mean lives
in ``operations.py``.
"""

from __future__ import annotations

import enum
import fractions
import functools
import hashlib
import inspect
import operator
import re
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
import torch.fx

from ...guards.sources import AttrSource, ConstSource, LocalSource, Source
from ..exc import PythonError, TracedException, Unsupported
from ..fakes.shapes import unbacked_symbols
from ..markers import REBUILT
from ..polyfills import substitution
from ..run_time_warnings import keep
from . import dispatch
from .base import (
    MISSING,
    RUNNING,
    ConstantLikeVariable,
    IdentityKey,
    VariableTracker,
    type_lookup,
)
from .call_rules import call_rule, call_rules_for

if TYPE_CHECKING:
    from ...codegen.emit import Codegen
    from ..translator import Translator


# ``ConstantVariable``: an immutable Python value known at trace time (int, str, None, dtype...).
#
# Operations on constants are folded: the translator computes them in Python and the graph never
# sees them. Constants that came from inputs were guarded when they were wrapped (``builder.wrap``).

#: The Python scalars a literal spells: guarded and folded by value wherever they are read.
LITERAL_TYPES = (int, float, bool, str, bytes, complex)

#: Types whose values are immutable and cheap to copy, so we can fold operations on them.
CONSTANT_TYPES = (
    int,
    float,
    bool,
    complex,
    str,
    bytes,
    type(None),
    type(Ellipsis),
    type(NotImplemented),
    range,
    slice,
    frozenset,
)


#: Methods of constants that take only indices (converted with ``__index__``), as (type, name).
INDEX_METHODS = frozenset(
    {(slice, "indices")} | {(t, "__getitem__") for t in (tuple, range, str, bytes)}
)


#: C types whose objects are immutable values and whose methods are pure: given constants, a
#: method computes a new value from them and reads nothing else (``pattern.match(s)``,
#: ``m.group(1)``). Their objects are constants of the trace, made or read, and their methods are
#: computed at trace time. A ``re.Match`` keeps no identity of its own that CPython lets code use
#: (``copy.copy(m) is m``), so one made in the trace is rebuilt as that object.
IMMUTABLE_C_KINDS = (re.Pattern, re.Match)

#: Values whose identity follows from their value: CPython keeps one object of each
_SINGLETONS = (type(None), bool, type(Ellipsis), type(NotImplemented))


def identity_is_value(value: Any) -> bool:
    """Whether every object equal to ``value`` is ``value`` itself: a singleton, an int CPython
    caches (-5..256), an empty or one-character str (latin-1) or bytes. Any other number, str or
    bytes is an object of its own, which an operation may give back (``(a,)[0]``, ``s.strip()``,
    ``max(a, b)``): ``is`` tells them apart."""
    cls = type(value)
    if cls in _SINGLETONS:
        return True
    if cls is int:
        return -5 <= value <= 256
    if cls is str:
        return len(value) == 0 or (len(value) == 1 and ord(value) < 256)
    return cls is bytes and len(value) <= 1


#: Immutable values that each evaluation makes anew (``list[int]``, ``int | str``, a compiled
#: pattern, a match), with the parts that decide them: one read from outside is guarded by those
#: parts, never by its identity (``builder._guard_parts``), so the value a call makes again (a
#: call run in Python at a graph break, whose result the resume function takes; an argument
#: built at each call) serves every call alike, and it is given back as the object read.
DECIDING_PARTS: dict[type, tuple[str, ...]] = {
    types.GenericAlias: ("__origin__", "__args__", "__unpacked__"),
    types.UnionType: ("__args__",),
    re.Pattern: ("pattern", "flags"),
    re.Match: ("re", "string", "pos", "endpos", "regs", "lastindex"),
}

#: Value types written in Python that are immutable by their API (every operation gives a new
#: value, ``copy.copy(f) is f``) and pure on values: a ``Fraction`` is a constant of the trace
#: like an ``IMMUTABLE_C_KINDS`` object, made (``Fraction(1, 3)``, a call rule of kind fold),
#: operated on and its methods called at trace time. Its fields are slots a program can still
#: write, so one the trace gives back is made anew on each call (``ConstantVariable.reconstruct``)
#: from the arguments this table gives, and one read from outside is guarded by value.
IMMUTABLE_PY_KINDS: dict[type, Callable[[Any], tuple]] = {
    fractions.Fraction: lambda f: (f.numerator, f.denominator),
}
IMMUTABLE_KINDS = (*IMMUTABLE_C_KINDS, *IMMUTABLE_PY_KINDS)
call_rules_for(*IMMUTABLE_PY_KINDS, owner=__name__, fold=True)

#: ``hashlib``'s constructors, pure on values: computed at trace time (``hashlib.sha256(b"..")``).
_HASH_CONSTRUCTORS = [getattr(hashlib, name) for name in sorted(hashlib.algorithms_guaranteed)]
call_rules_for(*_HASH_CONSTRUCTORS, hashlib.new, owner=__name__, fold=True)
#: C types whose objects change only through methods outside a known set of reading ones (a
#: hash's ``update``): one made at trace time from values is a constant of the trace on which
#: only those methods are computed (any other call breaks: the trace never changes it), given
#: back as a ``copy()`` of it, made on each call, which code after a break may change.
READ_ONLY_C_METHODS: dict[type, frozenset[str]] = {
    type(make()): frozenset({"digest", "hexdigest", "copy"}) for make in _HASH_CONSTRUCTORS
}

#: The ``re`` module's functions of a pattern and a string, computed whole at trace time on
#: constants rather than traced through the pattern compiler: pure (the cache of compiled
#: patterns they fill gives the same pattern for the same key, which nothing can tell from a new
#: one). ``finditer`` (an iterator) and ``purge`` (empties the cache) are traced as Python;
#: ``sub`` and ``subn`` have a rule of their own (``_substitution``). The matches a
#: substitution with a function finds are computed the same way (``substitution.matches``).
call_rules_for(
    re.compile,
    re.match,
    re.fullmatch,
    re.search,
    re.split,
    re.findall,
    re.escape,
    substitution.matches,
    owner=__name__,
    fold=True,
)


@call_rule(re.sub, re.subn, re.Pattern.sub, re.Pattern.subn)
def _substitution(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """``re.sub``/``re.subn`` and ``Pattern.sub``/``subn`` (the pattern their first argument):
    computed whole on values; with a function as the replacement, the matches computed by the
    call itself, its arguments as given (bound by CPython, which warns where it does), and the
    substitution traced (``traced_substitution``)."""
    if value_arguments(args, kwargs):
        return tx.fold_call(fn, args, kwargs)
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs).arguments
    except TypeError:
        raise Unsupported("call", f"{fn.__qualname__}() with these arguments") from None
    names = list(inspect.signature(fn).parameters)
    where = names.index("repl") if "repl" not in kwargs else "repl"
    return traced_substitution(tx, fn, args, kwargs, where, bound["repl"], bound["string"])


def traced_substitution(
    tx: Translator,
    fn: Any,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
    where: int | str,
    repl: VariableTracker,
    string: VariableTracker,
) -> VariableTracker:
    """``fn(*args, **kwargs)``, a substitution (``re.sub``, ``Pattern.subn``...) whose
    replacement ``repl``, at position or keyword ``where``, is not a value: the matches computed
    by the call on the constant string (``substitution.matches``), then ``substitution.subn``
    inlined, which calls ``repl`` on each, so the function is traced, with its effects, on every
    call. Anything else is not traced: other arguments not known here, or a ``repl`` that is not
    callable (a template CPython rejects)."""
    what = f"{fn.__qualname__}()"
    given = ConstantVariable(None)  # in ``repl``'s place: ``matches`` puts its recorder there
    if isinstance(where, str):
        kwargs = {**kwargs, where: given}
    else:
        args = [*args[:where], given, *args[where + 1 :]]
    if not value_arguments(args, kwargs):
        raise Unsupported("call", f"{what} of arguments not known here")
    callable_ = dispatch.call_builtin(tx, callable, [repl], {})
    if not (callable_.is_python_constant() and callable_.as_python_constant()):
        raise Unsupported("call", f"{what} with a replacement {repl} that is not a function")
    head = [ConstantVariable(fn), ConstantVariable(where)]
    found = tx.fold_call(substitution.matches, [*head, *args], kwargs)
    with_count = ConstantVariable(fn in (re.subn, re.Pattern.subn))
    polyfill = tx.wrap_static(substitution.subn)
    return dispatch.call(tx, polyfill, [found, repl, string, with_count], {})


def _read_only_c(value: Any) -> bool:
    """A ``READ_ONLY_C_METHODS`` object, or a method bound to one."""
    if type(value) is types.BuiltinMethodType:
        return type(value.__self__) in READ_ONLY_C_METHODS
    return type(value) in READ_ONLY_C_METHODS


#: Values a ``ConstantVariable`` holds that are immutable and fixed by their guards.
CONSTANT_KINDS = frozenset(
    {
        *CONSTANT_TYPES,
        *IMMUTABLE_KINDS,
        torch.device,
        torch.dtype,
        torch.layout,
        torch.memory_format,
    }
)

#: Methods that only read the object they are bound to and give a new value: bound to a constant
#: of any kind (a device, a dtype, an enum member), a call of one is computed at trace time, as
#: ``repr(constant)`` is.
READING_METHODS = frozenset(
    {
        "__repr__",
        "__str__",
        "__format__",
        "__hash__",
        "__sizeof__",
        "__eq__",
        "__ne__",
        "__lt__",
        "__le__",
        "__gt__",
        "__ge__",
        "__reduce__",
        "__reduce_ex__",
    }
)


def value_copy(value: Any) -> Any:
    """A new object equal to ``value``, of one of the ``IMMUTABLE_PY_KINDS``."""
    return type(value)(*IMMUTABLE_PY_KINDS[type(value)](value))


def fixed_value(value: Any) -> bool:
    """Whether ``value`` is immutable through and through: a constant kind, an enum member, or a
    tuple of such values."""
    if type(value) in CONSTANT_KINDS or isinstance(value, enum.Enum):
        return True
    return isinstance(value, tuple) and all(fixed_value(item) for item in value)


def nested(value: Any, leaf: Callable[[Any], bool]) -> bool:
    """Whether ``value`` is a ``leaf`` value, or a list, tuple or dict (of exactly those types)
    of such values at any depth."""
    if leaf(value):
        return True
    if type(value) in (list, tuple):
        return all(nested(item, leaf) for item in value)
    if type(value) is dict:
        return all(nested(k, leaf) and nested(v, leaf) for k, v in value.items())
    return False


def folded_value(value: Any) -> bool:
    """Whether ``value``, the result of a call computed at trace time, can be the trace's: a fixed
    value, or a new list, tuple or dict of such values (``re.findall``, ``m.groupdict()``)."""
    return nested(value, fixed_value)


def value_arguments(args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> bool:
    """Whether every argument is a value known at trace time (``folded_value``): a pure C
    function given them computes its result from them alone. A function is not one: called back
    by the C code (``re.sub(p, fn, s)``), it would run at trace time only."""
    values = [*args, *kwargs.values()]
    return all(v.is_python_constant() and folded_value(v.as_python_constant()) for v in values)


#: The one warnings filter ``computed`` runs under: every warning recorded.
_ALWAYS = [("always", None, Warning, None, 0)]


def computed(fn: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """``fn(*args, **kwargs)`` on values, run at trace time: its result, or its error raised in
    the trace as CPython's. Its warnings belong to every call, at the caller's line and under the
    caller's filters (``~True`` on 3.12, ``re.sub(p, r, s, 1)`` on 3.13): those CPython gives
    at the line of the frame calling it are given by each compiled call
    (``run_time_warnings.keep``); others, or a call that warns and raises, break there, and
    CPython makes them."""
    error = None
    with warnings.catch_warnings(record=True) as warned:
        warnings.filters[:] = _ALWAYS  # the filters' copy: as ``simplefilter``, with no search
        try:
            result = _computing(fn, args, kwargs)
        except Exception as e:  # noqa: BLE001 (CPython's own error, raised in the trace)
            error = e
    tx = RUNNING.tx
    if warned and (error is not None or tx is None or not keep(tx, warned, _computing.__code__)):
        name = getattr(fn, "__qualname__", repr(fn))
        raise Unsupported("call", f"{name}() warns: {warned[0].message}")
    if error is not None:
        raise PythonError(error) from None
    return result


def _computing(fn: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """The frame a computation runs in: a warning naming it names the user's frame in eager."""
    return fn(*args, **kwargs)


#: C methods bound to an object (``len.__repr__``, ``f.__format__``)
_C_BOUND_METHODS = (types.MethodWrapperType, types.BuiltinMethodType)


def reading_method(method: Any) -> bool:
    """Whether ``method`` is one of the ``READING_METHODS`` bound to a fixed value, or to a
    function whose identity the trace fixes (``len.__repr__``, ``f.__hash__``: a module's builtin
    function, or a Python function guarded by identity, not one ``REBUILT`` at each call): a C
    method that reads nothing else."""
    if getattr(method, "__name__", None) not in READING_METHODS or not hasattr(method, "__self__"):
        return False  # an unbound method (``object.__repr__``) reads its argument
    owner = method.__self__
    if isinstance(owner, types.FunctionType) or _module_function(owner):
        return isinstance(method, _C_BOUND_METHODS) and owner not in REBUILT
    return not isinstance(owner, type) and fixed_value(owner)


def _module_function(value: Any) -> bool:
    """A builtin function of a module (``len``, ``math.sqrt``), not a C method bound to an object
    (``xs.append``)."""
    return isinstance(value, types.BuiltinFunctionType) and isinstance(
        value.__self__, (types.ModuleType, type(None))
    )


#: Methods of constants that read their arguments only through ``format``, ``str``, ``repr``,
#: ``ascii``, attribute reads and item reads (``str.format``'s replacement fields).
FORMATTING_METHODS = frozenset({(str, "format")})


def _formatted(tx: Translator, vt: VariableTracker, texts: list[TextVariable]) -> Any:
    """``vt``'s value for a formatting method: a constant's own, else ``_FormattedValue`` (the
    texts made after the graph that it gives are collected in ``texts``)."""
    if vt.is_python_constant():
        return vt.as_python_constant()
    return _FormattedValue(tx, vt, texts)


_OBJECT_FORMAT = object.__dict__["__format__"]


class _FormattedScalar:
    """A value not known at trace time, as a formatting method sees it: each conversion it asks
    for is the traced builtin's result (a user ``__repr__`` inlined, in CPython's order), which
    must be a constant or a text made after the graph (``TextVariable``: given to the method as
    a mark, put back in its result by ``_unmarked``); anything else breaks the graph. Not a
    mapping (``_FormattedValue`` is one)."""

    def __init__(self, tx: Translator, vt: VariableTracker, texts: list[TextVariable]) -> None:
        self._tx, self._vt, self._texts = tx, vt, texts

    def _text(self, fn: Any, *args: Any) -> str:
        extra = [ConstantVariable(a) for a in args]
        result = dispatch.call_builtin(self._tx, fn, [self._vt, *extra], {})
        if isinstance(result, TextVariable):
            return _marked(self._texts, result)
        if not (result.is_python_constant() and type(result.as_python_constant()) is str):
            raise Unsupported("call", f"{fn.__name__}() of {self._vt} is not known in the trace")
        return result.as_python_constant()

    def __format__(self, spec: str) -> str:
        cls = self._vt.python_type()
        if type_lookup(cls, "__format__") is not _OBJECT_FORMAT:
            return self._text(format, spec)
        if spec:  # ``object.__format__``: ``str(self)`` for an empty spec only
            raise TypeError(f"unsupported format string passed to {cls.__name__}.__format__")
        return self._text(str)

    def __str__(self) -> str:
        return self._text(str)

    def __repr__(self) -> str:
        return self._text(repr)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # a protocol the formatting method probes: not modelled
            raise Unsupported("call", f"a formatting method asks {self._vt} for {name}")
        return _formatted(self._tx, dispatch.getattr_(self._tx, self._vt, name), self._texts)


class _FormattedValue(_FormattedScalar):
    """``_FormattedScalar`` with its items: ``'{0[k]}'.format(v)`` reads ``v[k]`` as traced."""

    def __getitem__(self, key: Any) -> Any:
        item = dispatch.getitem(self._tx, self._vt, ConstantVariable(key))
        return _formatted(self._tx, item, self._texts)


# ``fmt % args`` of a string, where ``args`` holds values known only after the graph (tensors,
# objects made in the trace): CPython's own formatting run on ``_FormattedScalar`` stand-ins, a
# tuple or dict of them, which give each ``%s``, ``%r`` and ``%a`` conversion its traced text.
# Other conversions (``%d``, ``%f``...) read a number, and a width or precision pads or cuts the
# text: on such values these break the graph (``_percent_checked`` reads the format as CPython's
# ``unicode_format_arg_parse`` does).

#: a conversion of a ``%`` format: ``%``, a ``(key)``, flags, a width and a precision (numbers or
#: ``*``, which takes an argument), a length modifier (ignored), the conversion character
_PERCENT = re.compile(
    r"%(?:\((?P<key>[^)]*)\))?[-+ #0]*(?P<width>\*|\d+)?(?:\.(?P<precision>\*|\d*))?[hlL]?"
    r"(?P<kind>.?)",
    re.DOTALL,
)


def percent_formatted(tx: Translator, fmt: str, args: VariableTracker) -> VariableTracker:
    """``fmt % args`` where ``args`` is not a constant: a tuple's items, a dict's values by key,
    or the one value, each converted as the traced ``str``/``repr``/``ascii`` makes it."""
    numbers = _numbers_formatted(tx, fmt, args)
    if numbers is not None:
        return numbers
    texts: list[TextVariable] = []
    kind = args.python_type()
    if issubclass(kind, tuple):
        items = list(args.unpack(tx))
        values: Any = tuple(_formatted(tx, item, texts) for item in items)
    elif kind is dict and isinstance(getattr(args, "items", None), dict):
        if any(isinstance(k, IdentityKey) for k in args.items):
            raise Unsupported("operator", f"% with a dict keyed by values of the trace: {args}")
        items = args.items
        values = {k: _formatted(tx, v, texts) for k, v in args.items.items()}
    elif args.is_python_constant():  # a number (a symbolic one specialised), a list...
        items, values = None, args.as_python_constant()
    else:
        items = None
        # what CPython takes as a mapping of the keys (``PyMapping_Check``), a string aside
        mapping = kind is not str and type_lookup(kind, "__getitem__") is not MISSING
        values = (_FormattedValue if mapping else _FormattedScalar)(tx, args, texts)
    _percent_checked(fmt, args, items)
    try:
        result = fmt % values
    except (Unsupported, TracedException):  # from a traced conversion of an argument
        raise
    except Exception as e:  # noqa: BLE001 (the formatting's own error, raised as CPython's)
        raise PythonError(e) from None
    return _unmarked(tx, result, texts)


#: ``%`` conversions that give CPython's text for every number of a type (``%d`` of a float raises
#: for nan and inf; ``%f`` of an int overflows past a float's range; ``%c`` is a code point)
_PERCENT_OF = {
    float: frozenset("sraeEfFgG"),
    int: frozenset("sradiuxXo"),
    bool: frozenset("sradiuxXo"),
}


def _numbers_formatted(tx: Translator, fmt: str, args: VariableTracker) -> VariableTracker | None:
    """``fmt % args`` where what is known only after the graph is numbers computed from tensor
    data (``"%.3f" % t.item()``, a tuple holding such numbers), each taken by a conversion in
    ``_PERCENT_OF``, no ``*`` taking one and no ``(key)``: the text ``fmt % args`` makes after the
    graph, from the numbers it gives (CPython's own formatting, so CPython's text). An error of
    the format itself (a wrong count, an unknown conversion) raises here as CPython's, from
    numbers of the same types. None for anything else."""
    single = not issubclass(args.python_type(), tuple)
    items = [args] if single else list(args.unpack(tx))
    numbers = [not item.is_python_constant() for item in items]
    if not any(numbers) or not all(
        isinstance(item, SymNodeVariable) and item.unbacked
        for item, number in zip(items, numbers, strict=True)
        if number
    ):
        return None
    position = 0
    for match in _PERCENT.finditer(fmt):
        if match.group("key") is not None:
            return None
        stars = [match.group("width"), match.group("precision")].count("*")
        taken = [*["*"] * stars, match.group("kind")] if match.group("kind") != "%" else []
        for kind in taken:
            if position < len(items) and numbers[position]:
                if kind not in _PERCENT_OF[items[position].python_type()]:
                    return None
            position += 1
    examples = [
        _EXAMPLES[item.python_type()] if number else item.as_python_constant()
        for item, number in zip(items, numbers, strict=True)
    ]
    try:
        fmt % (examples[0] if single else tuple(examples))
    except (TypeError, ValueError) as e:
        raise PythonError(e) from None
    return TextVariable((TextPiece(functools.partial(operator.mod, fmt), args),))


def _percent_checked(fmt: str, args: VariableTracker, items: Any) -> None:
    """Break where a conversion of ``fmt`` reads a value known only after the graph other than
    by ``%s``, ``%r`` or ``%a`` without a width or precision: ``items`` are the tuple's (each
    conversion and ``*`` takes the next), the dict's (by key; a conversion without one takes the
    dict), or None for the one value ``args``."""
    position = 0

    def taken(key: str | None) -> VariableTracker | None:
        nonlocal position
        if key is not None and isinstance(items, dict):
            return items.get(key)
        if key is not None or not isinstance(items, list):
            if key is not None and items is None:  # a key into a value that is no dict
                raise Unsupported("operator", f"% with a key into {args}")
            return args
        position += 1
        return items[position - 1] if position <= len(items) else None

    for match in _PERCENT.finditer(fmt):
        key, kind = match.group("key"), match.group("kind")
        stars = [match.group("width"), match.group("precision")].count("*")
        for _ in range(stars):
            star = taken(None)
            if star is not None and not star.is_python_constant():
                raise Unsupported("operator", f"% with a width or precision {star}")
        if kind == "%":
            continue
        value = taken(key)
        plain = kind in ("s", "r", "a") and match.group("width") is match.group("precision")
        if value is not None and not value.is_python_constant() and not plain:
            spec = match.group(0)
            raise Unsupported("operator", f"{spec!r} of {value}: a number, or a padded text")


def unstored_dict(tx: Translator, owner: VariableTracker, value: Any, source: Source) -> Any:
    """``value.__dict__`` (``value`` at ``source``, tracked by ``owner``) of an object from outside
    the call whose own attributes the side-effect log keeps (a module, a function, an enum
    member): its real dict, guarded, as the object's instance dict (``SideEffects.instance_dict``),
    which later stores and deletions update and a write through it breaks on. Read after a store,
    it breaks: the dict of the object as the trace left it is not rebuilt."""

    def make(stored: dict) -> VariableTracker:
        if stored:
            raise Unsupported("instance_dict", f"__dict__ of {owner} after a store")
        own = object.__getattribute__(value, "__dict__")
        return tx.wrap(own, AttrSource(source, "__dict__"))

    effects = tx.output.side_effects
    return effects.instance_dict(effects.owner(owner, value), make)


@dataclass(eq=False)
class ConstantVariable(ConstantLikeVariable):
    value: Any
    source: Source | None = None

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if isinstance(self.value, enum.Enum):  # an enum member's own attributes may be set
            stored = tx.output.side_effects.own_attr(self, self.value, name)
            if stored is not None:
                return stored
            if name == "__dict__" and self.source is not None:
                return unstored_dict(tx, self, self.value, self.source)
            if name == "__dict__":  # no source to read it through: a store would leave it stale
                raise Unsupported("instance_dict", f"__dict__ of {self.value} without a source")
            method = type_lookup(type(self.value), name)
            if isinstance(method, types.FunctionType) and name not in vars(self.value):
                return tx.wrap_static(getattr(self.value, name))  # its code inlined
        try:
            value = getattr(self.value, name)
        except AttributeError as e:  # CPython's own error: the value is fixed by its guards
            raise PythonError(e) from None
        if type(value) is tuple:  # ``code.co_varnames``: a tuple of constants, with its methods
            return tx.fold(value)
        if isinstance(self.value, inspect.Signature) and name == "parameters":
            # a read-only mapping of constants (name -> Parameter): read as a dict of them, so
            # ``.keys()``, ``in``, iteration and views are traced (diffusers' attention processors)
            return tx.fold(dict(value))
        return ConstantVariable(value)

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        """Calling a constant: bound methods of immutable builtins (``"a,b".split``) and their
        class methods (``(7).from_bytes``), and the reading methods of any constant
        (``device.__repr__``), folded."""
        owner = getattr(self.value, "__self__", None)
        # a C class method bound to a constant type (``n.from_bytes``, ``x.fromhex``): pure
        of_constant_type = any(owner is cls for cls in CONSTANT_TYPES)
        reading = READ_ONLY_C_METHODS.get(type(owner), ())
        # a C method of an enum member's builtin base (``StrEnum.S.upper``): a reading one
        of_member = isinstance(owner, enum.Enum) and isinstance(self.value, types.BuiltinMethodType)
        if not callable(self.value) or (
            not of_member
            and type(owner) not in CONSTANT_TYPES
            and type(owner) not in IMMUTABLE_KINDS
            and not of_constant_type
            and not reading_method(self.value)
            and getattr(self.value, "__name__", None) not in reading
        ):
            raise Unsupported("call", f"calling {self.value!r}")
        if getattr(self.value, "__name__", "") == "join" and len(args) == 1 and not kwargs:
            args = [tx.fold(tuple(v.as_python_constant() for v in dispatch.iterate(tx, args[0])))]
        constant = all(a.is_python_constant() for a in [*args, *kwargs.values()])
        if type(owner) in (*IMMUTABLE_KINDS, *READ_ONLY_C_METHODS):  # ``pattern.sub(fn, s)``
            constant = value_arguments(args, kwargs)
        if not constant and type(owner) is re.Pattern and self.value.__name__ in ("sub", "subn"):
            method = getattr(re.Pattern, self.value.__name__)
            return _substitution(tx, method, [ConstantVariable(owner), *args], kwargs)
        if not constant and type(owner) is range and len(args) == 1 and not kwargs:
            searched = _range_method(tx, owner, self.value.__name__, args[0])
            if searched is not None:
                return searched
        if not constant and (type(owner), self.value.__name__) not in FORMATTING_METHODS:
            self._reject_indices(args, kwargs)
            raise Unsupported("call", f"{self.value.__qualname__} on non-constant arguments")
        texts: list[TextVariable] = []
        try:
            result = self.value(
                *[_formatted(tx, a, texts) for a in args],
                **{k: _formatted(tx, v, texts) for k, v in kwargs.items()},
            )
        except (Unsupported, TracedException):  # from a traced conversion of an argument
            raise
        except Exception as e:  # noqa: BLE001 (the method's own error, raised as CPython would)
            raise PythonError(e) from None
        if type(owner) in IMMUTABLE_KINDS and not folded_value(result):
            # ``pattern.finditer(s)``: an iterator, not a value
            raise Unsupported("call", f"{self.value.__qualname__} gives a {type(result).__name__}")
        if type(result) in READ_ONLY_C_METHODS:  # ``h.copy()``: a new one, read here in turn
            return ConstantVariable(result)
        return _unmarked(tx, result, texts)

    def _reject_indices(self, args: list[VariableTracker], kwargs: dict) -> None:
        """A method whose arguments are all indices (``INDEX_METHODS``) called with values whose
        index stand-ins it rejects: CPython's TypeError, raised."""
        method = (type(self.value.__self__), self.value.__name__)
        if method not in INDEX_METHODS or kwargs:
            return
        stand_ins = [None if a.is_python_constant() else dispatch.index_stand_in(a) for a in args]
        if any(
            s is None and not a.is_python_constant() for s, a in zip(stand_ins, args, strict=True)
        ):
            return
        values = [
            a.as_python_constant() if s is None else s for s, a in zip(stand_ins, args, strict=True)
        ]
        try:
            self.value(*values)
        except TypeError as e:
            raise PythonError(e) from None

    def unpack(self, tx: Translator) -> list[VariableTracker]:
        try:
            return [ConstantVariable(v) for v in self.value]
        except TypeError:
            kind = type(self.value).__name__
            raise Unsupported("unpack", f"cannot iterate over {kind}") from None

    def is_python_constant(self) -> bool:
        """Not for a ``READ_ONLY_C_METHODS`` object or its method: what it is given back as is
        another object (its id, hash and repr are that object's, not known here)."""
        return not _read_only_c(self.value)

    def as_python_constant(self) -> Any:
        if _read_only_c(self.value):
            raise Unsupported("not_constant", f"{self} is given back as a copy")
        return self.value

    def reconstruct(self, cg: Codegen) -> None:
        if type(self.value) is types.BuiltinMethodType and _read_only_c(self.value):
            # ``h.update``: bound to the copy given back
            ConstantVariable(self.value.__self__).reconstruct(cg)
            cg.load_attr(self.value.__name__)
            return
        if type(self.value) in READ_ONLY_C_METHODS:  # a copy made on each call, once per object
            cg.build_once(
                self.value,
                lambda: (
                    cg.load_const(type(self.value).copy).load_const(self.value).call_function(1)
                ),
            )
            return
        rebuild = IMMUTABLE_PY_KINDS.get(type(self.value))
        if isinstance(self.source, LocalSource) and not identity_is_value(self.value):
            # an argument the trace holds (a float, a str): the call's own object, not the one
            # the trace saw (equal constants are one object in the rewritten code's co_consts,
            # so ``a is b`` after a break would hold for two equal arguments)
            self.source.reconstruct(cg)
            return
        if rebuild is None and (self.source is None or type(self.value) not in DECIDING_PARTS):
            cg.load_const(self.value)
            return
        if self.source is not None:  # the object read from outside, itself
            self.source.reconstruct(cg)
            return

        def build() -> None:  # a new object on each call, as eager makes (``value_copy``)
            cg.load_const(type(self.value))
            arguments = rebuild(self.value)
            for argument in arguments:
                cg.load_const(argument)
            cg.call_function(len(arguments))

        cg.build_once(self.value, build)

    def __repr__(self) -> str:
        return f"ConstantVariable({self.value!r})"


#: The types of inputs whose value may stay unguarded while the trace only holds them
#: (``LazyConstantVariable``): compared and hashed by value, with no symbolic model of their own.
LAZY_CONSTANT_TYPES = (str, bytes)


class LazyConstantVariable(ConstantVariable):
    """A str or bytes input the trace holds without reading its value (a loop's item a resume
    function takes, only printed or passed to Python code at a break): its type is guarded where
    it is wrapped, its value on the first read of ``value`` (which everything that looks at it
    goes through: hashing, comparing, formatting, folding), so code that only passes it on serves
    every value. Until then it is given back through its source.

    Invariant: each read of ``value`` guards ``source == value`` (on the source it was wrapped
    with: code emission may point ``source`` elsewhere for a while), so no result of the trace
    depends on a value its guards leave open."""

    def __init__(self, value: Any, source: Source, assume_equal: Callable[[Source, Any], None]):
        self._value, self.source, self._where = value, source, source
        self._assume_equal = assume_equal
        self.read = False

    @property
    def value(self) -> Any:  # type: ignore[override]
        self._assume_equal(self._where, self._value)  # (again each time: a memoized body logs it)
        self.read = True
        return self._value

    def peek(self) -> Any:
        """The value, unguarded: for a reader whose result guards what it depends on itself
        (``containers.LazyDictVariable.item_at_key``)."""
        return self._value

    def python_type(self) -> type:
        return type(self._value)  # guarded where it was wrapped

    def reconstruct(self, cg: Codegen) -> None:
        self.source.reconstruct(cg)

    def clone(self, **changes: Any) -> VariableTracker:
        return ConstantVariable(**{"value": self.value, "source": self.source, **changes})

    def walk_children(self) -> list[VariableTracker]:
        return []

    def __repr__(self) -> str:
        return f"LazyConstantVariable({type(self._value).__name__} at {self._where.expr})"


# ``ObjectIdVariable``: ``id(obj)`` of a value the trace has no address for (a constant, a tensor,
# a container or object made in the trace).
#
# Its number is unknown at trace time, but what code does with ids mostly needs none: ``id(a) ==
# id(b)`` is ``a is b`` (``operations.compare_ids`` decides it). Given back to Python, it
# is rebuilt as ``id(obj)`` on the object the rewritten code holds, which is the object eager code
# would have. Ids of real input objects whose identity is guarded are computed instead
# (``operations.evaluate``).


@dataclass(eq=False)
class ObjectIdVariable(VariableTracker):
    """``id(of)``: an int, the same for two trackers exactly when they stand for one object."""

    of: VariableTracker

    def python_type(self) -> type:
        return int

    def reconstruct(self, cg: Codegen) -> None:
        cg.load_const(id)
        source = self.of.source if isinstance(self.of, ConstantVariable) else None
        if source is not None and not isinstance(source.root, ConstSource):
            # a value read from outside, guarded by value (an equal one passes): the object
            # this call was given, read again through its source
            source.reconstruct(cg)
        elif isinstance(self.of, ConstantVariable) and self.of.is_python_constant():
            # through a cell: the code's constant table would keep one of several equal values
            cg.load_cell_value(f"__bg_id{len(cg.cells)}", self.of.value)
        else:
            self.of.reconstruct(cg)
        cg.call_function(1)

    def __repr__(self) -> str:
        return f"ObjectIdVariable({self.of!r})"


@dataclass(eq=False)
class MethodHashVariable(VariableTracker):
    """``hash(of)`` of a method bound to an object the trace has no address for (a tensor, a
    container or object made in the trace), or of such an object hashed by its address alone
    (``object.__hash__``: a ``functools.partial`` made in the trace): CPython's ``meth_hash`` and
    ``method_hash`` (3.8+) mix the object's address with the method's, whatever the object's own
    ``__hash__``, so the number is unknown, but the same method of the same object hashes alike
    (``operations.compare_method_hashes``). Given back to Python, it is ``hash()`` of the value
    the rewritten code rebuilds."""

    of: VariableTracker

    def python_type(self) -> type:
        return int

    def reconstruct(self, cg: Codegen) -> None:
        cg.load_const(hash)
        self.of.reconstruct(cg)
        cg.call_function(1)

    def __repr__(self) -> str:
        return f"MethodHashVariable({self.of!r})"


# ``TextVariable``: a string that shows the values of tensors (``str(t)``, ``f"{t}"``,
# ``repr([t])``, ``'{}'.format(t)``). The trace has no values, but it needs the string only where
# the code reads it (compares, hashes, measures, prints it): until then it is a value the rewritten
# code makes after the graph, from the real tensors, as constant pieces around ``repr(t)``,
# ``str(t)`` or ``format(t, spec)``. Where the trace needs its value the graph breaks there, and the
# break's rebuilt stack and locals make it. The tensors must be as they were when the text was made:
# an operation that changes one ends the graph before it (``OutputGraph.watch_text``).


@dataclass(frozen=True)
class TextPiece:
    """``fn(of)``, or ``format(of, spec)``: the text of a tensor or of a number computed from
    tensor data (or ``repr``/``format`` of a ``TextVariable``), made after the graph."""

    fn: Any  #: ``repr``, ``str``, ``format``, or ``fmt % of`` (``partial(operator.mod, fmt)``)
    of: VariableTracker
    spec: str = ""


@dataclass(eq=False)
class TextVariable(VariableTracker):
    """A ``str`` made after the graph: its ``parts`` joined, each a constant string or a piece."""

    parts: tuple[str | TextPiece, ...]

    def python_type(self) -> type:
        return str

    def walk_children(self) -> list[VariableTracker]:
        """The tensors whose texts it holds (``walk``: the graph gives them back)."""
        return [part.of for part in self.parts if isinstance(part, TextPiece)]

    def reconstruct(self, cg: Codegen) -> None:
        """Made once (``build_once``): a break in a callee makes the callers' texts before the
        callee's code runs on (``continuation``), and their later loads are that string."""

        def build() -> None:
            for part in self.parts:
                if isinstance(part, str):
                    cg.load_const(part)
                    continue
                cg.load_const(part.fn)
                part.of.reconstruct(cg)
                if part.fn is format:
                    cg.load_const(part.spec)
                cg.call_function(2 if part.fn is format else 1)
            if len(self.parts) > 1:
                cg.add("BUILD_STRING", len(self.parts))

        cg.build_once(self, build)

    def __repr__(self) -> str:
        return f"TextVariable({self.parts!r})"


def joined_text(parts: list[str | VariableTracker]) -> VariableTracker:
    """The concatenation of ``parts`` (strings, string constants, ``TextVariable``s): a constant
    where no part waits for the graph."""
    flat: list[str | TextPiece] = []
    for part in parts:
        if isinstance(part, VariableTracker) and not isinstance(part, TextVariable):
            part = part.as_python_constant()
            if type(part) is not str:
                raise Unsupported("text", f"a {type(part).__name__} joined into a string")
        for item in part.parts if isinstance(part, TextVariable) else (part,):
            if isinstance(item, str) and flat and isinstance(flat[-1], str):
                flat[-1] += item
            elif not (isinstance(item, str) and not item):
                flat.append(item)
    if all(isinstance(item, str) for item in flat):
        return ConstantVariable("".join(flat))
    return TextVariable(tuple(flat))


#: Marks a ``TextVariable`` in the result of a formatting method run at trace time
#: (``_FormattedValue``): a code point of Unicode's private use plane around the text's index.
_MARK = "\U000f0000"
#: a mark as ``ascii()`` escapes it (``{!a}``, ``%a``): the text's ``ascii_escaped`` stands there
_ESCAPED_MARK = _MARK.encode("ascii", "backslashreplace").decode("ascii")


def ascii_escaped(text: str) -> str:
    """``text`` with its non-ASCII characters escaped as ``ascii(obj)`` escapes ``repr(obj)``
    (CPython's ``PyObject_ASCII``: ``backslashreplace``)."""
    return text.encode("ascii", "backslashreplace").decode("ascii")


def ascii_text(text: VariableTracker) -> VariableTracker:
    """``ascii(obj)`` from ``repr(obj)`` as the trace made it (``text``): escaped now where it is
    known, after the graph where it is made there."""
    if isinstance(text, TextVariable):
        return TextVariable((TextPiece(ascii_escaped, text),))
    return ConstantVariable(ascii_escaped(text.as_python_constant()))


#: a spec's presentation type (its last character, where it is a letter or ``%``)
_PRESENTATION = re.compile(r"[a-zA-Z%]?\Z")
#: presentation types that convert an int to a float (an int past a float's range overflows)
_FLOAT_PRESENTATIONS = frozenset("eEfFgG%")
#: a number of each type, for checking a spec or a ``%`` format against the type alone
_EXAMPLES = {float: 0.0, int: 0, bool: False}


def number_text(number: SymNodeVariable, fn: Any, spec: str = "") -> TextVariable:
    """``str(x)``, ``repr(x)`` or ``format(x, spec)`` of a number computed from tensor data
    (``t.item()``): CPython's text of the number the graph gives, made after the graph. A spec the
    type refuses raises CPython's error here (the same for every value of the type); a spec that
    may raise for some values only (``c``; a float presentation of an int, which may overflow)
    breaks the graph."""
    cls = number.python_type()
    kind = _PRESENTATION.search(spec).group()
    if spec and cls is not float and (kind == "c" or kind in _FLOAT_PRESENTATIONS):
        raise Unsupported("builtin", f"format() of {number} with spec {spec!r}")
    try:
        fn(_EXAMPLES[cls], *([spec] if fn is format else []))
    except ValueError as e:
        raise PythonError(e) from None
    return TextVariable((TextPiece(fn, number, spec),))


def text_formatted(text: TextVariable, spec: str) -> TextVariable:
    """``format(text, spec)``, made after the graph: whether ``str.__format__`` takes the spec
    does not depend on the string, so a spec it refuses raises CPython's error here."""
    try:
        format("", spec)
    except ValueError as e:
        raise PythonError(e) from None
    return TextVariable((TextPiece(format, text, spec),))


class _Marker(str):
    """A marked text as a formatting method sees it; a spec applied to it (``'{!s:>20}'``) marks
    the text formatted with the spec instead (the spec would pad or cut the mark)."""

    texts: list[TextVariable]
    index: int

    def __format__(self, spec: str) -> str:
        if not spec:
            return str(self)
        return _marked(self.texts, text_formatted(self.texts[self.index], spec))


def _marked(texts: list[TextVariable], text: TextVariable) -> str:
    texts.append(text)
    mark = _Marker(f"{_MARK}{len(texts) - 1}{_MARK}")
    mark.texts, mark.index = texts, len(texts) - 1
    return mark


def _unmarked(tx: Translator, result: Any, texts: list[TextVariable]) -> VariableTracker:
    """A formatting method's ``result`` with the texts it holds (``_marked``) put back."""
    if not texts:
        return tx.fold(result)
    if isinstance(result, str) and _ESCAPED_MARK in result:  # a text written by ``ascii()``
        escaped = re.compile(re.escape(_ESCAPED_MARK) + r"(\d+)" + re.escape(_ESCAPED_MARK))

        def unescaped(match: re.Match) -> str:
            index = int(match.group(1))
            if index >= len(texts):
                raise Unsupported("text", "a formatting method changed the text of a tensor")
            return _marked(texts, ascii_text(texts[index]))

        result = escaped.sub(unescaped, str.__str__(result))
    # a result that is one mark is the ``_Marker`` itself
    chunks = str.__str__(result).split(_MARK) if isinstance(result, str) else []
    indices = chunks[1::2]  # each mark once at most: one formatted with a spec is left out
    known = set(map(str, range(len(texts))))
    if len(chunks) % 2 == 0 or not set(indices) <= known or len(set(indices)) < len(indices):
        raise Unsupported("text", "a formatting method changed the text of a tensor")
    parts: list[str | VariableTracker] = []
    for i, chunk in enumerate(chunks):
        parts.append(texts[int(chunk)] if i % 2 else chunk)
    return joined_text(parts)


# ``SymNodeVariable``: an int/float/bool that is symbolic (a ``torch.SymInt`` and friends), with
# the FX node computing it.
#
# Sizes of dynamic dimensions and ints traced as dynamic are symbolic: arithmetic on them is
# recorded in the graph; branching on them evaluates the condition through torch's ``ShapeEnv``,
# which records a guard (e.g. ``2*s0 < 16``) that the output graph later renders as Python over the
# inputs. Using one as a plain Python value (``range(n)``, a list index) specialises it to its
# current value, with a guard.

SYMBOLIC_TYPES = (torch.SymInt, torch.SymFloat, torch.SymBool)
_PYTHON_TYPE = {torch.SymInt: int, torch.SymFloat: float, torch.SymBool: bool}


@dataclass(eq=False)
class SymNodeVariable(VariableTracker):
    node: torch.fx.Node
    value: Any  #: the SymInt/SymFloat/SymBool (its hint is the value seen while tracing)
    source: Source | None = None
    #: how many numbers its expression is made of, counted with repeats (``symbolic_numbers``)
    size: int = 1

    def python_type(self) -> type:
        return _PYTHON_TYPE[type(self.value)]

    @property
    def unbacked(self) -> bool:
        """Computed from tensor data (``t.item()``): no value is known while tracing."""
        return bool(unbacked_symbols(self.value))

    def is_python_constant(self) -> bool:
        """Yes, by specialising: code that needs a plain value (``range(n)``, a dict key) gets the
        current one and the trace is guarded on it. Operators, branches and tensor ops check for
        ``SymNodeVariable`` first and stay symbolic. Unbacked numbers have no value to specialise
        to."""
        return not self.unbacked

    def as_python_constant(self) -> Any:
        """Specialise: the value it has now, guarded to stay so."""
        if self.unbacked:
            raise Unsupported(
                "data_dependent",
                "a number computed from tensor data is used as a Python value",
                hint="keep it in tensor operations, or move this use out of the compiled function",
            )
        return self.python_type()(self.value)

    def evaluate(self) -> Any:
        return self.as_python_constant()

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        value = self.as_python_constant()
        try:
            found = getattr(value, name)
        except AttributeError as e:  # CPython's own error (``e.obj`` the value, guarded)
            raise PythonError(e) from None
        return tx.fold(found)

    def reconstruct(self, cg: Codegen) -> None:
        if self.node in cg.graph_outputs:
            cg.load_graph_output(self.node)
        elif self.source is not None:
            self.source.reconstruct(cg)
        else:
            cg.load_const(self.as_python_constant())

    def __repr__(self) -> str:
        return f"SymNodeVariable({self.node.name}: {self.value})"


# Slices whose bounds are not Python constants, and tensor indices built from them.
#
# ``BUILD_SLICE`` on constants stays a constant ``slice``; with a symbolic number or a tensor among
# its bounds it makes a ``SliceVariable``. Indexing a list or tuple needs concrete bounds (a backed
# symbol specialises, with a guard; anything else breaks). Indexing a tensor keeps the bounds
# symbolic: ``operations.index_for_tensor`` turns tensor bounds into unbacked symbolic ints (what
# Python's ``__index__`` does eagerly) and rewrites each unbacked bound into the value CPython's
# slice semantics give it, ``clamp(b + n if b < 0 else b, 0, n)``, so the graph computes exactly
# eager's view for every value and torch's shape checks need no assumption that could fail at run
# time.


@dataclass(eq=False)
class SliceVariable(VariableTracker):
    """``slice(start, stop, step)`` with trackers for bounds (at least one not a constant): a
    symbolic number or a tensor, or any other object (a slice holds what it is given)."""

    start: VariableTracker
    stop: VariableTracker
    step: VariableTracker
    source: Source | None = None

    @property
    def parts(self) -> tuple[VariableTracker, VariableTracker, VariableTracker]:
        return self.start, self.stop, self.step

    def python_type(self) -> type:
        return slice

    def is_python_constant(self) -> bool:
        # a list bound is the list itself: a copy would not be (``slice(xs).start is xs``)
        return all(isinstance(p, ConstantVariable) for p in self.parts)

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name in ("start", "stop", "step"):
            return getattr(self, name)
        return super().var_getattr(tx, name)

    def as_python_constant(self) -> Any:
        return slice(*(p.as_python_constant() for p in self.parts))

    def reconstruct(self, cg: Codegen) -> None:
        for part in self.parts:
            part.reconstruct(cg)
        cg.build_slice(3)


#: The longest range searched number by number (``obj in range(n)``) at trace time.
_RANGE_SEARCH_LIMIT = 64


def range_matches(
    tx: Translator, r: range, item: VariableTracker, first: bool = True
) -> list[bool]:
    """``n == item`` for each number ``n`` of ``r``, in order (``first``: up to the first match):
    how CPython searches a range for an item that is no int (``in``, ``index``, ``count`` iterate
    it). Not for constants, nor symbolic ints (they would be specialised number by number)."""
    if isinstance(item, SymNodeVariable) or item.is_python_constant():
        raise Unsupported("contains", f"search of a range for {item}")
    if len(r) > _RANGE_SEARCH_LIMIT:
        raise Unsupported("contains", f"search of a range of {len(r)} numbers")
    found = []
    for n in r:
        equal = dispatch.call_operator(tx, operator.eq, [ConstantVariable(n), item])
        found.append(dispatch.truth(tx, equal))
        if found[-1] and first:
            break
    return found


def _range_method(
    tx: Translator, r: range, name: str, item: VariableTracker
) -> VariableTracker | None:
    """``r.index(item)``, ``r.count(item)``, ``r.__contains__(item)`` by ``range_matches``."""
    if name not in ("index", "count", "__contains__"):
        return None
    found = range_matches(tx, r, item, first=name != "count")
    if name == "__contains__":
        return ConstantVariable(any(found))
    if name == "count":
        return ConstantVariable(sum(found))
    if not any(found):
        raise PythonError(ValueError("sequence.index(x): x not in sequence"))
    return ConstantVariable(len(found) - 1)


def make_slice(parts: list[VariableTracker]) -> VariableTracker:
    """What ``BUILD_SLICE`` (or 3.12's slice opcodes) push for these bounds."""
    while len(parts) < 3:
        parts.append(ConstantVariable(None))
    if all(isinstance(p, ConstantVariable) for p in parts):
        return ConstantVariable(slice(*(p.value for p in parts)))
    return SliceVariable(*parts)  # any object is a bound: what reads it decides what it takes


def error_of(fn: Any, *args: Any) -> Exception:
    """The error CPython raises for ``fn(*args)``, which must raise."""
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001 (CPython's own error, raised in the trace)
        return e
    raise AssertionError(f"{fn.__name__}{args} raised nothing")
