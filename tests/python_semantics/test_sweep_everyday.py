"""Everyday Python in compiled functions, called several times with the arguments changed in
between: iterators and generators consumed across calls, containers of ``collections`` given as
inputs and live at a break, dict views combined with sets, classes with properties, descriptors
and hooks, closures and globals, context managers and exceptions.

Each scenario is a function ``drive(f)`` that makes its own state, calls ``f`` several times
(changing the state between calls) and returns what it saw: every result and the state after the
calls. It runs once with the plain function and once with the compiled one, on fresh state each
time, and the two records must be equal (``same_as_eager``); graphs and breaks are counted over
all calls and nothing may fall back. Break counts are compared with torch.compile's on one call
(``assert_no_more_breaks``).
"""

from __future__ import annotations

import contextlib
import io
import sys
import types
import warnings
from collections import deque

import pytest
import torch
from difftest import assert_same, break_count, compile_counted
from dynamo_baseline import assert_no_more_breaks

from bytegraph.explain import Recorder


def observed(value):
    """``value`` made comparable with ``assert_same``: tensors and builtin sequences and dicts
    kept, their items made comparable; a deque as its list and ``maxlen``; a set as its items in
    iteration order; anything else as its type and ``repr``."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if type(value) in (list, tuple):
        return type(value)(map(observed, value))
    if type(value) is dict:
        return {k: observed(v) for k, v in value.items()}
    if isinstance(value, deque):
        return ("deque", [observed(v) for v in value], value.maxlen)
    if isinstance(value, (set, frozenset)):
        return (type(value).__name__, [observed(v) for v in value])
    return (type(value).__name__, repr(value))


def same_as_eager(drive, *, graphs: int, breaks: int):
    """``drive(fn)`` with the plain ``fn`` it makes and with ``fn`` compiled, each on fresh
    state: equal records; ``(graphs, breaks)`` over all the compiled calls, none falling back.
    ``drive`` is ``drive(f, fn=None)``: it calls ``f`` where given, else its own ``fn``."""
    expected = observed(drive(None))
    compiled, counter = compile_counted(drive.fn)
    recorder = Recorder()
    with warnings.catch_warnings(), recorder:
        warnings.simplefilter("error")  # a fallback warns
        actual = observed(drive(compiled))
    assert_same(actual, expected)
    got = (counter.frame_count, break_count(recorder.report()))
    assert got == (graphs, breaks), "\n".join(map(str, recorder.report().break_reasons))


def scenario(fn):
    """Decorate ``drive(f)``: ``f`` None runs ``fn`` itself."""

    def wrap(drive):
        def run(f):
            return drive(fn if f is None else f)

        run.fn = fn
        return run

    return wrap


def quietly(call, *args):
    with contextlib.redirect_stdout(io.StringIO()) as out:
        return call(*args), out.getvalue()


# -- dict views combined with sets ----------------------------------------------------------------


def items_view_set_ops(x, d):
    return (
        x + 1,
        d.items() ^ {("a", 1)},
        d.items() - {("a", 1)},
        d.items() | set(),
        d.items() & {("b", 3)},
    )


@scenario(items_view_set_ops)
def drive_items_view_set_ops(f):
    # from the third call on d["b"] is a number read as a symbol: each set holds ('b', 3), never
    # the key model's object standing for the number
    return [f(torch.ones(2), {"a": 1, "b": v}) for v in (2, 2, 3, 4)]


def test_items_view_set_operators_hold_the_pairs_of_numbers_read_as_symbols():
    # each new value of d["b"] is a variant: a set's item is hashed, so the number specialises
    same_as_eager(drive_items_view_set_ops, graphs=3, breaks=0)
    assert_no_more_breaks(
        0,
        items_view_set_ops,
        torch.ones(2),
        {"a": 1, "b": 3},
        baseline_missing="torch 2.11's Dynamo fails on the items view's set operator",
    )


def items_view_of_tensors(x):
    made = {"a": 1, "t": x + 1}
    ((key, t),) = made.items() - {("a", 1)}
    return key, t * 2


def test_items_view_difference_gives_the_tensor_itself():
    @scenario(items_view_of_tensors)
    def drive(f):
        return [f(torch.ones(2)), f(torch.full((2,), 3.0))]

    same_as_eager(drive, graphs=1, breaks=0)
    assert_no_more_breaks(
        0,
        items_view_of_tensors,
        torch.ones(2),
        baseline_missing="torch.compile runs the items view's set operation in Python",
    )


# -- collections given as inputs ------------------------------------------------------------------


def deque_appended_around_a_break(x, q):
    q.append(x.sum())
    print(len(q))
    q.append(x.mean())
    return torch.stack(list(q)), q


def deque_appended_after_a_break(x, q):
    print("start")
    q.append(x.sum())
    return x + 1


@pytest.mark.parametrize("maxlen", [None, 3], ids=["unbounded", "maxlen3"])
def test_a_deque_live_at_a_break_is_the_callers_deque(maxlen):
    # the deque a resume function appends to is the input itself, not a copy made at the break
    @scenario(deque_appended_around_a_break)
    def drive(f):
        q = deque(maxlen=maxlen)
        calls = [quietly(f, torch.full((2,), float(i)), q) for i in range(1, 4)]
        return [(out, printed, returned is q) for (out, returned), printed in calls] + [q]

    # each call's deque has another length: a variant each, of two graphs
    same_as_eager(drive, graphs=6 if maxlen is None else 5, breaks=3)

    @scenario(deque_appended_after_a_break)
    def drive_after(f):
        q = deque(maxlen=maxlen)
        return [quietly(f, torch.ones(2), q), quietly(f, torch.ones(2), q), q]

    same_as_eager(drive_after, graphs=2, breaks=2)
    with contextlib.redirect_stdout(io.StringIO()):
        assert_no_more_breaks(
            1, deque_appended_around_a_break, torch.ones(2), deque([torch.ones(())])
        )


# -- keys hashed in Python ------------------------------------------------------------------------


HASHED = []


class CountedKey:
    """A key whose ``__hash__`` records each call: CPython hashes a key when it is put in a
    dict and a lookup hashes the key looked up, never the keys already in the dict."""

    def __init__(self, v):
        self.v = v

    def __hash__(self):
        HASHED.append(self.v)
        return hash(self.v)

    def __eq__(self, other):
        return isinstance(other, CountedKey) and other.v == self.v


def lookup_counted(x, table, key):
    return x * table[key]


class Holder:
    def __init__(self, table):
        self.table = table


def lookup_counted_in_attribute(x, holder, key):
    return x * holder.table[key]


@pytest.mark.parametrize("held", [False, True], ids=["argument", "attribute"])
def test_a_hash_that_changes_state_runs_as_often_as_in_cpython(held):
    # every call after the first (which traces, and checks the keys in Python once) hashes only
    # the key looked up; the trace hashed the dict's own keys too, and the rewritten code
    # replayed those hashes' appends at every call
    fn = lookup_counted_in_attribute if held else lookup_counted

    @scenario(fn)
    def drive(f):
        table = {CountedKey(1): 1.0, CountedKey(2): 2.0}
        given = Holder(table) if held else table
        f(torch.ones(2), given, CountedKey(1))  # the first call: compiles
        del HASHED[:]
        calls = [f(torch.ones(2), given, CountedKey(k)) for k in (1, 1, 2, 2)]
        return calls, list(HASHED)

    # a break at the lookup (the trace does not model such a hash); its resume function has a
    # variant per value read
    same_as_eager(drive, graphs=2, breaks=1)


# -- context managers -----------------------------------------------------------------------------


class Scope:
    """A context manager recording its entries and exits in ``Scope.log``; ``swallow``: its
    ``__exit__`` suppresses the exception."""

    log: list = []

    def __init__(self, name, swallow=False):
        self.name, self.swallow = name, swallow

    def __enter__(self):
        Scope.log.append(("enter", self.name))
        return self

    def __exit__(self, kind, value, tb):
        Scope.log.append(("exit", self.name, kind.__name__ if kind else None))
        return self.swallow


def stacked_scopes(x, mode, log):
    with contextlib.ExitStack() as stack:
        stack.enter_context(Scope("outer"))
        stack.enter_context(Scope("inner", swallow=mode == "swallow"))
        stack.callback(log.append, mode)
        if mode != "ok":
            raise RuntimeError("body")
        x = x * 2
    return x + 1


def test_an_exit_stack_is_traced_through():
    # ExitStack binds each __exit__ with types.MethodType and reads sys.exc_info() in its own
    # __exit__: both traced (before: a break at each)
    @scenario(stacked_scopes)
    def drive(f):
        Scope.log = []
        log, out = [], []
        for mode in ("ok", "ok", "swallow", "raise", "swallow"):
            try:
                out.append(f(torch.ones(2), mode, log))
            except RuntimeError as e:
                out.append(("raised", str(e)))
        return out, list(Scope.log), log

    # a variant per mode; the exception leaving the function is raised by CPython (a break)
    same_as_eager(drive, graphs=2, breaks=1)
    assert_no_more_breaks(
        0,
        stacked_scopes,
        torch.ones(2),
        "ok",
        [],
        baseline_missing="torch 2.11's Dynamo fails on ExitStack.callback's method call",
    )


def handled_where(x, raising):
    outer = sys.exc_info()[0]
    try:
        if raising:
            raise KeyError("k")
        inner = None
    except KeyError:
        kind, exc, tb = sys.exc_info()
        inner = (kind.__name__, str(exc), tb is not None, type(sys.exception()).__name__)
    return x + 1, outer, inner, sys.exception()


def test_sys_exc_info_is_the_exception_being_handled():
    # inside the function's own handler: its exception; outside any: none, guarded, so a call
    # made while the caller handles an exception sees that one (a break reads it)
    @scenario(handled_where)
    def drive(f):
        out = [f(torch.ones(2), True), f(torch.ones(2), False)]
        try:
            raise ValueError("outer")
        except ValueError:
            out += [f(torch.ones(2), True), f(torch.ones(2), False)]
        out.append(f(torch.ones(2), True))
        return [(y, outer, inner, repr(now)) for y, outer, inner, now in out]

    same_as_eager(drive, graphs=5, breaks=4)
    assert_no_more_breaks(0, handled_where, torch.ones(2), True)


def bind_and_call(x, obj):
    method = types.MethodType(add_k, obj)
    return method(x), method.__self__ is obj, method.__func__ is add_k, method == obj.own


class WithK:
    def __init__(self, k):
        self.k = k
        self.own = types.MethodType(add_k, self)


def add_k(self, x):
    return x + self.k


def test_types_method_type_binds_a_function():
    @scenario(bind_and_call)
    def drive(f):
        obj = WithK(2)
        return [f(torch.ones(2), obj), f(torch.ones(2), obj), f(torch.ones(2), WithK(5))]

    same_as_eager(drive, graphs=2, breaks=0)


# -- dict subclasses with __missing__ -------------------------------------------------------------


class Vocab(dict):
    """A token vocabulary: an unknown token counts a miss and reads as ``<unk>``'s id."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.unknown = 0

    def __missing__(self, key):
        self.unknown += 1
        return self.get("<unk>", -1)


class Memo(dict):
    def __missing__(self, key):
        made = self[key] = [key]
        return made


def token_ids(x, vocab, tokens):
    ids = [vocab[t] for t in tokens]
    return x * sum(ids), ids, vocab.get("zz"), "zz" in vocab, vocab.unknown, len(vocab)


def memo_lists(x, keys):
    memo = Memo()
    for k in keys:
        memo[k].append(0)
    return x * len(memo), dict(memo), type(memo).__name__


def test_a_dict_subclass_missing_runs_where_dict_calls_it():
    # d[k] of an absent key calls the class's __missing__, inlined (before: a KeyError break,
    # then a break at each len() of the object); get, in and len do not call it
    @scenario(token_ids)
    def drive(f):
        vocab = Vocab({"a": 1, "b": 2, "<unk>": 0})
        out = [f(torch.ones(2), vocab, ["a", "q"]) for _ in range(2)]
        out.append(f(torch.ones(2), vocab, ["b"]))
        vocab["q"] = 7
        out.append(f(torch.ones(2), vocab, ["a", "q"]))
        return out, vocab.unknown, dict(vocab)

    same_as_eager(drive, graphs=3, breaks=0)
    assert_no_more_breaks(0, token_ids, torch.ones(2), Vocab({"a": 1}), ["a", "q"])

    @scenario(memo_lists)
    def drive_made(f):
        return [f(torch.ones(2), ["a", "b", "a"]), f(torch.ones(2), ["a", "b", "a"])]

    same_as_eager(drive_made, graphs=1, breaks=0)


# -- generators closed ----------------------------------------------------------------------------


def running_total(start):
    total = start
    while True:
        sent = yield total
        if sent is None:
            break
        total = total + sent


def bounded(n):
    yield from range(n)


def accumulate_then_close(x, steps):
    gen = running_total(x)
    first = next(gen)
    totals = [gen.send(s) for s in steps]
    gen.close()
    after = next(gen, "closed")
    unstarted = bounded(3)
    unstarted.close()
    done = bounded(1)
    rest = list(done)
    done.close()
    return first, totals, after, next(unstarted, "closed"), rest


def test_a_generator_suspended_outside_any_block_is_closed_in_the_trace():
    # close() at a yield no try/with block covers ends the generator with no code run (before:
    # a break at each close, then at each send)
    @scenario(accumulate_then_close)
    def drive(f):
        return [f(torch.ones(2), [2.0, 3.0]), f(torch.ones(2), [2.0, 3.0])]

    same_as_eager(drive, graphs=1, breaks=0)
    assert_no_more_breaks(0, accumulate_then_close, torch.ones(2), [2.0, 3.0])


def guarded_items(log):
    try:
        yield 1
        yield 2
    finally:
        log.append("cleanup")


def close_inside_try(x, log):
    gen = guarded_items(log)
    first = next(gen)
    gen.close()
    return x + first, list(log)


def test_a_generator_closed_inside_its_try_block_runs_its_cleanup():
    @scenario(close_inside_try)
    def drive(f):
        log = []
        return [f(torch.ones(2), log), f(torch.ones(2), log), log]

    # the finally block runs in CPython: a break (torch.compile runs it in the graph's frame)
    same_as_eager(drive, graphs=2, breaks=3)
