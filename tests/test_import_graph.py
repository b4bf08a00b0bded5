"""The import graph of the package: no cycle, and the library never imports the experiments.

Built from the source with ``ast`` (every ``import`` statement, also those inside functions: a lazy
import is still a dependency), so the test sees cycles that a plain ``import`` would hide.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "isotropy"
# Known cycle-closing edges, each a lazy (function-level) import, listed so that any NEW cycle fails. Shared code
# lives in private modules that both sides import (kernels for the metrics and isotropy.distributed,
# _measure_report, _errors, models._cache). Add an entry only with the reason it cannot be untangled.
KNOWN_EDGES: set[tuple[str, str]] = {
    # the deprecated path isotropy.metrics.dimension.TwoNN / .MLE (moved to the estimators so that the functions do
    # not import scikit-learn) still gives the classes, which wrap those functions, for one release; goes with it
    ("isotropy.metrics.dimension", "isotropy.metrics.estimators"),
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """``{module: {isotropy modules it imports}}`` for every module of the package."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative import
                    anchor = name.split(".") if is_package else name.split(".")[:-1]
                    anchor = anchor[:len(anchor) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
            else:
                continue
            edges |= {t for t in targets if t in modules and t != name}
        graph[name] = edges
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_graph_is_built_from_real_imports():
    graph = import_graph()
    assert "isotropy.experiments._runner" in graph["isotropy.experiments._template.experiment"]
    assert "isotropy._utils.atomic" in graph["isotropy.experiments._results"]
    # the checker finds a planted cycle
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle_in_the_package():
    graph = import_graph()
    for source, target in KNOWN_EDGES:
        assert target in graph[source], f"{source} -> {target} is gone: remove it from KNOWN_EDGES"
        graph[source].discard(target)
    assert _cycles(graph) == []


def test_the_library_never_imports_the_experiments():
    graph = import_graph()
    offenders = {m: sorted(t for t in targets if t.startswith("isotropy.experiments"))
                 for m, targets in graph.items()
                 if not m.startswith("isotropy.experiments") and m != "isotropy.cli"}
    assert {m: t for m, t in offenders.items() if t} == {}


# The floors, lowest first: a module may import from its own floor and the floors below, never from above.
FLOORS = [
    ("isotropy._utils",),
    ("isotropy._kernels",),
    ("isotropy.distributed",),
    ("isotropy.metrics", "isotropy"),  # the face (isotropy/__init__.py) re-exports the metrics
    ("isotropy.transforms", "isotropy.io", "isotropy.models", "isotropy.datasets", "isotropy.torch"),
    ("isotropy.measure", "isotropy.training"),
    ("isotropy.experiments",),
    ("isotropy.cli", "isotropy.__main__"),
]


def _experiment_of(module: str) -> str | None:
    """``istar`` for ``isotropy.experiments.istar.run``; None outside an experiment (``_``-prefixed shared code, the runner)."""
    parts = module.split(".")
    if parts[:2] != ["isotropy", "experiments"] or len(parts) < 3 or parts[2].startswith("_"):
        return None
    return parts[2]


def test_no_experiment_imports_a_sibling_experiment():
    """What two experiments share lives in a ``_``-prefixed package (``experiments._finetune``), never in one of them."""
    crossings = sorted((a, b) for a, targets in import_graph().items() for b in targets
                       if _experiment_of(a) and _experiment_of(b) and _experiment_of(a) != _experiment_of(b))
    assert not crossings, crossings
    assert _experiment_of("isotropy.experiments.istar.run") == "istar"
    assert _experiment_of("isotropy.experiments._finetune.train") is None


def floor_of(module: str) -> int:
    """The floor of ``module``: its longest matching prefix in FLOORS."""
    best = None
    for level, prefixes in enumerate(FLOORS):
        for prefix in prefixes:
            matches = module == prefix or module.startswith(prefix + ".")
            if matches and (best is None or len(prefix) > best[0]):
                best = (len(prefix), level)
    assert best is not None, f"{module} is on no floor: add it to FLOORS"
    return best[1]


def test_no_arrow_goes_from_a_lower_floor_to_a_higher_one():
    graph = import_graph()
    upward = sorted(f"{source} -> {target}" for source, targets in graph.items() for target in targets
                    if floor_of(target) > floor_of(source))
    assert upward == []


def test_the_floor_checker_sees_an_upward_arrow():
    assert floor_of("isotropy._utils.validation") < floor_of("isotropy._kernels.accumulator") < floor_of(
        "isotropy.metrics.isoscore") < floor_of("isotropy.measure.command") < floor_of("isotropy.experiments.istar")
    assert floor_of("isotropy") == floor_of("isotropy.metrics.silhouette") < floor_of("isotropy.cli")


def test_at_most_a_dozen_modules_at_the_top_level():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 12, top


def test_no_plotting_code_switches_the_matplotlib_backend_or_uses_pyplot():
    for path in (PACKAGE / "experiments").rglob("*.py"):
        text = path.read_text()
        assert "matplotlib.use(" not in text and "import matplotlib.pyplot" not in text, path
