"""A graph node's ``stack_trace`` (``OutputGraph._stack_trace``) is ``traceback.format_list`` of the
inlined frames; ``_format_stack`` formats each frame once and joins them, except where a frame
repeats at once (recursion on one line), which ``format_list`` folds."""

import traceback

import torch
from bytegraph.tracer.output_graph import _format_stack

import bytegraph


def _reference(frames):
    return "".join(traceback.format_list([traceback.FrameSummary(*f) for f in frames]))


def test_format_stack_is_format_list():
    here = __file__
    a, b, c = (here, 1, "a"), (here, 12, "b"), ("/no/such/file.py", 3, "c")
    for frames in [(), (a,), (a, b, c), (b, a, b, a), (a, b, b), (c, a, a, a, a, a, b)]:
        assert _format_stack(frames) == _reference(frames), frames


def _down(x, n):
    if n == 0:
        return x.sin()
    return _down(x, n - 1)


def test_recursive_call_stack_trace_folds_repeats():
    graphs = []

    def backend(gm, inputs):
        graphs.append(gm)
        return gm.forward

    fn = bytegraph.compile(lambda x: _down(x, 5), backend=backend)
    x = torch.randn(3)
    torch.testing.assert_close(fn(x), x.sin())
    (node,) = [n for n in graphs[0].graph.nodes if n.op.startswith("call_")]
    trace = node.meta["stack_trace"]
    assert "Previous line repeated" in trace, trace
    assert trace.rstrip().endswith("return x.sin()"), trace
