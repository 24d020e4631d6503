"""Which packages a process loaded: the import-cost tests read ``sys.modules`` of a fresh
interpreter and ask which of the named packages it holds."""

from __future__ import annotations


def among(modules: list[str], packages: tuple[str, ...]) -> list[str]:
    """The modules of ``packages``: a package, or one of its modules; a name ending in '.'
    stands for what is inside it (a namespace package that the environment makes anyway)."""
    return [m for m in modules if any(_of(m, p) for p in packages)]


def _of(module: str, package: str) -> bool:
    if package.endswith("."):
        return module.startswith(package)
    return module == package or module.startswith(f"{package}.")
