"""The CLI tests use the fixtures of the tests of what each command drives; defined there once,
and ``untiered``: a generated broker log dir, its topics registered, nothing copied, the
settings in the environment as the CLI reads them."""

from pathlib import Path

import pytest

from tests.metrics.conftest import partly  # noqa: F401
from tests.operator_view.conftest import view_data  # noqa: F401
from tests.support.settings_env import use_settings
from tests.support.tiered import Tiered, build_tiered
from tests.unit.read.conftest import fresh_tiered, run_cli, tiered  # noqa: F401


@pytest.fixture
def untiered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Tiered:
    t = build_tiered(tmp_path)
    use_settings(monkeypatch, t.settings)
    return t
