"""Guards end to end: what recompiles, with which recorded reason, and what does not.

Every call's result is compared with eager; recompiles are counted with the counting backend and
their reasons read back through ``cache_entries(fn)[i].reason`` and ``bytegraph.why``.
"""

from __future__ import annotations

import copy
import functools
import sys
import types
import warnings

import pytest
import torch
from difftest import assert_same, compile_counted

import bytegraph
from bytegraph.explain import Recorder

SCALE = 2.0


def helper(x):
    return x * 2


def other_helper(x):
    return x - 1


def run_same(compiled, fn, *args):
    """Call ``compiled`` and ``fn`` with ``args`` and check that they agree (no warning allowed)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_same(compiled(*args), fn(*args))


def assert_one_recompile(fn, first: tuple, second: tuple, reason: str):
    """``first`` compiles, calling it again does not, ``second`` compiles exactly once more, because
    of ``reason``; ``why`` agrees for each argument set."""
    compiled, counter = compile_counted(fn)
    run_same(compiled, fn, *first)
    run_same(compiled, fn, *first)
    assert counter.frame_count == 1
    assert str(bytegraph.why(compiled, *second)).splitlines() == [
        "selected: none (would compile)",
        f"entry 0 rejected by: {reason}",
    ]
    run_same(compiled, fn, *second)
    run_same(compiled, fn, *second)
    run_same(compiled, fn, *first)
    assert counter.frame_count == 2
    entries = bytegraph.cache_entries(compiled)
    assert [e.reason for e in entries] == ["first call", f"entry 0: {reason}"]
    # the newest entry is tried first: it serves ``first`` too where its guards pass (a shape or
    # number made dynamic by the recompile), else entry 0 does, entry 1 rejected
    answer = str(bytegraph.why(compiled, *first)).splitlines()
    if answer[0] == "selected: entry 0":
        assert len(answer) == 2 and answer[1].startswith("entry 1 rejected by: ")
    else:
        assert answer == ["selected: entry 1"]
    assert str(bytegraph.why(compiled, *second)) == "selected: entry 1"
    return compiled


def test_same_call_does_not_recompile():
    def fn(x, y, n):
        return torch.relu(x) + y * n

    compiled, counter = compile_counted(fn)
    x, y = torch.randn(3), torch.randn(3)
    for _ in range(3):
        run_same(compiled, fn, x, y, 2)
        run_same(compiled, fn, torch.randn(3), torch.randn(3), 2)  # new tensors, same metadata
    assert counter.frame_count == 1
    assert len(bytegraph.cache_entries(compiled)) == 1


def test_dtype_change_recompiles_once():
    assert_one_recompile(
        lambda x: x + 1,
        (torch.randn(3),),
        (torch.randn(3, dtype=torch.float64),),
        "L['x'].dtype is ___torch_float32",
    )


def test_shape_change_recompiles_once():
    assert_one_recompile(
        lambda x: x.sum(0), (torch.randn(3, 2),), (torch.randn(4, 2),), "L['x'].shape == (3, 2)"
    )


def test_stride_change_recompiles_once():
    x = torch.randn(3, 2)
    assert_one_recompile(lambda x: x * 2, (x,), (torch.randn(2, 3).t(),), "L['x'].is_contiguous()")


def test_requires_grad_change_recompiles_once():
    assert_one_recompile(
        lambda x: x * 3,
        (torch.randn(3),),
        (torch.randn(3, requires_grad=True),),
        "L['x'].requires_grad is False",
    )


def test_constant_change_recompiles_once():
    def fn(x, n):
        return x * n

    assert_one_recompile(fn, (torch.randn(3), 2), (torch.randn(3), 3), "L['n'] == 2")


def test_constant_type_change_recompiles_once():
    def fn(x, n):
        return x * n

    assert_one_recompile(fn, (torch.randn(3), 2), (torch.randn(3), 2.0), "type(L['n']) is ___int")


def test_global_value_rebinding_recompiles_once():
    global SCALE

    def fn(x):
        return x * SCALE

    compiled, counter = compile_counted(fn)
    run_same(compiled, fn, torch.ones(2))
    try:
        SCALE = 3.0
        run_same(compiled, fn, torch.ones(2))
        run_same(compiled, fn, torch.ones(2))
    finally:
        SCALE = 2.0
    assert counter.frame_count == 2
    assert bytegraph.cache_entries(compiled)[1].reason == "entry 0: G['SCALE'] == 2.0"


def test_global_function_rebinding_recompiles_once():
    global helper
    original = helper

    def fn(x):
        return helper(x) + 1

    compiled, counter = compile_counted(fn)
    run_same(compiled, fn, torch.ones(2))
    try:
        helper = other_helper
        run_same(compiled, fn, torch.ones(2))
        run_same(compiled, fn, torch.ones(2))
    finally:
        helper = original
    run_same(compiled, fn, torch.ones(2))
    assert counter.frame_count == 2
    # another function of the same globals: what tells them apart is their code
    assert bytegraph.cache_entries(compiled)[1].reason == "entry 0: G['helper'].__code__ is ___o()"


def test_grad_mode_change_recompiles_once():
    def fn(x):
        return x * 2

    compiled, counter = compile_counted(fn)
    x = torch.randn(3, requires_grad=True)
    run_same(compiled, fn, x)
    with torch.no_grad():
        run_same(compiled, fn, x)
        run_same(compiled, fn, x)
    assert counter.frame_count == 2
    assert bytegraph.cache_entries(compiled)[1].reason == "entry 0: ___is_grad_enabled() is True"


def test_autocast_change_recompiles_once():
    def fn(x, y):
        return x @ y

    compiled, counter = compile_counted(fn)
    x, y = torch.randn(2, 2), torch.randn(2, 2)
    run_same(compiled, fn, x, y)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert compiled(x, y).dtype == fn(x, y).dtype == torch.bfloat16
        compiled(x, y)
    assert counter.frame_count == 2
    assert (
        bytegraph.cache_entries(compiled)[1].reason
        == "entry 0: ___is_any_autocast_enabled() is False"
    )


def test_deterministic_algorithms_change_recompiles_once():
    def fn(x):
        return x + 1

    compiled, counter = compile_counted(fn)
    run_same(compiled, fn, torch.ones(2))
    torch.use_deterministic_algorithms(True)
    try:
        run_same(compiled, fn, torch.ones(2))
        run_same(compiled, fn, torch.ones(2))
    finally:
        torch.use_deterministic_algorithms(False)
    assert counter.frame_count == 2
    assert (
        bytegraph.cache_entries(compiled)[1].reason
        == "entry 0: ___get_deterministic_algorithms() is False"
    )


def test_int_argument_is_specialised():
    """From the Dynamo deep-dive: ``fn(x, 2)`` bakes ``n`` into the graph and guards on it."""

    def fn(x, n):
        return x * n + n

    compiled, counter = compile_counted(fn)
    run_same(compiled, fn, torch.randn(4), 2)
    guards = bytegraph.cache_entries(compiled)[0].guards.source.splitlines()
    assert "type(L['n']) is ___int" in guards
    assert "L['n'] == 2" in guards
    assert [n.op for n in counter.graphs[0].graph.nodes].count("placeholder") == 1  # only x


def test_string_argument_recompiles_with_reason():
    """From the Dynamo deep-dive: ``fn(a, "Hello")`` then ``fn(a, "Hi")`` recompiles because of
    ``L['b'] == 'Hello'``."""

    def fn(a, b):
        return a * len(b)

    compiled = assert_one_recompile(
        fn, (torch.arange(10), "Hello"), (torch.arange(10), "Hi"), "L['b'] == 'Hello'"
    )
    guards = bytegraph.cache_entries(compiled)[0].guards.source.splitlines()
    assert "type(L['b']) is ___str" in guards


def test_list_items_are_guarded():
    """From the Dynamo deep-dive: items reached through ``L['l'][i]`` get their own guards."""

    def fn(x, l):  # noqa: E741  (the deep-dive's name)
        return x * len(l[0])

    compiled = assert_one_recompile(
        fn,
        (torch.randn(8), ["Hi", "Hello"]),
        (torch.randn(8), ["Hi", "Hey"]),
        "L['l'][1] == 'Hello'",
    )
    guards = bytegraph.cache_entries(compiled)[0].guards.source.splitlines()
    for line in [
        "type(L['l']) is ___list",
        "len(L['l']) == 2",
        "type(L['l'][0]) is ___str",
        "L['l'][0] == 'Hi'",
        "L['l'][1] == 'Hello'",
    ]:
        assert line in guards


def test_list_length_change_recompiles_once():
    def fn(xs):
        return sum(xs)

    assert_one_recompile(
        fn, ([torch.ones(2), torch.ones(2)],), ([torch.ones(2)] * 3,), "len(L['xs']) == 2"
    )


def test_aliased_input_is_guarded_by_source_not_object():
    """The same tensor reached twice is guarded as ``L['xs'][0] is L['x']`` (a relation between the
    inputs), so new tensors in the same relation hit the cache."""

    def fn(x, xs):
        return x + xs[0]

    compiled, counter = compile_counted(fn)
    for _ in range(3):
        x = torch.randn(3)
        run_same(compiled, fn, x, [x])
    assert counter.frame_count == 1
    assert "L['xs'][0] is L['x']" in bytegraph.cache_entries(compiled)[0].guards.source.splitlines()
    run_same(compiled, fn, torch.randn(3), [torch.randn(3)])
    assert counter.frame_count == 2
    assert bytegraph.cache_entries(compiled)[1].reason == "entry 0: L['xs'][0] is L['x']"


class _Scaled(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = 2.0

    def forward(self, x):
        return x * self.scale

    def shifted(self, x, by):
        return x + by


def test_why_takes_a_compiled_modules_and_a_bound_methods_arguments():
    """``why(compiled, *args)`` with the arguments of the call, as for a function: a compiled
    module's (its ``forward`` is bound) and a compiled bound method's. Both raised ``TypeError:
    missing a required argument`` (``self`` was expected among them)."""
    module = bytegraph.compile(_Scaled(), backend="eager")
    x = torch.ones(3)
    module(x)
    assert str(bytegraph.why(module, x)) == "selected: entry 0"
    module.scale = 3.0
    assert str(bytegraph.why(module, x)).startswith("selected: none (would compile)")
    method = bytegraph.compile(_Scaled().shifted, backend="eager")
    method(x, 1)
    assert str(bytegraph.why(method, x, 1)) == "selected: entry 0"
    assert bytegraph.why(method, x, 2).selected is None


def test_why_names_the_selected_entry_and_rejections():
    def fn(x, mode):
        return torch.relu(x) if mode == "relu" else torch.tanh(x)

    compiled, _ = compile_counted(fn)
    x = torch.randn(2)
    run_same(compiled, fn, x, "relu")
    run_same(compiled, fn, x, "tanh")
    assert str(bytegraph.why(compiled, x, "tanh")) == "selected: entry 1"  # the newest, tried first
    assert (
        str(bytegraph.why(compiled, x, "relu"))
        == "selected: entry 0\nentry 1 rejected by: L['mode'] == 'tanh'"
    )
    assert str(bytegraph.why(compiled, x.double(), "relu")) == "\n".join(
        [
            "selected: none (would compile)",
            "entry 0 rejected by: L['x'].dtype is ___torch_float32",
            "entry 1 rejected by: L['mode'] == 'tanh'",  # each entry: its first failing guard
        ]
    )


def test_recompile_limit_warns_once_and_runs_eagerly(monkeypatch):
    """Strings are always specialised (ints may become dynamic), so each new one is a new entry."""
    monkeypatch.setattr(bytegraph.config, "recompile_limit", 3)

    def fn(x, s):
        return x * len(s)

    compiled, counter = compile_counted(fn)
    x = torch.randn(3)
    names = [f"s{'x' * n}" for n in range(8)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for s in names:
            assert_same(compiled(x, s), fn(x, s))
        for s in names:  # compiled entries still serve their inputs; the rest runs eagerly
            assert_same(compiled(x, s), fn(x, s))
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1, messages
    assert "recompile_limit (3)" in messages[0]
    assert "The guard that keeps failing: L['s'] == 'sxx'" in messages[0]
    assert counter.frame_count == 3
    assert len(bytegraph.cache_entries(compiled)) == 3
    assert str(bytegraph.why(compiled, x, "other")).startswith("selected: none")


def test_recompile_limit_resets_with_reset(monkeypatch):
    monkeypatch.setattr(bytegraph.config, "recompile_limit", 1)

    def fn(x, s):
        return x + len(s)

    compiled, counter = compile_counted(fn)
    x = torch.randn(2)
    with pytest.warns(UserWarning, match="recompile_limit"):
        for s in ("a", "bb", "ccc"):
            assert_same(compiled(x, s), fn(x, s))
    bytegraph.reset()
    run_same(compiled, fn, x, "ccc")  # a fresh cache: compiles again, no warning
    assert counter.frame_count == 2


class _Config:
    pass


def _branch_on_identity(a, b, x):
    if a is b:
        return x + 1
    return x - 1


def test_distinct_objects_guard_their_distinctness_not_their_identity():
    """``a is b`` false for two objects guarded by type only: fresh objects at each call reuse the
    variant (``a is not b`` is what the trace read), and the same object passed twice retraces."""
    compiled, counter = compile_counted(_branch_on_identity)
    x = torch.ones(3)
    for _ in range(5):
        run_same(compiled, _branch_on_identity, _Config(), _Config(), x)
    assert counter.frame_count == 1
    same = _Config()
    assert str(bytegraph.why(compiled, same, same, x)).splitlines() == [
        "selected: none (would compile)",
        "entry 0 rejected by: L['a'] is not L['b']",
    ]
    run_same(compiled, _branch_on_identity, same, same, x)
    assert counter.frame_count == 2


def _torch_compile_frames(fn, calls) -> int:
    from torch._dynamo.testing import CompileCounter

    torch._dynamo.reset()
    counter = CompileCounter()
    try:
        compiled = torch.compile(fn, backend=counter)
        for args in calls:
            compiled(*args)
        return counter.frame_count
    finally:
        torch._dynamo.reset()


class _Backend:
    factor = 2.0

    def scale(self, x):
        return x * self.factor


class _OtherBackend(_Backend):
    factor = 3.0


#: a library's module with einops' ``_type2backend``: a registry keyed by tensor type, filled on
#: first use
_LIBRARY = "bytegraph_test_registry_module"
_REGISTRY_SOURCE = """
_BACKENDS = {}
_LOADED = {}


def backend_of(x):
    backend = _BACKENDS.get(type(x))
    if backend is not None:
        return backend
    backend = _LOADED["torch"]
    _BACKENDS[type(x)] = backend
    return backend
"""


def _library() -> types.ModuleType:
    module = types.ModuleType(_LIBRARY)
    exec(_REGISTRY_SOURCE, module.__dict__)
    module._LOADED["torch"] = _Backend()
    sys.modules[_LIBRARY] = module
    return module


def _uses_registry(library):
    def uses_registry(x, w):
        y = library.backend_of(x).scale(x)
        bytegraph.graph_break()  # the registry's Parameter entry is made by the resume function
        return y + library.backend_of(w).scale(w)

    return uses_registry


def test_library_registry_filled_by_the_first_call_is_traced_with_it():
    """Each part of the first call fills the registry: the variants it ran (the function's and
    its resume function's, the first also changed by the part after it) are traced again for the
    registry the call leaves, and the second identical call compiles nothing (torch.compile
    recompiles there). A registry changed later still fails the guard."""
    library = _library()
    try:
        _check_registry(library, _uses_registry(library))
    finally:
        sys.modules.pop(_LIBRARY, None)


def _check_registry(library, uses_registry):
    registry = library._BACKENDS
    x, w = torch.randn(3), torch.nn.Parameter(torch.randn(3))
    with torch.no_grad():
        expected = uses_registry(x, w)
    filled = dict(registry)
    registry.clear()
    compiled, counter = compile_counted(uses_registry)
    with torch.no_grad():
        assert_same(compiled(x, w), expected)
        assert registry == filled
        traced = counter.frame_count
        assert traced == 4  # each part, then each again for the filled registry
        for _ in range(2):
            assert_same(compiled(x, w), expected)
        assert counter.frame_count == traced
        registry.clear()
        assert_same(compiled(x, w), expected)  # the first variants again
        registry[torch.nn.Parameter] = _OtherBackend()
        assert counter.frame_count == traced
        assert_same(compiled(x, w), x * 2 + w * 3)
    assert counter.frame_count > traced
    registry.clear()
    # bytegraph.graph_break() does nothing there: one frame, traced again by the second call
    assert _torch_compile_frames(uses_registry, [(x, w), (x, w), (x, w)]) == 2
    registry.clear()


class _LazyBuffer(torch.nn.Module):
    """Registers a buffer on its first call (x-transformers' ALiBi bias does, sized to the
    sequence): the module tree the first call's variant guards changes during that call."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        if self._buffers.get("scale") is None:
            self.register_buffer("scale", torch.full((4,), 2.0), persistent=False)
        return self.lin(x) * self.scale


class _DeclaredBuffer(_LazyBuffer):
    """Declares its buffer None and sets it on its first call (x-transformers' ALiBi bias)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("scale", None, persistent=False)


@pytest.mark.parametrize("cls", [_LazyBuffer, _DeclaredBuffer])
def test_a_module_grown_by_the_first_call_is_traced_with_the_change(cls):
    """The variant for the tree the first call left is traced at the end of that call, so the
    second identical call compiles nothing (torch.compile recompiles there); the third neither."""
    torch.manual_seed(0)
    model, reference = cls(), cls()
    reference.load_state_dict(model.state_dict())
    compiled, counter = compile_counted(model)
    x = torch.randn(2, 4)
    counts = []
    for _ in range(3):
        assert_same(compiled(x), reference(x))
        counts.append(counter.frame_count)
    assert counts[1] == counts[2] == counts[0]
    assert dict(model.named_buffers()).keys() == dict(reference.named_buffers()).keys()


class _BiasCache(torch.nn.Module):
    """Fills a dict of its own on its first eval call and reads it after (timm's attention-bias
    caches in tiny_vit, levit, efficientformer)."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.bias = torch.nn.Parameter(torch.randn(4))
        self.cache = {}

    def forward(self, x):
        key = str(x.device)
        if key not in self.cache:
            self.cache[key] = self.bias * 2
        return self.lin(x) + self.cache[key]


class _ResizedBuffer(torch.nn.Module):
    """Replaces a placeholder buffer with one sized to the input on its first call (timm's convit
    relative indices)."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.register_buffer("rel", torch.zeros(1, 3), persistent=False)

    def forward(self, x):
        if self.rel.shape[0] != x.shape[0]:
            self.rel = torch.arange(x.shape[0] * 3, dtype=x.dtype).view(-1, 3)[:, :1]
        return self.lin(x) + self.rel


class _CachedLength(torch.nn.Module):
    """Fills the head of a buffer and records how much of it is filled in an int attribute, on
    its first call (rotary-embedding-torch's cached frequencies)."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.register_buffer("cached", torch.zeros(16, 4), persistent=False)
        self.cached_len = 0

    def forward(self, x):
        n = x.shape[0]
        if n <= self.cached_len:
            freqs = self.cached[:n]
        else:
            freqs = torch.arange(n * 4, dtype=x.dtype).view(n, 4).cos()
            self.cached[:n] = freqs
            self.cached_len = n
        return self.lin(x) * freqs


class _Config:
    """A plain object a model holds (transformers' ``PretrainedConfig``)."""

    def __init__(self):
        self.problem_type = None


class _ConfigField(torch.nn.Module):
    """Sets a field of its config on its first call and branches on it (transformers'
    classification heads set ``config.problem_type``), and a flag of its own (RWKV's
    ``layers_are_rescaled``)."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.config = _Config()
        self.rescaled = False

    def forward(self, x):
        if self.config.problem_type is None:
            self.config.problem_type = "regression"
        if not self.rescaled:
            self.rescaled = True
        y = self.lin(x)
        return y.sum() if self.config.problem_type == "regression" else y.mean()


@pytest.mark.parametrize("cls", [_BiasCache, _ResizedBuffer, _CachedLength, _ConfigField])
def test_module_state_changed_by_the_first_call_is_traced_with_the_change(cls):
    """The first call changes state the module holds (a cache dict filled, a buffer replaced, an
    int attribute set, a field of an object it holds, a flag), which its variant guards: the
    variant for the state it leaves is traced at the end of that call, so the second identical
    call compiles nothing. State changed later still misses."""
    torch.manual_seed(0)
    model, reference = cls().eval(), cls().eval()
    reference.load_state_dict(model.state_dict())
    compiled, counter = compile_counted(model)
    x = torch.randn(2, 4)
    counts = []
    with torch.no_grad():
        for _ in range(3):
            assert_same(compiled(x), reference(x))
            counts.append(counter.frame_count)
        assert counts[0] == 2 and counts[1] == counts[2] == counts[0]
        assert_same(dict(model.named_buffers()), dict(reference.named_buffers()))
        if cls is _BiasCache:
            assert_same(model.cache, reference.cache)
            model.cache.clear()
            reference.cache.clear()
        elif cls is _ResizedBuffer:
            model.rel = reference.rel = torch.zeros(1, 3)
        elif cls is _CachedLength:
            model.cached_len = reference.cached_len = 0
        else:
            model.config.problem_type = reference.config.problem_type = None
            model.rescaled = reference.rescaled = False
        assert_same(compiled(x), reference(x))  # the first variant again
        assert counter.frame_count == counts[0]


class _CountsUnderNoGrad(torch.nn.Module):
    """Changes its own state in a resume function entered under ``torch.no_grad()``."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.steps = 0

    def forward(self, x):
        with torch.no_grad():
            y = self.lin(x)
            bytegraph.graph_break()
            self.steps += 1
        return y * 2


def test_a_resume_function_changing_module_state_is_not_followed():
    """A resume function's arguments and the state after the run (grad mode on again) are not
    what its next call gets: following it traced it again outside its ``no_grad`` block, an
    extra break ('an unknown context reached a resume function') in the first call's report."""
    model = _CountsUnderNoGrad()
    reference = copy.deepcopy(model)
    compiled = bytegraph.compile(model, backend="eager")
    x = torch.randn(2, 4)
    with Recorder() as recorder:
        assert_same(compiled(x), reference(x))
    report = recorder.report()
    assert [b.reason for b in report.break_reasons] == [
        "graph_break: explicit graph_break() (bytegraph.tracer.markers)"
    ]
    assert report.graph_count == 2
    assert model.steps == reference.steps == 1


# -- functions given to the trace: guarded by what they are made of, their identity where read --


def _apply(fn, x):
    return fn(x) + 1


def _new_lambda():
    return lambda t: t * 2  # the same code at each call, a new function object


def _scaled_by(c):
    return lambda t: t * c  # the same code, a cell of its own


def _scale(t, k=1.0):
    return t * k


def test_a_function_made_anew_at_each_call_does_not_recompile():
    compiled, counter = compile_counted(_apply)
    x = torch.randn(3)
    for _ in range(3):
        run_same(compiled, _apply, _new_lambda(), x)
    assert counter.frame_count == 1


def test_a_closure_made_anew_is_guarded_by_its_cells():
    compiled, counter = compile_counted(_apply)
    x = torch.randn(3)
    for c in (2.0, 2.0, 3.0, 3.0, 2.0):
        run_same(compiled, _apply, _scaled_by(c), x)
    assert counter.frame_count == 2  # 2.0, then 3.0: each cell value a variant of its own
    reason = bytegraph.cache_entries(compiled)[1].reason
    assert reason == "entry 0: L['fn'].__closure__[0].cell_contents == 2.0"


def test_a_function_of_other_code_misses():
    compiled, counter = compile_counted(_apply)
    x = torch.randn(3)
    run_same(compiled, _apply, _new_lambda(), x)
    run_same(compiled, _apply, lambda t: t - 5, x)
    run_same(compiled, _apply, _new_lambda(), x)
    assert counter.frame_count == 2
    assert "L['fn'].__code__ is" in bytegraph.cache_entries(compiled)[1].reason


def test_a_partial_made_anew_at_each_call_does_not_recompile():
    compiled, counter = compile_counted(_apply)
    x = torch.randn(3)
    for k in (3.0, 3.0, 4.0):
        run_same(compiled, _apply, functools.partial(lambda t, k: t * k, k=k), x)
    assert counter.frame_count == 2  # k=3.0, then k=4.0


def test_a_bound_method_of_an_object_made_anew_does_not_recompile():
    class Scaler:
        def __init__(self, k):
            self.k = k

        def forward(self, t):
            return t * self.k

    compiled, counter = compile_counted(_apply)
    x = torch.randn(3)
    for k in (2.0, 2.0, 5.0):
        run_same(compiled, _apply, Scaler(k).forward, x)
    assert counter.frame_count == 2


def test_a_function_whose_identity_is_compared_is_guarded_by_identity():
    def fn(f, g, x):
        return f(x) if f is g else g(x) - f(x)

    compiled, counter = compile_counted(fn)
    x = torch.randn(3)
    run_same(compiled, fn, _new_lambda(), _new_lambda(), x)  # two functions of one code
    same = _new_lambda()
    run_same(compiled, fn, same, same, x)  # one function twice: ``is`` now holds
    run_same(compiled, fn, _new_lambda(), _new_lambda(), x)
    assert counter.frame_count == 3  # identity read: each new pair is traced again


def test_a_function_used_as_a_key_is_guarded_by_identity():
    table = {}

    def fn(f, x):
        table.setdefault(f, len(table))
        return f(x) + table[f]

    compiled, counter = compile_counted(fn)
    x = torch.randn(3)
    first, second = _new_lambda(), _new_lambda()
    run_same(compiled, fn, first, x)
    table.clear()
    run_same(compiled, fn, first, x)
    expected = fn(second, x)  # eager puts ``second`` in the table too
    del table[second]
    assert_same(compiled(second, x), expected)


def test_a_function_whose_name_is_read_is_guarded_by_identity():
    def fn(f, x):
        return f(x) * len(f.__name__)

    compiled, counter = compile_counted(fn)
    x = torch.randn(3)
    f, g = _new_lambda(), _new_lambda()
    g.__name__ = "a_longer_name"  # the same code; the name is the object's own
    run_same(compiled, fn, f, x)
    run_same(compiled, fn, g, x)
    assert counter.frame_count == 2


def test_a_function_whose_attributes_are_read_stays_guarded():
    def fn(f, x):
        return f(x) * getattr(f, "scale", 1.0)

    def tagged(scale):
        g = _new_lambda()
        g.scale = scale
        return g

    compiled, counter = compile_counted(fn)
    x = torch.randn(3)
    for value in (2.0, 3.0, 2.0):
        run_same(compiled, fn, tagged(value), x)
    run_same(compiled, fn, _new_lambda(), x)  # no attribute: no ``scale``


def test_a_function_whose_dict_is_read_stays_guarded():
    def fn(f, x):
        return f(x) * len(f.__dict__)

    compiled, counter = compile_counted(fn)
    x = torch.randn(3)
    plain = _new_lambda()
    run_same(compiled, fn, plain, x)
    tagged = _new_lambda()
    tagged.tag = 1
    run_same(compiled, fn, tagged, x)
    run_same(compiled, fn, _new_lambda(), x)


def test_a_break_inside_a_closure_made_anew_reads_its_own_cells():
    def scaled(c):
        def inner(t):
            y = t * c
            print("break")  # a graph break inside the inlined closure
            return y + c

        return inner

    compiled, counter = compile_counted(_apply)
    x = torch.randn(3)
    for c in (2.0, 2.0, 3.0):
        run_same(compiled, _apply, scaled(c), x)
