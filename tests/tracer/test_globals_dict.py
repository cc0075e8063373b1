"""``globals()`` of the compiled function's module, traced as its globals are read: ``name in
globals()`` (guarded on the key's presence), ``globals()[name]`` (the global, or CPython's
KeyError), ``globals()[name] = v`` (a store, replayed), and every other method of dict, each
traced or breaking with a reason, crossed with the kinds of name (a global, an absent name, one
the trace stored or deleted first); live at a graph break it is ``globals()`` again. Compared with
eager (results, the globals after each call, calls after the globals change) and with
torch.compile's break count."""

from __future__ import annotations

import pytest
import torch

import bytegraph
from tests.difftest import check
from tests.dynamo_baseline import assert_no_more_breaks

PRESENT = 3


def contains(t):
    return t + ("PRESENT" in globals()), "absent_name" in globals(), "len" in globals()


def item(t):
    return t * globals()["PRESENT"]


def store(t):
    globals()["STORED"] = 5
    return t + globals()["STORED"], "STORED" in globals()


def key_error(t):
    try:
        globals()["absent_name"]
    except KeyError as e:
        return t + 1, e.args
    return t, None


def live_at_break(t):
    g = globals()
    y = t + 1
    print("break")
    return y + ("PRESENT" in g), g["PRESENT"]


@pytest.mark.parametrize(
    "fn, breaks",
    [(contains, 0), (item, 0), (store, 0), (live_at_break, 1)],
    ids=lambda value: getattr(value, "__name__", str(value)),  # no address: xdist compares ids
)
def test_globals(fn, breaks):
    bytegraph.reset()
    check(fn, torch.ones(2), graphs=breaks + 1, breaks=breaks)
    assert_no_more_breaks(breaks, fn, torch.ones(2))


def test_globals_key_error():
    bytegraph.reset()
    check(key_error, torch.ones(2), graphs=1, breaks=0)  # torch.compile runs it in Python


def late(t):
    return t + ("LATE" in globals())


def test_a_name_defined_later_is_seen():
    """The absence of a name is guarded: defining it makes ``in`` true on the next call."""
    bytegraph.reset()
    compiled = bytegraph.compile(late)
    torch.testing.assert_close(compiled(torch.ones(2)), torch.ones(2))
    globals()["LATE"] = 1
    try:
        torch.testing.assert_close(compiled(torch.ones(2)), torch.ones(2) + 1)
    finally:
        del globals()["LATE"]
    torch.testing.assert_close(compiled(torch.ones(2)), torch.ones(2))


def present(t):
    return t + ("DELETED_LATER" in globals())


def test_a_name_deleted_later_is_seen():
    """The presence of a name is guarded: deleting it makes ``in`` false on the next call."""
    bytegraph.reset()
    globals()["DELETED_LATER"] = 1
    compiled = bytegraph.compile(present)
    try:
        torch.testing.assert_close(compiled(torch.ones(2)), torch.ones(2) + 1)
    finally:
        del globals()["DELETED_LATER"]
    torch.testing.assert_close(compiled(torch.ones(2)), torch.ones(2))


# -- every method of dict on globals(), crossed with the kinds of name it may be given ------------
#: The kinds of name: a global holding a number, one holding a tensor, a name no global has, a
#: name the trace stores first, a global the trace deletes first (the statement making it so).
KEYS = {
    "number": ("A", ""),
    "tensor": ("T", ""),
    "absent": ("ZZ", ""),
    "stored": ("N", "globals()['N'] = 4"),
    "deleted": ("A", "del globals()['A']"),
}

#: Each traced method of dict used on globals() (``k``: the name).
OPERATIONS = {
    "__contains__": "r = {k!r} in globals()",
    "__getitem__": "r = globals()[{k!r}]",
    "get": "r = globals().get({k!r})",
    "get_default": "r = globals().get({k!r}, -1)",
    "__setitem__": "globals()[{k!r}] = t + 1; r = None",
    "setdefault": "r = globals().setdefault({k!r}, 5)",
    "__delitem__": "del globals()[{k!r}]; r = None",
    "pop": "r = globals().pop({k!r})",
    "pop_default": "r = globals().pop({k!r}, -2)",
    "update": "globals().update({{{k!r}: 7}}, Q=1); r = None",
    "update_pairs": "globals().update([({k!r}, 8)]); r = None",
    "keys": "r = ({k!r} in globals().keys(), list(globals().keys()))",
    "values": "r = [v for v in globals().values() if type(v) is int]",
    "items": "r = [(n, v) for n, v in globals().items() if n.isupper()]",
    "__iter__": "r = [n for n in globals()]",
    "__len__": "r = len(globals())",
}

#: Where eager moves a name to the dict's end (stored again after a deletion): a break.
BREAKS = {("deleted", op) for op in ("__setitem__", "setdefault", "update", "update_pairs")}


def test_every_method_of_dict_is_traced_or_says_why_not():
    import inspect

    from bytegraph.tracer.variables import objects

    methods = {n for n in dir(dict) if callable(inspect.getattr_static(dict, n))}
    traced, untraced = (
        set(objects.containers.METHODS[objects.GlobalsVariable]),
        set(objects.GLOBALS_UNTRACED),
    )
    assert traced | untraced == methods and not traced & untraced
    assert {op.split("_default")[0].split("_pairs")[0] for op in OPERATIONS} == traced


def _namespace() -> dict:
    return {"__builtins__": __builtins__, "torch": torch, "A": 3, "T": torch.arange(2.0)}


def _make(source: str, namespace: dict):
    exec(source, namespace)  # the function's globals: this namespace
    return namespace["f"]


def _names(namespace: dict) -> dict:
    return {k: v for k, v in namespace.items() if k not in ("__builtins__", "f")}


@pytest.mark.parametrize("op", sorted(OPERATIONS))
@pytest.mark.parametrize("kind", sorted(KEYS))
def test_a_method_of_globals_as_eager(kind, op):
    """The result and the globals after the call as eager's, then again after the globals change
    (a value, a name added, a name deleted): nothing stale; no break but where eager reorders."""
    from bytegraph.explain import Recorder
    from tests.difftest import assert_same, break_count

    name, before = KEYS[kind]
    body = OPERATIONS[op].format(k=name)
    source = (
        f"def f(t):\n    {before or 'pass'}\n    try:\n        {body}\n"
        "    except KeyError as e:\n        r = ('KeyError', e.args)\n    return t + 1, r\n"
    )
    eager_ns, compiled_ns = _namespace(), _namespace()
    eager, compiled = _make(source, eager_ns), bytegraph.compile(_make(source, compiled_ns))
    recorder = Recorder()
    changes = [  # each leaves ``A`` a global: the "deleted" kind deletes it on every call
        lambda ns: None,
        lambda ns: ns.update(A=10, NEW=1),
        lambda ns: (ns.pop("T", None), ns.setdefault("A", 4)),
    ]
    for change in changes:
        change(eager_ns)
        change(compiled_ns)
        expected = eager(torch.ones(2))
        with recorder:
            actual = compiled(torch.ones(2))
        assert_same(actual, expected)
        assert list(_names(compiled_ns)) == list(_names(eager_ns))
        assert_same(list(_names(compiled_ns).values()), list(_names(eager_ns).values()))
    breaks = break_count(recorder.report())
    assert (breaks > 0) == ((kind, op) in BREAKS), recorder.report().break_reasons


SCALE = 2


def get_scale(t):
    return t * globals().get("SCALE", 1) + globals().get("NO_SUCH_NAME", 5)


def iterate_names(t):
    n = 0
    for name in globals():
        n += name.startswith("SCA")
    return t + n


def read_items(t):
    return t + sum(v for k, v in globals().items() if k == "SCALE")


def count_names(t):
    return t + len(globals())


def pop_stored(t):
    globals()["POPPED"] = 4
    return t + globals().pop("POPPED")


def update_then_setdefault(t):
    globals().update(UPDATED=2)
    return t * globals().setdefault("UPDATED", 9)


@pytest.mark.parametrize(
    "fn",
    [get_scale, iterate_names, read_items, count_names, pop_stored, update_then_setdefault],
    ids=lambda fn: fn.__name__,
)
def test_globals_methods_break_no_more_than_torch_compile(fn):
    bytegraph.reset()
    try:
        check(fn, torch.ones(2), graphs=1, breaks=0)
    finally:
        globals().pop("UPDATED", None)
    assert_no_more_breaks(0, fn, torch.ones(2))
    globals().pop("UPDATED", None)


def test_a_global_read_is_seen_changed_on_the_next_call():
    bytegraph.reset()
    compiled = bytegraph.compile(get_scale)
    torch.testing.assert_close(compiled(torch.ones(2)), torch.ones(2) * 2 + 5)
    globals()["NO_SUCH_NAME"] = 1
    try:
        torch.testing.assert_close(compiled(torch.ones(2)), torch.ones(2) * 2 + 1)
        globals()["SCALE"] = 3
        torch.testing.assert_close(compiled(torch.ones(2)), torch.ones(2) * 3 + 1)
    finally:
        globals()["SCALE"] = 2
        del globals()["NO_SUCH_NAME"]
    torch.testing.assert_close(compiled(torch.ones(2)), torch.ones(2) * 2 + 5)


Y = 1


def _read_y():
    return Y


def store_then_call(t):
    globals()["Y"] = 6
    return t + _read_y()


def test_a_function_of_the_module_reads_the_global_the_trace_stored():
    bytegraph.reset()
    try:
        compiled = bytegraph.compile(store_then_call)
        torch.testing.assert_close(compiled(torch.ones(2)), torch.ones(2) + 6)
    finally:
        globals()["Y"] = 1


LOOP_A = 1
LOOP_B = 2


def names_with_a_break(t):
    for name in globals():
        if name.startswith("LOOP_"):
            print(name)
            t = t + globals()[name]
    return t


def items_with_a_break(t):
    for name, value in globals().items():
        if name.startswith("LOOP_"):
            print(name, value)
            t = t + value
    return t


@pytest.mark.parametrize("fn", [names_with_a_break, items_with_a_break], ids=lambda f: f.__name__)
def test_a_loop_over_globals_resumes_after_a_break(fn):
    """The rest of the loop (names, or names and values read as the rewritten code finds them
    after the replay) goes to the resume function: no fallback, eager's values and output."""
    from tests.difftest import check_breaks

    bytegraph.reset()
    check_breaks(fn, lambda: (torch.ones(2),), graphs=2, breaks=2)


@pytest.fixture
def builtins_holding_itself(monkeypatch):
    """The builtins dict as a dataclass made by ``exec`` in a namespace with no ``__name__``
    leaves it (its class's module is ``builtins``, where ``dataclasses`` defines the methods):
    holding itself at ``__builtins__``, which every module's ``__builtins__`` then shows."""
    import builtins

    monkeypatch.setitem(vars(builtins), "__builtins__", vars(builtins))


@pytest.mark.parametrize("fn", [read_items, iterate_names, count_names], ids=lambda f: f.__name__)
def test_globals_whose_builtins_hold_themselves(builtins_holding_itself, fn):
    """Carried through a loop over the globals, the builtins dict's values are not read: no
    break where the dict holds itself."""
    bytegraph.reset()
    check(fn, torch.ones(2), graphs=1, breaks=0)


def test_a_loop_over_globals_whose_builtins_hold_themselves_resumes(builtins_holding_itself):
    from tests.difftest import check_breaks

    bytegraph.reset()
    check_breaks(items_with_a_break, lambda: (torch.ones(2),), graphs=2, breaks=2)
