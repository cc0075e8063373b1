"""The call-rule table (``tracer/variables/call_rules.py``): every entry is keyed by the callable it
is for, and every kind of entry present in the table is exercised by a traced call compared with
eager (graphs and breaks counted)."""

from __future__ import annotations

import collections
import functools
import importlib
import inspect
import sys

import bytegraph.tracer.variables.dispatch  # noqa: F401 (imports every family that registers)
import pytest
import torch
from bytegraph.tracer.polyfills.registry import POLYFILLS
from bytegraph.tracer.variables.call_rules import CALL_RULES, CallRule, call_rule, lookup, register
from difftest import check_breaks


def kind(rule: CallRule) -> str:
    if rule.handler is not None:
        return "handler"
    if rule.fold:
        return "fold"
    if rule.effect is not None:
        return f"effect={rule.effect}"
    return "substitute"


def test_every_entry_is_keyed_by_the_callable_it_is_for():
    assert CALL_RULES
    for target, rule in CALL_RULES.items():
        assert rule.target is target
        assert callable(target), target
        owner = sys.modules[rule.owner]
        assert owner is importlib.import_module(rule.owner)
        if rule.handler is not None:  # the handler is the owner's own function
            assert rule.handler.__module__ == rule.owner
            assert getattr(owner, rule.handler.__name__) is rule.handler


def test_the_torch_entries_name_torch_callables():
    """A sample of entries: each is the callable under torch's public name."""
    for name in ("Size", "device", "finfo", "is_grad_enabled", "as_tensor", "FloatTensor"):
        assert getattr(torch, name) in CALL_RULES, name
    assert torch.set_default_dtype in CALL_RULES
    assert torch.is_autocast_enabled in CALL_RULES
    assert kind(CALL_RULES[torch._assert]) == "substitute"
    # ``torch._dynamo`` rebinds ``torch.manual_seed`` to a wrapper of it when it is imported
    assert kind(CALL_RULES[inspect.unwrap(torch.manual_seed)]) == "effect=python"
    assert lookup(torch.manual_seed) is CALL_RULES[inspect.unwrap(torch.manual_seed)]


def test_a_users_wrapper_of_a_torch_callable_is_not_its_entry():
    """torch's own wrappers answer as what they wrap; a user's decorator runs the user's code."""

    @functools.wraps(torch.manual_seed)
    def seeded(seed):
        return torch.manual_seed(seed)

    assert lookup(torch.manual_seed) is not None and lookup(seeded) is None


def test_polyfills_and_the_dispatchers_own_callables_are_entries():
    for target, polyfill in POLYFILLS.items():
        assert CALL_RULES[target].substitute is polyfill
    for target in (functools.cmp_to_key, vars(type)["__call__"], collections.namedtuple):
        assert kind(CALL_RULES[target]) == "handler"


def test_a_second_entry_for_a_callable_is_refused():
    with pytest.raises(AssertionError, match="two call rules"):
        register(CallRule(torch.Size, fold=True))


def test_an_entry_needs_exactly_one_kind():
    with pytest.raises(AssertionError, match="exactly one kind"):
        CallRule(len)
    with pytest.raises(AssertionError, match="exactly one kind"):
        CallRule(len, fold=True, effect="none")


def test_the_decorator_registers_each_target():
    def fake(tx, fn, args, kwargs):
        return None

    sentinel_a, sentinel_b = object.__new__(type("A", (), {})), object.__new__(type("B", (), {}))
    try:
        call_rule(sentinel_a, sentinel_b)(fake)
        assert CALL_RULES[sentinel_a].handler is fake is CALL_RULES[sentinel_b].handler
    finally:
        CALL_RULES.pop(sentinel_a, None)
        CALL_RULES.pop(sentinel_b, None)


# -- one traced call per kind of entry, compared with eager ------------------------------------
def _handler(x):  # ``torch.Size``: a handler entry
    return x.reshape(torch.Size([x.shape[0] // 2, 4])) + 1


def _declining_handler(x):  # ``torch.tensor`` of Python numbers: the handler declines, a node
    return x + torch.tensor([1.0, 2.0])


def _fold(x):  # ``torch.finfo``, ``torch.is_grad_enabled``: folded on constant arguments
    eps = torch.finfo(x.dtype).eps
    return x * eps if torch.is_grad_enabled() else x


def _effect_python(x):  # ``torch.manual_seed``, ``torch.save``...: runs in Python (a break)
    y = x + 1
    torch.manual_seed(0)
    return y * 2 + torch.rand(4, 2)


def _effect_none(x):  # telemetry: nothing in the graph
    torch._C._log_api_usage_once("bytegraph.test")
    return x - 1


def _substitute(x):  # ``torch._assert``: its Python substitute is traced
    torch._assert(x.shape[0] == 4, "four rows")
    return x.sum()


SAMPLES = {
    "handler": [(_handler, 1, 0), (_declining_handler, 1, 0)],
    "fold": [(_fold, 1, 0)],
    "effect=python": [(_effect_python, 2, 1)],
    "effect=none": [(_effect_none, 1, 0)],
    "substitute": [(_substitute, 1, 0)],
}


def test_every_kind_in_the_table_has_a_sample():
    assert {kind(rule) for rule in CALL_RULES.values()} <= set(SAMPLES)


@pytest.mark.parametrize(
    "fn, graphs, breaks",
    [sample for samples in SAMPLES.values() for sample in samples],
    ids=lambda v: getattr(v, "__name__", str(v)),
)
def test_each_kind_is_traced_like_eager(fn, graphs, breaks):
    check_breaks(fn, lambda: (torch.randn(4, 2),), graphs=graphs, breaks=breaks)


# -- an entry applies however its callable is reached ---------------------------------------------
def _through_partial(x):
    make = functools.partial(torch.Size)
    return x.reshape(make([2, 4]))


def _through_map(x):
    tiny = [f.tiny for f in map(torch.finfo, [torch.float32, torch.float64])]
    return x * tiny[0] + tiny[1]


def _through_another_module(x):
    with torch.autograd.grad_mode.no_grad():
        y = x * 2
    return y + torch._C.is_grad_enabled()


@pytest.mark.parametrize("fn", [_through_partial, _through_map, _through_another_module])
def test_an_entry_applies_however_its_callable_is_reached(fn):
    check_breaks(fn, lambda: (torch.randn(4, 2, requires_grad=True),), graphs=1, breaks=0)
