"""The size symbols of aliased tensor inputs as graph inputs of their own, for AOTAutograd.

Where two tensor inputs share storage and one is written in place, AOTAutograd traces the graph
on one "synthetic base" input and rebuilds each aliased input from it with ``as_strided(base,
size, stride, offset)``, taking the sizes from the input's fake. With symbolic sizes, a symbol of
a view's size is no function of the base's (bytegraph fakes a view's base with static sizes), so
the tracer has no proxy for it ("s77 is not tracked with proxy"). torch.compile gives every size
symbol to the graph as a ``SymInt`` input; ``lift_size_symbols`` does the same for such graphs:
each symbol becomes a leading placeholder, fed at each call with the size (stride, offset) of the
argument it was read from.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch.fx

#: where a symbol is read at run time: (argument index, "size" | "stride" | "storage_offset", dim)
Read = tuple[int, str, int]


def lift_size_symbols(
    gm: torch.fx.GraphModule, example_inputs: list[Any]
) -> tuple[torch.fx.GraphModule, list[Any], Callable[[tuple[Any, ...]], tuple[Any, ...]]] | None:
    """``(graph, inputs, args_of)`` with the size symbols of ``example_inputs`` as leading inputs
    (``args_of(args)`` turns the original call's arguments into the new graph's), or None where
    no two fake tensor inputs share storage (nothing rebuilt from a synthetic base) or some symbol
    is read at no plain size, stride or offset of an input."""
    fakes = [(i, x) for i, x in enumerate(example_inputs) if _is_fake(x)]
    if not _share_storage([x for _, x in fakes]):
        return None
    reads: dict[Any, tuple[torch.SymInt, Read]] = {}
    for i, x in fakes:
        for kind, values in (("size", x.shape), ("stride", x.stride())):
            for dim, value in enumerate(values):
                _note(reads, value, (i, kind, dim))
        _note(reads, x.storage_offset(), (i, "storage_offset", 0))
    wanted = {s for _, x in fakes for s in _free_symbols(x)}
    if not reads or not wanted <= set(reads):
        return None
    lifted = [reads[s] for s in sorted(wanted, key=str)]
    graph = torch.fx.Graph()
    for n, (sym, _) in enumerate(lifted):
        graph.placeholder(f"size_symbol_{n}").meta["example_value"] = sym
    graph.output(graph.graph_copy(gm.graph, {}))
    module = torch.fx.GraphModule(gm, graph)
    module.meta = dict(gm.meta)
    where = [read for _, read in lifted]

    def args_of(args: tuple[Any, ...]) -> tuple[Any, ...]:
        return (*(_read(args[i], kind, dim) for i, kind, dim in where), *args)

    return module, [sym for sym, _ in lifted] + list(example_inputs), args_of


def compile_lifted(
    compile: Callable[[torch.fx.GraphModule, list[Any]], Callable[..., Any]],
    gm: torch.fx.GraphModule,
    example_inputs: list[Any],
) -> Callable[..., Any]:
    """``compile(gm, example_inputs)``, on the graph with its size symbols lifted where
    ``lift_size_symbols`` lifts them; the result takes ``gm``'s inputs."""
    lifted = lift_size_symbols(gm, example_inputs)
    if lifted is None:
        return compile(gm, example_inputs)
    graph, inputs, args_of = lifted
    compiled = compile(graph, inputs)

    def run(*args: Any) -> Any:
        return compiled(*args_of(args))

    return run


def _is_fake(x: Any) -> bool:
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(x, FakeTensor)


def _share_storage(tensors: list[Any]) -> bool:
    from torch.multiprocessing.reductions import StorageWeakRef

    seen = set()
    for x in tensors:
        ref = StorageWeakRef(x.untyped_storage())
        if ref in seen:
            return True
        seen.add(ref)
    return False


def _free_symbols(x: Any) -> set[Any]:
    values = [*x.shape, *x.stride(), x.storage_offset()]
    return {s for v in values if isinstance(v, torch.SymInt) for s in v.node.expr.free_symbols}


def _note(reads: dict[Any, tuple[torch.SymInt, Read]], value: Any, read: Read) -> None:
    """Record ``value``'s symbol and where it is read, where ``value`` is a bare symbol."""
    if isinstance(value, torch.SymInt) and value.node.expr.is_Symbol:
        reads.setdefault(value.node.expr, (value, read))


def _read(x: torch.Tensor, kind: str, dim: int) -> int:
    if kind == "size":
        return x.size(dim)
    if kind == "stride":
        return x.stride(dim)
    return x.storage_offset()
