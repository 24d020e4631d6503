"""Every coordinator test runs on a SQLite file and on a fresh PostgreSQL database (ids
``sqlite`` and ``postgresql``, so ``-k sqlite`` picks one)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.diskless.diskless_support import Env, make_env
from tests.metadata.metadata_support import BACKENDS, backend_url


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    yield from backend_url(request, request.param, tmp_path)


@pytest.fixture
def env(store_url: str, tmp_path: Path) -> Iterator[Env]:
    made = make_env(store_url, tmp_path / "bucket")
    yield made
    made.store.close()


@pytest.fixture
def sqlite_env(tmp_path: Path) -> Iterator[Env]:
    """SQLite only: for tests of the format and read path, where the backend does not matter."""
    made = make_env(f"sqlite:///{tmp_path / 'metadata.db'}", tmp_path / "bucket")
    yield made
    made.store.close()
