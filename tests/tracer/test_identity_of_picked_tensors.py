"""Builtins that return one of their arguments return that object, tensors included.

``max(a, b)`` of 0-dim tensors is ``a`` or ``b`` itself in eager, which one known only from
their data. Compiled, its value stays in the graph, and where the object counts (returned,
stored, compared with ``is``, written in place, viewed, its autograd attributes read) the
rewritten code has the real one: ``max(a, b)`` again on the tensors after the graph (the
comparison eager makes too), or a break before the instruction that needs it. torch.compile
returns a new tensor there (0 breaks, wrong identity, writes lost); the breaks counted below are
the instructions that need the object. Other idioms returning an argument (``sorted``, ``or``,
``and``, a conditional expression, ``heapq``, ``statistics``) need the tensors' truth, a break.
"""

from __future__ import annotations

import functools
import heapq
import statistics

import pytest
import torch
from difftest import check

NAN = float("nan")
#: (a, b, c) values: distinct, ties (the first wins), a NaN first and later (NaN compares False)
VALUES = {
    "plain": (1.0, 3.0, 2.0),
    "ties": (2.0, 2.0, 2.0),
    "nan_first": (NAN, 1.0, 2.0),
    "nan_later": (1.0, NAN, 2.0),
    "descending": (3.0, 2.0, 1.0),
}


def _scalars(name, requires_grad=False):
    return [torch.tensor(v, requires_grad=requires_grad) for v in VALUES[name]]


def _returned(a, b, c):
    return max(a, b), min(a, b), max([c, b, a]), min(*[a, b, c]), max((a, b), default=None)


def _nested(a, b, c):
    return max(max(a, b), c), functools.reduce(min, [a, b, c])


@pytest.mark.parametrize("values", list(VALUES))
def test_max_and_min_return_an_argument(values):
    check(_returned, *_scalars(values), graphs=1, breaks=0)


@pytest.mark.parametrize("values", list(VALUES))
def test_nested_picks_return_an_argument(values):
    check(_nested, *_scalars(values), graphs=1, breaks=0)


def _default_with_arguments(a, b):
    try:
        return max(a, b, default=None)
    except TypeError as e:
        return str(e)


def test_a_default_with_several_arguments_raises():
    check(_default_with_arguments, *_scalars("plain")[:2], graphs=0, breaks=0)


def _of_intermediates(x):
    a, b = x.sum(), x.amax()
    m = max(a, b)
    return m, a, b, m * 2


def test_a_pick_of_graph_tensors_is_one_of_them():
    compiled, _ = check(_of_intermediates, torch.tensor([1.0, 2.0]), graphs=1, breaks=0)
    m, a, b, _ = compiled(torch.tensor([1.0, 2.0]))
    assert m is a
    m, a, b, _ = compiled(torch.tensor([-1.0, -2.0]))
    assert m is b


def _identity(a, b):
    m = max(a, b)
    return m is a, m is b, id(m) == id(a)


@pytest.mark.parametrize("values", list(VALUES))
def test_identity_of_a_pick(values):
    check(_identity, *_scalars(values)[:2], graphs=1, breaks=1)


def _written_in_place(a, b):
    m = max(a, b)
    m.add_(10)
    return m * 1


@pytest.mark.parametrize("values", list(VALUES))
def test_a_pick_written_in_place_writes_the_argument(values):
    check(_written_in_place, *_scalars(values)[:2], graphs=2, breaks=1)


def _argument_written(x, b):
    a = x[0]
    m = min(a, b)
    x.mul_(3)
    return m + 0


@pytest.mark.parametrize("values", ["plain", "ties", "descending"])
def test_an_argument_written_while_its_pick_is_live(values):
    a, b, c = _scalars(values)
    check(_argument_written, torch.stack([a, c]), b, graphs=2, breaks=1)


def _data_replaced(a, b, z):
    m = max(a, b)
    a.data = z
    return m * 1


@pytest.mark.parametrize("values", ["plain", "descending"])
def test_an_argument_given_new_data_while_its_pick_is_live(values):
    check(_data_replaced, *_scalars(values), graphs=2, breaks=1, calls=1)


def _view_written(a, b):
    v = max(a, b).view(1)
    v.sub_(5)
    return v


@pytest.mark.parametrize("values", ["plain", "ties", "descending"])
def test_a_view_of_a_pick_views_the_argument(values):
    check(_view_written, *_scalars(values)[:2], graphs=2, breaks=1)


def _stored(a, b, out):
    out.append(max(a, b))
    out.append(min(a, b) * 2)
    return out


@pytest.mark.parametrize("values", ["plain", "ties", "nan_later"])
def test_a_pick_stored_in_an_argument_is_the_argument(values):
    a, b, _ = _scalars(values)
    compiled, _ = check(_stored, a, b, [], graphs=1, breaks=0)
    out = compiled(a, b, [])
    assert out[0] is (b if values == "plain" else a)


def _attribute(a, b):
    m = max(a, b)
    m.tag = "max"
    return a * 1


def test_an_attribute_set_on_a_pick_is_set_on_the_argument():
    a, b, _ = _scalars("plain")
    check(_attribute, a, b, graphs=2, breaks=1)
    a, b, _ = _scalars("plain")
    compiled, _ = check(_attribute, a, b, graphs=2, breaks=1)
    compiled(a, b)
    assert b.tag == "max" and not hasattr(a, "tag")


def _keys(a, b):
    d = {max(a, b): "max"}
    d[a] = "a"
    return len(d), d.get(b), len({min(a, b), a, b})


@pytest.mark.parametrize("values", ["plain", "ties", "descending"])
def test_a_pick_as_a_key_is_the_argument(values):
    check(_keys, *_scalars(values)[:2], graphs=2, breaks=2)


def _grad_off(a, b):
    with torch.no_grad():
        m = max(a, b)
        flag = m.requires_grad
    with torch.enable_grad():
        return flag, m * 2


@pytest.mark.parametrize("values", ["plain", "descending"])
def test_a_pick_made_with_grad_off_keeps_the_arguments_flags(values):
    check(_grad_off, *_scalars(values, requires_grad=True)[:2], graphs=1, breaks=1)


def _autograd(a, b):
    m = max(a, b)
    return m.is_leaf, m.grad is None, m * 2


@pytest.mark.parametrize("values", ["plain", "descending"])
def test_autograd_attributes_of_a_pick_are_the_arguments(values):
    check(_autograd, *_scalars(values, requires_grad=True)[:2], graphs=2, breaks=1)


def _detached_in_place(a, b):
    max(a, b).detach_()
    return a.requires_grad, b.requires_grad


@pytest.mark.parametrize("values", ["plain", "descending"])
def test_a_pick_detached_in_place_detaches_the_argument(values):
    # one call: the first leaves the arguments' flags apart (another variant, another rule)
    args = _scalars(values, requires_grad=True)[:2]
    check(_detached_in_place, *args, graphs=2, breaks=1, calls=1)


def _parameters(p, q):
    m = min(p, q)
    return type(m).__name__, m


def test_a_pick_of_parameters_is_a_parameter():
    p, q = (torch.nn.Parameter(torch.tensor(v)) for v in (2.0, 1.0))
    check(_parameters, p, q, graphs=1, breaks=0)


def _placement(x, b):
    m = max(x[1], b)
    return m.storage_offset(), m._is_view(), m.is_shared()


@pytest.mark.parametrize("values", ["plain", "descending"])
def test_where_a_pick_lies_is_the_arguments(values):
    a, b, c = _scalars(values)
    check(_placement, torch.stack([c, a]), b, graphs=1, breaks=1)


def _larger(a, b):
    return max(a, b)


def _checkpointed(a, b):
    return torch.utils.checkpoint.checkpoint(_larger, a, b, use_reentrant=False)


@pytest.mark.parametrize("values", ["plain", "descending"])
def test_a_checkpoint_body_giving_back_a_pick_gives_back_the_argument(values):
    """The non-reentrant checkpoint gives back an argument its body returns as it is: the body
    returning a pick runs in Python (no subgraph)."""
    check(_checkpointed, *_scalars(values, requires_grad=True)[:2], graphs=0, breaks=1)


def _backward(w):
    a, b = (w * 2).sum(), (w * 3).sum()
    m = max(a, b)
    return m, m is a


def test_gradients_flow_to_the_picked_argument():
    w = torch.tensor([1.0, -2.0], requires_grad=True)
    compiled, _ = check(_backward, w, graphs=1, breaks=1)
    m, _ = compiled(w)
    m.backward()
    expected = torch.tensor([1.0, -2.0], requires_grad=True)
    _backward(expected)[0].backward()
    torch.testing.assert_close(w.grad, expected.grad)


def _idioms(a, b, c):
    return (
        sorted([b, a, c]),
        a or b,
        a and b,
        a if b > c else c,
        heapq.nlargest(1, [a, b]),
        statistics.median_low([a, b, c]),
    )


@pytest.mark.parametrize("values", ["plain", "descending"])
def test_other_idioms_return_an_argument(values):
    """``sorted``, ``or``, ``and``, a conditional expression and ``statistics.median_low`` need
    the tensors' truth: a break (``sorted`` first, ``median_low``'s own ``sorted`` in the resume
    function); ``heapq.nlargest(1, xs)`` is ``max(xs, key=None)``, a pick."""
    check(_idioms, *_scalars(values), graphs=1, breaks=2)
