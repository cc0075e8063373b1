"""Python's operations on traced values: operators (the ``OPERATORS`` registry and its
``@operator_rule``s), builtins (``call_builtin`` over ``call_rules.BUILTINS``), truth, identity and
containment, ordering and ``sorted``, computation on real values (``evaluate``), and the general
rule of every operation of ``dispatch`` (``call_callable``, ``iterate``, ``get_iter``,
``construct_class``...). The top family: it may use every other.
"""

from __future__ import annotations

import _struct
import _thread
import array
import binascii
import builtins
import cmath
import collections
import contextlib
import dis
import enum
import functools
import inspect
import json
import math
import operator
import os
import posixpath
import types
import unicodedata
import weakref
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from ...codegen.frame_locals import UserFrame
from ...codegen.pyversion import LOCALS_SNAPSHOT
from ...guards.sources import AttrSource, ConstSource, FreshSource, ItemSource, Source, TypeSource
from .. import markers, polyfills
from ..exc import PythonError, TracedException, Unsupported
from ..fakes.shapes import unbacked_symbols
from ..polyfills.builtins import callable_iterator, sequence_items
from . import call_rules, containers, contexts, dispatch, iterators, modules, numpy_arrays, objects
from .base import (
    BoundAttributeVariable,
    ConstantLikeVariable,
    VariableTracker,
    method_bound,
    method_of_class,
    walk,
)
from .call_rules import BUILTINS, BuiltinImpl, builtin, call_rule
from .constants import (
    DECIDING_PARTS,
    ConstantVariable,
    MethodHashVariable,
    ObjectIdVariable,
    SliceVariable,
    SymNodeVariable,
    TextVariable,
    computed,
    error_of,
    joined_text,
    make_slice,
    nested,
    percent_formatted,
    range_matches,
    value_arguments,
)
from .containers import (
    BaseSequenceVariable,
    ByteArrayVariable,
    DequeVariable,
    DictVariable,
    DictViewVariable,
    LazyListVariable,
    ListVariable,
    MemoryViewVariable,
    ModelOutputVariable,
    SetRecipe,
    SetVariable,
    TupleVariable,
    computed_set,
    hash_key,
    key_vt,
    lookup_key,
    make_set,
    namedtuple_fields,
    not_iterable,
    on_instances,
    read_iterable,
    value_hash,
)
from .functions import (
    BuiltinVariable,
    ClosureCellVariable,
    LocalCellVariable,
    NestedFunctionVariable,
    PartialVariable,
    UserFunctionVariable,
    make_partial,
    same_bound_method,
)
from .iterators import (
    EnumerateVariable,
    FilterVariable,
    IteratorVariable,
    MapVariable,
    ZipVariable,
    make_reversed,
)
from .modules import NNModuleVariable
from .objects import (
    HEAP_TYPE,
    MISSING,
    ClassVariable,
    ExceptionVariable,
    NewObjectVariable,
    PythonModuleVariable,
    SuperVariable,
    UserObjectVariable,
    fixed_attributes,
    is_simple_exception,
    type_lookup,
)
from .tensors import DataPtrVariable, TensorVariable, index_error, to_scalar
from .tensors import to_bool as tensor_bool
from .torch_calls import TorchVariable

if TYPE_CHECKING:
    from ...codegen.emit import Codegen
    from ..translator import Translator


# Ordering traced values: ``sorted``, ``list.sort``, ``min`` and ``max``.
#
# Python's own sort runs at trace time over item indices, with a key that compares the trackers as
# CPython compares the values: constants directly, tuples and lists item by item (``_Ordered``),
# ``functools.cmp_to_key`` keys by calling the traced comparison function (``CmpKeyVariable``), in
# the order CPython's sort would call it. Comparing tensors needs their data: a graph break.

FALSE = ConstantVariable(False)


@dataclass(eq=False)
class CmpKeyVariable(VariableTracker):
    """``functools.cmp_to_key(cmp)``: only used as the ``key`` of a sort, ``min`` or ``max``, which
    then compares items by calling ``cmp`` (traced) in the order CPython's sort calls it."""

    cmp: VariableTracker
    source: Any = None

    def python_type(self) -> type:
        return type(functools.cmp_to_key(len))


@call_rule(functools.cmp_to_key)
def _cmp_to_key(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    return CmpKeyVariable(args[0]) if len(args) == 1 and not kwargs else None


def _index_key(
    tx: Translator, items: list[VariableTracker], key: VariableTracker | None, what: str
) -> Callable[[int], Any]:
    """A Python key function over item indices comparing as ``key(item)`` (or the item) would:
    constants directly, a ``cmp_to_key`` by calling the traced comparison function."""
    if isinstance(key, CmpKeyVariable):

        def compare(i: int, j: int) -> int:
            result = dispatch.call(tx, key.cmp, [items[i], items[j]], {})
            if not result.is_python_constant() or isinstance(result, TensorVariable):
                raise Unsupported("data_dependent", f"the {what}() comparison returned {result}")
            return result.as_python_constant()

        return functools.cmp_to_key(compare)
    if key is not None and not (key.is_python_constant() and key.as_python_constant() is None):
        items = [dispatch.call(tx, key, [item], {}) for item in items]
    if all(i.is_python_constant() and not isinstance(i, TensorVariable) for i in items):
        return [i.as_python_constant() for i in items].__getitem__
    return lambda i: _Ordered(items[i], what, tx)


class _Ordered:
    """A sort key comparing trackers as CPython compares the values: constants directly, tuples and
    lists item by item (the first pair that is not equal decides), so ``sorted(d.items())`` with
    distinct keys never looks at the tensors; comparing a tensor needs its value (a break)."""

    __slots__ = ("vt", "what", "tx")

    def __init__(self, vt: VariableTracker, what: str, tx: Translator) -> None:
        self.vt, self.what, self.tx = vt, what, tx

    def __lt__(self, other: _Ordered) -> bool:  # ``sorted`` and ``min``
        return _order(operator.lt, self.vt, other.vt, self.what, self.tx)

    def __gt__(self, other: _Ordered) -> bool:  # ``max``
        return _order(operator.gt, self.vt, other.vt, self.what, self.tx)


def _order(op: Any, a: VariableTracker, b: VariableTracker, what: str, tx: Translator) -> bool:
    """``op(a, b)`` for ``<`` or ``>``: tuples and lists by their first differing items; an
    object of a class comparing in Python by CPython's rich comparison (the reflected method
    where the first gives NotImplemented), inlined, and its result's truth."""
    if _constant(a) and _constant(b):
        return op(a.as_python_constant(), b.as_python_constant())
    sequences = (TupleVariable, ListVariable)
    if isinstance(a, sequences) and type(a) is type(b):
        for x, y in zip(a.items, b.items, strict=False):
            if x is y or (_constant(x) and _constant(y) and _same_or_equal(x, y)):
                continue
            return _order(op, x, y, what, tx)
        return op(len(a.items), len(b.items))
    error = operands_error(op, [a, b])
    if error is not None:  # ``sorted([obj, 'b'])``: neither operand orders the other
        raise error
    if isinstance(a, UserObjectVariable) or isinstance(b, UserObjectVariable):
        return dispatch.truth(tx, dispatch.call_operator(tx, op, [a, b]))
    raise Unsupported(
        "data_dependent",
        f"{what}() compares values only known at run time",
        hint="use torch.sort/torch.min/torch.max on tensors",
    )


def _same_or_equal(x: VariableTracker, y: VariableTracker) -> bool:
    """``x is y or x == y`` of two constants, as CPython's containers compare their items (a NaN
    equals itself there)."""
    a, b = x.as_python_constant(), y.as_python_constant()
    return a is b or a == b


_ORDERINGS = frozenset(
    {operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne}
)


def _constant(vt: VariableTracker) -> bool:
    return vt.is_python_constant() and not isinstance(vt, TensorVariable)


def sort_order(
    tx: Translator,
    items: list[VariableTracker],
    key: VariableTracker | None,
    reverse: VariableTracker,
    what: str,
) -> list[int]:
    """The permutation ``sorted(items, key=key, reverse=reverse)`` applies (stable, as CPython)."""
    index_key = _index_key(tx, items, key, what)
    try:
        return sorted(range(len(items)), key=index_key, reverse=bool(dispatch.truth(tx, reverse)))
    except TypeError as e:
        raise PythonError(e) from None


def sorted_(
    tx: Translator,
    iterable: VariableTracker,
    *,
    key: VariableTracker | None = None,
    reverse: VariableTracker = FALSE,
) -> VariableTracker:
    items = dispatch.iterate(tx, iterable)
    return ListVariable([items[i] for i in sort_order(tx, items, key, reverse, "sorted")])


def _extremum(pick: Callable[..., Any]) -> Callable[..., VariableTracker]:
    def min_max(
        tx: Translator,
        *args: VariableTracker,
        key: VariableTracker | None = None,
        default: VariableTracker | None = None,
    ) -> VariableTracker:
        if not args:
            raise Unsupported("python_error", f"{pick.__name__}() expects at least one argument")
        if len(args) > 1 and default is not None:  # given at all, None too
            message = f"Cannot specify a default for {pick.__name__}() with multiple positional"
            raise PythonError(TypeError(f"{message} arguments"))
        if key is not None and _constant(key) and key.as_python_constant() is None:
            key = None  # ``key=None``: no key (``heapq.nlargest(1, xs)`` passes it)
        items = list(args) if len(args) > 1 else dispatch.iterate(tx, args[0])
        if not items:
            if default is None:
                raise PythonError(ValueError(f"{pick.__name__}() arg is an empty sequence"))
            return default
        if key is None and _symbolic_numbers(items):
            return _symbolic_extremum(tx, pick, items)
        if key is None and _scalar_tensors(items):
            return _tensor_extremum(tx, pick, items)
        if key is None and (error := _ambiguous_truth(items)) is not None:
            raise PythonError(error)
        index_key = _index_key(tx, items, key, pick.__name__)
        try:
            return items[pick(range(len(items)), key=index_key)]
        except TypeError as e:
            raise PythonError(e) from None

    return min_max


def _symbolic_numbers(items: list[VariableTracker]) -> bool:
    """Numbers, some of them symbolic, the others Python ints or floats (no tensor)."""
    return any(isinstance(i, SymNodeVariable) for i in items) and all(
        isinstance(i, SymNodeVariable)
        or (i.is_python_constant() and type(i.as_python_constant()) in (int, float))
        for i in items
    )


def _symbolic_extremum(
    tx: Translator, pick: Callable[..., Any], items: list[VariableTracker]
) -> VariableTracker:
    """``min``/``max`` of symbolic numbers as ``torch.sym_min``/``sym_max`` graph nodes: no guard
    on which one is smaller (``min(cache_len, max_len)`` stays symbolic in generate())."""
    op = torch.sym_max if pick is builtins.max else torch.sym_min
    result = items[0]
    for item in items[1:]:
        result = tx.output.call_function(op, (result, item), {})
    return result


def _scalar_tensors(items: list[VariableTracker]) -> bool:
    """0-dim tensors of one class of torch's (``Tensor`` or ``Parameter``), dtype, device and
    ``requires_grad``: what ``min``/``max`` returns is then one of them, whose value, class and
    autograd flag the graph knows (``PickedTensorVariable``)."""
    if len(items) < 2 or not all(isinstance(i, TensorVariable) for i in items):
        return False
    first = items[0].example
    cls = items[0].python_type()
    return cls in (torch.Tensor, torch.nn.Parameter) and all(
        i.python_type() is cls
        and i.example.dim() == 0
        and i.example.dtype == first.dtype
        and i.example.device == first.device
        and i.example.requires_grad == first.requires_grad
        for i in items
    )


def _ambiguous_truth(items: list[VariableTracker]) -> Exception | None:
    """CPython's ``min``/``max`` asks ``bool(items[1] > items[0])`` first: where one is a tensor
    and the comparison has other than one element (``max(t, t)`` of a vector), torch's
    RuntimeError whatever the values. None where that is not known (symbolic or mismatched
    shapes, tensor subclasses, complex numbers)."""
    if len(items) < 2:
        return None
    shapes = []
    for item in items[:2]:
        if isinstance(item, TensorVariable):
            example = item.example
            if item.python_type() not in (torch.Tensor, torch.nn.Parameter):
                return None
            if example.dtype.is_complex or not all(isinstance(d, int) for d in example.shape):
                return None
            shapes.append(tuple(example.shape))
        elif not (_constant(item) and type(item.as_python_constant()) in (int, float, bool)):
            return None
    if not shapes:
        return None
    try:
        numel = torch.Size(torch.broadcast_shapes(*shapes)).numel()
    except RuntimeError:
        return None
    return _truth_error(numel)


def _truth_error(numel: int) -> RuntimeError | None:
    """The RuntimeError ``bool`` of a tensor of ``numel`` elements raises whatever it holds
    (computed on a meta tensor), or None for one element."""
    if numel == 1:
        return None
    try:
        bool(torch.empty(numel, device="meta"))
    except RuntimeError as e:
        return e
    return None


def _tensor_extremum(
    tx: Translator, pick: Callable[..., Any], items: list[VariableTracker]
) -> VariableTracker:
    """``max(a, b, ...)`` of 0-dim tensors: its value kept in the graph with CPython's rule (a
    later item replaces the current one only when strictly greater (``max``) or smaller
    (``min``), so ties and NaNs keep the earlier item: ``torch.where(b > a, b, a)``), and the
    object, one of the items, picked after the graph (``PickedTensorVariable``)."""
    if all(item.node is items[0].node for item in items[1:]):
        return items[0]  # ``max(a, a)``
    better = operator.gt if pick is builtins.max else operator.lt
    result = items[0]
    for item in items[1:]:
        condition = tx.output.call_function(better, (item, result), {})
        result = tx.output.call_function(torch.where, (condition, item, result), {})
    assert isinstance(result, TensorVariable)
    if _autograd_flags(result.example) != _autograd_flags(items[0].example):
        # grad off (or inference mode) and the candidates made outside it: the node's flags
        # are not the object's, which later reads and operations would see
        raise Unsupported("picked_tensor", f"{pick.__name__}() of {items[0]}: its flags differ")
    picked = PickedTensorVariable(
        result.node, result.example, items[0].python_type(), candidates=tuple(items), pick=pick
    )
    tx.output.picks.append(picked)
    return picked


def _autograd_flags(example: torch.Tensor) -> tuple[bool, bool]:
    return example.requires_grad, example.is_inference()


@dataclass(eq=False, repr=False)
class PickedTensorVariable(TensorVariable):
    """One of ``candidates`` (0-dim tensors), which one known only from their data: what
    ``pick(*candidates)`` (``max``, ``min``) returns. ``node`` computes its value, which any
    operation reading it uses. Where the object itself counts, it is the real candidate:

    - rebuilt after the graph (returned, stored, live at a break, ``id``) as
      ``pick(*candidates)`` on the real candidates, the comparisons eager makes;
    - ``p is c`` of a candidate ``c`` (``is_same``), its autograd attributes, ``.data``,
      ``__dict__`` and stores into its attributes break;
    - an operator writing into it or into a candidate (a write ``node`` would not see), or
      making a view of it (a view of ``node``, not of the candidate), breaks before it
      (``OutputGraph.check_picks``).

    Invariant: the candidates have this tracker's class, dtype, device and ``requires_grad``
    (``_scalar_tensors``)."""

    candidates: tuple[TensorVariable, ...] = ()
    pick: Callable[..., Any] = builtins.max

    def objects(self) -> list[Any]:
        return [e for c in self.candidates for e in c.objects()]

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name in _PICK_OBJECT_ATTRS and (name != "grad_fn" or self.example.requires_grad):
            raise Unsupported(
                "picked_tensor",
                f"Tensor.{name} of {self.pick.__name__}() of tensors, one of them picked when "
                "the graph runs",
            )
        return super().var_getattr(tx, name)

    def reconstruct(self, cg: Codegen) -> None:
        cg.push_callable(lambda: cg.load_const(self.pick))
        for candidate in self.candidates:
            candidate.reconstruct(cg)
        cg.call(len(self.candidates))

    def __repr__(self) -> str:
        return f"PickedTensorVariable({self.pick.__name__}, {self.node.name})"


#: attributes of a picked tensor that are the object's: its autograd state (``requires_grad``
#: is the candidates' flag), a tensor sharing its storage, its own attributes, where it lies in
#: its storage (a candidate may be a view: ``x[1]``)
_PICK_OBJECT_ATTRS = frozenset(
    {
        "grad",
        "is_leaf",
        "grad_fn",
        "_base",
        "data",
        "__dict__",
        "requires_grad_",
        "retain_grad",
        "detach_",
        "storage_offset",
        "_is_view",
        "is_shared",
        "is_pinned",
    }
)


@dispatch.rule("store_attr", PickedTensorVariable)
def _store_picked_attribute(
    tx: Translator, obj: PickedTensorVariable, name: str, value: VariableTracker
) -> None:
    """``p.name = value``: an attribute of the candidate picked at run time, which the trace
    would not see when reading that candidate: a break."""
    raise Unsupported(
        "picked_tensor", f"storing .{name} into a tensor {obj.pick.__name__}() picks at run time"
    )


min_ = _extremum(builtins.min)
max_ = _extremum(builtins.max)


# Truth value and identity: ``bool(x)`` (and ``not x``), ``x is y``.
#
# Answered at trace time, as Python booleans: a jump and ``is`` need the answer to go on. A
# tensor's truth needs its data and raises ``Unsupported``. ``x in y`` is ``contains`` (a
# search asks ``is`` and ``==`` of each item).


def _ambiguous_tensor_truth(value: TensorVariable) -> RuntimeError | None:
    """The RuntimeError ``bool(t)`` raises whatever ``t`` holds (a plain tensor of a static
    element count other than one: computed on a meta tensor), else None."""
    numel = value.example.numel()
    if value.python_type() not in (torch.Tensor, torch.nn.Parameter) or not isinstance(numel, int):
        return None
    return _truth_error(numel)


def truth(tx: Translator, value: VariableTracker) -> bool:
    """``bool(value)`` for a jump: only decidable when it does not depend on tensor data."""
    if isinstance(value, SymNodeVariable):
        return bool(value.value)  # ShapeEnv records the guard (e.g. 2*s0 >= 16)
    if isinstance(value, TensorVariable):
        if (error := _ambiguous_tensor_truth(value)) is not None:
            raise PythonError(error)
        raise Unsupported(
            "data_dependent",
            "branching on the value of a tensor",
            hint="use torch.where, or move the condition out of the compiled function",
        )
    if value.is_python_constant():
        return bool(value.as_python_constant())
    if isinstance(value, (BaseSequenceVariable, DictVariable)):
        return len(value.items) > 0
    if isinstance(value, containers.DictViewVariable):
        return len(value.dict_vt.items) > 0
    if isinstance(value, IteratorVariable):
        return True
    if isinstance(
        value,
        (
            UserFunctionVariable,
            NestedFunctionVariable,
            TorchVariable,
            ClassVariable,
            NNModuleVariable,
        ),
    ):
        return True
    if isinstance(value, BoundAttributeVariable) and _known_type(value) in _METHOD_TYPES:
        return True  # a method found on its object's class (``if t.is_floating_point:``)
    if isinstance(value, UserObjectVariable):
        cls = type(value.value)
        # the class's own (``type_lookup``): a metaclass's ``__bool__`` is the class's truth
        has_bool, has_len = (type_lookup(cls, n) is not MISSING for n in ("__bool__", "__len__"))
        if not has_bool and not has_len:
            return True
        if not has_bool:
            length = length_result(value.call_method(tx, "__len__", [], {}))
            return bool(length.as_python_constant())
        result = value.call_method(tx, "__bool__", [], {}).as_python_constant()
        if type(result) is not bool:  # CPython's check of what ``__bool__`` returned
            kind = type(result).__name__
            raise PythonError(TypeError(f"__bool__ should return bool, returned {kind}"))
        return result
    raise Unsupported("truth", f"truth value of {value}")


def length_result(result: VariableTracker) -> VariableTracker:
    """What ``len()`` makes of the value a ``__len__`` returned: CPython's index of it (an int;
    TypeError for a non-integer, ValueError below 0). A symbolic length is left as it is."""
    if not result.is_python_constant():
        return result
    value = result.as_python_constant()
    try:
        length = operator.index(value)
    except TypeError:
        kind = type(value).__name__
        raise PythonError(
            TypeError(f"'{kind}' object cannot be interpreted as an integer")
        ) from None
    if length < 0:
        raise PythonError(ValueError("__len__() should return >= 0"))
    return ConstantVariable(length)


#: the types of bound methods, which define neither ``__bool__`` nor ``__len__``: always true
_METHOD_TYPES = (types.MethodType, types.MethodWrapperType, types.BuiltinMethodType)

#: trackers that are Python constants when every number in them is, a symbolic one read as a
#: constant being specialised: where the answer is known from their type, they are not read
_READ_AS_CONSTANTS = (SymNodeVariable, BaseSequenceVariable, DictVariable, SetVariable)


def _known_type(vt: VariableTracker) -> type | None:
    try:
        return vt.python_type()
    except Unsupported:
        return None


def is_none(tx: Translator, value: VariableTracker) -> bool:
    if isinstance(value, _READ_AS_CONSTANTS):
        return False  # a number or a builtin container is never None
    return value.is_python_constant() and value.as_python_constant() is None


def is_same(tx: Translator, lhs: VariableTracker, rhs: VariableTracker) -> bool:
    """``lhs is rhs``. Trackers wrap distinct objects unless they are the same tracker (``wrap``
    caches by identity), the same graph node or fake tensor, or the same constant."""
    if lhs is rhs:
        return True
    if isinstance(lhs, _READ_AS_CONSTANTS) or isinstance(rhs, _READ_AS_CONSTANTS):
        types_ = _known_type(lhs), _known_type(rhs)
        if None not in types_ and types_[0] is not types_[1]:
            return False  # e.g. `n is None`, `shape is None`: no need to specialise n, shape
    if isinstance(lhs, TensorVariable) and isinstance(rhs, TensorVariable):
        # an in-place op (``x.add_(y)``, ``x += y`` on a tensor) returns its input: the fake
        # tensors are the same object too
        if lhs.node is rhs.node or lhs.example is rhs.example:
            return True
        left, right = lhs.objects(), rhs.objects()
        if any(x is y for x in left for y in right):  # a pick, maybe the other tensor
            raise Unsupported("picked_tensor", f"identity of {lhs} and {rhs}, known at run time")
        return False
    if isinstance(lhs, UserObjectVariable) and isinstance(rhs, UserObjectVariable):
        if lhs.value is rhs.value:
            return True
        new = tx.output.side_effects.is_new
        if not (new(lhs) or new(rhs)) and lhs.source is not None and rhs.source is not None:
            # both guarded by type only: another call may pass one object twice
            tx.output.assume_distinct(lhs.source, rhs.source)
        return False
    real = [_real_immutable(tx, vt) for vt in (lhs, rhs)]
    if None not in real:
        return _same_value_object(tx, lhs, rhs, real[0], real[1])
    for vt, obj in zip((lhs, rhs), real, strict=True):
        if isinstance(vt, SymNodeVariable) and obj is None:
            # a number the trace computed: whether CPython's operation made a new object or
            # gave back one it was given (``+f``, ``abs(n)``, a cached small int) is its own
            raise Unsupported("is", f"identity of a number computed in the trace: {lhs} is {rhs}")
    if isinstance(lhs, _ONE_TRACKER_PER_OBJECT) and isinstance(rhs, _ONE_TRACKER_PER_OBJECT):
        # distinct trackers of mutable objects stand for distinct objects (also where both hold
        # constants only); two read from the inputs are guarded apart: another call may pass one
        # object twice
        sources = [_identity_source(tx, vt, MISSING) for vt in (lhs, rhs)]
        if None not in sources and sources[0] != sources[1]:
            tx.output.assume_distinct(sources[0], sources[1])
        return False
    if lhs.is_python_constant() and rhs.is_python_constant():
        pin_identity(tx, lhs)
        pin_identity(tx, rhs)
        return lhs.as_python_constant() is rhs.as_python_constant()
    if lhs.is_python_constant() or rhs.is_python_constant():
        const, other = (lhs, rhs) if lhs.is_python_constant() else (rhs, lhs)
        if (
            isinstance(other, UserObjectVariable)
            and type(const.as_python_constant()) is other.python_type()  # else guarded apart
            and not tx.output.side_effects.is_new(other)
        ):
            # an object from outside the call may be the constant itself (``P.__init__ is
            # object.__init__``: the slot wrapper P inherits): compared, its identity guarded
            pin_identity(tx, other)
            return other.value is const.as_python_constant()
        return False  # a tensor, container or new object is never a constant such as None
    if type(lhs) is not type(rhs):
        return False
    if isinstance(lhs, _ONE_TRACKER_PER_OBJECT):
        return False  # distinct trackers of mutable objects stand for distinct objects
    if isinstance(lhs, UserFunctionVariable) and None not in (lhs.self_vt, rhs.self_vt):
        same = same_bound_method(lhs, rhs)
        if same is not None:
            return same
        given = [containers.wrapped_object(tx, vt) for vt in (lhs, rhs)]
        if containers.MISSING not in given:  # two bound methods the trace was given
            return _same_value_object(tx, lhs, rhs, given[0], given[1])
    if method_of_class(lhs) is not None and method_of_class(rhs) is not None:
        return False  # two reads made two objects (``xs.append is xs.append``)
    raise Unsupported("is", f"identity of {lhs} and {rhs}")


def _same_value_object(
    tx: Translator, lhs: VariableTracker, rhs: VariableTracker, a: Any, b: Any
) -> bool:
    """``a is b`` of two objects whose trackers are not one per object: immutable ones compared
    by value elsewhere (``_real_immutable``), bound methods given to the trace. Guarded as a
    relation where both came from the inputs (equal values need not be one object: another call
    may pass two, or one twice), and by identity where one did and the other is the code's own
    (or made by the trace)."""
    sources = [_identity_source(tx, vt, obj) for vt, obj in ((lhs, a), (rhs, b))]
    same = a is b
    if None not in sources:
        if sources[0] != sources[1]:
            relate = tx.output.assume_same if same else tx.output.assume_distinct
            relate(sources[0], sources[1])
    elif same:
        for source in sources:
            if source is not None:
                tx.output.assume_identity(source, a)
    return same


def _identity_source(tx: Translator, vt: VariableTracker, obj: Any) -> Source | None:
    """The input ``obj`` (``vt``'s value) is read through, if it is one: ``vt``'s source, or the
    key source of an input dict's key kept as itself (``OutputGraph.key_sources``)."""
    source = vt.source
    if source is None:
        known = tx.output.key_sources.get(id(obj))
        source = known[1] if known is not None and known[0] is obj else None
    if source is None or isinstance(source.root, (ConstSource, FreshSource)):
        return None
    return source


#: The values whose identity follows from their type and value, which ``is`` compares as such:
#: None, Ellipsis, NotImplemented, bools and the ints CPython keeps one object of
_SINGLETON_VALUES = (type(None), type(Ellipsis), type(NotImplemented), bool)


def _real_immutable(tx: Translator, vt: VariableTracker) -> Any:
    """The real immutable object ``vt`` stands for, where its identity is not its value's (its
    ``is`` is decided by the object): a tuple tracker's ``real``; an input frozenset's own
    object (its trackers are not one per object: each read may make one); the value of a
    constant of a type compared by value (a number, a string, bytes, a tuple, a frozenset: an
    input read by value, or a key kept as itself, then found by identity when read again: ``T in
    S`` then ``T is (1, 'a')``, ``[k for k in D if k is FS]``, ``a is b`` of two floats)."""
    if isinstance(vt, ConstantVariable):
        value = vt.value
        if type(value) in _SINGLETON_VALUES or (type(value) is int and -5 <= value <= 256):
            return None
        return value if type(value) in _IDENTITY_READ_TYPES else None
    if isinstance(vt, SymNodeVariable):
        return _input_number(tx, vt)
    if isinstance(vt, SetVariable):
        if not vt.frozen or vt.source is None:
            return None
        if type(vt.mirror) is frozenset:
            return vt.mirror
        real = containers.wrapped_object(tx, vt)
        return real if type(real) is frozenset else None
    return getattr(vt, "real", None)


def _input_number(tx: Translator, vt: SymNodeVariable) -> Any:
    """The int or float object a symbolic input stands for (its placeholder's real value), else
    None (a number computed in the trace, or from a tensor's size or data)."""
    inputs = tx.output.inputs
    if vt.source is None or inputs.get(vt.source) is not vt:
        return None
    return tx.output.input_values[list(inputs).index(vt.source)]


def pin_identity(tx: Translator, vt: VariableTracker) -> None:
    """Guard the identity of the object ``vt`` stands for, once the trace has decided something
    from it (its ``repr``, ``id`` or ``hash``, ``is``): an input object guarded only by its type,
    or a function guarded by what it is made of (``builder._guard_function``), could be another
    object at the next call."""
    if isinstance(vt, UserObjectVariable) and vt.source is not None:
        tx.output.assume_identity(vt.source, vt.value)
    elif isinstance(vt, UserFunctionVariable):
        vt.pin_identity(tx)


#: Immutable types compared by value whose objects ``is`` tells apart (and those guarded by the
#: parts that decide them, ``DECIDING_PARTS``)
_IDENTITY_READ_TYPES = (
    *(int, float, complex, str, bytes, tuple, frozenset, range, slice),
    *DECIDING_PARTS,
)


#: Kinds whose trackers are one per object (made once, or cached by ``builder.wrap`` by identity).
_ONE_TRACKER_PER_OBJECT = (
    ListVariable,
    DictVariable,
    SetVariable,
    IteratorVariable,
    containers.DictViewVariable,
    containers.MappingProxyVariable,  # each ``cls.__dict__`` read makes a new proxy
    MemoryViewVariable,  # made in the trace only
)


# Builtins run for real at trace time on objects the trace knows: ``id``, ``hash``, ``repr``,
# ``str``, ``ascii`` and ``format`` of a plain object, a class, a function or a module, and of
# tuples and lists of them, ``hash`` of frozensets of them (``id`` of anything else:
# ``object_id``, compared by ``compare_ids``); and an operation no operand implements
# (``unsupported_operands``), run on stand-ins for CPython's TypeError (an object of a Python
# class, a bound method).
#
# An object read from the inputs (a global, an attribute) is a real object during the trace. A
# builtin that reads it only through what ``object`` itself defines (its identity, the default
# ``__hash__``, ``__repr__``, ``__str__``, ``__format__``) runs no user code, so it is computed
# here, on that object, instead of breaking the graph; what it read is guarded: the object's
# identity (the result holds its address or is derived from it). Objects made in the trace have
# no real counterpart yet and are left to the caller; constants are folded in ``call_builtin``.

#: builtin -> the methods of ``object`` it calls (it is computed only where the class keeps them)
_READS: dict[Any, tuple[str, ...]] = {
    id: (),
    hash: ("__hash__",),
    repr: ("__repr__",),
    ascii: ("__repr__",),
    str: ("__str__", "__repr__"),
    format: ("__format__", "__str__", "__repr__"),
}
_MISSING = object()
#: the sequences ``_real`` is reading, innermost last
_READING: list[VariableTracker] = []
_CONTAINERS = (BaseSequenceVariable, DictVariable, SetVariable)
#: trackers whose ``_real`` reads the objects they hold (identities ``evaluate`` guards)
_HOLDING_OWNERS = (BaseSequenceVariable, UserFunctionVariable, BoundAttributeVariable)


def evaluate(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """``fn(*args)`` computed on the real objects, or None where an argument is not one the
    trace knows (a tensor, a container, an object made in the trace, a class overriding what
    ``fn`` calls)."""
    if fn not in _READS or kwargs:
        return None
    values = [_real(tx, a, fn) for a in args]
    if any(v is _MISSING for v in values):
        return None
    for vt in walk(args, descend=lambda vt: isinstance(vt, _HOLDING_OWNERS)):
        pin_identity(tx, vt)
    try:
        result = fn(*values)
    except Exception as e:  # noqa: BLE001 (CPython's own error, raised in the trace)
        raise PythonError(e) from None
    return ConstantVariable(result)


def object_id(tx: Translator, vt: VariableTracker) -> VariableTracker:
    """``id(vt)``: the real object's (``evaluate``), else a number known only by what it is the
    id of (``ObjectIdVariable``)."""
    known = evaluate(tx, id, [vt], {})
    return known if known is not None else ObjectIdVariable(vt)


def compare_ids(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    """``id(a) == id(b)`` (or ``!=``) is ``a is b``. Two constants read from inputs are the same
    object only as long as each input holds that object (an equal one passes a value guard):
    their identity is guarded, unless both were read from the same place."""
    a, b = args
    if not (isinstance(a, ObjectIdVariable) and isinstance(b, ObjectIdVariable)):
        return None
    same = is_same(tx, a.of, b.of)
    if a.of.source != b.of.source:
        for vt in (a.of, b.of):
            if isinstance(vt, ConstantVariable) and vt.source is not None:
                tx.output.assume_identity(vt.source, vt.value)
    return ConstantVariable(same == (op is operator.eq))


def compare_method_hashes(
    tx: Translator, op: Any, args: list[VariableTracker]
) -> VariableTracker | None:
    """``hash(a.f) == hash(b.g)`` of methods or objects hashed by address
    (``MethodHashVariable``): equal where they are the same method of the same object, or the
    same object; two others may collide (an object freed, its address reused), which only Python
    knows."""
    a, b = args
    if not (isinstance(a, MethodHashVariable) and isinstance(b, MethodHashVariable)):
        return None
    (function, owner), (other_function, other_owner) = _address_hashed(a.of), _address_hashed(b.of)
    if function is other_function and is_same(tx, owner, other_owner):
        return ConstantVariable(op is operator.eq)
    raise Unsupported("builtin", f"hashes of two different methods compared: {a}, {b}")


def _address_hashed(vt: VariableTracker) -> tuple[Any, VariableTracker] | None:
    """``(method, object)`` for a method whose hash mixes its object's address with the method
    (a Python function bound to an object, a C method found on its class), ``(None, vt)`` for a
    value whose class hashes it by its address (``object.__hash__``), None for any other."""
    if is_bound_method(vt):
        return vt.fn, vt.self_vt
    if method_bound(vt) is not None:
        return method_bound(vt), vt.obj
    hashed = isinstance(vt, (UserObjectVariable, PartialVariable))
    if hashed and type_lookup(vt.python_type(), "__hash__") is object.__hash__:
        return None, vt
    return None


def _real(tx: Translator, vt: VariableTracker, fn: Any) -> Any:
    """The real object ``vt`` stands for, where ``fn`` of it is computed here."""
    if isinstance(vt, UserObjectVariable):
        if tx.output.side_effects.is_new(vt):
            return _MISSING  # a stand-in: the object the rewritten code makes is another
        cls = type(vt.value)
        if all(getattr(cls, name) is getattr(object, name) for name in _READS[fn]):
            return vt.value
        return _MISSING
    if isinstance(vt, BaseSequenceVariable) and fn is not id:
        # a tuple or list of known values: its items are read through ``repr`` (``str`` of a
        # tuple is its ``repr``) or ``hash``
        each = hash if fn is hash else repr
        if any(vt is outer for outer in _READING):
            return _MISSING  # a list holding itself: its text is written by the caller
        _READING.append(vt)
        try:
            items = [_real(tx, item, each) for item in vt.items]
        finally:
            _READING.pop()
        if any(item is _MISSING for item in items):
            return _MISSING
        return vt.python_type()(items) if vt.python_type() in (list, tuple) else _MISSING
    if isinstance(vt, SetVariable) and fn is hash and vt.frozen:  # a subclass's object too
        # a frozenset's hash combines its items' hashes, in no order: an equal frozenset's
        items = [key_vt(key) for key in vt.items]
        values = [_real(tx, item, hash) for item in items]
        if any(value is _MISSING for value in values):
            return _MISSING
        for item in items:
            pin_identity(tx, item)
        return frozenset(values)
    method = method_bound(vt)
    if method is not None and fn is not id:
        # ``obj.__eq__``, ``cls.mro``: a new bound object at each read
        python = isinstance(method, types.FunctionType)
        owner = _method_owner(tx, vt.obj, fn, python)
        if owner is _MISSING and not python:
            owner = _input_container(tx, vt.obj)
        return _MISSING if owner is _MISSING else method.__get__(owner, type(owner))
    if isinstance(vt, UserFunctionVariable) and vt.self_vt is not None and fn is not id:
        # ``obj.method``: a new bound object at each read (no identity to keep)
        owner = _method_owner(tx, vt.self_vt, fn, True)
        return _MISSING if owner is _MISSING else types.MethodType(vt.fn, owner)
    if isinstance(vt, ConstantVariable):
        # a constant's identity is not kept (an equal one may come next call): id() breaks; an
        # object given back as a copy (``constants.READ_ONLY_C_METHODS``) is not the one here
        return vt.value if fn is not id and vt.is_python_constant() else _MISSING
    if isinstance(vt, (ConstantLikeVariable, BuiltinVariable)) or (
        isinstance(vt, UserFunctionVariable) and vt.is_python_constant()
    ):  # a class, module, function: guarded by identity where it was read
        return vt.as_python_constant()
    return _MISSING


def _method_owner(tx: Translator, vt: VariableTracker, fn: Any, python: bool) -> Any:
    """The real object a method bound to ``vt`` is bound to, where ``fn`` of the method is
    computed here. A C method's hash and repr, and a Python one's hash (CPython's
    ``method_hash``, since 3.8, and ``meth_hash``: its object's address, whatever its own
    ``__hash__``), read only the object's identity and type; a Python one's repr reads the
    object's repr."""
    if python and fn is not hash:
        return _real(tx, vt, repr)
    if isinstance(vt, ConstantVariable) and isinstance(vt.value, enum.Enum):
        return vt.value  # its class's one object of that value
    return _real(tx, vt, id)


def _input_container(tx: Translator, vt: VariableTracker) -> Any:
    """The real list, dict or set that ``vt``, an input's tracker (read through its source),
    stands for, its identity guarded; else ``_MISSING``. A C method bound to it hashes and prints
    its address, whatever it holds; a container made in the trace has none yet."""
    if not isinstance(vt, _CONTAINERS) or vt.source is None:
        return _MISSING
    for value, known in tx.output.wrapped.values():
        if known is vt:
            tx.output.assume_identity(vt.source, value)
            return value
    return _MISSING


def unsupported_operands(
    fn: Any, args: list[VariableTracker], methods: set[str]
) -> Exception | None:
    """The TypeError CPython raises for ``fn(*args)`` where no operand implements it, or None where
    that is not known: each operand is a builtin value (a container: its builtin type, whose
    methods give NotImplemented for a plain object whatever it holds) or an object of a Python
    class defining none of ``methods`` (those ``fn`` could call), one at least. The error is
    CPython's own, from ``fn`` run on the values with each object replaced by an instance of an
    empty class of the same name and each container by an empty one."""
    stand_ins: dict[type, type] = {}
    values: list[Any] = []
    for vt in args:
        if isinstance(vt, UserObjectVariable) and not isinstance(vt, NNModuleVariable):
            cls = vt.python_type()
            if not _plain_class(cls, methods):
                return None
            values.append(stand_ins.setdefault(cls, type(cls.__name__, (), {}))())
        elif is_bound_method(vt):
            # ``method`` implements no operator but ``==``, ``!=`` and ``hash``, whatever it binds
            values.append(_METHOD_STAND_IN)
        elif vt.is_python_constant() and type(vt.as_python_constant()).__module__ == "builtins":
            values.append(vt.as_python_constant())
        elif isinstance(vt, _CONTAINERS) and vt.python_type().__module__ == "builtins":
            values.append(vt.python_type()())  # its items play no part against a plain object
        else:
            return None
    if not any(map(plain_operand, args)):
        return None
    try:
        fn(*values)
    except TypeError as e:
        return e
    return None


def plain_operand(vt: VariableTracker) -> bool:
    """An object whose operators ``unsupported_operands`` knows: of a Python class (which may
    define none), or a bound method (which defines none)."""
    return isinstance(vt, UserObjectVariable) or is_bound_method(vt)


def is_bound_method(vt: VariableTracker) -> bool:
    """``obj.method`` of a Python function."""
    return isinstance(vt, UserFunctionVariable) and vt.self_vt is not None


class _Bound:
    def method(self) -> None:
        """What ``_METHOD_STAND_IN`` binds: only its type, ``method``, takes part in an error."""


_METHOD_STAND_IN = _Bound().method


def _plain_class(cls: type, methods: set[str]) -> bool:
    """A class made of Python classes (and ``object``) none of which defines one of ``methods``."""
    return all(
        base is object
        or (type(base) is type and "__dict__" in vars(base) and not methods & vars(base).keys())
        for base in cls.__mro__
    )


# ``==``, ``!=`` and the orderings of containers by CPython's rules, where the tracer decides them.
#
# Lists, tuples, deques and dicts compare by value, their items identity first: CPython's container
# comparisons ask ``x is y or x == y`` of each pair (``PyObject_RichCompareBool``), so a list
# holding an object whose ``__eq__`` is the default equals another list holding the same object.
# Objects whose class keeps ``object.__eq__`` (classes, functions, modules, plain objects) compare
# by identity, which ``truth.is_same`` decides and guards. Sets and dict views are compared in
# ``containers.py``; constants fold in ``call_operator``, whose table these rules join.
# ``contains`` answers ``x in y``: a sequence is searched item by item the same way.

_EQUALITY = (operator.eq, operator.ne)
#: dict classes whose ``==`` is ``dict.__eq__`` over the items (OrderedDict: also their order)
_PLAIN_DICTS = (dict, collections.OrderedDict, collections.defaultdict)


def identity_compared(vt: VariableTracker) -> bool:
    """Whether ``vt``'s class keeps ``object.__eq__`` and ``object.__ne__`` (a class, function,
    module or plain object): ``==`` between two such values is ``is``."""
    try:
        cls = vt.python_type()
    except Unsupported:
        return False
    return cls.__eq__ is object.__eq__ and cls.__ne__ is object.__ne__


def same_items(tx: Translator, x: VariableTracker, y: VariableTracker) -> bool:
    """``x is y or x == y``: how CPython's containers compare their items."""
    if x is y:
        return True
    try:
        if is_same(tx, x, y):
            return True
    except Unsupported:
        pass  # identity unknown: ``==`` decides (CPython asks it after ``is`` anyway)
    return truth(tx, dispatch.call_operator(tx, operator.eq, [x, y]))


def _sequence_family(vt: VariableTracker) -> type | None:
    """``list``, ``tuple`` or ``deque`` for a sequence tracker whose comparison is that type's
    own (a namedtuple or ``torch.Size`` compares as a tuple), else None."""
    if not isinstance(vt, BaseSequenceVariable):
        return None
    cls = vt.python_type()
    for family in (list, tuple, collections.deque):
        if issubclass(cls, family) and cls.__eq__ is family.__eq__:
            return family
    return None


def compare_sequences_as_cpython(
    tx: Translator, op: Any, args: list[VariableTracker]
) -> VariableTracker | None:
    """Two lists, two tuples or two deques, as CPython's ``list_richcompare`` does: for ``==``
    and ``!=``, lengths first; then the first pair that is neither the same object nor equal
    decides (``op`` applied to it), or, when there is none, the lengths. Sequences of different
    families are never equal. None for other operands."""
    if len(args) != 2 or op not in _ORDERINGS:
        return None
    a, b = args
    family_a, family_b = _sequence_family(a), _sequence_family(b)
    if family_a is None or family_b is None:
        return None
    if family_a is not family_b:
        return ConstantVariable(op is operator.ne) if op in _EQUALITY else None
    xs, ys = list(a.items), list(b.items)
    if op in _EQUALITY and len(xs) != len(ys):
        return ConstantVariable(op is operator.ne)
    for x, y in zip(xs, ys, strict=False):
        if same_items(tx, x, y):
            continue
        if op in _EQUALITY:
            return ConstantVariable(op is operator.ne)
        return dispatch.call_operator(tx, op, [x, y])
    return ConstantVariable(op(len(xs), len(ys)))


def compare_dicts(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    """``d1 == d2`` of two traced dicts, as ``dict_richcompare``: the same keys (hash and
    equality of the key model), each pair of values the same object or equal; two
    ``OrderedDict``s also in the same order. None for other operands (a ``Counter``, a dict
    subclass with its own ``__eq__``)."""
    if len(args) != 2 or op not in _EQUALITY:
        return None
    a, b = args
    if not (isinstance(a, DictVariable) and isinstance(b, DictVariable)):
        return None
    if not all(issubclass(d.cls, _PLAIN_DICTS) and d.cls.__eq__ in _DICT_EQS for d in (a, b)):
        return None
    equal = len(a.items) == len(b.items)
    ordered = all(issubclass(d.cls, collections.OrderedDict) for d in (a, b))
    if equal and ordered:
        equal = list(a.items) == list(b.items)
    if equal:
        for key, value in list(a.items.items()):
            other = b.items.get(key)
            if other is None or not same_items(tx, value, other):
                equal = False
                break
    return ConstantVariable(equal == (op is operator.eq))


_DICT_EQS = (dict.__eq__, collections.OrderedDict.__eq__)


def compare_methods(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    """``a.f == b.g`` of two Python functions bound to objects: CPython's ``method_richcompare``,
    the same object (``is``) and the same function; of two methods found on their objects'
    classes (``xs.append == xs.append``), the same method bound to the same object."""
    if len(args) != 2 or op not in _EQUALITY:
        return None
    a, b = args
    if all(map(_bound_method, args)):
        same = a.fn is b.fn and is_same(tx, a.self_vt, b.self_vt)
        return ConstantVariable(same == (op is operator.eq))
    methods = [method_bound(v) for v in args]
    if None in methods or type(a) is not type(b):
        return None
    # C methods (``meth_richcompare``, ``wrapper_richcompare``): the same method, bound to the
    # same object
    same = methods[0] is methods[1] and is_same(tx, a.obj, b.obj)
    return ConstantVariable(same == (op is operator.eq))


def rich_equality(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    """``a == b`` / ``a != b`` with an object of a Python class (whose ``__eq__``/``__ne__`` are
    Python functions or ``object``'s) or a bound method, as CPython's ``do_richcompare``: a
    subclass's method first, then the left operand's, then the right's reflected one, each
    skipped when it gives NotImplemented; when all do, identity decides. ``object.__ne__``
    inverts ``__eq__``; ``object.__eq__`` is identity or NotImplemented; a builtin value's
    method, or a bound method's, gives NotImplemented for an object of another class. None for
    other operands (two bound methods: ``compare_methods``)."""
    if len(args) != 2 or op not in _EQUALITY:
        return None
    a, b = args
    compared = [_python_compared(v) or _bound_method(v) for v in args]
    if not any(compared) or all(map(_bound_method, args)):
        return None
    pairs = zip(compared, args, (b, a), strict=True)
    if not all(known or _builtin_value(v, other) for known, v, other in pairs):
        return None
    name = "__eq__" if op is operator.eq else "__ne__"
    type_a, type_b = a.python_type(), b.python_type()
    order = [(a, b), (b, a)]
    if type_b is not type_a and issubclass(type_b, type_a):
        order.reverse()
    for first, other in order:
        result = _rich_method(tx, first, other, name)
        if result is not None:
            return result
    return ConstantVariable(is_same(tx, a, b) == (op is operator.eq))


def _python_compared(vt: VariableTracker) -> bool:
    """A user object whose ``__eq__`` and ``__ne__`` are Python functions or ``object``'s."""
    if not isinstance(vt, UserObjectVariable) or isinstance(vt, NNModuleVariable):
        return False
    methods = [inspect.getattr_static(type(vt.value), n, None) for n in ("__eq__", "__ne__")]
    plain = (object.__eq__, object.__ne__)
    return all(isinstance(m, types.FunctionType) or m in plain for m in methods)


def _builtin_value(vt: VariableTracker, other: VariableTracker) -> bool:
    """A value of a builtin type whose ``==`` gives NotImplemented for ``other``'s class."""
    if isinstance(vt, TensorVariable) or isinstance(other, TensorVariable):
        return False
    try:
        cls, other_cls = vt.python_type(), other.python_type()
    except Unsupported:
        return False
    return (
        cls.__module__ == "builtins"
        and not issubclass(other_cls, cls)
        and (
            vt.is_python_constant()
            or isinstance(vt, (BaseSequenceVariable, DictVariable, SetVariable))
        )
    )


def _rich_method(
    tx: Translator, vt: VariableTracker, other: VariableTracker, name: str
) -> VariableTracker | None:
    """``vt.<name>(other)``, None where it gives NotImplemented."""
    if not isinstance(vt, UserObjectVariable):
        return None  # a builtin value's method, for another class
    method = inspect.getattr_static(type(vt.value), name)
    if name == "__ne__" and method is object.__ne__:
        result = _rich_method(tx, vt, other, "__eq__")
        return None if result is None else ConstantVariable(not truth(tx, result))
    if method is object.__eq__:
        return ConstantVariable(True) if is_same(tx, vt, other) else None
    result = vt.call_method(tx, name, [other], {})
    if result.is_python_constant() and result.as_python_constant() is NotImplemented:
        return None
    return result


def _bound_method(vt: VariableTracker) -> bool:
    return isinstance(vt, UserFunctionVariable) and vt.self_vt is not None


def contains(tx: Translator, container: VariableTracker, item: VariableTracker) -> bool:
    """``item in container``, answered at trace time (a jump may need it)."""
    if isinstance(container, containers.DictViewVariable):
        return containers.contains(tx, container, item)
    if isinstance(container, SetVariable):
        return lookup_key(item) in container.items
    if isinstance(container, DictVariable):
        return hash_key(item) in container.items
    if isinstance(container, BaseSequenceVariable):
        for element in container.items:  # ``element is item or element == item``, in order
            if element is item:
                return True
            if isinstance(element, TensorVariable) or isinstance(item, TensorVariable):
                raise Unsupported("data_dependent", "`in` on tensors compares their values")
            if same_items(tx, element, item):
                return True
        return False
    if (
        container.is_python_constant()
        and type(container.as_python_constant()) is range
        and not item.is_python_constant()
    ):
        return any(range_matches(tx, container.as_python_constant(), item))
    if container.is_python_constant() and item.is_python_constant():
        # computed as CPython would: its TypeError (``None in 'a,b'``, ``[1] in frozenset()``)
        # is the user's
        return tx.fold_call(operator.contains, [container, item], {}).as_python_constant()
    if type(container.as_python_constant() if container.is_python_constant() else None) is str:
        # ``str.__contains__`` reads nothing of its operand but its type: a tensor or an object
        # is CPython's TypeError (a str subclass's object would be searched for)
        cls = item.python_type()
        if not issubclass(cls, str):
            raise PythonError(
                TypeError(f"'in <string>' requires string as left operand, not {cls.__name__}")
            )
    if (
        isinstance(container, UserObjectVariable)
        and not isinstance(container, NNModuleVariable)
        and (
            isinstance(
                contains_fn := inspect.getattr_static(type(container.value), "__contains__", None),
                types.FunctionType,
            )
            or contains_fn is dict.__contains__
        )
    ):  # a Python ``__contains__`` (``Mapping``'s), inlined, or ``dict``'s (``DictReadVariable``)
        return truth(tx, container.call_method(tx, "__contains__", [item], {}))
    if (
        isinstance(container, NNModuleVariable)
        and type(container.value).__contains__ is torch.nn.ModuleDict.__contains__
    ):  # ``key in self._modules``, whose keys are guarded
        return contains(tx, container.children_dict(tx), item)
    raise Unsupported("contains", f"`in` on {container}")


# Operators: one declaration per ``operator`` function, and the rules that trace it.
#
# ``OPERATORS`` declares each operator once: the method a user object's class defines for it
# (``__add__``, inlined when the object is on the left), its reflected form (``__radd__``, asked of
# a user object on the right), and for a binary operator its in-place form (``operator.iadd``, an
# entry of its own that falls back to the binary operator). ``@operator_rule(op, ...)`` registers a
# rule for operators; ``call_operator`` tries an operator's rules in the order this file registers
# them, and the first that gives a value answers: a rule gives None where the operands are not its
# kind, and raises ``Unsupported`` where they are but the operation cannot be traced. When no rule
# answers, the operator breaks the graph.
#
# The opcode handlers (``opcodes/arith.py``) and the ``operator.*`` functions called directly
# (``call_builtin``) both come here. ``bool()``, ``is`` and ``in`` are answered by ``truth``,
# ``is_same`` and ``contains``.

#: ``rule(tx, op, args)``: the result, or None where the operands are not the rule's kind.
Rule = Callable[..., "VariableTracker | None"]


@dataclass(frozen=True)
class Operator:
    """An ``operator`` function as the tracer knows it."""

    fn: Callable[..., Any]
    #: "binary", "inplace", "comparison", "unary", "subscript", or "call" (only called directly:
    #: ``operator.truth(x)``, ``operator.setitem(d, k, v)``)
    kind: str
    dunder: str | None = None  #: the method inlined on a user object on the left
    reflected: str | None = None  #: the method inlined on a user object on the right
    binary: Callable[..., Any] | None = None  #: an in-place operator's binary form
    rules: list[Rule] = field(default_factory=list, compare=False)


OPERATORS: dict[Callable[..., Any], Operator] = {}


def _declare(fn: Callable[..., Any], kind: str, dunder: str | None = None, **facts: Any) -> None:
    assert fn not in OPERATORS, f"operator.{fn.__name__} declared twice"
    OPERATORS[fn] = Operator(fn, kind, dunder, **facts)


def _binary(fn: Callable[..., Any], dunder: str | None, reflected: str, inplace: Any) -> None:
    _declare(fn, "binary", dunder, reflected=reflected)
    _declare(inplace, "inplace", "__i" + reflected.removeprefix("__r"), binary=fn)  # ``__iadd__``


# NOTE: ``~`` and ``abs()`` inline no method of a user object (a graph break), and comparisons
# declare no reflected form (CPython asks the right operand for the swapped comparison,
# ``user_methods``).
# In-place methods (``__iadd__``) are inlined only where a user class defines them in Python.
_binary(operator.add, "__add__", "__radd__", operator.iadd)
_binary(operator.sub, "__sub__", "__rsub__", operator.isub)
_binary(operator.mul, "__mul__", "__rmul__", operator.imul)
_binary(operator.truediv, "__truediv__", "__rtruediv__", operator.itruediv)
_binary(operator.floordiv, "__floordiv__", "__rfloordiv__", operator.ifloordiv)
_binary(operator.mod, "__mod__", "__rmod__", operator.imod)
_binary(operator.pow, "__pow__", "__rpow__", operator.ipow)
_binary(operator.matmul, "__matmul__", "__rmatmul__", operator.imatmul)
_binary(operator.and_, "__and__", "__rand__", operator.iand)
_binary(operator.or_, "__or__", "__ror__", operator.ior)
_binary(operator.xor, "__xor__", "__rxor__", operator.ixor)
_binary(operator.lshift, "__lshift__", "__rlshift__", operator.ilshift)
_binary(operator.rshift, "__rshift__", "__rrshift__", operator.irshift)
_declare(operator.lt, "comparison", "__lt__")
_declare(operator.le, "comparison", "__le__")
_declare(operator.gt, "comparison", "__gt__")
_declare(operator.ge, "comparison", "__ge__")
_declare(operator.eq, "comparison", "__eq__")
_declare(operator.ne, "comparison", "__ne__")
_declare(operator.neg, "unary", "__neg__")
_declare(operator.pos, "unary", "__pos__")
_declare(operator.invert, "unary")
_declare(operator.abs, "unary")
_declare(operator.not_, "unary")
_declare(operator.getitem, "subscript", "__getitem__")
_declare(operator.truth, "call")
_declare(operator.contains, "call")
_declare(operator.is_, "call")
_declare(operator.is_not, "call")
_declare(operator.setitem, "call")
_declare(operator.delitem, "call")
_declare(operator.concat, "call")
_declare(operator.iconcat, "call")


def _of(*kinds: str) -> tuple[Callable[..., Any], ...]:
    return tuple(op for op, declared in OPERATORS.items() if declared.kind in kinds)


BINARY, INPLACE, COMPARISONS = _of("binary"), _of("inplace"), _of("comparison")
#: The operators of the operator syntax (``a + b``, ``a += b``, ``a < b``, ``-a``, ``a[k]``).
SYNTAX = _of("binary", "inplace", "comparison", "unary", "subscript")
#: ``not`` has its own rule (its operand's truth value): these operate on the operands' values.
_BY_VALUE = tuple(op for op in SYNTAX if op is not operator.not_)


def operator_rule(*ops: Callable[..., Any], first: bool = False) -> Callable[[Rule], Rule]:
    """Register ``rule`` for each of ``ops`` (declared above), after their rules so far, or
    before them (``first``: a kind of value whose operators the general rules must not see)."""

    def register(rule: Rule) -> Rule:
        for op in ops:
            rules = OPERATORS[op].rules
            assert rule not in rules, f"{rule.__name__} registered twice for {op.__name__}"
            rules.insert(0, rule) if first else rules.append(rule)
        return rule

    return register


def call_operator(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker:
    """``op(*args)`` for an operator declared in ``OPERATORS``: the first of its rules that
    answers."""
    for rule in OPERATORS[op].rules:
        result = rule(tx, op, args)
        if result is not None:
            return result
    raise Unsupported("operator", f"{op.__name__} on {', '.join(map(repr, args))}")


# -- the rules, in the order they are tried --------------------------------------------------------
@operator_rule(*_BY_VALUE)
def symbolic_numbers(
    tx: Translator, op: Any, args: list[VariableTracker]
) -> VariableTracker | None:
    """A symbolic number with numbers or tensors: a graph node (the number stays symbolic)."""
    if not any(isinstance(a, SymNodeVariable) for a in args) or not all(
        isinstance(a, (SymNodeVariable, ConstantVariable, TensorVariable)) for a in args
    ):
        return None
    if not isinstance(args[0], TensorVariable):
        # numbers are immutable: ``j += n`` is ``j + n`` (an ``iadd`` node would be generated as
        # ``add += ...``, rebinding the variable every later use of ``add`` reads)
        op = OPERATORS[op].binary or op
        _check_arithmetic_error(op, args)
    size = sum(a.size for a in args if isinstance(a, SymNodeVariable))
    if size > _LARGEST_EXPRESSION:
        args = [_specialised(a) for a in args]
        if not any(isinstance(a, SymNodeVariable) for a in args):
            return call_operator(tx, op, args)
    result = tx.output.call_function(op, tuple(args), {})
    if isinstance(result, SymNodeVariable):
        result.size = size
    return result


#: A symbolic number made of more than this many (counted with repeats: ``i = f(i) + g(i)`` in a
#: loop doubles it each time) is used at its value, guarded: torch's reasoning about an
#: expression (its value ranges, ``bound_sympy``) takes time exponential in its depth, so a loop
#: that feeds a number into itself traced for minutes. A number from tensor data has no value:
#: the trace breaks there.
_LARGEST_EXPRESSION = 64


def _specialised(vt: VariableTracker) -> VariableTracker:
    if not isinstance(vt, SymNodeVariable) or vt.size <= 1:
        return vt
    if vt.unbacked:
        raise Unsupported("data_dependent", "a number computed from tensor data grew too large")
    return ConstantVariable(vt.as_python_constant())


_ORDERING = ("__lt__", "__le__", "__gt__", "__ge__")


@operator_rule(
    *BINARY,
    *INPLACE,
    *(op for op in COMPARISONS if op not in (operator.eq, operator.ne)),
    *(op for op in _of("unary") if op is not operator.not_),
)
def unsupported(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    """An object whose class implements none of the methods the operator could call (a bound
    method implements none), with builtin values or such objects (``Plain() | 7``, ``Point(1, 2)
    < 3``, ``x |= Plain()``, ``-Plain()``, ``{0} - obj.method``): CPython's TypeError, in the
    trace."""
    error = _plain_operands_error(op, args)
    if error is not None:
        raise PythonError(error)
    return None


def _plain_operands_error(op: Any, args: list[VariableTracker]) -> Exception | None:
    """The TypeError of ``unsupported``, or None where it is not known."""
    if not any(plain_operand(a) for a in args):
        return None
    declared = OPERATORS[op]
    binary = OPERATORS[declared.binary] if declared.binary else declared
    methods = {declared.dunder, binary.dunder, binary.reflected, "__index__"} - {None}
    if declared.kind == "unary":
        methods.add(f"__{op.__name__}__")  # ``__abs__``, ``__invert__``
    if declared.kind == "comparison":
        methods.update(_ORDERING)
    return unsupported_operands(op, args, methods)


def operands_error(op: Any, args: list[VariableTracker]) -> Exception | None:
    """The TypeError CPython raises for ``op(*args)`` whatever the values (no operand implements
    it: ``unsupported``, ``refused_by_tensor``), or None where that is not known."""
    error = _plain_operands_error(op, args)
    if error is not None:
        return error
    outcome = tensor_operands_outcome(op, args)
    return outcome if isinstance(outcome, Exception) else None


@operator_rule(*BINARY, *INPLACE, *COMPARISONS)
def refused_by_tensor(
    tx: Translator, op: Any, args: list[VariableTracker]
) -> VariableTracker | None:
    """A tensor with an operand its methods do not take (``[x] < t``, ``obj == t``, ``t | {}``):
    the tensor's method, and its reflected one, give NotImplemented, so CPython asks the other
    operand and, where that declines too, answers ``==`` by identity and raises its TypeError
    otherwise. Computed on stand-ins (``tensor_operands_outcome``)."""
    result = tensor_operands_outcome(op, args)
    if isinstance(result, Exception):
        raise PythonError(result)
    return None if result is _UNKNOWN else ConstantVariable(result)


@operator_rule(operator.invert)
def invert_refused_by_dtype(
    tx: Translator, op: Any, args: list[VariableTracker]
) -> VariableTracker | None:
    """``~t`` of a plain tensor of a dtype that has no ``~`` (floating, complex): torch's
    TypeError whatever it holds, computed on a meta tensor of that dtype."""
    if not _plain_tensor(args[0]) or not (
        args[0].example.dtype.is_floating_point or args[0].example.dtype.is_complex
    ):
        return None
    try:
        operator.invert(torch.empty(0, dtype=args[0].example.dtype, device="meta"))
    except TypeError as e:
        raise PythonError(e) from None
    return None


operator_rule(operator.eq, operator.ne)(compare_ids)  # ``id(a) == id(b)``: ``a is b``
operator_rule(operator.eq, operator.ne)(compare_method_hashes)
operator_rule(*SYNTAX)(numpy_arrays.call_operator)  # a NumPy array


@operator_rule(operator.or_, operator.ior)
def dict_union(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    """``d | other`` and ``d |= other``."""
    if isinstance(args[0], DictVariable):
        return containers.dict_or(tx, op, args[0], args[1])
    return None


#: the comparison CPython asks of the right operand where the left declines (``b > a``)
_SWAPPED = {"__lt__": "__gt__", "__le__": "__ge__", "__gt__": "__lt__", "__ge__": "__le__"}
_SWAPPED |= {"__eq__": "__eq__", "__ne__": "__ne__"}
_SEQUENCES = {str, bytes, bytearray, list, tuple}


@operator_rule(*BINARY, *INPLACE, *COMPARISONS)
@operator_rule(operator.neg, operator.pos)
def user_methods(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    """A user object's operator methods written in Python, asked in CPython's order, each
    inlined; one answering NotImplemented passes to the next. ``a += b``: ``a.__iadd__(b)``,
    then ``a + b``. ``a + b``: ``a.__add__(b)``, then ``b.__radd__(a)`` where ``b``'s class is
    another (first, where it is a proper subclass of ``a``'s overriding it). ``a < b``:
    ``a.__lt__(b)``, then ``b.__gt__(a)`` (first, for a subclass); ``a == b``: ``a.__eq__(b)``,
    then ``b.__eq__(a)``, ``object.__ne__`` inverting ``__eq__``'s answer. Where all decline,
    CPython's TypeError; ``==`` and ``!=`` compare identities instead. Before the tensor rule: a
    tensor's methods decline such an object, so ``t + obj`` is ``obj.__radd__(t)`` and ``t ==
    obj`` is ``obj.__eq__(t)``. An operand whose own C method might answer (a module, a tensor
    subclass, an object a tensor takes as a number) leaves the operator to the other rules; one
    whose answer is not known after the others declined breaks the graph."""
    declared = OPERATORS[op]
    if declared.kind == "unary":
        return _user_dunder(tx, op, args)
    lhs, rhs = args
    steps = _asked_in_order(declared.binary or op, lhs, rhs)
    if declared.kind == "inplace" and _python_method(lhs, declared.dunder):
        steps = [(lhs, declared.dunder, rhs), *(steps or [_UNKNOWN_STEP])]
    if steps is None:
        return None
    for obj, name, other in steps:
        if obj is None:
            break  # a method whose answer is not known
        result = _ask(tx, obj, name, other)
        if not _not_implemented(result):
            return result
    else:
        if op in _EQUALITY:  # ``do_richcompare``'s default: identity
            return ConstantVariable(is_same(tx, lhs, rhs) == (op is operator.eq))
        sequence = any(map(_sequence, args))  # a sequence's concatenation or repeat comes next
        error = None if sequence else unsupported_operands(op, args, set())
        if error is not None:
            raise PythonError(error)
    raise Unsupported("operator", f"{op.__name__} on {lhs} and {rhs}: NotImplemented")


def _ask(
    tx: Translator, obj: VariableTracker, name: str, other: VariableTracker
) -> VariableTracker:
    """``obj.<name>(other)``, inlined; ``__ne__`` kept from ``object`` asks ``__eq__`` and
    inverts its answer (NotImplemented stays NotImplemented)."""
    if name == "__ne__" and not _python_method(obj, name):
        result = obj.call_method(tx, "__eq__", [other], {})
        return result if _not_implemented(result) else ConstantVariable(not truth(tx, result))
    return obj.call_method(tx, name, [other], {})


def _not_implemented(vt: VariableTracker) -> bool:
    return vt.is_python_constant() and vt.as_python_constant() is NotImplemented


def _asked_in_order(
    op: Any, lhs: VariableTracker, rhs: VariableTracker
) -> list[tuple[VariableTracker | None, str, VariableTracker | None]] | None:
    """The methods ``op(lhs, rhs)`` asks, in CPython's order (``binary_op1``,
    ``do_richcompare``), as (object, method, argument): each a Python method, or ``_UNKNOWN_STEP``
    where CPython would ask a method whose answer is not known (methods known to decline are
    left out). None where none is a Python method, or where the left operand's own C method
    may answer."""
    declared = OPERATORS[op]
    name = declared.dunder
    reflected = declared.reflected or _SWAPPED.get(name)
    comparison = declared.kind == "comparison"
    lcls, rcls = _python_class(lhs), _python_class(rhs)
    left = _step(lhs, lcls, name, rhs)
    right = _step(rhs, rcls, reflected, lhs) if comparison or lcls is not rcls else []
    if not any(step[0] is not None for step in (left or []) + (right or [])):
        return None
    if left is None:
        if not _c_method_declines(lhs, rcls, op):
            return None  # the left operand's own method first, and it may answer
        left = []
    if right is None:
        right = [] if _c_method_declines(rhs, lcls, op) else [_UNKNOWN_STEP]
    subclass = lcls is not None and rcls is not None and rcls is not lcls
    if subclass and right and issubclass(rcls, lcls):
        if comparison or inspect.getattr_static(lcls, reflected, None) is not (
            inspect.getattr_static(rcls, reflected)
        ):
            return right + left
    return left + right


_UNKNOWN_STEP = (None, "", None)


def _sequence(vt: VariableTracker) -> bool:
    try:
        return not _SEQUENCES.isdisjoint(vt.python_type().__mro__)
    except Unsupported:
        return True  # not known: maybe one


def _step(
    vt: VariableTracker, cls: type | None, name: str | None, other: VariableTracker
) -> list[tuple[VariableTracker | None, str, VariableTracker | None]] | None:
    """What asking ``vt`` (of the Python class ``cls``) for its method ``name`` is: the method
    inlined, nothing (``object``'s, or none: NotImplemented) or ``_UNKNOWN_STEP``; None where
    ``vt`` is no such object."""
    if cls is None:
        return None
    if name is None:
        return [_UNKNOWN_STEP]
    defined = _defined_below_object(cls, name)
    if name == "__ne__" and not defined:  # ``object.__ne__``: ``__eq__``'s answer inverted
        asks = _step(vt, cls, "__eq__", other)
        return [(vt, name, other)] if asks and asks[0][0] is not None else asks
    if not defined:
        return []
    return [(vt, name, other)] if _python_method(vt, name) else [_UNKNOWN_STEP]


def _defined_below_object(cls: type, name: str) -> bool:
    return any(name in vars(base) for base in cls.__mro__ if base is not object)


def _python_class(vt: VariableTracker) -> type | None:
    """The class of a user object made of Python classes only (no builtin base but ``object``),
    whose operator methods are its class's Python functions or ``object``'s."""
    if not isinstance(vt, UserObjectVariable) or isinstance(vt, NNModuleVariable):
        return None
    cls = type(vt.value)
    heap = all(base is object or base.__flags__ & _HEAP_TYPE for base in cls.__mro__)
    return cls if heap else None


_HEAP_TYPE = 1 << 9  #: ``Py_TPFLAGS_HEAPTYPE``: a class made by a class statement


def _names_of(cls: type) -> set[str]:
    return {name for base in cls.__mro__ for name in vars(base)}


def _c_method_declines(vt: VariableTracker, cls: type | None, op: Any) -> bool:
    """Whether ``vt``'s own (C) method for ``op`` gives NotImplemented for an object of the
    Python class ``cls``: a plain tensor's (unless ``cls`` makes it a number or an array, or
    overrides torch functions), a builtin value's (a string's ``%`` formats it instead), and for
    ``==``/``!=`` ``object``'s own (NotImplemented for another object: a module's, an
    exception's)."""
    if cls is None:
        return False
    if op in _EQUALITY and identity_compared(vt):
        return True
    if isinstance(vt, TensorVariable):
        return vt.python_type() is torch.Tensor and _TENSOR_PROTOCOLS.isdisjoint(_names_of(cls))
    try:
        kind = vt.python_type()
    except Unsupported:
        return False
    if kind in (str, bytes) and op is operator.mod:
        return False
    builtin = kind.__module__ == "builtins" and not kind.__flags__ & _HEAP_TYPE
    return builtin and (vt.is_python_constant() or isinstance(vt, _CONTAINERS))


operator_rule(*BINARY, *INPLACE, *COMPARISONS)(containers.set_operator)  # a set or a dict view


@operator_rule(*_BY_VALUE)
def tensor_operator(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    """An operator on a tensor: a graph node."""
    if not any(isinstance(a, TensorVariable) for a in args):
        return None
    if op is operator.getitem:
        return getitem_tensor(tx, args[0], args[1])
    return tx.output.call_function(op, tuple(args), {})


@operator_rule(*SYNTAX)
def constants(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    """Constant operands: folded (comparisons never mutate: on constant containers too). A
    symbolic operand is seen first: asking an input list whether it is constant reads it all."""
    if (
        not any(isinstance(a, SymNodeVariable) for a in args)
        and all(a.is_python_constant() for a in args)
        and (op in COMPARISONS or not _mutable(args))
        and not any(is_symbolic(a) for a in args)
    ):
        return tx.fold_call(op, args, {})  # ``(t, t)[0] is t``: the object given back
    return None


@operator_rule(operator.getitem)
def subscript(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker:
    return dispatch.getitem(tx, args[0], args[1])  # a family's rule for its trackers first


@operator_rule(*INPLACE)
def in_place(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker:
    """``a += b``: a list extended or repeated in place, anything else ``a = a + b`` (a user
    object's Python ``__iadd__``: ``user_methods``)."""
    if isinstance(args[0], ListVariable) and op is operator.iadd:
        return call_container_method(tx, args[0], "extend", [args[1]], {}) and args[0]
    if isinstance(args[0], ListVariable) and op is operator.imul:
        count = _known_type(args[1])
        if count and type_lookup(count, "__index__") is MISSING:  # the syntax's own TypeError
            name = containers.c_name(count)
            raise PythonError(TypeError(f"can't multiply sequence by non-int of type '{name}'"))
        return call_container_method(tx, args[0], "__imul__", [args[1]], {})
    return call_operator(tx, OPERATORS[op].binary, args)


@operator_rule(operator.not_)
def not_(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker:
    """``not value``: its truth value, inverted (a tensor's would need its data, unless it is
    ambiguous whatever it holds)."""
    if isinstance(args[0], TensorVariable):
        if (error := _ambiguous_tensor_truth(args[0])) is not None:
            raise PythonError(error)
        raise Unsupported(
            "data_dependent",
            "`not` on a tensor needs its value",
            hint="use torch.logical_not or keep the condition a tensor",
        )
    return ConstantVariable(not truth(tx, args[0]))


@operator_rule(operator.add, operator.iadd)
def texts(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    """``s + t`` of strings one of which is made after the graph (``TextVariable``): one too."""
    if not any(isinstance(a, TextVariable) for a in args):
        return None
    if not all(isinstance(a, TextVariable) or a.python_type() is str for a in args):
        return None
    return joined_text(args)


@operator_rule(operator.mod, operator.imod, first=True)
def percent_format(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    """``fmt % args`` of a string and values not all known at trace time (a tensor, a tuple
    holding one): str's own formatting, whatever ``args`` is, unless it is a ``str`` subclass's
    object (whose ``__rmod__`` CPython asks first); the texts it writes are the traced ones."""
    fmt, values = args
    try:  # the types first: asking a symbolic number for its value would specialise it
        if fmt.python_type() is not str or not fmt.is_python_constant():
            return None
        kind = values.python_type()
    except Unsupported:
        return None
    if isinstance(values, ConstantVariable) or (issubclass(kind, str) and kind is not str):
        return None  # folded; a ``str`` subclass's ``__rmod__`` first
    return percent_formatted(tx, fmt.as_python_constant(), values)


@operator_rule(operator.add, operator.mul)
def deques(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    """``d + e`` and ``d * n`` (or ``n * d``) of a deque, deque's own: a copy of ``d`` (made by
    calling its class, for an object of a user deque class: CPython's ``deque_copy``), extended
    by the deque ``e`` or repeated, within its ``maxlen``; a deque with a list breaks. With a
    user object, its ``__radd__`` or ``__mul__`` decides (``user_methods``)."""
    if not any(isinstance(a, DequeVariable) for a in args):
        return None
    if any(isinstance(a, UserObjectVariable) for a in args):
        return None
    lhs, rhs = args if isinstance(args[0], DequeVariable) else args[::-1]
    both = isinstance(lhs, DequeVariable) and isinstance(rhs, DequeVariable)
    if op is operator.add and both and lhs is args[0]:
        made = call_container_method(tx, lhs, "copy", [], {})
        call_container_method(tx, made, "extend", [rhs], {})
        return made
    if op is operator.mul and not both and rhs.is_python_constant():
        if type(rhs.as_python_constant()) in (int, bool):
            made = call_container_method(tx, lhs, "copy", [], {})
            return call_container_method(tx, made, "__imul__", [rhs], {})
    raise Unsupported("operator", f"{op.__name__} on {args[0]} and {args[1]}")


@operator_rule(operator.add, operator.mul)
def sequences(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    """``+`` and ``*`` of a list or tuple; with a user object defining the operator's methods,
    those are asked (``user_methods``: CPython tries them before the sequence's own)."""
    if not any(isinstance(a, BaseSequenceVariable) for a in args):
        return None
    methods = (OPERATORS[op].dunder, OPERATORS[op].reflected)
    if any(
        isinstance(a, UserObjectVariable) and any(_defines(type(a.value), m) for m in methods)
        for a in args
    ):
        return None
    return _sequence_op(tx, op, args)


operator_rule(*COMPARISONS)(compare_sequences_as_cpython)  # items compared identity first
operator_rule(operator.eq, operator.ne)(compare_dicts)
operator_rule(operator.eq, operator.ne)(rich_equality)
operator_rule(operator.eq, operator.ne)(compare_methods)


@operator_rule(operator.eq, operator.ne, first=True)
def data_pointers(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    """``a.data_ptr() == b.data_ptr()``: known where ``DataPtrVariable.equal`` says; else it
    needs the numbers, which the graph's run gives (a break)."""
    if len(args) != 2 or not any(isinstance(a, DataPtrVariable) for a in args):
        return None
    lhs, rhs = args
    if isinstance(lhs, DataPtrVariable) and isinstance(rhs, DataPtrVariable):
        equal = lhs.equal(rhs)
        if equal is not None:
            return ConstantVariable(equal is (op is operator.eq))
    raise Unsupported("data_ptr", f"{op.__name__} of {lhs} and {rhs}, known after the graph")


@operator_rule(operator.eq, operator.ne)
def same_object(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    """``a == b`` of non-constants known to be the same object, or known not to be where neither
    class compares by value (a list, a set, a tensor do: two of them may be equal)."""
    if len(args) != 2 or _comparable(args):
        return None
    by_value = any(_compares_by_value(a) for a in args)
    if (by_value and args[0] is not args[1]) or isinstance(args[0], UserObjectVariable):
        return None
    same = is_same(tx, args[0], args[1])
    return ConstantVariable(same if op is operator.eq else not same)


@operator_rule(operator.eq, operator.ne)
def identity_equality(
    tx: Translator, op: Any, args: list[VariableTracker]
) -> VariableTracker | None:
    if len(args) == 2 and _identity_equality(args):
        same = is_same(tx, args[0], args[1])
        return ConstantVariable(same if op is operator.eq else not same)
    return None


@operator_rule(operator.eq, operator.ne)
def derived_equality(
    tx: Translator, op: Any, args: list[VariableTracker]
) -> VariableTracker | None:
    return _derived_equality(tx, op, args[0], args[1]) if len(args) == 2 else None


@operator_rule(operator.eq, operator.ne)
def namespaces(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    """``types.SimpleNamespace`` objects: equal when their attribute dicts are; with anything
    else CPython's comparison gives NotImplemented both ways, so only identity counts."""
    if len(args) != 2:
        return None
    dicts = [objects.namespace_dict(tx, a) for a in args]
    if all(d is not None for d in dicts):
        return call_operator(tx, op, dicts)
    if any(d is not None for d in dicts) and any(
        isinstance(a, ConstantVariable) and type(a.value) in _BUILTIN_VALUES for a in args
    ):
        return ConstantVariable(op is operator.ne)
    return None


@operator_rule(operator.eq, operator.ne, first=True)
def mapping_proxies(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    """A mappingproxy compares as the mapping it shows (CPython's ``mappingproxy_richcompare``;
    a dict or another proxy on the other side asks it back)."""
    if len(args) != 2 or not any(isinstance(a, containers.MappingProxyVariable) for a in args):
        return None
    shown = [a.mapping if isinstance(a, containers.MappingProxyVariable) else a for a in args]
    return call_operator(tx, op, shown)


@operator_rule(operator.eq, operator.ne)
def builtin_types_apart(
    tx: Translator, op: Any, args: list[VariableTracker]
) -> VariableTracker | None:
    """A list, tuple, dict or set (comparing with its builtin type's ``__eq__``) and a number, a
    string or None: each side's ``__eq__`` gives NotImplemented for the other, so identity
    decides, and they are never equal (``[t] == 3``, ``d != None``)."""
    if len(args) != 2:
        return None
    a, b = args
    if (_builtin_compared(a) and _scalar(b)) or (_builtin_compared(b) and _scalar(a)):
        return ConstantVariable(op is operator.ne)
    return None


#: the builtin containers' own comparisons
_CONTAINER_EQS = frozenset((cls.__eq__, cls.__ne__) for cls in (list, tuple, dict, set, frozenset))


def _builtin_compared(vt: VariableTracker) -> bool:
    if not isinstance(vt, (BaseSequenceVariable, DictVariable, SetVariable)):
        return False
    cls = vt.python_type()
    return (type_lookup(cls, "__eq__"), type_lookup(cls, "__ne__")) in _CONTAINER_EQS


def _scalar(vt: VariableTracker) -> bool:
    return isinstance(vt, ConstantVariable) and type(vt.value) in _BUILTIN_VALUES


@operator_rule(*BINARY, *INPLACE, *COMPARISONS, operator.neg, operator.pos, first=True)
def python_dict_operators(
    tx: Translator, op: Any, args: list[VariableTracker]
) -> VariableTracker | None:
    """An operator of a dict whose class writes its method in Python, on the left (``Counter``'s
    ``__or__``, ``__iadd__``, ``__eq__``..., of a ``Counter`` or of an object of a subclass):
    that method inlined, never dict's meaning of the operator; where it gives NotImplemented the
    graph breaks (CPython would ask the right operand next)."""
    if not isinstance(args[0], DictVariable) or OPERATORS[op].dunder is None:
        return None
    method = type_lookup(args[0].python_type(), OPERATORS[op].dunder)
    if not isinstance(method, types.FunctionType):
        return None
    result = dispatch.call(tx, tx.wrap_static(method), list(args), {})
    if result.is_python_constant() and result.as_python_constant() is NotImplemented:
        raise Unsupported("operator", f"{op.__name__} on {args[0]!r}: NotImplemented")
    return result


@operator_rule(operator.eq, operator.ne)
def user_equality(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    """A user object's ``__eq__``/``__ne__`` on the left, inlined."""
    return _user_dunder(tx, op, args)


@operator_rule(operator.truth)
def truth_fn(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker:
    return ConstantVariable(truth(tx, *args))


@operator_rule(operator.contains)
def contains_fn(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker:
    return ConstantVariable(contains(tx, *args))


@operator_rule(operator.is_, operator.is_not)
def is_fn(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker:
    return ConstantVariable(is_same(tx, *args) == (op is operator.is_))


operator_rule(operator.concat, operator.iconcat)(constants)  # strings, bytes, tuples of constants


@operator_rule(operator.concat, operator.iconcat)
def concat(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    """``operator.concat(a, b)`` and ``operator.iconcat(a, b)`` (CPython's ``PySequence_Concat``
    / ``PySequence_InPlaceConcat``: a list's or tuple's own concatenation, which asks ``b``
    nothing): a list extended in place by any iterable, two lists or two tuples joined; with an
    operand that cannot take part, CPython's TypeError."""
    sequences = (ListVariable, TupleVariable)
    if len(args) != 2:
        return None
    seq, other = args
    kind = _concat_kind(seq) if isinstance(seq, sequences) else None
    if op is operator.iconcat and kind is list:
        return call_container_method(tx, seq, "extend", [other], {}) and seq
    if kind in (list, tuple) and isinstance(other, sequences) and _concat_kind(other) is kind:
        return _sequence_op(tx, operator.add, args)
    error = _sequence_error(tx, op, args)
    if error is not None:
        raise PythonError(error)
    return None


def _concat_kind(vt: VariableTracker) -> type:
    """The type whose concatenation ``vt`` takes part in: ``list`` for an object of a user list
    class (which keeps list's), else its own type."""
    return list if isinstance(vt, objects.ListObjectVariable) else vt.python_type()


@operator_rule(operator.setitem)
def setitem_fn(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    """``operator.setitem(obj, key, value)``: ``obj[key] = value`` (``STORE_SUBSCR``), whose
    family's rule runs a class's own ``__setitem__``."""
    if len(args) != 3:
        return None
    dispatch.setitem(tx, *args)
    return ConstantVariable(None)


@operator_rule(operator.delitem)
def delitem_fn(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    """``del obj[key]`` (``DELETE_SUBSCR``) and ``operator.delitem(obj, key)``: one rule."""
    if len(args) != 2:
        return None
    dispatch.delitem(tx, *args)
    return ConstantVariable(None)


#: What decides whether an operand's type takes part in an operator, beyond the operator's own
#: methods: ``*`` of a sequence takes an integer (``__index__``), ``+`` of bytes and the orderings
#: of a bytearray take a buffer (``__buffer__``).
_ORDERING_OPS = (operator.lt, operator.le, operator.gt, operator.ge)
_TAKING_PART = ("__index__", "__buffer__")


def _deciding_methods(op: Any) -> tuple[str, ...]:
    declared = OPERATORS[op]
    if declared.kind == "comparison":
        return (*_ORDERING, *_TAKING_PART)
    return (declared.dunder, declared.reflected, *_TAKING_PART)


@operator_rule(*(op for op in BINARY if op is not operator.mod), *_ORDERING_OPS)
def declined_by_types(
    tx: Translator, op: Any, args: list[VariableTracker]
) -> VariableTracker | None:
    """Operands no rule above combines whose types decline each other (``frozenset({0}) & {'a':
    1}``, ``{} | [x]``, ``map(f, xs) < 3``, ``zip(a, b) * 2``, ``chain_map >= 0.5``): CPython
    asks the left operand's method, then the right's reflected one (``binary_op1``,
    ``do_richcompare``), each absent or giving NotImplemented by the other's type alone, and
    raises its TypeError. Computed on stand-ins of the operands' types (``_stand_in``), never
    on their values. ``%`` is left out: a string's formatting fails or not on the items."""
    values = [_stand_in(a, _deciding_methods(op)) for a in args]
    if any(v is _UNKNOWN for v in values):
        return None
    try:
        op(*values)
    except TypeError as e:
        raise PythonError(e) from None
    except Exception:  # a stand-in's value (a number standing for a symbolic one): not known
        return None
    return None


@operator_rule(operator.eq, operator.ne)
def declined_equality(
    tx: Translator, op: Any, args: list[VariableTracker]
) -> VariableTracker | None:
    """``a == b`` (``!=``) where each type's method gives NotImplemented for the other's type
    (``iter(xs) == 7``, ``map(f, xs) != (1, 2)``, ``d.values() == None``): CPython's default,
    identity (``do_richcompare``), which never raises. Decided on stand-ins of the types."""
    name = OPERATORS[op].dunder
    values = [_stand_in(a, ("__eq__", "__ne__", "__buffer__")) for a in args]
    if len(args) != 2 or any(v is _UNKNOWN for v in values):
        return None
    a, b = values
    if getattr(type(a), name)(a, b) is not NotImplemented:
        return None
    if getattr(type(b), name)(b, a) is not NotImplemented:
        return None
    return ConstantVariable(is_same(tx, args[0], args[1]) == (op is operator.eq))


assert all(declared.rules for declared in OPERATORS.values()), "an operator without rules"


# -- helpers of the rules --------------------------------------------------------------------------
_BUILTIN_VALUES = (type(None), bool, int, float, complex, str, bytes)


def _python_method(vt: VariableTracker, name: str) -> bool:
    """A user object (not a module) whose class defines ``name`` in Python."""
    if not isinstance(vt, UserObjectVariable) or isinstance(vt, NNModuleVariable):
        return False
    return isinstance(inspect.getattr_static(type(vt.value), name, None), types.FunctionType)


def _python_eq(vt: VariableTracker) -> bool:
    """A user object whose class defines ``__eq__`` in Python but keeps ``object.__ne__``."""
    if not isinstance(vt, UserObjectVariable):
        return False
    cls = type(vt.value)
    return isinstance(inspect.getattr_static(cls, "__eq__"), types.FunctionType) and (
        cls.__ne__ is object.__ne__
    )


def _derived_equality(
    tx: Translator, op: Any, a: VariableTracker, b: VariableTracker
) -> VariableTracker | None:
    """``a != b`` where ``a``'s class defines only ``__eq__`` (``object.__ne__`` inverts it), and
    ``a == b`` / ``a != b`` where only ``b``'s class defines ``__eq__`` (``a``'s ``object.__eq__``
    gives NotImplemented, so CPython asks ``b``): None where the rules do not apply."""
    if _python_eq(a) and op is operator.ne:
        first, other = a, b
        if _python_eq(b) and type(b.value) is not type(a.value):
            if issubclass(type(b.value), type(a.value)):  # CPython asks the subclass first
                first, other = b, a
        result = first.call_method(tx, "__eq__", [other], {})
    elif _identity_equality([a, a]) and _python_eq(b):
        if is_same(tx, a, b):
            return ConstantVariable(op is operator.eq)
        result = b.call_method(tx, "__eq__", [a], {})
    else:
        return None
    if result.is_python_constant() and result.as_python_constant() is NotImplemented:
        return None
    if op is operator.eq:
        return result
    return ConstantVariable(not truth(tx, result))


def _identity_equality(args: list[VariableTracker]) -> bool:
    """``a == b`` / ``a != b`` that CPython answers with ``a is b``: an object whose class keeps
    ``object.__eq__``/``__ne__`` (a wrapper descriptor: ``MyCls() == None``), compared with such an
    object or a builtin value (whose ``__eq__`` gives NotImplemented for other types)."""

    def plain_object(vt: VariableTracker) -> bool:
        if not isinstance(vt, UserObjectVariable):
            return False
        cls = type(vt.value)
        return cls.__eq__ is object.__eq__ and cls.__ne__ is object.__ne__

    def plain(vt: VariableTracker) -> bool:
        return plain_object(vt) or (
            isinstance(vt, ConstantVariable) and type(vt.value) in _BUILTIN_VALUES
        )

    return any(plain_object(a) for a in args) and all(plain(a) for a in args)


def _compares_by_value(vt: VariableTracker) -> bool:
    """Whether ``vt``'s class has an ``==`` of its own (two distinct objects may be equal)."""
    try:
        vt.python_type()
    except Unsupported:
        return False
    return not identity_compared(vt)


def is_symbolic(vt: VariableTracker) -> bool:
    """Does ``vt`` hold a symbolic value (folding it would specialise it)?"""
    if isinstance(vt, SymNodeVariable):
        return True
    return isinstance(vt, (TupleVariable, ListVariable)) and any(is_symbolic(i) for i in vt.items)


def _comparable(args: list[VariableTracker]) -> bool:
    return all(a.is_python_constant() for a in args)


_DIVISIONS = frozenset({operator.truediv, operator.floordiv, operator.mod})


def _check_arithmetic_error(op: Any, args: list[VariableTracker]) -> None:
    """Symbolic numbers are computed inside the graph, after which the trace's side effects are
    replayed: a ``ZeroDivisionError`` raised there would skip the mutations that, in Python,
    happened before it. So decide at trace time (guarded: ``Ne(s0 - 5, 0)``) whether the operation
    raises, and when it does, run it in Python (a graph break) like the same error on constants."""
    if len(args) != 2 or isinstance(args[1], TensorVariable):
        return
    lhs, rhs = (a.value if isinstance(a, SymNodeVariable) else a.as_python_constant() for a in args)
    if op in _DIVISIONS:
        raises = bool(rhs == 0)
    elif op is operator.pow:
        raises = bool(rhs < 0) and bool(lhs == 0)
    else:
        return
    if raises:
        raise Unsupported("python_error", f"{op.__name__} raises ZeroDivisionError here")


def _mutable(args: list[VariableTracker]) -> bool:
    return any(isinstance(a, (ListVariable, DictVariable, SetVariable)) for a in args)


def _fold(tx: Translator, op: Any, values: list[Any]) -> VariableTracker:
    try:
        result = op(*values)
    except Exception as e:
        raise PythonError(e) from None
    return tx.fold(result)


def _sequence_op(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker:
    """``+`` and ``*`` of lists and tuples (a namedtuple gives a plain tuple, a Size a Size)."""
    lhs, rhs = args
    if op is operator.mul and isinstance(rhs, BaseSequenceVariable):
        lhs, rhs = rhs, lhs  # 3 * [x]
    if op is operator.add and (
        (isinstance(lhs, ListVariable) and isinstance(rhs, ListVariable))
        or (isinstance(lhs, TupleVariable) and isinstance(rhs, TupleVariable))
    ):
        if _exact_tuple(lhs) and _exact_tuple(rhs) and not (lhs.items and rhs.items):
            return rhs if not lhs.items else lhs  # CPython gives back the other tuple itself
        items = [*lhs.items, *rhs.items]
    elif (
        op is operator.mul
        and rhs.is_python_constant()
        and type(rhs.as_python_constant()) in (int, bool)
    ):
        if _exact_tuple(lhs) and (rhs.as_python_constant() == 1 or not lhs.items):
            return lhs  # CPython gives back the tuple itself
        items = list(lhs.items) * rhs.as_python_constant()
    else:
        error = _sequence_error(tx, op, args)
        if error is not None:
            raise PythonError(error)
        raise Unsupported("operator", f"{op.__name__} on {lhs} and {rhs}")
    if isinstance(lhs, ListVariable):
        return ListVariable(items)
    if lhs.is_size or (op is operator.add and rhs.is_size):
        # ``torch.Size`` defines ``__add__`` and ``__radd__``: ``(1,) + size`` is a Size too
        return TupleVariable(_size_items(items), is_size=True)
    return TupleVariable(items)


def _size_items(items: list[VariableTracker]) -> list[VariableTracker]:
    """The items of the ``torch.Size`` made of ``items``, as ``torch.Size(...)`` takes them: a
    symbolic int kept, a constant by its index (``True`` -> 1), CPython's TypeError for one it
    refuses (``size + (1.5,)``); an item known only at run time (a tensor's ``__index__``)
    breaks."""
    values = []
    for vt in items:
        if isinstance(vt, SymNodeVariable) and vt.python_type() is int:
            values.append(0)  # a stand-in: torch.Size takes any int
        elif vt.is_python_constant() and not is_symbolic(vt) and not _mutable([vt]):
            values.append(vt.as_python_constant())
        else:
            raise Unsupported("operator", f"a torch.Size of {vt}, an item known at run time only")
    if not all(isinstance(v, (int, float, complex, str, bytes, type(None))) for v in values):
        raise Unsupported("operator", "a torch.Size of an item whose __index__ may run user code")
    try:
        size = torch.Size(values)
    except TypeError as e:
        raise PythonError(e) from None
    return [
        vt if isinstance(vt, SymNodeVariable) or v is index else ConstantVariable(index)
        for vt, v, index in zip(items, values, size, strict=True)
    ]


#: The methods that decide whether an operand takes part, beyond the operator's own: ``*`` takes
#: an integer (``__index__``), ``operator.concat`` a sequence (``__getitem__``).
_SEQUENCE_METHODS = {
    operator.add: ("__add__", "__radd__"),
    operator.mul: ("__mul__", "__rmul__", "__index__"),
    operator.concat: ("__add__", "__radd__", "__getitem__"),
    operator.iconcat: ("__add__", "__radd__", "__iadd__", "__getitem__"),
}


def _sequence_error(tx: Translator, op: Any, args: list[VariableTracker]) -> Exception | None:
    """CPython's TypeError for ``+``, ``*`` or ``operator.concat`` of a list or tuple with an
    operand that cannot take part (``[x] + 1``, ``[x] * 1.5``, ``len * (x,)``,
    ``operator.concat(7, [x])``), or None where that is not known. The error depends only on the
    operands' types: CPython's own, from the operator run on stand-ins (``_stand_in``)."""
    values = [_stand_in(vt, _SEQUENCE_METHODS[op]) for vt in args]
    if any(v is _UNKNOWN for v in values):
        return None
    try:
        op(*values)
    except TypeError as e:
        return e
    return None


_UNKNOWN = object()


def _stand_in(vt: VariableTracker, methods: tuple[str, ...]) -> Any:
    """What ``vt`` is for an operation whose outcome depends only on its type: an empty builtin
    container of its type (of a class of the same name over that builtin container, for a
    subclass written in Python defining none of ``methods``), its value where it is an
    immutable constant, a number of its type for a symbolic one, else an instance of an empty
    class of the same C name where its type defines none of ``methods`` below ``object`` and
    holds no buffer; ``_UNKNOWN`` otherwise (a tensor, a class defining one of them)."""
    builtin_types = (ListVariable, TupleVariable, DictVariable, SetVariable)
    if isinstance(vt, builtin_types) and vt.python_type() in _EMPTY_CONTAINERS:
        return vt.python_type()()
    if vt.is_python_constant() and not _mutable([vt]) and not is_symbolic(vt):
        value = vt.as_python_constant()
        if not any(_python_defined(type(value), m) for m in methods):
            return value  # what the operator calls on it is C code: no user code runs
    try:
        cls = vt.python_type()
    except Unsupported:
        return _UNKNOWN
    if isinstance(vt, SymNodeVariable):
        return cls() if cls in (int, float, bool) else _UNKNOWN
    if isinstance(vt, TensorVariable) or _holds_buffer(vt, cls):
        return _UNKNOWN
    if cls in _EMPTY_VIEWS and _COMPARED.intersection(methods):
        return _EMPTY_VIEWS[cls]()  # compares with another set or view only, else declines
    # the C type whose slots the object has: a builtin container, or a C subclass of one
    # (``OrderedDict``, ``defaultdict``), with classes (written in Python) defining none of them
    solid = next((k for k in cls.__mro__ if k.__flags__ & _IMMUTABLE_TYPE), object)
    others = [k for k in cls.__mro__ if k not in solid.__mro__]
    if issubclass(solid, _EMPTY_CONTAINERS) and not any(
        m in vars(k) for k in others for m in methods
    ):
        kind = type(containers.c_name(cls), (solid,), {}) if others else solid
        try:
            return kind()
        except Exception:
            return _UNKNOWN  # a C type made with arguments only
    if any(_defined_below_object(cls, m) for m in methods):
        return _UNKNOWN
    return type(containers.c_name(cls), (), {})()


#: The builtin containers a stand-in of which is made empty (their operators' outcomes for another
#: type depend on the types alone).
_EMPTY_CONTAINERS = (list, tuple, dict, set, frozenset)
#: ``Py_TPFLAGS_IMMUTABLETYPE``: a type written in C (static, or a heap type of a C module:
#: ``defaultdict`` from 3.12), never a class statement's
_IMMUTABLE_TYPE = 1 << 8
#: Dict views whose comparisons (``d.keys() < {1}``) a stand-in makes, empty: a set operator of one
#: (``d.items() - xs``) reads its items first (their hashes), so it has none.
_EMPTY_VIEWS = {type({}.keys()): {}.keys, type({}.items()): {}.items}
_COMPARED = frozenset(("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"))


def _holds_buffer(vt: VariableTracker, cls: type) -> bool:
    """Whether ``vt`` may give a buffer (which ``bytes + x`` and a bytearray's orderings take):
    its type defines ``__buffer__`` (from 3.12 every C buffer does), is a builtin buffer type,
    or the real object it stands for gives one."""
    if _defines(cls, "__buffer__") or issubclass(cls, _BUFFERS):
        return True
    value = getattr(vt, "value", None) if isinstance(vt, UserObjectVariable) else None
    if value is None:
        return False
    try:
        memoryview(value).release()
    except TypeError:
        return False
    return True


_BUFFERS = (bytes, bytearray, memoryview, array.array)


#: What makes torch's argument parsing take an object where a tensor method expects a tensor or a
#: number (or makes the result depend on the tensor's value: ``__index__`` in ``[x] * t``).
_TENSOR_PROTOCOLS = frozenset(
    {
        "__torch_function__",
        "__torch_dispatch__",
        "__index__",
        "__int__",
        "__float__",
        "__complex__",
        "__array__",
        "__array_ufunc__",
        "__array_function__",
    }
)


def _declines(self: Any, other: Any) -> Any:
    return NotImplemented


@functools.cache
def _tensor_stand_in_class(name: str) -> type:
    """A class named as a tensor's whose operator methods all give NotImplemented, as a tensor's
    do for an operand they do not take (it has no ``__divmod__``, as a tensor has none)."""
    names = {"__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"}
    for declared in OPERATORS.values():
        if declared.kind in ("binary", "inplace"):
            names.update(n for n in (declared.dunder, declared.reflected) if n)
    return type(name, (), {**dict.fromkeys(names, _declines), "__hash__": object.__hash__})


def _tensor_stand_in(tensor: VariableTracker) -> Any:
    return _tensor_stand_in_class(tensor.python_type().__name__)()


def _plain_tensor(vt: VariableTracker) -> bool:
    return isinstance(vt, TensorVariable) and vt.python_type() in (torch.Tensor, torch.nn.Parameter)


def _refused_stand_in(vt: VariableTracker, methods: set[str], numbers: bool) -> Any:
    """What an operand a tensor's methods do not take stands for in ``tensor_operands_outcome``
    (``_UNKNOWN`` where the tensor may take it, or its own methods could run Python code): a
    builtin value other than a number (a container: an empty one of its type, whose methods give
    NotImplemented for a tensor whatever it holds), an object of Python classes defining none of
    ``methods`` nor a protocol torch reads (an instance of an empty class of its name), a bound
    method. A number too where the tensor has no method for the operator (not ``numbers``)."""
    if isinstance(vt, TensorVariable | SymNodeVariable) or is_symbolic(vt):
        return _UNKNOWN
    if isinstance(vt, UserObjectVariable) and not isinstance(vt, NNModuleVariable):
        cls = vt.python_type()
        names = methods | _TENSOR_PROTOCOLS
        if all(
            base is object or (type(base) is type and not names & vars(base).keys())
            for base in cls.__mro__
        ):
            return type(cls.__name__, (), {})()
        return _UNKNOWN
    if is_bound_method(vt):
        return _METHOD_STAND_IN
    builtin_types = (ListVariable, TupleVariable, DictVariable, SetVariable)
    if isinstance(vt, builtin_types) and vt.python_type() in (list, tuple, dict, set, frozenset):
        return vt.python_type()()
    if vt.is_python_constant():
        value = vt.as_python_constant()
        cls = type(value)
        if cls.__module__ == "builtins" and not (numbers and cls in (bool, int, float, complex)):
            return value
    return _UNKNOWN


def tensor_operands_outcome(op: Any, args: list[VariableTracker]) -> Any:
    """``op(a, b)`` (a binary operator, a comparison or ``divmod``) of a plain tensor and an operand
    its methods do not take: the outcome CPython gives, the same whatever the tensor holds (the
    TypeError it raises, or ``==``'s identity answer), or ``_UNKNOWN``. Run on stand-ins: the
    tensor an object whose methods all decline; a sequence repeated (``*``) reads the tensor's
    ``__index__`` (``_index_outcome``); a string formatted with ``%`` by the tensor (which reads it
    as a mapping) is left out."""
    n_tensors = sum(map(_plain_tensor, args)) if len(args) == 2 else 0
    if op is divmod and n_tensors == 2:  # a tensor has neither ``__divmod__`` nor ``__rdivmod__``
        return error_of(divmod, *(_tensor_stand_in(a) for a in args))
    if n_tensors != 1:
        return _UNKNOWN
    tensor, other = args if _plain_tensor(args[0]) else args[::-1]
    declared = OPERATORS.get(op)
    binary = OPERATORS[declared.binary] if declared and declared.binary else declared
    if declared is None:
        methods = {f"__{op.__name__}__", f"__r{op.__name__}__"}
    else:
        methods = {declared.dunder, binary.dunder, binary.reflected} - {None}
        if declared.kind == "comparison":
            methods.update(_ORDERING, ("__eq__", "__ne__"))
    value = _refused_stand_in(other, methods, numbers=op is not divmod)
    if value is _UNKNOWN:
        return _UNKNOWN
    base = binary.fn if binary else op
    if base is operator.mul and isinstance(value, (list, tuple, str, bytes)):
        if args[0] is tensor and op is not base:
            return _UNKNOWN  # ``t *= xs``: a tensor is a sequence without repeat, unlike a stand-in
        return _index_outcome(tensor)  # the sequence repeated: the tensor's ``__index__``
    if declared is not None and declared.binary and args[0] is other:
        if _defines(type(value), declared.dunder):
            return _UNKNOWN  # ``xs += t`` extends the list by the tensor's items
    if base is operator.mod and isinstance(value, (str, bytes)) and args[0] is other:
        return _UNKNOWN  # the string formats the tensor (``%`` on a tensor declines a string)
    stand_in = _tensor_stand_in(tensor)
    values = [stand_in, value] if args[0] is tensor else [value, stand_in]
    try:
        result = op(*values)
    except TypeError as e:
        return e
    return result if type(result) is bool else _UNKNOWN


def _index_outcome(tensor: VariableTracker) -> Any:
    """The TypeError a plain tensor's ``__index__`` raises whatever it holds, else ``_UNKNOWN``."""
    error = index_error(tensor.example)
    return _UNKNOWN if error is None else error


def _python_defined(cls: type, name: str) -> bool:
    """Whether ``cls`` finds ``name`` in a class written in Python (not a C type's slot)."""
    found = next((vars(base)[name] for base in cls.__mro__ if name in vars(base)), None)
    return found is not None and not isinstance(found, _C_METHODS)


_C_METHODS = (types.WrapperDescriptorType, types.MethodDescriptorType, types.BuiltinFunctionType)


def _exact_tuple(vt: VariableTracker) -> bool:
    return isinstance(vt, TupleVariable) and vt.python_type() is tuple


def _defines(cls: type, name: str) -> bool:
    """Whether ``cls`` or a base defines ``name``, as CPython looks an operator's method up (not
    ``hasattr(cls, name)``, which also finds the metaclass's: ``type.__or__`` makes unions)."""
    return any(name in vars(base) for base in cls.__mro__)


def _user_dunder(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    name, reflected = OPERATORS[op].dunder, OPERATORS[op].reflected
    if name and isinstance(args[0], UserObjectVariable) and _defines(type(args[0].value), name):
        return args[0].call_method(tx, name, args[1:], {})
    if (
        reflected
        and len(args) == 2
        and isinstance(args[1], UserObjectVariable)
        and _defines(type(args[1].value), reflected)
    ):
        return args[1].call_method(tx, reflected, [args[0]], {})
    return None


def index_for_tensor(
    tx: Translator, tensor: TensorVariable, key: VariableTracker
) -> VariableTracker:
    """``key`` as a graph argument indexing ``tensor``: tensor bounds become unbacked symbolic ints,
    unbacked bounds are clamped as CPython would. Keys with nothing symbolic are returned as they
    are (torch checks them)."""
    items = list(key.items) if isinstance(key, TupleVariable) else [key]
    if not any(isinstance(i, SliceVariable) for i in items):
        return key
    dims = _dims_of(items, tensor.example.dim())  # a slice's dimension is never None
    rewritten = [
        _clamped_slice(tx, item, tensor, dim) if isinstance(item, SliceVariable) else item
        for item, dim in zip(items, dims, strict=True)
    ]
    return TupleVariable(rewritten) if isinstance(key, TupleVariable) else rewritten[0]


def _dims_of(items: list[VariableTracker], ndim: int) -> list[int | None]:
    """For each index item, the dimension of the tensor it applies to (None: not a slice's)."""
    consuming = [
        not (i.is_python_constant() and i.as_python_constant() in (None, Ellipsis)) for i in items
    ]
    if any(isinstance(i, TensorVariable) for i in items):
        raise Unsupported("slice", "symbolic slice bounds mixed with advanced (tensor) indexing")
    dims, dim = [], 0
    for item, consumes in zip(items, consuming, strict=True):
        if item.is_python_constant() and item.as_python_constant() is Ellipsis:
            dim += ndim - sum(consuming)
        dims.append(dim if isinstance(item, SliceVariable) else None)
        dim += consumes
    return dims


def _clamped_slice(
    tx: Translator, item: SliceVariable, tensor: TensorVariable, dim: int
) -> SliceVariable:
    step = item.step
    if not step.is_python_constant() or (step.as_python_constant() or 1) <= 0:
        raise Unsupported("slice", "a tensor slice needs a constant positive step")
    start, stop = (_bound(tx, part, tensor, dim) for part in (item.start, item.stop))
    return SliceVariable(start, stop, step)


def _bound(tx: Translator, part: VariableTracker, tensor: TensorVariable, dim: int):
    """``part`` as a slice bound of ``tensor``'s dimension ``dim``: unbacked ones clamped."""
    if isinstance(part, TensorVariable):
        part = to_scalar(tx, part, "__index__")
    if not isinstance(part, SymNodeVariable) or not unbacked_symbols(part.value):
        return part
    size = tensor.example.size(dim)
    out = tx.output
    n = (
        ConstantVariable(size)
        if isinstance(size, int)
        else out.call_method("size", (tensor, ConstantVariable(dim)), {})
    )
    is_negative = out.call_function(operator.lt, (part, ConstantVariable(0)), {})
    wrapped = out.call_function(operator.add, (part, n), {})
    normalized = out.call_function(torch.sym_ite, (is_negative, wrapped, part), {})
    at_most_n = out.call_function(torch.sym_min, (normalized, n), {})
    return out.call_function(torch.sym_max, (ConstantVariable(0), at_most_n), {})


def getitem_tensor(
    tx: Translator, tensor: VariableTracker, key: VariableTracker
) -> VariableTracker:
    if not isinstance(tensor, TensorVariable):
        if isinstance(tensor, (TupleVariable, ListVariable)) and key.is_python_constant():
            return getitem(tx, tensor, key)
        if isinstance(tensor, DictVariable) and not isinstance(tensor, ModelOutputVariable):
            return call_container_method(tx, tensor, "__getitem__", [key], {})
        known = _known_index(key)
        if isinstance(tensor, (TupleVariable, ListVariable)) and known is not None:
            return getitem(tx, tensor, ConstantVariable(known))
        user = _user_item_method(tx, "__getitem__", tensor, [key])
        if user is not None:
            return user
        _reject_index(tx, tensor, key)
        raise Unsupported("index", f"indexing {tensor} with a tensor")
    key = index_for_tensor(tx, tensor, key)
    return tx.output.call_function(operator.getitem, (tensor, key), {})


def _known_index(key: VariableTracker) -> int | None:
    """The value ``operator.index`` gives for an integer 0-dim tensor made in the trace from
    Python numbers (``torch.as_tensor(2)``), which its fake tensor carries (``constant``, kept
    through the ops fake tensors can fold, dropped by the others); None when it is not known."""
    fake = getattr(key, "example", None) if isinstance(key, TensorVariable) else None
    constant = getattr(fake, "constant", None)
    if constant is None or constant.dim() != 0 or constant.is_floating_point():
        return None
    if constant.dtype in (torch.bool, torch.complex64, torch.complex128):
        return None
    return operator.index(constant)


def _index_stand_in(key: VariableTracker) -> object | None:
    """What a key that is not a constant stands for where a list or tuple rejects it whatever it
    holds (``containers.index_stand_in``): a slice, the slice of its bounds' stand-ins
    (``slice(obj)``: CPython's "slice indices must be integers..."); None where unknown."""
    if not isinstance(key, SliceVariable):
        return dispatch.index_stand_in(key)
    bounds = []
    for part in key.parts:
        if isinstance(part, ConstantVariable):
            bounds.append(part.value)
        elif (bound := dispatch.index_stand_in(part)) is not None:
            bounds.append(bound)
        else:
            return None
    return slice(*bounds)


#: Builtin sequences whose ``seq[key]`` rejects a key that is no index (or whose ``__index__``
#: raises) whatever the sequence holds, each as an empty one.
_EMPTY_SEQUENCES = {list: [], tuple: (), range: range(0), str: "", bytes: b""}


def _reject_index(tx: Translator, seq: VariableTracker, key: VariableTracker) -> None:
    """Raises CPython's TypeError for ``seq[key]`` where ``seq`` is one of ``_EMPTY_SEQUENCES``
    and the key's stand-in (``_index_stand_in``) is rejected; returns where it is not known."""
    stand_in = _index_stand_in(key)
    try:
        empty = _EMPTY_SEQUENCES.get(seq.python_type()) if stand_in is not None else None
    except Unsupported:
        return
    if empty is not None:  # the error names the key's type, or is its ``__index__``'s own
        _raise_rejection(operator.getitem, empty, stand_in)


def _raise_rejection(fn: Any, *values: Any) -> None:
    """Raises the TypeError ``fn(*values)`` raises on index stand-ins; returns if it does not."""
    try:
        fn(*values)
    except TypeError as e:
        raise PythonError(e) from None


def getitem(tx: Translator, obj: VariableTracker, key: VariableTracker) -> VariableTracker:
    if isinstance(obj, TensorVariable):
        return getitem_tensor(tx, obj, key)
    if isinstance(obj, numpy_arrays.NumpyArrayVariable):
        return numpy_arrays.getitem(tx, obj, key)
    if isinstance(obj, ModelOutputVariable) and key.is_python_constant():
        return obj.getitem(tx, key.as_python_constant())
    if isinstance(obj, DictVariable):  # ``__missing__`` of defaultdict and Counter included
        return call_container_method(tx, obj, "__getitem__", [key], {})
    user = _user_item_method(tx, "__getitem__", obj, [key])
    if user is not None:  # any key: a ``UserDict``'s, a ``ChainMap``'s
        return user
    if isinstance(obj, LazyListVariable) and isinstance(key, SymNodeVariable):
        item = obj.item_at_symbol(tx, key.value)
        if item is not None:
            return item
    if not key.is_python_constant():
        _reject_index(tx, obj, key)
        raise Unsupported("index", f"{obj}[{key}] with a non-constant key")
    index = key.as_python_constant()
    if isinstance(obj, ListVariable) and issubclass(obj.python_type(), collections.deque):
        # a deque takes integers only, no slices, with messages of its own
        _fold(tx, operator.getitem, [collections.deque([None] * len(obj.items)), index])
    if isinstance(obj, (TupleVariable, ListVariable)):
        try:
            if isinstance(index, slice):
                if isinstance(obj, TupleVariable):
                    return TupleVariable(obj.items[index], is_size=obj.is_size)
                if issubclass(obj.python_type(), list):  # a list subclass's slice: a list
                    return ListVariable(obj.items[index])
                return obj.clone(items=obj.items[index], source=None)
            return obj.items[index]
        except (IndexError, TypeError):
            # CPython's message names the sequence's type ("tuple index out of range")
            shadow = [None] * len(obj.items)
            _fold(
                tx,
                operator.getitem,
                [tuple(shadow) if isinstance(obj, TupleVariable) else shadow, index],
            )
            raise
    if isinstance(obj, ModelOutputVariable):
        return obj.getitem(tx, index)
    if isinstance(obj, NNModuleVariable):
        return obj.getitem(tx, index)
    if obj.is_python_constant():
        return _fold(tx, operator.getitem, [obj.as_python_constant(), index])
    item = _tuple_object_item(tx, obj, index)
    if item is not None:
        return item
    user = _user_dunder(tx, operator.getitem, [obj, key])
    if user is not None:
        return user
    raise Unsupported("index", f"indexing {obj}")


def _tuple_object_item(tx: Translator, obj: VariableTracker, index: Any) -> VariableTracker | None:
    """``obj[index]`` of a ``_tuple_object`` (``inspect.FrameInfo``): the item, read in C,
    guarded through its place; a slice, the tuple of its items (its length guarded); None for
    any other value, or an index out of range."""
    if not _tuple_object(obj):
        return None
    bounds = _bounds(index) if type(index) is slice else ()
    if bounds and all(type(i) in (int, type(None)) for i in bounds) and index.step != 0:
        tx.output.assume_len(obj.source, len(obj.value))
        found = range(len(obj.value))[index]
        return TupleVariable([tx.wrap(obj.value[i], ItemSource(obj.source, i)) for i in found])
    if not (type(index) is int and -len(obj.value) <= index < len(obj.value)):
        return None
    return tx.wrap(obj.value[index], ItemSource(obj.source, index))


def _bounds(index: slice) -> tuple[Any, Any, Any]:
    return index.start, index.stop, index.step


def _tuple_object(obj: VariableTracker) -> bool:
    """An object read from the inputs whose class, a tuple subclass the tuple trackers do not
    model (``inspect.FrameInfo``: its own ``__repr__``, an instance dict), keeps tuple's
    protocol's dunders (``__getitem__``, ``__len__``, ``__iter__``, no ``__reversed__``...):
    its items are read as a tuple's."""
    return (
        isinstance(obj, UserObjectVariable)
        and obj.source is not None
        and isinstance(obj.value, tuple)
        and not [n for n in objects.namedtuple_overrides(type(obj.value)) if n.startswith("__")]
    )  # (a field may be named ``index`` or ``count``: FrameInfo's ``index``)


def setitem(
    tx: Translator, obj: VariableTracker, key: VariableTracker, value: VariableTracker
) -> None:
    if isinstance(obj, numpy_arrays.NumpyArrayVariable):
        numpy_arrays.setitem(tx, obj, key, value)
        return
    if isinstance(obj, TensorVariable):
        key = index_for_tensor(tx, obj, key)
        tx.output.call_function(operator.setitem, (obj, key, value), {})
        return
    if isinstance(obj, ModelOutputVariable) and key.is_python_constant():
        obj.setitem(key.as_python_constant(), value)
        return
    if _user_item_method(tx, "__setitem__", obj, [key, value]) is not None:
        return
    _sequence_index(obj, key)
    call_container_method(tx, obj, "__setitem__", [key, value], {})


def delitem(tx: Translator, obj: VariableTracker, key: VariableTracker) -> None:
    if _user_item_method(tx, "__delitem__", obj, [key]) is not None:
        return
    _sequence_index(obj, key)
    call_container_method(tx, obj, "__delitem__", [key], {})


def _sequence_index(obj: VariableTracker, key: VariableTracker) -> None:
    """``d[key] = v`` and ``del d[key]`` of a deque, whose type has item slots of a sequence
    only: CPython's TypeError for a key whose type has no ``__index__``, from the syntax (the
    methods ``d.__setitem__(key, v)`` raise index conversion's own)."""
    if not isinstance(obj, ListVariable) or not issubclass(obj.python_type(), collections.deque):
        return
    kind = _known_type(key)
    if kind and type_lookup(kind, "__index__") is MISSING:
        name = containers.c_name(kind)
        raise PythonError(TypeError(f"sequence index must be integer, not '{name}'"))


def _user_item_method(
    tx: Translator, name: str, obj: VariableTracker, args: list[VariableTracker]
) -> VariableTracker | None:
    """``obj[key]`` / ``obj[key] = value`` / ``del obj[key]`` inlined where ``obj`` is a user
    object (not a module) whose class defines ``name`` in Python (``UserDict``, ``ChainMap``, a
    user mapping); None otherwise."""
    if isinstance(obj, NNModuleVariable) or not _python_method(obj, name):
        return None
    return obj.call_method(tx, name, args, {})


call_container_method = containers.call_method


# Calls to Python builtins (``len``, ``isinstance``, ``range``, ``zip``, ``min``, ``print``...).
#
# When every argument is a Python constant a pure builtin (or a ``math`` function) is simply
# evaluated (constant folding). The entries of ``BUILTINS`` handle the cases that involve tensors,
# containers or objects; ``operator.*`` functions go to ``operators.call_operator``; ``print`` and
# friends raise ``Unsupported`` (graph breaks). ``construct_builtin_like`` builds namedtuples and
# ``functools.partial``.

#: Builtins safe to evaluate when all arguments are immutable constants. (``set`` and
#: ``frozenset`` have their own rules: their items keep their trackers, so ``k is t`` holds.)
PURE = frozenset(
    {
        abs,
        all,
        any,
        ascii,
        bin,
        bool,
        bytes,
        callable,
        chr,
        complex,
        divmod,
        float,
        format,
        hash,
        hex,
        int,
        isinstance,
        issubclass,
        len,
        max,
        min,
        oct,
        ord,
        pow,
        range,
        repr,
        round,
        slice,
        sorted,
        str,
        sum,
        tuple,
        type,
        list,
        dict,
        getattr,
        hasattr,
    }
)
#: Builtins that never go in a graph, with the hint users see.
BREAKING = {
    print: "print() runs in Python; move it out of the compiled function or accept the graph break",
    input: "input() needs the user",
    open: "file I/O runs in Python",
    exec: "dynamic code",
    eval: "dynamic code",
    breakpoint: "debugger",
}

ZERO = ConstantVariable(0)
#: the signature of a builtin's rule (``BUILTINS``), which binds each call's arguments
_signature = functools.cache(inspect.signature)


def call_builtin(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    known = evaluate(tx, fn, args, kwargs)  # ``id(obj)``, ``repr(obj)`` of real objects
    if known is not None:
        return known
    if fn in BREAKING:
        raise Unsupported(
            getattr(fn, "__name__", "builtin"), f"call to {fn.__name__}()", hint=BREAKING[fn]
        )
    values = [*args, *kwargs.values()]
    if is_simple_exception(fn) and not kwargs:
        return _exception(fn, args)
    if (
        fn in SYMBOLIC_MATH
        and len(args) == 1
        and not kwargs
        and isinstance(args[0], SymNodeVariable)
    ):
        return tx.output.call_function(SYMBOLIC_MATH[fn], (args[0],), {})  # stays symbolic
    if (
        (fn in PURE or fn in PURE_MODULE_FNS)
        and all(_foldable(fn, v) for v in values)
        and not _reads_own_attribute(fn, args)
        # a Python ``key=`` is called back: folded, it would run at trace time only
        and not any(isinstance(v, UserFunctionVariable) for v in kwargs.values())
    ):
        return tx.fold_call(fn, args, kwargs)
    if fn in OPERATOR_FNS:
        return call_operator_fn(tx, fn, args, kwargs)
    if fn in PURE and fn not in _READS_THE_OBJECT:
        computed = _on_bytearrays(tx, fn, args, kwargs)
        if computed is not None:
            return computed
    impl = BUILTINS.get(fn)
    if impl is None:
        raise Unsupported(
            "builtin", f"{getattr(fn, '__name__', fn)}() on {', '.join(map(repr, values))}"
        )
    try:
        _signature(impl).bind(tx, *args, **kwargs)
    except TypeError as e:  # a form of the builtin that is not traced
        name = getattr(fn, "__name__", fn)
        raise Unsupported("builtin", f"{name}() with these arguments: {e}") from None
    return impl(tx, *args, **kwargs)


#: C modules whose functions are pure: on immutable constants each computes a new value and reads
#: nothing else (on tensors they would read data), so a call is folded. ``_struct`` is
#: ``struct``'s (less the forms that write a buffer or give an iterator).
_PURE_C_MODULES = (math, cmath, unicodedata, binascii, _struct)
_NOT_PURE = frozenset({_struct.pack_into, _struct.iter_unpack})
#: The functions of ``_PURE_C_MODULES``, and the pure functions of other modules
#: (``os.fspath``, ``zlib.crc32``), folded on constants.
PURE_MODULE_FNS = frozenset(
    {
        v
        for module in _PURE_C_MODULES
        for k, v in vars(module).items()
        if not k.startswith("_") and type(v) is types.BuiltinFunctionType and v not in _NOT_PURE
    }
    | {os.fspath, zlib.crc32, zlib.adler32}
    # ``os.path.normpath`` where it is C, or its C helper
    | {
        f
        for f in (posixpath.normpath, getattr(posixpath, "_path_normpath", None))
        if type(f) is types.BuiltinFunctionType
    }
)
#: Python functions of the standard library that are pure on plain data (``plain_data``: str,
#: bytes, int, float, bool, None, and lists, tuples and dicts of those) and read nothing else: given
#: only such values (options included; a ``default=``/``object_hook=`` function is no value) a
#: call is computed at trace time, where tracing their Python would meet their C accelerators.
PURE_ON_DATA = frozenset({json.dumps, json.loads})


def plain_data(value: Any) -> bool:
    """Whether ``value`` is plain data of exact builtin types, which no user code can take part
    in handling (an enum member or a subclass could)."""
    return nested(value, lambda v: type(v) in (str, bytes, int, float, bool, type(None)))


@call_rule(*PURE_ON_DATA)
def _pure_on_data(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """A ``PURE_ON_DATA`` function: computed on plain data, else its Python traced."""
    values = [*args, *kwargs.values()]
    if all(v.is_python_constant() and plain_data(v.as_python_constant()) for v in values):
        return tx.fold_call(fn, args, kwargs)
    return UserFunctionVariable(fn).call_function(tx, args, kwargs)


#: ``math`` functions of one number with a symbolic counterpart (``math.cos``: ``torch._sym_cos``):
#: on a symbolic number (an LR scheduler's epoch) they give a symbolic result instead of
#: specialising it.
SYMBOLIC_MATH = {
    getattr(math, name): getattr(torch, f"_sym_{name}")
    for name in ("sqrt", "cos", "cosh", "sin", "sinh", "tan", "tanh", "asin", "acos", "atan")
}

#: Functions of the ``operator`` module (``operator.add``...), traced like the operators they are.
OPERATOR_FNS = frozenset(
    v for k, v in vars(operator).items() if not k.startswith("_") and type(v) is type(len)
)


#: Functions of the ``operator`` module that are other names of a declared operator (CPython's C
#: module makes them separate functions).
_OPERATOR_ALIASES = {operator.inv: operator.invert}


def call_operator_fn(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """``operator.add(a, b)`` and friends: the same semantics as the operator syntax."""
    if kwargs:
        raise Unsupported("builtin", f"operator.{fn.__name__} with keyword arguments")
    fn = _OPERATOR_ALIASES.get(fn, fn)
    if fn in OPERATORS:  # their rules: the operator registry above
        return dispatch.call_operator(tx, fn, list(args))
    mutable = any(isinstance(a, (ListVariable, DictVariable, SetVariable)) for a in args)
    if fn is operator.index and len(args) == 1 and (mutable or not args[0].is_python_constant()):
        stand_in = dispatch.index_stand_in(args[0])  # ``operator.index([])``: its TypeError
        if stand_in is not None:
            _raise_rejection(operator.index, stand_in)
    if all(a.is_python_constant() for a in args) and not mutable:
        # the other operator functions are pure on immutable constants (``operator.index``)
        return tx.fold_call(fn, args, {})
    raise Unsupported("builtin", f"operator.{fn.__name__} is not traced")


#: Builtins whose result keeps reading a mutable argument (a copy would miss later changes).
_LIVE_VIEWS = frozenset({getattr, hasattr})
#: Builtins whose result is or holds an argument, or an item of one, itself (``slice(xs).start
#: is xs``, ``max(xs, ys) is ys``): folded on a copy, a mutable one would be another object.
_GIVES_ITS_ARGUMENTS = frozenset({slice, min, max})


def _holds_mutable(vt: VariableTracker) -> bool:
    if isinstance(vt, (ListVariable, DictVariable, SetVariable)):
        return True
    return isinstance(vt, TupleVariable) and any(_holds_mutable(i) for i in vt.items)


#: Builtins never folded on symbolic numbers (folding specialises them): their result does not
#: depend on the values (``len(t.shape)`` of a dynamic tensor, ``isinstance(n, torch.Tensor)`` of
#: a size), they stay symbolic (``max(cache_length - window + 1, 0)``: ``torch.sym_max``;
#: ``sum``, ``abs``, ``pow``, ``int``, ``float``: the operators or conversions in the graph;
#: ``slice(0, n)``), they copy the numbers into a container (``list(t.shape)``, ``tuple(...)``,
#: ``dict(...)``), or ``bool`` guards only the truth (``n != 0``), not the value.
_SYMBOLIC_AWARE = frozenset(
    {isinstance, type, len, min, max, sum, abs, pow, int, float, bool, slice, tuple, list, dict}
)


def _symbolic(vt: VariableTracker) -> bool:
    if isinstance(vt, SymNodeVariable):
        return True
    return isinstance(vt, (TupleVariable, ListVariable)) and any(_symbolic(i) for i in vt.items)


def _foldable(fn: Any, vt: VariableTracker) -> bool:
    """Constants can be folded; a container is folded as a copy, which is right for every pure
    builtin except attribute lookups on a mutable one (a bound method of the copy would miss later
    mutations) and ``getattr`` on a tuple (its method would be bound to the copy, another object
    than the one the trace holds, which the code cannot rebuild)."""
    if not vt.is_python_constant():
        return False
    if fn in _SYMBOLIC_AWARE and _symbolic(vt):
        return False  # answered without specialising the numbers (``len_``, ``min_max``...)
    if fn in (isinstance, type) and isinstance(vt, SymNodeVariable):
        return False  # its type is known without its value: folding would specialise it
    mutable = isinstance(vt, (ListVariable, DictVariable, SetVariable))
    if fn in _GIVES_ITS_ARGUMENTS and _holds_mutable(vt):
        return False
    if (
        fn in (getattr, hasattr)
        and isinstance(vt, (ClassVariable, PythonModuleVariable))
        and vt.source is not None
    ):
        return False  # a module's or class's attributes can change: var_getattr guards them
    if fn is getattr and isinstance(vt, TupleVariable):
        return False
    return fn not in _LIVE_VIEWS or not mutable


def _reads_own_attribute(fn: Any, args: list[VariableTracker]) -> bool:
    """``getattr``/``hasattr`` of a name a function or an enum member keeps in its own
    ``__dict__``: read through the value's tracker, which sees the trace's stores and deletions
    and guards what it reads (a fold would read the real object now, unguarded)."""
    if fn not in _LIVE_VIEWS or len(args) < 2 or not args[1].is_python_constant():
        return False
    obj, name = args[0], args[1].as_python_constant()
    if isinstance(obj, UserFunctionVariable) and obj.self_vt is None and obj.source is not None:
        real = obj.fn
    elif isinstance(obj, ConstantVariable) and isinstance(obj.value, enum.Enum):
        real = obj.value
    else:
        return False
    return isinstance(name, str) and type_lookup(type(real), name) is MISSING


def construct_builtin_like(
    tx: Translator, cls: type, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """``cls(...)`` for a class that is not a builtin: namedtuples; others are not traced yet."""
    context = contexts.construct(tx, cls, args, kwargs)  # contextlib.nullcontext(...)
    if context is not None:
        return context
    if cls is functools.partial and args:
        return make_partial(args[0], list(args[1:]), dict(kwargs))
    made = containers.construct_collection(tx, cls, args, kwargs)
    if made is not None:
        return made
    if is_simple_exception(cls) and not kwargs:
        return _exception(cls, args)
    if issubclass(cls, tuple) and hasattr(cls, "_fields"):
        return TupleVariable(namedtuple_fields(tx, cls, args, kwargs), cls=cls)
    if containers.is_model_output(cls):
        return containers.construct_model_output(tx, cls, args, kwargs)
    raise Unsupported(
        "new_object",
        f"creating a {cls.__name__} object",
        hint="create the object outside the compiled function",
    )


def makes_builtin_like(cls: type) -> bool:
    """Classes whose objects ``construct_builtin_like`` makes as builtin-like trackers: the
    ``collections`` containers (``deque``, ``defaultdict``...) and exceptions that are just their
    arguments."""
    return cls in containers.CLASSES or is_simple_exception(cls)


@builtin(len)
def len_(tx: Translator, obj: VariableTracker) -> VariableTracker:
    if isinstance(obj, TensorVariable):
        if obj.example.dim() == 0:
            raise Unsupported("python_error", "len() of a 0-d tensor")
        return ConstantVariable(int(obj.example.shape[0]))
    kind = _known_type(obj)
    if isinstance(obj, IteratorVariable) or (kind and type_lookup(kind, "__len__") is MISSING):
        # the type's slot decides (a symbolic number, a generator): no value is read
        name = containers.c_name(obj.python_type())
        raise PythonError(TypeError(f"object of type '{name}' has no len()"))
    if isinstance(obj, DictViewVariable):
        return ConstantVariable(len(obj.dict_vt.items))
    if hasattr(obj, "items"):
        return ConstantVariable(len(obj.items))
    error = unsupported_operands(len, [obj], {"__len__"})
    if error is not None:  # an object whose class has no ``__len__``
        raise PythonError(error)
    return length_result(obj.call_method(tx, "__len__", [], {}))


@builtin(hash)
def hash_(tx: Translator, obj: VariableTracker) -> VariableTracker:
    if _address_hashed(obj) is not None:  # a method or an object with no address yet
        return MethodHashVariable(obj)
    return ConstantVariable(value_hash(obj))


@builtin(id)
def id_(tx: Translator, obj: VariableTracker) -> VariableTracker:
    return object_id(tx, obj)


@builtin(dir)
def dir_(tx: Translator, *args: VariableTracker) -> VariableTracker:
    """``dir(x)``, computed where the names it lists are known: of a value whose attributes are
    all its C type's (a constant, a builtin function or type, an exact list, tuple, dict or set,
    a ``torch.Size``), or of a class, module, function, namedtuple or object from outside the
    function, or an object made in it, that lists them the default way, guarded on the keys of
    every ``__dict__`` it reads. ``dir()`` lists the frame's names."""
    if not args and not _frame_dict_shared(tx, "dir"):
        return tx.fold(sorted(_frame_locals(tx, "dir")))
    if len(args) != 1:
        raise Unsupported("dir", "dir() without an argument", hint="frame introspection")
    fixed = fixed_attributes(args[0])
    names = dir(fixed[0]) if fixed is not None else _listed(tx, args[0])
    if names is not None:
        return tx.fold(names)
    own = _python_dir(args[0])
    if own is None:
        raise Unsupported("builtin", f"dir() on {args[0]}")
    listed = dispatch.call(tx, tx.wrap_static(own), [args[0]], {})
    return dispatch.call(tx, tx.wrap_static(sorted), [listed], {})


def _python_dir(vt: VariableTracker) -> types.FunctionType | None:
    """The ``__dir__`` that ``dir(vt)`` calls where its class defines it in Python (an
    object's own): traced, and its names sorted, as CPython's ``dir`` does."""
    try:
        method = type_lookup(vt.python_type(), "__dir__")
    except Unsupported:
        return None
    return method if isinstance(method, types.FunctionType) else None


@builtin(locals)
def locals_(tx: Translator) -> VariableTracker:
    """``locals()``: a new dict of the frame's bound locals, in CPython's order. Where CPython
    gives the frame's one dict, updated by each call of ``locals``, ``vars`` or ``dir`` (up to
    3.12), only in code that calls one of them once (no loop around it): else the call breaks and
    runs on the frame the rewritten code keeps (``codegen/frame_locals.py``)."""
    if _frame_dict_shared(tx, "locals"):
        raise Unsupported("locals", "locals() in code reading its frame more than once")
    return DictVariable(_frame_locals(tx, "locals"))


def _frame_locals(tx: Translator, name: str) -> dict[str, VariableTracker]:
    """The bound locals of the frame ``tx`` runs, as ``locals()`` in it lists them. Not in a resume
    function, whose frame holds the generated code's own names too (the call breaks there)."""
    if getattr(tx.fn, "__bytegraph_resume__", None) is not None:
        raise Unsupported(name, f"{name}() in a resume function", hint="frame introspection")
    found: dict[str, VariableTracker] = {}
    for local in UserFrame.of(tx.code).names:
        cell = tx.closure.get(local) if local in tx.code.co_freevars else None
        if isinstance(cell, LocalCellVariable):
            value = cell.frame_locals.get(cell.name)
        elif isinstance(cell, ClosureCellVariable):
            value = cell.contents(tx, local)
        elif cell is None:
            value = tx.symbolic_locals.get(local)
        else:
            raise Unsupported(name, f"{name}() with the free variable {local!r}")
        if value is not None:
            found[local] = value
    return found


def _frame_dict_shared(tx: Translator, name: str) -> bool:
    """Whether a frame-reading call in ``tx``'s code may see or change a dict another such call
    gave: up to 3.12 the frame's one ``locals()`` dict, which each call updates. Code that reads
    its frame once, outside any loop, has no such other call (``dir()`` alone returns a new list
    each time)."""
    if LOCALS_SNAPSHOT:
        return False
    reads = [
        i
        for i in dis.get_instructions(tx.code)
        if (i.opname in ("LOAD_GLOBAL", "LOAD_NAME") and i.argval in ("locals", "vars", "dir"))
        or (i.opname in ("LOAD_ATTR", "LOAD_METHOD") and i.argval in _FRAME_ATTRIBUTES)
    ]
    if name == "dir" and all(i.argval == "dir" for i in reads):
        return False
    loops = [(i.argval, i.offset) for i in dis.get_instructions(tx.code) if "BACKWARD" in i.opname]
    return len(reads) != 1 or any(start <= reads[0].offset <= end for start, end in loops)


#: The attribute through which code reads a frame's locals (the frame's one dict up to 3.12).
_FRAME_ATTRIBUTES = frozenset({"f_locals"})


def _listed(tx: Translator, vt: VariableTracker) -> list[str] | None:
    """What ``dir`` of the object ``vt`` stands for lists, having guarded the keys of each
    ``__dict__`` it reads; None where that cannot be known (a ``__dir__`` of its own, a class or
    module the trace changed)."""
    effects = tx.output.side_effects
    if isinstance(vt, TupleVariable) and not vt.python_type().__flags__ & HEAP_TYPE:
        cls = vt.python_type()  # an instance of a C type without a dict (``torch.Size``)
        plain = _default_dir(cls) and type_lookup(cls, "__dict__") is MISSING
        return dir(cls) if plain else None
    if type(vt) is NewObjectVariable:  # made in the trace: its class as the trace reached it
        return _object_names(tx, vt, vt.class_source())
    source = vt.source
    if source is None:
        return None
    if isinstance(vt, ClassVariable) and type(vt.value) is type:
        return dir(vt.value) if _guard_classes(tx, vt.value, source) else None
    if isinstance(vt, PythonModuleVariable) and type(vt.value) is types.ModuleType:
        namespace = vars(vt.value)
        if "__dir__" in namespace or (namespace is tx.f_globals and effects.global_stores):
            return None
        _guard_keys(tx, AttrSource(source, "__dict__"), namespace)
        return dir(vt.value)
    if isinstance(vt, UserFunctionVariable) and vt.self_vt is None and not vt.bound_source:
        _guard_keys(tx, AttrSource(source, "__dict__"), vars(vt.fn))
        return dir(vt.fn)
    member = vt.as_python_constant() if vt.is_python_constant() else None
    if isinstance(member, enum.Enum) and type_lookup(type(member), "__dir__") is _ENUM_DIR:
        # ``Enum.__dir__`` reads the member's own names and its classes' namespaces
        if not _guard_classes(tx, type(member), TypeSource(source)):
            return None
        _guard_keys(tx, AttrSource(source, "__dict__"), vars(member))
        return dir(member)
    if not (type(vt) is UserObjectVariable or isinstance(vt, TupleVariable)):
        return None
    return _object_names(tx, vt, TypeSource(source))


def _object_names(
    tx: Translator, vt: VariableTracker, cls_source: Source | None
) -> list[str] | None:
    """``dir`` of an object listing its names the default way: its ``__dict__``'s keys as the
    trace holds them and its classes' names, the class at ``cls_source`` guarded."""
    cls = vt.python_type()
    if cls_source is None or not _default_dir(cls) or not _guard_classes(tx, cls, cls_source):
        return None
    if type_lookup(cls, "__dict__") is MISSING:
        return dir(cls)  # no instance dict: the names its classes define
    if isinstance(vt, TupleVariable) or type(type_lookup(cls, "__dict__")) is not _GETSET:
        return None
    own = vt.var_getattr(tx, "__dict__")  # the live dict: the trace's stores and deletions in it
    if not isinstance(own, DictVariable) or not all(type(k) is str for k in own.items):
        return None
    return sorted({*own.items, *dir(cls)})


def _default_dir(cls: type) -> bool:
    """Instances of ``cls`` list their names with ``object.__dir__``, which reads their
    ``__dict__`` and ``__class__`` by the generic lookup."""
    return (
        type_lookup(cls, "__dir__") is _OBJECT_DIR
        and type_lookup(cls, "__class__") is _OBJECT_CLASS
        and type_lookup(cls, "__getattribute__") in _GENERIC_GETATTRIBUTE
    )


def _guard_classes(tx: Translator, cls: type, source: Source) -> bool:
    """Guard ``cls`` (at ``source``) and its MRO, and the keys of each class ``__dict__`` there
    that code can change. False where the trace changed one of those classes."""
    changed = tx.output.side_effects.changed_class_attrs
    if any(klass in cls.__mro__ for klass, _ in changed):
        return False
    mro = AttrSource(source, "__mro__")
    tx.output.assume_identity(source, cls)
    tx.output.assume_len(mro, len(cls.__mro__))
    for index, klass in enumerate(cls.__mro__):
        at = source if index == 0 else ItemSource(mro, index)
        if index:
            tx.output.assume_identity(at, klass)
        if klass.__flags__ & HEAP_TYPE:
            _guard_keys(tx, AttrSource(at, "__dict__"), vars(klass))
    return True


def _guard_keys(tx: Translator, source: Source, namespace: Any) -> None:
    """The dict (or class namespace) at ``source`` has exactly the keys of ``namespace``."""
    tx.output.assume_keys(source, tuple(namespace))


_OBJECT_DIR = object.__dict__["__dir__"]
_ENUM_DIR = enum.Enum.__dict__["__dir__"]
_OBJECT_CLASS = object.__dict__["__class__"]
_GENERIC_GETATTRIBUTE = (object.__dict__["__getattribute__"], tuple.__dict__["__getattribute__"])
_GETSET = types.GetSetDescriptorType


@builtin(isinstance)
def isinstance_(tx: Translator, obj: VariableTracker, classes: VariableTracker) -> VariableTracker:
    return ConstantVariable(issubclass(obj.python_type(), classes.as_python_constant()))


@builtin(type)
def type_(tx: Translator, obj: VariableTracker) -> VariableTracker:
    """The class; of an object from outside the call, read through it (``type(L['self'])``, its
    identity the object's type guard), so that what the trace reads from the class is guarded
    and rebuilt through it (``type(self).__dict__``, live at a graph break); of an object made in
    the trace, the class it was made from, as the trace holds it (``type(self).n += 1`` in an
    ``__init__`` stores through its source)."""
    cls = obj.python_type()
    if isinstance(obj, objects.UserObjectVariable) and obj.source is not None:
        if type(obj.value) is cls:
            return tx.wrap(cls, TypeSource(obj.source))
    made_by = getattr(obj, "cls_vt", None)  # an object made in the trace: the class called
    if isinstance(made_by, objects.ClassVariable) and made_by.value is cls:
        return made_by
    return tx.wrap_static(cls)


@builtin(getattr)
def getattr_(
    tx: Translator,
    obj: VariableTracker,
    name: VariableTracker,
    default: VariableTracker | None = None,
) -> VariableTracker:
    if default is None:
        return dispatch.getattr_(tx, obj, name.as_python_constant())
    found = _read_or_missing(tx, obj, name)
    return default if found is None else found


@builtin(hasattr)
def hasattr_(tx: Translator, obj: VariableTracker, name: VariableTracker) -> VariableTracker:
    return ConstantVariable(_read_or_missing(tx, obj, name) is not None)


def _read_or_missing(
    tx: Translator, obj: VariableTracker, name: VariableTracker
) -> VariableTracker | None:
    """``obj.name``, or None where the read raises AttributeError, which ``hasattr`` and
    ``getattr(o, name, default)`` catch (and only that, as in CPython): the attribute is absent
    (guarded so), a C-level read raises it, or traced code raises it (a class's ``__getattr__``, a
    property getter): ``builtin_catches`` makes that exception caught here, not a break."""
    tx.builtin_catches.append(AttributeError)
    try:
        return dispatch.getattr_(tx, obj, name.as_python_constant())
    except TracedException as te:
        if issubclass(te.exc.cls, AttributeError):
            return None
        raise
    except Unsupported as e:
        if _missing_attribute(e, obj, name.as_python_constant()):
            return None
        raise
    finally:
        tx.builtin_catches.pop()


def _missing_attribute(e: Unsupported, obj: VariableTracker, name: str) -> bool:
    """The attribute is absent (guarded so), or reading it raises AttributeError, which
    ``getattr(o, name, default)`` and ``hasattr`` catch. A read the tracer does not follow (also
    a ``getattr`` break) is no proof of absence where ``obj``'s class has the attribute
    (``getattr(bound_method, "__reduce_ex__", None)``) or a ``__getattr__`` that CPython calls
    for a missing one: that stays a break."""
    if isinstance(e, PythonError):
        return isinstance(e.exc, AttributeError)
    return e.kind == "getattr" and not (_on_class(obj, name) or _on_class(obj, "__getattr__"))


def _on_class(obj: VariableTracker, name: str) -> bool:
    """Whether ``obj``'s class has ``name`` for its instances (in its MRO)."""
    try:
        cls = obj.python_type()
    except Unsupported:
        return False
    return on_instances(cls, name)


@builtin(setattr)
def setattr_(
    tx: Translator, obj: VariableTracker, name: VariableTracker, value: VariableTracker
) -> VariableTracker:
    dispatch.store_attr(tx, obj, name.as_python_constant(), value)
    return ConstantVariable(None)


@builtin(tuple)
def tuple_(tx: Translator, iterable: VariableTracker | None = None) -> VariableTracker:
    return TupleVariable(_items_of(tx, iterable) if iterable is not None else [])


@builtin(list)
def list_(tx: Translator, iterable: VariableTracker | None = None) -> VariableTracker:
    return ListVariable(_items_of(tx, iterable) if iterable is not None else [])


def _items_of(tx: Translator, iterable: VariableTracker) -> list[VariableTracker]:
    """The items ``tuple(x)`` and ``list(x)`` take: CPython's TypeError where ``x``'s type
    iterates in no way (``'Point' object is not iterable``)."""
    error = not_iterable(iterable)
    if error is not None:
        raise PythonError(error)
    return dispatch.iterate(tx, iterable)


@builtin(dict)
def dict_(tx: Translator, *args: VariableTracker, **kwargs: VariableTracker) -> VariableTracker:
    items: dict[Any, VariableTracker] = {}
    if args:
        containers.update_items(tx, items, args[0])
    items.update(kwargs)
    return DictVariable(items)


@builtin(set)
def set_(tx: Translator, iterable: VariableTracker | None = None) -> VariableTracker:
    if iterable is None:  # rebuilt as the empty display, which ``add`` calls then extend
        return SetVariable(set(), recipe=SetRecipe(set, (("keys", []),)))
    real, taken = read_iterable(tx, iterable)
    return computed_set(set(real), [iterable], SetRecipe.call(set, [iterable], [taken]))


@builtin(frozenset)
def frozenset_(tx: Translator, iterable: VariableTracker | None = None) -> VariableTracker:
    if iterable is not None and iterable.python_type() is frozenset:
        return iterable  # ``frozenset(f) is f``
    if iterable is None:
        return make_set(frozenset())
    real, taken = read_iterable(tx, iterable)
    made = frozenset(real)
    return computed_set(made, [iterable], SetRecipe.call(frozenset, [iterable], [taken]))


@builtin(enumerate)
def enumerate_(
    tx: Translator, iterable: VariableTracker, start: VariableTracker = ZERO
) -> VariableTracker:
    source = dispatch.get_iter(tx, iterable)
    return EnumerateVariable([], sources=[source], count=start.as_python_constant())


@builtin(zip)
def zip_(
    tx: Translator, *iterables: VariableTracker, strict: VariableTracker | None = None
) -> VariableTracker:
    sources = [dispatch.get_iter(tx, it) for it in iterables]  # made now, as CPython does
    return ZipVariable([], sources=sources, strict=bool(strict and strict.as_python_constant()))


@builtin(reversed)
def reversed_(tx: Translator, seq: VariableTracker) -> VariableTracker:
    made = make_reversed(tx, seq)
    if made is not None:
        return made
    if isinstance(seq, DictVariable):
        return IteratorVariable(
            [key_vt(k) for k in reversed(seq.items)], watched=seq, watched_len=len(seq.items)
        )
    _check_reversible(seq)
    return IteratorVariable(list(reversed(dispatch.iterate(tx, seq))))


def _check_reversible(seq: VariableTracker) -> None:
    """CPython's TypeError for ``reversed(seq)`` where the type's ``__reversed__`` is None (a
    ``Mapping``'s, ``ChainMap``'s) or where it has neither ``__reversed__`` nor the sequence
    protocol (``__len__`` and ``__getitem__``); returns where it may be reversed."""
    try:
        cls = seq.python_type()
    except Unsupported:
        return
    method = type_lookup(cls, "__reversed__")
    sequence = all(type_lookup(cls, n) is not MISSING for n in ("__len__", "__getitem__"))
    if method is None or (method is MISSING and not sequence):
        raise PythonError(TypeError(f"'{containers.c_name(cls)}' object is not reversible"))


@builtin(iter)
def iter_(
    tx: Translator, obj: VariableTracker, sentinel: VariableTracker | None = None
) -> VariableTracker:
    if sentinel is not None:
        return UserFunctionVariable(callable_iterator).call_function(tx, [obj, sentinel], {})
    made = dispatch.get_iter(tx, obj)
    return made.obj if isinstance(made, objects.UserIteratorVariable) else made


@builtin(next)
def next_(
    tx: Translator, it: VariableTracker, default: VariableTracker | None = None
) -> VariableTracker:
    if objects.python_next(it):  # its own StopIteration, unless a default is given
        if default is None:
            return it.call_method(tx, "__next__", [], {})
        it = objects.UserIteratorVariable([], obj=it)
    if not isinstance(it, IteratorVariable):
        raise Unsupported("builtin", f"next() on {it}")
    item = it.next_item(tx)
    if item is None:
        if default is None:
            raise iterators.stop_iteration(it)
        return default
    return item


@builtin(sum)
def sum_(
    tx: Translator, iterable: VariableTracker, start: VariableTracker = ZERO
) -> VariableTracker:
    total = start
    for item in dispatch.iterate(tx, iterable):
        total = dispatch.call_operator(tx, operator.add, [total, item])
    return total


BUILTINS[sorted] = sorted_
BUILTINS[min] = min_
BUILTINS[max] = max_


@builtin(abs)
def abs_(tx: Translator, value: VariableTracker) -> VariableTracker:
    return dispatch.call_operator(tx, operator.abs, [value])


@builtin(pow)
def pow_(
    tx: Translator, base: VariableTracker, exp: VariableTracker, mod: VariableTracker | None = None
) -> VariableTracker:
    if mod is not None and not (mod.is_python_constant() and mod.as_python_constant() is None):
        raise Unsupported("builtin", "pow() with a modulus of traced values")
    return dispatch.call_operator(tx, operator.pow, [base, exp])


@call_rule(_thread.get_ident)
def _thread_ident(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """``threading.get_ident()`` (``reprlib.recursive_repr``, a dataclass's ``repr``, keys its
    running set by it): the id of the thread the call is traced on, guarded (a call on another
    thread compiles its own)."""
    if args or kwargs:
        return None
    ident = _thread.get_ident()
    tx.output.assume_state(("thread",), _thread.get_ident, ident)
    return ConstantVariable(ident)


@builtin(divmod)
def divmod_(tx: Translator, a: VariableTracker, b: VariableTracker) -> VariableTracker:
    """Of numbers (tensors have no ``__divmod__``: CPython raises); an object's is its
    ``__divmod__`` (or the other's ``__rdivmod__``), not its ``//`` and ``%``: a break, or
    CPython's TypeError where neither defines it."""
    if any(isinstance(v, TensorVariable) for v in (a, b)):
        outcome = tensor_operands_outcome(divmod, [a, b])
        if isinstance(outcome, Exception):
            raise PythonError(outcome)
        raise Unsupported("builtin", f"divmod() of {a} and {b}")
    if any(plain_operand(v) for v in (a, b)):
        error = unsupported_operands(divmod, [a, b], {"__divmod__", "__rdivmod__"})
        if error is not None:
            raise PythonError(error)
        raise Unsupported("builtin", f"divmod() of {a} and {b}")
    quotient = dispatch.call_operator(tx, operator.floordiv, [a, b])
    return TupleVariable([quotient, dispatch.call_operator(tx, operator.mod, [a, b])])


def _exception(cls: type, args: list[VariableTracker]) -> VariableTracker:
    """``cls(*args)`` for an exception class. One with a builtin constructor of its own
    (``UnicodeDecodeError`` takes five arguments, ``ExceptionGroup`` two, ``OSError(2, 'x')`` is a
    ``FileNotFoundError``) is first made for real from constant arguments: CPython's error is the
    user's, and a call making another class breaks."""
    own = any(
        klass.__module__ == "builtins"
        and klass not in (BaseException, object)
        and ("__init__" in vars(klass) or "__new__" in vars(klass))
        for klass in cls.__mro__
    )
    if own and all(a.is_python_constant() for a in args):
        try:
            made = cls(*[a.as_python_constant() for a in args])
        except Exception as e:  # noqa: BLE001 (CPython's own error, raised in the trace)
            raise PythonError(e) from None
        if type(made) is not cls:
            raise Unsupported("new_object", f"{cls.__name__}(...) makes a {type(made).__name__}")
    return ExceptionVariable(cls, list(args))


def _any_all(pick: Callable[..., Any]) -> BuiltinImpl:
    """``any``/``all``: items are taken one by one and the first that decides stops it (a generator
    with side effects runs no further than in CPython)."""
    stop_on = pick is builtins.any

    def any_all(tx: Translator, iterable: VariableTracker) -> VariableTracker:
        it = dispatch.get_iter(tx, iterable)
        while (item := it.next_item(tx)) is not None:
            if dispatch.truth(tx, item) == stop_on:
                return ConstantVariable(stop_on)
        return ConstantVariable(not stop_on)

    return any_all


BUILTINS[any] = _any_all(builtins.any)
BUILTINS[all] = _any_all(builtins.all)


@builtin(bool)
def to_bool(tx: Translator, value: VariableTracker) -> VariableTracker:
    if isinstance(value, TensorVariable):  # data the trace does not know: kept for a jump on it
        made = tensor_bool(tx, value)
        if made is not None:
            return made
    return ConstantVariable(dispatch.truth(tx, value))


@builtin(int)
def int_(tx: Translator, value: VariableTracker) -> VariableTracker:
    return _to_number(tx, value, int, torch.sym_int)


@builtin(float)
def float_(tx: Translator, value: VariableTracker) -> VariableTracker:
    return _to_number(tx, value, float, torch.sym_float)


def _to_number(tx: Translator, value: VariableTracker, kind: type, sym: Any) -> VariableTracker:
    """``int(t)``/``float(t)`` of a tensor: an unbacked symbolic number (``tensor.to_scalar``); of a
    symbolic number: the conversion, in the graph; of an object whose class converts in Python:
    that method, inlined (``objects.number_conversion``); of an object whose class has no
    conversion (a bound method, a plain object): CPython's TypeError."""
    method = f"__{kind.__name__}__"
    if isinstance(value, TensorVariable):
        return to_scalar(tx, value, method)
    if isinstance(value, SymNodeVariable):
        return tx.output.call_function(sym, (value,), {})
    if isinstance(value, UserObjectVariable):
        converted = objects.number_conversion(tx, value, kind)
        if converted is not None:
            return converted
    error = unsupported_operands(kind, [value], {method, "__index__", "__trunc__"})
    if error is not None:
        raise PythonError(error)
    raise Unsupported("builtin", f"number conversion of {value}")


@builtin(round)
def round_(
    tx: Translator, number: VariableTracker, ndigits: VariableTracker | None = None
) -> VariableTracker:
    """``round(x[, n])`` calls ``type(x).__round__`` (constants are folded before): a user
    object's is inlined; a class without one (``torch.Tensor``, ``method``) raises CPython's
    TypeError."""
    cls = number.python_type()
    if type_lookup(cls, "__round__") is MISSING:
        raise PythonError(error_of(round, type(cls.__name__, (), {})()))
    if isinstance(number, UserObjectVariable):
        args = [] if ndigits is None else [ndigits]
        return number.call_method(tx, "__round__", args, {})
    raise Unsupported("builtin", f"round() on {number}")


def _index_builtin(fn: Callable[..., Any]) -> BuiltinImpl:
    """``bin(x)``, ``hex(x)``, ``oct(x)``, ``range(...)`` given a value that is no index (an
    object whose type has no ``__index__``, a float tensor): CPython's TypeError, from ``fn`` run
    on the constants and on a stand-in of each other value (``index_stand_in``). All-constant
    calls were folded before."""

    def rule(tx: Translator, *args: VariableTracker) -> VariableTracker:
        values = []
        for arg in args:
            stand_in = None if arg.is_python_constant() else dispatch.index_stand_in(arg)
            if stand_in is None and not _foldable(fn, arg):
                raise Unsupported("builtin", f"{fn.__name__}() on {arg}")
            values.append(arg.as_python_constant() if stand_in is None else stand_in)
        _raise_rejection(fn, *values)
        raise Unsupported("builtin", f"{fn.__name__}() on {', '.join(map(repr, args))}")

    rule.__name__ = rule.__qualname__ = f"{fn.__name__}_of_a_non_index"
    return rule


for _fn in (bin, hex, oct, range):
    builtin(_fn)(_index_builtin(_fn))


#: what ``bytearray(x)`` may read of ``x``, looked up on its type: an int's size, a buffer, items
_BYTEARRAY_READS = ("__index__", "__buffer__", "__iter__", "__getitem__")


@builtin(bytearray)
def bytearray_(
    tx: Translator, *args: VariableTracker, **kwargs: VariableTracker
) -> VariableTracker:
    """``bytearray(...)`` computed at trace time on constants of C types and bytearrays made in
    the trace, an object whose type defines none of ``_BYTEARRAY_READS`` standing in as an empty
    instance of a class of its C name: CPython's error is raised where it raises. The bytearray it
    makes is a ``ByteArrayVariable``."""
    values = [_bytearray_operand(v) for v in args]
    keywords = {k: _bytearray_operand(v) for k, v in kwargs.items()}
    try:
        return ByteArrayVariable(bytearray(*values, **keywords))
    except Exception as e:  # noqa: BLE001 (CPython's own error, raised in the trace)
        raise PythonError(e) from None


def _bytearray_operand(vt: VariableTracker) -> Any:
    if isinstance(vt, (ByteArrayVariable, MemoryViewVariable)):
        return vt.value  # read, not kept: the new bytearray is a copy
    if vt.is_python_constant() and _of_c_types(vt.as_python_constant()):
        return vt.as_python_constant()
    cls = vt.python_type()
    if any(name in vars(base) for base in cls.__mro__ for name in _BYTEARRAY_READS):
        raise Unsupported("builtin", f"bytearray() on {vt}")
    return type(containers.c_name(cls), (), {})()


def _of_c_types(value: Any) -> bool:
    """``value`` and what ``bytearray`` reads of it run no Python code: a value of a builtin
    type (or a tuple subclass reading as a tuple: ``torch.Size``, a namedtuple), its items too."""
    cls = type(value)
    if cls.__module__ != "builtins" and not (
        issubclass(cls, tuple)
        and all(
            inspect.getattr_static(cls, n, None) is getattr(tuple, n, None)
            for n in _BYTEARRAY_READS
            if n != "__getitem__"  # tuple's ``__iter__`` reads the items, not ``__getitem__``
        )
    ):
        return False
    if isinstance(value, (tuple, list, set, frozenset, dict)):
        return all(map(_of_c_types, value))
    return True


#: pure builtins not computed on a bytearray's contents: they look the object up (``getattr``,
#: its methods are ``ByteArrayVariable``'s) or keep it (``slice(ba).stop is ba``)
_READS_THE_OBJECT = frozenset({getattr, hasattr, slice})


#: pure builtins that show a memoryview's address (its repr): not computed on the trace's view
_SHOWS_THE_ADDRESS = frozenset({repr, str, ascii, format})
_BYTES_MADE = (ByteArrayVariable, MemoryViewVariable)


def _on_bytearrays(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """A pure builtin given bytearrays or memoryviews made in the trace among constants
    (``bytes(ba)``, ``len(m)``, ``max(ba, bb)``): C code reading their contents, all known, so
    computed on the real ones; None where no such object or another kind of value is given."""
    given = [*args, *kwargs.values()]
    if not any(isinstance(a, _BYTES_MADE) for a in given):
        return None
    if fn in _SHOWS_THE_ADDRESS and any(isinstance(a, MemoryViewVariable) for a in given):
        raise Unsupported("builtin", f"{fn.__name__}() of a memoryview shows its address")
    return containers.bytearray_operation(tx, fn, args, kwargs)


@operator_rule(*OPERATORS, first=True)  # ``ba += b"x"`` changes it in place: not ``ba + b"x"``
def bytearrays(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    """An operator on a bytearray or a memoryview made in the trace and constants (``ba +=
    b"!"``, ``ba * 2``, ``del ba[0]``, ``b"a" == ba``, ``m[1:]``): computed on the real object
    (``bytearray_operation``)."""
    if not any(isinstance(a, _BYTES_MADE) for a in args):
        return None
    return containers.bytearray_operation(tx, op, args)


@builtin(memoryview)
def memoryview_(tx: Translator, obj: VariableTracker) -> VariableTracker:
    """``memoryview(b)`` of bytes known at trace time, or of such a view: a value whose reads are
    computed (``MemoryViewVariable``). A bytearray's view is live (a write through either shows
    in the other): not modelled, a break. A value known to lend no buffer (another constant, a
    container, an object of Python classes, a tensor): CPython's TypeError."""
    if isinstance(obj, ByteArrayVariable):
        raise Unsupported("memoryview", "memoryview() of a bytearray: a live view, not modelled")
    if isinstance(obj, MemoryViewVariable):
        return MemoryViewVariable.made(computed(memoryview, [obj.value], {}), (memoryview, (obj,)))
    if obj.is_python_constant() and not isinstance(obj, _CONTAINERS):
        value = obj.as_python_constant()
        if type(value) is bytes:
            return MemoryViewVariable(memoryview(value), (memoryview, (obj,)))
        if not _python_defined(type(value), "__buffer__"):
            computed(memoryview, [value], {})  # CPython's TypeError for a value of no buffer
    elif isinstance(obj, _CONTAINERS) or is_bound_method(obj) or _python_class(obj) is not None:
        stand_in = _stand_in(obj, ("__buffer__",))  # a container, method or object of no buffer
        if stand_in is not _UNKNOWN:
            computed(memoryview, [stand_in], {})  # CPython's TypeError
    elif _plain_tensor(obj):  # a tensor lends no buffer
        computed(memoryview, [_tensor_stand_in(obj)], {})
    raise Unsupported("builtin", f"memoryview() on {obj}")


@builtin(slice)
def slice_(tx: Translator, *args: VariableTracker) -> VariableTracker:
    """``slice(stop)``, ``slice(start, stop[, step])`` with symbolic or tensor bounds."""
    if not 1 <= len(args) <= 3:
        raise Unsupported("python_error", "TypeError: slice expected 1 to 3 arguments")
    return make_slice([ConstantVariable(None), args[0]] if len(args) == 1 else list(args))


@builtin(callable)
def callable_(tx: Translator, value: VariableTracker) -> VariableTracker:
    cls = value.python_type()
    return ConstantVariable(any("__call__" in vars(c) for c in cls.__mro__))


@builtin(map)
def map_(tx: Translator, fn: VariableTracker, *iterables: VariableTracker) -> VariableTracker:
    sources = [dispatch.get_iter(tx, it) for it in iterables]
    return MapVariable([], sources=sources, fn=fn)


@builtin(filter)
def filter_(tx: Translator, fn: VariableTracker, iterable: VariableTracker) -> VariableTracker:
    return FilterVariable([], sources=[dispatch.get_iter(tx, iterable)], fn=fn)


@builtin(object)
def object_(tx: Translator, *args: VariableTracker, **kwargs: VariableTracker) -> VariableTracker:
    """``object()``: a new plain object, made as any class's instance is (``construct_instance``:
    ``object.__new__(object)``, with no attributes and no instance dict)."""
    return objects.construct_instance(tx, tx.wrap_static(object), list(args), kwargs)


@builtin(super)
def super_(tx: Translator, *args: VariableTracker) -> VariableTracker:
    """Zero-argument ``super()``: the ``__class__`` cell and the frame's first argument."""
    if len(args) == 2:
        return SuperVariable.of(tx, *args)
    code = tx.code
    cell = tx.closure.get("__class__")
    if (
        args
        or cell is None
        or not code.co_argcount
        or code.co_varnames[0] not in tx.symbolic_locals
    ):
        raise Unsupported("super", "super() with arguments or outside a method")
    cls = getattr(cell, "cell", None)
    if cls is None:
        raise Unsupported("super", "super() in a class made during the trace")
    return SuperVariable(cls.cell_contents, tx.symbolic_locals[code.co_varnames[0]])


# -- calls, iteration and attribute reads ----------------------------------------------------------
@dispatch.rule("call")
def call_callable(
    tx: Translator,
    fn: VariableTracker,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker:
    """Any call the bytecode makes. A callable with a registered substitute
    (``markers.substitute_for``) runs its Python polyfill instead; one with an entry in
    ``call_rules`` (bytegraph's polyfills of C builtins among them) is traced as the entry says,
    and so is a method bound to an object whose function has a handler entry (``logger.info``:
    ``Logger.info``'s, with the object as its first argument, as CPython calls the function);
    an ``lru_cache``'d function runs the function it wraps."""
    substitute = markers.substitute_for(_callee(fn))
    if substitute is not None:
        return _call_substitute(tx, substitute, args, kwargs)
    target = _callable_value(fn)
    if isinstance(target, _UNBOUND_C_METHODS) and not args and not kwargs:
        raise PythonError(_unbound_error(target))
    if target is not None:
        if numpy_arrays.is_numpy_callable(target):
            return numpy_arrays.call_numpy(tx, target, args, kwargs)
        rule = call_rules.lookup(target)
        if rule is not None:
            made = apply_rule(tx, rule, args, kwargs)
            if made is not None:  # None: the entry declined this form of the call
                return made
        if type(target) is _LRU_WRAPPER:  # the cache only saves time: trace the function itself
            return fn.var_getattr(tx, "__wrapped__").call_function(tx, args, kwargs)
    elif isinstance(fn, UserFunctionVariable) and fn.self_vt is not None:
        rule = call_rules.lookup(fn.fn)
        if rule is not None and rule.handler is not None:  # the other kinds: traced as written
            made = apply_rule(tx, rule, [fn.self_vt, *args], kwargs)
            if made is not None:
                return made
    error = _not_callable(fn)
    if error is not None:
        raise PythonError(error)
    return fn.call_function(tx, args, kwargs)


#: trackers whose ``python_type`` is the real value's class
_TYPED_VALUES = (
    ConstantLikeVariable,  # a constant, a module, a class, a torch value
    ListVariable,
    TupleVariable,
    DictVariable,
    SetVariable,
    TensorVariable,
    UserObjectVariable,
)


def _not_callable(fn: VariableTracker) -> TypeError | None:
    """CPython's TypeError for calling a value whose class has no ``__call__`` (``True()``,
    ``[1]()``, a tensor, a plain object), or None where it may be callable."""
    if not isinstance(fn, _TYPED_VALUES):
        return None
    cls = fn.python_type()
    if any("__call__" in vars(base) for base in cls.__mro__):
        return None
    return TypeError(f"'{containers.c_name(cls)}' object is not callable")


#: bytegraph's polyfills (``tracer/polyfills``, which knows no tracker) are substitute entries.
for _target, _polyfill in polyfills.registry.POLYFILLS.items():
    call_rules.register(
        call_rules.CallRule(_target, substitute=_polyfill, owner=_polyfill.__module__)
    )

_LRU_WRAPPER = type(functools.lru_cache(None)(len))


def apply_rule(
    tx: Translator,
    rule: call_rules.CallRule,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker | None:
    """A call of ``rule.target`` as its entry in ``call_rules`` says (see there)."""
    name = getattr(rule.target, "__name__", repr(rule.target))
    if rule.handler is not None:
        return rule.handler(tx, rule.target, args, kwargs)
    if rule.substitute is not None:
        return UserFunctionVariable(rule.substitute).call_function(tx, args, kwargs)
    if rule.effect == "none":
        return ConstantVariable(None)
    if rule.effect == "python":
        raise Unsupported(
            "torch_effect",
            f"{name}() has effects outside the graph",
            hint="call it outside the compiled function",
        )
    if not value_arguments(args, kwargs):  # a function given would run at trace time only
        raise Unsupported("call", f"{name}() on arguments that are not values known here")
    values = [a.as_python_constant() for a in args]
    named = {k: v.as_python_constant() for k, v in kwargs.items()}
    result = computed(rule.target, values, named)
    if type(result) in (list, tuple, dict):  # ``re.findall``: a new container of constants
        return tx.fold(result)
    return ConstantVariable(result)


#: a C method read from its class (``object.__repr__``, ``list.append``): its first argument is
#: the object it runs on
_UNBOUND_C_METHODS = (types.WrapperDescriptorType, types.MethodDescriptorType)


def _unbound_error(method: Any) -> TypeError:
    """CPython's TypeError for a C method called from its class with no object to run on: the
    call is refused when its arguments are parsed, before the method runs."""
    try:
        method()
    except TypeError as e:
        return e
    raise AssertionError(f"{method!r}() raised nothing")


def _callable_value(fn: VariableTracker) -> Any:
    """The real callable a tracker stands for, when it is one (a class, a C function)."""
    if isinstance(fn, BuiltinVariable):
        return fn.fn
    if isinstance(fn, TorchVariable):  # ``torch.is_tensor``: torch's own Python helpers
        return fn.value
    if isinstance(fn, (ClassVariable, UserObjectVariable)):
        return fn.value
    if isinstance(fn, UserFunctionVariable) and fn.self_vt is None:
        return fn.fn
    if isinstance(fn, ConstantVariable) and isinstance(fn.value, types.BuiltinMethodType):
        return fn.value  # a C method read from a constant (``(7).__subclasshook__``)
    return None


def _callee(fn: VariableTracker) -> Any:
    """The real callable behind ``fn`` where the trace knows it (a constant or a real object)."""
    if fn.is_python_constant():
        return fn.as_python_constant()
    return fn.value if isinstance(fn, UserObjectVariable) else None


def _call_substitute(
    tx: Translator,
    substitute: markers.Substitute,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker:
    values = [*args, *kwargs.values()]
    if substitute.can_constant_fold_through and all(v.is_python_constant() for v in values):
        try:
            result = substitute.original(
                *[a.as_python_constant() for a in args],
                **{k: v.as_python_constant() for k, v in kwargs.items()},
            )
        except Exception:  # it raises: trace the polyfill, which raises the same in the trace
            pass
        else:
            return tx.fold(result)
    return UserFunctionVariable(substitute.polyfill).call_function(tx, args, kwargs)


@dispatch.rule("iterate")
def iterate(tx: Translator, value: VariableTracker) -> list[VariableTracker]:
    """The items of an iterable whose length is known at trace time: a user ``__iter__`` is
    inlined; other trackers list their own items."""
    if _user_iter(value) or _sequence_protocol(value):
        return dispatch.get_iter(tx, value).unpack(tx)
    if _tuple_object(value):  # its length guarded, each item read in place
        tx.output.assume_len(value.source, len(value.value))
        return [_tuple_object_item(tx, value, i) for i in range(len(value.value))]
    return value.unpack(tx)


@dispatch.rule("get_iter")
def get_iter(tx: Translator, value: VariableTracker) -> VariableTracker:
    """``iter(value)`` of anything but an iterator or a dict view: builtin containers give
    CPython-like iterators (``iterators.py``: lists are iterated live, dicts and sets are watched
    for changes), user ``__iter__`` methods are inlined (a generator one stays lazy)."""
    made = iterators.make_iter(tx, value)
    if made is not None:
        return made
    if _user_iter(value):
        result = value.call_method(tx, "__iter__", [], {})
        if objects.python_next(result):
            return objects.UserIteratorVariable([], obj=result)
        if not isinstance(result, IteratorVariable):
            raise Unsupported(
                "python_error", f"__iter__ of {value} returned {result}, not an iterator"
            )
        return result
    if _sequence_protocol(value):
        index = ConstantVariable(0)
        return UserFunctionVariable(sequence_items).call_function(tx, [value, index], {})
    error = containers.not_iterable(value)
    if error is not None:
        raise PythonError(error)
    return IteratorVariable(iterate(tx, value))


def _sequence_protocol(value: VariableTracker) -> bool:
    """A user object that ``iter`` walks by index: its class has ``__getitem__`` in Python and
    no ``__iter__`` (CPython's sequence iterator; ``__iter__ = None`` makes it not iterable)."""
    if not isinstance(value, UserObjectVariable) or isinstance(value, NNModuleVariable):
        return False
    cls = type(value.value)
    return type_lookup(cls, "__iter__") is MISSING and isinstance(
        type_lookup(cls, "__getitem__"), types.FunctionType
    )


def _user_iter(value: VariableTracker) -> bool:
    """A user object whose class defines ``__iter__`` in Python (modules have their own
    iteration)."""
    if not isinstance(value, UserObjectVariable) or isinstance(value, NNModuleVariable):
        return False
    return isinstance(
        inspect.getattr_static(type(value.value), "__iter__", None), types.FunctionType
    )


@dispatch.rule("getattr")
def read_attribute(tx: Translator, obj: VariableTracker, name: str) -> VariableTracker:
    """``obj.name``: the tracker's own attribute protocol; ``obj.__class__`` is ``type(obj)``
    wherever the class keeps ``object``'s descriptor and generic lookup (a tracker whose own
    protocol found the name on ``object`` would otherwise bind it as a method)."""
    if name == "__class__" and _plain_class_attribute(obj):
        return type_(tx, obj)
    return obj.var_getattr(tx, name)


def _plain_class_attribute(obj: VariableTracker) -> bool:
    """Whether ``obj.__class__`` reads ``object``'s descriptor: its class is known, defines no
    ``__class__`` of its own and looks attributes up in C (no ``__getattribute__`` in Python)."""
    try:
        cls = obj.python_type()
    except Unsupported:
        return False
    return type_lookup(cls, "__class__") is _OBJECT_CLASS and isinstance(
        type_lookup(cls, "__getattribute__"), types.WrapperDescriptorType
    )


# -- the general rules of the operation protocol ---------------------------------------------------
# What the opcodes and every family ask through ``dispatch`` (calls, ``iter()`` and attribute reads
# are above); rules of other families for their own trackers take precedence.
dispatch.rule("truth")(truth)
dispatch.rule("is_none")(is_none)
dispatch.rule("is_same")(is_same)
dispatch.rule("contains")(contains)
dispatch.rule("call_operator")(call_operator)
dispatch.rule("call_builtin")(call_builtin)
dispatch.rule("getitem")(getitem)
dispatch.rule("setitem")(setitem)
dispatch.rule("delitem")(delitem)
dispatch.rule("sort_order")(sort_order)


# -- calling a class ----------------------------------------------------------------------------
@dispatch.rule("construct")
def construct_class(
    tx: Translator,
    cls_vt: VariableTracker,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
    through_metaclass: bool = True,
) -> VariableTracker:
    """``cls(*args, **kwargs)`` for a class that is not a builtin type; ``through_metaclass``
    false: ``type.__call__(cls, ...)``, what a metaclass's own ``__call__`` calls to make the
    instance."""
    cls = cls_vt.as_python_constant()
    meta_call = type_lookup(type(cls), "__call__")
    if (
        through_metaclass
        and isinstance(meta_call, types.FunctionType)
        and not isinstance(cls, enum.EnumMeta)
    ):  # a metaclass's own ``__call__`` (a constructor returning a cached or other object)
        return objects.metaclass_call(tx, cls_vt, meta_call).call_function(tx, args, kwargs)
    if cls is contextlib.nullcontext:  # a context the tracer knows (``contexts.py``)
        return construct_builtin_like(tx, cls, args, kwargs)
    if isinstance(cls, enum.EnumMeta):
        return objects.enum_member(cls, args, kwargs)
    if issubclass(cls, nn.Module):
        return modules.construct_module(tx, cls_vt, args, kwargs)
    if objects.python_new(cls) is not None:  # its own ``__new__``, then ``__init__``
        return objects.construct_by_new(tx, cls_vt, args, kwargs, through_metaclass)
    if issubclass(cls, tuple) and hasattr(cls, "_fields") and objects.has_instance_dict(cls):
        return objects.construct_namedtuple_object(tx, cls_vt, args, kwargs)
    if issubclass(cls, tuple) and not hasattr(cls, "_fields") and cls is not tuple:
        return objects.construct_tuple_subclass(tx, cls_vt, args, kwargs)
    if cls is functools.partial or issubclass(cls, tuple):
        return construct_builtin_like(tx, cls, args, kwargs)
    if objects.plain_partial(cls) and args:  # ``class P(functools.partial)`` adding methods only
        return make_partial(args[0], list(args[1:]), dict(kwargs), cls=cls)
    if containers.is_model_output(cls) or makes_builtin_like(cls):
        return construct_builtin_like(tx, cls, args, kwargs)
    if issubclass(cls, dict) and containers.is_user_dict(cls):  # ``class AttrDict(dict)``
        return objects.construct_dict_object(tx, cls_vt, args, kwargs)
    if objects.container_object_base(cls) is not None:  # ``class Batch(list)``, of set, deque
        return objects.construct_container_object(tx, cls_vt, args, kwargs)
    if cls is types.SimpleNamespace:
        return objects.construct_namespace(tx, cls_vt, args, kwargs)
    if cls is weakref.ref:
        return objects.make_ref(tx, args, kwargs)
    return objects.construct_instance(tx, cls_vt, args, kwargs, through_metaclass)


@call_rule(vars(type)["__call__"])
def _type_call(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """``type.__call__(cls, ...)`` in a metaclass's own ``__call__``."""
    return construct_class(tx, args[0], list(args[1:]), kwargs, False) if args else None
