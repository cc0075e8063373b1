"""The pytest plugin and distributed code: it turns the cross-rank consistency check on
(``BYTEGRAPH_DISTRIBUTED_CHECK=1`` for the processes tests start) and its summary gives a census
(graphs, breaks, collectives per graph) of tests whose graphs run collectives."""

from __future__ import annotations

import os

import pytest

import bytegraph

pytest_plugins = ["pytester"]

TEST_FILE = """
import pytest
import torch
import torch.distributed as dist
from torch.testing._internal.distributed.fake_pg import FakeStore

import bytegraph


@pytest.fixture
def world():
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=2)
    yield
    dist.destroy_process_group()


def row_parallel(x):
    y = x * 2
    dist.all_reduce(y)
    return y + 1


def test_row_parallel(world):
    bytegraph.compile(row_parallel)(torch.ones(3))
"""


def test_plugin_turns_the_distributed_check_on():
    assert os.environ.get("BYTEGRAPH_DISTRIBUTED_CHECK") == "1"
    assert bytegraph.config.distributed_consistency_check


def test_summary_counts_collectives_per_graph(pytester: pytest.Pytester):
    pytester.makepyfile(TEST_FILE)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")  # its own process group
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*census: 1 graphs, 0 breaks, 1 collectives (per graph: 1)*"])
