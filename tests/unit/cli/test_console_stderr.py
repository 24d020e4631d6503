"""The CLI's log handler writes to stderr as it is at each record (cli.console.CurrentStderr).

A handler bound to the stderr of the moment logging was set up writes to it after it was
swapped out and closed (a test's capture, a redirect): Python prints "--- Logging error ---"
and a traceback instead of the one-line warning.
"""

from __future__ import annotations

import io
import logging

import pytest

from tierflow.cli.console import CurrentStderr


def test_a_warning_reaches_the_stderr_of_the_moment(monkeypatch: pytest.MonkeyPatch) -> None:
    first = io.StringIO()
    monkeypatch.setattr("sys.stderr", first)
    handler = CurrentStderr()
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    logger = logging.getLogger("tierflow.test.current-stderr")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        first.close()
        now = io.StringIO()
        monkeypatch.setattr("sys.stderr", now)
        logger.warning("one line")
        assert now.getvalue() == "WARNING one line\n"
    finally:
        logger.removeHandler(handler)
