"""Settings come from TIERFLOW_* variables; bad values are named, not silently defaulted."""

from __future__ import annotations

from pathlib import Path

import pytest

from tierflow.config import InvalidSettingError, Settings


def test_embedded_defaults_round_trip_through_the_environment(tmp_path: Path):
    settings = Settings.embedded(tmp_path, keyring=tmp_path / "keyring.json", chunk_prefetch=2)
    assert Settings.from_env(settings.as_env()) == settings
    assert settings.db_url == f"sqlite:///{tmp_path.resolve() / 'tierflow.db'}"
    assert settings.delete_local_segments is False, "deleting broker files is opt-in"


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("TIERFLOW_CHUNK_SIZE", "0", "must be at least 1"),
        ("TIERFLOW_CHUNK_SIZE", "4MiB", "expected a whole number"),
        ("TIERFLOW_COMPRESSION", "maybe", "expected true or false"),
        ("TIERFLOW_STORAGE_LAYOUT", "zip", "expected chunked or plain"),
        ("TIERFLOW_CHUNK_CACHE_BYTES", "-1", "must be at least 0"),
    ],
)
def test_invalid_values_name_the_variable(tmp_path: Path, name: str, value: str, message: str):
    env = {**Settings.embedded(tmp_path).as_env(), name: value}
    with pytest.raises(InvalidSettingError, match=f"{name}=.*{message}"):
        Settings.from_env(env)


def test_flags_accept_the_usual_spellings(tmp_path: Path):
    env = Settings.embedded(tmp_path).as_env()
    for raw, expected in (("yes", True), ("1", True), ("OFF", False), ("", True)):
        assert Settings.from_env({**env, "TIERFLOW_COMPRESSION": raw}).compression is expected


def test_settings_never_print_the_store_password(tmp_path: Path) -> None:
    settings = Settings.embedded(tmp_path, db_url="postgresql+psycopg://tf:s3cr3t-pw@db/tierflow")
    assert "s3cr3t-pw" not in repr(settings) and "s3cr3t-pw" not in str(settings)
