"""The one way commands make rich consoles.

On a terminal rich fits output to the window. Off a terminal (a pipe, a file, a CI log, a test
capture) nothing is wrapped or cut: a message, a path or a state name is grepped and copied
from there, so every line is as long as it needs to be and every table cell whole.
"""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console

# Wider than any line the CLI prints, so off a terminal rich never wraps nor truncates. (It is
# an upper bound, not a pad: tables and messages take only the width they need.)
UNBOUNDED_WIDTH = 100_000


def stdout_console(**options: Any) -> Console:
    """A console on stdout: the terminal's width there, unbounded and soft-wrapped elsewhere."""
    return _console(sys.stdout.isatty(), options)


def stderr_console(**options: Any) -> Console:
    """A console on stderr (warnings, progress), sized like ``stdout_console``."""
    return _console(sys.stderr.isatty(), {**options, "stderr": True})


def data_console() -> Console:
    """For lines that quote data (keys, payloads, paths): no markup, emoji codes or highlighting,
    so ``[x]`` or ``:x:`` inside a key prints as itself."""
    return stdout_console(soft_wrap=True, markup=False, emoji=False, highlight=False)


def _console(on_terminal: bool, options: dict[str, Any]) -> Console:
    if on_terminal:
        return Console(**options)
    return Console(**{**options, "width": UNBOUNDED_WIDTH, "soft_wrap": True})


def airflow_logging_to_stderr(verbose: bool) -> None:
    """Importing Airflow (the Spark hook) points its logging, stdlib and structlog, at stdout
    at INFO: put it back on stderr at the level the command was given (-v: INFO)."""
    import logging

    import airflow.providers.apache.spark.hooks.spark_submit  # noqa: F401 - sets logging up
    import structlog

    level = logging.INFO if verbose else logging.WARNING
    logging.basicConfig(
        stream=sys.stderr,
        level=level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        force=True,
    )
    structlog.configure(
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        wrapper_class=structlog.make_filtering_bound_logger(level),
    )
