"""Differential tests: tensor attributes and methods, ``torch.*`` and ``torch.nn.functional.*``
calls, indexing and slicing of tensors, and ops returning several tensors."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F
from difftest import assert_same, check, check_breaks, compile_counted

import bytegraph

UNARY_METHODS = [
    "relu",
    "sigmoid",
    "tanh",
    "exp",
    "abs",
    "neg",
    "sin",
    "cos",
    "floor",
    "ceil",
    "round",
    "sign",
    "square",
    "t",
    "flatten",
    "clone",
    "contiguous",
    "float",
    "half",
]


@pytest.mark.parametrize("name", UNARY_METHODS)
def test_unary_method(name):
    def fn(x):
        return getattr(x, name)()

    check(fn, torch.randn(3, 4))


def test_shape_dtype_device_ndim_attributes():
    def fn(x):
        return x.shape, x.dtype, x.device, x.ndim, x.shape[1] * x.ndim + x

    check(fn, torch.randn(2, 3))


def test_transpose_attribute_t_upper():
    def fn(x):
        return x.T @ x, x.mT.shape

    check(fn, torch.randn(3, 2))


def test_size_and_dim_methods():
    def fn(x):
        return x.view(x.size(0) * x.size(1), -1), x.dim(), x.numel(), x.size()

    check(fn, torch.randn(2, 3, 4))


def test_requires_grad_and_is_floating_point():
    def fn(x):
        if x.requires_grad and x.is_floating_point():
            return x * 2
        return x + 1

    check(fn, torch.randn(3, requires_grad=True))


def test_reductions_with_kwargs():
    def fn(x):
        return x.sum(dim=1, keepdim=True), x.mean(0), x.amax(-1), x.std(), x.norm()

    check(fn, torch.randn(3, 4))


def test_view_reshape_permute_expand():
    def fn(x):
        y = x.view(2, 6).reshape(3, 4).permute(1, 0)
        return y.unsqueeze(0).expand(2, 4, 3).squeeze(), x.flatten(1)

    check(fn, torch.randn(3, 4))


def test_method_with_shape_args_from_tensor():
    def fn(x, y):
        return x.reshape(y.shape), y.new_zeros(x.shape[0]), x.view(*y.shape)

    check(fn, torch.randn(6), torch.randn(2, 3))


def test_type_conversions_with_dtype():
    def fn(x):
        return x.to(torch.float64), x.to(dtype=torch.int32), x.type(torch.float16), x.long()

    check(fn, torch.randn(4) * 10)


def test_to_same_device():
    def fn(x, y):
        return x.to(y.device) + y

    check(fn, torch.randn(2), torch.randn(2))


def test_chunk_split_unbind():
    def fn(x):
        a, b = x.chunk(2)
        c, d, e = x.split([1, 1, 2])
        rows = x.unbind(0)
        return a + b, c * 2, d, e, rows[-1]

    check(fn, torch.randn(4, 3))


def test_max_with_dim_returns_named_tuple():
    def fn(x):
        values, indices = x.max(dim=1)
        result = torch.min(x, 0)
        return values, indices, result.values, result.indices

    check(fn, torch.randn(3, 4))


def test_topk_and_sort():
    def fn(x):
        top = x.topk(2)
        vals, idx = torch.sort(x, descending=True)
        return top.values, top.indices, vals, idx

    check(fn, torch.randn(5))


def test_index_with_int_and_slices():
    def fn(x):
        return x[0], x[1:], x[:, -1], x[::2, 1:3], x[..., 0], x[None, 1]

    check(fn, torch.randn(4, 5))


def test_index_with_tensor_mask_and_indices():
    def fn(x, idx):
        return x[idx], x[:, idx]

    check(fn, torch.randn(4, 4), torch.tensor([0, 2]))


def test_index_with_list_of_ints():
    def fn(x):
        return x[[0, 2]]

    check(fn, torch.randn(4, 2))


def test_setitem_on_clone():
    def fn(x):
        y = x.clone()
        y[0] = 5.0
        y[1:, 0] = x[1:, 1]
        return y

    check(fn, torch.randn(3, 3))


def test_torch_functions():
    def fn(x, y):
        stacked = torch.stack((x, y), dim=1)
        return torch.cat([x, y]), stacked, torch.where(x > 0, x, y), torch.maximum(x, y)

    check(fn, torch.randn(3), torch.randn(3))


def test_torch_factories_with_shape_and_dtype():
    def fn(x):
        z = torch.zeros(x.shape, dtype=x.dtype)
        o = torch.ones_like(x)
        a = torch.arange(x.shape[0])
        f = torch.full((2,), 3.0)
        e = torch.eye(2)
        return x + z + o, a, f, e

    check(fn, torch.randn(3))


def test_torch_einsum_and_matmul():
    def fn(a, b):
        return torch.einsum("ij,jk->ik", a, b), torch.matmul(a, b), torch.mm(a, b), a @ b

    check(fn, torch.randn(2, 3), torch.randn(3, 4))


def test_functional_activations():
    def fn(x):
        return F.relu(x), F.gelu(x), F.softmax(x, dim=-1), F.leaky_relu(x, 0.2), F.silu(x)

    check(fn, torch.randn(2, 5))


def test_functional_linear_and_layer_norm():
    def fn(x, w, b):
        h = F.linear(x, w, b)
        return F.layer_norm(h, (h.shape[-1],))

    check(fn, torch.randn(2, 3), torch.randn(4, 3), torch.randn(4))


def test_functional_conv2d():
    def fn(x, w):
        return F.conv2d(x, w, padding=1)

    check(fn, torch.randn(1, 2, 5, 5), torch.randn(3, 2, 3, 3))


def test_functional_with_keyword_dim():
    def fn(x):
        return F.log_softmax(x, dim=1), F.normalize(x, p=2.0, dim=0)

    check(fn, torch.randn(3, 4))


def test_functional_dropout_eval():
    def fn(x):
        return F.dropout(x, p=0.5, training=False)

    check(fn, torch.randn(3, 4))


def test_torch_nn_functional_via_torch_namespace():
    def fn(x):
        return torch.nn.functional.relu(x) + torch.sigmoid(x)

    check(fn, torch.randn(3))


def test_tensor_method_chain():
    def fn(x):
        return x.abs().add(1).log().mul(2).clamp(min=0.1, max=3.0)

    check(fn, torch.randn(4))


def test_tensor_method_with_tensor_argument():
    def fn(x, y):
        return x.add(y, alpha=2), x.where(x > 0, y), x.masked_fill(y > 0, 0.0)

    check(fn, torch.randn(4), torch.randn(4))


def test_inplace_methods_on_intermediate():
    def fn(x):
        y = x + 0
        y.relu_()
        y.clamp_(max=0.5)
        y.zero_() if False else y.mul_(3)
        return y

    check(fn, torch.randn(5))


def test_scalar_tensor_argument_dtype():
    def fn(x):
        return x.sum(dtype=torch.float64), torch.tensor(3.0) * x

    check(fn, torch.randn(3))


def test_tensor_to_list_of_rows_via_iteration():
    def fn(x):
        a, b = x
        return a - b

    check(fn, torch.randn(2, 3))


def test_tensor_len_and_shape_loop():
    def fn(x):
        out = x
        for d in range(x.dim()):
            out = out.flip(d)
        return out

    check(fn, torch.randn(2, 3))


def test_torch_dtype_and_device_constants():
    def fn(x):
        return x.to(torch.float64) * torch.finfo(torch.float32).eps, x.new_ones(2, device=x.device)

    check(fn, torch.randn(2))


def test_is_grad_enabled_query():
    def fn(x):
        if torch.is_grad_enabled():
            return x + 1
        return x - 1

    check(fn, torch.randn(2))


def test_random_ops_shapes_only():
    def fn(x):
        return torch.zeros_like(x).shape, torch.empty(2, 3).shape, x * 2

    check(fn, torch.randn(2))


def test_requires_grad_propagates():
    def fn(x, w):
        return (x @ w).sum()

    check(fn, torch.randn(2, 3), torch.randn(3, 1, requires_grad=True))


def test_parameter_in_closure():
    w = torch.nn.Parameter(torch.randn(3))

    def fn(x):
        return x * w

    check(fn, torch.randn(3))


def test_module_call_inlined():
    lin = torch.nn.Linear(3, 2)

    def fn(x):
        return lin(x).relu()

    check(fn, torch.randn(4, 3))


def test_sequential_module_call():
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))

    def fn(x):
        return model(x)

    check(fn, torch.randn(2, 3))


def test_unbound_tensor_methods():
    def fn(x, y):
        return torch.Tensor.add(x, y, alpha=2), torch.Tensor.relu(x), torch.Tensor.sum(y, dim=0)

    check(fn, torch.randn(3), torch.randn(3))


# -- Tensor.new: a torch.Size gives sizes, a tuple or list gives data ------------------------------
# torch.compile 2.13 compiles each of these in one graph, no break (``torch._dynamo.explain``).
NEW_FORMS = {
    "size()": lambda x, y: x.new(y.size()),
    "shape": lambda x, y: x.new(y.shape),
    "sliced shape": lambda x, y: x.new(y.shape[1:]),
    "torch.Size": lambda x, y: x.new(torch.Size((2, 3))),
    "Size with device": lambda x, y: x.new(y.size(), device="cpu"),
    "ints": lambda x, y: x.new(2, 3),
    "one int": lambda x, y: x.new(3),
    "starred sizes": lambda x, y: x.new(*y.size()),
    "tuple data": lambda x, y: x.new((2, 3)),
    "list data": lambda x, y: x.new([2.5, 1]),
    "empty list": lambda x, y: x.new([]),
    "no args": lambda x, y: x.new(),
}


@pytest.mark.parametrize("form", list(NEW_FORMS))
def test_tensor_new_takes_sizes_or_data_as_eager(form):
    fn = NEW_FORMS[form]
    x, y = torch.ones(2, dtype=torch.float64), torch.ones(3, 5)
    compiled, counter = compile_counted(fn)
    for _ in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a fallback to Python warns
            got = compiled(x, y)
        want = fn(x, y)
        assert (got.shape, got.dtype, got.device) == (want.shape, want.dtype, want.device)
        if form.endswith("data"):  # ``new(sizes)`` is uninitialised: only data is compared
            assert_same(got, want)
    assert counter.frame_count == 1


def test_tensor_new_of_a_tensor_is_an_alias():
    def fn(x, y):
        z = x.new(y)
        z.add_(1)
        return z.size() == y.size(), z

    check_breaks(fn, lambda: (torch.ones(2), torch.zeros(3, 5)), graphs=1, breaks=0)


def _types_of_tensor_methods(x):
    import types

    return (
        x + 1,
        type(x.add),  # a C method
        type(x.split),  # defined in Python by torch.Tensor: a bound method
        type(x.__len__),
        isinstance(x.mul, types.BuiltinMethodType),
        callable(x.mul),
    )


def test_type_of_a_tensor_method_is_cpythons():
    check(_types_of_tensor_methods, torch.randn(4))


_GLOBAL_TENSOR = torch.tensor([1.0, 2.0])


def _types_of_tensor_attributes(x):
    return (
        x + 1,
        type(x.__dict__),  # a dict, not a method: attributes found on the class that are not
        type(getattr(_GLOBAL_TENSOR, "__dict__", {})),  # methods have no known type in the trace
        type(x.output_nr),  # autograd state no guard pins (``nbytes`` is answered from the fake)
    )


def test_type_of_a_tensor_attribute_that_is_no_method():
    # was a silent wrong answer (builtin_function_or_method) once a tensor method had a type;
    # ``__dict__`` is read as the dict it is, type() of another such attribute breaks
    check_breaks(_types_of_tensor_attributes, lambda: (torch.randn(4),), graphs=1, breaks=1)


def _tensor_namespaces(x):
    import functools

    wrapper = functools.update_wrapper(lambda: 0, _GLOBAL_TENSOR)  # copies its __dict__
    return x + 1, dict(_GLOBAL_TENSOR.__dict__), "tag" in x.__dict__, wrapper.__wrapped__ is None


def test_a_tensor_inputs_dict_is_its_own_attributes():
    # ``t.__dict__`` of an input: its own attributes, as a guarded dict (it broke)
    def make():
        t = torch.randn(4)
        t.tag = "in"
        return (t,)

    _GLOBAL_TENSOR.mark = 1
    try:
        check_breaks(_tensor_namespaces, make, graphs=1, breaks=0)
    finally:
        del _GLOBAL_TENSOR.mark


def _write_through_data(x):
    y = x * 1
    z = y * y  # saves y for its backward
    y.data.add_(1)  # unseen by autograd: no version bump, the backward reads the new values
    return z, y


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_a_write_through_data_is_unseen_by_autograd(backend):
    """``t.data`` is ``t.detach()`` with a version counter of its own: a write through it leaves
    ``t``'s version as it was, and a backward through an op that saved ``t`` runs as eager's."""
    bytegraph.reset()
    compiled = bytegraph.compile(_write_through_data, backend=backend)
    for _ in range(2):
        x = torch.randn(3, requires_grad=True)
        x_eager = x.detach().clone().requires_grad_()
        got, want = compiled(x), _write_through_data(x_eager)
        assert_same(got, want)
        assert got[1]._version == want[1]._version
        got[0].sum().backward()
        want[0].sum().backward()
        assert_same(x.grad, x_eager.grad)
    assert not any(k.startswith("fallback") for k in bytegraph.stats()), bytegraph.stats()
