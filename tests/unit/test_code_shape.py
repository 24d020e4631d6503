"""Small functions and thin DAG files, kept so by a test rather than by memory.

Functions of the library (migrations included) and of the Spark apps stay under 60 lines: a
longer one is a sign that two steps want names of their own. DAG files only wire tasks, so
they stay under 120 lines.
"""

from __future__ import annotations

import ast
from pathlib import Path

import tierflow

PROJECT = Path(tierflow.__file__).resolve().parents[2]
MAX_FUNCTION_LINES = 60
MAX_DAG_FILE_LINES = 120


def functions_over(limit: int, roots: list[Path]) -> list[str]:
    found = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    lines = (node.end_lineno or node.lineno) - node.lineno + 1
                    if lines > limit:
                        where = path.relative_to(PROJECT)
                        found.append(f"{where}:{node.lineno} {node.name} ({lines} lines)")
    return found


def test_no_function_runs_over_60_lines() -> None:
    roots = [PROJECT / "include" / "tierflow", PROJECT / "spark_apps", PROJECT / "plugins"]
    assert functions_over(MAX_FUNCTION_LINES, [r for r in roots if r.is_dir()]) == []


def test_dag_files_stay_thin() -> None:
    dag_files = sorted((PROJECT / "dags").glob("*.py"))
    assert dag_files
    long = {p.name: n for p in dag_files if (n := len(p.read_text().splitlines())) >= 120}
    assert long == {}
