"""``obj.name`` where the class's ``name`` is a C method that has a polyfill (``obj.__reduce_ex__``
of a plain object is ``object.__reduce_ex__`` bound to it): a bound method whose call runs the
polyfill with the object first, as the C method would run with it as ``self``. Escaping the trace
it is read again from the object (``obj.name``), the real bound method."""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ... import polyfills
from ..base import VariableTracker
from ..functions.callables import UserFunctionVariable

if TYPE_CHECKING:
    from ....codegen.emit import Codegen
    from ...translator import Translator

#: descriptors of methods written in C (a class method's is bound to the class)
C_METHODS = (
    types.MethodDescriptorType,
    types.WrapperDescriptorType,
    types.ClassMethodDescriptorType,
)


@dataclass(eq=False)
class PolyfilledMethodVariable(VariableTracker):
    """``descriptor`` (a C method of ``owner``'s class, or a C class method of ``owner``, a
    class) bound to ``owner``."""

    owner: VariableTracker
    name: str
    descriptor: Any

    def python_type(self) -> type:
        return (
            types.MethodWrapperType
            if isinstance(self.descriptor, types.WrapperDescriptorType)
            else types.BuiltinMethodType
        )

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        fn = polyfills.lookup(self.descriptor)
        return UserFunctionVariable(fn).call_function(tx, [self.owner, *args], kwargs)

    def reconstruct(self, cg: Codegen) -> None:
        self.owner.reconstruct(cg)
        cg.load_attr(self.name)

    def __repr__(self) -> str:
        return f"PolyfilledMethodVariable({self.name})"


def bind_polyfilled(owner: VariableTracker, name: str, static: Any) -> VariableTracker | None:
    """``owner.name`` for ``static``, found on the class, if it is a C method with a polyfill."""
    if isinstance(static, C_METHODS) and polyfills.lookup(static) is not None:
        return PolyfilledMethodVariable(owner, name, static)
    return None
