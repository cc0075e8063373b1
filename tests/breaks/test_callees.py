"""Issue 20, kind 5: a function that a graph break sends to plain Python is called through its own
compiled version (``tracer/callees.py``), so the code below the break still compiles. Before: the
whole callee ran as plain Python (diffusers' ``UNet2DConditionModel`` compiled 0 graphs: its
forward is wrapped by a decorator that calls it inside ``try``/``finally``)."""

import contextlib
import functools
import gc
import sys
import weakref

import pytest
import torch
from bytegraph.codegen.route_calls import routed
from bytegraph.tracer import driver
from bytegraph.tracer.callees import RouteTable
from difftest import check_breaks
from dynamo_baseline import dynamo_counts

import bytegraph


def scale_lora(forward_fn):
    """The shape of diffusers' ``apply_lora_scale``: the wrapped forward runs inside try/finally."""

    @functools.wraps(forward_fn)
    def wrapper(self, *args, **kwargs):
        self.scaled = True
        try:
            result = forward_fn(self, *args, **kwargs)
        finally:
            self.scaled = False
        return result

    return wrapper


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.scaled = False

    @scale_lora
    def forward(self, x):
        h = torch.relu(self.lin(x))
        print("deep inside")  # a break the wrapper's try block keeps from resuming here
        return self.lin(h).sigmoid() + self.scaled


def _helper(x):
    y = x.cos()
    print("in helper")
    return y.sin()


def _calling_in_try(callee):
    """A function calling ``callee`` inside a ``try`` block (its break cannot resume there)."""

    def fn(x):
        z = x + 1
        try:
            out = callee(z)
        except ValueError:
            out = z
        return out * 3

    name = getattr(callee, "__name__", type(callee).__name__)
    fn.__name__ = fn.__qualname__ = f"calls_{name}_in_try"
    return fn


_callee_in_try = _calling_in_try(_helper)


def test_a_wrapped_forward_compiles_below_the_break():
    torch.manual_seed(0)
    block = Block()

    def make():
        return (torch.randn(2, 4),)

    def run(x):
        return block(x)

    # graphs: the linear + relu before the print, the second linear + sigmoid after it, both in
    # forward's own compiled version; the wrapper's own code has none. One break, the print.
    check_breaks(run, make, graphs=2, breaks=1, calls=3, observe=lambda: block.scaled)
    assert dynamo_counts(run, *make()) == (2, 1)


def test_a_callee_in_a_try_block_compiles_on_its_own():
    # the callee resumes after its print (what it raises is raised at the caller's call, in the
    # caller's code): graphs x + 1 and cos, then sin; the caller's rest, in its try, in Python
    check_breaks(_callee_in_try, lambda: (torch.randn(3),), graphs=2, breaks=1, calls=3)
    assert dynamo_counts(_callee_in_try, torch.randn(3)) == (2, 1)


def test_the_callee_keeps_its_own_cache_and_reports():
    compiled = bytegraph.compile(_callee_in_try, backend="eager")
    for _ in range(3):
        torch.testing.assert_close(compiled(torch.ones(3)), _callee_in_try(torch.ones(3)))
    stats = bytegraph.stats()
    assert stats.get("break:print") == 1  # the helper's break, once, from its own compile


class Shaky(torch.nn.Module):
    """A user module whose forward breaks in the middle."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        h = self.lin(x).relu()
        print("inside the module")
        return h.sigmoid()


SHAKY = Shaky()
SHAKY_IN_SEQUENCE = torch.nn.Sequential(torch.nn.Tanh(), Shaky())


_module_in_try = _calling_in_try(SHAKY)


def _sequential_in_try(x):
    try:
        return SHAKY_IN_SEQUENCE(x * 2)
    finally:
        pass


class Caller(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = Shaky()
        self.hits = 0

    def forward(self, x):
        try:
            y = self.inner(x * 2)
        except RuntimeError:
            y = x
        finally:
            self.hits += 1
        return y - 1


@pytest.mark.parametrize("fn", [_module_in_try, _sequential_in_try], ids=lambda f: f.__name__)
def test_a_module_called_in_a_try_block_compiles_on_its_own(fn):
    # graphs: what runs before the print (the caller's, the module's) and the module's rest, its
    # resume function; one break, the print
    check_breaks(fn, lambda: (torch.randn(2, 3),), graphs=2, breaks=1, calls=3)
    assert dynamo_counts(fn, torch.randn(2, 3))[1] == 1


def test_a_child_module_called_in_a_try_block_of_forward():
    torch.manual_seed(0)
    caller = Caller()

    def run(x):
        return caller(x)

    check_breaks(
        run,
        lambda: (torch.randn(2, 3),),
        graphs=2,
        breaks=1,
        calls=3,
        setup=lambda: setattr(caller, "hits", 0),
        observe=lambda: caller.hits,
    )
    assert dynamo_counts(run, torch.randn(2, 3))[1] == 1


def test_a_library_module_in_a_try_block_is_called_as_it_is():
    from bytegraph.tracer.callees import CalleeCompiler

    compiled = []
    compiler = CalleeCompiler(lambda fn: compiled.append(fn) or fn, lambda: 8)
    linear = torch.nn.Linear(2, 2)
    assert compiler(linear) is linear and not compiled  # torch's own module: no user code
    routed = compiler(SHAKY)
    assert routed.args == (SHAKY,) and [f.__name__ for f in compiled] == ["call_module"]


# -- code run in plain Python calls compiled functions (``codegen/route_calls.py``) ---------------


def _inner(x):
    return x.sin() + 1


def _rest_of_try(x):
    try:
        y = x.cos()
        print("break")  # the resume function after it runs in Python, for exact handlers
        z = _inner(y)
        w = _inner(z * 2)
    except ValueError:
        w = x
    return w


def test_calls_after_a_break_in_a_try_block_run_compiled():
    # graphs: the cos before the print, and ``_inner``'s own (called twice, compiled once); the
    # code after the print runs in Python, calling it. Before: 1 graph. torch.compile runs this
    # whole frame in Python (no graph, no break counted) and compiles ``_inner`` alone.
    check_breaks(_rest_of_try, lambda: (torch.randn(3),), graphs=2, breaks=1, calls=3)
    assert dynamo_counts(_rest_of_try, torch.randn(3)) == (1, 0)


def _asked_whether_torch_compile_traces(fn, *args):
    """How many times a call of ``fn`` asks whether torch.compile traces it."""
    codes = {torch.compiler.is_dynamo_compiling.__code__, torch.compiler.is_compiling.__code__}
    asked = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code in codes:
            asked.append(frame.f_code)

    sys.setprofile(profile)
    try:
        fn(*args)
    finally:
        sys.setprofile(None)
    return len(asked)


def test_compiled_callees_leave_the_torch_compile_check_to_the_users_entry():
    # torch.compile tracing the user's entry traces the function it calls instead, never the
    # code the entry chose, which alone calls the callees' compiled versions: those check
    # their function's code and guards only. Before: asked once more per call of ``_inner``.
    compiled = bytegraph.compile(_rest_of_try, backend="eager")
    x = torch.randn(3)
    for _ in range(3):
        torch.testing.assert_close(compiled(x), _rest_of_try(x))
    assert _asked_whether_torch_compile_traces(compiled, x) == 1


def _scaled_sin(x):
    return x.sin() + 1


def test_compiled_callees_given_new_code_run_the_new_code():
    """Code run in Python calls each function through its compiled version, whose entry checks
    the function's code: a closure's (``inner``) and a module-level function's (``_scaled_sin``),
    each given new code in turn."""

    def inner(x):
        return x.sin() + 1

    def rest(x):
        try:
            y = x.cos()
            print("break")  # what follows runs in Python, calling the compiled versions
            z = inner(y) * _scaled_sin(y)
        except ValueError:
            z = x
        return z

    compiled = bytegraph.compile(rest, backend="eager")
    x = torch.randn(3)
    original = _scaled_sin.__code__
    try:
        for _ in range(2):
            torch.testing.assert_close(compiled(x), rest(x))
        inner.__code__ = (lambda x: x.sin() * 5).__code__
        for _ in range(2):
            torch.testing.assert_close(compiled(x), x.cos().sin() * 5 * (x.cos().sin() + 1))
        _scaled_sin.__code__ = (lambda x: x.sin() - 2).__code__
        for _ in range(2):
            torch.testing.assert_close(compiled(x), x.cos().sin() * 5 * (x.cos().sin() - 2))
    finally:
        _scaled_sin.__code__ = original


class _Scaled(torch.nn.Module):
    def forward(self, x):
        return x.cos() * 2


_SCALED = _Scaled()


def _falls_back(x):
    tags = {1, 2}  # its trace fails here (``broken_build_set``)

    def shift(v):  # a closure made at each call
        return v - len(tags)

    z = _inner(x) + _SCALED(x)
    return shift(z) + sum(_inner(v) for v in (x, z))


@pytest.fixture
def broken_build_set(monkeypatch):
    """Make the BUILD_SET handler raise as a bug would: the trace of any function using a set
    display fails, and the function runs in Python."""
    from bytegraph.tracer import opcodes

    def broken(tx, inst):
        raise KeyError("bug inside bytegraph")

    monkeypatch.setitem(opcodes.HANDLERS, "BUILD_SET", broken)


def test_a_function_that_falls_back_calls_compiled_functions(broken_build_set):
    compiled = bytegraph.compile(_falls_back, backend="eager")
    with pytest.warns(UserWarning, match="running _falls_back in Python"):
        for _ in range(3):
            x = torch.randn(3)
            torch.testing.assert_close(compiled(x), _falls_back(x))
    stats = bytegraph.stats()
    assert stats["fallback:internal_error"] == 1
    # traced: _falls_back (fails), _inner, the module's call, and the closure made at each call
    # once: every function with its code goes through one compiled caller, which takes the
    # function as its input and guards what it is made of (code, the cell it reads), not which
    # object it is
    assert stats["frames"] == 4


def test_a_closure_made_at_each_call_is_traced_once(broken_build_set):
    compiled = bytegraph.compile(_falls_back, backend="eager")
    with bytegraph.config.patch(recompile_limit=2), pytest.warns(UserWarning):
        for _ in range(5):
            x = torch.randn(3)
            torch.testing.assert_close(compiled(x), _falls_back(x))
    assert bytegraph.stats()["frames"] == 1 + 2 + 1  # _falls_back; _inner and call_module; shift


def _falls_back_with_a_default(x, k):
    tags = {1, 2}  # its trace fails here (``broken_build_set``)

    def shift(v, n=len(tags) * k):  # noqa: B008 (a default, made at each call)
        return v - n

    return shift(_inner(x))


def test_a_closure_with_a_default_made_at_each_call_is_traced_once_per_default(broken_build_set):
    # x-transformers' ``def _attn_layers_forward(inp, cache=None, **kwargs)`` in ``forward``: the
    # closure goes through its code's shared caller like one without defaults, its defaults
    # guarded where the call binds them, so identical calls never trace it again (it was
    # compiled per function object: traced at each call up to the recompile limit)
    compiled = bytegraph.compile(_falls_back_with_a_default, backend="eager")
    with pytest.warns(UserWarning):
        for k in (1, 1, 1, 2, 2, 1, 2):
            x = torch.randn(3)
            torch.testing.assert_close(compiled(x, k), _falls_back_with_a_default(x, k))
    # the function once per k (its fallback keeps the guards it reached); _inner; shift once
    # per value of its default (2, then 4)
    assert bytegraph.stats()["frames"] == 2 + 1 + 2


def _falls_back_with_an_attribute(x):
    tags = {1, 2}  # its trace fails here (``broken_build_set``)

    def shift(v):
        return v - len(tags)

    shift.tag = "shift"  # an attribute: not made of its code, cells and defaults alone
    return shift(_inner(x))


def test_a_function_made_at_each_call_is_compiled_a_bounded_number_of_times(broken_build_set):
    compiled = bytegraph.compile(_falls_back_with_an_attribute, backend="eager")
    with bytegraph.config.patch(recompile_limit=2), pytest.warns(UserWarning):
        for _ in range(5):
            x = torch.randn(3)
            torch.testing.assert_close(compiled(x), _falls_back_with_an_attribute(x))
    assert bytegraph.stats()["frames"] == 1 + 1 + 2  # the function; _inner; shift


def _layer_classes(count):
    """``count`` module classes, each its own ``forward``."""

    def forward(self, x):
        return torch.tanh(self.lin(x)) * self.scale

    def init(self, scale):
        torch.nn.Module.__init__(self)
        self.lin, self.scale = torch.nn.Linear(4, 4), scale

    return [
        type(f"Layer{i}", (torch.nn.Module,), {"__init__": init, "forward": forward})
        for i in range(count)
    ]


@contextlib.contextmanager
def _entered():
    yield


def test_modules_called_from_plain_python_compile_once_per_class():
    """Called from code run in plain Python (a block of a user context manager after a break),
    each module goes through the compiled caller of its class, with the module as its input:
    instances of a class share it, and classes do not share a recompile limit."""
    torch.manual_seed(0)
    layers = torch.nn.ModuleList(
        [cls(0.5) for cls in _layer_classes(10) for _ in range(3)]  # 30 layers, 10 classes
    )

    def run(x):
        with _entered():
            print("inside")
            for layer in layers:
                x = layer(x)
        return x

    compiled = bytegraph.compile(run, backend="eager")
    x = torch.randn(2, 4)
    torch.testing.assert_close(compiled(x), run(x))
    traced = bytegraph.stats()["frames"]
    for _ in range(3):
        torch.testing.assert_close(compiled(x), run(x))
    assert bytegraph.stats()["frames"] == traced, "identical calls traced again"
    callers = {
        s.fn.__qualname__: s
        for s in list(driver.ALL)
        if s.events and s.fn.__qualname__.startswith("call_module[Layer")
    }
    assert sorted(callers) == sorted(f"call_module[Layer{i}]" for i in range(10))
    for state in callers.values():
        # the first layer of a class gets ``x`` without grad, the others a layer's output
        assert len(state.events) <= 2 and all(e.graphs for e in state.events)


class _WithASet(torch.nn.Module):
    def forward(self, x):
        tags = {1, 2}  # its trace fails here (``broken_build_set``): an internal error
        return x * len(tags)


def test_a_module_whose_trace_fails_inside_its_compiled_caller_runs_as_it_is(broken_build_set):
    """The compiled caller of the module's class falls back (its guards kept: an internal error);
    the caller then runs as it is: routed, its call of the module would come back to it."""
    module = _WithASet()

    def run(x):
        with _entered():
            print("inside")
            y = module(x)
        return y

    compiled = bytegraph.compile(run, backend="eager")
    with pytest.warns(UserWarning, match="running call_module"):
        for _ in range(3):
            x = torch.randn(3)
            torch.testing.assert_close(compiled(x), run(x))
    assert bytegraph.stats()["fallback:internal_error"] == 1


class _Scaler:
    def __init__(self, k):
        self.k = k

    def apply(self, x):
        return (x * self.k).tanh()


def _falls_back_calling_methods(x, scaler):
    try:
        raise KeyError("k")
    except KeyError:
        print("handled")  # a break while an exception is handled: runs in Python
    return scaler.apply(x).sum(0) + x.dim()


def test_methods_called_from_a_fallback_run_compiled_and_bound_to_their_object():
    compiled = bytegraph.compile(_falls_back_calling_methods, backend="eager")
    with pytest.warns(UserWarning, match="in Python"):
        for k in (2.0, 3.0, 2.0):
            x, scaler = torch.randn(3, 2), _Scaler(k)
            torch.testing.assert_close(compiled(x, scaler), _falls_back_calling_methods(x, scaler))
    stats = bytegraph.stats()
    # _falls_back_calling_methods (fails) and _Scaler.apply (with self.k a constant: traced
    # once per value); the tensor methods run as they are
    assert stats["fallback:exception"] == 1 and stats["frames"] == 3


def _apply_doubled(self, x):
    return (x * self.k * 2).tanh()


def test_a_method_replaced_on_its_class_after_the_router_knew_it_runs_the_new_one(monkeypatch):
    compiled = bytegraph.compile(_falls_back_calling_methods, backend="eager")
    x, scaler = torch.randn(3, 2), _Scaler(2.0)
    with pytest.warns(UserWarning, match="in Python"):
        torch.testing.assert_close(compiled(x, scaler), _falls_back_calling_methods(x, scaler))
    table = compiled.__bytegraph__.callees.table
    # a method load's function is what routed code looks up
    assert table[_Scaler.apply] is not _Scaler.apply  # its compiled version
    # a C method, remembered (found with no call of ``__missing__``): called as it is
    assert torch.Tensor.dim in table and table[torch.Tensor.dim] is torch.Tensor.dim
    monkeypatch.setattr(_Scaler, "apply", _apply_doubled)
    expected = _falls_back_calling_methods(x, scaler)
    torch.testing.assert_close(compiled(x, scaler), expected)
    assert not torch.allclose(expected, (x * 2.0).tanh().sum(0) + 2)  # the new method ran
    assert bytegraph.stats()["frames"] == 3  # the fallback, then each method compiled once


def _falls_back_calling(module, x):
    try:
        raise KeyError("k")
    except KeyError:
        print("handled")  # a break while an exception is handled: runs in Python
    return module(x) + 1


def _doubling_forward(self, x):
    return x * 2


def test_a_library_module_runs_as_it_is_until_its_class_gets_a_user_forward(monkeypatch):
    compiled = bytegraph.compile(_falls_back_calling, backend="eager")
    identity, x = torch.nn.Identity(), torch.randn(3)
    with pytest.warns(UserWarning, match="in Python"):
        for _ in range(2):
            torch.testing.assert_close(compiled(identity, x), x + 1)
    assert bytegraph.stats()["frames"] == 1  # the fallback only: Identity runs as it is
    monkeypatch.setattr(torch.nn.Identity, "forward", _doubling_forward)
    fresh = torch.nn.Identity()  # (the first one keeps its answer: it is asked once per module)
    for _ in range(2):
        torch.testing.assert_close(compiled(fresh, x), x * 2 + 1)
    assert bytegraph.stats()["frames"] == 2  # its class's caller, with the user's forward


class _Holder:
    def __init__(self, module):
        self.module = module


def _falls_back_calling_leaves(holder, x):
    try:
        raise KeyError("k")
    except KeyError:
        print("handled")  # a break while an exception is handled: runs in Python
    module = holder.module
    return module(x) + holder.module(x)  # a plain call, and a method load's


def test_a_library_leaf_module_is_told_at_the_call_site_without_asking_the_table(monkeypatch):
    """A module of a library class without children (``nn.Identity``), called from routed code,
    is called as it is by the call site itself, which checks its class's ``forward`` and its
    children at each call as ``RouteTable.__missing__`` would, without calling it; the module
    given a child is no leaf: the site asks the table again."""
    compiled = bytegraph.compile(_falls_back_calling_leaves, backend="eager")
    holder, x = _Holder(torch.nn.Identity()), torch.randn(3)
    with pytest.warns(UserWarning, match="in Python"):
        torch.testing.assert_close(compiled(holder, x), _falls_back_calling_leaves(holder, x))
    asked = []
    missing = RouteTable.__missing__

    def counted(table, obj):
        asked.append(obj)
        return missing(table, obj)

    monkeypatch.setattr(RouteTable, "__missing__", counted)
    for _ in range(2):
        torch.testing.assert_close(compiled(holder, x), _falls_back_calling_leaves(holder, x))
    assert not [obj for obj in asked if obj is holder.module]  # the sites alone
    holder.module.add_module("inner", torch.nn.Identity())
    torch.testing.assert_close(compiled(holder, x), _falls_back_calling_leaves(holder, x))
    assert len([obj for obj in asked if obj is holder.module]) == 2  # each site asks
    assert bytegraph.stats()["frames"] == 1  # the fallback only: the module runs as it is


class _HashedInPython(type):
    hashes = 0

    def __hash__(cls):
        _HashedInPython.hashes += 1
        return type.__hash__(cls)


class _AddsOne(metaclass=_HashedInPython):
    def __call__(self, x):
        return x + 1


def test_the_leaf_test_hashes_no_class_whose_metaclass_hashes_in_python():
    """The call site's leaf test looks up only classes whose metaclass is ``type``: an object
    of a class whose metaclass defines ``__hash__`` is routed with no call of it, as before."""
    compiled = bytegraph.compile(_falls_back_calling, backend="eager")
    x = torch.randn(3)
    with pytest.warns(UserWarning, match="in Python"):
        torch.testing.assert_close(compiled(_AddsOne(), x), x + 2)  # traced (which may hash it)
    _HashedInPython.hashes = 0
    for _ in range(2):
        torch.testing.assert_close(compiled(_AddsOne(), x), x + 2)
    assert _HashedInPython.hashes == 0


class _Helper:
    """A tensor-free method (left alone: called as it is) and a tensor method (compiled)."""

    hashes = 0

    def __init__(self, k):
        self.k = k

    def __eq__(self, other):  # with ``__hash__`` below: hashes in Python
        return self is other

    def __hash__(self):
        _Helper.hashes += 1
        return 0

    def factor(self, v):
        return v * self.k

    def apply(self, x):
        return (x * self.k).tanh()


class _Unhashable(_Helper):
    __hash__ = None


def _falls_back_calling_temporaries(x, cls, refs):
    try:
        raise KeyError("k")
    except KeyError:
        print("handled")  # a break while an exception is handled: runs in Python
    helper = cls(2.0)
    refs.append(weakref.ref(helper))
    stored = helper.apply
    n = sum(helper.factor(v) for v in range(3)) + cls(3.0).factor(1)
    return stored(x) + helper.apply(x) * n


@pytest.mark.parametrize("cls", [_Helper, _Unhashable])
def test_methods_of_temporary_objects_called_from_a_fallback_are_not_kept(cls):
    compiled = bytegraph.compile(_falls_back_calling_temporaries, backend="eager")
    x = torch.randn(3)
    with pytest.warns(UserWarning, match="in Python"):
        for call in range(3):
            hashes, refs = _Helper.hashes, []
            expected = _falls_back_calling_temporaries(x, cls, [])
            torch.testing.assert_close(compiled(x, cls, refs), expected)
            assert _Helper.hashes == hashes  # no ``self`` hashed: eager hashes none
            if call == 0:  # the traces of the first call leave cycles behind
                gc.collect()
            assert refs[0]() is None  # freed as the fallback returned
    assert bytegraph.stats()["fallback:exception"] == 1  # the function, once


def _doubled(v):
    return v * 2


def _calls_doubled(values):
    out = []
    for v in values:
        out.append(_doubled(v))
    return [*out, _doubled(values[0])]


def _asking_table():
    """A route table whose ``route`` notes each callable it is asked about and routes it to
    itself: ``(asked, route, table)``."""
    asked = []

    def route(obj):
        asked.append(obj)
        return obj

    table = route.table = RouteTable()
    table.route, table.modules = route, None
    return asked, route, table


@pytest.mark.parametrize("drop", ["discard", "clear"])
def test_a_callable_the_table_drops_from_its_set_is_asked_again_at_sites_that_found_it(drop):
    asked, route, table = _asking_table()
    table.put(_doubled, _doubled)
    fn = routed(_calls_doubled, route)
    assert fn([1, 2]) == [2, 4, 2] and _doubled not in asked
    assert sum(site.last is _doubled for site in table.sites) == 2  # both sites found it
    table.discard(_doubled) if drop == "discard" else table.clear()
    assert all(site.last is None for site in table.sites)
    table.put(_doubled, lambda v: -v)
    assert fn([1, 2]) == [-1, -2, -1]


@pytest.mark.parametrize("drop", ["discard", "clear", "put"])
def test_a_compiled_version_the_table_drops_is_looked_up_again_at_sites_that_found_it(drop):
    """A callable the table holds with another target (its compiled version) is remembered by
    each site that found it (no lookup at its next call); a site forgets it when the table drops
    it or decides on it anew, and looks it up again."""
    asked, route, table = _asking_table()
    table.put(_doubled, lambda v: 10 * v)
    fn = routed(_calls_doubled, route)
    assert fn([1, 2]) == [10, 20, 10] and _doubled not in asked
    assert sum(site.found[0] is _doubled for site in table.sites) == 2  # both sites found it
    if drop == "put":
        table.put(_doubled, lambda v: -v)
    else:
        table.discard(_doubled) if drop == "discard" else table.clear()
        assert fn([1, 2]) == [2, 4, 2] and asked.count(_doubled) == 3  # asked at each call
        table.put(_doubled, lambda v: -v)
    assert not any(site.found[0] is _doubled for site in table.sites)
    assert fn([1, 2]) == [-1, -2, -1]
