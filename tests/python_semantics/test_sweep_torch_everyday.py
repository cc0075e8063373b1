"""Everyday training and inference code, compiled and compared with eager call by call: values and
metadata of every tensor, ``.grad``, Python results, the state the call leaves (module buffers,
optimizer state, torch's global settings).

Each case is code a real program has (a backend flag read in a branch, an optimizer step, a
buffer counted up in ``forward``), called several times with the state changed between calls, so
that a guard the trace forgot shows as a stale variant.
"""

from __future__ import annotations

import contextlib

import pytest
import torch
from difftest import assert_same, check_breaks
from dynamo_baseline import assert_no_more_breaks, dynamo_graphs_over_calls

import bytegraph
from bytegraph.explain import Recorder


@contextlib.contextmanager
def restored(setter, value):
    """``setter(value)`` on the way out: a test leaves torch's settings as it found them."""
    try:
        yield
    finally:
        setter(value)


# -- torch's settings read as module attributes ----------------------------------------------------


def _set_cudnn(value):
    torch.backends.cudnn.enabled = value


def _set_mkldnn(value):
    torch.backends.mkldnn.enabled = value


def _set_strategy(value):
    torch.backends.opt_einsum.strategy = value


SETTINGS = {
    # a property of the module's class (``ContextProp``), reading the C flag
    "cudnn.enabled": (
        lambda: torch.backends.cudnn.enabled,
        _set_cudnn,
        [True, False, True, False],
    ),
    "mkldnn.enabled": (
        lambda: torch.backends.mkldnn.enabled,
        _set_mkldnn,
        [False, True, False],
    ),
    "opt_einsum.strategy": (
        lambda: torch.backends.opt_einsum.strategy,
        _set_strategy,
        ["auto", "greedy", "auto"],
    ),
}


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_a_torch_setting_read_in_a_branch_is_guarded(name):
    read, write, values = SETTINGS[name]
    before = read()

    def fn(x):
        if read() in (True, "auto"):
            return x + 1, read()
        return x - 1, read()

    compiled = bytegraph.compile(fn, backend="eager")
    with restored(write, before):
        for value in values:
            write(value)
            got, want = compiled(torch.zeros(2)), fn(torch.zeros(2))
            assert got[1] == want[1]
            torch.testing.assert_close(got[0], want[0])


def test_a_torch_setting_written_in_the_function():
    """The store breaks (torch.compile replays it after its graph): what runs after it, in a
    graph or in Python, runs under the new setting, as in eager."""
    before = torch.backends.cudnn.enabled

    def fn(x):
        torch.backends.cudnn.enabled = False
        return x + 1, torch.backends.cudnn.enabled

    def observe():
        return torch.backends.cudnn.enabled

    with restored(_set_cudnn, before):
        check_breaks(
            fn,
            lambda: (torch.ones(2),),
            graphs=1,
            breaks=1,
            setup=lambda: _set_cudnn(True),
            observe=observe,
        )


# -- gradients: clipping in a compiled training step -----------------------------------------------


def _training_step(clip):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def step(x, y):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        norm = clip(model.parameters())
        opt.step()
        return loss, norm

    return step, model


CLIPS = {
    "norm": lambda params: torch.nn.utils.clip_grad_norm_(params, 0.5),
    "norm_inf": lambda params: torch.nn.utils.clip_grad_norm_(params, 0.5, norm_type="inf"),
    "value": lambda params: torch.nn.utils.clip_grad_value_(params, 0.01),
}


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("clip", sorted(CLIPS))
def test_gradient_clipping_in_a_training_step(clip, backend):
    """``clip_grad_norm_`` reads and scales each parameter's ``.grad``: state no graph node
    carries (AOTAutograd's functional tensors have none: the norm came back 0 and nothing was
    clipped); its body is traced instead."""
    eager_step, eager_model = _training_step(CLIPS[clip])
    step, model = _training_step(CLIPS[clip])
    compiled = bytegraph.compile(step, backend=backend)
    for i in range(3):
        torch.manual_seed(i)
        x, y = torch.randn(3, 4), torch.randn(3, 2)
        got, want = compiled(x, y), eager_step(x, y)
        assert_same(got, want)
        for p, q in zip(model.parameters(), eager_model.parameters(), strict=True):
            assert_same(p, q)
            assert_same(p.grad, q.grad)


def _params_with_grads():
    """Leaves with gradients (a deep copy keeps a plain tensor's ``.grad``, not a Parameter's)."""
    torch.manual_seed(0)
    params = [torch.randn(2, 4, requires_grad=True), torch.randn(2, requires_grad=True)]
    for p in params:
        p.grad = torch.randn_like(p) * 3
    return params


@pytest.mark.parametrize("clip", sorted(CLIPS))
def test_gradient_clipping_alone_is_one_graph(clip):
    def fn(params):
        return CLIPS[clip](params)

    check_breaks(fn, lambda: (_params_with_grads(),), graphs=1, breaks=0)
    assert_no_more_breaks(0, fn, _params_with_grads())


def test_grouping_tensors_by_device_and_dtype():
    """torch's grouping (the foreach helpers'), computed from the tensors' dtypes: the same
    groups, keys in torch's order, indices where asked, None kept in a later list."""
    from torch.utils._foreach_utils import _group_tensors_by_device_and_dtype as group

    def fn(a, b, c):
        by_dtype = group([[a, b, c], [c, None, a]], with_indices=True)
        plain = group([[a, b, c]])
        return list(by_dtype.keys()), list(by_dtype.values()), list(plain.items()), a + 1

    def make():
        return (torch.ones(2), torch.ones(3, dtype=torch.float64), torch.zeros(2))

    check_breaks(fn, make, graphs=1, breaks=0)


# -- tensors made of Python numbers the trace holds as symbols -------------------------------------

NUMBER_TENSORS = {
    "int": lambda x, n, f: torch.tensor(n) + x,
    "mixed_list": lambda x, n, f: torch.tensor([n, 2.5, True]),
    "nested": lambda x, n, f: torch.tensor([[n, 1], [2, n]]),
    "float": lambda x, n, f: torch.tensor(f),
    "dtype": lambda x, n, f: torch.tensor([f, n], dtype=torch.float64),
    "as_tensor": lambda x, n, f: torch.as_tensor(n),
    "as_tensor_list": lambda x, n, f: torch.as_tensor((n, f), dtype=torch.float64),
    "item": lambda x, n, f: torch.tensor([x.sum().item(), 1]),
    "requires_grad": lambda x, n, f: torch.tensor(f, requires_grad=True) * 2,
}


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("name", sorted(NUMBER_TENSORS))
def test_a_tensor_of_numbers_made_dynamic(name, backend):
    """An int or float argument becomes a symbol at its second value: ``torch.tensor(n)`` is then
    made by the graph from it. AOTAutograd traced ``torch.tensor`` into a constant, the value
    of its example (an int past 2**31 wrapped to a negative one), guarded by that value: a
    graph per value."""
    fn = NUMBER_TENSORS[name]
    compiled = bytegraph.compile(fn, backend=backend)
    recorder = Recorder()
    calls = [(torch.ones(2, dtype=torch.int64), n, f) for n, f in NUMBERS]
    for args in calls:
        with recorder:
            got = compiled(*args)
        assert_same(got, fn(*args))
    if backend == "aot_eager":  # torch.compile too makes a graph per float (it specialises them)
        assert recorder.report().graph_count <= dynamo_graphs_over_calls(fn, calls, backend)


NUMBERS = [(5, 1.5), (7, 2.5), (2**31 + 1, 3.25), (9, 0.1)]


# -- a context entered and left by explicit calls --------------------------------------------------


def _explicit_no_grad(a):
    ctx = torch.no_grad()
    ctx.__enter__()
    y = a * 2
    ctx.__exit__(None, None, None)
    return y, a * 2


def _explicit_autocast(a, b):
    ctx = torch.autocast("cpu", dtype=torch.bfloat16)
    ctx.__enter__()
    y = a @ b
    ctx.__exit__(None, None, None)
    return y, a @ b


def _explicit_inference_mode(a):
    ctx = torch.inference_mode()
    ctx.__enter__()
    y = a * 2
    ctx.__exit__(None, None, None)
    return y, a * 2, y.is_inference()


def _exit_with_an_exception(a):
    ctx = torch.no_grad()
    entered = ctx.__enter__()
    y = a * 2
    swallowed = ctx.__exit__(ValueError, ValueError("v"), None)
    return y, a * 2, entered, swallowed


def _set_grad_enabled_left(a):
    ctx = torch.set_grad_enabled(False)
    y = a * 2
    ctx.__exit__(None, None, None)
    return y, a * 2


EXPLICIT = {
    "no_grad": (_explicit_no_grad, lambda: (torch.randn(3, requires_grad=True),)),
    "autocast": (_explicit_autocast, lambda: (torch.randn(3, 3), torch.randn(3, 3))),
    "inference_mode": (_explicit_inference_mode, lambda: (torch.randn(3, requires_grad=True),)),
    "exit_with_exception": (_exit_with_an_exception, lambda: (torch.randn(3, requires_grad=True),)),
    "set_grad_enabled": (_set_grad_enabled_left, lambda: (torch.randn(3, requires_grad=True),)),
}


@pytest.mark.parametrize("name", sorted(EXPLICIT))
def test_a_context_entered_and_left_by_explicit_calls(name):
    """``cm.__enter__()`` ... ``cm.__exit__(...)``: the attribute read broke, and at the break the
    object was made again from its arguments, a fresh one: ``no_grad``'s ``__exit__`` then
    switched grad mode off for good (a fresh object's ``prev`` is False), autocast's raised
    AttributeError (no ``prev``)."""
    fn, make = EXPLICIT[name]
    check_breaks(fn, make, graphs=1, breaks=0)


def test_a_context_entered_explicitly_left_after_a_break():
    """Entered in the graph, left in the resume function: the object the break rebuilt is the
    one entered (its ``prev``), so its exit restores the mode. The resume function guards that
    object's type and ``prev``, not its identity (a new one each call): three identical calls
    compile nothing after the first."""

    def fn(a):
        ctx = torch.no_grad()
        ctx.__enter__()
        y = a * 2
        print("between")
        z = a * 3
        ctx.__exit__(None, None, None)
        return y, z, a * 2

    check_breaks(fn, lambda: (torch.randn(3, requires_grad=True),), graphs=2, breaks=1, calls=3)


def test_a_context_entered_and_kept_open():
    """Entered and not left (left by the caller): the mode stays switched after the call, as in
    eager, and the caller's ``__exit__`` restores it."""

    def fn(a):
        ctx = torch.no_grad()
        ctx.__enter__()
        return a * 2, ctx

    compiled = bytegraph.compile(fn, backend="eager")
    for run in (compiled, fn, compiled):
        y, ctx = run(torch.randn(3, requires_grad=True))
        assert not y.requires_grad and not torch.is_grad_enabled()
        ctx.__exit__(None, None, None)
        assert torch.is_grad_enabled()


# -- custom autograd Functions under autocast ------------------------------------------------------


class _Float32MatMul(torch.autograd.Function):
    @staticmethod
    @torch.amp.custom_fwd(device_type="cpu", cast_inputs=torch.float32)
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    @torch.amp.custom_bwd(device_type="cpu")
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return grad @ b.t(), a.t() @ grad


def _custom_fwd_under_autocast(a, b):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = _Float32MatMul.apply(a, b)
        z = a @ b
    (y.sum() + z.float().sum()).backward()
    return y, z


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_custom_fwd_casts_inputs_under_autocast(backend):
    """``custom_fwd(cast_inputs=float32)`` runs the forward in float32 with autocast off, the rest
    of the block in bfloat16; gradients as eager's. Its cast of the arguments is traced (it
    broke: the ctx among them was given to a graph op)."""
    fn = _custom_fwd_under_autocast
    compiled = bytegraph.compile(fn, backend=backend)
    for _ in range(2):
        a, b = torch.randn(3, 3, requires_grad=True), torch.randn(3, 3)
        a2 = a.detach().clone().requires_grad_()
        assert_same(compiled(a, b), fn(a2, b))
        assert_same(a.grad, a2.grad)


def test_custom_fwd_is_one_graph():
    def fn(a, b):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return _Float32MatMul.apply(a, b), a @ b

    make = lambda: (torch.randn(3, 3, requires_grad=True), torch.randn(3, 3))  # noqa: E731
    check_breaks(fn, make, graphs=1, breaks=0)
    assert_no_more_breaks(0, fn, *make())


# -- process-wide module hooks ---------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_a_global_module_hook_registered_between_calls(backend):
    """``torch.nn.modules.module.register_module_forward_hook`` runs at every module call: one
    registered after the first compiled call was never run (torch.compile misses it too)."""
    from torch.nn.modules import module as nn_module

    torch.manual_seed(0)
    model = torch.nn.Linear(3, 3)

    def fn(m, x):
        return m(x)

    compiled = bytegraph.compile(fn, backend=backend)
    handle = None
    try:
        for step in ["none", "forward", "forward", "remove", "pre", "remove"]:
            if step == "forward":
                handle = handle or nn_module.register_module_forward_hook(lambda m, i, o: o * 10)
            elif step == "pre":
                handle = nn_module.register_module_forward_pre_hook(lambda m, i: (i[0] + 100,))
            elif step == "remove":
                handle.remove()
                handle = None
            x = torch.randn(2, 3)
            assert_same(compiled(model, x), fn(model, x))
    finally:
        if handle is not None:
            handle.remove()
