"""Per-call cost of compiled ``nn.Module``s as the layer count grows: bytegraph vs
``torch.compile``.

Tiny-width MLPs (width 4, batch 1) so the graph itself costs little and the per-call machinery
(guards, loading parameters, calling the graph) dominates. Both compilers use their eager backend
and run in the same process; bytegraph's forward is monkeypatched (``bytegraph.compile(model)``),
torch's is ``torch.compile(model, backend="eager")``. Plain eager is printed for reference.

    python benchmarks/modules.py            # layers 2, 12, 24
"""

from __future__ import annotations

import argparse
import copy
import time
import warnings

import torch
from torch import nn

import bytegraph


class MLP(nn.Module):
    def __init__(self, layers: int, width: int = 4) -> None:
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(width, width) for _ in range(layers)])
        self.norm = nn.LayerNorm(width)

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return self.norm(x)


def per_call_us(fns: list, x: torch.Tensor, repeat: int, rounds: int = 9) -> list[float]:
    """Per-call time of each of ``fns`` in microseconds: the best of ``rounds`` runs of ``repeat``
    calls, the functions interleaved round by round so load on the machine hits them alike."""
    for fn in fns:
        for _ in range(50):
            fn(x)
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            for _ in range(repeat):
                fn(x)
            best[i] = min(best[i], (time.perf_counter() - start) / repeat)
    return [b * 1e6 for b in best]


def graph_only(compiled: nn.Module, x: torch.Tensor):
    """bytegraph's compiled graph called directly with its inputs already gathered: the graph
    itself."""
    (variant,) = bytegraph.cache_entries(compiled.forward)
    (gm,) = variant.graphs
    scope = {"L": {"self": compiled, "x": x}}
    inputs = [eval(expr, {}, scope) for expr in gm.meta["bytegraph_sources"]]  # noqa: S307
    forward = gm.forward
    return lambda _: forward(*inputs)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", type=int, nargs="*", default=[2, 12, 24])
    parser.add_argument("--repeat", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    torch.manual_seed(0)
    warnings.simplefilter("ignore")
    x = torch.randn(1, 4)
    print("per-call time in us (best of interleaved rounds); overhead = total - the graph alone")
    print(
        f"{'layers':>6} {'params':>6} {'eager':>7} {'graph':>7} {'bytegraph':>9} "
        f"{'torch.compile':>13} "
        f"{'bg overhead':>11} {'tc overhead':>11} {'bg/tc total':>11} {'bg/tc overhead':>14}"
    )
    with torch.no_grad():
        for n in args.layers:
            eager = MLP(n)
            compiled = bytegraph.compile(copy.deepcopy(eager), backend="eager")
            torched = torch.compile(copy.deepcopy(eager), backend="eager")
            for m in (compiled, torched):
                torch.testing.assert_close(m(x), eager(x))
            graph = graph_only(compiled, x)
            t_eager, t_graph, t_bg, t_tc = per_call_us(
                [eager, graph, compiled, torched], x, args.repeat, args.rounds
            )
            params = sum(1 for _ in eager.parameters())
            over_bg, over_tc = t_bg - t_graph, t_tc - t_graph
            print(
                f"{n:>6} {params:>6} {t_eager:>7.1f} {t_graph:>7.1f} {t_bg:>9.1f} {t_tc:>13.1f} "
                f"{over_bg:>11.1f} {over_tc:>11.1f} {t_bg / t_tc:>11.2f} {over_bg / over_tc:>14.2f}"
            )
            assert len(bytegraph.cache_entries(compiled.forward)) == 1


if __name__ == "__main__":
    main()
