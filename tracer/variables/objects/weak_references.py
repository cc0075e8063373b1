"""``weakref.ref(obj)`` made in the trace: calling it gives ``obj`` back (the trace holds it, so it
is alive), and the rewritten code makes it again as ``weakref.ref(obj)``, which CPython answers with
the object's one callback-less reference: the same object eager code would hold. A callback, or an
object that cannot be weakly referenced, is not traced (the call runs in Python)."""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...exc import Unsupported
from ..base import VariableTracker
from ..constants.constant import ConstantVariable

if TYPE_CHECKING:
    from ....codegen.emit import Codegen
    from ...translator import Translator


@dataclass(eq=False)
class WeakRefVariable(VariableTracker):
    referent: VariableTracker

    def python_type(self) -> type:
        return weakref.ReferenceType

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        if args or kwargs:
            raise Unsupported("python_error", "TypeError: weakref() takes no arguments")
        return self.referent

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name == "__callback__":
            return ConstantVariable(None)
        raise Unsupported("getattr", f"weakref.{name}")

    def reconstruct(self, cg: Codegen) -> None:
        cg.push_callable(lambda: cg.load_const(weakref.ref))
        self.referent.reconstruct(cg)
        cg.call(1)


def make_ref(
    tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> WeakRefVariable:
    """``weakref.ref(obj)`` called in the trace."""
    if len(args) != 1 or kwargs:
        raise Unsupported("weakref", "weakref.ref() with a callback")
    referent = args[0]
    if not type.__dict__["__weakrefoffset__"].__get__(referent.python_type()):
        raise Unsupported("weakref", f"weakref.ref() of a {referent.python_type().__name__}")
    return WeakRefVariable(referent)
