"""Torch.distributions in a compiled function. Distributions are Python classes: the trace
runs their ``__init__`` and methods like user code (``builder.INLINED_TORCH_MODULES``), and their
argument and sample validation (``validate_args``, on by default) becomes deferred checks
(``tracer/breaks/deferred_checks.py``): one graph where torch.compile breaks on each check or turns
validation off for the whole process (it does when it first compiles: each test turns it back on).
Values, dtypes, the RNG state after sampling and break counts are compared with eager and with
torch.compile's."""

import pytest
import torch
from difftest import assert_same, check_breaks, compile_counted
from dynamo_baseline import assert_no_more_breaks

import bytegraph

D = torch.distributions


def _normal(x):
    d = D.Normal(x, x.abs() + 0.5)
    return d.log_prob(x + 0.1), d.entropy(), d.cdf(x), d.mean, d.stddev


def _bernoulli(x):
    d = D.Bernoulli(logits=x)
    return d.log_prob((x > 0).float()), d.entropy(), d.probs


def _categorical(x):
    d = D.Categorical(logits=x.reshape(2, 3))
    return d.log_prob(torch.tensor([0, 2])), d.entropy(), d.probs


def _uniform(x):
    return D.Uniform(x - 1, x + 1).log_prob(x)


def _beta(x):
    return D.Beta(x.abs() + 1, 2.0).log_prob(torch.full((6,), 0.3))


def _gamma(x):
    d = D.Gamma(x.abs() + 1, 1.5)
    return d.log_prob(x.abs() + 0.5), d.mean, d.variance


def _laplace(x):
    d = D.Laplace(x, 1.0)
    return d.cdf(x), d.log_prob(x * 2)


def _independent(x):
    return D.Independent(D.Normal(x, torch.ones(6)), 1).log_prob(x)


def _kl(x):
    return D.kl_divergence(D.Normal(x, 1.0), D.Normal(x * 0, 2.0))


def _transformed(x):
    d = D.TransformedDistribution(D.Normal(x, 1.0), [D.transforms.ExpTransform()])
    return d.log_prob(x.exp())


def _multivariate_normal(x):
    d = D.MultivariateNormal(x[:3], torch.eye(3) * 2)
    return d.log_prob(x[3:]), d.entropy()


def _rsample(x):
    d = D.Normal(x, x.abs() + 1)
    return d.rsample() * 2, d.sample((2,)), d.log_prob(x)


DISTRIBUTIONS = [
    _normal,
    _bernoulli,
    _categorical,
    _uniform,
    _beta,
    _gamma,
    _laplace,
    _independent,
    _kl,
    _transformed,
    _multivariate_normal,
    _rsample,
]


@pytest.fixture(autouse=True)
def _validating():
    torch.distributions.Distribution.set_default_validate_args(True)
    yield
    torch.distributions.Distribution.set_default_validate_args(True)


def _seeded():
    torch.manual_seed(0)


#: (graphs, breaks) where they are not (1, 0); torch.compile breaks at the same places, and also
#: on ``_KL_MEMOIZE[type(p), type(q)]`` (a global dict keyed by pairs of classes, filled on a miss)
BREAKING = {
    # ``_Symmetric.check``: ``if not square_check.all(): return square_check``, a branch on tensor
    # data whose other side returns (not a validation check that raises)
    _multivariate_normal: (2, 1),
}
#: where torch.compile compiles no graph: no baseline to compare the breaks with
NO_BASELINE = {
    _transformed: "torch.compile runs the call in Python (a skipped function, a branch on data, "
    "a reconstruction failure)",
}


@pytest.mark.parametrize("fn", DISTRIBUTIONS, ids=lambda f: f.__name__.strip("_"))
@bytegraph.config.patch(speculate=False)  # the counts above: validation checks deferred only
def test_a_distribution_with_validation(fn):
    make = lambda: (torch.randn(6),)  # noqa: E731
    graphs, breaks = BREAKING.get(fn, (1, 0))
    check_breaks(fn, make, graphs=graphs, breaks=breaks, setup=_seeded, observe=torch.get_rng_state)
    assert_no_more_breaks(breaks, fn, *make(), baseline_missing=NO_BASELINE.get(fn, ""))


@pytest.mark.parametrize("fn", list(BREAKING), ids=lambda f: f.__name__.strip("_"))
@bytegraph.config.patch(speculate=True)
def test_a_distribution_with_validation_speculating(fn):
    """With speculation, a branch such as ``_Symmetric.check``'s may be followed instead of broken
    on (torch 2.11 takes no effectful step before it; 2.13 and 2.15 do, and it breaks): the result
    is eager's, and there are never more breaks than without speculation."""
    x = torch.randn(6)
    torch.manual_seed(0)
    expected = fn(x)
    torch.manual_seed(0)
    report = bytegraph.explain(fn)(x)
    torch.manual_seed(0)
    assert_same(bytegraph.compile(fn)(x), expected)
    assert report.graph_break_count <= BREAKING[fn][1]


def test_invalid_parameters_and_samples_raise_as_eager():
    def log_prob(loc, scale, value):
        return D.Normal(loc, scale).log_prob(value)

    compiled, counter = compile_counted(log_prob)
    compiled(torch.zeros(3), torch.ones(3), torch.zeros(3))
    for bad in (
        (torch.zeros(3), -torch.ones(3), torch.zeros(3)),  # a parameter outside its constraint
        (torch.zeros(3), torch.ones(3), torch.full((3,), float("nan"))),  # a sample outside
    ):
        with pytest.raises(ValueError) as eager:
            log_prob(*bad)
        with pytest.raises(ValueError) as actual:
            compiled(*bad)
        assert str(actual.value) == str(eager.value)
    assert counter.frame_count == 1
