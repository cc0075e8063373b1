"""The multi-process harness itself: a hung rank fails the test with a timeout message (it never
hangs CI), and a rank that raises fails it with that rank's traceback."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
import torch.distributed as dist
from disttest import run_ranks


def rank_1_waits_forever(rank, world):
    if rank == 1:  # blocks on a store key nobody sets: a hang, as far as the parent can tell
        dist.distributed_c10d._get_default_store().wait(["never"], timedelta(seconds=600))
    return rank


def rank_0_raises(rank, world):
    if rank == 0:
        raise ValueError("boom on rank 0")
    return rank


def test_hung_rank_fails_with_a_timeout_message():
    with pytest.raises(AssertionError, match=re.escape("rank(s) [1] of a 2-rank world did not")):
        run_ranks(rank_1_waits_forever, 2, timeout=3)


def test_rank_that_raises_fails_with_its_traceback():
    with pytest.raises(AssertionError, match="rank 0 raised:(.|\n)*ValueError: boom on rank 0"):
        run_ranks(rank_0_raises, 2)
