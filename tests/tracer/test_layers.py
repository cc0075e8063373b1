"""The tracer's layering, read from its source: trackers in one module per family, each importing
only the layers below it (``tracer/variables/__init__.py`` states the order), no import cycle
anywhere in ``tracer/``, and an operation protocol whose every operation has a general rule."""

from __future__ import annotations

import ast
from pathlib import Path

import bytegraph.tracer.variables.builder  # noqa: F401 (loads every family: their rules register)
from bytegraph.tracer.variables import dispatch
from bytegraph.tracer.variables.base import VariableTracker

TRACER = Path(__file__).resolve().parents[2] / "tracer"


def _module_name(path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(TRACER.parent).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    return ".".join(parts[:-1] if is_package else parts), is_package


def _runtime_imports(path: Path) -> set[str]:
    """Modules of ``tracer/`` that ``path`` imports when it runs (at import or in a function);
    ``if TYPE_CHECKING:`` imports left out."""
    name, is_package = _module_name(path)
    found: set[str] = set()

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if isinstance(node, ast.ImportFrom) and node.level:
                base = name.split(".")[: None if is_package else -1]
                base = base[: len(base) - (node.level - 1)] + (node.module or "").split(".")
                base = [p for p in base if p]
                for alias in node.names:
                    found.add(".".join([*base, alias.name]))
                    found.add(".".join(base))
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt):
                    visit([child])
                elif isinstance(child, ast.ExceptHandler):
                    visit(child.body)

    visit(ast.parse(path.read_text()).body)
    return found


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p)[0]: p for p in TRACER.rglob("*.py")}
    return {
        name: _runtime_imports(path) & modules.keys() - {name} for name, path in modules.items()
    }


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph``, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (found := walk(nxt)):
                return found
        state[node] = 2
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state and (found := walk(node)):
            return found
    return None


def test_the_tracer_has_no_import_cycle():
    assert _cycle(_graph()) is None


def test_trackers_are_one_module_per_family():
    modules = sorted(
        p.name for p in (TRACER / "variables").rglob("*.py") if p.name != "__init__.py"
    )
    assert len(modules) <= 21, modules
    assert not [
        p for p in (TRACER / "variables").iterdir() if p.is_dir() and p.name != "__pycache__"
    ]


def test_trackers_import_only_the_layers_below_them():
    order = [
        "base",
        "call_rules",
        "dispatch",
        "constants",
        "tensors",
        "containers",
        "live_inputs",
        "iterators",
        "functions",
        "objects",
        "frames",
        "modules",
        "contexts",
        "distributed",
        "numpy_arrays",
        "torch_calls",
        "subgraphs",
        "functorch",
        "pytree",
        "operations",
        "builder",
    ]
    graph = _graph()
    prefix = "tracer.variables."
    found = sorted(n[len(prefix) :] for n in graph if n.startswith(prefix))
    assert found == sorted(order), "a tracker module was added: give it its place in the order"
    for name in order:
        below = {prefix + n for n in order[: order.index(name)]}
        imported = {m for m in graph[prefix + name] if m.startswith(prefix)}
        assert imported <= below, f"{name} imports {sorted(imported - below)}, which lie above it"


def test_trackers_never_import_the_translator_or_opcodes_when_running():
    graph = _graph()
    for name, imported in graph.items():
        if name.startswith("tracer.variables"):
            assert not {m for m in imported if m == "tracer.translator" or "opcodes" in m}, name


def test_no_import_hides_at_the_end_of_a_module():
    offenders = [p for p in TRACER.rglob("*.py") if "noqa: E402" in p.read_text()]
    assert not offenders


def test_every_operation_has_a_general_rule():
    missing = [op for op, rules in dispatch.RULES.items() if VariableTracker not in rules]
    assert not missing


def test_a_rule_for_a_tracker_type_wins_over_the_general_rule():
    class Probe(VariableTracker):
        pass

    class SubProbe(Probe):
        pass

    rules = dispatch.RULES["truth"]
    try:
        dispatch.rule("truth", Probe)(lambda tx, value: "probe")
        assert dispatch.truth(None, SubProbe()) == "probe"
        assert dispatch.lookup("truth", VariableTracker) is rules[VariableTracker]
    finally:
        del rules[Probe]
        dispatch._FOUND.clear()
