"""A branch on tensor data whose other side only raises (a validation check) is deferred
to after the graph (``tracer/breaks/deferred_checks.py``): one graph, no break, and a failed check
reruns the call in Python, which raises exactly what eager raises. torch.distributions validates
every distribution it makes this way (``validate_args``, on by default; torch.compile turns it off
for the whole process when it first compiles, so these tests ask for it explicitly)."""

import copy

import pytest
import torch
from bytegraph.tracer.driver import COUNTERS
from difftest import assert_same, check_breaks, compile_counted
from dynamo_baseline import assert_no_more_breaks


def _raises_on_bad_values(x):
    y = x * 2
    if (y < -100).any():
        raise ValueError(f"bad values: {y}")
    return y + 1


# an ``assert`` statement as written (pytest rewrites those in test files into code calling
# ``locals()``, whose message names object addresses): compiled from source here
_namespace: dict = {}
exec(  # noqa: S102
    compile(
        "def _assert_statement(x):\n"
        "    assert (x >= 0).all(), 'negative input'\n"
        "    return x.sqrt()\n",
        __file__,
        "exec",
    ),
    _namespace,
)
_assert_statement = _namespace["_assert_statement"]


def _torch_assert(x):
    torch._assert((x.abs() < 1e6).all(), "too large")
    return x * 3


def _caught(x):
    try:
        if (x < -100).any():
            raise ValueError("caught")
        y = x + 1
    except ValueError:
        y = x * 0
    return y


CASES = [
    (_raises_on_bad_values, lambda: torch.randn(4), lambda: torch.full((4,), -60.0)),
    (_assert_statement, lambda: torch.rand(4), lambda: -torch.rand(4) - 1),
    (_torch_assert, lambda: torch.randn(4), lambda: torch.full((4,), 1e7)),
    (_caught, lambda: torch.randn(4), lambda: torch.full((4,), -200.0)),
]
#: where torch.compile compiles no graph: no baseline to compare the breaks with
NO_BASELINE = {
    _caught: "torch.compile runs the call in Python: a branch on data inside a try block",
}


def _outcome(fn, x):
    try:
        return fn(x), None
    except Exception as e:  # noqa: BLE001 (compared with the compiled run's)
        return None, e


@pytest.mark.parametrize("fn,good,bad", CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_a_validation_branch_is_one_graph_and_a_failed_check_acts_as_eager(fn, good, bad):
    compiled, counter, _ = check_breaks(fn, lambda: (good(),), graphs=1, breaks=0)
    graphs, breaks = assert_no_more_breaks(0, fn, good(), baseline_missing=NO_BASELINE.get(fn, ""))
    reruns = COUNTERS["rerun"]
    for _ in range(2):  # the same graph serves the failing input: no new trace
        x = bad()
        expected, eager_error = _outcome(fn, x.clone())
        actual, error = _outcome(compiled, x)
        if eager_error is not None:
            assert type(error) is type(eager_error) and str(error) == str(eager_error)
        else:
            assert error is None
            assert_same(actual, expected)
    assert counter.frame_count == 1
    assert COUNTERS["rerun"] == reruns + 2


def _mutates_input_then_checks(x):
    x.add_(1)  # a rerun would add again: the branch breaks, as before
    if (x < -100).any():
        raise ValueError("bad")
    return x * 2


def _checks_then_mutates_input(x):
    if (x < -100).any():
        raise ValueError("bad")
    y = x * 2
    x.add_(1)  # the graph ends before it: the check guards only the pure part
    return y + x


def _checks_then_draws(x):
    noise = torch.randn(3)  # the default generator's state is saved before the graph, put back
    if (x < -100).any():  # before a rerun
        raise ValueError("bad")
    return x + noise + torch.rand(3)


def _module_made_then_checks(x):
    layer = torch.nn.Linear(3, 3)  # built before the graph (its init draws random numbers)
    if (x < -100).any():
        raise ValueError("bad")
    return layer(x)


def _checks_then_module_made(x):
    if (x < -100).any():
        raise ValueError("bad")
    return torch.nn.Linear(3, 3)(x)  # a break before it: a rerun would build it twice


@pytest.mark.parametrize(
    "fn,graphs,breaks",
    [
        (_mutates_input_then_checks, 2, 1),
        (_checks_then_mutates_input, 2, 1),
        (_checks_then_draws, 1, 0),
        (_module_made_then_checks, 2, 1),
        (_checks_then_module_made, 2, 1),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_what_a_rerun_would_repeat_is_never_run_before_a_check(fn, graphs, breaks):
    def seeded():
        torch.manual_seed(0)

    def observe():
        return torch.get_rng_state()

    check_breaks(
        fn, lambda: (torch.randn(3),), graphs=graphs, breaks=breaks, setup=seeded, observe=observe
    )
    compiled, _ = compile_counted(fn)
    compiled(torch.randn(3))
    for _ in range(2):  # failing: the input changed once, as in eager; the RNG state is eager's
        x = torch.full((3,), -200.0)
        eager_x = x.clone()
        seeded()
        _, eager_error = _outcome(fn, eager_x)
        eager_rng = torch.get_rng_state()
        seeded()
        _, error = _outcome(compiled, x)
        assert type(error) is type(eager_error) and str(error) == str(eager_error)
        assert torch.equal(x, eager_x)
        assert torch.equal(torch.get_rng_state(), eager_rng)


# -- torch.distributions ---------------------------------------------------------------------------


def _normal_log_prob(x, scale):
    d = torch.distributions.Normal(x, scale, validate_args=True)
    return d.log_prob(x + 1), d.entropy(), d.mean


def _independent_log_prob(x, scale):
    n = torch.distributions.Normal(x, scale, validate_args=True)
    return torch.distributions.Independent(n, 1, validate_args=True).log_prob(x)


def _categorical(x, scale):
    d = torch.distributions.Categorical(logits=x * scale, validate_args=True)
    return d.log_prob(torch.tensor(1)), d.entropy()


@pytest.mark.parametrize(
    "fn", [_normal_log_prob, _independent_log_prob, _categorical], ids=lambda f: f.__name__
)
def test_distributions_validate_in_one_graph(fn):
    make = lambda: (torch.randn(3), torch.rand(3) + 0.5)  # noqa: E731
    compiled, counter, _ = check_breaks(fn, make, graphs=1, breaks=0)
    missing = "" if fn is not _independent_log_prob else "torch.compile runs the call in Python"
    assert_no_more_breaks(0, fn, *make(), baseline_missing=missing)
    torch.distributions.Distribution.set_default_validate_args(True)  # undone by torch.compile


def test_an_invalid_distribution_parameter_raises_as_eager():
    compiled, counter = compile_counted(_normal_log_prob)
    compiled(torch.randn(3), torch.rand(3) + 0.5)
    bad = (torch.randn(3), -torch.rand(3) - 0.5)  # a negative scale
    with pytest.raises(ValueError) as eager:
        _normal_log_prob(*copy.deepcopy(bad))
    with pytest.raises(ValueError) as actual:
        compiled(*bad)
    assert str(actual.value) == str(eager.value)
    assert "to satisfy the constraint GreaterThan(lower_bound=0.0)" in str(actual.value)
    assert counter.frame_count == 1


# -- ``obj.__dict__`` of an object made in the trace (Distribution.__init__ reads it) --------------


class _Box:
    def __init__(self, v):
        self.v = v


def _instance_dict_is_live(x):
    b = _Box(x)
    d = b.__dict__
    before = "w" in d
    b.w = x + 1
    return before, "w" in d, sorted(d), d["w"] * 2, len(d)


def _instance_dict_escapes(x):
    b = _Box(x + 1)
    return b, b.__dict__


def _instance_dict_written(x):
    b = _Box(x)
    b.__dict__["w"] = x * 2  # a write through it: a store of the attribute, as CPython's
    return b.w + b.v


def test_an_instance_dict_read_in_the_trace_stays_live():
    check_breaks(_instance_dict_is_live, lambda: (torch.randn(2),), graphs=1, breaks=0)


def test_an_escaping_instance_dict_is_the_objects_own():
    compiled, _ = compile_counted(_instance_dict_escapes)
    b, d = compiled(torch.randn(2))
    assert d is b.__dict__ and list(d) == ["v"]


def test_a_write_through_an_instance_dict_is_a_store():
    check_breaks(_instance_dict_written, lambda: (torch.randn(2),), graphs=1, breaks=0)
