"""TIERFLOW_DISKLESS_* settings: Kafka's defaults here, round trip, bad values named."""

from __future__ import annotations

from pathlib import Path

import pytest

from tierflow.config import DisklessSettings, InvalidSettingError, Settings


def test_defaults_and_round_trip(tmp_path: Path) -> None:
    settings = Settings.embedded(tmp_path)
    assert settings.diskless == DisklessSettings(
        append_buffer_max_bytes=4 * 1024 * 1024,
        append_commit_interval_ms=250,
        delete_grace_ms=60_000,
        uncommitted_grace_ms=600_000,
    )
    env = {**settings.as_env(), "TIERFLOW_DISKLESS_APPEND_COMMIT_INTERVAL_MS": "50"}
    changed = Settings.from_env(env)
    assert changed.diskless.append_commit_interval_ms == 50
    assert Settings.from_env(changed.as_env()) == changed


def test_a_bad_value_names_the_variable(tmp_path: Path) -> None:
    env = {**Settings.embedded(tmp_path).as_env(), "TIERFLOW_DISKLESS_APPEND_BUFFER_MAX_BYTES": "0"}
    with pytest.raises(InvalidSettingError, match="TIERFLOW_DISKLESS_APPEND_BUFFER_MAX_BYTES="):
        Settings.from_env(env)
