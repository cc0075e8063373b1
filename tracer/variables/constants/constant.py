"""``ConstantVariable``: an immutable Python value known at trace time (int, str, None, dtype...).

Operations on constants are folded: the translator computes them in Python and the graph never sees
them. Constants that came from inputs were guarded when they were wrapped (``builder.wrap``).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ....guards.sources import Source
from ...exc import PythonError, Unsupported
from ..base import ConstantLikeVariable, VariableTracker

if TYPE_CHECKING:
    from ....codegen.emit import Codegen
    from ...translator import Translator

#: The Python scalars a literal spells: guarded and folded by value wherever they are read.
LITERAL_TYPES = (int, float, bool, str, bytes, complex)

#: Types whose values are immutable and cheap to copy, so we can fold operations on them.
CONSTANT_TYPES = (
    int,
    float,
    bool,
    complex,
    str,
    bytes,
    type(None),
    type(Ellipsis),
    type(NotImplemented),
    range,
    slice,
    frozenset,
)


@dataclass(eq=False)
class ConstantVariable(ConstantLikeVariable):
    value: Any
    source: Source | None = None

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        try:
            value = getattr(self.value, name)
        except AttributeError:
            raise Unsupported(
                "getattr", f"{type(self.value).__name__} has no attribute {name!r}"
            ) from None
        if type(value) is tuple:  # ``code.co_varnames``: a tuple of constants, with its methods
            return tx.fold(value)
        if isinstance(self.value, inspect.Signature) and name == "parameters":
            # a read-only mapping of constants (name -> Parameter): read as a dict of them, so
            # ``.keys()``, ``in``, iteration and views are traced (diffusers' attention processors)
            return tx.fold(dict(value))
        return ConstantVariable(value)

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        """Calling a constant: bound methods of immutable builtins (``"a,b".split``), folded."""
        owner = getattr(self.value, "__self__", None)
        if not callable(self.value) or type(owner) not in CONSTANT_TYPES:
            raise Unsupported("call", f"calling {self.value!r}")
        if getattr(self.value, "__name__", "") == "join" and len(args) == 1 and not kwargs:
            args = [tx.fold(tuple(v.as_python_constant() for v in dispatch.iterate(tx, args[0])))]
        if not all(a.is_python_constant() for a in [*args, *kwargs.values()]):
            raise Unsupported("call", f"{self.value.__qualname__} on non-constant arguments")
        try:
            result = self.value(
                *[a.as_python_constant() for a in args],
                **{k: v.as_python_constant() for k, v in kwargs.items()},
            )
        except Exception as e:  # noqa: BLE001 (the method's own error, raised as CPython would)
            raise PythonError(e) from None
        return tx.fold(result)

    def unpack(self, tx: Translator) -> list[VariableTracker]:
        try:
            return [ConstantVariable(v) for v in self.value]
        except TypeError:
            kind = type(self.value).__name__
            raise Unsupported("unpack", f"cannot iterate over {kind}") from None

    def reconstruct(self, cg: Codegen) -> None:
        cg.load_const(self.value)

    def __repr__(self) -> str:
        return f"ConstantVariable({self.value!r})"


# Bound last: the dispatcher imports this module (a cycle), and needs what it defines above.
from .. import dispatch  # noqa: E402
