"""``del seq[i]``, ``del seq[i:j]`` and ``seq.pop(i)`` on an ``nn.ModuleList``/``nn.Sequential``
held by a module, in the graph, leaving the module as eager does: the old ``_modules`` dict loses
the members in place (code holding it sees that), a new ``OrderedDict`` numbered from 0 becomes
``_modules``. Each call is compared with eager's on an equal module: the result, both dicts
(identity, type, keys, which member under each key), ``len`` and iteration, forward hooks,
``state_dict`` keys; break counts with torch.compile's. Also: a member dict held outside the module
stays the module's across compiled calls, and a ``ModuleDict`` lookup of a missing key raises
CPython's ``KeyError`` in the trace."""

import copy

import pytest
import torch
from difftest import assert_same, break_count, compile_counted
from dynamo_baseline import assert_no_more_breaks
from torch import nn

from bytegraph.explain import Recorder


class _Holder(nn.Module):
    def __init__(self, seq):
        super().__init__()
        self.seq = seq


def _list():
    torch.manual_seed(0)
    return _Holder(nn.ModuleList([nn.Linear(3, 3) for _ in range(5)]))


def _sequential():
    torch.manual_seed(0)
    layers = [nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 3), nn.Tanh(), nn.Linear(3, 3)]
    return _Holder(nn.Sequential(*layers))


def _del_item(m, x):
    del m.seq[1]
    for layer in m.seq:
        x = layer(x)
    return x, len(m.seq)


def _del_negative(m, x):
    del m.seq[-2]
    return m.seq[1](x), m.seq[-1](x), len(m.seq)


def _del_slice(m, x):
    del m.seq[1:3]
    for layer in m.seq:
        x = layer(x)
    return x, len(m.seq)


def _pop(m, x):
    layer = m.seq.pop(-1)
    return m.seq[0](x), layer(x), len(m.seq)


def _sequential_pop(m, x):
    m.seq.pop(1)
    return m.seq(x)


def _del_then_append(m, x):
    del m.seq[0]
    m.seq.append(nn.Identity())
    return [layer(x) for layer in m.seq]


def _del_then_read_by_name(m, x):
    del m.seq[0]
    return getattr(m.seq, "0")(x), "3" in m.seq._modules, len(m.seq._modules)


def _layout(m, old, members, log):
    """What a call left: ``_modules`` new or the old dict, its type, keys and members (as
    positions in ``members``), the old dict's keys and members, ``len``, iteration, the hooks
    that ran, the ``state_dict`` keys."""
    position = {id(layer): i for i, layer in enumerate(members)}

    def where(layer):  # one of ``members``, else its class (made by the call)
        return position.get(id(layer), type(layer))

    new = m.seq._modules
    return (
        new is old,
        type(new),
        [(k, where(v)) for k, v in new.items()],
        [(k, where(v)) for k, v in old.items()],
        len(m.seq),
        [where(layer) for layer in m.seq],
        list(log),
        list(m.state_dict()),
    )


def _hooked(m):
    """Forward hooks on every member, each logging its position."""
    log = []
    for i, layer in enumerate(m.seq):
        layer.register_forward_hook(lambda mod, args, out, i=i: log.append(i))
    return log


CASES = [
    (_del_item, _list),
    (_del_item, _sequential),
    (_del_negative, _list),
    (_del_negative, _sequential),
    (_del_slice, _list),
    (_del_slice, _sequential),
    (_pop, _list),
    (_pop, _sequential),
    (_sequential_pop, _sequential),
    (_del_then_append, _list),
    (_del_then_read_by_name, _list),
]


@pytest.mark.parametrize(("fn", "make"), CASES, ids=lambda v: v.__name__.strip("_"))
def test_a_container_delete_leaves_the_module_as_eager(fn, make):
    compiled_m, eager_m = make(), make()
    logs = {id(m): _hooked(m) for m in (compiled_m, eager_m)}
    members = {id(m): list(m.seq) for m in (compiled_m, eager_m)}
    compiled, counter = compile_counted(fn)
    recorder = Recorder()
    for _ in range(2):  # the second call deletes again, from the renumbered container
        runs = []
        for m, run in ((eager_m, fn), (compiled_m, compiled)):
            old, log = m.seq._modules, logs[id(m)]
            log.clear()
            with recorder:
                result = run(m, torch.ones(3))
            runs.append((result, _layout(m, old, members[id(m)], log)))
        (expected, eager_layout), (actual, compiled_layout) = runs
        assert_same(actual, expected)
        assert compiled_layout == eager_layout
    assert break_count(recorder.report()) == 0
    # the first call's graph, and the one traced after it for the shorter container (``follow``),
    # which the second call runs
    assert counter.frame_count == 2
    assert_no_more_breaks(0, fn, make(), torch.ones(3))


def _del_out_of_range(m, x):
    try:
        del m.seq[7]
    except IndexError as e:
        error = e.args
    del m.seq[0]
    return m.seq[0](x), error, len(m.seq)


@pytest.mark.parametrize("make", [_list, _sequential], ids=["list", "sequential"])
def test_a_delete_out_of_range_raises_indexerror_in_the_trace(make):
    compiled, counter = compile_counted(_del_out_of_range)
    recorder = Recorder()
    eager_m, compiled_m = make(), make()
    expected = _del_out_of_range(eager_m, torch.ones(3))
    with recorder:
        actual = compiled(compiled_m, torch.ones(3))
    assert_same(actual, expected)
    assert list(compiled_m.seq._modules) == list(eager_m.seq._modules)
    assert break_count(recorder.report()) == 0


def test_a_member_dict_held_elsewhere_stays_the_modules():
    # the compiled call must not swap the dict for another object: later registrations go into
    # the dict the caller holds, as in eager
    def fn(m, x):
        return m.seq[0](x) + m.seq[1](x)

    compiled, _ = compile_counted(fn)
    seen = []
    for run in (fn, compiled):
        m = _list()
        buffers, children = m.seq[0]._buffers, m._modules
        run(m, torch.ones(3))
        m.seq[0].register_buffer("scale", torch.ones(1))
        m.extra = nn.ReLU()
        seen.append((list(buffers), list(children), m._modules is children))
    assert seen[0] == seen[1] == (["scale"], ["seq", "extra"], True)


def _module_dict_missing(m, x):
    try:
        layer = m.seq["missing"]
    except KeyError as e:
        return x + 1, e.args
    return layer(x), ()


def test_a_module_dict_missing_key_raises_keyerror_in_the_trace():
    def make():
        torch.manual_seed(0)
        return _Holder(nn.ModuleDict({"a": nn.Linear(3, 3)}))

    compiled, counter = compile_counted(_module_dict_missing)
    recorder = Recorder()
    with recorder:
        actual = compiled(make(), torch.ones(3))
    assert_same(actual, _module_dict_missing(copy.deepcopy(make()), torch.ones(3)))
    assert (counter.frame_count, break_count(recorder.report())) == (1, 0)
