"""Python floats in an ATen graph taken at their float64 value.

A float input the graph reads as a symbol (``SymFloat``: a scale, an eps passed as an argument)
reaches our kernels as one scalar argument (``ks0``), as a float of sizes does. AOTAutograd's pass
turning floats into tensor operations (``tensorify_python_scalars``) writes such a float as
``scalar_tensor(zf)``, in the default dtype, float32, and builds the arithmetic on it
(``-zf * 2``, ``zf * zf``) on that tensor: a float64 graph then computed with the float rounded to
float32 (3e-8 off eager), where eager computes with the Python float, a float64.
``widen_float_scalars(gm)`` makes each such ``scalar_tensor`` a float64 one and recomputes the
dtypes of the 0-d arithmetic the pass built on it; an operation on tensors that read it with the
old dtype (no conversion between) reads it converted back to that dtype, which is how eager
converts a Python scalar for an operation in that dtype. The float itself is passed to kernels as a
float64 argument (``kernel.py``).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.fx
from torch._subclasses.fake_tensor import FakeTensor

aten = torch.ops.aten
prims = torch.ops.prims


def widen_float_scalars(gm: torch.fx.GraphModule) -> bool:
    """Rewrite ``gm`` in place as this module's docstring says; whether anything changed."""
    changed = False
    for node in list(gm.graph.nodes):
        if _is_float_scalar(node):
            _widen(gm.graph, node)
            changed = True
    if changed:
        gm.recompile()
    return changed


def _is_float_scalar(node: torch.fx.Node) -> bool:
    """``scalar_tensor`` of a symbolic float, in a floating dtype narrower than float64."""
    if node.op != "call_function" or node.target is not aten.scalar_tensor.default:
        return False
    value, val = node.args[0], node.meta.get("val")
    return (
        isinstance(value, torch.fx.Node)
        and isinstance(value.meta.get("val"), torch.SymFloat)
        and isinstance(val, FakeTensor)
        and val.dtype.is_floating_point
        and val.dtype != torch.float64
    )


def _widen(graph: torch.fx.Graph, scalar: torch.fx.Node) -> None:
    val = scalar.meta["val"]
    with val.fake_mode:
        scalar.kwargs = {**scalar.kwargs, "dtype": torch.float64}
        scalar.meta["val"] = val.to(torch.float64)
    pending = [(scalar, val)]
    while pending:
        node, old = pending.pop()
        for user in list(node.users):
            if user.target is prims.convert_element_type.default:
                continue  # its dtype is its own: the exact float, converted once
            if _is_scalar_arithmetic(user):
                before = user.meta["val"]
                user.meta["val"] = _run_fake(user, before.fake_mode)
                if user.meta["val"].dtype != before.dtype:
                    pending.append((user, before))
                continue
            with graph.inserting_before(user):
                back = graph.call_function(prims.convert_element_type.default, (node, old.dtype))
            back.meta["val"] = old
            user.replace_input_with(node, back)


def _is_scalar_arithmetic(node: torch.fx.Node) -> bool:
    """A pointwise operation giving a 0-d tensor from numbers and 0-d tensors that are themselves
    the pass's ``scalar_tensor``s or such operations: arithmetic the pass built (not one reading a
    0-d tensor of the program, whose dtype must stay its own)."""
    if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
        return False
    val = node.meta.get("val")
    if torch.Tag.pointwise not in node.target.tags or not _is_scalar(val):
        return False
    return all(
        _is_pass_scalar(a) or _is_scalar_arithmetic(a)
        for a in node.all_input_nodes
        if isinstance(a.meta.get("val"), torch.Tensor)
    )


def _is_pass_scalar(node: torch.fx.Node) -> bool:
    """A ``scalar_tensor`` of the kinds the pass makes: a float (widened: float64), or a constant
    of the expression (float64, int64, bool)."""
    val = node.meta.get("val")
    return (
        node.target is aten.scalar_tensor.default
        and isinstance(val, FakeTensor)
        and val.dtype in (torch.float64, torch.int64, torch.bool)
    )


def _is_scalar(value: Any) -> bool:
    return isinstance(value, FakeTensor) and value.dim() == 0


def _run_fake(node: torch.fx.Node, mode: Any) -> Any:
    args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: n.meta.get("val"))
    with mode:
        return node.target(*args, **kwargs)
