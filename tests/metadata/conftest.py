"""Every store test runs twice: on a SQLite file and on a fresh PostgreSQL database.

The parameter ids are the backend names, so ``-k sqlite`` or ``-k postgresql`` picks one.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.metadata.metadata_support import BACKENDS, backend_url


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database per test, on each backend."""
    yield from backend_url(request, request.param, tmp_path)
