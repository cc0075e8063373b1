"""Globals of other modules, read by functions inlined from there, are guarded in the dict the trace
read: the dispatcher binds that dict (no ``M[...]`` lookup per call) and ``why()`` reads the same
one, also after ``sys.modules`` names another module object (``guards/sources.py``)."""

from __future__ import annotations

import sys
import types

import torch
from difftest import assert_same

import bytegraph

NAME = "bytegraph_test_helper_module"


def _helper() -> types.ModuleType:
    module = types.ModuleType(NAME)
    sys.modules[NAME] = module
    exec("SCALE = 2.0\ndef scale(x):\n    return x * SCALE\n", module.__dict__)
    return module


def test_dispatcher_binds_the_globals_the_trace_read_and_why_agrees():
    helper = _helper()
    try:
        scale = helper.scale

        def fn(x):
            return scale(x) + 1

        compiled, x = bytegraph.compile(fn, backend="eager"), torch.ones(2)
        assert_same(compiled(x), fn(x))
        (entry,) = bytegraph.cache_entries(compiled)
        assert f"M[{NAME!r}]['SCALE'] == 2.0" in entry.guards.source.splitlines()
        assert f"M[{NAME!r}]" not in bytegraph.guard_source(compiled)
        assert bytegraph.why(compiled, x).selected is entry

        # sys.modules now names a copy; the function the compiled code calls reads the old dict
        copy = types.ModuleType(NAME)
        copy.__dict__.update(helper.__dict__)
        sys.modules[NAME] = copy
        helper.SCALE = 3.0
        why = bytegraph.why(compiled, x)
        assert why.selected is None
        assert [part.code for _, part in why.failures] == [f"M[{NAME!r}]['SCALE'] == 2.0"]
        assert_same(compiled(x), fn(x))
    finally:
        sys.modules.pop(NAME, None)
