"""Differential tests for the constructs of vision model libraries (timm, torchvision, diffusers;
issue 20), each written as a small function with the library's pattern, so they run without the
libraries: ``torch._assert`` checks, torchvision's API-usage logging, ``inspect.signature``
parameter views, ``OrderedDict`` output classes, a ``Sequential`` loop resumed after a break in a
callee, concatenations of differently sized tensors across a recompile."""

from __future__ import annotations

import inspect
from collections import OrderedDict
from dataclasses import dataclass, fields
from types import FunctionType

import pytest
import torch
import torch._dynamo
from difftest import check_breaks, compile_counted
from torch import nn

import bytegraph


def dynamo_counts(fn, *args) -> tuple[int, int]:
    """torch.compile's (graphs, breaks) for ``fn(*args)``."""
    torch._dynamo.reset()
    explained = torch._dynamo.explain(fn)(*args)
    return explained.graph_count, explained.graph_break_count


# -- torch._assert ---------------------------------------------------------------------------------


def norm_act(x):  # timm's norm-act layers: ``_assert(x.ndim == 4, ...)`` on every call
    torch._assert(x.ndim == 4, "expected a 4D input")
    torch._assert(x.shape[1] == 3, f"expected 3 channels, got {x.shape[1]}")
    return torch.nn.functional.relu(x * 2)


def test_assert_on_python_bools_is_checked_in_the_trace():
    check_breaks(norm_act, lambda: (torch.randn(2, 3, 4, 4),), graphs=1, breaks=0)
    assert dynamo_counts(norm_act, torch.randn(2, 3, 4, 4)) == (1, 0)


def test_assert_failing_raises_as_eager():
    """An exception nothing in the trace catches is raised by CPython: a break before it."""
    check_breaks(norm_act, lambda: (torch.randn(2, 5, 4, 4),), graphs=0, breaks=1)


def test_assert_on_a_symbolic_size_is_guarded():
    def fn(x):
        torch._assert(x.shape[0] % 2 == 0, "even batch")
        return x.sum(0)

    compiled, counter = compile_counted(fn, dynamic=True)
    for n in (2, 4, 6):
        torch.testing.assert_close(compiled(torch.ones(n, 3)), fn(torch.ones(n, 3)))
    assert counter.frame_count == 1
    with pytest.raises(AssertionError, match="even batch"):
        compiled(torch.ones(3, 3))


#: torch.compile's (graphs, breaks) for ``torch._assert`` on a tensor: up to torch 2.14 it breaks
#: (``aten._local_scalar_dense``); from 2.15 it records ``torch._assert_async`` in the graph (one
#: graph, no break), whose failing check raises RuntimeError at run time, not eager's
#: AssertionError.
_DYNAMO_ASSERT_COUNTS = (
    (1, 0) if tuple(int(p) for p in torch.__version__.split(".")[:2]) >= (2, 15) else (2, 1)
)


def test_assert_on_a_tensor_is_a_deferred_check():
    """A tensor's truth is data the trace does not know: the check is deferred to after the graph
    (``tracer/breaks/deferred_checks.py``): one graph, no break, and a failing check reruns the call
    in Python, which raises eager's AssertionError (torch 2.15's Dynamo raises RuntimeError)."""

    def fn(x):
        y = x * 2
        torch._assert((y > -100).all(), "out of range")
        return y + 1

    compiled, counter, _ = check_breaks(fn, lambda: (torch.randn(3),), graphs=1, breaks=0)
    # failing: the same graph runs, its check fails, the call runs in Python and raises
    check_breaks(
        fn,
        lambda: (torch.full((3,), -200.0),),
        graphs=1,
        breaks=0,
        compiled=compiled,
        counter=counter,
    )
    assert dynamo_counts(fn, torch.randn(3)) == _DYNAMO_ASSERT_COUNTS


# -- torchvision's _log_api_usage_once ------------------------------------------------------------


def _log_api_usage_once(obj) -> None:  # torchvision.utils._log_api_usage_once
    module = obj.__module__
    if not module.startswith("torchvision"):
        module = f"torchvision.internal.{module}"
    name = obj.__class__.__name__
    if isinstance(obj, FunctionType):
        name = obj.__name__
    torch._C._log_api_usage_once(f"{module}.{name}")


def stochastic_depth(x, p: float, training: bool):
    _log_api_usage_once(stochastic_depth)  # torchvision.ops.stochastic_depth
    if not training or p == 0.0:
        return x
    return x * 0.5


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        _log_api_usage_once(self)
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        _log_api_usage_once(self)
        return stochastic_depth(self.lin(x), 0.2, self.training) + x


def test_api_usage_logging_is_a_no_op_in_the_graph():
    torch.manual_seed(0)
    check_breaks(Block().eval(), lambda: (torch.randn(2, 4),), graphs=1, breaks=0)
    torch.manual_seed(0)  # a model of its own: bytegraph's compiled one carries its hooks
    assert dynamo_counts(Block().eval(), torch.randn(2, 4)) == (1, 0)


class Scaler:
    def scale(self, x):
        return x * 2


def test_class_of_a_function_and_of_a_bound_method():
    scaler = Scaler()

    def fn(x):
        names = stochastic_depth.__class__.__name__, scaler.scale.__class__.__name__
        return scaler.scale(x) + len(names[0]) + len(names[1])

    check_breaks(fn, lambda: (torch.randn(3),), graphs=1, breaks=0)


# -- crash 1: a Sequential loop resumed after a break in a callee ---------------------------------


def test_dispatcher_parenthesises_a_shape_guard_with_or():
    """A resume function of ``Sequential.forward`` (torchvision efficientnet_b0) has one variant
    per number of modules left; a variant's conditions included a shape guard ``a > 0 or b > 0``
    that, joined bare to ``len(stack) == 5 and ...``, made the dispatcher pick it for 4 modules
    left (``IndexError: tuple index out of range`` in the variant)."""
    from bytegraph.guards import kinds
    from bytegraph.guards.cache import FunctionCache, Variant
    from bytegraph.guards.sources import LocalSource, ShapeExprSource

    cache = FunctionCache("f", {}, {}, ("n", "a", "b"))
    n, a, b = LocalSource("n"), LocalSource("a"), LocalSource("b")
    either = ShapeExprSource("{0} > 0 or {1} > 0", (a, b))
    guards = cache.new_guard_set([kinds.EQUALS_MATCH(n, 5), kinds.SHAPE_EXPR(None, either)])
    cache.add(Variant(guards, lambda n, a, b: "five left"))
    assert cache.guard_fn(5, 0, 1) is not None
    assert cache.guard_fn(4, 0, 1) is None  # 4 modules left: not this variant
    assert cache.guard_fn(4, 1, 0) is None


def _usage_break(obj) -> None:  # a callee that breaks, as torchvision's logging did
    bytegraph.graph_break()


class ConvBlock(nn.Module):
    def __init__(self, c: int):
        super().__init__()
        self.block = nn.Sequential(nn.Conv2d(c, c, 3, padding=1, groups=c), nn.ReLU())

    def forward(self, x):
        out = self.block(x)
        _usage_break(self)
        out += x
        return out


def test_sequential_loop_resumed_after_a_break_in_a_callee():
    """``for module in self: input = module(input)`` interrupted in a callee at every block, in
    nested Sequentials, on inputs whose sizes change (resume functions recompile with dynamic
    sizes and one variant per number of modules left)."""
    torch.manual_seed(0)
    blocks = [ConvBlock(4) for _ in range(4)]
    model = nn.Sequential(
        nn.Conv2d(2, 4, 1), nn.Sequential(*blocks[:3]), nn.Sequential(blocks[3]), nn.Conv2d(4, 2, 1)
    ).eval()
    compiled, _ = compile_counted(model)
    with torch.no_grad():
        for size in (8, 12, 16, 8, 12):
            x = torch.randn(1, 2, size, size)
            torch.testing.assert_close(compiled(x), model(x))


# -- crash 2: sizes turned dynamic by a recompile, concatenations of different sizes --------------


class DualPath(nn.Module):
    """timm's DPN block: a residual path and a densely growing path, split and concatenated."""

    def __init__(self, c_in: int, split: int, inc: int):
        super().__init__()
        self.split = split
        self.conv = nn.Conv2d(c_in, split + inc, 1)
        self.proj = nn.Conv2d(c_in, split + 2 * inc, 1)

    def forward(self, x):
        x_in = torch.cat(x, dim=1) if isinstance(x, tuple) else x
        _usage_break(self)  # timm's ``_assert`` broke here before it was traced
        x_s = self.proj(x_in)
        x_s1, x_s2 = x_s[:, : self.split], x_s[:, self.split :]
        out = self.conv(x_in)
        out1, out2 = out[:, : self.split], out[:, self.split :]
        return x_s1 + out1, torch.cat([x_s2, out2], dim=1)


def test_recompile_to_dynamic_sizes_with_concatenations_of_different_sizes():
    """timm dpn68: after a recompile made sizes dynamic, a resume function added tensors of
    different sizes (``tensor a (8) must match tensor b (16)``); each op on fake inputs must keep
    the real sizes' relations, and the dispatcher pick the variant of the inputs it gets."""
    torch.manual_seed(0)
    model = nn.Sequential(DualPath(2, 4, 2), DualPath(10, 4, 3), DualPath(13, 4, 1)).eval()
    compiled, _ = compile_counted(model)
    with torch.no_grad():
        for size in (8, 16, 12, 8, 16, 4):
            x = torch.randn(1, 2, size, size)
            for got, want in zip(compiled(x), model(x), strict=True):
                torch.testing.assert_close(got, want)


# -- inspect.signature(f).parameters ---------------------------------------------------------------


class AttnProcessor:  # diffusers' attention processors: their call's parameters, read per forward
    def __call__(self, attn, hidden_states, scale=1.0, *, mask=None):
        return hidden_states * scale


def test_signature_parameters_keys_are_constants():
    processor = AttnProcessor()

    def fn(x):
        params = inspect.signature(processor.__call__).parameters
        keys = set(params.keys())
        unused = [k for k in {"scale": 2.0, "other": 1} if k not in keys]
        kwargs = {k: v for k, v in {"scale": 2.0}.items() if k in params}
        only_kw = [p.kind == inspect.Parameter.KEYWORD_ONLY for p in params.values()]
        sizes = len(params) + len(params.keys() - {"attn"}) + len(list(params.items()))
        return processor(None, x, **kwargs) + len(unused) + sum(only_kw) + sizes

    check_breaks(fn, lambda: (torch.randn(3),), graphs=1, breaks=0)
    assert dynamo_counts(fn, torch.randn(3)) == (1, 0)


# -- OrderedDict output classes (diffusers' BaseOutput) --------------------------------------------


class BaseOutput(OrderedDict):
    """diffusers.utils.outputs.BaseOutput (transformers' ModelOutput, copied), abridged."""

    def __post_init__(self) -> None:
        class_fields = fields(self)
        first_field = getattr(self, class_fields[0].name)
        other_fields_are_none = all(getattr(self, f.name) is None for f in class_fields[1:])
        if other_fields_are_none and isinstance(first_field, dict):
            for key, value in first_field.items():
                self[key] = value
        else:
            for field in class_fields:
                v = getattr(self, field.name)
                if v is not None:
                    self[field.name] = v

    def __getitem__(self, k):
        if isinstance(k, str):
            return dict(self.items())[k]
        return self.to_tuple()[k]

    def __setattr__(self, name, value):
        if name in self.keys() and value is not None:
            super().__setitem__(name, value)
        super().__setattr__(name, value)

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        super().__setattr__(key, value)

    def to_tuple(self):
        return tuple(self[k] for k in self.keys())


@dataclass
class DecoderOutput(BaseOutput):
    sample: torch.Tensor
    commit_loss: torch.Tensor | None = None


@dataclass
class EncoderOutput(BaseOutput):
    latent: torch.Tensor  # required: no default


def test_ordered_dict_output_classes_are_made_in_the_trace(monkeypatch):
    """The tracer knows diffusers' ``BaseOutput`` by name (``containers.MODEL_OUTPUT_BASES``);
    this copy of it is registered the same way, so the test runs without diffusers."""
    from bytegraph.tracer.variables import containers

    bases = containers.MODEL_OUTPUT_BASES | {(__name__, "BaseOutput")}
    monkeypatch.setattr(containers, "MODEL_OUTPUT_BASES", bases)
    monkeypatch.setattr(containers, "_DIFFUSERS_BASE", (__name__, "BaseOutput"))

    def fn(x):
        out = DecoderOutput(sample=x * 2)
        enc = EncoderOutput(x + 1)
        dist = EncoderOutput(Scaler())  # a VAE's output: a lone object that is not a dict
        total = out.sample + out["sample"] + out[0] + len(out) + enc.latent
        return total, out, enc, out.commit_loss is None, list(out.keys()), dist.latent.scale(x)

    check_breaks(fn, lambda: (torch.randn(3),), graphs=1, breaks=0)
    assert dynamo_counts(fn, torch.randn(3)) == (1, 0)


# -- the trace-size limit --------------------------------------------------------------------------


def _steps(x, n):
    for _ in range(n):
        x = x + 1
    return x


def test_trace_limit_counts_instructions_not_seconds(monkeypatch):
    """torchvision swin_t fell back with "tracing ... took over 5.0s" on a loaded machine: the
    limit is a number of traced instructions (inlined calls included), the same on every run."""
    from bytegraph.tracer import translator

    from bytegraph.explain import Recorder

    monkeypatch.setattr(translator, "MAX_TRACE_INSTRUCTIONS", 400)

    def small(x):
        return _steps(x, 10)  # about 100 instructions, most of them in the callee

    def large(x):
        return _steps(x, 100)  # about 700

    check_breaks(small, lambda: (torch.randn(3),), graphs=1, breaks=0)
    recorder = Recorder()
    with recorder, pytest.warns(UserWarning, match="400 instructions"):
        compiled = bytegraph.compile(large)
        torch.testing.assert_close(compiled(torch.zeros(3)), large(torch.zeros(3)))
    reasons = recorder.report().break_reasons
    # ``large`` runs in Python, calling ``_steps`` compiled on its own: too large by itself as well
    assert [(r.kind, r.fell_back) for r in reasons] == [("too_large", True)] * 2


_LIB = torch.library.Library("bytegraph_issue20", "DEF")  # an operator with no fake kernel
_LIB.define("twice(Tensor x) -> Tensor")
_LIB.impl("twice", lambda x: x * 2, "CPU")


def test_an_op_failing_on_fake_inputs_runs_in_python():
    """The trace's ``op_error`` (dpn68: ``add failed on fake inputs``) is a break: the op runs in
    Python on the real values, so it raises only where eager raises."""

    def fn(x):
        y = x + 1
        return torch.ops.bytegraph_issue20.twice(y) - 1

    _, _, report = check_breaks(fn, lambda: (torch.randn(3),), graphs=2, breaks=1)
    assert [r.kind for r in report.break_reasons] == ["op_error"]
