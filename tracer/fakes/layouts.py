"""Tensor layouts on plain ints: what torch's Python shape functions compute, without them.

torch's meta kernels (``torch._refs``, ``torch._prims``, ``torch._meta_registrations``) decide an
output's strides with helpers that work on symbolic sizes: each call goes through
``torch.fx.experimental.symbolic_shapes``, whose import loads sympy (a quarter of a second of a
fresh process). For static shapes the same rules are a few lines over ints; ``elementwise_meta``
and ``static_meta`` build their outputs from these. Every function here takes sizes of at least 1
(callers leave empty tensors to torch's kernels).
"""

from __future__ import annotations

from collections.abc import Sequence

Shape = tuple[int, ...]


def contiguous_strides(shape: Sequence[int]) -> Shape:
    """The strides of ``torch.empty(shape)``."""
    strides = [1] * len(shape)
    step = 1
    for dim in range(len(shape) - 1, -1, -1):
        strides[dim] = step
        step *= max(shape[dim], 1)
    return tuple(strides)


def is_contiguous(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """torch's ``is_contiguous``: size-1 dimensions have any stride."""
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides), strict=True):
        if size == 1:
            continue
        if stride != expected:
            return False
        expected *= size
    return True


def is_channels_last(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """torch's ``is_contiguous(memory_format=torch.channels_last)`` (false unless 4-d)."""
    if len(shape) != 4:
        return False
    expected = 1
    for dim in (1, 3, 2, 0):
        if shape[dim] == 1:
            continue
        if strides[dim] != expected:
            return False
        expected *= shape[dim]
    return True


def channels_last_strides(shape: Sequence[int]) -> Shape:
    """The strides of ``torch.empty(shape, memory_format=channels_last)`` (``channels_last_3d``
    for 5-d): channels innermost, then the spatial dimensions, the batch outermost."""
    order = [0, *range(2, len(shape)), 1]  # outermost first
    return _dense_in_order(shape, order)


def strides_like_channels_last(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """torch's ``suggest_memory_format(t) != contiguous_format`` for a 4-d or 5-d ``t``: its
    strides grow from channels through the spatial dimensions to the batch."""
    if len(shape) not in (4, 5) or strides[1] == 0:
        return False
    smallest = 0
    for dim in (1, *range(len(shape) - 1, 1, -1), 0):
        if strides[dim] < smallest:
            return False
        if dim == 0 and smallest == strides[1]:
            return False
        smallest = strides[dim] * shape[dim]
    return True


def broadcast_shape(shapes: Sequence[Sequence[int]]) -> Shape | None:
    """The shape the given shapes broadcast to, or None where they do not (torch raises)."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for shape in shapes:
        for i, size in enumerate(shape, start=ndim - len(shape)):
            if size != out[i]:
                if out[i] != 1 and size != 1:
                    return None
                if size != 1:
                    out[i] = size
    return tuple(out)


def expanded_strides(shape: Sequence[int], strides: Sequence[int], target: Sequence[int]) -> Shape:
    """The strides of ``t.expand(target)`` for ``t`` of ``shape``/``strides`` (torch's
    ``inferExpandGeometry``): a broadcast dimension gets stride 0; a new leading dimension of size
    1 the stride that keeps it contiguous with the next."""
    ndim = len(target)
    out = [0] * ndim
    for i in range(ndim - 1, -1, -1):
        dim = i - (ndim - len(shape))
        if dim >= 0:
            size, stride = shape[dim], strides[dim]
        else:
            size, stride = 1, (target[i + 1] * out[i + 1] if i + 1 < ndim else 1)
        out[i] = 0 if size != target[i] else stride
    return tuple(out)


def elementwise_strides(shape: Sequence[int], operands: Sequence[Sequence[int]]) -> Shape:
    """The strides of an elementwise result of ``shape`` whose operands, broadcast to ``shape``,
    have the given strides (in argument order): dense, with its dimensions in the order of the
    operands' strides (torch's ``compute_elementwise_output_logical_to_physical_perm`` and
    ``empty_permuted``). The first operand that orders two dimensions decides."""
    ndim = len(shape)
    if ndim <= 1 or not operands:
        return contiguous_strides(shape)
    contiguous = all(is_contiguous(shape, s) for s in operands)
    channels_last = all(is_channels_last(shape, s) for s in operands)
    if contiguous and not channels_last:
        perm = list(range(ndim))
    elif channels_last and not contiguous:
        perm = [0, *range(2, ndim), 1]
    else:
        perm = _sorted_dims(shape, operands)
    return _dense_in_order(shape, perm)


def elementwise_step(*operands: tuple[Sequence[int], Sequence[int]]) -> tuple[Shape, Shape] | None:
    """Shape and strides of one elementwise step over ``(shape, strides)`` operands, in argument
    order: broadcast, expanded, laid out by ``elementwise_strides``; None if they do not
    broadcast."""
    shape = broadcast_shape([s for s, _ in operands])
    if shape is None:
        return None
    laid = [expanded_strides(s, strides, shape) for s, strides in operands]
    return shape, elementwise_strides(shape, laid)


def _dense_in_order(shape: Sequence[int], perm: Sequence[int]) -> Shape:
    """Dense strides with the dimensions laid out in ``perm`` order, outermost first."""
    physical = contiguous_strides([shape[d] for d in perm])
    strides = [0] * len(shape)
    for position, dim in enumerate(perm):
        strides[dim] = physical[position]
    return tuple(strides)


def _sorted_dims(shape: Sequence[int], operands: Sequence[Sequence[int]]) -> list[int]:
    """Dimensions outermost first: an insertion sort, innermost first, by the operands' strides
    (a stride of 0 says nothing; equal strides put the longer dimension outside)."""

    def order(a: int, b: int) -> int:  # 1: b is inside a (swap); -1: a is inside b; 0: unknown
        for strides in operands:
            sa, sb = strides[a], strides[b]
            if sa == 0 or sb == 0:
                continue
            if sa == sb:
                if shape[b] >= shape[a]:
                    continue
                return 1
            return -1 if sb >= sa else 1
        return 0

    perm = list(range(len(shape) - 1, -1, -1))
    for i in range(1, len(perm)):
        moving = i
        for j in range(i - 1, -1, -1):
            comparison = order(perm[j], perm[moving])
            if comparison > 0:
                perm[j], perm[moving] = perm[moving], perm[j]
                moving = j
            elif comparison < 0:
                break
    return perm[::-1]
