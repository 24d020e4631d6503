"""The SQLite-only diskless environment, defined once in tests/diskless/conftest.py."""

from tests.diskless.conftest import sqlite_env  # noqa: F401
