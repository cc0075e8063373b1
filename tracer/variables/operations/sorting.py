"""Ordering traced values: ``sorted``, ``list.sort``, ``min`` and ``max``.

Python's own sort runs at trace time over item indices, with a key that compares the trackers as
CPython compares the values: constants directly, tuples and lists item by item (``_Ordered``),
``functools.cmp_to_key`` keys by calling the traced comparison function (``CmpKeyVariable``), in the
order CPython's sort would call it. Comparing tensors needs their data: a graph break.
"""

from __future__ import annotations

import builtins
import functools
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from ...exc import PythonError, Unsupported
from ..base import VariableTracker
from ..call_rules import call_rule
from ..constants.constant import ConstantVariable
from ..constants.symbolic import SymNodeVariable
from ..containers.builtin_containers import ListVariable, TupleVariable
from ..tensors.tensor import TensorVariable

if TYPE_CHECKING:
    from ...translator import Translator

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
    return lambda i: _Ordered(items[i], what)


class _Ordered:
    """A sort key comparing trackers as CPython compares the values: constants directly, tuples and
    lists item by item (the first pair that is not equal decides), so ``sorted(d.items())`` with
    distinct keys never looks at the tensors; comparing a tensor needs its value (a break)."""

    __slots__ = ("vt", "what")

    def __init__(self, vt: VariableTracker, what: str) -> None:
        self.vt, self.what = vt, what

    def __lt__(self, other: _Ordered) -> bool:
        return _less(self.vt, other.vt, self.what)


def _less(a: VariableTracker, b: VariableTracker, what: str) -> bool:
    if _constant(a) and _constant(b):
        return a.as_python_constant() < b.as_python_constant()
    sequences = (TupleVariable, ListVariable)
    if isinstance(a, sequences) and type(a) is type(b):
        for x, y in zip(a.items, b.items, strict=False):
            if x is y or (
                _constant(x) and _constant(y) and x.as_python_constant() == y.as_python_constant()
            ):
                continue
            return _less(x, y, what)
        return len(a.items) < len(b.items)
    raise Unsupported(
        "data_dependent",
        f"{what}() compares values only known at run time",
        hint="use torch.sort/torch.min/torch.max on tensors",
    )


def compare_sequences(
    tx: Translator, op: Any, a: VariableTracker, b: VariableTracker
) -> VariableTracker | None:
    """``a < b`` (and ``<=``, ``>``, ``>=``, ``==``, ``!=``) of two tuples or two lists, as CPython
    compares them: the first pair of items that are not the same object nor equal constants
    decides (with ``op``); equal prefixes compare by length. None for other operands."""
    sequences = (TupleVariable, ListVariable)
    if op not in _ORDERINGS or not (isinstance(a, sequences) and type(a) is type(b)):
        return None
    for x, y in zip(a.items, b.items, strict=False):
        if x is y or (
            _constant(x) and _constant(y) and x.as_python_constant() == y.as_python_constant()
        ):
            continue
        if not (_constant(x) and _constant(y)):
            return None  # CPython first asks ``bool(x == y)``: for tensors, their data
        if op in (operator.eq, operator.ne):
            return ConstantVariable(op is operator.ne)
        return ConstantVariable(op(x.as_python_constant(), y.as_python_constant()))
    return ConstantVariable(op(len(a.items), len(b.items)))


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
    """0-dim tensors of one dtype, device and ``requires_grad`` (what ``min``/``max`` returns is
    then one of them in all but identity)."""
    if len(items) < 2 or not all(isinstance(i, TensorVariable) for i in items):
        return False
    first = items[0].example
    return all(
        i.example.dim() == 0
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
    """``max(a, b, ...)`` of 0-dim tensors kept in the graph (as torch.compile keeps it) with
    CPython's rule: a later item replaces the current one only when strictly greater (``max``) or
    smaller (``min``), so ties and NaNs keep the earlier item: ``torch.where(b > a, b, a)``."""
    better = operator.gt if pick is builtins.max else operator.lt
    result = items[0]
    for item in items[1:]:
        condition = tx.output.call_function(better, (item, result), {})
        result = tx.output.call_function(torch.where, (condition, item, result), {})
    return result


min_ = _extremum(builtins.min)
max_ = _extremum(builtins.max)


# Bound last: the dispatcher imports this module (a cycle), and needs what it defines above.
from .. import dispatch  # noqa: E402
