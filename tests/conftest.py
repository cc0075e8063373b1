"""Every test starts from ``bytegraph.reset()`` and a fixed seed (helpers live in ``difftest.py``).

Tests use the ``eager`` backend unless they name another: the default ``auto`` sends CPU graphs to
the Triton interpreter whenever ``TRITON_INTERPRET=1`` is set, which this conftest sets for the
whole session (triton picks interpreter mode when it is imported). ``tests/backends`` checks
``auto`` itself.
"""

from __future__ import annotations

import gc
import os
import re

# Triton picks interpreter mode when it is first imported, and a test module may import it at its
# own import (``import torch._dynamo`` does): the session's mode is set before any test module is
# imported, not by the triton tests' conftest, which modules collected before it outran (every
# interpreted kernel of a worker that had imported such a module raised "Cannot call @triton.jit'd
# outside of the scope of a kernel"). A GPU run starts with ``TRITON_INTERPRET=0``.
os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

import bytegraph

bytegraph.config.default_backend = "eager"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files marked ``heavy`` (minutes of work each) first, the rest in their order: ``run.sh``'s
    xdist workers take whole files in this order (``--no-loadscope-reorder``), and a long file
    taken last leaves the other worker's core idle until it ends."""
    items.sort(key=lambda item: item.get_closest_marker("heavy") is None)
    # Every worker must collect the same ids: an object's address in one (a parametrised
    # function's default repr) differs per process, and xdist then refuses the whole run.
    addressed = [item.nodeid for item in items if _ADDRESS.search(item.nodeid)]
    if addressed:
        raise pytest.UsageError(f"test ids holding an address (give ids=): {addressed[:3]}")


_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")


def pytest_collection_finish(session: pytest.Session) -> None:
    """Once every test module is imported, what exists now (torch, transformers, pytest, the test
    modules and their module-level objects) is moved out of the cyclic collector's reach
    (``gc.freeze()``), after one collection so that no garbage is kept. Each later full
    collection then walks only what the tests make, not the whole heap those libraries hold,
    which was an eighth of a test's CPU time. Nothing in tests reads ``gc.get_objects`` or
    ``gc.get_referrers`` (which skip frozen objects); what tests make is collected as before."""
    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True)
def _fresh_state():
    bytegraph.reset()
    torch.manual_seed(0)
    yield
    bytegraph.reset()
