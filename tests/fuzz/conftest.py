"""Hypothesis profiles of the property-based tests, and a count of the cases each one ran.

``make test`` runs the ``ci`` profile: a few hundred derandomized cases per property, so the
suite is fast and every run checks the same inputs. ``make fuzz`` runs the ``fuzz`` profile:
10,000 fresh random cases per property, no example database, and a reproduction blob printed
with any failure. ``HYPOTHESIS_PROFILE`` picks the profile.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

from tests.fuzz.support import CASES

# Properties generate whole files; hypothesis' health check would call some of them too slow.
_SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large]

settings.register_profile(
    "ci",
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=_SLOW_OK,
)
settings.register_profile(
    "fuzz",
    max_examples=10_000,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=_SLOW_OK,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line per property with the cases it passed, so "fuzz cases run" can be quoted."""
    if not CASES:
        return
    profile = settings.get_current_profile_name()
    terminalreporter.section(f"fuzz cases run (hypothesis profile {profile!r})")
    for name, count in sorted(CASES.items()):
        terminalreporter.write_line(f"{count:>8,}  {name}")
    terminalreporter.write_line(f"{sum(CASES.values()):>8,}  total in {len(CASES)} properties")
