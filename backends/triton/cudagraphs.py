"""CUDA graphs for ``mode="reduce-overhead"``: a compiled graph's launches recorded once per input
signature and replayed, so a call costs one graph launch instead of one launch per kernel.

``CudaGraphRunner(call, capture)`` wraps one boxed compiled graph. Per signature (each tensor's
shape, strides, dtype and device, and the ints) the first call runs plainly: that warm-up lets
triton compile and autotune, which a capture cannot do. The second call records. Parameters, and
inputs that came at the same address on both calls, are *static*: the recording reads them in
place and each replay checks their addresses. The other inputs are copied into static buffers
before each replay. Replays return clones of the recorded outputs (the next replay overwrites
those), except outputs that are inputs, which come back as the caller's tensors.

A recording is guarded by its signature and its static addresses: a static input at a new
address (a guard miss) invalidates it, and the next recording copies that input instead. At most
``config.cudagraph_max_recordings`` are kept per runner (least recently used dropped);
``invalidate_all()`` drops every one. ``capture`` is the layer that records: ``CudaCapture``
(``torch.cuda.CUDAGraph``, one memory pool per runner) or, in tests, a stand-in. Graphs on CPU
tensors, or whose recording fails, run without graphs (logged on ``bytegraph.cudagraphs``).
"""

from __future__ import annotations

import logging
import weakref
from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from ..registry import on_reset
from . import config

log = logging.getLogger("bytegraph.cudagraphs")

#: Ops that wait for the device or return data-dependent sizes: a graph holding one cannot be
#: captured (torch.compile skips CUDA graphs for them too).
UNCAPTURABLE_OPS = {
    "aten._local_scalar_dense.default",
    "aten.nonzero.default",
    "aten.masked_select.default",
    "aten.unique.default",
    "aten._unique2.default",
    "aten.item.default",
}


class Capture(Protocol):
    """Records ``fn``'s device work (it reads ``inputs``); returns ``fn``'s outputs, not computed
    yet, and a replay that computes them."""

    def record(
        self, fn: Callable[[], Any], inputs: Sequence[Any]
    ) -> tuple[Any, Callable[[], None]]: ...


class CudaCapture:
    """``torch.cuda.CUDAGraph`` capture; every recording of one runner shares one memory pool
    (replays run one at a time and every output is cloned or returned before the next)."""

    def __init__(self) -> None:
        self.pool: Any = None

    def record(
        self, fn: Callable[[], Any], inputs: Sequence[Any]
    ) -> tuple[Any, Callable[[], None]]:
        torch.cuda.synchronize()
        if self.pool is None:
            self.pool = torch.cuda.graph_pool_handle()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self.pool):
            outputs = fn()
        return outputs, graph.replay


def capture_for(example_inputs: Sequence[Any]) -> Capture | None:
    """The capture layer for a graph with these inputs; None when it cannot use CUDA graphs."""
    tensors = [x for x in example_inputs if isinstance(x, torch.Tensor)]
    if not tensors or any(t.device.type != "cuda" for t in tensors):
        return None
    return CudaCapture()


def skip_reason(example_inputs: Sequence[Any], fallback_ops: Sequence[str]) -> str | None:
    """Why a graph runs without CUDA graphs (None when it can use them)."""
    bad = sorted(set(fallback_ops) & UNCAPTURABLE_OPS)
    if bad:
        return f"it calls {', '.join(bad)}"
    if capture_for(example_inputs) is None:
        return "not every tensor input is on a CUDA device"
    return None


@dataclass
class Recording:
    """One recorded signature: what a replay copies in, checks and hands back."""

    replay: Callable[[], None]
    buffers: dict[int, torch.Tensor]  #: input position -> static buffer (compact) copied into
    static: dict[int, int]  #: input position -> address the recording reads in place
    outputs: list[Any]  #: the recorded outputs (overwritten by every replay)
    passthrough: dict[int, int]  #: output position -> input position it is


_RUNNERS: weakref.WeakSet[CudaGraphRunner] = weakref.WeakSet()


@on_reset
def invalidate_all() -> None:
    """Drop every recording of every runner (they are recorded again on their next calls)."""
    for runner in list(_RUNNERS):
        runner.invalidate()


class CudaGraphRunner:
    """A boxed callable: ``runner(args)`` with a list it empties, as the wrapped ``call``."""

    _boxed_call = True

    def __init__(self, call: Callable[[list], Any], capture: Capture) -> None:
        self.call = call
        self.capture = capture
        self.recordings: OrderedDict[tuple, Recording] = OrderedDict()
        self.first_addresses: dict[tuple, list[int | None]] = {}
        self.copied: dict[tuple, set[int]] = {}  #: positions demoted to copies by a guard miss
        self.disabled: str | None = None
        self.stats: Counter[str] = Counter()  #: warmups, records, replays, invalidations
        _RUNNERS.add(self)

    def __call__(self, args: list) -> Any:
        values = list(args)
        args.clear()
        if self.disabled is not None:
            return self.call(values)
        key = signature(values)
        rec = self.recordings.get(key)
        if rec is not None:
            moved = [i for i, ptr in rec.static.items() if values[i].data_ptr() != ptr]
            if not moved:
                self.recordings.move_to_end(key)
                return self.replay(rec, values)
            log.info("static inputs %s moved: recording invalidated", moved)
            self.copied.setdefault(key, set()).update(moved)
            del self.recordings[key]
            self.stats["invalidations"] += 1
        if key not in self.first_addresses:
            self.first_addresses[key] = addresses(values)
            self.stats["warmups"] += 1
            return self.call(values)
        return self.record(key, values)

    def record(self, key: tuple, values: list) -> Any:
        first, copied = self.first_addresses[key], self.copied.get(key, set())
        static: dict[int, int] = {}
        buffers: dict[int, torch.Tensor] = {}
        inputs = list(values)
        for i, v in enumerate(values):
            if not isinstance(v, torch.Tensor):
                continue
            stable = first[i] == v.data_ptr() and i not in copied
            if isinstance(v, torch.nn.Parameter) or stable:
                static[i] = v.data_ptr()
            else:
                inputs[i], buffers[i] = static_copy(v)
        try:
            outputs, replay = self.capture.record(lambda: self.call(list(inputs)), inputs)
        except Exception as e:  # e.g. an op that synchronizes: run this graph without graphs
            self.disabled = f"{type(e).__name__}: {e}"
            log.warning("CUDA graph recording failed (%s); running without graphs", self.disabled)
            return self.call(values)
        outputs = list(outputs)
        passthrough = {
            k: i
            for k, out in enumerate(outputs)
            for i, x in enumerate(inputs)
            if isinstance(out, torch.Tensor) and out is x
        }
        rec = Recording(replay, buffers, static, outputs, passthrough)
        self.recordings[key] = rec
        self.stats["records"] += 1
        while len(self.recordings) > config.cudagraph_max_recordings:
            self.recordings.popitem(last=False)
        return self.replay(rec, values)

    def replay(self, rec: Recording, values: list) -> list[Any]:
        for i, buf in rec.buffers.items():
            src = compact(values[i])
            if buf.data_ptr() != src.data_ptr():
                buf.copy_(src)
        rec.replay()
        self.stats["replays"] += 1
        out = []
        for k, o in enumerate(rec.outputs):
            if k in rec.passthrough:
                out.append(values[rec.passthrough[k]])
            elif isinstance(o, torch.Tensor):
                out.append(o.clone())
            else:
                out.append(o)
        return out

    def invalidate(self) -> None:
        self.recordings.clear()
        self.first_addresses.clear()


def signature(values: Sequence[Any]) -> tuple:
    """What a recording is specialised to: tensor layouts and every non-tensor value."""
    parts: list[Any] = []
    for v in values:
        if isinstance(v, torch.Tensor):
            parts.append((tuple(v.shape), v.stride(), v.dtype, v.device, v.storage_offset()))
        elif isinstance(v, int | float | bool | type(None)):
            parts.append(v)
        else:
            parts.append(id(v))
    return tuple(parts)


def addresses(values: Sequence[Any]) -> list[int | None]:
    return [v.data_ptr() if isinstance(v, torch.Tensor) else None for v in values]


def compact(t: torch.Tensor) -> torch.Tensor:
    """``t`` without its broadcast dims (size > 1, stride 0) narrowed to one element: the part a
    copy can write."""
    for d, (n, st) in enumerate(zip(t.shape, t.stride(), strict=True)):
        if n > 1 and st == 0:
            t = t.narrow(d, 0, 1)
    return t


def static_copy(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A copy of ``t`` with its layout (strides, storage offset, broadcast dims): the tensor the
    recording reads, and the compact part of it that replays copy into."""
    small = compact(t)
    extent = 1 + sum((n - 1) * st for n, st in zip(small.shape, small.stride(), strict=True))
    extent = extent if small.numel() else 0
    base = torch.empty(small.storage_offset() + extent, dtype=t.dtype, device=t.device)
    buf = base.as_strided(small.shape, small.stride(), small.storage_offset()).copy_(small)
    return buf.expand(t.shape), buf
