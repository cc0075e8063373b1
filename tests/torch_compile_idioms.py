"""torch.compile's own module idioms, measured: ``measure(name, after_bytegraph)`` builds a fresh
world for case ``name`` (modules and a function using them), optionally lets bytegraph compile code
that calls those modules first (they are then observed by its module-tree checks, their member dicts
watched), then runs the function under torch.compile and eagerly (each on its own world) and
returns what torch.compile did: graphs compiled over ``CALLS`` calls (a recompile shows), Dynamo's
graph and break counts (``torch._dynamo.explain``), and whether results and module state matched
eager's.

Run as a script (``python torch_compile_idioms.py``) it prints ``measure(name, False)`` of every
case as JSON: ``tests/modules/test_coexists_with_torch_compile.py`` runs it in a process without
bytegraph, for the counts torch.compile has when bytegraph's patches are not installed.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

CALLS = 3


class Counted(nn.Module):
    """A buffer updated in place and one reassigned on every call."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("calls", torch.zeros(1))
        self.register_buffer("running", torch.zeros(4))

    def forward(self, x):
        self.calls.add_(1)
        self.running = self.running * 0.5 + x.mean(0)
        return self.lin(x) + self.calls


def doubling_hook(module, args, out):
    return out * 2


def _eval_train_toggle():
    m = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4), nn.Dropout(0.0))

    def fn(x):
        m.eval()
        y = m(x)
        m.train()
        return y

    return fn, [m]


def _training_attribute():
    m = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))

    def fn(x):
        m[1].training = False
        y = m(x)
        m[1].training = True
        return y

    return fn, [m]


def _buffers_updated():
    m = Counted()
    return (lambda x: m(x)), [m]


def _register_buffer():
    m = Counted()

    def fn(x):
        m.register_buffer("extra", x.sum(0))
        return m(x) + m.extra

    return fn, [m]


def _to_dtype():
    m = nn.Sequential(nn.Linear(4, 4), nn.ReLU())

    def fn(x):
        m.to(torch.float32)
        return m(x)

    return fn, [m]


def _parameter_assigned():
    m = nn.Linear(4, 4)

    def fn(x):
        m.weight = nn.Parameter(torch.ones(4, 4))
        return m(x)

    return fn, [m]


def _requires_grad_toggle():
    m = nn.Linear(4, 4)

    def fn(x):
        m.weight.requires_grad_(False)
        y = m(x)
        m.weight.requires_grad_(True)
        return y

    return fn, [m]


def _hook_registered_outside():
    m = nn.Linear(4, 4)
    m.register_forward_hook(doubling_hook)
    return (lambda x: m(x)), [m]


def _hook_registered_inside():
    m = nn.Linear(4, 4)

    def fn(x):
        h = m.register_forward_hook(doubling_hook)
        y = m(x)
        h.remove()
        return y

    return fn, [m]


def _submodule_assigned():
    m = nn.Sequential(nn.Linear(4, 4))

    def fn(x):
        m.act = nn.ReLU()
        return m(x)

    return fn, [m]


def _parameter_data_set():
    m = nn.Linear(4, 4)

    def fn(x):
        m.weight.data = m.weight.data * 0.5
        return m(x)

    return fn, [m]


def _module_requires_grad():
    m = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4))

    def fn(x):
        m.requires_grad_(False)
        y = m(x)
        m.requires_grad_(True)
        return y

    return fn, [m]


def _attribute_deleted():
    m = nn.Linear(4, 4)

    def fn(x):
        m.scale = 2.0
        y = m(x) * m.scale
        del m.scale
        return y

    return fn, [m]


CASES: dict[str, Callable[[], tuple[Callable[..., Any], list[nn.Module]]]] = {
    "eval_train_toggle": _eval_train_toggle,
    "training_attribute": _training_attribute,
    "buffers_updated": _buffers_updated,
    "register_buffer": _register_buffer,
    "to_dtype": _to_dtype,
    "parameter_assigned": _parameter_assigned,
    "requires_grad_toggle": _requires_grad_toggle,
    "hook_registered_outside": _hook_registered_outside,
    "hook_registered_inside": _hook_registered_inside,
    "submodule_assigned": _submodule_assigned,
    "parameter_data_set": _parameter_data_set,
    "module_requires_grad": _module_requires_grad,
    "attribute_deleted": _attribute_deleted,
}


def _world(name: str, seed: int = 0):
    torch.manual_seed(seed)
    return CASES[name]()


def _run(fn, modules, engine) -> list[Any]:
    """Results of ``CALLS`` calls, and the modules' state after them."""
    torch.manual_seed(1)
    outs = [engine(fn)(torch.randn(3, 4)) for _ in range(CALLS)]
    state = [{k: v.clone() for k, v in m.state_dict().items()} for m in modules]
    return [o.detach() for o in outs], state


def _same(a: Any, b: Any) -> bool:
    outs_a, state_a = a
    outs_b, state_b = b
    return all(torch.allclose(x, y) for x, y in zip(outs_a, outs_b, strict=True)) and all(
        sa.keys() == sb.keys() and all(torch.allclose(sa[k], sb[k]) for k in sa)
        for sa, sb in zip(state_a, state_b, strict=True)
    )


def _warm_up(modules: list[nn.Module], through_bytegraph: bool) -> None:
    """Each module called once, by code that bytegraph compiles (or eagerly, for comparison)."""
    torch.manual_seed(2)
    for m in modules:
        call = lambda x, m=m: m(x)  # noqa: E731
        if through_bytegraph:
            import bytegraph

            call = bytegraph.compile(call, backend="eager")
        with torch.no_grad():
            call(torch.randn(3, 4))


def measure(name: str, after_bytegraph: bool) -> dict[str, Any]:
    import torch._dynamo
    from torch._dynamo.testing import CompileCounter

    fn, modules = _world(name)
    _warm_up(modules, through_bytegraph=False)
    expected = _run(fn, modules, lambda f: f)
    fn, modules = _world(name)
    _warm_up(modules, through_bytegraph=after_bytegraph)
    torch._dynamo.reset()
    counter = CompileCounter()
    compiled = torch.compile(fn, backend=counter)
    got = _run(fn, modules, lambda f: compiled)
    fn, modules = _world(name)
    _warm_up(modules, through_bytegraph=after_bytegraph)
    torch._dynamo.reset()
    torch.manual_seed(1)
    explained = torch._dynamo.explain(fn)(torch.randn(3, 4))
    torch._dynamo.reset()
    return {
        "frames": counter.frame_count,
        "graphs": explained.graph_count,
        "breaks": explained.graph_break_count,
        "same_as_eager": _same(got, expected),
    }


if __name__ == "__main__":
    assert "bytegraph" not in sys.modules
    json.dump({name: measure(name, after_bytegraph=False) for name in CASES}, sys.stdout)
    assert "bytegraph" not in sys.modules
