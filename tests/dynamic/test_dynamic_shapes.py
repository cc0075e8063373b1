"""Dynamic shapes: static by default, automatic dynamic on change, mark_dynamic, 0/1 specialisation,
duck shaping and guards from symbolic reasoning (the seeds' documented examples)."""

from __future__ import annotations

import functools
import warnings

import pytest
import torch
from bytegraph.guards import kinds
from difftest import assert_same, compile_counted
from torch.nn.utils.rnn import pad_sequence

import bytegraph


def shape_guards(fn, entry: int) -> list[str]:
    return [
        p.code
        for p in bytegraph.cache_entries(fn)[entry].guards.parts
        if p.guard.kind is kinds.SHAPE_EXPR
    ]


def test_int_becomes_symbolic_after_it_changes():
    """Seed: fn(x, 2); fn(x, 3); fn(x, -2); fn(x, 4): static graph, then generic in n (two
    branches)."""

    def fn(x, n):
        y = x**2
        if n >= 0:
            return (n + 1) * y
        else:
            return y / n

    compiled, counter = compile_counted(fn)
    x = torch.randn(200)
    for n, graphs in ((2, 1), (3, 2), (-2, 3), (4, 3), (-7, 3)):
        assert_same(compiled(x, n), fn(x, n))
        assert counter.frame_count == graphs, (n, counter.frame_count)
    first, generic, negative = counter.graphs
    assert "3 * pow_1" in first.code
    assert "l_n_ + 1" in generic.code and "pow_1 / l_n_" in negative.code
    assert "L['n'] >= 0" in shape_guards(compiled, 1)
    assert "L['n'] < 0" in shape_guards(compiled, 2)


def test_size_becomes_symbolic_with_duck_shaping():
    """Seed: fn(a, b) with (4, 3) then (8, 3): second graph generic in s0, guards 2 <= s0 and the
    duck-shaped equality between a's and b's first dimension."""

    def fn(a, b):
        return a.shape[0] * a * b

    compiled, counter = compile_counted(fn)
    for n in (4, 8, 16, 5):
        a, b = torch.randn(n, 3), torch.randn(n, 3)
        assert_same(compiled(a, b), fn(a, b))
    assert counter.frame_count == 2
    assert "4 * l_a_" in counter.graphs[0].code
    assert "size = l_a_.size()" in counter.graphs[1].code
    guards = shape_guards(compiled, 1)
    assert "2 <= L['a'].size()[0]" in guards
    assert "L['b'].size()[0] == L['a'].size()[0]" in guards


def test_duck_shaping_equality_is_guarded():
    def fn(a, b):
        return a.sum() + b.sum()

    compiled, counter = compile_counted(fn)
    for n in (4, 6):
        a, b = torch.randn(n), torch.randn(n)
        assert_same(compiled(a, b), fn(a, b))
    assert counter.frame_count == 2
    assert "L['b'].size()[0] == L['a'].size()[0]" in shape_guards(compiled, 1)
    a, b = torch.randn(6), torch.randn(7)  # unequal sizes: the duck-shaped entry must not run
    why = bytegraph.why(compiled, a, b)
    assert why.selected is None
    assert why.failures[1][1].code == "L['b'].size()[0] == L['a'].size()[0]"
    assert_same(compiled(a, b), fn(a, b))
    assert counter.frame_count == 3


def test_guard_from_symbolic_branch():
    """Seed: ``if a.shape[0] * 2 < 16`` under dynamic=True adds the guard 2*s0 >= 16."""

    def fn(a):
        if a.shape[0] * 2 < 16:
            return a
        else:
            return a + 1

    compiled, counter = compile_counted(fn, dynamic=True)
    for n in (8, 9, 30):
        a = torch.randn(n)
        assert_same(compiled(a), fn(a))
    assert counter.frame_count == 1
    assert "2*L['a'].size()[0] >= 16" in shape_guards(compiled, 0)
    a = torch.randn(3)
    assert_same(compiled(a), fn(a))
    assert counter.frame_count == 2


def test_dynamic_false_recompiles_until_the_limit():
    def fn(x):
        return (x * 2).sum(0)

    compiled, counter = compile_counted(fn, dynamic=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(2, 100):
            x = torch.randn(n, 3)
            assert_same(compiled(x), fn(x))
    assert counter.frame_count == bytegraph.config.recompile_limit
    limit_warnings = [w for w in caught if "recompile_limit" in str(w.message)]
    assert len(limit_warnings) == 1
    assert "L['x'].shape" in str(limit_warnings[0].message)


def test_mark_dynamic_compiles_once():
    def fn(x):
        return (x * 2).sum(0)

    compiled, counter = compile_counted(fn)
    for n in range(2, 100):
        x = torch.randn(n, 3)
        bytegraph.mark_dynamic(x, 0)
        assert_same(compiled(x), fn(x))
    assert counter.frame_count == 1
    assert "2 <= L['x'].size()[0]" in shape_guards(compiled, 0)


def test_mark_static_keeps_recompiling():
    def fn(x):
        return x + 1

    compiled, counter = compile_counted(fn)
    for n in (3, 4, 5):
        x = torch.randn(n)
        bytegraph.mark_static(x, 0)
        assert_same(compiled(x), fn(x))
    assert counter.frame_count == 3


@pytest.mark.parametrize("special", [0, 1])
def test_zero_and_one_are_specialised(special):
    def fn(x):
        return x * 3

    compiled, counter = compile_counted(fn, dynamic=True)
    x = torch.randn(5, 2)
    assert_same(compiled(x), fn(x))
    x = torch.randn(special, 2)
    assert_same(compiled(x), fn(x))
    assert counter.frame_count == 2  # the size-0/1 input gets its own static graph
    parts = [p.code for p in bytegraph.cache_entries(compiled)[1].guards.parts]
    assert f"L['x'].shape[0] == {special}" in parts


def test_dynamic_true_traces_ints_and_sizes_from_the_start():
    def fn(x, n):
        return x.view(-1, n).sum(1) * n

    compiled, counter = compile_counted(fn, dynamic=True)
    for rows, n in ((4, 3), (5, 3), (6, 2), (2, 7)):
        x = torch.randn(rows * n)
        assert_same(compiled(x, n), fn(x, n))
    assert counter.frame_count == 1


def test_changing_float_becomes_symbolic():
    def fn(x, scale):
        return x * scale + scale

    compiled, counter = compile_counted(fn)
    x = torch.randn(4)
    for scale in (0.5, 1.5, 2.5, -3.25):
        assert_same(compiled(x, scale), fn(x, scale))
    assert counter.frame_count == 2


def test_symbolic_size_returned_as_python_int():
    def fn(x):
        return x.shape[0] + 1, x.size(0) * 2, len(x)

    compiled, counter = compile_counted(fn)
    for n in (3, 4, 9):
        x = torch.randn(n)
        assert_same(compiled(x), fn(x))
    assert counter.frame_count <= 2


def test_range_over_symbolic_size_specialises_soundly():
    def fn(x):
        total = x[0] * 0
        for i in range(x.shape[0]):
            total = total + x[i]
        return total

    compiled, counter = compile_counted(fn)
    for n in (3, 4, 5, 4, 3):
        x = torch.randn(n)
        assert_same(compiled(x), fn(x))
    assert counter.frame_count == 3  # one unrolled graph per length: range() needs the value


def test_why_names_the_failing_shape_guard():
    def fn(x):
        return x.sum()

    compiled, _ = compile_counted(fn)
    compiled(torch.randn(3))
    why = bytegraph.why(compiled, torch.randn(4))
    assert why.selected is None
    assert "L['x']" in why.failures[0][1].code


class _Layer:
    """A KV-cache layer as transformers' DynamicLayer keeps it: an empty 1-d tensor until the
    first update, then (batch, heads, length, dim) growing by one position per call."""

    def __init__(self):
        self.keys = torch.tensor([])

    def update(self, k):
        self.keys = k if self.keys.dim() == 1 else torch.cat([self.keys, k], dim=-2)
        return self.keys


def test_size_becomes_symbolic_after_a_rank_change():
    # generate(): the cache tensor is 1-d on the first call, 4-d and growing afterwards; the
    # growing length must become dynamic (compared with the last 4-d shape, not the 1-d one)
    def fn(layer, q, k):
        keys = layer.update(k)
        return (q @ keys.transpose(-1, -2)).softmax(-1)

    compiled, counter = compile_counted(fn)
    layer, eager_layer = _Layer(), _Layer()
    for length in (5, 1, 1, 1, 1, 1):
        q, k = torch.randn(1, 2, length, 4), torch.randn(1, 2, length, 4)
        assert_same(compiled(layer, q, k), fn(eager_layer, q, k))
    assert counter.frame_count == 3  # empty cache, 5 cached positions, then any length


def test_isinstance_of_a_symbolic_size_does_not_specialise():
    # transformers' masking: ``isinstance(q_offset, torch.Tensor)`` on a cache length
    def fn(x):
        n = x.shape[0]
        offset = n.to(x.device) if isinstance(n, torch.Tensor) else n
        return x * offset + isinstance(n, int) + (type(n) is int)

    compiled, counter = compile_counted(fn)
    for n in (3, 4, 5, 6):
        x = torch.randn(n)
        assert_same(compiled(x), fn(x))
    assert counter.frame_count == 2


def test_len_of_a_dynamic_shape_does_not_specialise():
    # transformers' masking: ``len(attention_mask.shape) == 4``
    def fn(x):
        return x * 2 if len(x.shape) == 2 else x

    compiled, counter = compile_counted(fn)
    for n in (3, 4, 5, 6):
        x = torch.randn(n, 2)
        assert_same(compiled(x), fn(x))
    assert counter.frame_count == 2


def test_max_of_symbolic_numbers_stays_symbolic():
    # a sliding-window cache: ``max(cumulative_length - window + 1, 0)``
    def fn(x, length):
        offset = max(length - 4 + 1, 0)
        return x * offset + min(offset, 7, length)

    compiled, counter = compile_counted(fn)
    for length in (2, 3, 5, 9, 12):
        x = torch.randn(3, 16)
        assert_same(compiled(x, length), fn(x, length))
    assert counter.frame_count == 2


def _specialised_view(x):
    if x.shape[1] == 3 and x.shape[2] == 16 and x.shape[3] == 8:
        return x.permute(0, 2, 1, 3).reshape(2, 16, 24) * 2
    return x * 3


def test_a_view_input_made_dynamic_keeps_its_base_static():
    """A view (``qkv.view(b, h, n, d)``, as einops' ``_apply_recipe`` gets from vit-pytorch's CCT)
    whose sizes became dynamic: torch gave its base symbols of its own (all dynamic), with no
    source of ours; sizes specialised in the trace left static tensors on the symbolic storage,
    and the next operator's bound on that storage (``131072 <= 32768*s7``) was a guard that could
    not be rendered: an internal error, the function run in Python from then on. The base is
    static now: no symbol without a source."""
    compiled, counter = compile_counted(_specialised_view)
    for h, n, d in ((2, 8, 4), (3, 16, 8), (3, 16, 8), (2, 8, 4), (4, 4, 16)):
        x = torch.randn(2 * h, n, d).view(2, h, n, d)
        assert_same(compiled(x), _specialised_view(x))
    assert "fallback:internal_error" not in bytegraph.stats()
    # static; the sizes the branch compared (3, 16, 8); the other side of the branch
    assert counter.frame_count == 3


def _select_tokens(values, indices):
    """vit-pytorch's ``batched_index_select`` (adaptive token sampling): the shapes copied into
    lists, sliced and spliced, then ``expand`` and ``gather`` with them."""
    value_dims = values.shape[2:]
    values_shape, indices_shape = map(lambda t: list(t.shape), (values, indices))
    indices = indices[(..., *((None,) * len(value_dims)))]
    indices = indices.expand(*((-1,) * len(indices_shape)), *value_dims)
    shape = [-1] * len(values_shape)
    shape[1:1] = tuple(indices_shape[1:1])
    values = values.expand(*shape)
    width = sum([indices_shape[0], abs(-values_shape[0])]) // 2
    return values[: int(width)].gather(1, indices), dict(n=values_shape[1]), slice(0, width)


def _compiled_by(engine, fn):
    """``fn`` compiled by bytegraph or by torch.compile (Dynamo's caches emptied first), and the
    counter of what the engine compiled."""
    if engine == "bytegraph":
        return compile_counted(fn)
    from torch._dynamo.testing import CompileCounter

    torch._dynamo.reset()
    counter = CompileCounter()
    return torch.compile(fn, backend=counter), counter


@pytest.mark.parametrize("engine", ["bytegraph", "torch.compile"])
def test_shapes_copied_into_containers_stay_symbolic(engine):
    """``list(t.shape)``, ``tuple``, ``dict``, ``sum``, ``abs``, ``int``, ``slice`` of sizes that
    became dynamic keep them symbolic, as torch.compile does: folded at trace time they
    specialised every size (``s == 13``), one variant per number of sampled tokens until the
    recompile limit (vit-pytorch's ATS ViT ran at 0.02x eager)."""
    compiled, counter = _compiled_by(engine, _select_tokens)
    try:
        for n, k in ((20, 5), (26, 9), (31, 13), (17, 4), (40, 21)):
            values, indices = torch.randn(2, n, 8), torch.randint(0, n, (2, k))
            assert_same(compiled(values, indices), _select_tokens(values, indices))
    finally:
        if engine != "bytegraph":
            torch._dynamo.reset()
    assert counter.frame_count == 2  # static, then one variant dynamic in n and k


def _every_other_step(x, step):
    y = x + step % 3
    if step % 2 == 0:
        return y * 2
    return y


@pytest.mark.parametrize("engine", ["bytegraph", "torch.compile"])
def test_modulo_of_a_symbolic_int_stays_symbolic(engine):
    """``step % every`` of a counter that changes on every call (an EMA's ``update``, an LR
    scheduler's ``last_epoch % step_size``): the remainder is computed in the graph and a branch
    on it guards the remainder, not the step, as torch.compile does. Specialised (``step == 5``),
    each step was a variant of its own until the recompile limit."""
    compiled, counter = _compiled_by(engine, _every_other_step)
    x = torch.randn(3)
    try:
        for step in range(8):
            assert_same(compiled(x, step), _every_other_step(x, step))
    finally:
        if engine != "bytegraph":
            torch._dynamo.reset()
    assert counter.frame_count == 3  # static, then one variant per branch, dynamic in step


def _bias_corrected(x, step):
    correction = 1 / (1 - 0.9**step)  # a Python float: the trace checks it divides by no zero
    return x * correction


@pytest.mark.parametrize("engine", ["bytegraph", "torch.compile"])
def test_power_of_a_symbolic_int_keeps_its_variant(engine):
    """``1 - beta ** step`` of an optimizer's step count (Adam-style bias correction): the guard
    that it is not zero is printed with ``torch.sym_float(step)``, and holds on the next steps.
    The name ``torch`` was unbound in the guard: it raised, and each step recompiled."""
    compiled, counter = _compiled_by(engine, _bias_corrected)
    x = torch.randn(3)
    try:
        for step in range(1, 8):
            assert_same(compiled(x, step), _bias_corrected(x, step))
    finally:
        if engine != "bytegraph":
            torch._dynamo.reset()
    assert counter.frame_count == 2  # static, then dynamic in step


@functools.lru_cache(16)
def _heads_layout(shape, heads):
    batch, tokens, width = shape
    return batch, tokens, heads, width // heads


def _split_heads(x, heads):
    return x.reshape(_heads_layout(x.shape, heads)).transpose(1, 2)


def _heads_of(x):
    return _split_heads(x, 2) + 1


def _heads_of_made_cache(x):
    layout = functools.lru_cache(4)(lambda shape: (shape[0], shape[1], 2, shape[2] // 2))
    return x.reshape(layout(x.shape)) * 3


def _heads_of_sampled(x, ids):
    kept = [torch.unique(row) for row in ids]
    padded = pad_sequence(kept, batch_first=True)  # its width depends on data: a break
    tokens = x.gather(1, padded[..., None].expand(-1, -1, x.shape[-1]))
    return _split_heads(tokens, 2) * 2


def _tokens(n):
    return torch.randn(2, n, 8, requires_grad=True), None


def _sampled(n):
    ids = torch.stack([torch.arange(n), torch.arange(n) * 3]) % 40
    return torch.randn(2, 40, 8, requires_grad=True), ids


@pytest.mark.parametrize("engine", ["bytegraph", "torch.compile"])
@pytest.mark.parametrize(
    ("fn", "make"),
    [(_heads_of, _tokens), (_heads_of_made_cache, _tokens), (_heads_of_sampled, _sampled)],
    ids=["input", "cache_made_in_the_trace", "after_a_data_dependent_break"],
)
def test_symbolic_sizes_given_to_an_lru_cache_stay_symbolic(engine, fn, make):
    """A shape given to an ``lru_cache`` function (einops' ``_reconstruct_from_shape(recipe,
    x.shape, ...)``, or a cache made in the trace) once its sizes are symbolic: the function is
    traced, the sizes kept symbolic, as torch.compile does. Made into the cache's key, each size
    was specialised (``s == 13``): one variant per size until the recompile limit, in a resume
    function after a break on a data-dependent width too (vit-pytorch's ATS ViT, one variant per
    number of sampled tokens). (torch 2.15's ``pad_sequence`` takes widths computed from data:
    bytegraph makes no break there, one graph.)"""
    compiled, counter = _compiled_by(engine, fn)
    first = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # both notice that the cache is left aside
            for n in (20, 26, 31, 17, 35, 12, 22, 29, 33, 14):
                x, ids = make(n)
                args = (x,) if ids is None else (x, ids)
                eager_x = x.detach().clone().requires_grad_()
                eager_args = (eager_x,) if ids is None else (eager_x, ids)
                assert_same(compiled(*args), fn(*eager_args))
                first = counter.frame_count if first is None else first
    finally:
        if engine != "bytegraph":
            torch._dynamo.reset()
    # each graph of the first call (two after a break) static, then once dynamic in the sizes
    assert counter.frame_count == 2 * first
