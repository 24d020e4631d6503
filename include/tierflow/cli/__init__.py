"""The ``tierflow`` command: operate the lifecycle by hand, run the demo, drive a local Airflow.

Kept light: ``tierflow --version`` answers before any command module (and what they import:
SQLAlchemy, kafka-python, rich, Airflow's providers) is loaded; everything else runs in app.py,
whose names (``build_parser``, ``READS_STORE_ONLY``, ...) are read through this package too.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from tierflow.cli.version import version


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command (app.main); ``--version`` alone is answered here, as argparse would:
    printed, then SystemExit(0)."""
    if list(sys.argv[1:] if argv is None else argv) == ["--version"]:
        _say_version()
    from tierflow.cli.app import main as run

    return run(argv)


def run() -> NoReturn:
    """The ``tierflow`` process (the console script, ``python -m tierflow.cli``): ``main``,
    then its exit code. Every object made is frozen first (gc.freeze), so the interpreter's
    shutdown leaves them out of its last cyclic collections: they took 0.13 s of a ``tierflow
    copy`` or ``status`` and about 2 s of an ``airflow test-dag`` run, for garbage the end of
    the process frees anyway. atexit handlers, flushing and closing still run as before."""
    code = main()
    gc.freeze()
    sys.exit(code)


# What callers read from this package that lives in app.py; any other name is a submodule,
# which ``from tierflow.cli import x`` then imports as usual.
APP_NAMES = frozenset({"build_parser", "READS_STORE_ONLY", "RUNS_AIRFLOW", "DESCRIPTION"})


def __getattr__(name: str) -> Any:
    if name not in APP_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from tierflow.cli import app

    return getattr(app, name)


def _say_version() -> None:
    try:
        print(f"tierflow {version()}", flush=True)
    except BrokenPipeError:  # ``tierflow --version | true``: the reader is gone
        from tierflow.cli.app import _reader_gone

        raise SystemExit(_reader_gone()) from None
    raise SystemExit(0)
