"""The operations of the matrix, enumerated from the types and modules themselves.

``operations()`` lists every name in ``dir()`` of the fifteen builtin types and every public
callable of the six modules, each as an ``Operation``: its id (``dict.get``, ``operator.getitem``),
the statements that exercise it (``forms``: templates that assign the result to ``r``) and which
value kinds it is crossed with. The list comes from ``dir()``, so an operation a new Python adds
shows up; one for which no form can be derived or written is kept with ``forms == ()`` and a
reason, and is counted as not exercised.

A form is derived from the operation itself where it can be:

- a dunder with an operator or builtin of its own is written that way (``__contains__`` as
  ``v in c``, ``__len__`` as ``len(c)``, ``__iadd__`` as an augmented assignment);
- a method with a signature is called with the kind's value for each required positional
  argument (one, where all its positional arguments are optional);
- a data descriptor or class attribute is read (``c.real``, ``c.__doc__``).

``PATTERNS`` writes the argument shapes that cannot be derived (builtins without a signature, or
whose natural arguments a signature does not say, such as ``sorted(c, key=str)``).

Template fields: ``{D} {S} {F} {L} {T}`` a dict, set, frozenset, list or tuple holding the kind's
value, ``{R}`` the receiver of a non-container type, ``{v}`` the kind's value.
"""

from __future__ import annotations

import builtins
import collections
import copy
import functools
import inspect
import itertools
import operator
import types
from dataclasses import dataclass

from .catalogue import CONTAINERS, HOLDS_NOTHING, LETTER, SCOPE

TYPES = (
    dict,
    set,
    frozenset,
    list,
    tuple,
    str,
    bytes,
    int,
    float,
    complex,
    bool,
    type,
    object,
    range,
    slice,
    collections.deque,
    collections.OrderedDict,
    collections.defaultdict,
    collections.Counter,
    collections.ChainMap,
    type({}.keys()),
    type({}.values()),
    type({}.items()),
    SCOPE["SubDict"],
    SCOPE["SubList"],
    bytearray,
    type(iter([])),
    enumerate,
    zip,
    map,
    type(reversed([])),
    type(SCOPE["gen"](())),
)
MODULES = (builtins, operator, functools, itertools, collections, copy)


@dataclass(frozen=True)
class Operation:
    id: str  #: ``type.name`` or ``module.name``
    forms: tuple[str, ...]  #: statements assigning ``r``; empty: not exercised
    kinds: str  #: "all" kinds, "few" kinds, or "one" cell with no kind
    reason: str = ""  #: why it is not exercised


_BINARY = {
    "add": "+",
    "sub": "-",
    "mul": "*",
    "matmul": "@",
    "truediv": "/",
    "floordiv": "//",
    "mod": "%",
    "pow": "**",
    "lshift": "<<",
    "rshift": ">>",
    "and": "&",
    "xor": "^",
    "or": "|",
}
#: The operator module's arithmetic (``iadd`` too): crossed with a few kinds only, the number
#: types' dunders cover it as well.
_ARITHMETIC = {*_BINARY, "and_", "or_", "neg", "pos", "inv", "invert", "abs", "index"}
_COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}

#: Dunders that Python code reaches through syntax or a builtin, written that way.
SYNTAX: dict[str, str] = {
    **{f"__{n}__": f"r = {{X}} {s} {{v}}" for n, s in _BINARY.items()},
    **{f"__r{n}__": f"r = {{v}} {s} {{X}}" for n, s in _BINARY.items()},
    **{f"__i{n}__": f"r = {{X}}; r {s}= {{v}}" for n, s in _BINARY.items()},
    **{f"__{n}__": f"r = {{X}} {s} {{v}}" for n, s in _COMPARE.items()},
    "__neg__": "r = -{X}",
    "__pos__": "r = +{X}",
    "__invert__": "r = ~{X}",
    "__abs__": "r = abs({X})",
    "__bool__": "r = bool({X})",
    "__int__": "r = int({X})",
    "__float__": "r = float({X})",
    "__complex__": "r = complex({X})",
    "__index__": "r = operator.index({X})",
    "__trunc__": "r = math.trunc({X})",
    "__floor__": "r = math.floor({X})",
    "__ceil__": "r = math.ceil({X})",
    "__round__": "r = round({X})",
    "__divmod__": "r = divmod({X}, {v})",
    "__rdivmod__": "r = divmod({v}, {X})",
    "__len__": "r = len({X})",
    "__next__": "r = next({X})",
    "__length_hint__": "r = operator.length_hint({X})",
    "__copy__": "r = copy.copy({X})",
    "__hash__": "r = hash({X})",
    "__iter__": "r = iter({X})",
    "__reversed__": "r = reversed({X})",
    "__repr__": "r = repr({X})",
    "__str__": "r = str({X})",
    "__bytes__": "r = bytes({X})",
    "__format__": "r = format({X}, '')",
    "__dir__": "r = dir({X})",
    "__contains__": "r = {v} in {X}",
    "__getitem__": "r = {X}[{v}]",
    "__setitem__": "{X}[{v}] = {v}; r = None",
    "__delitem__": "del {X}[{v}]; r = None",
    "__getattribute__": "r = getattr({X}, '__class__')",
    "__setattr__": "setattr({X}, 'attr', {v}); r = None",
    "__delattr__": "delattr({X}, 'a'); r = None",
    "__class__": "r = {X}.__class__",
    "__doc__": "r = {X}.__doc__",
    "__new__": "r = type({X}).__new__(type({X}))",
    "__init__": "r = {X}.__init__()",
    "__instancecheck__": "r = isinstance({v}, {X})",
    "__subclasscheck__": "r = issubclass(type({v}), {X})",
}

#: Object-protocol names whose behaviour does not depend on what a container holds: crossed
#: with a few kinds only.
GENERIC = {
    "__class__",
    "__doc__",
    "__init_subclass__",
    "__subclasshook__",
    "__class_getitem__",
    "__sizeof__",
    "__new__",
    "__setattr__",
    "__delattr__",
    "__getattribute__",
    "__dir__",
    "__reduce__",
    "__reduce_ex__",
    "__getstate__",
}

#: Argument shapes written by hand: operation id -> forms (``{X}`` is the receiver of a type's
#: method). Module callables read their container from ``{L}`` (a list) or ``{D}`` (a dict).
PATTERNS: dict[str, tuple[str, ...]] = {
    "dict.pop": ("r = {X}.pop({v})", "r = {X}.pop({v}, None)"),
    "dict.get": ("r = {X}.get({v})", "r = {X}.get({v}, 0)"),
    "dict.setdefault": ("r = {X}.setdefault({v}, 0)",),
    "dict.update": ("r = {X}.update({{{v}: 1}})",),
    "dict.items": ("r = {X}.items()",),
    "dict.keys": ("r = {X}.keys()",),
    "dict.values": ("r = {X}.values()",),
    "dict.copy": ("r = {X}.copy()",),
    "dict.clear": ("r = {X}.clear()",),
    "dict.__or__": ("r = {X} | {{{v}: 0}}",),
    "dict.__ior__": ("r = {X}; r |= {{{v}: 0}}",),
    "dict.__ror__": ("r = {{{v}: 0}} | {X}",),
    "dict.__eq__": ("r = {X} == {{{v}: 'a', 'b': {v}}}", "r = {X} == {v}"),
    "set.__eq__": ("r = {X} == {{0, {v}}}", "r = {X} == {v}"),
    "frozenset.__eq__": ("r = {X} == {{0, {v}}}", "r = {X} == {v}"),
    "list.__eq__": ("r = {X} == [{v}, 'b']", "r = {X} == {v}"),
    "tuple.__eq__": ("r = {X} == ({v}, 'b')", "r = {X} == {v}"),
    "list.insert": ("r = {X}.insert(0, {v})",),
    "list.sort": ("r = {X}.sort(key=str)", "r = {X}.sort()"),
    "list.__setitem__": ("{X}[0] = {v}; r = None", "{X}[{v}] = {v}; r = None"),
    "list.__delitem__": ("del {X}[0]; r = None", "del {X}[{v}]; r = None"),
    "set.__contains__": ("r = {v} in {X}",),
    "str.format": ("r = '{{}}-{{!r}}'.format({v}, {v})",),
    "str.format_map": ("r = '{{a}}'.format_map({{'a': {v}}})",),
    "str.maketrans": ("r = {X}.maketrans({v})",),
    "str.count": ("r = {X}.count({v})",),
    "str.endswith": ("r = {X}.endswith({v})",),
    "str.startswith": ("r = {X}.startswith({v})",),
    "str.find": ("r = {X}.find({v})",),
    "str.rfind": ("r = {X}.rfind({v})",),
    "str.index": ("r = {X}.index({v})",),
    "str.rindex": ("r = {X}.rindex({v})",),
    "str.join": ("r = {X}.join([{v}, 'c'])",),
    "str.__mod__": ("r = '%s-%r' % ({v}, {v})",),
    "str.__getnewargs__": ("r = {X}.__getnewargs__()",),
    "bytes.__getnewargs__": ("r = {X}.__getnewargs__()",),
    "bytes.count": ("r = {X}.count({v})",),
    "bytes.endswith": ("r = {X}.endswith({v})",),
    "bytes.startswith": ("r = {X}.startswith({v})",),
    "bytes.find": ("r = {X}.find({v})",),
    "bytes.rfind": ("r = {X}.rfind({v})",),
    "bytes.index": ("r = {X}.index({v})",),
    "bytes.rindex": ("r = {X}.rindex({v})",),
    "bytes.hex": ("r = {X}.hex()",),
    **{
        f"bytes.{name}": (f"r = {{X}}.{name}()",)
        for name in (
            "capitalize isalnum isalpha isascii isdigit islower isspace istitle isupper "
            "lower swapcase title upper"
        ).split()
    },
    **{f"{t}.{name}": (f"r = {{X}}.{name}()",) for t in ("int", "bool") for name in ("conjugate",)},
    **{
        f"{t}.{name}": (f"r = {{X}}.{name}([{{v}}])",)
        for t in ("set", "frozenset")
        for name in (
            "difference intersection isdisjoint issubset issuperset symmetric_difference union"
        ).split()
    },
    **{
        f"set.{name}": (f"r = {{X}}.{name}([{{v}}])",)
        for name in (
            "difference_update intersection_update symmetric_difference_update update"
        ).split()
    },
    **{f"set.{name}": (f"r = {{X}}.{name}({{v}})",) for name in ("add", "discard", "remove")},
    **{
        f"{t}.{name}": (f"r = {{X}}.{name}()",)
        for t in ("set", "frozenset")
        for name in ("copy", "clear", "pop")
        if (t, name) not in (("frozenset", "clear"), ("frozenset", "pop"))
    },
    "range.count": ("r = {X}.count({v})",),
    "range.index": ("r = {X}.index({v})",),
    "slice.indices": ("r = {X}.indices({v})",),
    "type.__prepare__": ("r = {X}.__prepare__('N', ())",),
    "builtins.bool": ("r = bool({v})",),
    "builtins.int": ("r = int({v})",),
    "builtins.str": ("r = str({v})",),
    "builtins.bytes": ("r = bytes({v})",),
    "builtins.bytearray": ("r = bytearray({v})",),
    "builtins.dir": ("r = dir({v})",),
    "builtins.classmethod": ("r = classmethod({v}).__func__",),
    "builtins.staticmethod": ("r = staticmethod({v}).__func__",),
    "functools.GenericAlias": ("r = functools.GenericAlias(list, int)",),
    "functools.RLock": ("r = type(functools.RLock())",),
    "builtins.sorted": (
        "r = sorted({L}, key=str)",
        "r = sorted([{v}, {v}], key=str)",
        "r = sorted({L})",
    ),
    "builtins.min": ("r = min({L}, key=str)", "r = min({v}, {v})"),
    "builtins.max": ("r = max({L}, key=str)", "r = max({v}, {v})"),
    "builtins.sum": ("r = sum([{v}, {v}])",),
    "builtins.enumerate": ("r = list(enumerate({L}))",),
    "builtins.zip": ("r = list(zip({L}, {L}))",),
    "builtins.map": ("r = list(map(str, {L}))",),
    "builtins.filter": ("r = list(filter(None, {L}))",),
    "builtins.reversed": ("r = list(reversed({L}))",),
    "builtins.list": ("r = list({L})", "r = list({v})"),
    "builtins.tuple": ("r = tuple({L})", "r = tuple({v})"),
    "builtins.set": ("r = set({L})",),
    "builtins.frozenset": ("r = frozenset({L})",),
    "builtins.dict": ("r = dict({D})", "r = dict([({v}, 1)])"),
    "builtins.len": ("r = len({L})", "r = len({v})"),
    "builtins.any": ("r = any({L})",),
    "builtins.all": ("r = all({L})",),
    "builtins.iter": ("r = iter({L})", "r = iter({v})"),
    "builtins.next": ("r = next(iter({L}))",),
    "builtins.id": ("r = id({v}) == id({v})", "r = id({L}[0]) == id({v})"),
    "builtins.isinstance": ("r = isinstance({v}, (int, str))", "r = isinstance({v}, type({v}))"),
    "builtins.issubclass": ("r = issubclass(type({v}), (int, str))",),
    "builtins.getattr": ("r = getattr({v}, 'a', None)", "r = getattr({v}, 'missing')"),
    "builtins.hasattr": ("r = hasattr({v}, 'a')",),
    "builtins.setattr": ("setattr({v}, 'a', 5); r = None",),
    "builtins.delattr": ("delattr({v}, 'a'); r = None",),
    "builtins.print": ("r = print({v}, file=SINK)",),
    "builtins.globals": ("r = 'V' in globals()",),
    "builtins.locals": ("r = sorted(locals())",),
    "builtins.vars": ("r = vars({v})",),
    "builtins.super": ("r = super(type({v}), {v}).__class__",),
    "builtins.format": ("r = format({v})", "r = f'{{{v}!r}}'"),
    "builtins.pow": ("r = pow({v}, 2)",),
    "builtins.round": ("r = round({v})",),
    "builtins.divmod": ("r = divmod({v}, 3)",),
    "builtins.slice": ("r = slice({v})",),
    "builtins.range": ("r = range({v})",),
    "builtins.type": ("r = type({v})",),
    "builtins.object": ("r = type(object())",),
    "operator.getitem": ("r = operator.getitem({D}, {v})", "r = operator.getitem({L}, {v})"),
    "operator.setitem": ("r = operator.setitem({D}, {v}, 1)",),
    "operator.delitem": ("r = operator.delitem({D}, {v})",),
    "operator.contains": ("r = operator.contains({L}, {v})", "r = operator.contains({D}, {v})"),
    "operator.countOf": ("r = operator.countOf({L}, {v})",),
    "operator.indexOf": ("r = operator.indexOf({L}, {v})",),
    "operator.concat": ("r = operator.concat({L}, [{v}])",),
    "operator.iconcat": ("r = operator.iconcat({L}, [{v}])",),
    "operator.is_": ("r = operator.is_({L}[0], {v})",),
    "operator.is_not": ("r = operator.is_not({L}[0], {v})",),
    "operator.length_hint": ("r = operator.length_hint({L})",),
    "operator.attrgetter": ("r = operator.attrgetter('a')({v})",),
    "operator.itemgetter": ("r = operator.itemgetter({v})({D})",),
    "operator.methodcaller": ("r = operator.methodcaller('__repr__')({v})",),
    "functools.reduce": ("r = functools.reduce(lambda a, b: (a, b), {L})",),
    "functools.partial": ("r = functools.partial(operator.eq, {v})({v})",),
    "functools.cmp_to_key": ("r = sorted({L}, key=functools.cmp_to_key(lambda a, b: 0))",),
    "functools.cache": ("r = functools.cache(str)({v})",),
    "functools.lru_cache": ("r = functools.lru_cache()(str)({v})",),
    "functools.wraps": ("r = functools.wraps(str)(repr)({v})",),
    "functools.update_wrapper": ("r = functools.update_wrapper(lambda: 0, {v}).__wrapped__",),
    "functools.total_ordering": ("r = functools.total_ordering(Keyed) is Keyed",),
    "functools.singledispatch": ("r = functools.singledispatch(str)({v})",),
    "functools.singledispatchmethod": ("r = type(functools.singledispatchmethod(str))",),
    "functools.partialmethod": ("r = type(functools.partialmethod(str, {v}))",),
    "functools.cached_property": ("r = type(functools.cached_property(str))",),
    "itertools.chain": ("r = list(itertools.chain({L}, {L}))",),
    "itertools.product": ("r = list(itertools.product({L}, [0]))",),
    "itertools.permutations": ("r = list(itertools.permutations({L}))",),
    "itertools.combinations": ("r = list(itertools.combinations({L}, 2))",),
    "itertools.combinations_with_replacement": (
        "r = list(itertools.combinations_with_replacement({L}, 2))",
    ),
    "itertools.accumulate": ("r = list(itertools.accumulate({L}, lambda a, b: b))",),
    "itertools.groupby": ("r = [(k, list(g)) for k, g in itertools.groupby({L})]",),
    "itertools.islice": ("r = list(itertools.islice({L}, 1))",),
    "itertools.starmap": ("r = list(itertools.starmap(operator.is_, [({v}, {v})]))",),
    "itertools.compress": ("r = list(itertools.compress({L}, [1, 0]))",),
    "itertools.dropwhile": ("r = list(itertools.dropwhile(lambda a: a is {v}, {L}))",),
    "itertools.takewhile": ("r = list(itertools.takewhile(lambda a: a is {v}, {L}))",),
    "itertools.filterfalse": ("r = list(itertools.filterfalse(None, {L}))",),
    "itertools.zip_longest": ("r = list(itertools.zip_longest({L}, [0]))",),
    "itertools.pairwise": ("r = list(itertools.pairwise({L}))",),
    "itertools.tee": ("r = [list(i) for i in itertools.tee({L})]",),
    "itertools.cycle": ("r = next(itertools.cycle({L}))",),
    "itertools.repeat": ("r = list(itertools.repeat({v}, 2))",),
    "itertools.count": ("r = next(itertools.count({v}))",),
    "collections.Counter": ("r = collections.Counter({L})",),
    "collections.OrderedDict": ("r = collections.OrderedDict({D})",),
    "collections.defaultdict": ("r = collections.defaultdict(list, {D})[{v}]",),
    "collections.deque": ("r = collections.deque({L})",),
    "collections.ChainMap": ("r = collections.ChainMap({D}, {{}})[{v}]",),
    "collections.namedtuple": ("r = collections.namedtuple('N', 'a b')({v}, 1)",),
    "collections.UserDict": ("r = collections.UserDict({D})[{v}]",),
    "collections.UserList": ("r = collections.UserList({L})[0]",),
    "collections.UserString": ("r = str(collections.UserString({v}))",),
    "copy.copy": ("r = copy.copy({v})", "r = copy.copy({L})"),
    "copy.deepcopy": ("r = copy.deepcopy({v})", "r = copy.deepcopy({D})"),
    "copy.replace": ("r = copy.replace({v})",),
}

#: Types whose methods without a signature or pattern take the arguments of another type's
#: method of the same name (subclasses take their bases' patterns through the MRO).
ALIKE: dict[str, type] = {
    "deque": list,
    "bytearray": bytes,
    "dict_keys": set,
    "dict_items": set,
}
PATTERNS.update(
    {
        "deque.appendleft": ("r = {X}.appendleft({v})",),
        "deque.extendleft": ("r = {X}.extendleft([{v}])",),
        "deque.popleft": ("r = {X}.popleft()",),
        "deque.rotate": ("r = {X}.rotate()", "r = {X}.rotate({v})"),
        "deque.remove": ("r = {X}.remove({v})",),
        "deque.index": ("r = {X}.index({v})",),
        "deque.count": ("r = {X}.count({v})",),
        "deque.extend": ("r = {X}.extend([{v}])",),
        "deque.append": ("r = {X}.append({v})",),
        "defaultdict.__missing__": ("r = {X}.__missing__({v})",),
        "bytearray.__alloc__": ("r = {X}.__alloc__()",),
        "generator.send": ("r = {X}.send(None)", "r = {X}.send({v})"),
        "generator.throw": ("r = {X}.throw(ValueError('m'))",),
        "generator.close": ("r = {X}.close()",),
        "generator.__del__": ("r = {X}.__del__()",),
        **{
            f"{t}.__setstate__": ("r = {X}.__setstate__(1)", "r = {X}.__setstate__({v})")
            for t in ("list_iterator", "list_reverseiterator", "zip")
        },
    }
)

#: Forms of object-protocol methods shared by every type (when the type has no entry above).
NAME_PATTERNS: dict[str, tuple[str, ...]] = {
    "__reduce__": ("r = {X}.__reduce__()",),
    "__sizeof__": ("r = {X}.__sizeof__()",),
    "__class_getitem__": ("r = {X}.__class_getitem__(int)",),
    "__init_subclass__": ("r = {X}.__init_subclass__()",),
    "__subclasshook__": ("r = {X}.__subclasshook__(int)",),
}

#: Operations deliberately not run, with the reason (they are counted as not exercised).
SKIP: dict[str, str] = {
    "builtins.breakpoint": "enters the debugger",
    "builtins.input": "reads stdin",
    "builtins.open": "touches the file system",
    "builtins.exit": "site helper: exits",
    "builtins.quit": "site helper: exits",
    "builtins.help": "site helper: interactive",
    "builtins.copyright": "site helper: prints",
    "builtins.credits": "site helper: prints",
    "builtins.license": "site helper: prints",
    "builtins.aiter": "async iteration: needs an event loop",
    "builtins.anext": "async iteration: needs an event loop",
}


def operations() -> list[Operation]:
    ops = []
    for t in TYPES:
        ops += [_type_operation(t, name) for name in dir(t)]
    for module in MODULES:
        for name in dir(module):
            if not name.startswith("_") and callable(getattr(module, name)):
                ops.append(_module_operation(module, name))
    return ops


_METHOD_KINDS = (
    types.MethodDescriptorType,
    types.WrapperDescriptorType,
    types.BuiltinFunctionType,
    types.ClassMethodDescriptorType,
    types.FunctionType,
    classmethod,
    staticmethod,
)


def _type_operation(t: type, name: str) -> Operation:
    op_id = f"{t.__name__}.{name}"
    letter = LETTER.get(t.__name__, "R")
    element_sensitive = letter not in ("R", *HOLDS_NOTHING) and name not in GENERIC
    raw = inspect.getattr_static(t, name)
    alike = [*t.__mro__[:-1], *([ALIKE[t.__name__]] if t.__name__ in ALIKE else [])]
    inherited = [f"{b.__name__}.{name}" for b in alike if f"{b.__name__}.{name}" in PATTERNS]
    if inherited:
        forms = PATTERNS[inherited[0]]
    elif name == "__hash__" and letter in CONTAINERS and t.__hash__ is object.__hash__:
        # By identity, and each run builds its own container: equal, not the same, hashes.
        forms = ("r = hash({X}) == hash({X})",)
    elif name in NAME_PATTERNS:
        forms = NAME_PATTERNS[name]
    elif name in SYNTAX:
        forms = (SYNTAX[name],)
    elif not isinstance(raw, _METHOD_KINDS):
        forms = (f"r = {{X}}.{name}",)
    else:
        args = _derived_args(getattr(t, name), drop_self=not _unbound_free(raw))
        if args is None and t.__name__ in ALIKE and hasattr(ALIKE[t.__name__], name):
            args = _derived_args(getattr(ALIKE[t.__name__], name), drop_self=True)
        if args is None:
            return Operation(op_id, (), "one", "no signature and no argument pattern")
        forms = (f"r = {{X}}.{name}({args})",)
    forms = tuple(f.replace("{X}", "{" + letter + "}") for f in forms)
    if element_sensitive:
        kinds = "all"
    elif any("{v}" in f for f in forms):
        kinds = "few"
    else:
        kinds = "one"
    return Operation(op_id, forms, kinds)


def _module_operation(module: types.ModuleType, name: str) -> Operation:
    op_id = f"{module.__name__}.{name}"
    if op_id in SKIP:
        return Operation(op_id, (), "one", SKIP[op_id])
    fn = getattr(module, name)
    if op_id in PATTERNS:
        forms = PATTERNS[op_id]
    elif isinstance(fn, type) and issubclass(fn, BaseException):
        return Operation(op_id, (f"r = {module.__name__}.{name}('m').args",), "one")
    else:
        args = _derived_args(fn, drop_self=False)
        if args is None:
            return Operation(op_id, (), "one", "no signature and no argument pattern")
        forms = (f"r = {module.__name__}.{name}({args})",)
    if module is operator and (name in _ARITHMETIC or name[1:] in _ARITHMETIC):
        kinds = "few"
    else:
        kinds = "all" if any(_uses_kind(f) for f in forms) else "one"
    return Operation(op_id, forms, kinds)


def _uses_kind(form: str) -> bool:
    """The form reads the kind's value, directly or through a container holding it."""
    return any("{" + field + "}" in form for field in ("v", "D", "S", "F", "L", "T"))


def _unbound_free(raw: object) -> bool:
    """A class or static method: its signature, read from the type, has no ``self``."""
    return isinstance(raw, (classmethod, staticmethod, types.ClassMethodDescriptorType)) or (
        isinstance(raw, types.BuiltinFunctionType)
    )


def _derived_args(fn: object, drop_self: bool) -> str | None:
    """The kind's value for each required positional argument (one where all are optional), and
    for each required keyword-only argument; None without a signature."""
    try:
        params = list(inspect.signature(fn).parameters.values())  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    if drop_self and params:
        params = params[1:]
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    count = len(required)
    if count == 0 and (positional or any(p.kind == p.VAR_POSITIONAL for p in params)):
        count = 1
    args = ["{v}"] * count
    args += [f"{p.name}={{v}}" for p in params if p.kind == p.KEYWORD_ONLY and p.default is p.empty]
    return ", ".join(args)
