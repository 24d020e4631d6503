"""The count of the cases each property-based test passed, printed at the end of the session
so "fuzz cases run" can be quoted. Hooks of the root conftest: under pytest-xdist only the
controller prints the summary, and the reports (each carrying its property's cases, see
tests/fuzz/conftest.py) reach it there."""

from __future__ import annotations

import os
from collections import Counter

import pytest

FUZZ_CASES = "fuzz_cases"
_TOTALS: Counter[str] = Counter()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    for name, value in report.user_properties:
        if name == FUZZ_CASES:
            _TOTALS.update(value)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line per property with the cases it passed."""
    if not _TOTALS:
        return
    profile = os.environ.get("HYPOTHESIS_PROFILE", "ci")
    terminalreporter.section(f"fuzz cases run (hypothesis profile {profile!r})")
    for name, count in sorted(_TOTALS.items()):
        terminalreporter.write_line(f"{count:>8,}  {name}")
    terminalreporter.write_line(f"{sum(_TOTALS.values()):>8,}  total in {len(_TOTALS)} properties")
