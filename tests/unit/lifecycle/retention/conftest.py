"""The tiered stores of the retention tests, defined once in tests/retention/conftest.py."""

from tests.retention.conftest import tiered, tiered_any_layout  # noqa: F401
