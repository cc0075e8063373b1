"""Python numbers in an ATen graph taken at their Python value.

A float input the graph reads as a symbol (``SymFloat``: a scale, an eps passed as an argument)
reaches our kernels as one scalar argument (``ks0``), as a float of sizes does. AOTAutograd's pass
turning floats into tensor operations (``tensorify_python_scalars``) writes such a float as
``scalar_tensor(zf)``, in the default dtype, float32, and builds the arithmetic on it
(``-zf * 2``, ``zf * zf``) on that tensor: a float64 graph then computed with the float rounded to
float32 (3e-8 off eager), where eager computes with the Python float, a float64. An int symbol in
that arithmetic (``zf * n``) is written the same way, a float32 rounding an int past 2**24.
``widen_float_scalars(gm)`` makes each such ``scalar_tensor`` a float64 (an int's an int64) and
recomputes the dtypes of the 0-d arithmetic the pass built on it; an operation on tensors that
read it with the old dtype (no conversion between) reads it converted back to that dtype, which is
how eager converts a Python scalar for an operation in that dtype. The float itself is passed to
kernels as a float64 argument (``kernel.py``).

Only the pass's nodes are Python numbers: the program's own ``torch.scalar_tensor(3)`` or
``torch.scalar_tensor(zf)`` is a tensor of its dtype, and a Python float with it computes in
float32 as eager does. The pass writes its nodes after tracing, so they carry their value alone;
a node traced from the program records the ATen operation it came from (``original_aten``).
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


#: The dtype holding a symbol of each kind exactly, as Python holds it.
_EXACT = {torch.SymFloat: torch.float64, torch.SymInt: torch.int64}


def _is_float_scalar(node: torch.fx.Node) -> bool:
    """The pass's ``scalar_tensor`` of a symbolic float (or int), in a dtype other than the one
    holding it exactly."""
    if node.target is not aten.scalar_tensor.default or not _made_by_pass(node):
        return False
    exact = _exact_dtype(node.args[0])
    val = node.meta.get("val")
    return exact is not None and isinstance(val, FakeTensor) and val.dtype != exact


def _exact_dtype(value: Any) -> torch.dtype | None:
    symbol = value.meta.get("val") if isinstance(value, torch.fx.Node) else None
    return _EXACT.get(type(symbol))


def _made_by_pass(node: torch.fx.Node) -> bool:
    """Written by the tensorify pass (or by this module), not traced from the program."""
    return node.op == "call_function" and "original_aten" not in node.meta


def _widen(graph: torch.fx.Graph, scalar: torch.fx.Node) -> None:
    val = scalar.meta["val"]
    exact = _exact_dtype(scalar.args[0])
    with val.fake_mode:
        scalar.kwargs = {**scalar.kwargs, "dtype": exact}
        scalar.meta["val"] = val.to(exact)
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
    """A pointwise operation the pass built, giving a 0-d tensor from numbers and the pass's own
    0-d tensors: arithmetic on Python numbers (not one reading a tensor of the program, whose
    dtype must stay its own)."""
    if not _made_by_pass(node) or not isinstance(node.target, torch._ops.OpOverload):
        return False
    val = node.meta.get("val")
    if torch.Tag.pointwise not in node.target.tags or not _is_scalar(val):
        return False
    return all(
        _is_pass_number(a) or _is_scalar_arithmetic(a)
        for a in node.all_input_nodes
        if isinstance(a.meta.get("val"), torch.Tensor)
    )


def _is_pass_number(node: torch.fx.Node) -> bool:
    """A 0-d tensor the pass made of a number: a ``scalar_tensor`` of a symbol or of a constant
    of the expression, or such a number converted to a dtype of its own (an int symbol made
    float64 for ``zf * n``)."""
    if not _made_by_pass(node) or not _is_scalar(node.meta.get("val")):
        return False
    if node.target is prims.convert_element_type.default:
        source = node.args[0]
        return _is_pass_number(source) or _is_scalar_arithmetic(source)
    return node.target is aten.scalar_tensor.default


def _is_scalar(value: Any) -> bool:
    return isinstance(value, FakeTensor) and value.dim() == 0


def _run_fake(node: torch.fx.Node, mode: Any) -> Any:
    args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: n.meta.get("val"))
    with mode:
        return node.target(*args, **kwargs)
