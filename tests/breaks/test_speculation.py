"""Speculation on branches on tensor data (``tracer/breaks/speculation.py``): the trace follows the
side the call's own values take and the graph checks it; a call that takes the other side reruns in
Python (exactly eager: value, dtype, autograd, side effects, printed output, RNG state, global torch
state), and a branch that misses too often breaks as torch.compile does. Each differential test
prints bytegraph's graphs and breaks beside ``torch._dynamo.explain``'s."""

import pytest
import torch
from bytegraph.tracer.breaks import speculation
from bytegraph.tracer.driver import COUNTERS
from difftest import assert_same, check_breaks, compile_counted
from dynamo_baseline import dynamo_counts

import bytegraph


@pytest.fixture(autouse=True)
def _speculating():
    with bytegraph.config.patch(speculate=True):
        yield


def _compare_with_torch_compile(fn, breaks, *args):
    """Print both engines' counts for one call; bytegraph breaks no more than torch.compile."""
    graphs, dynamo_breaks = dynamo_counts(fn, *args)
    print(
        f"{fn.__name__}: bytegraph breaks {breaks}; torch.compile {graphs} graphs, "
        f"{dynamo_breaks} breaks"
    )
    if graphs > 0:
        assert breaks <= dynamo_breaks


def _rng_state():
    return torch.get_rng_state()


def _seed():
    torch.manual_seed(0)


# -- an ODE solver on a fixed grid -----------------------------------------------------------------


def _rk4_step(func, t, dt, y):
    k1 = func(t, y)
    k2 = func(t + dt / 2, y + dt * k1 / 2)
    k3 = func(t + dt / 2, y + dt * k2 / 2)
    k4 = func(t + dt, y + dt * k3)
    return y + dt * (k1 + 2 * k2 + 2 * k3 + k4) / 6


def _decay(t, y):
    return -0.5 * y + torch.sin(t)


def _fixed_grid_solve(y0, t):
    """A fixed-step solver written as ODE libraries write it: the step loop's condition and the
    output loop's condition compare tensors (``t1 >= t[j]``), and the first output is ``y0`` when
    the grid starts at ``t0``."""
    dt = 0.125
    solution = torch.empty(len(t), *y0.shape, dtype=y0.dtype)
    j = 0
    t0, y = t[0], y0
    if t0 == t[0]:
        solution[0] = y0
        j = 1
    while j < len(t):
        t1 = t0 + dt
        y1 = _rk4_step(_decay, t0, dt, y)
        while j < len(t) and t1 >= t[j]:
            solution[j] = y + (y1 - y) * (t[j] - t0) / dt  # linear interpolation
            j += 1
        t0, y = t1, y1
    return solution


def _grid():
    return (torch.randn(3), torch.linspace(0.0, 1.0, 5))


def test_a_fixed_grid_solver_is_one_graph():
    compiled, counter, _ = check_breaks(_fixed_grid_solve, _grid, graphs=1, breaks=0, calls=3)
    _compare_with_torch_compile(_fixed_grid_solve, 0, *_grid())
    assert COUNTERS["rerun"] == 0


def test_a_solver_on_another_grid_reruns_then_traces_again():
    compiled, counter = compile_counted(_fixed_grid_solve)
    compiled(*_grid())
    finer = (torch.randn(3), torch.linspace(0.0, 1.0, 9))  # same shapes of y0; another t
    for _ in range(3):
        y0, t = finer
        assert_same(compiled(y0, t), _fixed_grid_solve(y0.clone(), t.clone()))
    # the grid is an input of another shape: a new trace, its own speculation
    assert counter.frame_count == 2


# -- ``while mask.any():`` -------------------------------------------------------------------------


def _halve_until_small(x):
    mask = x.abs() > 1
    while mask.any():
        x = torch.where(mask, x / 2, x)
        mask = x.abs() > 1
    return x


def test_a_converging_mask_loop_is_one_graph():
    make = lambda: (torch.tensor([3.0, -9.0, 0.5]),)  # noqa: E731
    check_breaks(_halve_until_small, make, graphs=1, breaks=0, calls=3)
    _compare_with_torch_compile(_halve_until_small, 0, *make())


def test_a_mask_loop_that_runs_longer_reruns_as_eager():
    compiled, counter = compile_counted(_halve_until_small)
    compiled(torch.tensor([3.0, -9.0, 0.5]))
    longer = torch.tensor([300.0, 1.0, 2.0])  # more iterations: the check after the graph fails
    reruns = COUNTERS["rerun"]
    assert_same(compiled(longer), _halve_until_small(longer.clone()))
    assert COUNTERS["rerun"] == reruns + 1
    assert counter.frame_count == 1


def test_a_loop_past_the_unroll_limit_breaks():
    x = torch.tensor([2.0**20])
    with bytegraph.config.patch(speculation_unroll_limit=4):
        compiled, counter = compile_counted(_halve_until_small)
        assert_same(compiled(x), _halve_until_small(x.clone()))
    report = bytegraph.explain(_halve_until_small)(x)  # no limit: 21 iterations, one graph
    assert (report.graph_count, report.graph_break_count) == (1, 0)
    assert counter.frame_count > 1


# -- a branch that misses --------------------------------------------------------------------------

LOG: list = []


def _branch_with_effects(x, out):
    y = x * 2
    noise = torch.randn(3)
    if y.sum() > 0:
        out.append("positive")
        LOG.append(len(out))
        with torch.no_grad():
            z = y.sin() + noise
        z = z + x.exp()
    else:
        out.append("negative")
        z = y.cos() * noise - torch.rand(3)
    return z * x, len(out)


def _branch_then_print(x):
    if x.sum() > 0:
        y = x + torch.rand(3)
    else:
        y = x - torch.rand(3)
    print("between")  # a graph break: the check runs before it
    return y * 2


def _positive():
    return (torch.rand(3).requires_grad_(), [])


def _negative():
    return (-torch.rand(3).requires_grad_(), [])


def _negative_leaf():
    return ((-torch.rand(3)).requires_grad_(), [])


def _seed_and_clear_log():
    _seed()
    LOG.clear()


def test_a_branch_that_misses_on_the_second_call_acts_as_eager():
    reruns = COUNTERS["rerun"]
    compiled, counter, _ = check_breaks(
        _branch_with_effects,
        None,
        graphs=1,
        breaks=0,
        calls=[_positive, _negative_leaf, _positive],
        setup=_seed_and_clear_log,
        observe=lambda: (torch.get_rng_state(), list(LOG), torch.is_grad_enabled()),
    )
    assert COUNTERS["rerun"] == reruns + 1
    _compare_with_torch_compile(_branch_with_effects, 0, *_positive())


def test_a_miss_before_a_break_acts_as_eager():
    reruns = COUNTERS["rerun"]
    check_breaks(
        _branch_then_print,
        None,
        graphs=2,
        breaks=1,
        calls=[lambda: (torch.rand(3),), lambda: (-torch.rand(3),)],
        setup=_seed,
        observe=_rng_state,
    )
    assert COUNTERS["rerun"] == reruns + 1
    _compare_with_torch_compile(_branch_then_print, 1, torch.rand(3))


def test_gradients_after_a_miss_are_eager_gradients():
    compiled, counter = compile_counted(_branch_with_effects)
    for make in (_positive, _negative_leaf, _positive):
        x, out = make()
        x_eager = x.detach().clone().requires_grad_()
        _seed()
        result, n = compiled(x, out)
        _seed()
        expected, n_eager = _branch_with_effects(x_eager, [])
        result.sum().backward()
        expected.sum().backward()
        assert_same(x.grad, x_eager.grad)
        assert (n, result.grad_fn is None) == (n_eager, expected.grad_fn is None)
    assert counter.frame_count == 1


def test_a_miss_is_logged(caplog):
    compiled, _ = compile_counted(_branch_with_effects)
    compiled(*_positive())
    with caplog.at_level("INFO", logger="bytegraph.speculation"):
        compiled(*_negative())
    (message,) = [r.getMessage() for r in caplog.records if r.name == "bytegraph.speculation"]
    assert "speculation missed in _branch_with_effects" in message
    assert "miss 1 of 2" in message and "if y.sum() > 0:" in message


def test_after_the_miss_limit_the_branch_breaks():
    compiled, counter = compile_counted(_branch_with_effects)
    compiled(*_positive())
    for _ in range(2):  # two misses: the site is no longer speculated on
        compiled(*_negative())
    assert counter.frame_count == 1
    (site,) = [s for s in speculation.sites() if s.code is _branch_with_effects.__code__]
    assert (site.hits, site.misses, site.disabled) == (1, 2, True)
    report = bytegraph.explain(_branch_with_effects)(*_negative())
    assert report.graph_break_count == 1
    assert "data_dependent" in str(report.break_reasons[0])
    x, out = _negative()
    compiled(x, out)  # the guard of the speculating variant fails: a new trace
    assert counter.frame_count > 1 and out == ["negative"]
    assert site.misses == 2


def test_the_miss_limit_is_a_setting():
    with bytegraph.config.patch(speculation_miss_limit=1):
        compiled, counter = compile_counted(_branch_with_effects)
        compiled(*_positive())
        compiled(*_negative())
        compiled(*_negative())
    assert counter.frame_count > 1  # one miss disabled it: the third call traced again


def test_speculation_can_be_turned_off():
    with bytegraph.config.patch(speculate=False):  # the default, for now
        check_breaks(_branch_with_effects, _positive, graphs=2, breaks=1, calls=1, setup=_seed)
    assert not [s for s in speculation.sites() if s.code is _branch_with_effects.__code__]


# -- what must not be speculated on ----------------------------------------------------------------


def _updates_input_then_branches(x):
    x.add_(1)  # a rerun would add again
    if x.sum() > 0:
        return x * 2
    return x * 3


def _branches_then_updates_input(x):
    if x.sum() > 0:
        y = x * 2
    else:
        y = x * 3
    x.mul_(2)  # the graph ends before it: the check guards only what comes before
    return y + x


def _draws_then_branches(x):
    noise = torch.randn(3)
    if (x + noise).sum() > 0:
        return x + torch.rand(3)
    return x - torch.rand(3)


@pytest.mark.parametrize(
    "fn,graphs,breaks",
    [
        (_updates_input_then_branches, 2, 1),
        (_branches_then_updates_input, 2, 1),
        (_draws_then_branches, 1, 0),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_a_rerun_never_repeats_what_eager_did_once(fn, graphs, breaks):
    calls = [lambda: (torch.rand(3),), lambda: (-torch.rand(3) - 2,), lambda: (torch.rand(3),)]
    check_breaks(
        fn, None, graphs=graphs, breaks=breaks, calls=calls[:1], setup=_seed, observe=_rng_state
    )
    compiled, _ = compile_counted(fn)
    for make in calls:  # the side changes: the input is changed once, the RNG state is eager's
        (x,) = make()
        x_eager = x.clone()
        _seed()
        expected = fn(x_eager)
        eager_rng = torch.get_rng_state()
        _seed()
        assert_same(compiled(x), expected)
        assert torch.equal(x, x_eager)
        assert torch.equal(torch.get_rng_state(), eager_rng)


def test_a_branch_after_an_in_place_update_of_an_input_is_not_speculated():
    check_breaks(_updates_input_then_branches, lambda: (torch.rand(3),), graphs=2, breaks=1)
    assert not [s for s in speculation.sites() if s.code is _updates_input_then_branches.__code__]
    _compare_with_torch_compile(_updates_input_then_branches, 1, torch.rand(3))


# -- other kinds of sites --------------------------------------------------------------------------


def _item_compared(x):
    if x.sum().item() > 0:
        return x + 1
    return x - 1


def _zero_dim_compared(x, y):
    a, b = x.sum(), y.sum()
    if a < b:
        return x * b
    return y * a


def _bool_called(x):
    positive = bool(x.max() > 0)
    if positive:
        return x.relu()
    return -x


def _and_or(x):
    s = x.sum()
    if s > 0 and x[0] < 0 or s < -1:
        return x.abs()
    return x


def _loop_with_a_break(x):
    total = x[0] * 0
    for i in range(len(x)):
        if x[i] < -0.5:  # the first such element ends the loop
            break
        total = total + x[i]
    while True:
        total = total * 0.5
        if total.abs() < 0.25:
            break
    return total


def _branch_in_a_callee(x):
    return _clamp_like(x) + _clamp_like(-x)


def _clamp_like(x):
    if x.mean() > 0:
        return x.clamp(max=1)
    return x.clamp(min=-1)


@pytest.mark.parametrize(
    "fn,arity",
    [
        (_item_compared, 1),
        (_zero_dim_compared, 2),
        (_bool_called, 1),
        (_and_or, 1),
        (_loop_with_a_break, 1),
        (_branch_in_a_callee, 1),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_each_kind_of_site_is_speculated_and_checked(fn, arity):
    gen = torch.Generator().manual_seed(3)
    inputs = [tuple(torch.randn(4, generator=gen) * 2 for _ in range(arity)) for _ in range(6)]
    report = bytegraph.explain(fn)(*inputs[0])
    assert (report.graph_count, report.graph_break_count) == (1, 0)
    _compare_with_torch_compile(fn, 0, *inputs[0])
    compiled, counter = compile_counted(fn)
    for args in inputs:  # both sides, in turn: hits, misses, then breaks
        assert_same(compiled(*args), fn(*[a.clone() for a in args]))


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_a_miss_under_autograd_backends_acts_as_eager(backend):
    compiled = bytegraph.compile(_item_compared, backend=backend)
    for sign in (1, -1, 1):
        x = (sign * torch.rand(4)).requires_grad_()
        x_eager = x.detach().clone().requires_grad_()
        result, expected = compiled(x), _item_compared(x_eager)
        assert_same(result, expected)
        result.sum().backward()
        expected.sum().backward()
        assert_same(x.grad, x_eager.grad)


# -- torch.distributions ---------------------------------------------------------------------------


def _sample_and_branch(loc, scale):
    d = torch.distributions.Normal(loc, scale, validate_args=True)
    x = d.rsample()
    if d.log_prob(x).sum() > -10:
        return x, d.entropy()
    return x * 0, d.entropy()


def test_distributions_with_validation_and_a_branch_are_one_graph():
    make = lambda: (torch.zeros(3), torch.ones(3))  # noqa: E731
    check_breaks(_sample_and_branch, make, graphs=1, breaks=0, setup=_seed, observe=_rng_state)
    _compare_with_torch_compile(_sample_and_branch, 0, *make())
    torch.distributions.Distribution.set_default_validate_args(True)  # undone by torch.compile


# -- reports ---------------------------------------------------------------------------------------


def test_explain_lists_the_speculated_sites():
    report = bytegraph.explain(_halve_until_small)(torch.tensor([3.0, -9.0, 0.5]))
    text = str(report)
    assert "Speculated branches" in text
    assert "while mask.any():" in text
    # 3.11 tests a ``while`` condition twice (before the loop and at its end): two sites, one line
    assert {s.lineno for s in report.speculated} == {_halve_until_small.__code__.co_firstlineno + 2}
    assert all((s.hits, s.misses) == (1, 0) for s in report.speculated)


def test_why_names_the_branch_that_missed_too_often():
    compiled, _ = compile_counted(_item_compared)
    compiled(torch.ones(3))
    for _ in range(2):
        compiled(-torch.ones(3))
    line = _item_compared.__code__.co_firstlineno + 1
    assert f"rejected by: ___speculating__item_compared_line{line}() == True" in str(
        bytegraph.why(compiled, -torch.ones(3))
    )


def test_the_compile_report_shows_the_speculated_sites():
    from bytegraph import report, trace_records

    compiled, _ = compile_counted(_halve_until_small)
    compiled(torch.tensor([3.0, -9.0, 0.5]))
    compiled(torch.tensor([300.0, 1.0]))  # another shape: a second trace at the same sites
    text = report.render(trace_records.in_process())
    assert "Speculated branches" in text and "while mask.any():" in text
    assert "2 hits, 0 misses" in text


# -- random programs whose branches change side between calls -------------------------------------

_CONDITIONS = [
    "y.sum() > {c}",
    "(y > {c}).any()",
    "(y < {c}).all()",
    "y.max().item() > {c}",
    "y.mean() < {c}",
    "bool(y.min() < {c})",
    "torch._is_any_true(y > {c})",
    "y[0] >= {c}",
]


def _statement(rng, depth: int, grad: bool) -> list[str]:
    cond = rng.choice(_CONDITIONS).format(c=round(rng.uniform(-1.5, 1.5), 2))
    kind = rng.choice(["if", "if", "while", "draw", "inplace", "effect", "assign"])
    if kind == "if" and depth < 2:
        body = _block(rng, depth + 1, grad)
        other = _block(rng, depth + 1, grad)
        return [f"if {cond}:", *body, "else:", *other]
    if kind == "while":
        k = f"k{depth}"
        return [
            f"{k} = 0",
            f"while {cond} and {k} < {rng.randint(1, 5)}:",
            "    y = y * 0.7 - 0.2",
            f"    {k} += 1",
            f"    out.append({k})",
        ]
    if kind == "draw":
        return ["y = y + torch.randn(y.shape) * 0.3"]
    if kind == "inplace" and not grad:
        return [rng.choice(["x.add_(0.25)", "z = y.clone()", "y = y.clone(); y.mul_(0.9)"])]
    if kind == "effect":
        return ["out.append(float(len(out)))", "STORE['n'] = STORE.get('n', 0) + 1"]
    return [f"y = {rng.choice(['y.sin() * 2', 'y - x', 'y * x + 1', 'y.flip(0)', 'y.cumsum(0)'])}"]


def _block(rng, depth: int, grad: bool) -> list[str]:
    lines = [line for _ in range(rng.randint(1, 3)) for line in _statement(rng, depth, grad)]
    return ["    " + line for line in lines]


STORE: dict = {}


def _random_program(seed: int):
    import random

    rng = random.Random(seed)
    grad = rng.random() < 0.4
    lines = ["def program(x, out):", "    y = x * 1.5", *_block(rng, 0, grad), "    return y"]
    for _ in range(rng.randint(1, 3)):
        lines[-1:-1] = _block(rng, 0, grad)
    source = "\n".join(lines) + "\n"
    namespace = {"torch": torch, "STORE": STORE}
    exec(compile(source, f"<speculation program {seed}>", "exec"), namespace)  # noqa: S102
    return namespace["program"], grad, source


def _run_program(fn, grad, source, seed, compiled) -> None:
    gen = torch.Generator().manual_seed(seed)
    for call in range(5):
        x = torch.randn(4, generator=gen) * (1 if call % 2 == 0 else -2)
        x_eager = x.clone()
        if grad:
            x.requires_grad_()
            x_eager.requires_grad_()
        results = []
        for run, arg in ((fn, x_eager), (compiled, x)):
            STORE.clear()
            _seed()
            out = []
            y = run(arg, out)
            rng = torch.get_rng_state()  # before the backward (aot_eager's redraws: not ours)
            if grad and y.requires_grad:
                y.sum().backward()
            results.append((y, out, dict(STORE), rng, arg.grad))
        (ey, eout, estore, erng, egrad), (y, out, store, rng, xgrad) = results
        context = f"call {call} of\n{source}"
        try:
            assert_same(y, ey)
            assert (out, store) == (eout, estore)
            assert torch.equal(rng, erng), "RNG state"
            assert torch.equal(x, x_eager), "input"
            assert (xgrad is None) == (egrad is None), "grad"
            if egrad is not None:
                assert_same(xgrad, egrad)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{context}") from None


@pytest.mark.parametrize("seed", range(60))
def test_random_programs_with_changing_branches_act_as_eager(seed):
    fn, grad, source = _random_program(seed)
    backend = "aot_eager" if seed % 3 == 2 else "eager"
    with bytegraph.config.patch(speculation_miss_limit=1 + seed % 3):
        _run_program(fn, grad, source, seed, bytegraph.compile(fn, backend=backend))


def test_random_programs_speculate_miss_and_break():
    reruns = COUNTERS["rerun"]
    for seed in range(8):
        fn, grad, source = _random_program(seed)
        _run_program(fn, grad, source, seed, bytegraph.compile(fn, backend="eager"))
    sites = speculation.sites()
    assert sum(s.hits for s in sites) > 0 and sum(s.misses for s in sites) > 0
    assert any(s.disabled for s in sites) and COUNTERS["rerun"] > reruns


def test_misses_are_a_log_artifact(capsys):
    compiled, _ = compile_counted(_item_compared)
    bytegraph.set_logs("speculation")
    try:
        compiled(torch.ones(3))
        compiled(-torch.ones(3))
    finally:
        bytegraph.set_logs("")
    assert "[bytegraph.speculation] speculation missed in _item_compared" in capsys.readouterr().err
