"""A loop over a plain list whose body breaks: the resume function gets the real list iterator (the
list is read live: items the loop appends are taken), and its trace reads the list from where the
iterator stands without guarding where that is (``iterators.ListRestIteratorVariable``): the item
it takes, ``len(ListRest(it)) >= k + 1``, the list's type. One variant serves every iteration but
the last, where guarding the position made one per iteration (a loop of 12 hit the recompile
limit of 8). Once the trace reaches the list another way (its name, an attribute, a second
iterator), the list is modelled and the position guarded: the loop sees the trace's changes to
it. Each case is compared with eager (values, printed output, the lists after the call)."""

from __future__ import annotations

import collections
import copy
import operator
import warnings

import pytest
import torch
from difftest import (
    _run_captured,
    assert_same,
    assert_state_same,
    break_count,
    check_breaks,
    compile_counted,
)
from dynamo_baseline import assert_no_more_breaks

import bytegraph


def _variants(fn, calls, limit_ok=False):
    """``fn`` compiled once, called with the arguments each maker of ``calls`` makes, each call
    compared with eager's on a deep copy (result or error, printed output, the arguments after
    it); no recompile limit hit, unless ``limit_ok`` (a loop whose body changes the list guards
    its position: one variant per iteration, as before). The compiles per resume function, and
    the report."""
    from bytegraph.explain import Recorder

    compiled, _ = compile_counted(fn)
    recorder = Recorder()
    for make in calls:
        args = make()
        eager_args = copy.deepcopy(args)
        result, error, printed, _, _ = _run_captured(fn, eager_args, {}, None, None)
        with warnings.catch_warnings(), recorder:
            warnings.simplefilter("error")
            if limit_ok:
                warnings.filterwarnings("ignore", "bytegraph: .* hit recompile_limit")
            got, got_error, got_printed, _, _ = _run_captured(compiled, args, {}, None, None)
        if error is not None:
            assert type(got_error) is type(error) and str(got_error) == str(error)
        else:
            assert got_error is None, f"compiled raised {got_error!r}"
            assert_same(got, result)
        assert got_printed == printed
        assert_state_same(_remaining(args), _remaining(eager_args))
    report = recorder.report()
    if not limit_ok:
        break_count(report)  # none fell back to Python
    per_resume = collections.Counter(
        r.function for r in report.records if "__resume_at_" in r.function
    )
    return per_resume, report


def _remaining(args):
    """The arguments, a list or range iterator as the items it has yet to give (where it
    stands)."""
    positioned = (type(iter([])), type(iter(range(0))))
    return [list(a) if type(a) in positioned else a for a in args]


def modules(x, layers):
    for layer in layers:
        x = layer(x)
        print("", end="")  # a break in every iteration
    return x


def scaled(x, items):
    for item in items:
        x = x * item
        print("", end="")
    return x


torch.manual_seed(0)
_LINEARS = [torch.nn.Linear(4, 4) for _ in range(12)]
_TENSORS = [torch.randn(4) for _ in range(12)]


def _calls(fn, kinds, lengths=(12, 12, 5, 9, 2, 12)):
    x = torch.randn(2, 4)
    make = {
        "modules": lambda n: list(_LINEARS[:n]),
        "tensors": lambda n: list(_TENSORS[:n]),
        "ints": lambda n: list(range(1, n + 1)),
    }[kinds]
    return [lambda n=n: (x, make(n)) for n in lengths]


@pytest.mark.parametrize(
    ("fn", "kinds", "most"),
    [(modules, "modules", 2), (scaled, "tensors", 2), (scaled, "ints", 3)],
)
def test_one_variant_for_every_iteration_but_the_last(fn, kinds, most):
    """Before, one variant per position (8, the recompile limit, then Python). An int item
    compiles once more, for its first value, before it turns symbolic."""
    per_resume, report = _variants(fn, _calls(fn, kinds))
    assert per_resume, report.records
    assert max(per_resume.values()) <= most, per_resume
    assert not any("recompile_limit" in str(b) for b in report.break_reasons)


def test_the_list_is_guarded_from_the_position_one_item_at_a_time():
    _, report = _variants(modules, _calls(modules, "modules", (6, 6)))
    guards = "\n".join(report.guards)
    assert "ListRest(L['__stack0'])) >= 1" in guards, guards
    assert "ListRest(L['__stack0'])[1]" not in guards  # the item after the one taken
    assert ".__reduce__() + (None,))[2] ==" not in guards  # not the position


def test_items_of_other_kinds_at_other_positions():
    """Each variant guards what it read of the item it took: a module, a function, an int, a
    float, a tensor at any position, in any order, calls after calls."""

    def fn(x, items):
        for item in items:
            x = item(x) if callable(item) else x * item
            print("", end="")
        return x

    lin, t = _LINEARS[0], _TENSORS[0]
    orders = [[lin, 2, t], [2, t, lin], [t, lin, 2, 3], [lin, lin]]
    x = torch.randn(2, 4)
    _variants(fn, [lambda o=o: (x, list(o)) for o in orders * 2])


def _mutate(op, ws, w):
    if op == "append":
        ws.append(w * 0.5)
    elif op == "pop":
        ws.pop()
    elif op == "pop0":
        ws.pop(0)
    elif op == "insert":
        ws.insert(0, w + 1)
    elif op == "insert_next":
        ws.insert(1, w - 1)
    elif op == "slice":
        ws[1:3] = [w * 2]
    elif op == "clear":
        ws.clear()
    elif op == "setitem":
        ws[-1] = w * 3
    elif op == "del":
        del ws[0]
    elif op == "extend":
        ws.extend([w, w])


_OPS = [
    "append",
    "pop",
    "pop0",
    "insert",
    "insert_next",
    "slice",
    "clear",
    "setitem",
    "del",
    "extend",
]


@pytest.mark.parametrize("op", _OPS)
def test_the_body_changes_the_list(op):
    """The trace reaches the list by its name: from there the loop walks the list's tracker (its
    position guarded), so the items it takes next are those CPython's iterator takes."""

    def fn(x, ws):
        n = 0
        for w in ws:
            x = x * w
            print("w")
            n += 1
            if n < 4 and len(ws) < 8:
                _mutate(op, ws, w)
        return x, n

    x = torch.randn(4)
    _variants(fn, [lambda n=n: (x, [t + 1 for t in _TENSORS[:n]]) for n in (5, 3, 6, 5, 2)], True)


@pytest.mark.parametrize("op", _OPS)
def test_the_body_changes_the_list_in_python(op):
    """The change is made by a function that runs in Python (the break itself): the resumed trace
    reads the list as the change left it."""

    @bytegraph.disable
    def change(ws, w):
        _mutate(op, ws, w)

    def fn(x, ws):
        n = 0
        for w in ws:
            x = x * w
            if n < 3:
                change(ws, w)
            else:
                print("w")
            n += 1
        return x, n

    x = torch.randn(4)
    _variants(fn, [lambda n=n: (x, [t + 1 for t in _TENSORS[:n]]) for n in (5, 3, 6, 5, 2)], True)


def test_the_list_rebound():
    """The name rebound to another list: the loop goes on over the first."""

    def fn(x, ws):
        for w in ws:
            x = x * w
            print("w")
            ws = [w * 2, w]
        return x, ws

    x = torch.randn(4)
    _variants(fn, [lambda n=n: (x, list(_TENSORS[:n])) for n in (4, 6, 4)])


class Holder:
    def __init__(self, ws):
        self.ws = ws


def test_the_list_reached_through_an_attribute_and_another_name():
    """The loop over ``h.ws``; the body changes it as ``h.ws`` and reads it as ``alias``."""

    def fn(x, h, alias):
        for w in h.ws:
            x = x * w
            print("w")
            if len(alias) < 7:
                h.ws.append(w + 1)
            x = x + alias[-1]
        return x

    x = torch.randn(4)

    def make(n):
        ws = list(_TENSORS[:n])
        return x, Holder(ws), ws

    _variants(fn, [lambda n=n: make(n) for n in (3, 5, 3, 6)], True)


def test_an_alias_that_is_another_list_between_calls():
    """``alias`` is the looped list in one call and a copy of it in another: the variant traced
    for one does not serve the other (the identity of the two is guarded once both are read)."""

    def fn(x, ws, alias):
        for w in ws:
            x = x * w
            print("w")
            alias.append(w)
            if len(alias) > 6:
                break
        return x

    x = torch.randn(4)

    def same(n):
        ws = list(_TENSORS[:n])
        return x, ws, ws

    def apart(n):
        ws = list(_TENSORS[:n])
        return x, ws, list(ws)

    _variants(fn, [lambda make=make: make(4) for make in (same, apart, same, apart, same)], True)


def test_two_iterators_over_one_list():
    """Nested loops over the same list, the inner one breaking, the outer one changing the list:
    one iterator modelled as the other reaches the list."""

    def fn(x, ws):
        for a in ws:
            for b in ws:
                x = x * a + b
                print("ab")
            if len(ws) < 5:
                ws.append(a * 0.5)
        return x

    x = torch.randn(4)
    _variants(fn, [lambda n=n: (x, list(_TENSORS[:n])) for n in (2, 3, 2)], True)


@pytest.mark.parametrize("over", ["zip", "enumerate", "map"])
def test_combinators_over_a_list(over):
    def fn(x, ws):
        if over == "zip":
            loop = zip(ws, range(100), strict=False)
        elif over == "enumerate":
            loop = enumerate(ws)
        else:
            loop = map(lambda w: (w, 0), ws)
        for w, _ in loop:
            x = x * w
            print("w")
            if len(ws) < 6:
                ws.append(w + 1)
        return x

    x = torch.randn(4)
    _variants(fn, [lambda n=n: (x, list(_TENSORS[:n])) for n in (3, 4, 3, 7)], True)


def test_zip_of_lists_one_variant():
    def fn(x, ws, bs):
        for w, b in zip(ws, bs, strict=False):
            x = x * w + b
            print("", end="")
        return x

    x = torch.randn(4)
    calls = [lambda n=n: (x, list(_TENSORS[:n]), list(_TENSORS[1 : n + 1])) for n in (9, 5, 9)]
    per_resume, _ = _variants(fn, calls)
    assert max(per_resume.values()) <= 2, per_resume


def test_an_iterator_given_part_taken():
    """A list iterator passed in, some of it taken already: the trace takes the rest from there,
    and the caller's iterator ends where CPython's does."""

    def fn(x, it):
        for w in it:
            x = x * w
            print("", end="")
            if x.sum() > 1e9:  # never
                break
        return x

    def make(taken, n=8):
        it = iter(list(_TENSORS[:n]))
        for _ in range(taken):
            next(it)
        return torch.randn(4), it

    compiled, _ = compile_counted(fn)
    for taken in (0, 3, 5, 8, 2):
        x, it = make(taken)
        eager_it = copy.copy(it)
        assert_same(compiled(x, it), fn(x, eager_it))
        assert list(it) == list(eager_it) == []


def test_an_iterator_left_half_taken():
    """The loop leaves at a ``break``; the caller takes the rest: the real iterator stands where
    the trace left it."""

    def fn(x, it, stop):
        for w in it:
            x = x * w
            print("", end="")
            if x.numel() == stop:
                break
        return x

    compiled, _ = compile_counted(fn)
    for n in (6, 9, 6):
        ws = list(_TENSORS[:n])
        it, eager_it = iter(ws), iter(ws)
        x = torch.randn(4)
        assert_same(compiled(x, it, 4), fn(x, eager_it, 4))
        assert [id(v) for v in it] == [id(v) for v in eager_it]


def test_breaks_as_torch_compile():
    """Each call compiles the function and the resume function (counted once each, however many
    variants): two breaks, where torch.compile runs the frame in Python (a break in a loop)."""
    x = torch.randn(2, 4)
    check_breaks(modules, lambda: (x, list(_LINEARS)), graphs=2, breaks=2, calls=2)
    assert_no_more_breaks(
        2,
        modules,
        x,
        list(_LINEARS),
        baseline_missing="torch.compile skips a frame whose loop breaks",
    )


_ITERATOR_OPS = {
    "length_hint": lambda it: operator.length_hint(it),
    "list": lambda it: list(it),
    "next": lambda it: next(it, None),
    "type": lambda it: type(it).__name__,
    "iter_is": lambda it: iter(it) is it,
    "sum": lambda it: sum(it),
    "in": lambda it: _TENSORS[5] in it,
    "setstate": lambda it: it.__setstate__(1),
    "copy": lambda it: list(copy.copy(it)),
    "zip_self": lambda it: len(list(zip(it, it, strict=False))),
}


@pytest.mark.parametrize("op", sorted(_ITERATOR_OPS))
def test_what_else_reads_the_iterator(op):
    """After the break, the trace does more with the iterator than take its next item."""

    def fn(x, it):
        for w in it:
            x = x * w
            print("", end="")
            break
        return x, _ITERATOR_OPS[op](it)

    def make(taken):
        it = iter(list(_TENSORS[:8]))
        for _ in range(taken):
            next(it)
        return torch.randn(4), it

    _variants(fn, [lambda k=k: make(k) for k in (0, 3, 7, 8, 2)])


def test_the_list_changed_after_its_loop_ended():
    """The trace ends the loop (the real iterator is exhausted by the replay, and lets go of the
    list), then changes the list through an attribute: the change reaches the caller's list."""

    def fn(x, h):
        for w in h.ws:
            print("", end="")
            x = x * w
        h.ws.append(x)
        h.ws[0] = x + 1
        return x

    x = torch.randn(4)
    _variants(fn, [lambda n=n: (x, Holder(list(_TENSORS[:n]))) for n in (3, 5, 3)])


def numbered(x, layers):
    for i, layer in enumerate(layers, 1):
        x = layer(x) * i
        print("", end="")
    return x, i


def test_enumerate_over_a_list_few_variants():
    """``enumerate(list)``: its count is read as a number (constant in the first variant, then
    symbolic), not guarded equal: one variant per iteration before."""
    per_resume, _ = _variants(numbered, _calls(numbered, "modules"))
    assert max(per_resume.values()) <= 3, per_resume


def test_enumerate_over_a_list_left_half_taken():
    """An enumerate given to the trace, left at a ``break``: its count and its list iterator stand
    where CPython's do (the enumerate's replay moves the list iterator too)."""

    def fn(x, e, stop):
        for i, w in e:
            x = x * w + i
            print("", end="")
            if i == stop:
                break
        return x

    compiled, _ = compile_counted(fn)
    for n, stop in ((8, 3), (8, 5), (6, 4), (8, 2)):
        ws = list(_TENSORS[:n])
        it, eager_it = iter(ws), iter(ws)
        e, eager_e = enumerate(it, 2), enumerate(eager_it, 2)
        x = torch.randn(4)
        assert_same(compiled(x, e, stop), fn(x, eager_e, stop))
        assert [(i, id(w)) for i, w in e] == [(i, id(w)) for i, w in eager_e]


# A range iterator is read from where it stands too (``iterators.RangeRestIteratorVariable``): the
# loop's ``zip`` of a list and a range, an ``enumerate`` of a ``zip``, a range iterator given in.


def paired(x, ws):
    for w, i in zip(ws, range(len(ws)), strict=False):
        x = x * w + i
        print("", end="")
    return x


def numbered_pairs(x, ws, bs):
    for i, (w, b) in enumerate(zip(ws, bs, strict=False)):
        x = x * w + b * i
        print("", end="")
    return x, i


def numbered_range_pairs(x, ws):
    for i, (w, k) in enumerate(zip(ws, range(100, 200), strict=False), 3):
        x = x * w + i - k
        print("", end="")
    return x


_LENGTHS = (4, 12, 30, 12, 4, 30)


def test_a_zip_of_a_list_and_a_range_few_variants():
    """Before, the range iterator's position was guarded: one variant per iteration (the
    recompile limit at 12 items). Now a few variants whatever the length (the int items:
    constant first, then symbolic), and every iteration a graph."""
    make = lambda n: (torch.randn(4), list(_TENSORS_30[:n]))  # noqa: E731
    per_resume, report = _variants(paired, [lambda n=n: make(n) for n in _LENGTHS])
    assert per_resume and max(per_resume.values()) <= 3, per_resume
    assert {b.kind for b in report.break_reasons} == {"print"}, report.break_reasons
    assert len(report.break_reasons) == len(report.records) - 1  # one per variant, then the end


def indexed_stages(x, ws, bs):
    """torchdiffeq's Runge-Kutta loop: the count is an index (a constant of each iteration's
    trace), and an operator of the body breaks."""
    k = torch.zeros(4, len(ws) + 1)
    for i, (w, b) in enumerate(zip(ws, bs, strict=False)):
        k[..., i + 1] = x * w + b
        print("", end="")
    return k


@pytest.mark.parametrize(
    ("fn", "make"),
    [
        (numbered_pairs, lambda n: (torch.randn(4), list(_TENSORS_30[:n]), _TENSORS_30[1:])),
        (numbered_range_pairs, lambda n: (torch.randn(4), list(_TENSORS_30[:n]))),
        (indexed_stages, lambda n: (torch.randn(4), list(_TENSORS_30[:n]), _TENSORS_30[1:])),
    ],
    ids=["enumerate_zip", "enumerate_zip_range", "enumerate_zip_index"],
)
def test_an_enumerate_of_a_zip_runs_its_loop_in_python_from_its_first_break(fn, make):
    """An ``enumerate`` over a ``zip`` is not read from where it stands: where the body reads
    its count as a constant (an index), each iteration would compile a resume function of its
    own up to the recompile limit, and every later call would take a break per iteration
    (torchdiffeq's dopri5: 9 breaks to 14 a call, 1.41x eager to 0.33x). The loop runs in Python
    from its first break: a variant or two (the code after the loop: a length constant, then
    symbolic) whatever the length, no recompile limit."""
    per_resume, report = _variants(fn, [lambda n=n: make(n) for n in _LENGTHS])
    assert max(per_resume.values(), default=1) <= 2, per_resume
    assert "for_iter" in {b.kind for b in report.break_reasons}, report.break_reasons


_TENSORS_30 = [torch.randn(4) for _ in range(31)]


def test_a_range_iterator_given_part_taken():
    """A range iterator passed in, some of it taken already (3.11 reduces it to the range and a
    position, 3.12 to the range left): the trace takes the rest from there in a few variants,
    and the caller's iterator ends where CPython's does."""

    def fn(x, it):
        for i in it:
            x = x * 2 + i
            print("", end="")
        return x, next(it, "end")

    def make(taken, n=20):
        it = iter(range(5, 5 + 3 * n, 3))
        for _ in range(taken):
            next(it)
        return torch.randn(4), it

    per_resume, _ = _variants(fn, [lambda k=k: make(k) for k in (0, 3, 11, 20, 2, 17)])
    assert max(per_resume.values()) <= 3, per_resume


def _stop_at(x, z, stop):
    for w, i in z:
        x = x * w + i
        print("", end="")
        if x.numel() == stop:
            break
    return x


def _numbered_stop_at(x, e, stop):
    for i, (w, k) in e:
        x = x * w + i * k
        print("", end="")
        if i == stop:
            break
    return x


def test_a_zip_of_a_list_and_a_range_left_half_taken():
    """The loop leaves at a ``break``; the caller takes the rest: the list and range iterators
    under the ``zip`` (and under an ``enumerate`` of it) stand where CPython's do."""
    compiled, _ = compile_counted(_stop_at)
    numbered, _ = compile_counted(_numbered_stop_at)
    for n, count in ((8, None), (6, 2), (9, None), (3, 0), (8, 5), (2, 1)):

        def make(n=n, count=count):
            ws = list(_TENSORS_30[:n])
            it, r = iter(ws), iter(range(7, 7 + n + 2))
            next(r)
            z = zip(it, r, strict=False)
            return (z if count is None else enumerate(z, count)), it, r

        (z, it, r), (eager_z, eager_it, eager_r) = make(), make()
        x = torch.randn(4)
        if count is None:
            assert_same(compiled(x, z, 4), _stop_at(x, eager_z, 4))
        else:  # stops at the count 4 (or runs to the end)
            assert_same(numbered(x, z, 4), _numbered_stop_at(x, eager_z, 4))
            assert [(i, id(w), k) for i, (w, k) in z] == [(i, id(w), k) for i, (w, k) in eager_z]
        assert [id(v) for v in it] == [id(v) for v in eager_it]
        assert list(r) == list(eager_r)


def test_zip_of_a_list_and_a_range_breaks_as_torch_compile():
    """The function breaks once, its resume function once in its first variant (the range's item
    a constant) and once in the second (symbolic), which serves the other iterations of both
    calls; the end makes no graph. torch.compile runs the frame in Python (a break in a loop)."""
    x = torch.randn(4)
    check_breaks(paired, lambda: (x, list(_TENSORS_30[:12])), graphs=3, breaks=3, calls=2)
    assert_no_more_breaks(
        3,
        paired,
        x,
        list(_TENSORS_30[:12]),
        baseline_missing="torch.compile skips a frame whose loop breaks",
    )


# A list the resume function also holds by its name (read again after the loop): the trace models
# it, and guards the iterator's position, only once it reads it (``LazyListVariable.before_read``).


def held_after(x, ws):
    for w in ws:
        x = x * w
        print("", end="")
    return x, len(ws), ws[-1]


def test_a_list_read_again_after_its_loop_few_variants():
    """Before, the list held as a live local was modelled when the resume function got it: its
    iterator's position guarded, one variant per iteration (the recompile limit at 12 items)."""
    for n in (4, 12, 30):  # (the end reads the list: its length guarded)
        calls = [lambda n=n: (torch.randn(4), list(_TENSORS_30[:n]))] * 3
        per_resume, _ = _variants(held_after, calls)
        assert max(per_resume.values()) <= 2, (n, per_resume)


@pytest.mark.parametrize("op", _OPS)
def test_a_held_list_changed_in_one_iteration_and_after_the_loop(op):
    """The body changes the list by its name in one iteration only (the variants before it and
    after it read nothing of the list), and the code after the loop changes it again: the items
    the loop takes, the list after the call and what is read after the loop are CPython's."""

    def fn(x, ws):
        n = 0
        for w in ws:
            x = x * w
            print("", end="")
            n += 1
            if n == 2:
                _mutate(op, ws, w)
        ws.append(x)
        return x, n, len(ws)

    for n in (4, 12, 30):
        calls = [lambda n=n: (torch.randn(4), [t + 1 for t in _TENSORS_30[:n]])] * 3
        per_resume, _ = _variants(fn, calls)
        assert max(per_resume.values()) <= 4, (n, per_resume)


# ``reversed(list)``: a loop breaking in its body goes on with the real reversed iterator (it reads
# the list live), read from where it stands (``iterators.ReversedRestIteratorVariable``).


def backwards(x, ws):
    for w in reversed(ws):
        x = x * w
        print("", end="")
    return x


def test_reversed_few_variants():
    per_resume, _ = _variants(
        backwards, [lambda n=n: (torch.randn(4), list(_TENSORS_30[:n])) for n in _LENGTHS]
    )
    assert max(per_resume.values()) <= 2, per_resume


@pytest.mark.parametrize("op", _OPS)
def test_reversed_the_body_changes_the_list(op):
    """Before, the rest of the loop went to the resume function as a tuple taken at the first
    break: a change the body made to the list after it (an item written, the list shortened)
    was not seen, a wrong result. Now the loop reads the list as CPython's iterator does."""

    def fn(x, ws):
        n = 0
        for w in reversed(ws):
            x = x * w
            print("", end="")
            n += 1
            if n == 2:
                _mutate(op, ws, w)
        return x, n

    calls = [
        lambda n=n: (torch.randn(4), [t + 1 for t in _TENSORS_30[:n]]) for n in (5, 3, 6, 5, 2)
    ]
    _variants(fn, calls, True)


@pytest.mark.parametrize("op", _OPS)
def test_reversed_the_list_changed_in_python(op):
    """The change is made at the break, by a function run in Python."""

    def change(ws, w, n):
        if n == 2:
            _mutate(op, ws, w)

    def fn(x, ws):
        n = 0
        for w in reversed(ws):
            n += 1
            x = x * w
            change(ws, w, n)
            bytegraph.graph_break()
        return x, n

    calls = [lambda n=n: (torch.randn(4), [t + 1 for t in _TENSORS_30[:n]]) for n in (5, 3, 6)]
    _variants(fn, calls, True)


def test_a_reversed_iterator_given_part_taken_and_left():
    """A reversed list iterator passed in, some of it taken, the loop left at a ``break``, the
    caller taking the rest; and an ``enumerate`` over one: where CPython's stand."""

    def fn(x, it, stop):
        for w in it:
            x = x * (w[1] if isinstance(w, tuple) else w)
            print("", end="")
            if x.numel() == stop:
                break
        return x

    compiled, _ = compile_counted(fn)
    for n, taken, stop, count in (
        (8, 0, 9, None),
        (8, 3, 4, None),
        (5, 5, 9, None),
        (9, 2, 4, 1),
        (6, 1, 9, 0),
    ):

        def make(n=n, taken=taken, count=count):
            ws = list(_TENSORS_30[:n])
            it = reversed(ws)
            for _ in range(taken):
                next(it)
            return (it if count is None else enumerate(it, count)), it

        (it, inner), (eager_it, eager_inner) = make(), make()
        x = torch.randn(4)
        assert_same(compiled(x, it, stop), fn(x, eager_it, stop))
        assert [repr(v) for v in it] == [repr(v) for v in eager_it]
        assert [id(v) for v in inner] == [id(v) for v in eager_inner]
