"""The library's layers point down only: each package imports only the layers below it.

Read bottom to top, the layers follow the data: Kafka's formats, the KIP-405 types, the
transforms, storage, the SQL state, the lifecycle operations, diskless, the read path, and then
the wiring (runtime, cluster model, tasks, DAG helpers, views, demos, CLI). Every import counts,
including those inside functions and under ``TYPE_CHECKING``: a lazy import is still a cycle
for the reader.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import tierflow

LIBRARY = Path(tierflow.__file__).parent

# Bottom first. Units in one row are siblings: neither may import the other.
LAYERS: list[list[str]] = [
    ["kafka"],
    ["config_values"],
    ["config_groups"],
    ["ids", "config", "faults", "rsm", "assets", "units"],
    ["copy_quota"],
    ["transform"],
    ["storage"],
    ["engine"],
    ["metadata"],
    ["segment_refs"],
    ["lifecycle"],
    ["diskless"],
    ["read", "restore", "export"],
    ["runtime"],
    ["cluster"],
    ["metrics"],
    ["tasks"],
    ["airflow_dags", "operator_view"],
    ["demo"],
    ["cli"],
]
LEVEL = {unit: level for level, row in enumerate(LAYERS) for unit in row}


def unit_of(path: Path) -> str:
    """``tierflow/read/fetch.py`` -> ``read``; ``tierflow/runtime.py`` -> ``runtime``."""
    return path.relative_to(LIBRARY).with_suffix("").parts[0]


def module_of(path: Path) -> list[str]:
    parts = ["tierflow", *path.relative_to(LIBRARY).with_suffix("").parts]
    return parts[:-1] if parts[-1] == "__init__" else parts


def imported_units(path: Path) -> Iterator[tuple[int, str]]:
    """(line, unit) for every tierflow import in the file, relative ones resolved."""
    package = module_of(path)[:-1] if path.name != "__init__.py" else module_of(path)
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - node.level + 1]
            names = [".".join([*base, *([node.module] if node.module else [])])]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        for name in names:
            parts = name.split(".")
            if parts[0] == "tierflow" and len(parts) > 1:
                yield node.lineno, parts[1]


def library_files() -> list[Path]:
    return sorted(
        p for p in LIBRARY.rglob("*.py") if p.parent != LIBRARY or p.name != "__init__.py"
    )


def test_every_unit_has_a_layer() -> None:
    units = {unit_of(p) for p in library_files()}
    assert units - set(LEVEL) == set(), "add the new package or module to LAYERS"


def test_imports_point_down_only() -> None:
    wrong = []
    for path in library_files():
        here = unit_of(path)
        for line, there in imported_units(path):
            if there != here and LEVEL.get(there, -1) >= LEVEL.get(here, -1):
                wrong.append(f"{path.relative_to(LIBRARY)}:{line} imports tierflow.{there}")
    assert wrong == [], "imports that point up or sideways:\n" + "\n".join(wrong)


def test_no_two_units_import_each_other() -> None:
    edges = {
        (unit_of(path), there)
        for path in library_files()
        for _, there in imported_units(path)
        if there != unit_of(path)
    }
    assert sorted((a, b) for a, b in edges if (b, a) in edges) == []


@pytest.mark.parametrize("unit", ["kafka", "rsm"])
def test_the_base_imports_nothing_of_tierflow_above_it(unit: str) -> None:
    files = [p for p in library_files() if unit_of(p) == unit]
    assert files
    found = [(p.name, there) for p in files for _, there in imported_units(p) if there != unit]
    assert found == []


def imported_modules(path: Path, known: set[str]) -> set[str]:
    """The tierflow modules a file imports; ``from package import module`` names the module
    alone, as the package's other contents are not what the file needs."""
    package = module_of(path)[:-1] if path.name != "__init__.py" else module_of(path)
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package[: len(package) - node.level + 1]
                base = ".".join([*parent, *([node.module] if node.module else [])])
            subs = {f"{base}.{alias.name}" for alias in node.names} & known
            found.update(subs or {base})
    return found & known


def test_no_module_import_cycle() -> None:
    """No chain of imports leads from a module back to itself, lazy ones included: a cycle
    (a registry importing its own callers, say) makes the import order matter."""
    names = {".".join(module_of(p)): p for p in [*library_files(), LIBRARY / "__init__.py"]}
    graph = {name: imported_modules(path, set(names)) - {name} for name, path in names.items()}
    cycles = [sorted(c) for c in strongly_connected(graph) if len(c) > 1]
    assert cycles == [], f"import cycles: {cycles}"


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components, iteratively (the module graph is deep)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while (top := stack.pop()) != node:
                        on_stack.discard(top)
                        component.append(top)
                    on_stack.discard(node)
                    found.append([*component, node])
            elif step not in index:
                index[step] = low[step] = len(index)
                stack.append(step)
                on_stack.add(step)
                work.append((step, iter(sorted(graph[step]))))
            elif step in on_stack:
                low[node] = min(low[node], index[step])
    return found
