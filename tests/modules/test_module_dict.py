"""A module's ``__dict__`` and member tables read and written inside a compiled forward, compared
with eager: ``register_buffer`` on the first call (x-transformers' ALiBi bias), ``'name' in
self.__dict__``, ``self.__dict__.get(...)``, ``vars(self)[...]``. Each test compares the outputs,
the buffers (names, values, which are persistent: ``state_dict``) after every call, the frames
compiled (the second identical call compiles nothing) and the breaks with torch.compile's."""

from __future__ import annotations

import collections
import copy

import pytest
import torch
from difftest import assert_same, compile_counted
from dynamo_baseline import assert_no_more_breaks
from torch import nn

import bytegraph


class RegistersDeclared(nn.Module):
    """Declares ``bias`` None and registers it on its first call, sized to the input (ALiBi).
    One parameter: no parameter block swaps its tables for ones that report writes, so only the
    registration hook the replay calls tells the module-tree check that it changed."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4, bias=False)
        self.register_buffer("bias", None, persistent=False)

    def forward(self, x):
        if self.bias is not None and self.bias.shape[-1] >= x.shape[-1]:
            return self.lin(x) + self.bias[..., : x.shape[-1]]
        self.register_buffer("bias", torch.arange(x.shape[-1], dtype=x.dtype), persistent=False)
        return self.lin(x) - self.bias


class RegistersNew(nn.Module):
    """Registers a persistent buffer it has no entry for, the first time ``__dict__`` shows no
    ``extra`` and the member tables lack it (reads through ``__dict__``, ``vars`` and
    ``hasattr``)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.scale = 2.0

    def forward(self, x):
        y = self.lin(x) * self.__dict__.get("scale", 1.0) * vars(self)["scale"]
        if "extra" not in self.__dict__ and not hasattr(self, "extra"):
            self.register_buffer("extra", x.sum(0))
            return y
        return y + self.extra


class RegistersAndLists(nn.Module):
    """Lists its buffers after registering one (the listing sees it, as in eager)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("base", torch.ones(4))

    def forward(self, x):
        if "extra" not in self._buffers:
            self.register_buffer("extra", x.mean(0), persistent=False)
        names = [name for name, _ in self.named_buffers()]
        return self.lin(x) * len(names) + sum(self.buffers())


def _buffers(model):
    return {name: b.clone() for name, b in model.named_buffers()}


@pytest.mark.parametrize("cls", [RegistersDeclared, RegistersNew, RegistersAndLists])
def test_a_buffer_registered_on_the_first_call_is_registered_as_eager(cls):
    torch.manual_seed(0)
    model = cls()
    reference = copy.deepcopy(model)
    compiled, counter = compile_counted(model)
    frames = []
    for i in range(3):
        x = torch.randn(2, 4) + i
        assert_same(compiled(x), reference(x))
        assert_same(_buffers(model), _buffers(reference))
        assert list(model.state_dict()) == list(reference.state_dict())
        assert model._non_persistent_buffers_set == reference._non_persistent_buffers_set
        assert [k for k in vars(model) if k != "forward"] == list(vars(reference))
        frames.append(counter.frame_count)
    assert frames[0] == frames[1] == frames[2]


class ReadsDict(nn.Module):
    """Takes a branch on an instance attribute being in ``__dict__``."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        if "offset" in self.__dict__:
            return self.lin(x) + self.__dict__["offset"]
        return self.lin(x)


class StoresThenReads(nn.Module):
    """Reads ``__dict__`` after a store of the same name: eager sees the store."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.factor = 1.0

    def forward(self, x):
        self.factor = self.factor + 1.0
        return self.lin(x) * self.__dict__["factor"]


@pytest.mark.parametrize(
    "cls", [RegistersDeclared, RegistersNew, RegistersAndLists, ReadsDict, StoresThenReads]
)
def test_dict_reads_and_registration_do_not_break(cls):
    torch.manual_seed(0)
    x = torch.randn(2, 4)
    report = bytegraph.explain(cls())(x)
    assert report.graph_break_count == 0, report.break_reasons
    assert_no_more_breaks(report.graph_break_count, cls(), x)


def test_an_attribute_set_after_compiling_is_seen_in_the_dict():
    torch.manual_seed(0)
    model = ReadsDict()
    compiled, counter = compile_counted(model)
    x = torch.randn(2, 4)
    assert_same(compiled(x), model.lin(x))
    model.offset = 3.0
    assert_same(compiled(x), model.lin(x) + 3.0)
    del model.offset
    assert_same(compiled(x), model.lin(x))
    assert counter.frame_count == 2


class RegistersThenAssigns(nn.Module):
    """Registers a buffer, then assigns it through ``__setattr__`` (which files it in
    ``_buffers``) and reads the table: the last write wins, as in eager."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        self.register_buffer("extra", x.sum(0), persistent=False)
        self.extra = x.mean(0)
        return self.lin(x) + self._buffers["extra"] + self.extra


class AssignsThenReadsTable(nn.Module):
    """Sets a declared buffer through ``__setattr__``, then reads the table itself."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("cache", torch.zeros(4))

    def forward(self, x):
        self.cache = x.sum(0)
        return self.lin(x) + self._buffers["cache"] + self.__dict__["_buffers"]["cache"]


@pytest.mark.parametrize("cls", [StoresThenReads, RegistersThenAssigns, AssignsThenReadsTable])
def test_stores_and_table_reads_in_either_order_are_eager(cls):
    torch.manual_seed(0)
    model = cls()
    reference = copy.deepcopy(model)

    def observe():
        return _buffers(model), list(model.state_dict()), vars(model).get("factor")

    def observe_reference():
        return _buffers(reference), list(reference.state_dict()), vars(reference).get("factor")

    compiled, _ = compile_counted(model)
    for i in range(3):
        x = torch.randn(2, 4) + i
        assert_same(compiled(x), reference(x))
        assert_same(observe(), observe_reference())


def test_register_buffer_over_an_attribute_raises_as_eager():
    class Clash(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)
            self.taken = 1

        def forward(self, x):
            self.register_buffer("taken", x)
            return self.lin(x)

    model = Clash()
    compiled, _ = compile_counted(model)
    x = torch.randn(2, 4)
    with pytest.raises(KeyError, match="already exists"):
        model(x)
    with pytest.raises(KeyError, match="already exists"):
        compiled(x)
    assert "taken" not in model._buffers and model.taken == 1


def _reads_through(model):
    def fn(x):
        y = model(x)
        if "_buffers" in model.__dict__ and model.__dict__.get("missing") is None:
            y = y + len(vars(model)["_buffers"])
        return y

    return fn


def test_dict_reads_of_a_module_in_a_function_are_eager_and_do_not_break():
    torch.manual_seed(0)
    model = RegistersNew()
    reference = copy.deepcopy(model)
    compiled, counter = compile_counted(_reads_through(model))
    for i in range(3):
        x = torch.randn(2, 4) + i
        assert_same(compiled(x), _reads_through(reference)(x))
        assert_same(_buffers(model), _buffers(reference))
    assert counter.frame_count == 2  # the first call's variant, and the grown tree's
    x = torch.randn(2, 4)
    report = bytegraph.explain(_reads_through(RegistersNew()))(x)
    assert report.graph_break_count == 0, report.break_reasons
    assert_no_more_breaks(0, _reads_through(RegistersNew()), x)


class WritesDictAcrossBreak(nn.Module):
    """Holds ``__dict__`` across a break (a local of the resume function, its own dict tracker),
    writes a key through it, then asks ``self.__dict__`` for that key."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        d = self.__dict__
        print("break")
        d["z"] = 5.0
        if "z" in self.__dict__:
            return self.lin(x) + 1
        return self.lin(x)


def test_a_dict_held_across_a_break_and_written_is_seen_as_eager():
    torch.manual_seed(0)
    model = WritesDictAcrossBreak()
    reference = copy.deepcopy(model)
    compiled, _ = compile_counted(lambda x: model(x))
    x = torch.randn(2, 4)
    assert_same(compiled(x), reference(x))
    assert vars(model)["z"] == vars(reference)["z"]


class Plain(nn.Module):
    """A module with a submodule, two plain attributes, a class attribute and a property."""

    default = 5

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.scale = 2.0
        self.tag = "a"

    @property
    def prop(self):
        return 1


def reads_len(m, x):
    return m.lin(x) * len(m.__dict__)


def reads_public_keys(m, x):
    return m.lin(x), [k for k in m.__dict__ if not k.startswith("_")]


def reads_items(m, x):
    return m.lin(x), sorted(k for k, v in vars(m).items() if isinstance(v, float))


def reads_views(m, x):
    return (
        m.lin(x),
        list(m.__dict__.keys())[-3:],
        "scale" in m.__dict__.keys(),
        len(vars(m).values()),
    )


def reads_copy(m, x):
    return m.lin(x), list(m.__dict__.copy())[-2:]


def merges(m, x):
    m.__dict__["n"] = 1
    into = {}
    into.update(vars(m))
    return m.lin(x), list(dict(m.__dict__))[-2:], list({**m.__dict__})[-1], len(into)


def counts_through_dict(m, x):
    m.__dict__["cnt"] = m.__dict__.get("cnt", 0) + 1
    return m.lin(x) * m.cnt, list(m.__dict__)[-1], len(vars(m))


def updates(m, x):
    vars(m).update(flag=True)
    vars(m).update({"scale": 3.0})
    return m.lin(x) * m.scale, m.flag


def stores_then_deletes(m, x):
    m.__dict__["tmp"] = 1
    del m.__dict__["tmp"]
    return m.lin(x), hasattr(m, "tmp"), m.__dict__.pop("gone", 7)


def deletes_an_existing_key(m, x):
    if "tag" in m.__dict__:
        del m.__dict__["tag"]
    return m.lin(x), hasattr(m, "tag"), len(m.__dict__)


def sets_defaults(m, x):
    v = m.__dict__.setdefault("dflt", 3)
    m.__dict__["default"] = m.default + 1  # shadows the class attribute
    return m.lin(x) * v * m.default


def unshadows(m, x):
    m.__dict__.setdefault("default", 9)
    y = m.lin(x) * m.default
    del m.__dict__["default"]  # the class attribute again
    return y * m.default


def toggles_a_shadow(m, x):
    if "default" in m.__dict__:
        del m.__dict__["default"]
    else:
        m.__dict__["default"] = 9
    return m.lin(x) * m.default


def stores_then_lists(m, x):
    m.extra = 1.0  # through nn.Module.__setattr__: appended to __dict__
    m.scale = 4.0  # in place
    m.__dict__["a1"] = 1
    m.__dict__["a2"] = 2
    del m.__dict__["a1"]
    return m.lin(x) * len(m.__dict__), list(m.__dict__)[-3:], m.__dict__.pop("a2")


def holds_a_live_view(m, x):
    keys = m.__dict__.keys()
    m.__dict__["late"] = 1
    return m.lin(x), list(keys)[-1]


def writes_while_iterating(m, x):
    y = m.lin(x)
    try:
        for _ in m.__dict__:
            m.__dict__["zz"] = 1
    except RuntimeError:
        y = y + 1
    return y


def _state(model):
    """The module's ``__dict__`` (keys in order, values; the submodule by its type), buffers and
    state_dict keys."""
    items = [
        (k, type(v) if isinstance(v, nn.Module) else v)
        for k, v in vars(model).items()
        if k not in ("_modules", "forward")
    ]
    return repr(items), _buffers(model), list(model.state_dict())


WHOLE_AND_WRITES = [
    reads_len,
    reads_public_keys,
    reads_items,
    reads_views,
    reads_copy,
    merges,
    counts_through_dict,
    updates,
    stores_then_deletes,
    deletes_an_existing_key,
    sets_defaults,
    unshadows,
    toggles_a_shadow,
    stores_then_lists,
    holds_a_live_view,
    writes_while_iterating,
]


@pytest.mark.parametrize("fn", WHOLE_AND_WRITES)
def test_whole_dict_reads_and_writes_are_eager_and_do_not_break(fn):
    torch.manual_seed(0)
    model = Plain()
    reference = copy.deepcopy(model)
    fresh = copy.deepcopy(model)
    compiled, counter = compile_counted(fn)
    x = torch.randn(2, 4)
    frames = []
    for _ in range(4):
        assert_same(compiled(model, x), fn(reference, x))
        assert _state(model) == _state(reference)
        frames.append(counter.frame_count)
    assert frames[2] == frames[3], frames  # identical calls compile nothing
    report = bytegraph.explain(fn)(copy.deepcopy(fresh), x)
    assert report.graph_break_count == 0, report.break_reasons
    assert_no_more_breaks(
        0,
        fn,
        copy.deepcopy(fresh),
        x,
        baseline_missing="torch 2.11's Dynamo runs some of these calls in Python (a method of the "
        "module's __dict__, hasattr on the module)",
    )


def files_a_parameter(m, x):
    m.__dict__["w"] = m.lin.weight  # __setattr__ would file it in _parameters
    return m.lin(x) + m.w.sum()


def files_a_module(m, x):
    m.__dict__["lin"] = m.lin  # a name in _modules
    return m.lin(x)


def shadows_a_property(m, x):
    m.__dict__["prop"] = 7  # the property still wins
    return m.lin(x) * m.prop


def deletes_a_member_table(m, x):
    y = m.lin(x)
    m.__dict__.pop("_forward_hooks")
    m.__dict__["_forward_hooks"] = collections.OrderedDict()
    return y


@pytest.mark.parametrize(
    "fn", [files_a_parameter, files_a_module, shadows_a_property, deletes_a_member_table]
)
def test_writes_the_module_would_make_otherwise_are_eager(fn):
    torch.manual_seed(0)
    model = Plain()
    reference = copy.deepcopy(model)
    compiled, _ = compile_counted(fn)
    x = torch.randn(2, 4)
    for _ in range(2):
        try:
            expected = fn(reference, x)
        except Exception as e:  # noqa: BLE001 (the compiled call must raise the same)
            with pytest.raises(type(e)):
                compiled(model, x)
        else:
            assert_same(compiled(model, x), expected)
        assert _state(model) == _state(reference)


def test_reading_the_keys_guards_no_value():
    """``len``, iteration and ``keys()`` read the keys only: an attribute's value changed
    between calls compiles nothing; its key added does, once."""
    torch.manual_seed(0)
    model = Plain()

    def fn(m, x):
        return m.lin(x) * len(m.__dict__), [k for k in m.__dict__.keys() if k[0] != "_"]

    compiled, counter = compile_counted(fn)
    x = torch.randn(2, 4)
    for i in range(3):
        model.tag, model.scale = f"t{i}", float(i)
        assert_same(compiled(model, x), fn(model, x))
    assert counter.frame_count == 1
    model.added = 1
    for _ in range(2):
        assert_same(compiled(model, x), fn(model, x))
    assert counter.frame_count == 2
