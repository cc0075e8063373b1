"""``ExceptionVariable``: an exception object made in the trace (``ValueError("bad")``, a
``KeyError`` the traced code raises), as a value that can be raised, caught, inspected
(``e.args``, ``str(e)``, ``isinstance``) and returned. Raising and catching are in
``opcodes/exceptions.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...exc import Unsupported
from ..base import VariableTracker
from ..constants.constant import ConstantVariable
from ..containers.builtin_containers import TupleVariable

if TYPE_CHECKING:
    from ....codegen.emit import Codegen
    from ...translator import Translator


@dataclass(eq=False)
class ExceptionVariable(VariableTracker):
    cls: type
    args: list[VariableTracker] = field(default_factory=list)
    source: Any = None
    cause: VariableTracker | None = None  #: ``raise ... from cause``
    #: attributes CPython sets apart from ``args`` (``AttributeError``'s ``name`` and ``obj``)
    attrs: dict[str, VariableTracker] = field(default_factory=dict)

    def python_type(self) -> type:
        return self.cls

    def is_python_constant(self) -> bool:
        return all(a.is_python_constant() for a in self.args)

    def as_python_constant(self) -> Any:
        """An equal exception (``str``, ``repr`` and comparisons of its type and arguments)."""
        exc = self.cls(*[a.as_python_constant() for a in self.args])
        for name, vt in self.attrs.items():
            if vt.is_python_constant():
                setattr(exc, name, vt.as_python_constant())
        return exc

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name in self.attrs:
            return self.attrs[name]
        if name == "args":
            return TupleVariable(list(self.args))
        if name == "__class__":
            return tx.wrap_static(self.cls)
        if name == "__cause__":
            return self.cause or ConstantVariable(None)
        if name in ("__context__", "__traceback__"):
            raise Unsupported("exception", f"{name} of an exception raised in the trace")
        if self.is_python_constant() and name in _PLAIN_ATTRIBUTES:
            return tx.fold(getattr(self.as_python_constant(), name))
        raise Unsupported("getattr", f"attribute {name!r} of {self.cls.__name__}")

    def reconstruct(self, cg: Codegen) -> None:
        def build() -> None:
            cg.load_const(self.cls)
            for arg in self.args:
                arg.reconstruct(cg)
            cg.call_function(len(self.args))
            if self.cause is not None:
                cg.copy(1)
                self.cause.reconstruct(cg)
                cg.swap(2)
                cg.store_attr("__cause__")
            for name, vt in self.attrs.items():
                cg.copy(1)
                vt.reconstruct(cg)
                cg.swap(2)
                cg.store_attr(name)

        cg.build_once(self, build)

    def __repr__(self) -> str:
        return f"ExceptionVariable({self.cls.__name__})"


#: Attributes builtin exceptions derive from their arguments.
_PLAIN_ATTRIBUTES = frozenset({"errno", "strerror", "filename", "code", "msg", "name", "value"})


#: Attributes builtin exceptions take as keyword arguments, not from their arguments.
_KEYWORD_ATTRIBUTES = {
    AttributeError: ("name", "obj"),
    NameError: ("name",),
    ImportError: ("name", "path"),
}


def keyword_attributes(tx: Translator, exc: BaseException) -> dict[str, VariableTracker]:
    """The attributes a builtin exception raised in the trace's place (a missing attribute's
    ``AttributeError``) was given by keyword, as trackers: ``e.name`` is what CPython's has."""
    for cls, names in _KEYWORD_ATTRIBUTES.items():
        if isinstance(exc, cls):
            return {n: tx.fold(getattr(exc, n)) for n in names if getattr(exc, n) is not None}
    return {}


def is_simple_exception(cls: type) -> bool:
    """An exception class whose instances are just their arguments: no ``__init__``/``__new__``
    written in Python anywhere in its MRO."""
    if not (isinstance(cls, type) and issubclass(cls, BaseException)):
        return False
    for klass in cls.__mro__:
        if klass.__module__ == "builtins":
            continue
        if "__init__" in vars(klass) or "__new__" in vars(klass):
            return False
    return True
