"""Objects that reach a trace as inputs, most often because a graph break rebuilt them for the
resume function: dict views, ``torch.finfo``/``torch.iinfo`` objects, and methods
bound to a list, dict, set or tensor (``app = l.append``, ``split = t.split``).

Each becomes the tracker the trace would have made itself, so the code after a break reads them as
the code before it did:

- a dict view (``d.keys()``, ``d.values()``, ``d.items()``, an ``OrderedDict``'s too) is a
  ``DictViewVariable`` over the tracker of the very dict it views (read through
  ``ViewedDictSource``): like CPython's view, it sees every later write to that dict, and the
  dict reached another way is the same tracker;
- a ``finfo``/``iinfo`` is a constant, guarded on the dtype it describes (its attributes are
  read-only functions of the dtype);
- ``l.append`` bound to a tracked container is that container's method (``BoundMethodVariable``),
  so calling it changes the container as the trace records it; ``",".join`` is a constant;
- ``t.split`` bound to a tensor input is that tensor's method (``TensorMethodVariable``), so a
  call is traced on the graph input as ``t.split(...)`` is, never run on the real tensor at trace
  time (whose result would be a constant of the graph: stale for the next call's tensor).

Iterators given as inputs are ``iterators.wrap_input_iterator``'s.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from ...guards.sources import AttrSource, ChainedSource, Source
from .base import VariableTracker
from .constants import LITERAL_TYPES, ConstantVariable
from .containers import (
    _ORDERED_VIEW_TYPES,
    _VIEW_TYPES,
    BoundMethodVariable,
    DictVariable,
    DictViewVariable,
    ListVariable,
    SetVariable,
)
from .tensors import TensorMethodVariable, TensorVariable

if TYPE_CHECKING:
    from ...codegen.emit import Emitter
    from ..translator import Translator

_VIEW_KINDS = {
    cls: kind for table in (_VIEW_TYPES, _ORDERED_VIEW_TYPES) for kind, cls in table.items()
}
_TYPE_INFO = (torch.finfo, torch.iinfo)


def viewed_dict(view: Any) -> dict:
    """Runtime helper (and what guards render): the dict a dict view shows, or a dict iterator
    walks. A view holds its dict and nothing else, so it is the one object the view refers to
    (``view.mapping`` is only a read-only proxy of it); an iterator refers to its dict first."""
    return gc.get_referents(view)[0]


@dataclass(frozen=True)
class ViewedDictSource(ChainedSource):
    """The dict a dict view (or dict iterator) ``base`` shows:
    ``__import__('gc').get_referents(L['k'])[0]``."""

    def render(self, roots: dict[str, str]) -> str:
        return f"__import__('gc').get_referents({self.base.render(roots)})[0]"

    def reconstruct(self, cg: Emitter) -> None:
        cg.load_const(viewed_dict)
        self.base.reconstruct(cg)
        cg.call_function(1)


def wrap_live_input(tx: Translator, value: Any, source: Source) -> VariableTracker | None:
    """The tracker for ``value`` read through ``source`` if it is one of this module's kinds,
    else None."""
    cls = type(value)
    if cls in _VIEW_KINDS:
        return _wrap_view(tx, value, source, _VIEW_KINDS[cls])
    if cls in _TYPE_INFO:
        tx.output.assume_type(source, cls)
        dtype = AttrSource(source, "dtype")  # a str: ``'float32'``
        tx.output.assume_type(dtype, str)
        tx.output.assume_equal(dtype, value.dtype)
        return ConstantVariable(value, source)
    return None


def _wrap_view(tx: Translator, value: Any, source: Source, kind: str) -> VariableTracker | None:
    tx.output.assume_type(source, type(value))
    dict_vt = tx.wrap(viewed_dict(value), ViewedDictSource(source))
    if not isinstance(dict_vt, DictVariable):  # keys the trace does not model as a dict's
        return None
    return DictViewVariable(dict_vt, kind, source=source)


def bound_container_method(
    tx: Translator, method: Any, owner: VariableTracker, source: Source
) -> VariableTracker | None:
    """``method``, a method bound to the object ``owner`` tracks (what it is bound to guarded by
    the caller), as the trace's own ``owner.name``; None unless ``owner`` is a list, dict or set
    tracker (a C method), a literal (``",".join``: a constant, as its owner is) or a tensor (a
    C or Python method), and ``method`` is the method its type gives that name."""
    name = method.__name__
    if getattr(method.__self__, name, None) != method:  # e.g. ``dict.get`` bound to a subclass
        return None
    if isinstance(owner, TensorVariable):
        bound = owner.var_getattr(tx, name)
        return bound.clone(source=source) if isinstance(bound, TensorMethodVariable) else None
    if isinstance(owner, ConstantVariable) and type(owner.value) in LITERAL_TYPES:
        return ConstantVariable(method, source)
    if not isinstance(owner, (ListVariable, DictVariable, SetVariable)):
        return None
    bound = owner.var_getattr(tx, name)
    return bound.clone(source=source) if isinstance(bound, BoundMethodVariable) else None
