"""The CLI tests use the fixtures of the tests of what each command drives; defined there once."""

from tests.metrics.conftest import partly  # noqa: F401
from tests.operator_view.conftest import view_data  # noqa: F401
from tests.unit.read.conftest import fresh_tiered, run_cli, tiered  # noqa: F401
