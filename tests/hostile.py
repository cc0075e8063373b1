"""An object whose every hook counts its calls in ``CALLS``: guards, resume code and reports must
leave every counter at zero, and its repr (``MARK``) must never appear in generated code."""

from __future__ import annotations

import collections

CALLS: collections.Counter[str] = collections.Counter()
MARK = "HOSTILE_REPR_x1"


class Hostile:
    def __eq__(self, other):
        CALLS["__eq__"] += 1
        return True

    def __ne__(self, other):
        CALLS["__ne__"] += 1
        return False

    def __hash__(self):
        CALLS["__hash__"] += 1
        return 0

    def __getattr__(self, name):
        CALLS["__getattr__"] += 1
        raise AttributeError(name)

    def __bool__(self):
        CALLS["__bool__"] += 1
        return True

    def __len__(self):
        CALLS["__len__"] += 1
        return 1

    def __repr__(self):
        CALLS["__repr__"] += 1
        return MARK

    def __str__(self):
        CALLS["__str__"] += 1
        return MARK

    @property
    def prop(self):
        CALLS["prop"] += 1
        return 1
