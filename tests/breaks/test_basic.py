"""Graph breaks on the common breaking operations: print, torch.save, tensor-to-Python conversions,
explicit ``bytegraph.graph_break()``, unsupported C functions; each compared with eager, with exact
graph and break counts."""

from __future__ import annotations

import contextlib
import io
import sys
import warnings

import pytest
import torch
from difftest import check_breaks
from dynamo_baseline import assert_no_more_breaks

import bytegraph


def randn(*shape):
    return lambda: (torch.randn(*shape),)


def test_print_between_ops():
    def fn(a):
        b = a + 2
        print("Hi")
        return b + a

    check_breaks(fn, randn(4), graphs=2, breaks=1)


def test_print_tensor_value():
    def fn(a):
        b = a * 3
        print("b is", b)
        return b - 1

    check_breaks(fn, randn(3), graphs=2, breaks=1)


def test_print_with_kwargs():
    def fn(a):
        b = a.sin()
        print("x", "y", sep="-", end="!\n")
        return b.cos()

    check_breaks(fn, randn(3), graphs=2, breaks=1)


def test_print_first_statement():
    def fn(a):
        print("start")
        return a.relu() + 1

    check_breaks(fn, randn(5), graphs=1, breaks=1)


def test_print_last_statement():
    def fn(a):
        b = a.exp()
        print("end")
        return b

    check_breaks(fn, randn(5), graphs=1, breaks=1)


def test_print_result_used():
    def fn(a):
        b = a + 1
        r = print("value")
        return b if r is None else a

    check_breaks(fn, randn(3), graphs=1, breaks=1)


#: where ``test_print_order_with_writes_warnings_and_a_raise`` writes: stdout and stderr in one
#: buffer, so their order shows
_WRITTEN = io.StringIO()


def _capture_all():
    _WRITTEN.seek(0)
    _WRITTEN.truncate()


def test_print_order_with_writes_warnings_and_a_raise():
    """``print`` (with ``sep``/``end``/``flush``, to stdout, to stderr, of a tensor and of an
    f-string of Python numbers) runs where eager runs it, as torch.compile's does (a break: print
    is in no ``reorderable_logging_functions`` by default), in order with ``sys.stdout.write``
    and a warning; a raise after them leaves them written."""

    def fn(a):
        b = a * 3
        print("b is", b, sep="-", end="!\n", flush=True)
        sys.stdout.write("written\n")
        n, loss = 2, 0.125
        print(f"step {n} loss {loss:.3f}", file=sys.stderr)
        warnings.warn("careful", stacklevel=1)
        c = b.sin()
        if c.shape[0] == 3:
            raise ValueError(f"{n} is too many")
        return c

    def run(f, x):
        _capture_all()
        with contextlib.redirect_stdout(_WRITTEN), contextlib.redirect_stderr(_WRITTEN):
            with warnings.catch_warnings():
                warnings.simplefilter("always")
                warnings.showwarning = lambda msg, *_: print("warning:", msg, file=sys.stderr)
                with pytest.raises(ValueError, match="2 is too many"):
                    f(x)
        return _WRITTEN.getvalue()

    x = torch.randn(3)
    expected = run(fn, x)
    compiled = bytegraph.compile(fn)
    for _ in range(2):
        assert run(compiled, x) == expected
    with pytest.warns(UserWarning, match="careful"):
        report = bytegraph.explain(fn)(torch.randn(2))
    assert report.graph_break_count == 3
    assert_no_more_breaks(3, fn, torch.randn(2))


@pytest.mark.parametrize("first", [False, True])
def test_manual_seed_then_draws(first):
    """``torch.manual_seed(n)`` in a compiled function runs in Python, as torch.compile runs it
    (``torch._dynamo`` wraps it in ``_disable_dynamo``: a break): the draws after it and the
    generator's state after the call are eager's."""

    def fn(a):
        b = a if first else a + torch.randn(3)
        torch.manual_seed(7)
        return b * torch.randn(3) + torch.rand(3), torch.randint(0, 9, (2,))

    graphs = 1 if first else 2
    check_breaks(
        fn,
        randn(3),
        graphs=graphs,
        breaks=1,
        setup=lambda: torch.manual_seed(0),
        observe=torch.get_rng_state,
    )
    assert_no_more_breaks(1, fn, torch.randn(3))


def test_torch_save(tmp_path):
    path = tmp_path / "t.pt"

    def fn(a):
        b = a * 2
        torch.save(b, path)
        return b + a

    def make():
        return (torch.randn(3),)

    check_breaks(fn, make, graphs=2, breaks=1, observe=lambda: torch.load(path))


def test_item_in_arithmetic_stays_in_the_graph():
    def fn(a):
        b = a.sum()
        s = b.item()
        return a * s + 1

    # an unbacked symbolic float: new values reuse the graph
    check_breaks(fn, randn(4), graphs=1, breaks=0, calls=3)


def test_item_python_math():
    def fn(a):
        v = (a * 2).max().item()
        w = v * 3 + 1
        return a + w, w

    check_breaks(fn, randn(4), graphs=1, breaks=0, calls=3)  # the float is returned by the graph


def test_tolist():
    def fn(a):
        b = a + 1
        items = b.tolist()
        return b * len(items), sum(items)

    check_breaks(fn, randn(3), graphs=3, breaks=1)  # the floats specialise the resume graph


def test_numpy_is_traced_through_torch_ops():
    def fn(a):
        b = a.cos()
        arr = b.numpy()
        return torch.from_numpy(arr * 2) + b

    check_breaks(fn, randn(3), graphs=1, breaks=0)


def test_numpy_data_read_in_python_breaks():
    def fn(a):
        arr = a.cos().numpy()
        return torch.tensor(arr.tolist()) + a

    # one call: the list of values is guarded by value, so new data retraces the resume function
    _, _, report = check_breaks(fn, randn(3), graphs=2, breaks=1, calls=1)
    assert [r.kind for r in report.break_reasons] == ["tensor_to_python"]
    assert "tolist" in report.break_reasons[0].line


def test_explicit_graph_break():
    def fn(x):
        y = x.sin()
        bytegraph.graph_break()
        return y.cos()

    _, _, report = check_breaks(fn, randn(3), graphs=2, breaks=1)
    assert report.break_reasons[0].kind == "graph_break"


def test_two_explicit_graph_breaks():
    def fn(x):
        y = x.sin()
        bytegraph.graph_break()
        z = y.cos()
        bytegraph.graph_break()
        return z * y

    check_breaks(fn, randn(3), graphs=3, breaks=2)


def test_three_breaks_in_one_function():
    def fn(x):
        y = x + 1
        print("one")
        y = y * 2
        print("two")
        y = y - 3
        print("three")
        return y / 4

    check_breaks(fn, randn(3), graphs=4, breaks=3)


def _opaque(t):
    return t.numel()


def test_unsupported_builtin_in_expression():
    import os

    def fn(x):
        y = x * 2
        n = os.getpid()
        return y + (n - n)

    check_breaks(fn, randn(3), graphs=2, breaks=1)


def test_unsupported_c_function_with_args():
    import zlib

    def fn(x):
        y = x + 1
        n = len(zlib.compress(b"bytegraph", 7))  # crc32 is pure: computed at trace time
        return y * (n % 5)

    _, _, report = check_breaks(fn, randn(3), graphs=2, breaks=1)
    assert report.break_reasons[0].kind == "c_function"


def test_kwargs_call_breaks():
    def fn(x):
        y = x.abs()
        print("k", end="|\n", sep=",")
        return y.sqrt()

    check_breaks(fn, randn(3), graphs=2, breaks=1)


def test_kwargs_call_result_on_stack():
    def fn(x):
        y = x + 1
        z = y * sum([1, 2], start=int(y.sum().tolist() > 100))
        return z

    check_breaks(fn, randn(3), graphs=3, breaks=1)  # .tolist()'s float specialises the resume


def test_method_call_breaks():
    class Logger:
        def __init__(self):
            self.lines = []

        def log(self, msg, t):
            self.lines.append(msg)
            print(msg, t.shape)

    logger = Logger()

    def fn(x):
        y = x.sin()
        logger.log("m", y)
        return y * 2

    check_breaks(
        fn,
        randn(3),
        graphs=2,
        breaks=1,
        observe=lambda: list(logger.lines),
        setup=lambda: logger.lines.clear(),
    )


def test_tensor_method_tolist_in_expression():
    def fn(x):
        y = x * 2
        return y + torch.tensor(y.tolist()).sum()

    check_breaks(fn, randn(3), graphs=3, breaks=1)  # the list's floats specialise the resume


def test_break_operands_on_stack():
    def fn(x):
        y = x + 1
        return (y * 2, print("mid"), y - 1)

    check_breaks(fn, randn(3), graphs=2, breaks=1)


def test_break_argument_computed_in_graph():
    def fn(x):
        y = x.exp()
        print(y.shape, y.dtype)
        return y

    check_breaks(fn, randn(2, 3), graphs=1, breaks=1)


def test_fullgraph_raises_with_reason_and_location():
    import pytest

    def fn(x):
        y = x + 1
        print("no")
        return y

    compiled = bytegraph.compile(fn, fullgraph=True, backend="eager")
    with pytest.raises(bytegraph.tracer.exc.BytegraphError) as info:
        compiled(torch.randn(3))
    text = str(info.value)
    assert "print" in text
    assert f"{__file__}:{fn.__code__.co_firstlineno + 2}" in text


def test_fullgraph_raises_for_nested_break():
    import pytest

    def inner(t):
        return t.tolist()

    def fn(x):
        return inner(x.sum()) + 1

    compiled = bytegraph.compile(fn, fullgraph=True, backend="eager")
    with pytest.raises(bytegraph.tracer.exc.BytegraphError) as info:
        compiled(torch.randn(3))
    assert f"{__file__}:{inner.__code__.co_firstlineno + 1}" in str(info.value)


def triple(t, s=1):
    return t * 3 * s


class Dynamic:
    """Its methods come from a custom ``__getattribute__``, which the tracer does not run: loading
    one breaks. (A ``__getattr__`` is traced: the ``AttrDict``/``EasyDict`` pattern.)"""

    def __getattribute__(self, name):
        if name == "scale":
            return triple
        return object.__getattribute__(self, name)


def test_break_at_method_load_then_keyword_call():
    """The method load runs in Python as a plain attribute load; the resume function gets the
    callable with the CALL convention's NULL beside it (below it before 3.13, above it on 3.13)."""

    def fn(x, d):
        y = x + 1
        z = d.scale(y, s=2)
        return z - 1

    # y = x + 1, then the resume function (the call and z - 1), compiled once
    check_breaks(fn, lambda: (torch.randn(2), Dynamic()), graphs=2, breaks=1, calls=3)
