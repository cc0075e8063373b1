"""torch.compile's own counts for a function, to compare bytegraph's with (issue 24: bytegraph
must not break more than torch.compile on the same code)."""

from __future__ import annotations

import warnings


def dynamo_counts(fn, *args, **kwargs) -> tuple[int, int]:
    """``(graphs, breaks)`` that ``torch._dynamo.explain`` reports for one call of ``fn``."""
    import torch._dynamo

    torch._dynamo.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = torch._dynamo.explain(fn)(*args, **kwargs)
    torch._dynamo.reset()
    return report.graph_count, report.graph_break_count


def assert_no_more_breaks(breaks: int, fn, *args, **kwargs) -> tuple[int, int]:
    """bytegraph's ``breaks`` for one call are at most torch.compile's (which reports -1 breaks and
    0 graphs where it ran the whole call in Python: any count is fewer). Returns Dynamo's counts."""
    graphs, dynamo_breaks = dynamo_counts(fn, *args, **kwargs)
    if dynamo_breaks >= 0:
        assert breaks <= dynamo_breaks, (
            f"bytegraph breaks {breaks}x, torch.compile {dynamo_breaks}x"
        )
    return graphs, dynamo_breaks
