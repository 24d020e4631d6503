"""Settings come from TIERFLOW_* variables; bad values are named, not silently defaulted."""

from __future__ import annotations

from pathlib import Path

import pytest

from tierflow.config import ENV_PREFIX, InvalidSettingError, Settings, _Environment


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
        ("TIERFLOW_STORAGE_LAYOUT", "zip", "expected chunked, plain or kafka-local"),
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


def test_the_message_is_one_line_with_the_value_as_given(tmp_path: Path) -> None:
    env = Settings.embedded(tmp_path).as_env()
    for name, value, line in (
        ("TIERFLOW_CHUNK_SIZE", "0", "TIERFLOW_CHUNK_SIZE='0': must be at least 1"),
        ("TIERFLOW_MAX_SHARDS", "1.0", "TIERFLOW_MAX_SHARDS='1.0': expected a whole number"),
        (
            "TIERFLOW_DELETE_LOCAL_SEGMENTS",
            "t",
            "TIERFLOW_DELETE_LOCAL_SEGMENTS='t': expected true or false",
        ),
    ):
        with pytest.raises(InvalidSettingError) as raised:
            Settings.from_env({**env, name: value})
        assert str(raised.value) == line


def test_a_given_mapping_is_read_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIERFLOW_CHUNK_SIZE", "not a number")
    settings = Settings.embedded(tmp_path)
    assert Settings.from_env(settings.as_env()) == settings
    monkeypatch.setenv("TIERFLOW_CHUNK_SIZE", "1024")
    assert Settings.from_env().chunk_size == 1024
    lower = {**settings.as_env(), "tierflow_chunk_size": "7"}
    assert Settings.from_env(lower).chunk_size == settings.chunk_size, "names are as spelled"


def test_every_variable_read_is_one_as_env_writes(tmp_path: Path) -> None:
    read = {ENV_PREFIX + name.upper() for name in _Environment.model_fields}
    assert read == set(Settings.embedded(tmp_path).as_env())
