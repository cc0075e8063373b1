"""Texts of tensors (``str(t)``, ``repr(t)``, ``f"{t}"``, ``'{}'.format(t)``, ``repr([t])``) are
made after the graph from the real tensors (``TextVariable``): no break where the trace never
reads the text, a break where it does (at that point), and a break before an operation that would
change a tensor whose text waits for the graph. Each call gets its own values: the calls below
alternate inputs, so a text computed once at trace time would show."""

from __future__ import annotations

import pytest
import torch
from difftest import check_breaks
from dynamo_baseline import assert_no_more_breaks

import bytegraph

V = torch.tensor([1.0, 2.0])
LOG: list = []


def _inputs(*values):
    """One ``make_args`` per call, each a different tensor."""
    return [lambda v=v: (torch.full((2,), float(v)),) for v in values]


def _run(fn, graphs, breaks, **kwargs):
    return check_breaks(fn, None, graphs=graphs, breaks=breaks, calls=_inputs(1, 0, 3), **kwargs)


def test_str_format_of_tensors_is_made_after_the_graph():
    def fn(x):
        y = x + 1
        formats = "{}-{!r}".format(y, V), "{0}{0}{a}".format(y, a=x), "{0[0]}".format([y])  # noqa: UP030, UP032
        return y, formats

    _run(fn, graphs=1, breaks=0)
    assert_no_more_breaks(0, fn, torch.ones(2))


def test_fstrings_and_percent_formats_of_tensors():
    def fn(x):
        y = x * 2
        return f"{y} and {y!r} {y.sum():.3f} {y.sum():>12}", "%s-%r" % (y, x)  # noqa: UP031

    _run(fn, graphs=1, breaks=0)
    assert_no_more_breaks(
        0, fn, torch.ones(2), baseline_missing="torch.compile runs repr() of a tensor in Python"
    )


def test_reprs_of_containers_holding_tensors():
    def fn(x):
        y = x + 1
        return repr({y: "a", "b": y}), repr({y}), str([y, (y,)]), repr({"k": [x]})

    _run(fn, graphs=1, breaks=0)


def test_repr_of_a_set_ordering_a_tensor_made_in_the_call_breaks():
    """``{0, y}`` with ``y`` made in the call: its place beside 0 follows its address, known only
    at run time (``SetVariable.ordered``): the text is made in Python, as eager's."""

    def fn(x):
        y = x + 1
        return repr({0, y}), y

    _run(fn, graphs=1, breaks=1)


def test_a_text_in_a_user_repr_and_concatenated():
    class Box:
        def __init__(self, t):
            self.t = t

        def __repr__(self):
            return f"Box({self.t})"

    def fn(x):
        y = x + 1
        return "value: " + repr(Box(y)) + "!", y

    _run(fn, graphs=1, breaks=0)


def test_parameters_and_replaced_attributes():
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(2, 2)
            self.t = torch.ones(2)

        def forward(self, x):
            before = str(self.t)
            self.t = x * 3  # replayed after the graph; the text shows the tensor it read
            return before, f"{self.lin.weight}", str(self.lin(x))

    torch.manual_seed(0)
    net = Net()
    state = {}

    def setup():
        net.t = state.setdefault("t", torch.ones(2))

    _run(net, graphs=1, breaks=0, setup=setup, observe=lambda: repr(net.t))


def test_texts_stored_as_side_effects():
    class Holder:
        pass

    holder = Holder()

    def fn(x):
        y = x + 1
        LOG.append(f"y={y}")
        holder.text = repr(y)
        return y

    def setup():
        LOG.clear()
        holder.text = None

    _run(fn, graphs=1, breaks=0, setup=setup, observe=lambda: (list(LOG), holder.text))


def _add(y):
    y.add_(1)  # data


def _through_a_view(y):
    y.view(-1).mul_(3)


def _setitem(y):
    y[0, 0] = 7.0


def _requires_grad(y):
    y.requires_grad_()  # shows as requires_grad=True


def _transpose(y):
    y.t_()  # metadata


@pytest.mark.parametrize("change", [_add, _through_a_view, _setitem, _requires_grad, _transpose])
def test_a_change_of_the_tensor_after_its_text_breaks_before_it(change):
    def fn(x):
        y = (x + 1).reshape(1, 2)
        s = str(y)
        change(y)
        return s, y * 2

    # the break is in ``change``: its resume and the caller's run after the graph; the caller's
    # resume takes ``s`` as a string, guarded by value (one variant per text, as torch.compile's).
    # ``requires_grad_()`` makes an autograd leaf, which runs in Python itself (a graph compiled by
    # AOTAutograd would lose the flag): ``change``'s resume then has no graph
    _run(fn, graphs=4 if change is _requires_grad else 5, breaks=1)


def test_a_tensor_changed_after_its_text_matches_torch_compiles_breaks():
    def fn(x):
        y = x + 1
        s = str(y)
        y.add_(1)
        return s, y

    _run(fn, graphs=1, breaks=1)  # after the break, no tensor operation: no graph
    assert_no_more_breaks(1, fn, torch.ones(2))


def test_a_change_of_the_default_dtype_after_a_text_breaks_before_it():
    def fn(x):
        y = x + 1
        s = str(y.double())  # shows dtype=torch.float64 under a float32 default only
        torch.set_default_dtype(torch.float64)
        return s, y

    try:  # the call leaves the default dtype changed, which the next call's guards read
        _run(fn, graphs=2, breaks=2, setup=lambda: torch.set_default_dtype(torch.float32))
    finally:
        torch.set_default_dtype(torch.float32)


def test_a_text_whose_value_is_read_breaks_there():
    def measured(x):
        y = x + 1
        return len(repr(y)), y * 2

    def printed(x):
        y = x + 1
        print(f"{y}")  # one break, at print
        return y * 2

    def keyed(x):
        y = x + 1
        return {str(y): 1}, y * 2

    # after the break, the resume functions of ``measured`` and ``printed`` hold no string, nor
    # does ``keyed``'s: the dict it returns is passed through, no key of it read, so one variant
    # serves every text (torch.compile guards the key by value: a variant per text)
    _run(measured, graphs=2, breaks=1)
    _run(printed, graphs=2, breaks=1)
    _run(keyed, graphs=2, breaks=1)
    assert_no_more_breaks(1, measured, torch.ones(2))
    assert_no_more_breaks(1, printed, torch.ones(2))


def test_a_text_live_at_a_break_is_made_there():
    def fn(x):
        y = x + 1
        s = f"<{y}>"
        bytegraph.graph_break()
        y.add_(5)
        return s, y

    _run(fn, graphs=4, breaks=1)  # the resume function takes ``s``, guarded by value


def test_format_specs_a_tensor_refuses_raise_or_break_as_in_eager():
    def bad_code(x):
        return f"{x.sum():d}"  # a float's error, whatever the value

    def not_a_number(x):
        return f"{x:.2f}"  # a 1-d tensor: object.__format__'s TypeError

    _run(bad_code, graphs=1, breaks=1)  # CPython's error, raised where the trace met it
    _run(not_a_number, graphs=0, breaks=1)


def test_reprs_and_specs_of_texts_are_made_after_the_graph():
    def fn(x):
        y = x + 1
        s = str(y)
        padded = "{!s:>30}|{!r:^40}".format(y, y)  # noqa: UP032 (str.format itself)
        cut = "%.3s|%-30s|" % (y, y)  # noqa: UP031 (the spec on the text of a tensor)
        return f"{s!r} {s:>30}", padded, cut, repr([s])

    def bad_spec(x):
        return f"{str(x):d}"  # str.__format__'s error, whatever the string

    _run(fn, graphs=1, breaks=0)
    _run(bad_spec, graphs=0, breaks=1)  # the error is raised before any tensor operation


def test_texts_of_inference_tensors():
    """An inference tensor counts no versions (``_version`` raises): the text waits for the graph
    while nothing is written after it, and a write into a tensor after it ends the graph first
    (fuzz seed 15400279: an internal error, the function ran in Python)."""

    def unchanged(x):
        with torch.inference_mode():
            y = x * 2
            s = f"{y}"
            return s, y + 1

    def written(x):
        with torch.inference_mode():
            y = x * 2
            s = f"{y}"
            y.add_(1)
            return s, y

    _run(unchanged, graphs=1, breaks=0)
    _run(written, graphs=1, breaks=1)
