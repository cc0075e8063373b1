"""Minimised failures found by the random differential programs (``programs.py``), one test each,
plus the bugs found while writing the reliability tests. Each names the bug it pins down."""

from __future__ import annotations

import contextlib
import warnings

import pytest
import torch
from bytecode import ConcreteBytecode
from bytegraph.codegen.pyversion import PY311
from difftest import assert_same, check_breaks, compile_counted
from dynamo_baseline import assert_no_more_breaks

import bytegraph


class Obj:
    def __init__(self, w):
        self.w = w


G_VALUE = torch.ones(2)


def test_item_read_before_list_mutation_keeps_old_value():
    """Seed 23: ``a = lst[-1]; del lst[:1]`` returned ``lst[0]`` read *after* the replayed mutation
    (IndexError on a one-element list)."""

    def fn(x, lst):
        a = lst[-1] if lst else x
        del lst[:1]
        return a

    for n in (1, 2, 3):
        check_breaks(
            fn,
            lambda n=n: (torch.zeros(2), [torch.ones(2) * i for i in range(n)]),
            graphs=0,
            breaks=0,
            calls=1,
        )


def test_item_read_before_list_store_keeps_old_value():
    """Seed 275: ``c = lst[-1]; lst[0] = y`` returned the new ``lst[0]``."""

    def fn(x, y, lst):
        c = lst[-1] if lst else x
        if lst:
            lst[0] = y
        return c

    check_breaks(
        fn,
        lambda: (torch.zeros(2), torch.ones(2), [torch.full((2,), 5.0)]),
        graphs=0,
        breaks=0,
        calls=2,
    )


def test_attribute_read_before_attribute_store_keeps_old_value():
    def fn(x, obj):
        a = obj.w
        obj.w = x * 2
        return a + 0, a

    compiled, _ = compile_counted(fn)
    obj, eager_obj = Obj(torch.ones(2)), Obj(torch.ones(2))
    old = obj.w
    result = compiled(torch.zeros(2), obj)
    expected = fn(torch.zeros(2), eager_obj)
    torch.testing.assert_close(result, expected)
    assert result[1] is old
    torch.testing.assert_close(obj.w, eager_obj.w)


def test_global_read_before_global_store_keeps_old_value():
    def fn(x):
        global G_VALUE
        a = G_VALUE
        G_VALUE = x * 3
        return a

    global G_VALUE
    G_VALUE = before = torch.ones(2)
    compiled, _ = compile_counted(fn)
    assert compiled(torch.zeros(2)) is before
    torch.testing.assert_close(G_VALUE, torch.zeros(2))


def test_cell_read_before_cell_store_keeps_old_value():
    def make():
        t = torch.ones(2)

        def fn(x):
            nonlocal t
            a = t
            t = x * 2
            return a

        return fn

    fn = make()
    before = fn.__closure__[0].cell_contents
    compiled, _ = compile_counted(fn)
    assert compiled(torch.zeros(2)) is before


def helper_raises(x):
    print("helper")
    raise KeyError("inner")


def test_callee_break_inside_try_runs_the_handler():
    """A break in a callee called inside ``try`` continued outside the try block: the handler was
    skipped (KeyError escaped instead of the RuntimeError raised ``from`` it)."""

    def fn(x):
        try:
            return helper_raises(x)
        except KeyError as e:
            raise RuntimeError("wrapped") from e

    compiled, _ = compile_counted(fn)
    for _ in range(2):
        try:
            compiled(torch.ones(2))
        except RuntimeError as e:
            assert isinstance(e.__cause__, KeyError) and e.__cause__.args == ("inner",)
        else:
            raise AssertionError("no exception")


def test_exception_inside_try_of_resume_function_does_not_crash():
    """Resume functions starting inside a try block had exception-table depth 32768 (``bytecode``
    never reached the skipped ``TryBegin``): the first exception there crashed the interpreter."""

    def fn(x, d):
        try:
            print("before")
            y = d["missing"]
        except KeyError as e:
            raise RuntimeError("wrapped") from e
        return y

    def raises():
        try:
            compiled(torch.ones(2), {})
        except RuntimeError as e:
            return type(e.__cause__)

    compiled, _ = compile_counted(fn)
    assert raises() is KeyError
    assert raises() is KeyError
    for variant in bytegraph.state_of(compiled).resumes.values():
        table = ConcreteBytecode.from_code(variant.__code__).exception_table
        assert all(e.stack_depth < 1000 for e in table)


def test_callee_break_raising_inside_no_grad_restores_grad_mode():
    """A callee's break inside ``with torch.no_grad()`` followed by an exception left grad mode
    off."""

    def fn(x):
        with torch.no_grad():
            y = helper_raises(x)
        return y

    compiled, _ = compile_counted(fn)
    for _ in range(2):
        try:
            compiled(torch.ones(2, requires_grad=True))
        except KeyError:
            pass
        assert torch.is_grad_enabled()


def test_inplace_add_on_a_symbolic_int_does_not_change_its_source():
    """Fresh-seed fuzz find: ``j = obj.bump(3); j += obj.count`` with ``obj.count`` traced as a
    SymInt (it changed between calls) doubled ``obj.count``: the ``iadd`` node was generated as
    ``add += add``, rebinding the value the attribute store then read. Numbers now get plain ``add``
    nodes."""

    class Obj:
        def __init__(self, count):
            self.count = count

        def bump(self, k):
            self.count = self.count + k
            return self.count

    def fn(x, obj):
        j = obj.bump(3)
        j += obj.count
        return x + 1, j

    compiled = bytegraph.compile(fn, backend="eager")
    mine, theirs = Obj(0), Obj(0)
    x = torch.ones(2)
    for _ in range(4):
        got, want = compiled(x, mine), fn(x, theirs)
        torch.testing.assert_close(got[0], want[0])
        assert got[1] == want[1] and mine.count == theirs.count


def test_break_in_no_grad_nested_in_try_runs_the_except():
    """Fuzz seed 349: a break inside ``with torch.no_grad():`` that sits inside ``try`` ran the
    breaking instruction under the with-block's handler only, so the outer ``except`` never saw the
    error. CPython's exception table is flat; the nesting is now read one handler level down."""

    def fn(x, i):
        j = 0
        try:
            with torch.no_grad():
                a = x * 2
                if i == 3:
                    raise ValueError(f"bad {i}")
            j += 1
        except Exception as e:
            j = len(str(e))
        return a, j

    compiled = bytegraph.compile(fn, backend="eager")
    x = torch.ones(2)
    for i in (3, 3, 2, 3):
        got, want = compiled(x, i), fn(x, i)
        torch.testing.assert_close(got[0], want[0])
        assert got[1] == want[1]
        assert torch.is_grad_enabled()


def _run_raising(compiled, fn, args_of, observe):
    """Call ``compiled`` and ``fn`` on fresh copies of ``args_of(i)``; both raise the same error or
    return the same result, and ``observe`` (the state mutated before the error) agrees."""
    for i in range(len(args_of)):
        outcomes = []
        for f in (compiled, fn):
            args = args_of[i]()
            try:
                outcomes.append(("ok", f(*args), observe(args)))
            except ZeroDivisionError as e:
                outcomes.append(("raised", str(e), observe(args)))
        (kind, value, seen), (want_kind, want_value, want_seen) = outcomes
        assert kind == want_kind and seen == want_seen, (i, outcomes)
        if kind == "raised":
            assert value == want_value


def test_symbolic_division_by_zero_applies_earlier_mutations():
    """Fresh-seed fuzz finds 821214244 and 821214319: ``i = obj.bump(n); i = 3 // (i - 3)`` with the
    int traced as a SymInt (it changed between calls) raised ZeroDivisionError inside the graph,
    before the deferred ``obj.count`` store was replayed: eager had stored it. A divisor (or
    negative power of zero) that is zero now breaks the graph there, guarded on ``s0 - 3 != 0``."""

    class Counter:
        def __init__(self):
            self.count = 0

        def bump(self, k):
            self.count = self.count + k
            return k

    def fn(x, n, obj):
        i = obj.bump(n)
        i = 3 // (i - 3)
        return x * i

    compiled = bytegraph.compile(fn, backend="eager")
    x = torch.ones(2)
    ns = (1, 6, 3, 8, 3)  # the second call makes n dynamic; the third and fifth divide by 0
    _run_raising(
        compiled, fn, [lambda n=n: (x, n, Counter()) for n in ns], lambda args: args[2].count
    )


def test_symbolic_modulo_by_zero_in_a_cell_write_applies_the_write():
    """The same with a closure cell written before ``n % (k - 2)`` raises."""

    def make():
        cell = torch.zeros(1)

        def fn(x, k):
            nonlocal cell
            cell = x.sum().reshape(1)
            return x + k % (k - 2)

        return fn, lambda: float(cell)

    fn, eager_cell = make()
    compiled_fn, compiled_cell = make()
    compiled = bytegraph.compile(compiled_fn, backend="eager")
    for k, scale in ((3, 1.0), (4, 2.0), (2, 3.0), (2, 4.0), (5, 5.0)):
        x = torch.full((2,), scale)
        for f, cell in ((compiled, compiled_cell), (fn, eager_cell)):
            try:
                result = f(x, k)
            except ZeroDivisionError:
                result = "raised"
            if f is compiled:
                got = (result, cell())
            else:
                want = (result, cell())
        assert str(got) == str(want), (k, got, want)


G_LOG: list = []


def _appends_then_breaks(t, k):
    G_LOG.append(k)
    t = torch.relu(t) - 1
    if t.sum() > 0:  # data-dependent: a break inside the callee
        t = t - k
    return t


def test_callee_break_inside_try_undoes_the_callee_container_mutations():
    """Fresh-seed fuzz find 821237715: ``G.append(n); try: a = h(x, 0) ...`` where ``h`` appends to
    the same list and then breaks. A call inside a try block breaks *at the call* in the caller (the
    handler must see the callee's exceptions), so the callee runs again in Python; rolling back the
    partly traced call forgot what the callee had appended, and the append happened twice. Rolling
    back an instruction now also restores the items of containers changed during it."""

    def fn(x, n, local):
        G_LOG.append(n)
        local.append(n)
        try:
            a = _appends_then_breaks(x, local.pop()) + 1
        except Exception:
            a = None
        return a, len(local)

    compiled = bytegraph.compile(fn, backend="eager")
    for n in (5, 6, 7):
        x = torch.randn(3)
        G_LOG.clear()
        mine = [1, 2]
        got = compiled(x, n, mine)
        got_log = list(G_LOG)
        G_LOG.clear()
        theirs = [1, 2]
        want = fn(x, n, theirs)
        torch.testing.assert_close(got[0], want[0])
        assert got[1] == want[1] and mine == theirs and got_log == G_LOG == [n, n]


@bytegraph.config.patch(speculate=False)  # the resume after the branch's break is under test
def test_resume_inside_with_after_a_long_jump_is_traced():
    """Seed 211357428: a data-dependent branch inside ``with`` far into a function gave a resume
    function whose prologue jumps there with an EXTENDED_ARG, and whose ``with`` region starts at
    the jump itself; the code reader found no instruction at that unit (internal error, run in
    Python)."""
    body = "".join(f"        x = x + {i}\n" for i in range(120))
    source = (
        f"def fn(x):\n    with torch.no_grad():\n{body}"
        "        if (x > 0).any():\n            x = x * 2\n    return x\n"
    )
    namespace = {"torch": torch}
    exec(compile(source, "<long with>", "exec"), namespace)
    check_breaks(
        namespace["fn"],
        lambda: (torch.ones(2, requires_grad=True),),
        graphs=2,
        breaks=1,
    )


def test_a_graph_raising_after_a_recorded_side_effect_keeps_it():
    """Seed 500000423: ``d.update(...)`` on an input dict, then ``x - True`` on a tensor, which CPU
    kernels refuse and fake kernels do not: the graph raised, and the update (replayed only after
    the graph) was lost. A graph that raises while side effects wait for it reruns the call in
    Python (``deferred_checks.RerunOnError``), which updates the dict and raises as eager."""

    def fn(x, d):
        d.update((f"u{q}", len(d)) for q in range(2))
        c = x * torch.randint(0, 3, x.shape)  # a draw: put back before the rerun
        return x - (c.dim() == 1), c

    compiled, counter = compile_counted(fn)
    for _ in range(2):
        d, eager_d = {}, {}
        torch.manual_seed(0)
        with pytest.raises(RuntimeError) as eager:
            fn(torch.ones(2), eager_d)
        eager_rng = torch.get_rng_state()
        torch.manual_seed(0)
        with pytest.raises(RuntimeError) as actual:
            compiled(torch.ones(2), d)
        assert str(actual.value) == str(eager.value)
        assert d == eager_d == {"u0": 0, "u1": 1}
        assert torch.equal(torch.get_rng_state(), eager_rng)
    assert counter.frame_count == 1  # the same graph each call: it raised, nothing retraced


def test_subtracting_a_bool_breaks_before_the_op():
    """The same seed's op: ``x - True`` (or a bool tensor) is refused by eager's kernels but not by
    fake ones: it breaks before the op (``eager_checks``), so Python raises at the user's line after
    the side effects are replayed, without running the graph twice."""

    def fn(x, d, flag):
        d["seen"] = len(d)
        y = x * 2
        return y - flag

    for flag in (True, torch.tensor([True, False])):
        check_breaks(fn, lambda flag=flag: (torch.ones(2), {}, flag), graphs=1, breaks=1, calls=2)


class _HashedByKey:
    def __init__(self, key):
        self.key = key

    def __eq__(self, other):
        return isinstance(other, _HashedByKey) and other.key == self.key

    def __hash__(self):
        return hash(self.key)


def test_an_object_made_in_the_call_keys_an_input_dict():
    """Seed 7300674 (keys family, and 53 more of a 20,000-program run): an object made in the call
    whose ``__hash__`` reads its attributes, stored as a key of an input dict. The replay refilled
    the dict before it set the new object's attributes, so hashing it raised AttributeError where
    eager returned. The new objects' attributes are now replayed first."""

    def fn(x, d):
        k = _HashedByKey(2)
        d[k] = 1
        d[_HashedByKey(3)] = len(d)
        return x + len(d), k

    compiled, _, _ = check_breaks(fn, lambda: (torch.ones(2), {"a": 0}), graphs=1, breaks=0)
    d = {}
    _, k = compiled(torch.ones(2), d)
    assert list(d) == [k, _HashedByKey(3)] and d[k] == 1


class _KeyedByValue:
    def __init__(self, key):
        self.key = key

    def __eq__(self, other):
        return isinstance(other, _KeyedByValue) and other.key == self.key

    def __hash__(self):
        return hash(("keyed", self.key))


def _set_of_equal_new_objects(x):
    k = _KeyedByValue(2)
    s = {k, _KeyedByValue(2), _KeyedByValue(3)}
    print("break")
    return x + 1, s, k


def _set_of_equal_new_objects_then_raise(x):
    k = _KeyedByValue(2)
    s = {k, _KeyedByValue(2)}
    s.remove(float("nan"))
    return x + len(s)


@pytest.mark.parametrize(
    "fn, graphs, breaks",
    # the KeyError is raised by CPython: one break, at the call that raises it
    [(_set_of_equal_new_objects, 1, 1), (_set_of_equal_new_objects_then_raise, 0, 1)],
)
def test_a_set_of_new_objects_dropping_an_equal_one_is_rebuilt(fn, graphs, breaks):
    """Seeds 7307396 and 7313057 (keys family): a set display of objects made in the call, two of
    them equal, so the set keeps the first. The rewritten code rebuilds the set with the same
    display, which names the dropped object too, but the escape analysis did not walk the set's
    recipe: the object was not made first (an internal error, the call run in Python). Now the
    recipe's objects are made before it runs, and the call compiles."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an internal-error fallback warns
        compiled, _, _ = check_breaks(fn, lambda: (torch.ones(2),), graphs=graphs, breaks=breaks)
    if fn is _set_of_equal_new_objects:
        _, s, k = compiled(torch.ones(2))
        assert len(s) == 2 and any(item is k for item in s)


_PAIR = (1, "a")


def _tuple_identities(x, t):
    k = (1, "a")
    same_constant = k is (1, "a")  # noqa: F632 (one constant of the code object)
    module_constant = k is _PAIR  # the module's compilation merges equal constants too
    argument = t is _PAIR
    built = k is tuple([1, "a"])
    return x + 1, (same_constant, module_constant, argument, built, () is ())  # noqa: F632


def test_tuples_are_the_objects_they_stand_for():
    """Seed 7401197 (keys family): ``k1 = (1, 'a'); k1 is (1, 'a')`` is True in CPython (equal
    constants of a code object are one object) and was False in the trace, which compared two
    tuples it had rebuilt. A tuple folded from a real one, or read from an input, now keeps that
    object: ``is`` compares the objects, guarded by identity where the next call may pass another
    tuple (the argument below: the same object, then an equal one, traced again: two graphs)."""
    calls = [
        lambda: (torch.ones(2), _PAIR),
        lambda: (torch.ones(2), tuple([1, "a"])),
        lambda: (torch.ones(2), _PAIR),
    ]
    check_breaks(_tuple_identities, None, graphs=2, breaks=0, calls=calls)


_PAIR_SET = {None, _PAIR}


def _tuple_read_first_as_a_set_item(x):
    found = (1 + 2j) in _PAIR_SET  # reads the set's items: the tuple as a key constant
    k = (1, "a")
    return x + 1, found, k is _PAIR, _PAIR is k


def test_a_tuple_read_as_a_set_item_keeps_its_identity():
    """Seed 9503745 (keys family): a tuple of constants first reached as an item of a global set
    is a constant of the key model, and reading the global again finds that tracker; ``k is
    _PAIR`` compared a tuple rebuilt from it (False) where CPython's module compilation made both
    one object. A constant holding a tuple is that real tuple."""
    check_breaks(_tuple_read_first_as_a_set_item, lambda: (torch.ones(2),), graphs=1, breaks=0)


_NAN = float("nan")


def _sequences_holding_one_nan(x):
    k = _NAN
    return (
        x + 1,
        (x, _NAN) == (x, _NAN),
        [k, 1] == [k, 1],
        (_NAN, 1) != (_NAN, 1),
        (1, _NAN) < (1, _NAN),
        (k, x) == (float("nan"), x),
    )


def test_sequences_compare_their_items_identity_first():
    """Seed 9506297 (keys family): ``(k, NAN) == (k, NAN)`` was False in the trace: one of two
    rules for sequence comparison compared constant items with ``==`` only, where CPython asks
    ``x is y or x == y`` (the same NaN equals itself). One rule compares sequences now."""
    check_breaks(_sequences_holding_one_nan, lambda: (torch.ones(2),), graphs=1, breaks=0)


G_STORES: list[int] = []


def _store_then_write_into_an_inference_view(x):
    x.view(-1).mul_(0)  # the graph changes an input: it cannot be run again from the start
    G_STORES.append(x.size(0))  # an effect the graph's end would replay
    with torch.inference_mode():
        a = x + 1
    a.view(-1)[-1:].add_(1)  # eager raises: a view of an inference tensor written outside the mode
    return a


def test_a_write_into_a_view_of_an_inference_tensor_keeps_the_effects_before_it():
    """Seed 9812280 (base family): the global store before ``a.view(-1)[-1:].add_(...)`` was
    lost. Fake tensors let that write through (the fast meta path made the slice a tensor that
    is not an inference tensor, and the fake kernels raise only for the inference tensor itself),
    so the write went into the graph, which raised at run time, after the input it had changed
    made a rerun impossible, and before the store it would replay. It is now ``op_error`` at
    trace time: the call goes on in Python from there, after the graph and its effects."""
    check_breaks(
        _store_then_write_into_an_inference_view,
        lambda: (torch.ones(4),),
        graphs=1,
        breaks=1,
        setup=G_STORES.clear,
        observe=lambda: list(G_STORES),
    )


def _printed(v):
    print("item", v)
    return v


def _append_a_comprehension_that_breaks(x, log):
    log.append(len([_printed(q) for q in range(2)]))
    return x * 2


def _append_a_lambda_that_breaks(x, log):
    y = x + 1
    log.append((lambda: _printed(y.sum().item()))())
    return y * 2


@pytest.mark.parametrize(
    "fn, graphs, breaks",
    [
        # NOTE(3.12): a comprehension runs in its function's frame (PEP 709): ``_printed``, called
        # by CPython at each break, breaks on its own, and no graph is left in ``fn``
        (_append_a_comprehension_that_breaks, 1, 1)
        if PY311
        else (_append_a_comprehension_that_breaks, 0, 2),
        (_append_a_lambda_that_breaks, 2, 1),
    ],
)
def test_a_method_below_a_call_that_breaks_keeps_its_receiver(fn, graphs, breaks):
    """Seeds 7, 21, 22, 26 (python family): ``log.append(len([f(q) for q in ...]))`` where ``f``
    breaks. The call of the function made in the trace (the comprehension, a lambda) runs in
    Python at the break, with ``log.append`` below its operands; the stack was rebuilt with that
    method read as a method (``[append, log]``) but handed on to the resume function as a NULL and
    a bound method, so the resume function called ``list.append`` with no list (TypeError)."""
    check_breaks(fn, lambda: (torch.ones(2), []), graphs=graphs, breaks=breaks)


def _nonlocal_write_then_break(x, log):
    tot = 0

    def add(v):
        nonlocal tot
        tot += v
        log.append(v)
        bytegraph.graph_break()
        return tot

    n = tot + add(1)
    return x + n, tot


def test_a_break_in_a_closure_made_in_the_call_undoes_its_nonlocal_write():
    """Seed 71 (python family): a closure made in the call writes its parent's variable
    (``nonlocal``) and breaks. The break is taken at the parent's call, which CPython runs whole;
    the parent's locals were rolled back by rebinding the frame's dict, but the cell the closure
    writes through kept the old dict, so the rebuilt closure's cell held the written value and the
    call added ``v`` twice (``tot`` 2, ``n`` 2 where eager gives 1 and 1)."""
    check_breaks(_nonlocal_write_then_break, lambda: (torch.ones(2), []), graphs=1, breaks=1)


_EXECUTED = """
G_count = 0


def f(x, k):
    def bump(v):
        global G_count
        G_count += v
        return G_count

    try:
        n = bump(k)
    finally:
        pass
    return x + n
"""


def test_a_global_of_exec_code_read_by_a_callee_compiled_on_its_own_is_guarded():
    """Seed 87 (python family): a function made in the call, called in a try block (so the call
    goes through ``callees.call_function``, compiled on its own), reads a global of code exec'd
    outside any module. Such globals were constants of the trace, unguarded: the next call, with
    the global changed, reused the variant and returned the first call's sum. They are now read
    through the function the trace was given, ``L['fn'].__globals__['G_count']``, and guarded."""
    eager, compiled = {"__name__": "not_a_module"}, {"__name__": "not_a_module"}
    exec(_EXECUTED, eager)
    exec(_EXECUTED, compiled)
    fn = bytegraph.compile(compiled["f"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the global store in the callee breaks
        for _ in range(3):
            torch.testing.assert_close(fn(torch.ones(2), 1), eager["f"](torch.ones(2), 1))
            assert compiled["G_count"] == eager["G_count"]


def _closure_sharing_its_cell():
    count = 0

    def fn(x):
        nonlocal count

        def tally(k):
            nonlocal count
            count += k
            return count

        print("break")
        n = tally(1)
        count = count + 10
        return x + n

    return fn


def test_a_closure_reached_through_a_local_writes_the_compiled_functions_cell():
    """Seed 367 (python family): the compiled function and a closure it made share a cell; after a
    break the resume function is given the closure as a local and reaches the cell as
    ``L['tally'].__closure__[0]``, a second tracker beside the frame's own ``C['count']``. The
    closure's store went to one, the frame's read and store to the other: ``count`` ended 10 where
    eager gives 11. A compiled function's closure cells are now one tracker each, whose stores are
    the frame's own (replayed as ``C[name]``)."""
    fn = _closure_sharing_its_cell()
    cell = fn.__closure__[0]

    def reset():
        cell.cell_contents = 0

    check_breaks(
        fn,
        lambda: (torch.ones(2),),
        graphs=1,
        breaks=1,
        setup=reset,
        observe=lambda: cell.cell_contents,
    )


def _closure_sharing_its_cell_breaking_inside():
    count = 0

    def fn(x):
        nonlocal count

        def tally(k):
            nonlocal count
            count += k
            print("in tally")
            return count

        print("break")
        n = tally(1)
        count = count + 10
        return x + n

    return fn


def test_a_closure_sharing_the_compiled_functions_cell_resumes_after_its_own_break():
    """The same closure breaking inside (python family, seeds 3000..3039): a resume function of the
    closure takes its cell as an argument, read again through the closure the trace was given
    (``L['tally'].__closure__[0]``); with the compiled function's own cell tracker (``C[name]``)
    it had no source and the resume function ran in Python."""
    fn = _closure_sharing_its_cell_breaking_inside()
    cell = fn.__closure__[0]

    def reset():
        cell.cell_contents = 0

    check_breaks(
        fn,
        lambda: (torch.ones(2),),
        graphs=1,
        breaks=2,
        setup=reset,
        observe=lambda: cell.cell_contents,
    )


def _doubled(ts):
    for t in ts:
        print("item")
        yield t * 2


def _two_items():
    return torch.ones(2), [torch.ones(2), torch.full((2,), 2.0)]


def _generator_taken_in_a_with_block(x, ts):
    with contextlib.nullcontext():
        y = x + 1
        it = _doubled(ts)
        print("made")
        n = len(tuple(it))
    return y + n


def _generator_taken_in_a_loop(x, ts):
    for _ in range(1):
        y = x + 1
        it = _doubled(ts)
        print("made")
        n = len(tuple(it))
    return y + n


@pytest.mark.parametrize("fn", [_generator_taken_in_a_with_block, _generator_taken_in_a_loop])
def test_a_generator_made_by_a_resume_function_rolls_back_into_its_prefix(fn):
    """Seed 791 (python family): a generator not started at a break, held only by a local, is made
    by the resume function's prefix; consumed there, its ``print`` breaks, and the break is taken
    where it was made, the prefix's call. The resume function resuming there took its template's
    ``__stack0`` (the with block's exit, the loop's iterator) as a live local and the made
    generator as its own stack argument, both named ``__stack0``: one argument bound the other's
    value (TypeError: 'ContextExit' object is not iterable; in the loop, ``n`` 0 where eager gives
    2)."""
    check_breaks(fn, _two_items, graphs=2, breaks=3)
    assert_no_more_breaks(
        3,
        fn,
        *_two_items(),
        baseline_missing="torch.compile runs the call in Python: it cannot rebuild the generator",
    )


def _locals_after_the_generator(x, ts):
    with contextlib.nullcontext():
        y = x + 1
        it = _doubled(ts)
        print("made")
        n = len(tuple(it))
        names = sorted(locals())
    return y + n, names


def test_locals_after_a_break_in_a_resume_functions_prefix():
    """The same break, in code that reads its frame (``locals()``): every local of the user's is
    then live, and the resume function resuming in the prefix was given those only, not its
    template's ``__stack0``, which the prefix reads next (UnboundLocalError); and ``locals()`` there
    listed the template's generated names (``__stack0``), read as the user's frame."""
    check_breaks(_locals_after_the_generator, _two_items, graphs=2, breaks=4)


def _drains_a_reversed_iterator(x, it, rest):
    return x + 1, list(it), next(rest, "done")


def test_an_exhausted_reversed_list_iterator_passed_in():
    """python family, seed 11 on 3.13: a ``reversed(list)`` iterator exhausted before the call
    (as a resume function is given one) reduces on 3.13 to ``reversed([])`` with no position,
    which the input wrapper took for a position of None: an internal error, the frame ran in
    Python. Exhausted ones are empty iterators on every version."""

    def inputs():
        items = [1, 2, 3]
        spent = reversed(items)
        list(spent)
        part = reversed(items)
        next(part)
        return torch.ones(2), spent, part

    internal = bytegraph.stats().get("fallback:internal_error", 0)
    compiled, counter = compile_counted(_drains_a_reversed_iterator)
    for _ in range(2):
        runs = []
        for run in (_drains_a_reversed_iterator, compiled):
            x, spent, part = inputs()
            runs.append((run(x, spent, part), list(spent), list(part)))
        assert_same(runs[1], runs[0])
    assert bytegraph.stats().get("fallback:internal_error", 0) == internal
    assert counter.frame_count == 1


def _number_fed_into_itself(x, n):
    i = n
    for _ in range(40):
        i = i % 7 + i % 5  # ``i`` twice: its expression doubles at each turn
    return x + i


def test_a_symbolic_number_fed_into_itself_is_used_at_its_value():
    """Seed 15452739 (python family; a timeout): ``i = tally(i % 3) + tally(1)`` in nested loops,
    ``i`` symbolic: its expression doubled at each turn, and torch's value-range reasoning over it
    (``bound_sympy``) takes time exponential in its depth: minutes per call. A number made of more
    than ``_LARGEST_EXPRESSION`` numbers is used at its value (guarded), so the loop's last turns
    fold."""
    from bytegraph.tracer.variables.operations import _LARGEST_EXPRESSION

    from bytegraph.explain import Recorder

    compiled = bytegraph.compile(_number_fed_into_itself, backend="eager", dynamic=True)
    recorder = Recorder()
    for n in (3, 11, 11, 4):
        with recorder:
            actual = compiled(torch.ones(2), n)
        assert_same(actual, _number_fed_into_itself(torch.ones(2), n))
    assert recorder.report().graph_break_count == 0
    assert _LARGEST_EXPRESSION < 2**40  # (the old code's first call does not finish)
