"""The export tests' tiered topic: ``orders`` copied to a chunked, encrypted bucket and
registered for the Iceberg export. Modules that need it made otherwise define their own."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.settings_env import use_settings
from tests.support.tiered import Tiered, build_tiered
from tierflow.cli import main


@pytest.fixture
def tiered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Tiered:
    t = build_tiered(tmp_path, layout="chunked-encrypted")
    use_settings(monkeypatch, t.settings)
    assert main(["topics", "register", "orders", "--config", "tierflow.iceberg.export=true"]) == 0
    assert main(["copy", "--owner", "test", "--no-spark"]) == 0
    return t
