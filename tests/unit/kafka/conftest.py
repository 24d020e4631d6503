"""Fixtures for the Kafka format tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.kafka.log_builders import SAMPLES


@pytest.fixture
def samples_root() -> Path:
    """The real broker-written samples; tests using them skip when the folder is absent."""
    if not SAMPLES.is_dir():
        pytest.skip(f"real Kafka samples not present at {SAMPLES}")
    return SAMPLES
