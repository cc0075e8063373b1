"""Tensor idioms of everyday code: views mutated in place, boolean masks, dtype promotion with
Python scalars, ``torch.Generator``, ``.grad`` access, ``nn.Parameter`` arithmetic, shape queries
and the list-of-tensor operations (``unbind``/``chunk``/``split``) that hand tensors back to Python.
"""

from __future__ import annotations

import torch
from corpus.harness import Setup, case


def _t(*shape, **kw):
    return lambda: (torch.randn(*shape, **kw),)


@case("tensors", graphs=1, breaks=0, tc_breaks=0)
def view_mutated_in_place():
    def fn(x):
        y = x.clone()
        v = y.view(-1)
        v.add_(1)
        y[0, 0] = 100.0
        return y, v

    return Setup(fn, _t(2, 3))


@case("tensors", graphs=1, breaks=0, tc_breaks=0)
def input_view_mutated_in_place():
    def fn(x):
        x[:, 0].mul_(2)
        x.transpose(0, 1)[1].zero_()
        return x.sum()

    return Setup(fn, _t(3, 3))


@case("tensors", graphs=1, breaks=0, tc_breaks=0)
def boolean_mask_where_and_fill():
    def fn(x):
        mask = x > 0
        clipped = torch.where(mask, x, torch.zeros_like(x))
        filled = x.masked_fill(~mask, -1.0)
        return clipped, filled, mask.sum(), mask.any()

    return Setup(fn, _t(4, 3))


@case("tensors", graphs=1, breaks=0, tc_breaks=0)
def boolean_mask_assignment():
    def fn(x):
        y = x.clone()
        y[y < 0] = 0.0
        return y

    return Setup(fn, _t(5))


@case("tensors", graphs=1, breaks=0, tc_breaks=1)
def boolean_mask_indexing():
    def fn(x):
        return x[x > 0].sum() * 2

    return Setup(fn, _t(6))


@case("tensors", graphs=1, breaks=0, tc_breaks=0)
def dtype_promotion_with_python_scalars():
    def fn(i, f):
        return (
            i * 2,
            i * 2.5,
            i / 2,
            i // 2,
            i + True,
            f * 2,
            (i > 1) + 1,
            torch.tensor(3) * 1.5,
            f.half() + 1.0,
            i**2,
        )

    return Setup(fn, lambda: (torch.arange(6).reshape(2, 3), torch.randn(2, 3)))


@case("tensors", graphs=1, breaks=0, tc_breaks=0)
def int_tensor_division_modes():
    def fn(a):
        return (
            torch.div(a, 3, rounding_mode="floor"),
            torch.div(a, 3, rounding_mode="trunc"),
            a % 3,
            torch.remainder(a, -3),
        )

    return Setup(fn, lambda: (torch.arange(-5, 5),))


@case(
    "tensors",
    graphs=1,
    breaks=2,
    tc_breaks=3,
    why="a torch.Generator made in the function is not traced: making it and seeding it break "
    "(as in torch.compile); the draw from it is made before the graph of the add",
)
def generator_seeded_random():
    def fn(x):
        g = torch.Generator().manual_seed(7)
        noise = torch.randn(x.shape, generator=g)
        return x + noise

    return Setup(fn, _t(3))


@case("tensors", graphs=1, breaks=0, tc_breaks=0)
def global_rng_random():
    def fn(x):
        return x + torch.rand_like(x), torch.randint(0, 10, (3,))

    return Setup(fn, _t(3))


@case("tensors", graphs=1, breaks=0, tc_breaks=0)
def grad_attribute_access():
    w = torch.nn.Parameter(torch.randn(3))
    (w * 2).sum().backward()

    def fn(x):
        g = w.grad
        if g is None:
            return x
        return x - 0.1 * g, w.grad.shape, w.requires_grad, x.grad is None

    return Setup(fn, _t(3), observe=lambda: w)


@case("tensors", graphs=1, breaks=0, tc_breaks=0)
def parameter_arithmetic():
    p = torch.nn.Parameter(torch.ones(3))

    def fn(x):
        y = p * 2 + x
        z = p.detach() + 1
        return y, z, isinstance(p, torch.nn.Parameter), p.data.sum()

    return Setup(fn, _t(3, requires_grad=True), observe=lambda: p)


@case("tensors", graphs=1, breaks=0, tc_breaks=0)
def parameter_updated_under_no_grad():
    p = torch.nn.Parameter(torch.ones(3))

    def fn(x):
        with torch.no_grad():
            p.add_(x)
        return p * 2

    return Setup(fn, _t(3), observe=lambda: p)


@case("tensors", graphs=1, breaks=0, tc_breaks=0)
def shape_queries():
    def fn(x):
        b, c, *rest = x.shape
        return (
            x.reshape(b, -1),
            x.ndim,
            x.numel(),
            x.size(-1),
            x.dim() == 3,
            rest,
            x[0].T.shape,
            x.mT.shape,
            len(x),
        )

    return Setup(fn, _t(2, 3, 4))


@case("tensors", graphs=1, breaks=0, tc_breaks=0)
def tensor_list_operations():
    def fn(x):
        rows = x.unbind(0)
        halves = x.chunk(2, dim=1)
        parts = torch.split(x, [1, 3], dim=1)
        return torch.stack(list(reversed(rows))), torch.cat(halves[::-1], 1), len(parts)

    return Setup(fn, _t(3, 4))


@case("tensors", graphs=1, breaks=0, tc_breaks=0)
def tensor_from_python_values():
    def fn(x):
        n = x.shape[0]
        idx = torch.tensor([i * 2 for i in range(n)])
        full = torch.full((n,), 1.5)
        ar = torch.arange(n, dtype=torch.float32)
        return x + ar, idx, full, torch.zeros(n, dtype=torch.long).dtype

    return Setup(fn, _t(3))


@case("tensors", graphs=1, breaks=0, tc_breaks=0)
def clamp_with_python_infinities():
    def fn(x):
        return x.clamp(min=-float("inf"), max=0.5), torch.nan_to_num(x / 0.0, posinf=1.0)

    return Setup(fn, _t(4))


@case("tensors", graphs=1, breaks=0, tc_breaks=0)
def index_put_with_tensor_indices():
    def fn(x, idx):
        y = x.clone()
        y[idx] = -1.0
        y.index_add_(0, idx, torch.ones(len(idx), x.shape[1]))
        return y, x[idx, 0]

    return Setup(fn, lambda: (torch.randn(5, 2), torch.tensor([0, 3])))


@case("tensors", graphs=1, breaks=0, tc_breaks=0)
def type_conversions():
    def fn(x):
        return x.to(torch.float64), x.type_as(torch.ones(1, dtype=torch.int32)), x.long(), x.bool()

    return Setup(fn, _t(3))


# ``requires_grad_()`` on a tensor the function made runs in Python (a graph AOTAutograd compiles
# would give ``w`` back without the flag: tests/tracer/test_new_autograd_leaves.py), as
# torch.compile breaks there too
@case("tensors", graphs=2, breaks=1, tc_breaks=1)
def requires_grad_on_fresh_tensor():
    def fn(x):
        w = torch.ones(3).requires_grad_()
        y = (w * x).sum()
        return y, w.requires_grad, y.requires_grad, x.detach().requires_grad

    return Setup(fn, _t(3))


@case("tensors", graphs=1, breaks=0, tc_breaks=0)
def expand_and_contiguous():
    def fn(x):
        e = x.unsqueeze(0).expand(3, -1)
        return e.contiguous(), e.is_contiguous(), e.stride()

    return Setup(fn, _t(4))


@case("tensors", graphs=1, breaks=0, tc_breaks=0)
def complex_tensor_ops():
    def fn(x):
        z = torch.complex(x, x * 2)
        return z.abs(), z.real, z.conj().imag, z.dtype

    return Setup(fn, _t(3))


@case("tensors", graphs=1, breaks=0, tc_breaks=0)
def in_place_on_input_and_return_alias():
    def fn(x):
        x.add_(1)
        return x

    return Setup(fn, _t(3))


@case(
    "tensors",
    graphs=1,
    breaks=1,
    tc_breaks=2,
    retraces=1,
    why="tolist() reads the tensor's data into Python (item() is a captured scalar); the resumed "
    "code is specialised on the values read (torch.compile retraces too)",
)
def item_and_tolist():
    def fn(x):
        return x.sum().item() * 2, x.tolist()

    return Setup(fn, _t(3))


@case("tensors", graphs=1, breaks=0, tc_breaks=0)
def validation_raise_on_tensor_data():
    # the branch's other side only raises: a check deferred past the graph (deferred_checks.py)
    def fn(x):
        if torch.isnan(x).any():
            raise ValueError(f"NaN in {x}")
        assert (x.abs() < 1e6).all(), "out of range"
        return x * 2

    return Setup(fn, _t(4))


@case("tensors", graphs=1, breaks=0, tc_breaks=2)
def distribution_validated_log_prob():
    def fn(x):
        d = torch.distributions.Normal(x, x.abs() + 1, validate_args=True)
        return d.log_prob(x + 0.5), d.entropy()

    return Setup(fn, _t(4))
