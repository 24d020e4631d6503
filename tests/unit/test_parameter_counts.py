"""Short parameter lists, kept so by a test rather than by memory.

No function of the library, the DAG files, the Spark apps or the Airflow plugin takes more than
8 parameters: a longer list is a sign that some of them travel together and want a type of
their own (a request, a scope, a header). Every parameter counts: positional-only, positional,
keyword-only, ``*args`` and ``**kwargs``; a leading ``self`` or ``cls`` does not. Lambdas and
nested functions count like any other.

The one exception is the CLI's argparse builders: a function defined under
``include/tierflow/cli/`` whose name is ``build_parser`` or starts with ``add_`` or ``_add_``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import tierflow

PROJECT = Path(tierflow.__file__).resolve().parents[2]
MAX_PARAMETERS = 8
ROOTS = ["include/tierflow", "dags", "spark_apps", "plugins"]
CLI = PROJECT / "include" / "tierflow" / "cli"

_Function = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda


def parameter_count(node: _Function) -> int:
    """Every parameter of ``node``, less a leading ``self`` or ``cls``."""
    args = node.args
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    if names and names[0] in ("self", "cls"):
        names = names[1:]
    return len(names) + (args.vararg is not None) + (args.kwarg is not None)


def is_argparse_builder(path: Path, name: str) -> bool:
    """The CLI's argparse builders, which may take what argparse needs."""
    if not path.is_relative_to(CLI):
        return False
    return name == "build_parser" or name.startswith(("add_", "_add_"))


def functions_over(limit: int, roots: list[Path]) -> list[str]:
    """``file:line name count`` for each function taking more than ``limit`` parameters."""
    found = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if not isinstance(node, _Function):
                    continue
                name = getattr(node, "name", "<lambda>")
                count = parameter_count(node)
                if count > limit and not is_argparse_builder(path, name):
                    found.append(f"{path.relative_to(PROJECT)}:{node.lineno} {name} {count}")
    return found


def test_no_function_takes_more_than_8_parameters() -> None:
    roots = [PROJECT / root for root in ROOTS]
    over = functions_over(MAX_PARAMETERS, [r for r in roots if r.is_dir()])
    assert over == [], "more than 8 parameters:\n" + "\n".join(over)


def test_the_count_leaves_out_self_and_counts_every_other_kind() -> None:
    tree = ast.parse("class C:\n    def f(self, a, /, b, *c, d, **e): ...\ndef g(self): ...")
    functions = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    method, function = functions["f"], functions["g"]
    assert parameter_count(method) == 5
    assert parameter_count(function) == 0
