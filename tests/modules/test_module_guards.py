"""Module trees are guarded by one ``MODULE_TREE`` check (O(1) while no module changed) instead of
one guard per parameter, and every structural change still recompiles: swapped submodule, replaced
parameter, dtype change, ``train()``/``eval()``, ``requires_grad_``, hooks added later. In-place
value updates (optimizer steps) do not."""

from __future__ import annotations

import functools

import torch
from bytegraph.backends.debug import CompileCounter
from difftest import assert_same
from torch import nn

import bytegraph


class Net(nn.Module):
    def __init__(self, layers: int = 2):
        super().__init__()
        self.layers = nn.Sequential(*[nn.Linear(4, 4) for _ in range(layers)])
        self.drop = nn.Dropout(0.5)
        self.scale = 2.0

    def forward(self, x):
        return self.drop(self.layers(x)) * self.scale


def _compiled(layers: int = 2):
    model, counter = Net(layers).eval(), CompileCounter()
    bytegraph.compile(model, backend=counter)
    x = torch.randn(2, 4)
    model(x)
    return model, counter, x


def _guard_lines(layers: int) -> list[str]:
    model, _, _ = _compiled(layers)
    return bytegraph.guard_source(model.forward).splitlines()


def test_guard_size_does_not_grow_with_layers():
    assert len(_guard_lines(2)) == len(_guard_lines(24))
    text = "\n".join(_guard_lines(24))
    assert "___tree.check(self)" in text
    assert "_parameters" not in text


def test_unchanged_model_calls_hit_the_fast_path():
    model, counter, x = _compiled()
    model(x)  # the first guarded call validates the tree (the slow path, once)
    (variant,) = bytegraph.cache_entries(model)
    tree = next(v for k, v in variant.guards.consts.values.items() if k.startswith("___tree"))
    slow_calls = []
    original = tree.slow
    tree.slow = lambda root: slow_calls.append(root) or original(root)
    for _ in range(5):
        model(x)
    assert slow_calls == [] and counter.frame_count == 1


def _spied_trees(model) -> list[list]:
    """Each variant's tree check, its slow path noting the roots it is run on."""
    calls, trees = [], {}
    for variant in bytegraph.cache_entries(model):
        for name, tree in variant.guards.consts.values.items():
            if name.startswith("___tree") and trees.setdefault(id(tree), tree) is tree:
                if len(trees) == len(calls):
                    continue  # (the variants share one table of constants)
                seen, original = [], tree.slow
                tree.slow = lambda root, seen=seen, original=original: (
                    seen.append(root) or original(root)
                )
                calls.append(seen)
    return calls


def test_a_tree_that_does_not_match_is_not_checked_again_on_every_call():
    """A model with a variant per mode: each call is checked against the tree of the mode it is
    not in, which fails; that answer is kept as a pass is (until a module changes), not found
    again through the slow path on every call."""
    model, counter, x = _compiled()
    model.train()
    torch.manual_seed(0)
    model(x)
    model.eval()
    model(x)
    model.train()
    model(x)  # both trees have now been checked on this model
    assert counter.frame_count == 2
    calls = _spied_trees(model)
    for mode in ("eval", "train") * 3:
        getattr(model, mode)()
        torch.manual_seed(0)
        got = model(x)
        torch.manual_seed(0)
        assert_same(got, Net.forward(model, x))
    assert counter.frame_count == 2
    assert len(calls) == 2
    # each mode switch changes a module (``training``): each tree's slow path runs again once
    # per switch at most, never per call of the same mode (in train mode the eval variant's
    # tree, asked first, fails)
    model.train()
    model(x)
    before = [len(seen) for seen in calls]
    for _ in range(5):
        model(x)
    assert [len(seen) for seen in calls] == before
    # a failed answer is forgotten when a module changes: a variant that now matches is found
    model.layers[0].weight.requires_grad_(False)
    torch.manual_seed(0)
    got = model(x)
    torch.manual_seed(0)
    assert_same(got, Net.forward(model, x))
    assert counter.frame_count == 3


def _recompiles_after(change) -> None:
    model, counter, x = _compiled()
    change(model)
    assert_same(model(x), Net.forward(model, x))
    assert counter.frame_count == 2, "the change must cause a recompile"
    model(x)
    assert counter.frame_count == 2


def test_swapped_submodule_recompiles():
    _recompiles_after(lambda m: m.layers.__setitem__(1, nn.Tanh()))


def test_replaced_parameter_with_new_shape_recompiles():
    def change(m):
        m.layers[1].weight = nn.Parameter(torch.randn(4, 4).t().contiguous().t())  # other strides

    _recompiles_after(change)


def test_dtype_change_recompiles():
    model, counter, x = _compiled()
    model.double()
    out = model(x.double())
    assert out.dtype is torch.float64 and counter.frame_count == 2


def test_train_eval_recompiles():
    def change(m):
        m.drop.p = 0.0  # train mode without randomness, to compare with eager
        m.train()

    _recompiles_after(change)


def test_requires_grad_change_recompiles():
    _recompiles_after(lambda m: m.layers[0].weight.requires_grad_(False))


def test_plain_attribute_change_recompiles():
    def change(m):
        m.scale = 3.0

    _recompiles_after(change)


def test_hook_added_after_compile_recompiles():
    _recompiles_after(lambda m: m.layers[0].register_forward_hook(lambda mod, a, out: out * 10))


def _flexible_hook(module, args, *rest):
    """``(kwargs, out)`` when registered ``with_kwargs=True``, else ``(out,)``."""
    return rest[-1] + len(rest)


def test_hook_taking_kwargs_instead_recompiles():
    """The same hook function registered anew with ``with_kwargs=True`` is called with other
    arguments: the tree check compares whether each hook takes the keyword arguments."""
    model, counter, x = _compiled()
    handle = model.layers[0].register_forward_hook(_flexible_hook)
    assert_same(model(x), Net.forward(model, x))
    assert counter.frame_count == 2
    handle.remove()
    model.layers[0].register_forward_hook(_flexible_hook, with_kwargs=True)
    assert_same(model(x), Net.forward(model, x))
    assert counter.frame_count == 3, "the change must cause a recompile"
    model(x)
    assert counter.frame_count == 3


def test_module_list_insert_recompiles():
    _recompiles_after(lambda m: m.layers.insert(0, nn.Identity()))


def test_optimizer_steps_do_not_recompile():
    model, counter, x = _compiled()
    model.train()
    model.drop.p = 0.0
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for _ in range(4):
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
    assert counter.frame_count == 2  # one for eval, one for train mode


class LossInForward(nn.Module):
    """Builds its loss module on every call, as transformers models do with ``labels``."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 3)

    def forward(self, x, y):
        return nn.CrossEntropyLoss()(self.proj(x), y)


def _slow_calls(model) -> list:
    (variant,) = bytegraph.cache_entries(model)
    tree = next(v for k, v in variant.guards.consts.values.items() if k.startswith("___tree"))
    calls: list = []
    original = tree.slow
    tree.slow = lambda root: calls.append(root) or original(root)
    return calls


def test_module_built_in_forward_keeps_the_fast_path():
    """Building a module nothing has checked does not invalidate the tree checks: before, each
    call's new loss module re-ran the checks (and refetched the parameters) on the next call."""
    model, counter = LossInForward(), CompileCounter()
    bytegraph.compile(model, backend=counter)
    x, y = torch.randn(5, 4), torch.tensor([0, 1, 2, 1, 0])
    model(x, y)
    model(x, y)
    slow_calls = _slow_calls(model)
    for _ in range(5):
        assert_same(model(x, y), LossInForward.forward(model, x, y))
    assert slow_calls == [] and counter.frame_count == 1


class Scale(nn.Module):
    def __init__(self, factor: float):
        super().__init__()
        self.factor = factor

    def forward(self, x):
        return x * self.factor


class Pair(nn.Module):
    """A module the tree reaches outside ``_modules``: in a tuple attribute (not registered), and
    without parameters (so no parameter block watches it)."""

    def __init__(self):
        super().__init__()
        self.pair = (Scale(2.0), nn.Linear(4, 4))

    def forward(self, x):
        return self.pair[1](self.pair[0](x))


def test_change_to_module_in_a_tuple_attribute_recompiles():
    model, counter = Pair(), CompileCounter()
    bytegraph.compile(model, backend=counter)
    x = torch.randn(2, 4)
    model(x)
    model(x)
    model.pair[0].factor = 5.0  # a module no ``root.modules()`` walk reaches
    assert_same(model(x), Pair.forward(model, x))
    assert counter.frame_count == 2


class Irreps(tuple):
    """A tuple subclass that will not be measured (e3nn's ``Irreps.__len__`` raises)."""

    def __len__(self):
        raise NotImplementedError

    def __iter__(self):
        raise NotImplementedError


class HoldsIrreps(nn.Module):
    def __init__(self):
        super().__init__()
        self.irreps = Irreps((1, 2))
        self.linear = nn.Linear(4, 4)
        self.calls = 0  # written between calls, never read by ``forward``

    def forward(self, x):
        return self.linear(x) * 2


def test_a_tuple_subclass_attribute_that_cannot_be_measured_keeps_the_tree_check():
    # the walk of a tree checked again (after a write to the model) extended its list with the
    # tuple subclass, whose __len__ raised: the check failed, and each identical call after a
    # write traced again (e3nn's Irreps attributes, in issue 37's sweep: at every call)
    model, counter = HoldsIrreps(), CompileCounter()
    bytegraph.compile(model, backend=counter)
    x = torch.randn(2, 4)
    model(x)
    for step in range(3):
        model.calls = step + 1  # a write to the checked model: its tree is checked again
        assert_same(model(x), HoldsIrreps.forward(model, x))
    assert counter.frame_count == 1


def test_module_built_after_the_check_then_attached_is_watched():
    model, counter, x = _compiled()
    model(x)
    fresh = nn.Dropout(0.0)
    fresh.p = 0.0  # a write to a module nothing has read: no invalidation
    model.drop = fresh  # attaching it is a write to the checked model: checked again
    assert_same(model(x), Net.forward(model, x))
    fresh.inplace = True  # now part of a checked tree: a change there is seen
    assert_same(model(x), Net.forward(model, x))
    assert counter.frame_count == 3


class SetsSizeInForward(nn.Module):
    """Writes an attribute in every ``forward``, as Swin does with its window sizes."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.size = 2

    def forward(self, x, size):
        self.size = min(size, 2)
        return self.proj(x) * self.size


def test_rewriting_the_same_value_keeps_the_fast_path():
    model, counter = SetsSizeInForward(), CompileCounter()
    bytegraph.compile(model, backend=counter)
    x = torch.randn(2, 4)
    model(x, 5)
    model(x, 5)
    slow_calls = _slow_calls(model)
    for _ in range(3):
        assert_same(model(x, 5), SetsSizeInForward.forward(model, x, 5))
    assert slow_calls == [] and counter.frame_count == 1


def test_writing_a_new_value_is_still_seen():
    model, counter = SetsSizeInForward(), CompileCounter()
    bytegraph.compile(model, backend=counter)
    x = torch.randn(2, 4)
    model(x, 5)
    model.size = 7  # read by the next call's guards
    assert_same(model(x, 1), SetsSizeInForward.forward(model, x, 1))
    model.size = True  # equal to 1 but another type
    assert_same(model(x, 5), SetsSizeInForward.forward(model, x, 5))
    assert model.size == 2


def _passes_arguments_through(forward):
    """A decorator as transformers writes them: ``forward(*args, **kwargs)``, so the guards reach
    the model as ``args[0]``."""

    @functools.wraps(forward)
    def wrapped(*args, **kwargs):
        return forward(*args, **kwargs)

    return wrapped


class WrappedNet(Net):
    forward = _passes_arguments_through(Net.forward)


def test_model_reached_through_a_wrappers_arguments_gets_one_tree_check():
    model, counter, x = WrappedNet(24).eval(), CompileCounter(), torch.randn(2, 4)
    bytegraph.compile(model, backend=counter)
    assert_same(model(x), Net.forward(model, x))
    text = bytegraph.guard_source(model.forward)
    assert ".check(args[0])" in text
    assert "_parameters" not in text
    changes = [
        lambda m: m.layers[20].weight.requires_grad_(False),
        lambda m: m.layers.__setitem__(1, nn.Tanh()),
        lambda m: setattr(m, "scale", 3.0),
    ]
    for change in changes:
        traced = counter.frame_count
        change(model)
        assert_same(model(x), Net.forward(model, x))
        assert counter.frame_count == traced + 1, "the change must cause a recompile"
        assert_same(model(x), Net.forward(model, x))
        assert counter.frame_count == traced + 1
