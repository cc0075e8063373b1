"""torch.optim traced (``variables/torch_calls.py``) and the pieces it needs:
tensor-keyed input dicts, ``Tensor.grad`` stores, weak reference calls, ``f.__get__``,
``record_function`` guarded on the profiler, foreach ops with a scalars tensor."""

from __future__ import annotations

import warnings
import weakref

import torch
from difftest import check_breaks, compile_counted

from bytegraph.explain import Recorder


def _world(make_opt):
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    return model, make_opt(model.parameters())


def _state(model, opt):
    state = [{k: v.clone() for k, v in s.items()} for s in opt.state.values()]
    groups = [{k: v for k, v in g.items() if k != "params"} for g in opt.param_groups]
    return [p.detach().clone() for p in model.parameters()], state, groups


def _assert_same_state(actual, expected):
    (a_params, a_state, a_groups), (e_params, e_state, e_groups) = actual, expected
    for a, e in zip(a_params, e_params, strict=True):
        torch.testing.assert_close(a, e)
    assert a_groups == e_groups
    assert len(a_state) == len(e_state)
    for a, e in zip(a_state, e_state, strict=True):
        assert list(a) == list(e)
        for key in e:
            torch.testing.assert_close(a[key], e[key])
            assert (a[key].dtype, a[key].requires_grad) == (e[key].dtype, e[key].requires_grad)


def _step_three_times(make_opt, compile_step):
    model, opt = _world(make_opt)

    def step():
        opt.step()

    run, counter = compile_counted(step) if compile_step else (step, None)
    recorder = Recorder()
    for i in range(3):
        torch.manual_seed(i)
        for p in model.parameters():
            p.grad = torch.randn_like(p)
        with warnings.catch_warnings(), recorder:
            warnings.simplefilter("error")
            run()
    assert recorder.report().graph_break_count == 0
    return _state(model, opt), counter


def test_compiled_adam_step_matches_eager_and_hits_the_cache():
    def make(ps):
        return torch.optim.Adam(ps, lr=0.01, amsgrad=True)

    expected, _ = _step_three_times(make, compile_step=False)
    actual, counter = _step_three_times(make, compile_step=True)
    _assert_same_state(actual, expected)
    assert counter.frame_count == 1  # the state made by the first step is read, not re-traced


def test_compiled_foreach_adamw_step_matches_eager():
    def make(ps):
        return torch.optim.AdamW(ps, lr=0.01, foreach=True)

    expected, _ = _step_three_times(make, compile_step=False)
    actual, counter = _step_three_times(make, compile_step=True)
    _assert_same_state(actual, expected)
    assert counter.frame_count == 1


def test_compiled_sgd_nesterov_step_matches_eager():
    def make(ps):
        return torch.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True)

    expected, _ = _step_three_times(make, compile_step=False)
    actual, _ = _step_three_times(make, compile_step=True)
    _assert_same_state(actual, expected)


def test_init_group_wrapped_by_torch_compile_is_traced():
    torch._dynamo.eval_frame.TorchPatcher.patch()  # what torch.compile's first run does
    assert getattr(torch.optim.Adam._init_group, "_torchdynamo_disable", False)

    def make(ps):
        return torch.optim.Adam(ps, lr=0.01)

    expected, _ = _step_three_times(make, compile_step=False)
    actual, counter = _step_three_times(make, compile_step=True)
    _assert_same_state(actual, expected)
    assert counter.frame_count == 1


def test_zero_grad_is_traced_without_a_break():
    model, opt = _world(lambda ps: torch.optim.SGD(ps, lr=0.1))

    def fn(x):
        opt.zero_grad()
        return x * 2

    def setup():
        for p in model.parameters():
            p.grad = torch.ones_like(p)

    def observe():
        return [p.grad for p in model.parameters()]

    check_breaks(fn, lambda: (torch.randn(3),), graphs=1, breaks=0, setup=setup, observe=observe)


def test_grad_store_of_a_tensor_made_in_the_graph_is_replayed():
    def fn(p):
        p.grad = p.detach() * 2
        return p.grad + 1

    p = torch.randn(3, requires_grad=True)
    compiled, _ = compile_counted(fn)
    out = compiled(p)
    torch.testing.assert_close(p.grad, p.detach() * 2)
    torch.testing.assert_close(out, p.detach() * 2 + 1)


def test_record_function_traces_without_nodes_while_no_profiler_runs():
    def fn(x):
        with torch.autograd.profiler.record_function("label"):
            y = x * 2
        return y + 1

    check_breaks(fn, lambda: (torch.randn(3),), graphs=1, breaks=0)


def test_record_function_records_its_label_once_a_profiler_runs():
    def fn(x):
        with torch.autograd.profiler.record_function("my_label"):
            y = x * 2
        return y + 1

    compiled, _ = compile_counted(fn)
    compiled(torch.randn(3))  # traced with the profiler off
    with warnings.catch_warnings(), Recorder() as recorder:
        warnings.simplefilter("ignore")
        with torch.autograd.profiler.profile() as prof:
            compiled(torch.randn(3))
    assert "my_label" in {e.name for e in prof.function_events}
    assert recorder.report().recompiles  # the profiler guard failed


def test_input_dict_keyed_by_tensors_is_read_by_identity():
    a, b = torch.randn(2), torch.randn(2)

    def fn(d, k):
        return d[k] * 2

    compiled, counter = compile_counted(fn)
    first = {a: torch.ones(2), b: torch.zeros(2)}
    torch.testing.assert_close(compiled(first, b), torch.zeros(2))
    torch.testing.assert_close(compiled(first, a), torch.full((2,), 2.0))
    swapped = {b: torch.ones(2), a: torch.zeros(2)}  # same keys, other order: guarded
    torch.testing.assert_close(compiled(swapped, b), torch.full((2,), 2.0))
    assert counter.frame_count >= 2


def test_calling_a_weak_reference_reads_its_object():
    class Holder:
        scale = 3.0

    holder = Holder()
    ref = weakref.ref(holder)

    def fn(x):
        return x * ref().scale

    check_breaks(fn, lambda: (torch.randn(3),), graphs=1, breaks=0)


def test_function_get_binds_it_to_an_object():
    class Scaler:
        def __init__(self):
            self.k = 2.0

        def apply(self, x):
            return x * self.k

    scaler = Scaler()
    func = Scaler.apply

    def fn(x):
        return func.__get__(scaler, Scaler)(x) + 1

    check_breaks(fn, lambda: (torch.randn(3),), graphs=1, breaks=0)


def test_foreach_op_with_a_scalars_tensor_is_traced():
    def fn(xs, ys, zs, steps):
        torch._foreach_addcdiv_(xs, ys, zs, torch.stack(steps))
        return xs

    def make():
        return (
            [torch.randn(3), torch.randn(2)],
            [torch.randn(3), torch.randn(2)],
            [torch.rand(3) + 1, torch.rand(2) + 1],
            [torch.tensor(0.5), torch.tensor(-1.5)],
        )

    check_breaks(fn, make, graphs=1, breaks=0)


def test_math_cos_of_a_symbolic_number_does_not_specialise_it():
    import math

    def fn(x, n):
        return x * math.cos(n * 0.5)

    compiled, counter = compile_counted(fn)
    x = torch.randn(3)
    for n in (1, 2, 3, 4):
        torch.testing.assert_close(compiled(x, n), fn(x, n))
    assert counter.frame_count == 2  # the second trace is symbolic in n; 3 and 4 hit it


def test_grad_dropped_before_the_step_in_the_same_graph_gets_no_state():
    def run(compile_step):
        model, opt = _world(lambda ps: torch.optim.Adam(ps, lr=0.01))

        def step():
            model.bias.grad = None  # a store the real state must not be initialised without
            opt.step()

        fn, _ = compile_counted(step) if compile_step else (step, None)
        for p in model.parameters():
            p.grad = torch.ones_like(p)
        fn()
        return _state(model, opt)

    _assert_same_state(run(compile_step=True), run(compile_step=False))
