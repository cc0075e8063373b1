"""No silent rank divergence: compile fingerprints compared across ranks.

When ranks compile different code (a data-dependent branch taken on one rank only, a recompile on
one rank only) they would reach collectives in different orders and hang. With
``config.distributed_consistency_check`` (on in these worlds: the pytest plugin turns it on for the
processes tests start) every rank raises ``DivergenceError`` naming each rank's function and the
break or guard that differs, before the diverging collectives run; ``check_consistency()`` does the
same comparison on demand.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from disttest import expect_ok, run_checks

import bytegraph
from bytegraph.distributed import DivergenceError


def step(x):
    y = x * 2
    if y.sum() > 0:  # data-dependent: only the ranks with positive data take this branch
        dist.all_reduce(y)
        y = y + 1
    else:
        y = y - 1
    dist.all_reduce(y)
    return y


def check_plugin_turns_the_check_on(rank, world):
    return bytegraph.config.distributed_consistency_check


def check_divergent_branch_raises_instead_of_hanging(rank, world):
    """Rank ``world - 1`` branches one way, the others the other way: every rank raises at the
    compile of the branch, before any diverging collective. The branch breaks (speculation off):
    the messages name each rank's resume function."""
    bytegraph.config.distributed_consistency_check = True
    bytegraph.config.speculate = False
    bytegraph.config.distributed_consistency_timeout = 15.0
    x = torch.ones(4) if rank == world - 1 else -torch.ones(4)
    compiled = bytegraph.compile(step)
    try:
        compiled(x)
    except DivergenceError as e:
        return str(e)
    raise AssertionError("no DivergenceError")


def check_matching_ranks_pass(rank, world):
    """The same program on every rank (breaks, recompiles, collectives): no error."""
    bytegraph.config.distributed_consistency_check = True
    bytegraph.config.distributed_consistency_timeout = 15.0
    compiled = bytegraph.compile(step)
    for n in (4, 4, 6):  # the second size recompiles on every rank
        expected = step(torch.full((n,), 1.0 + rank))
        torch.testing.assert_close(compiled(torch.full((n,), 1.0 + rank)), expected)
    bytegraph.distributed.check_consistency()
    return [fp.function.split(" ")[0] for fp in bytegraph.distributed.history()]


def check_recompile_on_one_rank_found_by_check_consistency(rank, world):
    """With the per-compile check off, ``check_consistency()`` compares the histories: rank 1
    recompiled (its input shape changed), the others did not."""
    bytegraph.config.distributed_consistency_check = False

    def scale(x):
        return x * 2

    compiled = bytegraph.compile(scale)
    compiled(torch.ones(3))
    compiled(torch.ones(5 if rank == 1 else 3))
    try:
        bytegraph.distributed.check_consistency(timeout=15.0)
    except DivergenceError as e:
        return str(e)
    raise AssertionError("no DivergenceError")


def check_missing_rank_is_reported(rank, world):
    """Rank 0 compiles a function the others never compile: it reports them missing in time."""
    bytegraph.config.distributed_consistency_check = True
    bytegraph.config.distributed_consistency_timeout = 2.0
    if rank != 0:
        return None
    try:
        bytegraph.compile(lambda x: x + 1)(torch.ones(2))
    except DivergenceError as e:
        return str(e)
    raise AssertionError("no DivergenceError")


CHECKS = {
    2: [
        "plugin_turns_the_check_on",
        "divergent_branch_raises_instead_of_hanging",
        "matching_ranks_pass",
        "recompile_on_one_rank_found_by_check_consistency",
        "missing_rank_is_reported",
    ],
    4: ["divergent_branch_raises_instead_of_hanging", "matching_ranks_pass"],
}
_RESULTS: dict[int, dict] = {}


def results(world: int) -> dict:
    if world not in _RESULTS:
        _RESULTS[world] = run_checks(__file__, CHECKS[world], world)
    return _RESULTS[world]


def test_pytest_plugin_turns_the_check_on_in_started_processes():
    assert expect_ok(results(2)["plugin_turns_the_check_on"]) == [True, True]


def test_divergent_branch_raises_on_every_rank_naming_each_rank():
    for world in (2, 4):
        messages = expect_ok(results(world)["divergent_branch_raises_instead_of_hanging"])
        for text in messages:
            assert "ranks compiled different code" in text, text
            assert "compile #1 differs" in text, text
            assert f"rank {world - 1}: step resumed at line 24 " in text, text  # the taken branch
            assert all(f"rank {r}: step resumed at line 27 " in text for r in range(world - 1))
            assert "collectives per graph: all_reduce(sum, 0), all_reduce(sum, 0)" in text, text
            assert "collectives per graph: all_reduce(sum, 0)" in text, text


def test_matching_ranks_pass_the_check():
    for world in (2, 4):
        histories = expect_ok(results(world)["matching_ranks_pass"])
        assert all(h == histories[0] for h in histories) and len(histories[0]) >= 3, histories


def test_recompile_on_one_rank_is_named_with_its_guard():
    messages = expect_ok(results(2)["recompile_on_one_rank_found_by_check_consistency"])
    for text in messages:
        assert "check_consistency: compile #1 differs" in text, text
        assert "rank 0: (no such compile)" in text, text
        assert "rank 1: " in text and "failed guard: L['x'].shape == (3,)" in text, text


def test_rank_that_never_compiles_is_reported_missing():
    messages = expect_ok(results(2)["missing_rank_is_reported"])
    assert messages[1] is None
    assert "rank(s) [1] did not reach compile #0 within 2 s" in messages[0], messages[0]
