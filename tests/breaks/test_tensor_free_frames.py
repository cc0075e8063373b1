"""A frame whose trace returns without recording a tensor operation is not compiled: its code is
marked once, and from then on every call of it (from a compiled function's entry, from code run in
plain Python through the router, from a resume function) runs the original code, whatever its
arguments: no guards, no recompiles, as torch.compile skips such frames (``callees.py``)."""

import contextlib
import functools

import pytest
import torch
from bytegraph.backends.debug import CompileCounter
from bytegraph.tracer import driver
from bytegraph.tracer.exc import BytegraphError

import bytegraph


def exists(val):
    return val is not None


def divisible_by(num, den):
    return (num % den) == 0


@contextlib.contextmanager
def _entered():
    yield


def _counting(x, vals):
    """Its block runs in plain Python (a print inside a user context manager), calling the two
    helpers through the router with each value."""
    y = x + 1
    with _entered():
        print("inside")
        for v in vals:
            if exists(v) and divisible_by(v, 3):
                y = y * 2
    return y


def _states(fn):
    """The compile states of ``fn`` that traced since the last ``reset``: its own, or its code's
    shared caller's (``callees.py``)."""
    shared = f"call_function[{fn.__qualname__}]"
    return [s for s in list(driver.ALL) if s.events and (s.fn is fn or s.fn.__qualname__ == shared)]


def test_a_tensor_free_helper_called_from_plain_python_is_traced_once():
    compiled = bytegraph.compile(_counting, backend="eager")
    for i in range(10):
        vals = [i, None, i + 1]
        x = torch.randn(3)
        torch.testing.assert_close(compiled(x, vals), _counting(x, vals))
    for helper in (exists, divisible_by):
        (state,) = _states(helper)
        assert len(state.events) == 1 and state.events[0].tensor_free
        assert state.recompiles == 0
    assert bytegraph.stats()["tensor_free"] == 2


def test_a_compiled_function_without_tensor_work_is_left_alone_for_any_argument():
    seen = []

    def record(val, n):
        seen.append(val)  # an effect the original code has at each call
        return val if n % 2 else None

    compiled = bytegraph.compile(record, backend="eager")
    x = torch.ones(2)
    for n in range(10):
        val = x if n > 5 else n
        assert compiled(val, n) is (val if n % 2 else None)
    assert seen == [*range(6), x, x, x, x]
    (state,) = _states(record)
    assert len(state.events) == 1 and state.recompiles == 0
    assert state.cache.variants == []  # no guards: every call runs the original


_DOUBLE = False


def _doubles_when_asked(x):
    return x * 2 if _DOUBLE else x


def _no_guards(*args):
    raise AssertionError("the entry of a function left alone asked its guards")


def test_the_entry_of_a_function_left_alone_asks_no_guards_until_reset(monkeypatch):
    counter = CompileCounter()
    compiled = bytegraph.compile(_doubles_when_asked, backend=counter)
    x = torch.ones(2)
    assert compiled(x) is x and counter.frame_count == 0  # tensor-free: left alone
    (state,) = _states(_doubles_when_asked)
    monkeypatch.setattr(state.cache, "guard_fn", _no_guards)
    monkeypatch.setitem(globals(), "_DOUBLE", True)
    torch.testing.assert_close(compiled(x), x * 2)  # the original code, as it runs now
    monkeypatch.undo()
    bytegraph.reset()  # asked again: traced, with tensor work now
    monkeypatch.setitem(globals(), "_DOUBLE", True)
    torch.testing.assert_close(compiled(x), x * 2)
    assert counter.frame_count == 1 and state.cache.variants


def test_a_function_left_alone_given_new_code_runs_it_from_its_entry(monkeypatch):
    compiled = bytegraph.compile(_falls_back_calling_exists, backend="eager")
    assert compiled(1) is True and compiled(None) is False  # left alone: its first trace failed
    monkeypatch.setattr(_falls_back_calling_exists, "__code__", _is_none.__code__)
    with pytest.warns(UserWarning, match="was replaced after compile"):
        assert compiled(None) is True and compiled(1) is False


def test_tensor_work_is_compiled_as_before():
    def scale(x, n):
        return x * n

    compiled = bytegraph.compile(scale, backend="eager")
    compiled(torch.ones(2), 2)
    (state,) = _states(scale)
    assert state.events[0].graphs and not state.events[0].tensor_free


def test_fullgraph_keeps_guarding():
    calls = bytegraph.compile(divisible_by, backend="eager", fullgraph=True)
    for n in range(3):
        assert calls(n, 3) == (n % 3 == 0)
    assert "tensor_free" not in bytegraph.stats()


def _passthrough(f):
    @functools.wraps(f)
    def wrapper(*args):
        return f(*args)

    return wrapper


@_passthrough
def _same(v):
    return v


@_passthrough
def _cosine(x):
    return x.cos() + 1


def _calls_both(x):
    with _entered():
        print("inside")
        y = _cosine(_same(x))
    return y


def test_a_tensor_free_wrapper_still_calls_other_wrapped_functions_compiled():
    """The decorator's wrapper is marked by its trace around ``_same``; the calls it makes stay
    routed, so around ``_cosine`` it still calls ``_cosine`` compiled (a frame hook would see
    that frame)."""
    compiled = bytegraph.compile(_calls_both, backend="eager")
    for _ in range(3):
        x = torch.randn(3)
        torch.testing.assert_close(compiled(x), _calls_both(x))
    (state,) = _states(_cosine.__wrapped__)
    assert len(state.events) == 1 and state.events[0].graphs


def test_new_code_is_traced_again():
    def helper(v):
        return v

    def caller(x):
        with _entered():
            print("inside")
            y = helper(x)
        return y

    counter = CompileCounter()
    compiled = bytegraph.compile(caller, backend=counter)
    x = torch.randn(3)
    torch.testing.assert_close(compiled(x), x)
    (state,) = _states(helper)
    assert state.events[0].tensor_free and counter.frame_count == 0
    torch.testing.assert_close(compiled(x), x)
    helper.__code__ = (lambda v: v * 2).__code__
    torch.testing.assert_close(compiled(x), x * 2)
    assert counter.frame_count == 1, "the new code was not compiled"


def _falls_back_calling_exists(v):
    """Left alone (its trace fails), and it makes a call: routed code calls its routed copy."""
    try:
        raise KeyError(v)
    except KeyError:
        print("handled")  # a break while an exception is handled: runs in Python
    return exists(v)


def _is_none(v):
    return v is None


def _counting_through_a_fallback(x, vals):
    y = x + 1
    with _entered():
        print("inside")
        for v in vals:
            if _falls_back_calling_exists(v):
                y = y * 2
    return y


def test_a_function_left_alone_given_new_code_runs_the_new_code(monkeypatch):
    compiled = bytegraph.compile(_counting_through_a_fallback, backend="eager")
    x, vals = torch.randn(3), [1, None, 2]
    for _ in range(3):  # the router knows the function's routed copy from the first call
        torch.testing.assert_close(compiled(x, vals), _counting_through_a_fallback(x, vals))
    assert bytegraph.stats()["fallback:exception"] == 1
    monkeypatch.setattr(_falls_back_calling_exists, "__code__", _is_none.__code__)
    for _ in range(2):
        torch.testing.assert_close(compiled(x, vals), (x + 1) * 2)  # one None: doubled once
    assert _counting_through_a_fallback(x, vals).equal((x + 1) * 2)


@pytest.mark.parametrize("first", [None, 3])
def test_a_frame_marked_on_other_values_stays_correct(first):
    """Marked on a call without tensor work, the code runs as it is for values that would have
    made a graph: eager's result."""

    def maybe_scale(x, n):
        if isinstance(x, torch.Tensor):
            return x * n
        return x

    compiled = bytegraph.compile(maybe_scale, backend="eager")
    assert compiled(first, 2) == first
    t = torch.randn(3)
    torch.testing.assert_close(compiled(t, 2), t * 2)


def default(val, d):
    return val if exists(val) else d


class _Attention(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.qkv, self.out = torch.nn.Linear(dim, dim * 3), torch.nn.Linear(dim, dim)

    def forward(self, x, mask=None):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        sim = q @ k.transpose(-1, -2) * (q.shape[-1] ** -0.5)
        if exists(mask):
            sim = sim.masked_fill(~mask[:, None, :], -1e9)
        return self.out(sim.softmax(-1) @ v)


class _Layer(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.attn, self.norm = _Attention(dim), torch.nn.LayerNorm(dim)
        self.ff = torch.nn.Sequential(torch.nn.Linear(dim, dim), torch.nn.GELU())

    def forward(self, x, mask=None):
        try:
            x = x + self.attn(self.norm(x), mask=mask)
        except RuntimeError:
            raise
        if mask is not None and not bool(mask.all()):  # on tensor data: a break
            x = x * mask[..., None]
        return x + self.ff(x)


class _Encoder(torch.nn.Module):
    def __init__(self, dim=8, depth=3):
        super().__init__()
        self.layers = torch.nn.ModuleList([_Layer(dim) for _ in range(depth)])
        self.scale = None

    def forward(self, x, mask=None):
        scale = default(self.scale, 1.0)
        for i, layer in enumerate(self.layers):
            if divisible_by(i, 2):
                x = x * scale
            with _entered():  # the layers run in plain Python, through the router
                print(end="")
                if divisible_by(i, 1):  # tensor-free helpers, called with each i
                    x = layer(x, mask=default(mask, None))
        return x


def test_identical_calls_of_an_encoder_with_a_padding_mask_never_trace_again():
    torch.manual_seed(0)
    encoder = _Encoder().eval()
    compiled = bytegraph.compile(encoder, backend="eager")
    x, mask = torch.randn(2, 5, 8), torch.ones(2, 5, dtype=torch.bool)
    mask[1, 3:] = False
    with torch.no_grad():
        torch.testing.assert_close(compiled(x, mask=mask), encoder(x, mask=mask))
        traced = bytegraph.stats()["frames"]
        for _ in range(4):
            torch.testing.assert_close(compiled(x, mask=mask), encoder(x, mask=mask))
    assert bytegraph.stats()["frames"] == traced
    for helper in (default, divisible_by):
        (state,) = _states(helper)
        assert len(state.events) == 1 and state.events[0].tensor_free
    layer_calls = [s for s in list(driver.ALL) if s.fn.__qualname__ == "call_module[_Layer]"]
    assert [len(s.events) for s in layer_calls if s.events] == [1]  # three layers, one trace


def _handles(x):
    y = x + 1
    try:
        raise KeyError("k")
    except KeyError:
        print("handled")  # a break while an exception is handled: the trace fails
    return y * 2


def test_a_failed_first_trace_leaves_the_code_alone_but_fullgraph_still_raises():
    compiled = bytegraph.compile(_handles, backend="eager")
    with pytest.warns(UserWarning, match="running _handles in Python"):
        for _ in range(3):
            x = torch.randn(3)
            torch.testing.assert_close(compiled(x), _handles(x))
    assert bytegraph.stats()["frames"] == 1
    (state,) = _states(_handles)
    assert state.cache.variants == []  # every call runs in Python, without guards
    strict = bytegraph.compile(_handles, backend="eager", fullgraph=True)
    with pytest.raises(BytegraphError, match="cannot be compiled as one graph"):
        strict(torch.randn(3))
