"""The suite's own layout: helpers that several test modules share live in tests/support/, so
no test module imports another (a test module's helpers would otherwise run its fixtures' and
collection's side effects wherever they are imported)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def imported_modules(path: Path) -> list[str]:
    """Every module ``path`` imports, relative ones resolved against its package."""
    package = path.relative_to(TESTS.parent).parent.parts
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else ()
            module = ".".join([*base, *(node.module or "").split(".")]).strip(".")
            found.append(module)
            found.extend(f"{module}.{alias.name}" for alias in node.names)
    return found


def is_test_module(module: str) -> bool:
    """A ``test_*.py`` file of this suite (not a function named test_something)."""
    path = TESTS.parent.joinpath(*module.split(".")).with_suffix(".py")
    return path.name.startswith("test_") and path.is_file()


def test_no_test_module_imports_another() -> None:
    offenders = [
        f"{path.relative_to(TESTS.parent)} imports {module}"
        for path in sorted(TESTS.rglob("*.py"))
        for module in imported_modules(path)
        if is_test_module(module)
    ]
    assert offenders == []
