"""The store with something in every section of the page, defined once in
tests/operator_view/conftest.py."""

from tests.operator_view.conftest import view_data  # noqa: F401
