"""Hypothesis profiles of the property-based tests, and a count of the cases each one ran.

``make test`` runs the ``ci`` profile: a few hundred derandomized cases per property, so the
suite is fast and every run checks the same inputs. ``make fuzz`` runs the ``fuzz`` profile:
10,000 fresh random cases per property, no example database, and a reproduction blob printed
with any failure. ``HYPOTHESIS_PROFILE`` picks the profile.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from tests.fuzz.support import CASES
from tests.support.fuzz_report import FUZZ_CASES

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


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    """Each property's report carries the cases it passed: the session's summary
    (tests.support.fuzz_report) counts them where the reports arrive, which under
    pytest-xdist is the controller, not the worker that ran the property."""
    outcome = yield
    if call.when == "call" and CASES:
        outcome.get_result().user_properties.append((FUZZ_CASES, dict(CASES)))
        CASES.clear()
