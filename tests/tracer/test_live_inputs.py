"""Values live at a graph break that the resume function gets as real objects: dict
views, enumerate objects, C methods bound to a container, ``torch.finfo``/``iinfo``,
``types.SimpleNamespace`` objects and torch's module-like objects (``torch.backends.cuda.matmul``).
Each is rebuilt at the break and read back by the resume function's trace
(``tracer/variables/live_inputs.py``, ``iterators.py``), so the call compiles graphs on both
sides of the break. Before: one more break per call, or the whole call in Python. Counts are
compared with torch.compile's."""

import collections
import dis
import itertools
import types

import pytest
import torch
from difftest import assert_same, check_breaks, compile_counted
from dynamo_baseline import dynamo_counts

from bytegraph.explain import Recorder


def _unbroken(recorder):
    """The calls recorded compiled with no graph break and none ran in Python."""
    report = recorder.report()
    assert report.graph_break_count == 0, report.break_reasons


def _keys_view_live(x):
    d = {"a": x, "b": x + 1}
    k = d.keys()
    print("break")
    d["c"] = x  # the view must show it: it is the view of the same dict
    return list(k), x + 1


def _values_view_live(x):
    d = {"a": x, "b": x + 1}
    v = d.values()
    print("break")
    d["a"] = x * 3
    return [t + 1 for t in v]


def _items_view_live(x):
    d = {"a": x, "b": x + 1}
    it = d.items()
    print("break")
    return [v + 1 for _, v in it]


def _ordered_view_live(x):
    d = collections.OrderedDict(a=x, b=x + 1)
    k = d.keys()
    print("break")
    d.move_to_end("a")
    return list(k), type(k).__name__, x * 2


def _enumerate_live(x):
    e = enumerate([x, x + 1, x + 2])
    next(e)
    print("break")
    return [i * t for i, t in e]


def _enumerate_range_live(x):
    e = enumerate(range(4), 1)
    next(e)
    y = x + 1
    print("break")
    return [y * i * t for i, t in e]


def _bound_append_live(x):
    out = []
    app = out.append
    app(x + 1)
    print("break")
    app(x + 2)
    return out


def _bound_dict_method_live(x):
    d = {"a": x + 1}
    put = d.setdefault
    print("break")
    put("b", x * 2)
    return d


def _count_live(x):
    c = itertools.count(1, 2)
    next(c)
    y = x + 1
    print("break")
    return y * next(c), next(c)


def _count_unstarted_live(x):
    c = itertools.count(5)
    y = x + 1
    print("break")
    return y * next(c)


def _str_method_live(x):
    y = x + 1
    join = ",".join
    print("break")
    return y * 2, join(["a", "b"])


def _finfo_live(x):
    y = x * 2
    fi = torch.finfo(x.dtype)
    print("break")
    return y.clamp(max=fi.max) + fi.eps


def _iinfo_live(x):
    y = x * 2
    ii = torch.iinfo(torch.int32)
    print("break")
    return y.clamp(min=ii.min, max=ii.max) + ii.bits


def _namespace_live(x):
    ns = types.SimpleNamespace(a=x + 1, b=2)
    print("break")
    return ns.a * ns.b


def _matmul_live(x):
    m = torch.backends.cuda.matmul
    print("break")
    return x + 1, m.allow_tf32


LIVE = [
    _keys_view_live,
    _values_view_live,
    _items_view_live,
    _ordered_view_live,
    _enumerate_live,
    _enumerate_range_live,
    _bound_append_live,
    _bound_dict_method_live,
    _count_live,
    _count_unstarted_live,
    _str_method_live,
    _finfo_live,
    _iinfo_live,
    _namespace_live,
    _matmul_live,
]
#: one graph: nothing before the break makes a tensor
_ONE_GRAPH = {_matmul_live}


@pytest.mark.parametrize("fn", LIVE, ids=lambda fn: fn.__name__.strip("_"))
def test_a_value_live_at_a_break_is_rebuilt(fn):
    graphs = 1 if fn in _ONE_GRAPH else 2
    check_breaks(fn, lambda: (torch.randn(3),), graphs=graphs, breaks=1, calls=3)
    tc_graphs, tc_breaks = dynamo_counts(fn, torch.randn(3))
    if tc_breaks > 0:
        assert (tc_graphs, tc_breaks) == (graphs, 1)
    # else torch.compile breaks at the same print but runs the code after it in Python (explain
    # counts graphs - 1 breaks; enumerate: -1, the whole call in Python); bytegraph compiles it
    assert tc_breaks <= 1


# -- dict views given to the trace -----------------------------------------------------------------


def _write_through(d, k, x):
    d["c"] = 3
    return list(k), x * len(k)


def test_a_view_input_sees_writes_to_its_dict():
    compiled, counter = compile_counted(_write_through)
    recorder = Recorder()
    for _ in range(2):
        d, eager_d = {"a": 1}, {"a": 1}
        x = torch.randn(2)
        with recorder:
            out = compiled(d, d.keys(), x)
        assert_same(out, _write_through(eager_d, eager_d.keys(), x))
        assert d == eager_d
    assert counter.frame_count == 1
    _unbroken(recorder)


def _view_only(k, x):
    return [x * v for v in k]


def test_a_view_input_is_guarded_on_its_dict():
    compiled, counter = compile_counted(_view_only)
    x = torch.randn(2)
    for d in ({"a": 1, "b": 2}, {"a": 1, "b": 2}, {"a": 1, "b": 2, "c": 3}):
        assert_same(compiled(d.values(), x), _view_only(d.values(), x))
    assert counter.frame_count == 2  # the third dict has other keys: traced again


# -- dict iterators given to the trace -------------------------------------------------------------


def _dict_iterator_live(x):
    d = {"a": x, "b": x + 1, "c": x + 2}
    it = iter(d)
    next(it)
    print("break")
    d["b"] = x * 5  # a write to a value the iterator has yet to reach: it sees it
    return [d[k] + 1 for k in it]


def _zip_of_views_live(x):
    d = {"a": x, "b": x + 1}
    z = zip(d.keys(), d.values())  # noqa: B905
    print("break")
    return [v * 2 for k, v in z]


@pytest.mark.parametrize("fn", [_dict_iterator_live, _zip_of_views_live], ids=lambda f: f.__name__)
def test_a_dict_iterator_live_at_a_break(fn):
    check_breaks(fn, lambda: (torch.randn(3),), graphs=2, breaks=1, calls=3)
    # torch.compile runs these calls in Python (explain: 0 graphs, -1 breaks)
    assert dynamo_counts(fn, torch.randn(3))[1] <= 1


def _take_key(it, d, x):
    k = next(it)
    return x * d[k], next(it, None)


def test_an_input_dict_iterator_is_advanced_as_eager():
    compiled, counter = compile_counted(_take_key)
    recorder = Recorder()
    for start in (0, 0, 1, 2):  # where it stands is guarded (by the keys it has left)
        d = {"a": 1, "b": 2, "c": 3}
        it, eager_it = iter(d), iter(d)
        for _ in range(start):
            next(it), next(eager_it)
        x = torch.randn(2)
        with recorder:
            out = compiled(it, d, x)
        assert_same(out, _take_key(eager_it, d, x))
        assert list(it) == list(eager_it)
    assert counter.frame_count == 3
    _unbroken(recorder)


def _drain_items(it, x):
    return [x * v for _, v in it]


def test_an_input_items_iterator_drained_stays_exhausted():
    d = {"a": 1, "b": 2}
    it = iter(d.items())
    compiled, _ = compile_counted(_drain_items)
    x = torch.randn(2)
    recorder = Recorder()
    with recorder:
        out = compiled(it, x)
    assert_same(out, _drain_items(iter(d.items()), x))
    d["c"] = 3  # an exhausted iterator no longer looks at its dict
    assert list(it) == []
    _unbroken(recorder)


def test_an_input_dict_iterator_over_a_changed_dict_raises_as_eager():
    compiled, _ = compile_counted(_take_key)
    for f in (_take_key, compiled):
        d = {"a": 1}
        it = iter(d)
        d["b"] = 2
        with pytest.raises(RuntimeError, match="changed size"):
            f(it, d, torch.randn(2))


# -- itertools.count: rebuilt from its state, read back from its repr -----------------------------


def _take_two(c, x):
    return x * next(c) + next(c), c


def test_an_input_count_is_advanced_as_eager():
    compiled, counter = compile_counted(_take_two)
    recorder = Recorder()
    for start, step in ((1, 2), (1, 2), (0.5, 0.25)):  # its state is guarded: traced again
        c, eager_c = itertools.count(start, step), itertools.count(start, step)
        x = torch.randn(2)
        with recorder:
            out, back = compiled(c, x)
        eager_out, _ = _take_two(eager_c, x)
        assert_same(out, eager_out)
        assert back is c and next(c) == next(eager_c)
    assert counter.frame_count == 2
    _unbroken(recorder)


def _count_made_and_returned(x):
    c = itertools.count(3)
    next(c)
    return c, x + 1


def test_a_count_made_in_the_trace_escapes_where_it_stands():
    compiled, counter = compile_counted(_count_made_and_returned)
    c, _ = compiled(torch.randn(2))
    assert type(c) is itertools.count and next(c) == 4
    assert counter.frame_count == 1


# -- enumerate objects given to the trace ----------------------------------------------------------


def _take(e, x):
    i, t = next(e)
    return x * i + t


def test_an_input_enumerate_is_advanced_as_eager():
    compiled, counter = compile_counted(_take)
    recorder = Recorder()
    for start in (0, 0, 1):  # the count is guarded: another one traces again
        e, eager_e = enumerate([5, 6, 7], start), enumerate([5, 6, 7], start)
        x = torch.randn(2)
        with recorder:
            out = compiled(e, x)
        assert_same(out, _take(eager_e, x))
        assert list(e) == list(eager_e)
    assert counter.frame_count == 2
    _unbroken(recorder)


def test_an_input_enumerate_over_a_range():
    # since 3.12 a range iterator's ``__setstate__`` moves it on rather than putting it at an index
    compiled, counter = compile_counted(_take_both)
    recorder = Recorder()
    for _ in range(2):
        its = iter(range(10, 15)), iter(range(10, 15))
        (e, it), (eager_e, eager_it) = ((enumerate(i, 2), i) for i in its)
        x = torch.randn(2)
        with recorder:
            out = compiled(e, it, x)
        assert_same(out, _take_both(eager_e, eager_it, x))
        assert list(e) == list(eager_e)
    assert counter.frame_count == 1
    _unbroken(recorder)


def _take_both(e, it, x):
    i, t = next(e)
    return x * i + t + next(it)


def test_an_input_enumerate_and_its_iterator():
    # ``it`` is the iterator the enumerate reads: taken from by both, it ends where CPython's does
    compiled, counter = compile_counted(_take_both)
    recorder = Recorder()
    for _ in range(2):
        its = iter([10, 11, 12, 13, 14]), iter([10, 11, 12, 13, 14])
        (e, it), (eager_e, eager_it) = ((enumerate(i, 2), i) for i in its)
        x = torch.randn(2)
        with recorder:
            out = compiled(e, it, x)
        assert_same(out, _take_both(eager_e, eager_it, x))
        assert list(e) == list(eager_e)
    assert counter.frame_count == 1
    _unbroken(recorder)


def _list_changed_under(e, items, x):
    items.append(9)
    return [x * i + t for i, t in e]


def test_an_input_enumerate_over_a_list_changed_in_the_trace_stays_right():
    # the items counted again at run time would not be the ones the trace took: a break there
    compiled, _ = compile_counted(_list_changed_under)
    recorder = Recorder()
    for _ in range(2):
        runs, x = [], torch.randn(2)
        for f in (_list_changed_under, compiled):
            items = [1, 2]
            e = enumerate(iter(items))
            next(e)
            with recorder:
                runs.append((f(e, items, x.clone()), items, list(e)))
        (out, items, rest), (eager_out, eager_items, eager_rest) = runs[1], runs[0]
        assert_same(out, eager_out)
        assert items == eager_items and rest == eager_rest == []
    kinds = {reason.kind for reason in recorder.report().break_reasons}
    assert kinds == {"enumerate_input"}


# -- C methods bound to a container ----------------------------------------------------------------


def _call_bound(put, x):
    put(x + 1)
    put(x * 2)
    return x - 1


def test_an_input_bound_append_changes_its_list():
    compiled, counter = compile_counted(_call_bound)
    for _ in range(2):
        out, eager_out = [0], [0]
        x = torch.randn(2)
        assert_same(compiled(out.append, x), _call_bound(eager_out.append, x))
        assert_same(out, eager_out)
    assert counter.frame_count == 1


def _adds(add, x):
    add(3)
    add(1)
    return x + 1


def _returns_bound(put, x):
    put(x)
    return put, x + 1


def test_an_input_bound_method_comes_back_as_itself():
    out = []
    put = out.append
    recorder = Recorder()
    with recorder:
        back, _ = compile_counted(_returns_bound)[0](put, torch.randn(2))
    assert back is put and len(out) == 1
    _unbroken(recorder)


def test_an_input_bound_set_add():
    compiled, counter = compile_counted(_adds)
    recorder = Recorder()
    for _ in range(2):
        s, eager_s = {1}, {1}
        x = torch.randn(2)
        with recorder:
            out = compiled(s.add, x)
        assert_same(out, _adds(eager_s.add, x))
        assert s == eager_s == {1, 3}
    assert counter.frame_count == 1
    _unbroken(recorder)


# -- finfo / iinfo ---------------------------------------------------------------------------------


def _limits(fi, x):
    return x.clamp(min=fi.min, max=fi.max) * fi.bits


def test_an_input_finfo_is_guarded_on_its_dtype():
    compiled, counter = compile_counted(_limits)
    x = torch.randn(3) * 1e6
    for dtype in (torch.float16, torch.float16, torch.bfloat16):
        fi = torch.finfo(dtype)
        assert_same(compiled(fi, x), _limits(fi, x))
    assert counter.frame_count == 2


# -- SimpleNamespace -------------------------------------------------------------------------------


def _namespace_made(x):
    ns = types.SimpleNamespace(scale=2, bias=x + 1)
    ns.scale = ns.scale + 1
    ns.extra = x * ns.scale
    return ns.extra + ns.bias, ns.scale


def test_a_namespace_made_in_the_trace():
    check_breaks(_namespace_made, lambda: (torch.randn(3),), graphs=1, breaks=0)


def _namespace_returned(x):
    ns = types.SimpleNamespace(b=x + 1, a=2)
    ns.c = ns.b * 2
    return ns


def test_a_namespace_escaping_keeps_its_attribute_order():
    compiled, counter = compile_counted(_namespace_returned)
    x = torch.randn(3)
    ns, eager = compiled(x), _namespace_returned(x)
    assert type(ns) is types.SimpleNamespace and list(vars(ns)) == list(vars(eager))
    assert_same(vars(ns), vars(eager))
    assert counter.frame_count == 1


def _namespace_positional(x):
    ns = types.SimpleNamespace({"a": x, "b": 1}, b=x * 2)
    pairs = types.SimpleNamespace([("c", x + 1)])
    return ns.a, ns.b, pairs.c


def test_a_namespace_positional_argument_as_this_python():
    # 3.13 takes a mapping (or pairs); 3.11 and 3.12 raise TypeError: the compiled call does too
    try:
        types.SimpleNamespace({})
    except TypeError:
        compiled, _ = compile_counted(_namespace_positional)
        with pytest.raises(TypeError):
            compiled(torch.randn(2))
        return
    check_breaks(_namespace_positional, lambda: (torch.randn(3),), graphs=1, breaks=0)


def _namespace_written(ns, x):
    ns.total = ns.a * x
    return ns.total + 1


def test_an_input_namespace_written():
    compiled, counter = compile_counted(_namespace_written)
    for _ in range(2):
        ns, eager_ns = types.SimpleNamespace(a=2), types.SimpleNamespace(a=2)
        x = torch.randn(2)
        assert_same(compiled(ns, x), _namespace_written(eager_ns, x))
        assert_same(vars(ns), vars(eager_ns))
    assert counter.frame_count == 1


# -- module-like objects of torch ------------------------------------------------------------------


def test_a_module_like_object_live_at_a_break_reads_the_current_state():
    # the resume function reads ``allow_tf32`` through the rebuilt object: guarded on its value
    compiled, counter = compile_counted(_matmul_live)
    saved = torch.backends.cuda.matmul.allow_tf32
    try:
        for flag in (False, True, False):
            torch.backends.cuda.matmul.allow_tf32 = flag
            x = torch.randn(2)
            assert_same(compiled(x), _matmul_live(x))
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved
    assert counter.frame_count == 2


# -- deleting attributes of objects made in the trace ---------------------------------------------


def _namespace_deleted(x):
    ns = types.SimpleNamespace(a=x + 1, b=2, c=3)
    attributes = ns.__dict__  # live: it sees the deletions
    del ns.a
    delattr(ns, "b")
    ns.a = x * 2  # back, now after ``c``
    return ns.a + ns.c, hasattr(ns, "b"), list(attributes), ns


def test_del_on_a_namespace_made_in_the_trace():
    assert "DELETE_ATTR" in {i.opname for i in dis.get_instructions(_namespace_deleted)}
    compiled, counter = compile_counted(_namespace_deleted)
    recorder = Recorder()
    for _ in range(2):
        x = torch.randn(3)
        with recorder:
            *out, ns = compiled(x)
        *eager_out, eager_ns = _namespace_deleted(x)
        assert_same(out, eager_out)
        assert list(vars(ns)) == list(vars(eager_ns)) == ["c", "a"]
    assert counter.frame_count == 1
    _unbroken(recorder)


class _WithDefault:
    scale = 3


def _instance_attr_deleted(x):
    p = _WithDefault()
    p.scale = 5
    del p.scale  # the class attribute shows again
    return x * p.scale


def test_del_uncovers_the_class_attribute():
    check_breaks(_instance_attr_deleted, lambda: (torch.randn(3),), graphs=1, breaks=0)


def _deleted_twice(x):
    ns = types.SimpleNamespace(a=1)
    del ns.a
    del ns.a  # AttributeError, as in CPython
    return x


def test_del_of_a_missing_attribute_raises():
    compiled, _ = compile_counted(_deleted_twice)
    with pytest.raises(AttributeError):
        _deleted_twice(torch.randn(2))
    with pytest.raises(AttributeError):
        compiled(torch.randn(2))


# -- SimpleNamespace's == and repr -----------------------------------------------------------------


def _namespaces_compared(ns, x):
    made = types.SimpleNamespace(a=1, b="s")
    other = types.SimpleNamespace(b="s", a=1)  # the order does not matter to ==
    return (
        x + 1,
        made == other,
        made != other,
        made == ns,
        made == types.SimpleNamespace(a=2, b="s"),
        made == None,  # noqa: E711 (NotImplemented both ways: identity)
        made != 1,
        repr(made),
        str(ns),
    )


def test_namespace_equality_and_repr_as_cpython():
    recorder = Recorder()
    compiled, counter = compile_counted(_namespaces_compared)
    for b in ("s", "s", "t"):  # the input's attributes are guarded: "t" traces again
        x = torch.randn(2)
        with recorder:
            out = compiled(types.SimpleNamespace(a=1, b=b), x)
        assert_same(out, _namespaces_compared(types.SimpleNamespace(a=1, b=b), x))
    assert counter.frame_count == 2
    _unbroken(recorder)
