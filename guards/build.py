"""Guards → Python source → function (via ``exec``), with the source kept on ``fn.__guard_source__``.

``GuardSet`` renders one variant's guards as an ordered list of boolean code parts (deduplicated, in
``Guard`` order) plus the closure table they need. ``first_failure`` evaluates the parts one by one to
say which guard rejects some inputs: the per-call answer to "why did this entry not run".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .guard import Guard
from .kinds import KINDS, ConstTable


@dataclass
class GuardPart:
    code: str  #: one boolean Python expression over ``L``, ``G``, ``C`` and closure names
    guard: Guard  #: the guard it came from (for reports)


class GuardSet:
    """The rendered guards of one cache entry."""

    def __init__(self, guards: list[Guard], consts: ConstTable | None = None) -> None:
        self.guards = sorted(set(guards))
        self.consts = consts or ConstTable()
        self.parts: list[GuardPart] = []
        seen: set[str] = set()
        for guard in self.guards:
            expr = guard.source.expr if guard.source is not None else ""
            for code in KINDS[guard.kind](expr, guard.arg, self.consts):
                if code not in seen:
                    seen.add(code)
                    self.parts.append(GuardPart(code, guard))
        self._checkers: list[Any] | None = None

    @property
    def source(self) -> str:
        """The guards as readable Python, one condition per line."""
        return "\n".join(part.code for part in self.parts)

    def first_failure(self, scope: dict[str, Any]) -> GuardPart | None:
        """The first part that is false (or raises) for these inputs, or None when all pass."""
        for part, check in zip(self.parts, self._compiled_checkers()):
            try:
                if not check(**scope):
                    return part
            except Exception:  # a guard that cannot even be evaluated fails
                return part
        return None

    def _compiled_checkers(self) -> list[Any]:
        if self._checkers is None:
            consts = dict(self.consts.values)  # names added later belong to other variants
            src = "\n".join(f"def ___check_{i}(L, G, C, B):\n    return {p.code}"
                            for i, p in enumerate(self.parts))
            ns: dict[str, Any] = dict(consts)
            exec(compile(src, "<bytegraph guard check>", "exec"), ns)
            self._checkers = [ns[f"___check_{i}"] for i in range(len(self.parts))]
        return self._checkers


def exec_function(source: str, name: str, closure: dict[str, Any], filename: str) -> Any:
    """Compile ``source`` (defining ``name``) so that it sees ``closure`` values as closure variables."""
    params = ", ".join(closure)
    wrapper = f"def ___make({params}):\n" + _indent(source) + f"\n    return {name}\n"
    ns: dict[str, Any] = {}
    exec(compile(wrapper, filename, "exec"), ns)
    fn = ns["___make"](**closure)
    fn.__guard_source__ = source
    return fn


def _indent(text: str) -> str:
    return "\n".join("    " + line if line else line for line in text.splitlines())
