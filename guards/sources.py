"""Sources: where a traced value came from, relative to the frame's inputs.

A source renders as the Python expression that reads the value inside a generated guard function
(``.expr``: ``L['x']``, ``G['torch']``, ``C['y'].cell_contents``, ``L['self'].weight``,
``L['xs'][0]``) and can ``reconstruct`` itself as bytecode that loads the value in rewritten code.
``render(roots)`` is ``expr`` with arguments replaced by local names (``roots``: arg name -> local),
which is how the generated dispatcher reads them. Sources are frozen and hashable, so they key graph
inputs and guards.
"""

from __future__ import annotations

import dataclasses
import operator
import sys
from dataclasses import dataclass, field
from typing import Any

import torch

from ..codegen.emit import Emitter


class cached:  # noqa: N801 (used as a decorator, like ``functools.cached_property``)
    """``functools.cached_property`` without its lock (Python 3.11 takes one per first read): the
    value is computed on the first read and stored in the instance ``__dict__``, which later reads
    find first. Two threads reading it at once both compute the same value (as 3.12's does)."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn
        self.name = fn.__name__
        self.__doc__ = fn.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        value = obj.__dict__[self.name] = self.fn(obj)
        return value


#: Each source class's compared dataclass field names, for ``Source.__hash__``
#: (``dataclasses.fields`` builds its answer on every call).
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


@dataclass(frozen=True)
class Source:
    """Base class. ``depth`` orders guards: inputs before the attributes reached through them.

    Sources key dictionaries all through a trace, and a chained source's dataclass hash would
    walk the whole chain each time: the hash is computed once per source (``__hash__`` below; each
    subclass keeps it, as a class with its own ``__hash__`` gets none from ``dataclass``)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.__hash__ = Source.__hash__

    def __hash__(self) -> int:
        cached = self.__dict__.get("_hash")
        if cached is None:
            names = _FIELD_NAMES.get(type(self))
            if names is None:
                fields = dataclasses.fields(self)
                names = _FIELD_NAMES[type(self)] = tuple(f.name for f in fields if f.compare)
            cached = self.__dict__["_hash"] = hash((type(self), *map(self.__getattribute__, names)))
        return cached

    @cached
    def expr(self) -> str:
        return self.render({})

    def operands(self) -> tuple[Source, ...]:
        """The sources read to find this one's value besides its ``base``: a position read at
        run time (``L['xs'][L['i']]``), a call's arguments. Found from the fields, so a new
        source class needs nothing of its own."""
        names = _FIELD_NAMES.get(type(self))
        if names is None:
            hash(self)  # fills ``_FIELD_NAMES`` for the class
            names = _FIELD_NAMES[type(self)]
        found: list[Source] = []
        for name in names:
            value = getattr(self, name)
            if name != "base" and isinstance(value, Source):
                found.append(value)
            elif type(value) is tuple:
                found += [v for v in value if isinstance(v, Source)]
        return tuple(found)

    def render(self, roots: dict[str, str]) -> str:
        """``expr``, reading the arguments named in ``roots`` from locals instead of from ``L``."""
        raise NotImplementedError

    @cached
    def depth(self) -> int:
        return 0

    @property
    def root(self) -> Source:
        return self

    def reconstruct(self, cg: Emitter) -> None:
        raise NotImplementedError

    def __str__(self) -> str:
        return self.expr


@dataclass(frozen=True)
class ChainedSource(Source):
    """A source reached from another one (``base``): one level deeper, same root."""

    base: Source

    @cached
    def depth(self) -> int:
        return self.base.depth + 1

    @property
    def root(self) -> Source:
        root = self.__dict__.get("_root")
        if root is None:
            root = self.__dict__["_root"] = self.base.root
        return root


@dataclass(frozen=True)
class LocalSource(Source):
    name: str  #: the argument/local name in the user's frame

    def render(self, roots: dict[str, str]) -> str:
        return roots.get(self.name) or f"L[{self.name!r}]"

    def reconstruct(self, cg: Emitter) -> None:
        cg.load_local(self.name)


@dataclass(frozen=True)
class GlobalSource(Source):
    name: str  #: the name in the function's ``__globals__`` (builtins go through ``BuiltinSource``)

    def render(self, roots: dict[str, str]) -> str:
        return f"G[{self.name!r}]"

    def reconstruct(self, cg: Emitter) -> None:
        cg.load_global(self.name)


@dataclass(frozen=True)
class BuiltinSource(Source):
    name: str  #: a name found in builtins (not shadowed by a global)

    def render(self, roots: dict[str, str]) -> str:
        return f"B[{self.name!r}]"

    def reconstruct(self, cg: Emitter) -> None:
        cg.load_global(self.name)


@dataclass(frozen=True)
class ClosureSource(Source):
    name: str  #: a free variable of the compiled function; the guard reads its cell

    def render(self, roots: dict[str, str]) -> str:
        return f"C[{self.name!r}].cell_contents"

    def reconstruct(self, cg: Emitter) -> None:
        cg.load_deref(self.name)


@dataclass(frozen=True)
class AttrSource(ChainedSource):
    attr: str
    #: read past the class's ``__getattribute__`` hooks, ``object.__getattribute__(base, attr)``:
    #: where the trace guarded that they would only make the generic lookup (an allowlisted
    #: config's, ``objects.UserObjectVariable._hooks_passed``). Only how a guard reads it: the
    #: same place, equal to the plain source.
    generic: bool = field(default=False, compare=False)

    def render(self, roots: dict[str, str]) -> str:
        if self.generic:
            return f"object.__getattribute__({self.base.render(roots)}, {self.attr!r})"
        return f"{self.base.render(roots)}.{self.attr}"

    def reconstruct(self, cg: Emitter) -> None:
        self.base.reconstruct(cg)
        cg.load_attr(self.attr)


@dataclass(frozen=True)
class ItemSource(ChainedSource):
    index: Any  #: an int, str or other constant key
    is_dict_key: bool = False

    def render(self, roots: dict[str, str]) -> str:
        return f"{self.base.render(roots)}[{self.index!r}]"

    def reconstruct(self, cg: Emitter) -> None:
        self.base.reconstruct(cg)
        cg.load_const(self.index)
        cg.subscr()


@dataclass(frozen=True)
class ComputedItemSource(ChainedSource):
    """An item of the sequence ``base`` at a position read at run time, ``scale * index +
    offset``: ``L['xs'][L['i']]``, ``L['xs'][L['i'] + 1]``, ``L['xs'][-L['i']]``. An index out of
    range makes every guard on the item raise, which fails them (a miss)."""

    index: Source  #: where the position's number is read (a symbolic number's source)
    scale: int = 1
    offset: int = 0

    @cached
    def depth(self) -> int:
        return max(self.base.depth, self.index.depth) + 1

    def render(self, roots: dict[str, str]) -> str:
        position = self.index.render(roots)
        if self.scale != 1:
            position = f"{self.scale} * {position}"
        if self.offset:
            position = f"{position} + {self.offset}"
        return f"{self.base.render(roots)}[{position}]"

    def reconstruct(self, cg: Emitter) -> None:
        self.base.reconstruct(cg)
        if self.offset:  # operator.add(..., offset), its callable below the scaled index
            cg.load_const(operator.add)
        if self.scale != 1:
            cg.load_const(operator.mul)
        self.index.reconstruct(cg)
        if self.scale != 1:
            cg.load_const(self.scale)
            cg.call_function(2)
        if self.offset:
            cg.load_const(self.offset)
            cg.call_function(2)
        cg.subscr()


@dataclass(frozen=True)
class DictItemSource(ChainedSource):
    """An item read with ``dict``'s own lookup, ``dict.__getitem__(G['ACT2FN'], 'gelu')``: for
    instances of ``dict`` subclasses whose ``__getitem__`` is Python code (transformers'
    ``ClassInstantier`` makes a new object on each ``[]``), which guards must not run."""

    key: Any  #: a str, int or bytes key

    def render(self, roots: dict[str, str]) -> str:
        return f"dict.__getitem__({self.base.render(roots)}, {self.key!r})"

    def reconstruct(self, cg: Emitter) -> None:
        cg.load_const(dict.__getitem__)
        self.base.reconstruct(cg)
        cg.load_const(self.key)
        cg.call_function(2)


@dataclass(frozen=True)
class DictValueSource(ChainedSource):
    """The ``index``-th value of the dict ``base``, by position:
    ``[*L['m']._forward_hooks.values()][0]`` (for dicts whose keys change while their values stay,
    like a module's hook tables)."""

    index: int

    def render(self, roots: dict[str, str]) -> str:
        return f"[*{self.base.render(roots)}.values()][{self.index}]"

    def reconstruct(self, cg: Emitter) -> None:
        cg.load_const(list)
        self.base.reconstruct(cg)
        cg.load_attr("values")
        cg.call_function(0)
        cg.call_function(1)
        cg.load_const(self.index)
        cg.subscr()


@dataclass(frozen=True)
class CallSource(ChainedSource):
    """What calling ``base`` gives, with no arguments or those read at ``args``: the object a weak
    reference points to (``C['opt_ref'].cell_contents()``, None once it died), a class's
    ``__subclasses__()``, the method a caching descriptor gives an instance
    (``type(L['a']).__dict__['f'].__get__(L['a'], type(L['a']))``). Only for calls that give the
    same object each time once made."""

    args: tuple[Source, ...] = ()

    @cached
    def depth(self) -> int:
        return max((self.base.depth, *(a.depth for a in self.args))) + 1

    def render(self, roots: dict[str, str]) -> str:
        return f"{self.base.render(roots)}({', '.join(a.render(roots) for a in self.args)})"

    def reconstruct(self, cg: Emitter) -> None:
        self.base.reconstruct(cg)
        for arg in self.args:
            arg.reconstruct(cg)
        cg.call_function(len(self.args))


@dataclass(frozen=True)
class DictKeySource(ChainedSource):
    """The ``index``-th key of the dict ``base``, by position: ``[*L['opt'].state][0]`` (for keys
    that are not literals, like the parameters keying an optimizer's state)."""

    index: int

    def render(self, roots: dict[str, str]) -> str:
        return f"[*{self.base.render(roots)}][{self.index}]"

    def reconstruct(self, cg: Emitter) -> None:
        cg.load_const(list)
        self.base.reconstruct(cg)
        cg.call_function(1)
        cg.load_const(self.index)
        cg.subscr()


@dataclass(frozen=True)
class ConstSource(Source):
    """A value the trace owns (e.g. a default argument object): reconstructed by ``LOAD_CONST``."""

    value: Any = None
    label: str = "const"

    def render(self, roots: dict[str, str]) -> str:
        return f"<{self.label}>"

    def reconstruct(self, cg: Emitter) -> None:
        cg.load_const(self.value)

    def __hash__(self) -> int:
        return hash((ConstSource, id(self.value)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ConstSource) and other.value is self.value


@dataclass(frozen=True)
class FreshSource(Source):
    """An object the rewritten code builds itself before the graph runs (a ``torch.nn`` module
    created in the traced function), kept in its local ``name``. It is made the same way, from the
    same constants, on every call: facts about it hold by construction, so guards reached from it
    are dropped (``OutputGraph.add_guard``), and none ever depends on the identity of an object
    created during the call."""

    name: str

    def render(self, roots: dict[str, str]) -> str:
        return f"<{self.name}>"

    def reconstruct(self, cg: Emitter) -> None:
        cg.load_local(self.name)


@dataclass(frozen=True)
class TensorPropertySource(ChainedSource):
    """A size, stride or storage offset of a tensor: ``L['a'].size()[0]``,
    ``L['a'].stride()[1]``."""

    prop: str  #: "size", "stride" or "storage_offset"
    index: int | None = None

    def render(self, roots: dict[str, str]) -> str:
        call = f"{self.base.render(roots)}.{self.prop}()"
        return call if self.index is None else f"{call}[{self.index}]"

    def reconstruct(self, cg: Emitter) -> None:
        self.base.reconstruct(cg)
        cg.load_attr(self.prop)
        cg.call_function(0)
        if self.index is not None:
            cg.load_const(self.index)
            cg.subscr()


@dataclass(frozen=True)
class NumpyTensorSource(ChainedSource):
    """The tensor sharing a NumPy array's memory: ``__import__('torch').from_numpy(L['a'])``
    (guarded only after the array's type and dtype)."""

    def render(self, roots: dict[str, str]) -> str:
        return f"__import__('torch').from_numpy({self.base.render(roots)})"

    def reconstruct(self, cg: Emitter) -> None:
        cg.load_const(torch.from_numpy)
        self.base.reconstruct(cg)
        cg.call_function(1)


@dataclass(frozen=True)
class ShapeExprSource(Source):
    """A boolean expression over sizes, e.g. ``2 <= L['a'].size()[0]``: ``template`` has ``{0}``,
    ``{1}`` placeholders for ``sources`` (rendered like any source, so the fast guard form works
    too)."""

    template: str
    sources: tuple[Source, ...]

    def render(self, roots: dict[str, str]) -> str:
        return self.template.format(*(s.render(roots) for s in self.sources))

    @cached
    def depth(self) -> int:
        return max((s.depth for s in self.sources), default=0) + 1


@dataclass(frozen=True)
class ModuleGlobalSource(Source):
    """A global of another module, read by a function inlined from there: ``M['pkg.mod']['SCALE']``
    (``M`` maps module names to their globals in the guard function's scope)."""

    module: str
    name: str

    def render(self, roots: dict[str, str]) -> str:
        return f"{module_globals(self.module, roots)}[{self.name!r}]"

    def reconstruct(self, cg: Emitter) -> None:
        cg.load_const(sys.modules[self.module].__dict__)
        cg.load_const(self.name)
        cg.subscr()


@dataclass(frozen=True)
class GlobalsSource(Source):
    """A globals dict itself: ``G`` (the compiled function's) or ``M['pkg.mod']`` (another
    module's). Guarded with ``KEY_ABSENT`` when a name the trace resolved in builtins must stay
    unshadowed."""

    module: str | None = None  #: None for the compiled function's own globals

    def render(self, roots: dict[str, str]) -> str:
        return "G" if self.module is None else module_globals(self.module, roots)

    def reconstruct(self, cg: Emitter) -> None:
        raise NotImplementedError("a globals dict is only guarded, never loaded")


class ModuleGlobals:
    """The ``M`` of guard functions: ``M['pkg.mod']`` is that module's globals dict: the one bound
    when the guards were rendered (``bound``, see ``DispatcherRoots``), else ``sys.modules``'s."""

    def __init__(self, bound: dict[str, dict[str, Any]] | None = None) -> None:
        self.bound = bound if bound is not None else {}

    def __getitem__(self, module: str) -> dict[str, Any]:
        known = self.bound.get(module)
        return known if known is not None else sys.modules[module].__dict__


class DispatcherRoots(dict):
    """``roots`` for the dispatcher's form of the guards: argument name -> local name, plus the
    table of closure values. There ``M['pkg.mod']`` is a closure variable bound to that module's
    globals dict, the one the trace read (a module source is only made when ``sys.modules`` has the
    dict the inlined code's globals are): a LLaMA decode step checks 250 globals of other modules,
    and each ``M[...]`` is a Python method call. The readable form keeps ``M[...]`` and reads the
    same dicts (``ModuleGlobals(bound)``), so ``why()`` agrees with the dispatcher when a module
    is replaced in ``sys.modules`` after the trace."""

    def __init__(self, names: dict[str, str], consts: Any) -> None:
        super().__init__(names)
        self.consts = consts
        self.bound: dict[str, dict[str, Any]] = {}  #: module name -> the globals dict bound

    def globals_of(self, module: str) -> str:
        if module not in self.bound:
            loaded = sys.modules.get(module)
            if loaded is None:
                return f"M[{module!r}]"
            self.bound[module] = loaded.__dict__
        return self.consts.name(self.bound[module], f"globals_{module}")


def module_globals(module: str, roots: dict[str, str]) -> str:
    """The expression for module ``module``'s globals dict under ``roots``."""
    if isinstance(roots, DispatcherRoots):
        return roots.globals_of(module)
    return f"M[{module!r}]"


@dataclass(frozen=True)
class TypeSource(ChainedSource):
    """The class of a value: ``type(L['self'])`` (methods are guarded through it)."""

    def render(self, roots: dict[str, str]) -> str:
        return f"type({self.base.render(roots)})"

    def reconstruct(self, cg: Emitter) -> None:
        cg.load_const(type)
        self.base.reconstruct(cg)
        cg.call_function(1)
