"""Guard kinds are objects: calling one makes a guard with the key the kind computes, facts about
a kind are its fields, and guards are made in few places."""

from __future__ import annotations

import gc
import re
from pathlib import Path

import torch
from bytegraph.guards import kinds
from bytegraph.guards.build import GuardSet
from bytegraph.guards.guard import KINDS, Absorb, Fixed, GuardKind
from bytegraph.guards.sources import LocalSource

ROOT = Path(__file__).resolve().parents[2]


def test_calling_a_kind_makes_its_guard_and_key():
    x = LocalSource("x")
    guard = kinds.TYPE_MATCH(x, int)
    assert isinstance(kinds.TYPE_MATCH, GuardKind) and guard.kind is kinds.TYPE_MATCH
    assert guard == kinds.TYPE_MATCH(x, int)  # the same key: one guard in a set
    assert guard != kinds.TYPE_MATCH(x, float)
    assert guard != kinds.TYPE_MATCH(LocalSource("y"), int)
    assert len({guard, kinds.TYPE_MATCH(x, int), kinds.ID_MATCH(x, int)}) == 2


def test_equal_values_of_other_types_are_other_guards():
    """``1 == True == 1.0``, but a trace that saw ``True`` must not pass ``1``: the EQUALS_MATCH
    key keeps the type."""
    x = LocalSource("x")
    assert len({kinds.EQUALS_MATCH(x, v) for v in (1, True, 1.0)}) == 3
    assert kinds.EQUALS_MATCH(x, slice(1, 2)) == kinds.EQUALS_MATCH(x, slice(1, 2))


def test_an_identity_kind_holds_its_object_weakly():
    class Thing:
        pass

    thing = Thing()
    guard = kinds.ID_MATCH(LocalSource("o"), thing)
    assert guard.arg() is thing
    del thing
    gc.collect()
    assert guard.arg() is None


def test_facts_of_a_kind_are_its_fields():
    assert kinds.TYPE_MATCH.fixed is Fixed.IDENTITY and kinds.ID_MATCH.fixed is Fixed.IDENTITY
    assert kinds.TENSOR_MATCH.fixed is Fixed.NEVER and kinds.EQUALS_MATCH.fixed is Fixed.VALUE
    assert kinds.TENSOR_MATCH.absorb is Absorb.PARAMETER
    assert kinds.GLOBAL_STATE.absorb is Absorb.NEVER
    assert all(KINDS[name] is getattr(kinds, name) for name in KINDS)


def test_a_global_state_guard_renders_its_getter():
    guards = GuardSet([kinds.GLOBAL_STATE(None, (("grad",), torch.is_grad_enabled, True))])
    assert guards.source == "___is_grad_enabled() == True"


_KIND_NAMES = "|".join(KINDS)


def _python_files(*packages: str) -> list[Path]:
    return [p for package in packages for p in sorted((ROOT / package).rglob("*.py"))]


def test_kind_names_are_spelled_as_strings_only_in_kinds():
    quoted = re.compile(rf"[\"']({_KIND_NAMES})[\"']")
    found = [
        str(p.relative_to(ROOT))
        for p in _python_files("bytegraph", "tracer", "guards", "codegen", "backends")
        if p.name != "kinds.py" and quoted.search(p.read_text())
    ]
    assert found == []


def test_guards_are_made_in_few_modules():
    """Outside ``guards/``: ``builder`` (input guards), ``output_graph`` (tensor inputs, global
    state, the ``assume_*`` requests of every other module) and ``shapes`` only."""
    made = re.compile(rf"\b(Guard|{_KIND_NAMES})\(")
    makers = {
        str(p.relative_to(ROOT))
        for p in _python_files("bytegraph", "tracer", "codegen", "backends")
        if made.search(re.sub(r"class \w+\(", "", p.read_text()))
    }
    assert makers == {
        "tracer/variables/builder.py",
        "tracer/output_graph.py",
        "tracer/fakes/shapes.py",
    }
