"""Generated guard and resume code never embeds a user object's repr as code and never calls the
user's ``__eq__``/``__hash__``/``__getattr__``/``__repr__``/properties: hostile objects reached as
an argument, inside a list, as a global and as a closure cell, across a graph break, keep every call
counter at zero."""

from __future__ import annotations

import dis

import torch
from hostile import CALLS, MARK, Hostile

import bytegraph

GLOBAL_HOSTILE = Hostile()


def make():
    cell = Hostile()

    def fn(x, h, hs):
        y = x * 2
        if h is GLOBAL_HOSTILE or cell is None or hs[0] is None:
            y = y + 1
        print("break")
        return y + len(hs), h, cell

    return fn


def test_hostile_objects_are_not_called_or_embedded(capsys):
    fn = make()
    compiled = bytegraph.compile(fn)
    x = torch.ones(2)
    h = Hostile()
    CALLS.clear()
    for args in [(x, h, [h, Hostile()]), (x, h, [h, Hostile()]), (x, GLOBAL_HOSTILE, [h])]:
        result = compiled(*args)
        assert result[1] is args[1]
        torch.testing.assert_close(result[0], fn(*args)[0])
    state = bytegraph.state_of(compiled)
    sources = [bytegraph.guard_source(compiled)] + [
        e.guards.source for e in bytegraph.cache_entries(compiled)
    ]
    for resume in state.resumes.values():
        sources.append(bytegraph.guard_source(resume) if hasattr(resume, "__bytegraph__") else "")
        sources.append(dis.Bytecode(resume.__code__).dis())
    for entry in bytegraph.cache_entries(compiled):
        sources.append(dis.Bytecode(entry.fn.__code__).dis())
    assert not any(MARK in text for text in sources)
    assert CALLS == {}, dict(CALLS)
