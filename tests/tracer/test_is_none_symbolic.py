"""``v is None`` where ``v`` is a tuple, list or dict holding symbolic sizes (einops'
``if init_shapes is not None`` on shapes computed from a dynamic input): a builtin container is
never None, so the answer reads nothing; before, the container was read as a constant, which
specialised every size in it (a recompile for each new size)."""

import torch
from difftest import check_breaks, compile_counted
from dynamo_baseline import assert_no_more_breaks


def _shapes(x):
    n, m = x.shape
    return (n, m // 2, 2), [m], {"n": n}


def fn(x):
    shapes, listed, named = _shapes(x)
    if shapes is not None and listed is not None and named is not None:
        x = x.reshape(shapes)
    return x.sum(-1) * (shapes is None), listed is None, named is not None


def test_is_none_of_containers_of_symbolic_sizes_does_not_specialise():
    compiled, counter = compile_counted(fn, dynamic=True)
    sizes = [lambda m=m: (torch.randn(3, m),) for m in (4, 6, 8, 10)]
    check_breaks(fn, None, graphs=1, breaks=0, calls=sizes, compiled=compiled, counter=counter)
    assert_no_more_breaks(0, fn, torch.randn(3, 4))
