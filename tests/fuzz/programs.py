"""Random differential programs: a seeded generator of small Python functions over tensors, ints,
lists, dicts, closures, globals and attributes, and the harness that runs each one eagerly and
compiled.

``generate(seed)`` gives a ``Program`` (its source is deterministic per seed);
``run_program(program)`` runs it eagerly and compiled, 3 calls each on equal fresh inputs (sizes and
ints vary between calls, so recompiles and automatic dynamic shapes happen), and compares everything
observable: return value, raised exception (type and message), printed output, mutated arguments,
globals and closure cells. It returns an ``Outcome``; ``minimize(program)`` drops statements while
the failure persists.

Every statement only assigns to a fixed pool of variables that is initialised first, so any subset
of a program's statements is itself a valid program (that is what makes minimising simple).
"""

from __future__ import annotations

import contextlib
import enum
import io
import math
import random
import re
import textwrap
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from bytegraph.tracer import driver
from bytegraph.tracer.breaks import speculation

import bytegraph

TENSORS = ("a", "b", "c")
INTS = ("i", "j")

PRELUDE = """\
import collections
import contextlib
import dataclasses
import itertools
import operator

import torch
import bytegraph

G_count = 0
G_list = []
G_scale = 2


@contextlib.contextmanager
def scoped(k):
    G_list.append(k)
    try:
        yield k * 2
    finally:
        G_list.append(-k)


class Obj:
    def __init__(self, w, count):
        self.w = w
        self.count = count
        self.p = torch.nn.Parameter(torch.ones(2))
        self.opt = torch.optim.SGD([self.p], lr=0.1, momentum=0.5)

    def bump(self, k):
        self.count = self.count + k
        return self.count


class Acc:
    def __init__(self, start):
        self.total = start
        self.steps = 0

    def add(self, t):
        self.total = self.total + t
        self.steps += 1
        return self


@dataclasses.dataclass
class Pt:
    t: torch.Tensor
    k: int = 1

    def scaled(self):
        return self.t * self.k


class Shift(torch.nn.Module):
    def forward(self, t):
        return t + 1


MOD = Shift()
HANDLES = []


def add_one(m, args, out):
    return out + 1


def double_input(m, args):
    return (args[0] * 2,)


class AttrDict(dict):
    __getattr__ = dict.__getitem__
    __setattr__ = dict.__setitem__


class Cfg(dict):
    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


"""


#: Values of every kind for the ``keys`` family: dict keys, set items and comparison operands.
KEYS_PRELUDE = """\
import enum
import math


class Plain:
    pass


class Keyed:
    def __init__(self, key):
        self.key = key

    def __eq__(self, other):
        return isinstance(other, Keyed) and other.key == self.key

    def __hash__(self):
        return hash(('Keyed', self.key))

    def __repr__(self):
        return f'Keyed({self.key})'


class Color(enum.Enum):
    RED = 1
    BLUE = 2


PLAIN = Plain()
PLAIN2 = Plain()
T1 = (1, 'a')
FS = frozenset({1, 2})
NAN = float('nan')
G_reg = {int: 1, float: 2, Obj: 3, type(None): 4, torch.Tensor: 5}
G_set = {None, PLAIN, Color.RED, torch.float32, T1, Obj, len, math, FS, range(3)}


"""

#: Classes, context managers, generators and helpers for the ``python`` family.
PYTHON_PRELUDE = """\
G_text = ''


class Box:
    def __init__(self, v, tag='b'):
        self.v = v
        self.tag = tag
        self.hist = []

    @property
    def double(self):
        return self.v * 2

    @property
    def label(self):
        return f'{self.tag}/{len(self.hist)}'

    @label.setter
    def label(self, text):
        self.tag = text
        self.hist.append(len(text))

    def __repr__(self):
        return f'Box({self.tag!r}, {len(self.hist)})'


class Slot:
    __slots__ = ('u', 'k')

    def __init__(self, u, k):
        self.u = u
        self.k = k

    def __eq__(self, other):
        return isinstance(other, Slot) and self.k == other.k

    def __hash__(self):
        return hash(('Slot', self.k))


@dataclasses.dataclass
class Rec:
    name: str
    n: int = 0
    items: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class Key:
    a: int
    b: str = 'x'


class Log:
    def __init__(self, k, swallow=()):
        self.k = k
        self.swallow = swallow

    def __enter__(self):
        G_list.append(('in', self.k))
        return self

    def __exit__(self, et, ev, tb):
        G_list.append(('out', self.k, None if et is None else et.__name__))
        return et is not None and issubclass(et, self.swallow)


def counted(t, k):
    for q in range(k):
        G_list.append(q)
        yield t + q


def pack(t, *rest, scale=1, **kw):
    return t * scale + len(rest) + sum(kw.values())


def noisy(v, k):
    print('noisy', k)
    return v


def stop(v):
    bytegraph.graph_break()
    return v


"""

#: Program families: ``base`` (the statements above), ``branch`` (branches, loops, asserts and
#: conversions on tensor data whose outcome changes from call to call, run with speculation on),
#: ``keys`` (dicts, sets and comparisons over values of every kind), ``closures`` (the base
#: statements, with helpers that make closures over their arguments at each call and call them,
#: breaking inside or not: each call's closure has cells of its own), ``python`` (Python's
#: semantics across breaks: objects made in the call stored in containers and mutated around a
#: break, iterators partly taken before one, try/with blocks around one, nonlocal and global writes
#: in nested functions, ``del`` and augmented stores, comprehensions, star-unpacking, varargs,
#: recursion and string formatting).
FAMILIES = ("base", "branch", "keys", "closures", "python")

#: Source of the values the ``keys`` family puts in dicts and sets and compares: constants, None,
#: floats (a NaN, -0.0 beside 0), complex, bytes, tuples, frozensets, ranges, classes, builtin
#: types, functions, builtin functions, modules, enum members, plain objects, objects with their
#: own ``__eq__``/``__hash__``, dtypes, devices, the type of an argument, and unhashable values.
KEY_EXPRS = (
    "None",
    "1",
    "1.0",
    "True",
    "2.5",
    "-0.0",
    "0",
    "NAN",
    "(1+2j)",
    "b'ab'",
    "'s'",
    "(1, 'a')",
    "T1",
    "(None, Plain)",
    "frozenset({1, 2})",
    "FS",
    "range(3)",
    "Plain",
    "Obj",
    "int",
    "type(None)",
    "add_one",
    "len",
    "math",
    "Color.RED",
    "Color.BLUE",
    "PLAIN",
    "PLAIN2",
    "Keyed(1)",
    "Keyed(2)",
    "torch.float32",
    "torch.int64",
    "torch.device('cpu')",
    "x.dtype",
    "type(x)",
    "type(n)",
    "[1]",
)


@dataclass
class Program:
    seed: int
    helpers: list[str]  #: module-level helper functions (source)
    body: list[str]  #: statements of ``f`` (each possibly several lines)
    family: str = "base"

    @property
    def source(self) -> str:
        body = textwrap.indent("\n".join(self.body) or "pass", " " * 8)
        helpers = "\n\n".join(self.helpers)
        prelude = PRELUDE + {"keys": KEYS_PRELUDE, "python": PYTHON_PRELUDE}.get(self.family, "")
        return (
            f"# family {self.family}\n{prelude}{helpers}\n\n\n"
            "def make():\n"
            "    cell = 0\n"
            "    tcell = torch.zeros(1)\n\n"
            "    def f(x, y, n, lst, d, obj):\n"
            "        global G_count, G_scale\n"
            "        nonlocal cell, tcell\n"
            "        a, b, c = x, y, x * 0\n"
            "        i, j = n, 0\n"
            f"{body}\n"
            "        return a, b, c, i, j\n\n"
            "    def cells():\n"
            "        return cell, tcell\n\n"
            "    return f, cells\n"
        )


@dataclass
class Outcome:
    ok: bool
    fallbacks: int = 0  #: calls whose compile fell back to eager (counted, allowed)
    internal: int = 0  #: fallbacks caused by an internal error of bytegraph
    message: str = ""
    breaks: int = 0  #: graph breaks over all calls (``break:*`` counters)
    crashed: bool = False  #: bytegraph raised (an internal error reached the caller or compile())
    speculation: tuple[int, int, int] = (0, 0, 0)  #: branches speculated on: (sites, hits, misses)

    @property
    def kind(self) -> str:
        """``wrong`` (differs from eager), ``crash`` (internal error), ``ok``."""
        if self.crashed:
            return "crash"
        if not self.ok:
            return "wrong"
        return "crash" if self.internal else "ok"


class Gen:
    """Random statement builder; ``depth`` bounds nesting."""

    def __init__(self, rng: random.Random, helpers: list[str], family: str = "base") -> None:
        self.rng = rng
        self.helpers = helpers
        self.family = family

    def pick(self, seq):
        return self.rng.choice(seq)

    def t(self) -> str:
        return self.pick(TENSORS)

    def n(self) -> str:
        return self.pick(INTS)

    def texpr(self, depth: int = 0) -> str:
        r = self.rng.random()
        if depth > 1 or r < 0.25:
            return self.pick([self.t(), "x", "y"])
        e = self.texpr(depth + 1)
        choices = [
            lambda: f"({e} + {self.texpr(depth + 1)})",
            lambda: f"({e} * {self.texpr(depth + 1)})",
            lambda: f"({e} - {self.iexpr()})",
            lambda: f"({e} * {self.rng.randint(-2, 3)})",
            lambda: f"torch.relu({e})",
            lambda: f"{e}.abs()",
            lambda: f"{e}.neg()",
            lambda: f"{e}.clamp(-4, 4)",
            lambda: f"torch.maximum({e}, {self.texpr(depth + 1)})",
            lambda: f"({e} + {e}.sum())",
            lambda: f"({e} * G_scale)",
            lambda: f"({e} + tcell)",
            lambda: f"({e} + obj.w)",
            lambda: f"({e} + obj.count)",
            lambda: f"torch.where({e} > 0, {e}, {self.texpr(depth + 1)})",
            lambda: f"({e} + len(lst))",
            lambda: f"({e} + d.get('k', x))",
            lambda: f"(torch.outer({e}, {self.texpr(depth + 1)}) @ {self.texpr(depth + 1)})",
            lambda: f"({e} + obj.p.sum())",
        ]
        if self.helpers:
            choices.append(lambda: f"h{self.rng.randrange(len(self.helpers))}({e}, {self.iexpr()})")
        return self.pick(choices)()

    def iexpr(self) -> str:
        return self.pick(
            [
                self.n(),
                "n",
                str(self.rng.randint(-3, 5)),
                f"({self.n()} + {self.rng.randint(1, 3)})",
                f"({self.n()} * 2)",
                f"({self.n()} // 2)",
                "len(lst)",
                "x.shape[0]",
                "x.size(0)",
                "cell",
                "obj.count",
                "G_count",
                f"({self.n()} - {self.n()})",
                "len(d)",
            ]
        )

    def cond(self) -> str:
        return self.pick(
            [
                f"{self.n()} > {self.rng.randint(0, 4)}",
                "len(lst) > 1",
                "x.shape[0] > 4",
                f"{self.n()} % 2 == 0",
                "cell > 2",
                "'k' in d",
                "obj.count > 1",
                "G_count > 3",
                f"{self.t()} is not None",
            ]
        )

    def tcond(self) -> str:
        return self.pick(
            [
                f"{self.t()}.sum() > 0",
                f"({self.t()} > 1).any()",
                f"{self.t()}.max() > 2",
                f"bool({self.t()}.mean() < 0)",
            ]
        )

    def block(self, depth: int, size: int) -> str:
        stmts = [self.stmt(depth + 1) for _ in range(max(1, size))]
        return textwrap.indent("\n".join(stmts), "    ")

    def stmt(self, depth: int = 0) -> str:
        kinds = [
            (6, self.assign_tensor),
            (3, self.assign_int),
            (2, self.mutate_list),
            (2, self.mutate_dict),
            (2, self.mutate_obj),
            (2, self.mutate_global),
            (2, self.mutate_cell),
            (1, self.print_),
            (1, self.breaker),
            (1, self.raise_),
            (1, self.lazy_consumer),
            (1, self.itertools_source_changed),
            (1, self.dict_subclass),
            (1, self.module_hooks),
            (3, self.in_place),
        ]
        if depth < 2:
            kinds += [
                (2, self.if_const),
                (1, self.if_tensor),
                (2, self.for_range),
                (1, self.for_list),
                (1, self.try_),
                (3, self.with_context),
                (1, self.inner_fn),
                (1, self.make_object),
                (1, self.optimizer_step),
                (1, self.factory),
                (1, self.match_),
                (1, self.device_rng),
            ]
        if self.family == "branch":
            kinds += [(5, self.data_check), (3, self.random_draw)]
            if depth < 2:
                kinds += [(14, self.data_branch)]
        if self.family == "keys":
            kinds += [(6, self.keyed_dict), (3, self.keyed_set), (3, self.compare_values)]
        if self.family == "python":
            kinds += [
                (8, self.new_objects),
                (8, self.partly_taken),
                (4, self.augmented_and_del),
                (4, self.nested_scopes),
                (4, self.comprehension),
                (4, self.star_unpacking),
                (4, self.formatting),
                (3, self.recursion),
            ]
            if depth < 2:
                kinds += [(6, self.exception_blocks)]
        total = sum(w for w, _ in kinds)
        r = self.rng.uniform(0, total)
        for w, fn in kinds:
            r -= w
            if r <= 0:
                return fn(depth)
        return kinds[-1][1](depth)

    def assign_tensor(self, depth: int) -> str:
        return f"{self.t()} = {self.texpr()}"

    def in_place(self, depth: int) -> str:
        """An in-place update of an input tensor (``x``, ``y``, a list item, the dict's value, or
        a variable that may alias one), through a view of it, or as an ``out=`` argument: the
        caller sees the change."""
        target = self.pick(["x", "y", "x", "y", self.t(), "lst[0]", "d['k']"])
        guard = {"lst[0]": "if lst:\n    ", "d['k']": "if 'k' in d:\n    "}.get(target, "")
        e, k = self.texpr(), self.rng.randint(-2, 3)
        update = self.pick(
            [
                f"{target}.add_({e})",
                f"{target}.mul_({k})",
                f"{target}.clamp_(-3, 3)",
                f"{target}.sub_({self.iexpr()})",
                f"{target}[0] = {self.iexpr()}",
                f"{target}[1:] += {e}[1:]",
                f"{target}[:2].mul_({k})",
                f"{target}.view(-1)[-1:].add_({self.t()}.sum())",
                f"{target}.copy_({e})",
                f"torch.add({self.t()}, {e}, out={target})",
                f"torch.mul({e}, {k}, out={target})",
                f"torch.relu_({target})",
            ]
        )
        indent = "    " if guard else ""
        text = guard + update
        if self.rng.random() < 0.3:  # a view of the input kept in a variable, updated later
            view = self.pick([f"{target}[1:]", f"{target}.view(-1)", f"{target}.unsqueeze(0)"])
            body = f"v = {view}\n{self.t()} = v * 2\nv.mul_({k})"
            text = guard + body.replace("\n", "\n" + indent)
        return text

    def assign_int(self, depth: int) -> str:
        return self.pick(
            [
                f"{self.n()} = {self.iexpr()}",
                f"{self.n()} += {self.iexpr()}",
                f"{self.n()} = max({self.iexpr()}, {self.iexpr()})",
                f"{self.n()} = obj.bump({self.rng.randint(1, 3)})",
            ]
        )

    def mutate_list(self, depth: int) -> str:
        return self.pick(
            [
                f"lst.append({self.texpr()})",
                f"if lst:\n    {self.t()} = lst.pop()",
                f"if lst:\n    lst[0] = {self.texpr()}",
                "lst.reverse()",
                f"lst.extend([{self.t()}, {self.t()}])",
                f"{self.t()} = lst[-1] if lst else x",
                "del lst[:1]",
                f"lst.insert(0, {self.t()})",
            ]
        )

    def mutate_dict(self, depth: int) -> str:
        return self.pick(
            [
                f"d['k'] = {self.texpr()}",
                f"d['m'] = {self.iexpr()}",
                "d.pop('k', None)",
                f"{self.t()} = d.get('k', {self.t()})",
                f"d.update(z={self.t()})",
                f"for key in list(d):\n    {self.n()} += len(key)",
            ]
        )

    def mutate_obj(self, depth: int) -> str:
        return self.pick(
            [
                f"obj.w = {self.texpr()}",
                f"obj.count = obj.count + {self.iexpr()}",
                f"obj.extra = {self.n()}",
                f"{self.t()} = obj.w * obj.count",
            ]
        )

    def mutate_global(self, depth: int) -> str:
        return self.pick(
            [
                f"G_count = G_count + {self.iexpr()}",
                f"G_list.append({self.n()})",
                f"G_scale = {self.rng.randint(1, 3)}",
                f"{self.n()} = len(G_list)",
            ]
        )

    def mutate_cell(self, depth: int) -> str:
        return self.pick(
            [
                f"cell = cell + {self.iexpr()}",
                f"tcell = {self.texpr()}.sum().reshape(1)",
                f"{self.n()} = cell",
            ]
        )

    def print_(self, depth: int) -> str:
        return self.pick(
            [
                f"print('p', {self.n()}, tuple({self.t()}.shape))",
                f"print({self.t()})",
                f"print(f'n={{n}} {{{self.n()}}}')",
            ]
        )

    def breaker(self, depth: int) -> str:
        return self.pick(
            [
                "bytegraph.graph_break()",
                f"{self.n()} = int({self.t()}.sum().item())",
                f"{self.n()} = len({self.t()}.tolist())",
                f"{self.n()} = {self.t()}.numel()",
            ]
        )

    def raise_(self, depth: int) -> str:
        k = self.rng.randint(0, 6)
        return self.pick(
            [
                f"if {self.n()} == {k}:\n    raise ValueError(f'bad {{{self.n()}}}')",
                f"{self.n()} = {self.rng.randint(1, 9)} // ({self.n()} - {k})",
                f"{self.t()} = lst[{k}] if {self.n()} > {k} else {self.t()}",
                f"{self.n()} = d['m'] if 'm' in d else {self.n()}",
            ]
        )

    def if_const(self, depth: int) -> str:
        text = f"if {self.cond()}:\n{self.block(depth, self.rng.randint(1, 3))}"
        if self.rng.random() < 0.5:
            text += f"\nelse:\n{self.block(depth, self.rng.randint(1, 2))}"
        return text

    def if_tensor(self, depth: int) -> str:
        text = f"if {self.tcond()}:\n{self.block(depth, self.rng.randint(1, 2))}"
        if self.rng.random() < 0.5:
            text += f"\nelse:\n{self.block(depth, 1)}"
        return text

    def for_range(self, depth: int) -> str:
        bound = self.pick([str(self.rng.randint(0, 3)), f"{self.n()} % 3", "len(lst)"])
        return f"for k in range({bound}):\n    {self.t()} = {self.t()} + k\n{self.block(depth, 1)}"

    def for_list(self, depth: int) -> str:
        return f"for item in list(lst):\n    {self.t()} = {self.t()} + item\n{self.block(depth, 1)}"

    def try_(self, depth: int) -> str:
        exc = self.pick(["ValueError", "ZeroDivisionError", "IndexError", "Exception"])
        return (
            f"try:\n{self.block(depth, self.rng.randint(1, 2))}\n"
            f"except {exc} as e:\n    {self.n()} = len(str(e))"
        )

    def with_context(self, depth: int) -> str:
        """A ``with`` block on a torch state context manager, or on a user generator."""
        ctx = self.pick(
            [
                "torch.no_grad()",
                "torch.enable_grad()",
                f"torch.set_grad_enabled({self.pick(['False', 'True', f'{self.n()} > 2'])})",
                f"torch.autocast('cpu', dtype=torch.{self.pick(['bfloat16', 'float16'])})",
                "torch.autocast('cpu', enabled=False)",
                "torch.autocast('cpu', dtype=torch.float16, enabled=False)",
                "torch.inference_mode()",
                "contextlib.nullcontext()",
                "nested",
                "scoped",
            ]
        )
        if ctx == "nested":
            body = textwrap.indent(self.block(depth + 1, 1), "    ")
            return f"with torch.no_grad():\n    with torch.enable_grad():\n{body}"
        if ctx == "scoped":
            n = self.n()
            k = self.rng.randint(1, 4)
            return f"with scoped({k}) as v:\n    {n} = {n} + v\n{self.block(depth, 1)}"
        return f"with {ctx}:\n{self.block(depth, self.rng.randint(1, 2))}"

    def make_object(self, depth: int) -> str:
        t, k = self.t(), self.rng.randint(1, 3)
        return self.pick(
            [
                f"acc = Acc({t})\nacc.add({self.texpr()}).add({t})\n{t} = acc.total * acc.steps",
                f"pt = Pt({self.texpr()}, {k})\n{t} = pt.scaled() + pt.k",
                f"pt = Pt({t})\nobj.extra = pt",
                f"obj.extra = Acc({self.n()})",
            ]
        )

    def optimizer_step(self, depth: int) -> str:
        return self.pick(
            [
                f"obj.p.grad = {self.t()}.sum() * torch.ones(2)\nobj.opt.step()",
                "obj.opt.zero_grad()",
                f"{self.t()} = {self.t()} * obj.opt.param_groups[0]['lr']",
            ]
        )

    def factory(self, depth: int) -> str:
        """A class made by a factory in the call (``collections.namedtuple``) and used."""
        t, n = self.t(), self.n()
        return self.pick(
            [
                f"P = collections.namedtuple('P', ['u', 'v'])\np = P({self.texpr()}, {n})\n"
                f"{t} = p.u * p.v + P._make([{t}, 1]).u",
                f"P = collections.namedtuple('P', 'u v', defaults=[{self.rng.randint(0, 3)}])\n"
                f"p = P({t})._replace(u={self.texpr()})\n{t} = p.u + p.v\n{n} = len(p._fields)",
                f"P = collections.namedtuple('P', ['u', 'v'])\nu, v = P({t}, {n})\n"
                f"{n} = v + len(P._fields)",
            ]
        )

    def match_(self, depth: int) -> str:
        """Structural pattern matching on the list, the dict, an int or the object."""
        t, n = self.t(), self.n()
        return self.pick(
            [
                f"match lst:\n    case []:\n        {n} = 0\n"
                f"    case [first]:\n        {t} = {t} + first\n"
                f"    case [first, *rest]:\n        {t} = {t} * first\n        {n} = len(rest)",
                f"match d:\n    case {{'k': kv, **others}}:\n        {t} = {t} + kv\n"
                f"        {n} = len(others)\n    case {{}}:\n        {n} = {n} + 1",
                f"match {n}:\n    case 0 | 1:\n        {t} = {t} + 1\n"
                f"    case int(v) if v > 3:\n        {t} = {t} * v\n    case _:\n        pass",
                f"match obj:\n    case Obj(count=cnt) if cnt > 1:\n        {n} = cnt\n"
                f"    case Obj(w=w):\n        {t} = {t} + w",
                f"match ({t}, {n}):\n    case (tt, 2):\n        {t} = tt * 2\n"
                f"    case (tt, k):\n        {n} = k + 1",
            ]
        )

    def device_rng(self, depth: int) -> str:
        """Random numbers drawn inside and after a ``torch.device`` block."""
        t, n = self.t(), self.n()
        return self.pick(
            [
                f"with torch.device('meta'):\n    m = torch.randn(3)\n"
                f"{n} = int(m.is_meta) + {n}\n{t} = {t} + torch.rand({t}.shape)",
                f"with torch.device('cpu'):\n    {t} = {t} + torch.randn({t}.shape)",
                f"with torch.device('meta'):\n    m = torch.empty(2).normal_()\n"
                f"{n} = m.device.type == 'meta'\n{t} = {t} * torch.randint(0, 3, {t}.shape)",
            ]
        )

    def lazy_consumer(self, depth: int) -> str:
        """A container filled from an iterator whose function reads or changes it."""
        t, n = self.t(), self.n()
        return self.pick(
            [
                f"lst.extend(map(lambda v: v + len(lst), [{t}, {t}]))",
                f"dq = collections.deque([{n}])\n"
                f"dq.extendleft(map(lambda v: v + len(dq), range(3)))\n{n} = sum(dq) + dq[0]",
                "d.update((f'u{q}', len(d)) for q in range(2))",
                f"lst[:1] = [{t} + len(lst) for _ in range(2)]",
                f"s = {{1}}\ns.update(v + len(s) for v in range(3))\n{n} = sum(s)",
            ]
        )

    def itertools_source_changed(self, depth: int) -> str:
        """An ``itertools`` object whose source changes (or a break comes) before its items are
        taken: what the C function read when called decides its items."""
        t, n = self.t(), self.n()
        make = self.pick(
            [
                "itertools.product(lst[:2], repeat=2)",
                "itertools.permutations(lst[:3], 2)",
                "itertools.combinations(lst, 2)",
                "itertools.combinations_with_replacement(lst[:3], 2)",
                "itertools.islice(lst, 1, None)",
                "itertools.pairwise(lst)",
                "itertools.zip_longest(lst, d, fillvalue=0)",
                "itertools.accumulate(lst)",
            ]
        )
        between = self.pick([f"lst.append({t})", "lst.clear()", "print('mid')", "lst.pop()"])
        if between == "lst.pop()":
            between = "if lst:\n    lst.pop()"
        return f"it = {make}\n{between}\n{n} = len(list(it))"

    def dict_subclass(self, depth: int) -> str:
        """Config objects: dict subclasses read through attributes."""
        t, n = self.t(), self.n()
        return self.pick(
            [
                f"cfg = AttrDict(scale={n}, t={t})\n{t} = cfg.t * cfg.scale",
                f"cfg = AttrDict()\ncfg.k = {self.texpr()}\n{t} = cfg.k + len(cfg)",
                f"cfg = Cfg(a={n}, b=2)\n{n} = cfg.a + cfg.b + len(cfg)",
                f"cfg = Cfg.fromkeys(['p', 'q'], {n})\n{n} = cfg.p + sum(cfg.values())",
            ]
        )

    def module_hooks(self, depth: int) -> str:
        """Forward hooks registered and removed in the function, module calls around them, hook
        tables read after a removal, handles kept past the call (removed by a later call)."""
        t, n = self.t(), self.n()
        return self.pick(
            [
                f"h = MOD.register_forward_hook(add_one)\n{t} = MOD({t})\nh.remove()",
                f"h = MOD.register_forward_pre_hook(double_input)\n{t} = MOD({t})\n"
                f"h.remove()\n{t} = MOD({t}) + len(MOD._forward_pre_hooks)",
                f"with MOD.register_forward_hook(add_one):\n    {t} = MOD({t})\n{t} = MOD({t})",
                f"hooks = MOD._forward_hooks\nh = MOD.register_forward_hook(add_one)\n"
                f"{t} = MOD({t})\nh.remove()\n{n} = len(hooks) + {n}",
                "for h in HANDLES:\n    h.remove()\n"
                f"HANDLES[:] = [MOD.register_forward_hook(add_one)]\n{t} = MOD({t})",
                f"{t} = MOD({t})\n{n} = {n} + len(MOD._forward_hooks)",
            ]
        )

    # -- the ``branch`` family: control flow on tensor data ---------------------------------------

    def data_cond(self) -> str:
        """A condition on tensor data (its outcome changes with the call's inputs)."""
        t, u = self.t(), self.pick([*TENSORS, "x", "y"])
        k = self.rng.randint(-2, 2)
        return self.pick(
            [
                self.tcond(),
                f"{t}.sum() > {k}",
                f"{t}[0] > {u}[0]",
                f"{t}.sum() == {u}.sum()",
                f"{t}.mean() < {self.iexpr()}",
                f"({t} > {u}).all()",
                f"({t} != 0).any()",
                f"{t}.abs().max() >= 3",
                f"{t}.sum().item() > {k}",
                f"{t}[-1].item() == {k}",
                f"{t}.max().item() < {self.n()}",
                f"torch._is_all_true({t} > {k})",
                f"torch._is_any_true({t} < {k})",
                f"bool({t}.min() < {t}.max())",
                f"bool(({t} > {k}).any())",
                f"{t}.sum() > 0 and {self.n()} > {k}",
                f"{t}.sum() > 0 or {u}.sum() < 0",
                f"not ({t} > 0).any()",
                "torch.rand(1) > 0.5",
                f"({t} * obj.p.sum()).sum() > 0",
            ]
        )

    def data_branch(self, depth: int) -> str:
        """``if``/``while``/``for ... break``/early return on tensor data, with any statements
        inside (in-place updates, list and dict effects, random draws)."""
        t, n, cond = self.t(), self.n(), self.data_cond()
        r = f"r{depth}"  # a loop counter of its own: a nested loop must not reset it
        kind = self.rng.randrange(6)
        if kind == 0:
            text = f"if {cond}:\n{self.block(depth, self.rng.randint(1, 3))}"
            if self.rng.random() < 0.6:
                text += f"\nelif {self.data_cond()}:\n{self.block(depth, 1)}"
            if self.rng.random() < 0.6:
                text += f"\nelse:\n{self.block(depth, self.rng.randint(1, 2))}"
            return text
        if kind == 1:
            bound = self.rng.randint(1, 5)
            step = self.rng.randint(1, 2)
            return (
                f"{r} = 0\nwhile ({cond}) and {r} < {bound}:\n    {r} += 1\n"
                f"    {t} = {t} - {step}\n{self.block(depth, 1)}"
            )
        if kind == 2:
            return (
                f"mk = {t} > 0\n{r} = 0\nwhile mk.any() and {r} < 6:\n"
                f"    {t} = torch.where(mk, {t} - 1, {t})\n    mk = {t} > 0\n    {r} += 1\n"
                f"{self.block(depth, 1)}"
            )
        if kind == 3:
            return (
                f"for {r} in range({self.rng.randint(1, 4)}):\n    if {cond}:\n        break\n"
                f"    {t} = {t} + 1\n{self.block(depth, 1)}"
            )
        if kind == 4:
            return f"if {cond}:\n    return a, b, c, i, j\n{self.block(depth, 1)}"
        return f"{n} = {n} + (1 if {cond} else -1)\n{self.t()} = {self.t()} * {n}"

    def data_check(self, depth: int) -> str:
        """``assert``, ``bool()``, ``int()`` and ``.item()`` comparisons on tensor data."""
        t, n, cond = self.t(), self.n(), self.data_cond()
        return self.pick(
            [
                f"assert {cond}, f'check {{{n}}}'",
                f"try:\n    assert {cond}\nexcept AssertionError:\n    {n} = {n} + 1",
                f"{n} = int({t}.sum() > 0)",
                f"{n} = {n} + bool({cond})",
                f"{n} = int({t}.abs().sum().item() > {self.rng.randint(0, 8)})",
                f"ok = {cond}\nif ok:\n    {t} = {t} + 1",
            ]
        )

    def random_draw(self, depth: int) -> str:
        t = self.t()
        return self.pick(
            [
                f"{t} = {t} + torch.randn({t}.shape)",
                f"{t} = {t} * torch.rand(1)",
                f"{t} = {t} + torch.randint(-2, 3, {t}.shape)",
                f"{t} = torch.bernoulli(torch.full_like({t}, 0.5)) * {t}",
                f"{t} = {t}.clone().uniform_(-2, 2)",
            ]
        )

    # -- the ``keys`` family: values of every kind in dicts, sets and comparisons ------------------

    def key(self) -> str:
        return self.pick(KEY_EXPRS)

    def keyed_dict(self, depth: int) -> str:
        """A dict keyed by values of any kind (built here, a global registry, or the input ``d``)
        and one of dict's operations on it."""
        k1, k2, k3, t, n = self.key(), self.key(), self.key(), self.t(), self.n()
        make = f"k1 = {k1}\nkd = {{k1: 1, {k2}: {n}}}\n"
        use = self.pick(
            [
                f"{n} = kd.get({k3}, {n})",
                f"{n} = kd.get(k1) + 1",
                f"{t} = {t} + kd[{k3}]",
                f"{n} = int({k3} in kd) + int(k1 in kd)",
                f"{n} = len(kd | {{{k3}: 0}})",
                f"{n} = kd.setdefault({k3}, {n})",
                f"{n} = kd.pop({k3}, -1) + len(kd)",
                f"kd.update({{{k3}: {n}}})\n{n} = sum(kd.values())",
                f"{n} = len(dict.fromkeys([k1, {k2}, {k3}]))",
                f"dd = collections.defaultdict(int)\ndd[k1] += 1\ndd[{k3}] += {n}\n"
                f"{n} = dd[k1] + len(dd)",
                f"od = collections.OrderedDict(kd)\nod.move_to_end(k1)\n{n} = list(od.values())[0]",
                f"cn = collections.Counter([k1, {k2}, k1])\n{n} = cn[k1] + cn[{k3}]",
                f"for kk in reversed(kd):\n    {n} = {n} + kd[kk]",
                f"for kk, kv in kd.items():\n    {n} = {n} + kv * (kk == {k3})",
                f"{n} = int(list(kd)[0] is k1) + len(list(kd.keys()))",
                f"{n} = len(dict(kd)) + int(dict(kd) == kd)",
                f"{n} = G_reg.get(type({k3}), 0)",
                f"G_reg[type({k3})] = {n}\n"
                f"{t} = {t} * G_reg[type(k1)] if type(k1) in G_reg else {t}",
                f"{n} = G_reg.get(type(x), -1) + G_reg.get(type({n}), -1)",
                f"d[k1] = {n}\n{n} = len(d)",
                f"d[{k3}] = {t}\n{t} = d.get(k1, {t})",
                f"{n} = operator.getitem(kd, k1)",
            ]
        )
        return make + use

    def keyed_set(self, depth: int) -> str:
        k1, k2, k3, n = self.key(), self.key(), self.key(), self.n()
        make = f"k1 = {k1}\ns = {{k1, {k2}}}\n"
        use = self.pick(
            [
                f"{n} = int({k3} in s) + int(k1 in s)",
                f"s.add({k3})\n{n} = len(s)",
                f"{n} = len(s | {{{k3}}})",
                f"{n} = len(frozenset(s)) + int(frozenset(s) == s)",
                f"s.discard(k1)\n{n} = len(s)",
                f"{n} = int(s == {{{k2}, k1}})",
                f"{n} = int(G_set == {{{k3}}}) + int({k3} in G_set)",
                f"{n} = len(s & G_set) + int(s <= G_set)",
                f"s.remove({k3})\n{n} = len(s)",
                f"{n} = len(s - {{{k3}}}) + len(s ^ {{{k3}}})",
            ]
        )
        return make + use

    def compare_values(self, depth: int) -> str:
        k1, k2, n, t = self.key(), self.key(), self.n(), self.t()
        return self.pick(
            [
                f"{n} = int({k1} == {k2}) + 2 * int({k1} != {k2})",
                f"k1 = {k1}\n{n} = int([k1] == [k1]) + int((k1, {k2}) == (k1, {k2}))",
                f"k1 = {k1}\n{n} = int(k1 is {k2}) + int(k1 is k1)",
                f"{n} = int([{k1}] == [{k2}]) + int({{'q': {k1}}} == {{'q': {k2}}})",
                f"try:\n    {n} = int({k1} < {k2})\nexcept TypeError as e:\n    {n} = len(str(e))",
                f"{n} = int(sorted([T1, T1], key=str)[0] is T1)"
                f" + int(list(enumerate([T1]))[0][1] is T1)",
                f"{n} = int(hash({k1}) == hash({k1}))",
                f'print(repr({k1}), f"{{{k2}!r}}")',
                f"k1 = {k1}\n{n} = int(id(k1) == id({k2}))",
                f"{n} = [{k1}, {k2}].count({k1}) + int({k2} in ({k1}, {t}.shape))",
                f"{n} = int(isinstance({k1}, type)) + int(callable({k2}))",
                f"{t} = {t} * ({k1} == {k2}) + {n}",
            ]
        )

    # -- the ``python`` family: Python's semantics across breaks ----------------------------------

    def brk(self) -> str:
        """A statement that breaks the graph (or, one time in five, does nothing)."""
        return self.pick(
            [
                "bytegraph.graph_break()",
                "bytegraph.graph_break()",
                f"print('at', {self.n()})",
                f"{self.n()} = int({self.t()}.sum().item())",
                "pass",
            ]
        )

    def new_objects(self, depth: int) -> str:
        """Objects made in the call (properties, ``__slots__``, ``__eq__``/``__hash__``,
        dataclasses) kept in lists, dicts, sets and attributes, changed before and after a break."""
        t, u, n, b = self.t(), self.t(), self.n(), self.brk()
        return self.pick(
            [
                f"bs = [Box({self.texpr()}, 'p'), Box({u})]\nbs[0].v = bs[0].v + {n}\n"
                f"bs[1].hist.append({n})\n{b}\nbs[0].v += bs[1].v\nbs[1].hist += [len(bs)]\n"
                f"{t} = bs[0].double + bs[1].v\nobj.extra = bs",
                f"reg = {{'a': Box({t}), 'b': Box({n}, 'q')}}\nreg['a'].label = 'L{n}'\n{b}\n"
                f"reg['b'].v *= 3\n{n} = reg['b'].v + len(reg['a'].hist)\ndel reg['a']\n"
                "G_list.append((len(reg), reg['b'].label))",
                f"ss = {{Slot({t}, 1), Slot({u}, 2), Slot(x, 1)}}\n{b}\n"
                f"ss.add(Slot(y, {n} % 3))\n{n} = len(ss) + sum(s.k for s in ss)",
                f"sl = Slot({t}, {n})\n{b}\nsl.k += 1\nsl.u = sl.u * sl.k\n{t} = sl.u\n"
                "obj.extra = sl",
                f"rc = Rec('r', {n})\nrc.items.append({t})\nrc.n += 2\n{b}\n"
                f"rc.items[0] = rc.items[0] + 1\nrc.items.extend([{n}, {u}])\ndel rc.items[1]\n"
                f"{t} = rc.items[0] * rc.n\nobj.extra = rc",
                f"kd = {{Key(1): {t}, Key(1, 'y'): {u}, Key({n}): x}}\n{b}\n"
                f"kd[Key(1)] = kd[Key(1)] + 1\n{t} = kd[Key(1)] + kd.get(Key({n}, 'x'), y)\n"
                f"{n} = len(kd) + int(Key(1) == Key(1)) + int(Key(2) in kd)",
                f"rc = Rec('q')\nrc2 = dataclasses.replace(rc, n={n})\n{b}\n"
                f"{n} = rc2.n + int(rc == rc2) + len(dataclasses.asdict(rc2))\n"
                "G_list.append(repr(rc2))",
                f"obj.extra = Box({t})\n{b}\nobj.extra.v = obj.extra.v * 2\n"
                f"obj.extra.hist.append({n})\n{t} = obj.extra.double",
                f"bx = Box({n})\nbx.hist.append(bx.v)\n{b}\ndel bx.tag\n"
                f"{n} = int(hasattr(bx, 'tag')) + len(vars(bx))\nG_list.append(sorted(vars(bx)))",
                f"pair = [Box({t}), Box({u})]\nalias = pair[0]\n{b}\nalias.v = alias.v + 1\n"
                f"pair.reverse()\n{t} = pair[1].v\n{n} = int(pair[1] is alias)",
            ]
        )

    def partly_taken(self, depth: int) -> str:
        """An iterator (over the list, the dict and its views, a generator, CPython's
        combinators nested two or three deep) partly taken, a break, the rest taken."""
        t, n = self.t(), self.n()
        make = self.pick(
            [
                "iter(lst)",
                "map(lambda v: v * 2, lst)",
                "zip(lst, range(5))",
                "filter(lambda v: v.sum() > 0, lst)",
                "enumerate(lst, 1)",
                "reversed(lst)",
                "iter(d.items())",
                "iter(d.values())",
                "iter(d)",
                f"counted({t}, 3)",
                "(v + 1 for v in lst)",
                "zip(map(abs, lst), enumerate(reversed(lst)))",
                "enumerate(zip(lst, itertools.count()))",
                "map(operator.add, lst, reversed(lst))",
                f"filter(None, map(len, [lst, d, [{n}]]))",
                "iter([*lst, *d])",
                "gen_walk(lst, 2)",
                "zip(*[lst, lst[1:]])",
            ]
        )
        before = self.pick(
            ["first = next(it, None)", "first = next(it, None)\nfirst = next(it, first)", ""]
        )
        between = self.pick(
            [
                self.brk(),
                f"lst.append({t})\n{self.brk()}",
                f"d['m'] = {n}\n{self.brk()}",
                f"{self.brk()}\nif lst:\n    lst.pop()",
            ]
        )
        after = self.pick(
            [
                f"{n} = len(list(it))",
                f"for q in it:\n    {n} += 1\n    {self.brk()}",
                f"{n} = sum(1 for _ in it)",
                "G_list.append([type(v).__name__ for v in it])",
                f"{n} = {n} + len(tuple(it))\n{n} = {n} + len(list(it))",
            ]
        )
        views = self.pick(
            [
                "",
                f"ks, vs = d.keys(), d.values()\nd['m'] = {n}\n{self.brk()}\n"
                f"{n} = len(ks) + len(list(vs))\nG_list.append(sorted(ks))",
                f"for q, (v, w) in enumerate(zip(lst, reversed(lst))):\n"
                f"    {t} = {t} + v * q - w\n    {self.brk()}",
            ]
        )
        text = "\n".join(p for p in (f"it = {make}", before, between, after) if p)
        return text + ("\n" + views if views else "")

    def exception_blocks(self, depth: int) -> str:
        """try/except/else/finally and with-blocks (a context manager class of its own, a
        generator one) around breaks, raising or not depending on the call's ints."""
        t, n, k = self.t(), self.n(), self.rng.randint(2, 3)
        exc = self.pick(["KeyError", "ValueError", "ZeroDivisionError"])
        return self.pick(
            [
                f"try:\n    {n} = {n} + 1\n    {self.brk()}\n    if {n} % {k} == 0:\n"
                f"        raise {exc}({n})\n    {t} = {t} + 1\nexcept {exc} as e:\n"
                f"    G_list.append(str(e))\n    {self.brk()}\nelse:\n    G_list.append('else')\n"
                f"finally:\n    G_count += 1\n    {self.brk()}",
                f"with Log({n}, ({exc},)) as lg:\n    {self.brk()}\n    lg.k += 1\n"
                f"    if {n} % {k} == 1:\n        raise {exc}('in')\n    {t} = {t} * lg.k\n"
                f"{n} = lg.k",
                f"try:\n    with Log({k}) as lg:\n        {self.brk()}\n"
                f"        {n} = {n} // ({n} % {k})\nexcept ZeroDivisionError:\n"
                f"    {t} = {t} - 1\n    G_list.append(lg.k)",
                f"for q in range({n} % 4):\n    try:\n        if q == 1:\n            continue\n"
                f"        {self.brk()}\n        if q == 2:\n            break\n"
                f"        {t} = {t} + q\n    finally:\n        G_list.append(q)",
                f"with scoped({k}) as v, Log(v):\n    {self.brk()}\n    {n} = {n} + v\n"
                f"{self.block(depth + 1, 1)}",
                f"try:\n{self.block(depth, 1)}\n    {self.brk()}\n    raise {exc}('x')\n"
                f"except ({exc}, IndexError) as e:\n    {n} = len(e.args) + {n}\n"
                f"    try:\n        {self.brk()}\n        d['missing']\n    except KeyError:\n"
                f"        {n} += 1",
            ]
        )

    def augmented_and_del(self, depth: int) -> str:
        """Augmented assignments and ``del`` on attributes, subscripts and items of the inputs,
        before and after a break."""
        t, n, b = self.t(), self.n(), self.brk()
        return self.pick(
            [
                f"d['m'] = {n}\nd['m'] += 1\n{b}\nd['m'] *= 2\n{n} = d.pop('m')",
                f"if lst:\n    lst[0] += {t}\n{b}\nif lst:\n    lst[-1] = lst[-1] * 2\n"
                "    del lst[-1]",
                f"obj.count += {n}\n{b}\nobj.count -= 1\n{n} = obj.count",
                f"obj.w += 1\n{b}\nobj.w *= 2\n{t} = obj.w",
                f"obj.tags = [{n}]\nobj.tags += [{n} + 1]\n{b}\nobj.tags[0] += 5\n"
                f"del obj.tags[-1]\n{n} = obj.tags[0]",
                f"x[0] += {n}\n{b}\ny[1:] -= x[:-1]",
                f"obj.extra = {n}\n{b}\ndel obj.extra\n{n} = int(hasattr(obj, 'extra'))",
                f"cnt = {{}}\nfor q in range({n} % 4):\n    cnt[q % 2] = cnt.get(q % 2, 0) + 1\n"
                f"    {b}\n{n} = sum(cnt.values()) * 10 + len(cnt)",
            ]
        )

    def nested_scopes(self, depth: int) -> str:
        """nonlocal and global writes in functions made in the call, which break inside."""
        n, b = self.n(), self.brk()
        return self.pick(
            [
                f"def tally(k):\n    nonlocal cell\n    cell += k\n    {b}\n    return cell\n"
                f"{n} = tally({n} % 3) + tally(1)",
                f"def gbump(k):\n    global G_count, G_text\n    G_count += k\n    {b}\n"
                f"    G_text += f'{{k}};'\n    return G_count\n{n} = gbump({n} % 4)",
                f"tot = 0\ndef add(v):\n    nonlocal tot\n    tot += v\n    {b}\n    return tot\n"
                f"for q in range({n} % 4):\n    add(q)\n{n} = tot + add(1)",
                "fs = [lambda q=q: q * 2 for q in range(3)]\n"
                f"late = [lambda: q for q in range(3)]\n{b}\n"
                f"{n} = sum(g() for g in fs) + late[0]()",
                f"def outer(k):\n    acc = []\n    def push(v):\n        acc.append(v)\n"
                f"        {b}\n        return len(acc)\n    push(k)\n    return push(k + 1), acc\n"
                f"{n}, got = outer({n})\nG_list.append(got)",
            ]
        )

    def comprehension(self, depth: int) -> str:
        """List, dict, set and generator comprehensions that break inside."""
        t, n = self.t(), self.n()
        return self.pick(
            [
                f"{t} = sum([stop(v) * q for q, v in enumerate(lst)], {t})",
                f"{n} = len({{f'k{{q}}': noisy(q, q) for q in range({n} % 4)}})",
                "G_list.append(sorted({noisy(q % 2, q) for q in range(3)}))",
                f"{t} = torch.stack([{t} * q for q in range(2)] + [stop({t})]).sum(0)",
                "[lst.append(v * 2) for v in list(lst)]",
                f"{n} = sum(q for q in range({n} % 4) if stop(q) % 2 == 0)",
                f"{n} = len([[q * w for w in range(2) if stop(w) >= 0] for q in range({n} % 3)])",
                f"{t} = {t} + sum((noisy(v, 0) for v in lst), {t} * 0)",
            ]
        )

    def star_unpacking(self, depth: int) -> str:
        """Star targets, starred calls and displays, keyword-only and ``**kw`` helpers."""
        t, n, b = self.t(), self.n(), self.brk()
        return self.pick(
            [
                f"first, *mid, last = [x, y, *lst]\n{b}\n{t} = first + last\n{n} = len(mid)",
                f"*init, tail = range({n} % 4 + 1)\n{b}\n{n} = tail + len(init)",
                f"{t} = pack({t}, *lst, scale={n}, **{{'p': 1}})",
                f"args = (x, *lst)\nkw = dict(scale=2, **{{q: 1 for q in ('u', 'v')}})\n{b}\n"
                f"{t} = pack(*args, **kw)",
                f"(p, q), *r = [({n}, i), (j, 1), 3]\n{b}\n{n} = p + q + len(r)",
                f"merged = {{**d, 'z': {n}}}\n{b}\n{n} = len(merged) + len([*merged, *lst])",
                f"def kw(*, k=1, **more):\n    {b}\n    return k + len(more)\n"
                f"{n} = kw(k={n}, **{{'extra': 1}}) + kw()",
            ]
        )

    def formatting(self, depth: int) -> str:
        """f-strings, ``%`` and ``str.format`` of ints, tensors' shapes and dtypes, objects,
        containers and tensors, kept in ``G_list`` or printed."""
        t, n = self.t(), self.n()
        return self.pick(
            [
                f"G_list.append(f'{{{n}!r:>4}}|{{obj.count:03d}}|{{len(lst)}}|{{x.shape}}|"
                "{x.dtype}')",
                f"G_list.append('%s-%d-%r' % (tuple({t}.shape), {n}, 'q'))",
                f"G_list.append('{{0}}:{{1!r}}:{{k}}'.format({n}, 'q', k=len(d)))",
                f"print(f'{{{t}.sum().item():.2f}}')",
                f"G_list.append(f'{{Box({n})!r}} {{Key({n})}} {{Rec(\"z\", {n})}}')",
                f"G_list.append(str([{n}, ({n},), {{'n': {n}}}, None, 1.5, True]))",
                f"G_list.append(format({n}, '08b') + format({n} / 3, '.3f') + repr(x.dtype))",
                f"print({t}, y.sum(), sep=' | ')",
                f"G_list.append(f'{{{t}}}')",
                "G_list.append(f'{d!r} {lst}')",
            ]
        )

    def recursion(self, depth: int) -> str:
        """The program's recursive helpers, two or three deep."""
        t, n = self.t(), self.n()
        return self.pick(
            [
                f"{t} = rec_walk({t}, {n} % 3 + 1)",
                f"{t} = sum(gen_walk(lst, {n}), {t})",
                f"gw = gen_walk(lst, {n})\nfirst = next(gw, None)\n{self.brk()}\n"
                f"{n} = len(list(gw))",
            ]
        )

    def inner_fn(self, depth: int) -> str:
        k = self.n()
        return self.pick(
            [
                f"def inner(t):\n    return t * {k} + {self.t()}\n"
                f"{self.t()} = inner({self.texpr()})",
                f"{self.t()} = sum([{self.t()} * q "
                f"for q in range({self.rng.randint(1, 3)})], {self.t()})",
                f"g = lambda t: t + {k}\n{self.t()} = g({self.t()})",
            ]
        )


def helper(rng: random.Random, index: int, family: str = "base") -> str:
    """A module-level ``h{index}(t, k)`` returning a tensor, possibly with a break of its own (for
    the ``closures`` family also closures made at each call over ``t``, ``k`` and what they
    compute, breaking inside or not)."""
    lines = [f"def h{index}(t, k):"]
    choices = [
        "t = t * 2 + k",
        "t = torch.relu(t) - 1",
        "print('h', k)",
        "bytegraph.graph_break()",
        "if k > 2:\n        t = t + 1",
        "if t.sum() > 0:\n        t = t - k",
        "if k == 4:\n        raise RuntimeError('helper ' + str(k))",
        "G_list.append(k)",
        f"t = h{index - 1}(t, k + 1)" if index > 0 else "t = t.abs()",
    ]
    closures: list[str] = []
    if family == "closures":
        brk = rng.choice(["print('c', k)", "bytegraph.graph_break()", "G_list.append(k)"])
        closures += [
            f"r = t * 2\n    def inner(u):\n        {brk}\n        return u + r + k\n"
            "    t = inner(t)",
            f"def inner(u, j=k):\n        {brk}\n        return u * j\n"
            "    t = inner(t) + inner(t + 1)",
            f"def shift(u):\n        {brk}\n        return u - k\n    t = (lambda f: f(t))(shift)",
            "acc = [k]\n    def bump(u):\n        acc.append(1)\n"
            f"        {brk}\n        return u + len(acc)\n    t = bump(t) + bump(t)",
        ]
    for _ in range(rng.randint(1, 3)):
        pool = closures if closures and rng.random() < 0.5 else choices
        lines.append("    " + rng.choice(pool))
    lines.append("    return t")
    return "\n".join(lines)


GEN_DEPTH = 4  #: how deep ``gen_walk`` delegates to itself at most


def recursive_helpers(rng: random.Random) -> list[str]:
    """The ``python`` family's ``rec_walk(t, k)``, recursive ``k`` deep, and ``gen_walk(ts, k)``,
    a generator delegating to itself at most ``GEN_DEPTH`` deep; each breaks at a random place, or
    does not. Both stay far from the recursion limit: where CPython raises ``RecursionError``
    depends on how many frames are below, which compiled code changes (resume functions run under
    the frame they resume; seed 15429334, ``gen_walk`` called about 1100 deep: eager appended 1103
    times before the error, torch.compile 1102, bytegraph 1097)."""

    def brk() -> str:
        return rng.choice(["bytegraph.graph_break()", "print('walk', k)", "G_list.append(k)"])

    return [
        f"def rec_walk(t, k):\n    if k <= 0:\n        return t\n    {brk()}\n"
        "    return rec_walk(t * 2, k - 1) + k",
        f"def gen_walk(ts, k):\n    for q, v in enumerate(ts):\n        {brk()}\n"
        "        yield v * k + q\n    if k > 0:\n"
        f"        yield from gen_walk(ts[:1], min(k, {GEN_DEPTH}) - 1)",
    ]


def generate(seed: int, family: str = "base") -> Program:
    rng = random.Random(seed)
    count = rng.randint(1, 2) if family == "closures" else rng.randint(0, 2)
    helpers = [helper(rng, i, family) for i in range(count)]
    gen = Gen(rng, helpers, family)
    body = [gen.stmt() for _ in range(rng.randint(2, 8))]
    if family == "python":
        helpers = helpers + recursive_helpers(rng)
    return Program(seed, helpers, body, family)


# -- running ---------------------------------------------------------------------------------------


def make_inputs(seed: int, call: int, ns: dict[str, Any], family: str = "base") -> tuple:
    """Fresh inputs for call ``call`` (equal for equal arguments; ``Obj`` from the program's
    namespace). For the ``branch`` family only the tensors' values change from call to call
    (sizes, ints, the list's length and the dict's keys stay, but for the size on the last of the 5
    calls), so that later calls run the variant the first traced and its speculated branches
    miss when the data goes the other way."""
    rng = random.Random(seed * 7 + call)
    gen = torch.Generator().manual_seed(seed * 7 + call)
    size = rng.choice([3, 4, 5]) if call else 4
    if family == "branch":
        rng = random.Random(seed * 7)
        size = 3 if call == 4 else 4

    def tensor():
        return torch.randint(-4, 5, (size,), generator=gen).float()

    lst = [tensor() for _ in range(rng.randint(0, 3))]
    d = {"k": tensor()} if rng.random() < 0.5 else {}
    return (tensor(), tensor(), rng.randint(0, 6), lst, d, ns["Obj"](tensor(), rng.randint(0, 3)))


def load(program: Program) -> dict[str, Any]:
    ns: dict[str, Any] = {"__name__": f"fuzz_{program.seed}"}
    exec(compile(program.source, f"<fuzz {program.seed}>", "exec", dont_inherit=True), ns)
    return ns


def _observe(fn: Callable, args: tuple, ns: dict[str, Any], cells: Callable) -> dict[str, Any]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            result, error = fn(*args), None
        except Exception as e:  # noqa: BLE001 (compared with eager's)
            result, error = None, e
    x, y, n, lst, d, obj = args
    return {
        "error": None if error is None else (type(error), _addressless(str(error))),
        "result": result,
        "printed": _addressless(out.getvalue()),
        "x": x,  # the tensor inputs themselves, after the call: in-place updates
        "y": y,
        "lst": lst,
        "d": [(_canon(k), v) for k, v in d.items()],
        "obj": _object_state(obj),
        "globals": (ns["G_count"], _object_state(list(ns["G_list"])), ns["G_scale"]),
        "text": ns.get("G_text"),
        "registry": [(_canon(k), v) for k, v in ns.get("G_reg", {}).items()],
        "set": sorted(repr(_canon(v)) for v in ns.get("G_set", ())),
        "hooks": (len(ns["MOD"]._forward_hooks), len(ns["MOD"]._forward_pre_hooks)),
        "cells": cells(),
        "state": _global_state(),
        "rng": torch.get_rng_state(),  # each call is seeded: what it drew must be eager's
    }


def _addressless(text: str) -> str:
    """``text`` without object addresses (the eager and compiled runs have their own objects)."""
    return re.sub(r" at 0x[0-9a-fA-F]+", " at 0x?", text)


def _canon(value: Any) -> Any:
    """A dict key or set item as something equal across the eager and the compiled program's
    namespaces: classes, functions and modules by name, objects by class and attributes, a NaN
    as itself (NaN != NaN)."""
    if type(value) in (tuple, list, set, frozenset):
        items = [_canon(v) for v in value]
        if isinstance(value, (set, frozenset)):
            items = sorted(map(repr, items))
        return (type(value).__name__, tuple(items))
    if isinstance(value, float) and math.isnan(value):
        return ("nan",)
    if isinstance(value, enum.Enum):
        return ("enum", type(value).__qualname__, value.name)
    if isinstance(value, types.ModuleType):
        return ("module", value.__name__)
    if isinstance(value, type) or callable(value) and hasattr(value, "__qualname__"):
        return ("named", getattr(value, "__module__", None), value.__qualname__)
    if hasattr(value, "__dict__") and not isinstance(value, torch.Tensor):
        return ("object", type(value).__qualname__, _canon(tuple(sorted(vars(value).items()))))
    return value


def _global_state() -> tuple:
    """torch's process-wide state, which a compiled call must leave as eager does."""
    return (
        torch.is_grad_enabled(),
        torch.is_inference_mode_enabled(),
        torch.is_autocast_enabled("cpu"),
        torch.get_autocast_dtype("cpu"),
        torch.get_default_dtype(),
        torch.are_deterministic_algorithms_enabled(),
        torch.get_default_device(),
    )


def _object_state(value: Any) -> Any:
    """Plain objects (and objects with ``__slots__``) compared by class name and attributes, in
    lists and tuples too; an optimizer by its state and groups."""
    if isinstance(value, torch.optim.Optimizer):
        state = value.state_dict()
        return (
            "optimizer",
            [dict(s) for s in state["state"].values()],
            [{k: v for k, v in g.items() if k != "params"} for g in state["param_groups"]],
        )
    if type(value) in (list, tuple):
        return type(value)(_object_state(v) for v in value)
    if isinstance(value, (torch.Tensor, type)):
        return value
    if hasattr(value, "__dict__"):
        return (type(value).__qualname__, {k: _object_state(v) for k, v in vars(value).items()})
    if slots := getattr(type(value), "__slots__", ()):
        return (
            type(value).__qualname__,
            {k: _object_state(getattr(value, k, None)) for k in slots},
        )
    return value


def compare(actual: Any, expected: Any, path: str = "") -> str | None:
    """The first difference between two observations, or None."""
    if type(actual) is not type(expected):
        return f"{path}: type {type(actual).__name__} != {type(expected).__name__}"
    if isinstance(expected, torch.Tensor):
        if actual.shape != expected.shape or actual.dtype != expected.dtype:
            return (
                f"{path}: tensor {actual.shape}/{actual.dtype} != {expected.shape}/{expected.dtype}"
            )
        if actual.device != expected.device or actual.is_inference() != expected.is_inference():
            return f"{path}: device or inference-ness differs"
        if actual.requires_grad != expected.requires_grad:
            return f"{path}: requires_grad differs"
        if not torch.allclose(
            actual.detach(), expected.detach(), equal_nan=True, rtol=1e-5, atol=1e-5
        ):
            return f"{path}: {actual} != {expected}"
        if isinstance(expected, torch.nn.Parameter):
            return compare(actual.grad, expected.grad, f"{path}.grad")
        return None
    if isinstance(expected, (list, tuple)):
        if len(actual) != len(expected):
            return f"{path}: len {len(actual)} != {len(expected)}"
        for k, (a, e) in enumerate(zip(actual, expected, strict=True)):
            if (diff := compare(a, e, f"{path}[{k}]")) is not None:
                return diff
        return None
    if isinstance(expected, dict):
        if list(actual) != list(expected):
            return f"{path}: keys {list(actual)} != {list(expected)}"
        for k in expected:
            if (diff := compare(actual[k], expected[k], f"{path}[{k!r}]")) is not None:
                return diff
        return None
    return None if actual == expected else f"{path}: {actual!r} != {expected!r}"


def run_program(program: Program, calls: int | None = None, backend: str = "eager") -> Outcome:
    """Run ``program`` eagerly and compiled, ``calls`` times (3; 5 for the ``branch`` family, so
    that its branches hit, miss and miss past the limit), and compare (see the module docstring).
    The ``branch`` family runs with speculation on (``bytegraph.config.speculate``)."""
    if calls is None:
        calls = 5 if program.family == "branch" else 3
    with bytegraph.config.patch(speculate=program.family == "branch"):
        return _run_program(program, calls, backend)


def _run_program(program: Program, calls: int, backend: str) -> Outcome:
    eager_ns, compiled_ns = load(program), load(program)
    eager_fn, eager_cells = eager_ns["make"]()
    plain_fn, compiled_cells = compiled_ns["make"]()
    before = dict(driver.COUNTERS)
    try:
        compiled_fn = bytegraph.compile(plain_fn, backend=backend)
    except Exception as e:  # noqa: BLE001
        return Outcome(False, message=f"compile() raised {type(e).__name__}: {e}", crashed=True)
    fallbacks, internal_errors = 0, []
    known_sites = speculation.sites()
    for call in range(calls):
        torch.manual_seed(program.seed * 31 + call)
        expected = _observe(
            eager_fn,
            make_inputs(program.seed, call, eager_ns, program.family),
            eager_ns,
            eager_cells,
        )
        torch.manual_seed(program.seed * 31 + call)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            actual = _observe(
                compiled_fn,
                make_inputs(program.seed, call, compiled_ns, program.family),
                compiled_ns,
                compiled_cells,
            )
        fallbacks += any("bytegraph: running" in str(w.message) for w in caught)
        internal_errors += [str(w.message) for w in caught if "internal_error" in str(w.message)]
        counts = _counter_deltas(before)
        error = actual["error"]
        if error is not None and error[0].__module__.startswith("bytegraph"):
            message = f"call {call}: internal error {error}"
            return Outcome(False, fallbacks, message=message, crashed=True, **counts)
        if (diff := compare(actual, expected)) is not None:
            return Outcome(False, fallbacks, message=f"call {call}: {diff}", **counts)
    return Outcome(
        True,
        fallbacks,
        message="\n".join(internal_errors),
        speculation=_speculated(program, known_sites),
        **_counter_deltas(before),
    )


def _speculated(program: Program, known: list) -> tuple[int, int, int]:
    """The branches of ``program`` that traces speculated on since ``known``: (sites, hits,
    misses)."""
    mine = [
        s
        for s in speculation.sites()
        if s.filename == f"<fuzz {program.seed}>" and all(s is not k for k in known)
    ]
    return len(mine), sum(s.hits for s in mine), sum(s.misses for s in mine)


def _counter_deltas(before: dict[str, int]) -> dict[str, int]:
    """Internal-error fallbacks and graph breaks counted since ``before`` (``driver.COUNTERS``)."""
    delta = {k: v - before.get(k, 0) for k, v in driver.COUNTERS.items()}
    breaks = sum(v for k, v in delta.items() if k.startswith("break:"))
    return {"internal": delta.get("fallback:internal_error", 0), "breaks": breaks}


def minimize(program: Program, fails: Callable[[Program], bool] | None = None) -> Program:
    """Drop helpers and statements (greedily, to a fixpoint) while ``fails`` still holds."""

    def default(p: Program) -> bool:
        bytegraph.reset()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = run_program(p)
        return out.kind != "ok"

    fails = fails or default
    changed = True
    while changed:
        changed = False
        for k in range(len(program.body)):
            body = program.body[:k] + program.body[k + 1 :]
            trial = Program(program.seed, program.helpers, body, program.family)
            if fails(trial):
                program, changed = trial, True
                break
    return program


@dataclass
class Summary:
    programs: int = 0
    wrong: int = 0  #: programs whose compiled behaviour differs from eager
    crashes: int = 0  #: programs where bytegraph raised or fell back on an internal error
    fallback_programs: int = 0  #: programs with at least one call that fell back to eager
    break_programs: int = 0  #: programs with at least one graph break
    breaks: int = 0  #: graph breaks in all programs
    internal: int = 0  #: internal-error fallbacks in all programs
    speculated: list[int] = field(default_factory=lambda: [0, 0, 0])  #: sites, hits, misses
    failures: list[tuple[int, str]] = field(
        default_factory=list
    )  #: (seed, message), wrong or crash

    @property
    def fallback_rate(self) -> float:
        return self.fallback_programs / max(1, self.programs)

    def add(self, seed: int, outcome: Outcome) -> None:
        self.programs += 1
        self.wrong += outcome.kind == "wrong"
        self.crashes += outcome.kind == "crash"
        self.fallback_programs += outcome.fallbacks > 0
        self.break_programs += outcome.breaks > 0
        self.breaks += outcome.breaks
        self.internal += outcome.internal
        self.speculated = [a + b for a, b in zip(self.speculated, outcome.speculation, strict=True)]
        if outcome.kind != "ok":
            self.failures.append((seed, outcome.message or "internal error fallback"))

    def merge(self, other: Summary) -> None:
        for name in ("programs", "wrong", "crashes", "fallback_programs", "break_programs"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.breaks += other.breaks
        self.internal += other.internal
        self.speculated = [a + b for a, b in zip(self.speculated, other.speculated, strict=True)]
        self.failures += other.failures

    def line(self) -> str:
        return (
            f"{self.programs} programs: {self.wrong} wrong, "
            f"{self.crashes} crashes/internal errors, "
            f"{self.fallback_programs} with fallbacks ({self.fallback_rate:.2%}), "
            f"{self.break_programs} with graph breaks ({self.breaks} breaks)"
            + (
                ", speculated on {} branches ({} hits, {} misses)".format(*self.speculated)
                if self.speculated[0]
                else ""
            )
        )


def run_many(
    seeds, on_failure: Callable[[Program, Outcome], None] | None = None, family: str = "base"
) -> Summary:
    summary = Summary()
    for seed in seeds:
        program = generate(seed, family)
        bytegraph.reset()
        outcome = run_program(program)
        summary.add(seed, outcome)
        if outcome.kind != "ok" and on_failure is not None:
            on_failure(program, outcome)
    return summary
