"""Every name a Spark app imports from tierflow exists: spark-submit runs the apps against
the package zip, so a name removed from the library would only fail inside a Spark job.
The imports inside functions (the driver's lazy ones) count too."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

SPARK_APPS = Path(__file__).resolve().parents[2] / "spark_apps"


def tierflow_imports(app: Path) -> list[tuple[str, str]]:
    tree = ast.parse(app.read_text(), filename=str(app))
    return [
        (node.module, alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tierflow")
        for alias in node.names
    ]


@pytest.mark.parametrize("app", sorted(SPARK_APPS.glob("*.py")), ids=lambda p: p.name)
def test_every_name_a_spark_app_imports_exists(app: Path) -> None:
    imported = tierflow_imports(app)
    assert imported, f"{app.name} imports nothing of tierflow"
    for module, name in imported:
        assert hasattr(importlib.import_module(module), name), f"{app.name}: {module}.{name}"
