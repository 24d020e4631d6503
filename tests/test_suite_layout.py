"""The suite's own layout: helpers that several test modules share live in tests/support/, so
no test module imports another (a test module's helpers would otherwise run its fixtures' and
collection's side effects wherever they are imported)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

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


def unnamed_arguments(item: pytest.Item) -> list[str]:
    """The arguments of a parametrized test whose id part pytest made up (``argname`` and an
    index) because the value does not describe itself: a reader of the report learns nothing."""
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return []
    parts = set(callspec.id.split("-"))
    return [name for name, index in callspec.indices.items() if f"{name}{index}" in parts]


def test_every_parametrized_case_has_a_readable_id(request: pytest.FixtureRequest) -> None:
    """Over the tests collected with this one (all of them under ``make test``)."""
    unnamed = {
        f"{item.nodeid.split('[')[0]}: {name}"
        for item in request.session.items
        for name in unnamed_arguments(item)
    }
    assert sorted(unnamed) == []


LIBRARY = TESTS.parent / "include" / "tierflow"


def test_the_unit_tests_mirror_the_library() -> None:
    """tests/unit/<package>/ holds the unit tests of include/tierflow/<package>/, for every
    package: a folder named after nothing that ships is a test that lost its code, or one filed
    in the wrong place."""
    unit = TESTS / "unit"
    folders = [
        p.relative_to(unit) for p in unit.rglob("*") if p.is_dir() and p.name != "__pycache__"
    ]
    assert [f for f in folders if not (LIBRARY / f).is_dir()] == []
    packages = [p for p in LIBRARY.iterdir() if (p / "__init__.py").is_file()]
    assert [p.name for p in packages if not (unit / p.name).is_dir()] == []
