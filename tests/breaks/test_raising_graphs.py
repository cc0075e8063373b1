"""A graph that raises on tensor data at run time (an index out of range) keeps the Python side
effects eager did before the raising line, also when the graph wrote into an input first.

Side effects are replayed after the graph, so a graph that raises must not leave them waiting: it
reruns the call in Python (``deferred_checks.RerunOnError``), which is only invisible while the
graph did nothing a second run would repeat visibly. A write into an input is undone first when
the input is small (copied before each call); a write into a large input ends the graph before the
next operator that may raise on data while side effects wait. torch.compile loses these effects
(torch 2.13, eager backend: ``G == []`` after each raising call below), so its counts are no
baseline here: the break counts are this design's.
"""

from __future__ import annotations

import contextlib
import warnings

import pytest
import torch
from difftest import check_breaks, compile_counted

import bytegraph

G: list = []


def _observe():
    return list(G)


def _calls(size, good, bad):
    """A call that runs, then one that raises on its index."""
    return [
        lambda: (torch.zeros(size), torch.tensor([good])),
        lambda: (torch.zeros(size), torch.tensor([bad])),
    ]


def write_store_then_index(x, idx):
    x.add_(1)
    G.append(1)
    return x[idx] * 2


def store_index_then_write(x, idx):
    G.append(1)
    y = torch.index_select(x, 0, idx) * 2
    x.mul_(2)
    G.append(2)
    return y + 1


def counter_step(counter, x, idx):
    """A step counter written in place (a static KV cache's ``cumulative_length.add_``), then an
    index into a buffer (its ``index_copy_``)."""
    G.append(0)  # a store waiting for the graph
    counter.add_(1)
    return x.index_copy(0, idx, torch.ones(1))


def test_a_write_into_a_small_input_is_put_back_and_the_call_reruns():
    check_breaks(
        write_store_then_index,
        None,
        graphs=1,
        breaks=0,
        calls=_calls(3, 1, 5),
        setup=G.clear,
        observe=_observe,
    )


def test_a_write_into_a_large_input_ends_the_graph_before_an_index():
    _, _, report = check_breaks(
        write_store_then_index,
        None,
        graphs=2,
        breaks=1,
        calls=_calls(5000, 1, 9000),
        setup=G.clear,
        observe=_observe,
    )
    assert "effect_order" in str(report), report


def test_a_raise_before_the_first_write_reruns():
    for size in (3, 5000):  # the write comes after the index: no break either way
        check_breaks(
            store_index_then_write,
            None,
            graphs=1,
            breaks=0,
            calls=_calls(size, 1, size + 7),
            setup=G.clear,
            observe=_observe,
        )


def test_a_step_counter_then_an_index_copy():
    calls = [
        lambda: (torch.zeros(1, dtype=torch.long), torch.zeros(4), torch.tensor([2])),
        lambda: (torch.zeros(1, dtype=torch.long), torch.zeros(4), torch.tensor([4])),
    ]
    check_breaks(
        counter_step, None, graphs=1, breaks=0, calls=calls, setup=G.clear, observe=_observe
    )


@pytest.mark.parametrize("size", [3, 5000])
def test_aot_backends_write_inputs_at_the_end(size):
    """AOTAutograd writes mutated inputs back after the graph: a raise leaves them untouched."""
    compiled = bytegraph.compile(write_store_then_index, backend="aot_eager")
    for idx, fails in ((1, False), (size + 7, True), (2, False)):
        for fn in (write_store_then_index, compiled):
            G.clear()
            x = torch.zeros(size)
            if fails:
                with pytest.raises(IndexError):
                    fn(x, torch.tensor([idx]))
            else:
                out = fn(x, torch.tensor([idx]))
                assert torch.equal(out, torch.tensor([2.0]))
            assert G == [1]
            assert torch.equal(x, torch.ones(size))


def index_then_draw(x, idx, g):
    y = x[idx] * 2
    return y + torch.randn(1, generator=g)


def test_a_draw_made_before_the_graph_never_comes_before_an_index():
    """A draw from a ``torch.Generator`` argument is made by the rewritten code before the graph
    (``generator_draws``): after an operator that may raise on tensor data, the graph ends before
    the draw, so a raising index leaves the generator as eager does."""
    compiled = bytegraph.compile(index_then_draw, backend="eager")
    for idx, fails in ((1, False), (9, True), (0, False)):
        states = []
        for fn in (index_then_draw, compiled):
            g = torch.Generator().manual_seed(3)
            args = (torch.arange(3.0), torch.tensor([idx]), g)
            if fails:
                with pytest.raises(IndexError):
                    fn(*args)
                states.append((None, g.get_state()))
            else:
                states.append((fn(*args), g.get_state()))
        (eager, eager_state), (actual, state) = states
        assert torch.equal(state, eager_state)
        assert (eager is None and actual is None) or torch.equal(actual, eager)
    assert "effect_order" in str(bytegraph.explain(index_then_draw)(*args))


def write_then_broadcast_into_an_operand(y, k):
    """``out=y`` where ``y`` is also an operand and cannot take the broadcast shape ``[1, n]``: on
    symbolic sizes the fake kernel resizes ``y`` where the real one raises, after a write into an
    input (fuzz seed 9955004: a cell stored before it kept its old value)."""
    G.append(1)
    v = k.unsqueeze(0)
    a = v * 2
    v.mul_(-1)
    return torch.add(y, a, out=y)


def test_a_write_into_an_input_of_symbolic_size_is_put_back_and_the_call_reruns():
    """Whether an input is small enough to copy before each call is decided on that call's
    tensor where its size is symbolic in the trace (it was left unsaved: the raise kept the
    write, and the side effects waiting for the graph were lost). Run by hand: ``check_breaks``
    turns the fake kernel's resize warning into an error, which breaks before the ``add``."""
    compiled, counter = compile_counted(write_then_broadcast_into_an_operand, dynamic=True)
    for n in (3, 5, 4):
        runs = []
        for fn in (write_then_broadcast_into_an_operand, compiled):
            G.clear()
            y, k = torch.zeros(n), torch.ones(n)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the fake kernel's resize warning
                with pytest.raises(RuntimeError) as raised:
                    fn(y, k)
            runs.append((str(raised.value), list(G), y.tolist(), k.tolist()))
        assert runs[1] == runs[0]
    assert counter.frame_count == 1  # one graph for every size: the reruns used it


# -- a raising operator inside a try block ------------------------------------------------------
# Raised out of the graph, the error would skip the try block's handler (torch.compile skips it:
# ``except`` never runs, a ``finally``'s store is lost). The graph reruns the call in Python
# instead, where the handler runs as in eager; where it cannot (a large input written before the
# operator), the graph ends before the operator, which runs in Python inside the block.


def factor_or_fall_back(a):
    """``psd_safe_cholesky``'s shape: a factorization that fails on the matrix's values."""
    try:
        low = torch.linalg.cholesky(a)
        G.append("factored")
    except RuntimeError:
        G.append("caught")
        low = torch.zeros_like(a)
    return low + 1


def index_or_first(buf, x, idx):
    buf.add_(1)
    try:
        y = x[idx]
    except IndexError:
        G.append("caught")
        y = x[0]
    return y * 2


def index_then_finally(x, idx):
    try:
        return x[idx] * 2
    finally:
        G.append("finally")


def _in_a_callee(x, idx):
    return torch.index_select(x, 0, idx) + 1


def index_in_a_callee_called_in_a_try(x, idx):
    y = x * 2
    try:
        return _in_a_callee(y, idx)
    except (KeyError, IndexError):
        G.append("caught")
        return y


def index_under_a_clause_that_cannot_see_it(x, idx):
    try:
        y = x[idx]
    except NotImplementedError:  # transformers' StaticLayer.update: never an index error
        G.append("not for an index")
        y = x
    return y * 2


def _matrices(good, bad):
    return [lambda: (good,), lambda: (bad,), lambda: (good,)]


def test_a_factorization_failing_in_a_try_block_runs_the_handler():
    calls = _matrices(torch.eye(3) * 2, -torch.eye(3))
    check_breaks(
        factor_or_fall_back, None, graphs=1, breaks=0, calls=calls, setup=G.clear, observe=_observe
    )


@pytest.mark.parametrize("size, graphs, breaks", [(3, 1, 0), (5000, 1, 1)])
def test_an_index_failing_in_a_try_block_runs_the_handler(size, graphs, breaks):
    """After a write into a small input (put back before the rerun) the graph takes the index; a
    large one written first ends the graph before it (the rest, in the try block, runs in
    Python)."""
    calls = [
        lambda: (torch.zeros(size), torch.arange(4.0), torch.tensor([1])),
        lambda: (torch.zeros(size), torch.arange(4.0), torch.tensor([9])),
    ]
    _, _, report = check_breaks(
        index_or_first,
        None,
        graphs=graphs,
        breaks=breaks,
        calls=calls,
        setup=G.clear,
        observe=_observe,
    )
    assert breaks == 0 or "a try block's handler must see its error" in str(report), report


@pytest.mark.parametrize(
    "fn", [index_then_finally, index_in_a_callee_called_in_a_try], ids=lambda fn: fn.__name__
)
def test_an_index_failing_under_a_finally_or_in_a_callee_runs_the_handler(fn):
    calls = [
        lambda: (torch.arange(4.0), torch.tensor([1])),
        lambda: (torch.arange(4.0), torch.tensor([9])),
    ]
    check_breaks(fn, None, graphs=1, breaks=0, calls=calls, setup=G.clear, observe=_observe)


def test_a_clause_that_cannot_see_the_error_leaves_the_graph_as_it_was():
    """``except NotImplementedError`` around an index: no rerun is needed (the error passes it
    by), so a large input written before the index does not end the graph."""
    calls = [
        lambda: (torch.arange(4.0), torch.tensor([1])),
        lambda: (torch.arange(4.0), torch.tensor([9])),
    ]
    check_breaks(
        index_under_a_clause_that_cannot_see_it,
        None,
        graphs=1,
        breaks=0,
        calls=calls,
        setup=G.clear,
        observe=_observe,
    )
    from bytegraph.tracer.breaks import deferred_checks

    compiled, _ = compile_counted(index_under_a_clause_that_cannot_see_it)
    compiled(torch.arange(4.0), torch.tensor([1]))
    graph = bytegraph.introspect.cache_entries(compiled)[0].fn.__closure__
    wrapped = [c.cell_contents for c in graph if hasattr(c.cell_contents, "written")]
    assert not any(isinstance(w, deferred_checks.RerunOnError) for w in wrapped)


class _Swallowing:
    def __enter__(self):
        G.append("enter")

    def __exit__(self, *exc):
        G.append(("exit", exc[0] and exc[0].__name__))
        return True


@contextlib.contextmanager
def _catching_index_errors():
    try:
        yield
    except IndexError:
        G.append("caught in the context")


def index_under_a_swallowing_exit(x, idx):
    y = x * 2
    with _Swallowing():
        y = y[idx]
    return y + 1


def index_under_a_context_that_catches(x, idx):
    y = x * 2
    with _catching_index_errors():
        y = y[idx]
    return y + 1


def index_under_no_grad(x, idx):
    with torch.no_grad():
        y = x[idx] * 2
    return y + 1


@pytest.mark.parametrize(
    "fn",
    [index_under_a_swallowing_exit, index_under_a_context_that_catches, index_under_no_grad],
    ids=lambda fn: fn.__name__,
)
def test_an_index_failing_in_a_with_block_meets_its_exit(fn):
    """A user context's ``__exit__`` (and a ``@contextmanager``'s ``except`` around its
    ``yield``) runs with the error, as in eager; no_grad's exit only restores grad mode."""
    calls = [
        lambda: (torch.arange(4.0), torch.tensor([1])),
        lambda: (torch.arange(4.0), torch.tensor([9])),
        lambda: (torch.arange(4.0), torch.tensor([2])),
    ]
    check_breaks(fn, None, graphs=1, breaks=0, calls=calls, setup=G.clear, observe=_observe)
