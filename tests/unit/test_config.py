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
        ("TIERFLOW_STORAGE_LAYOUT", "zip", "expected chunked, plain or kafka-local"),
        ("TIERFLOW_CHUNK_CACHE_BYTES", "-1", "must be at least 0"),
        ("TIERFLOW_WORKER_PROCESSES", "-2", "must be at least 0"),
    ],
)
def test_invalid_values_name_the_variable(tmp_path: Path, name: str, value: str, message: str):
    env = {**Settings.embedded(tmp_path).as_env(), name: value}
    with pytest.raises(InvalidSettingError, match=f"{name}=.*{message}"):
        Settings.from_env(env)


def test_flags_accept_the_usual_spellings(tmp_path: Path):
    env = Settings.embedded(tmp_path).as_env()
    for raw, expected in (("yes", True), ("1", True), ("OFF", False), ("", True)):
        assert (
            Settings.from_env({**env, "TIERFLOW_COMPRESSION": raw}).storage.compression is expected
        )


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
    assert Settings.from_env().storage.chunk_size == 1024
    lower = {**settings.as_env(), "tierflow_chunk_size": "7"}
    assert Settings.from_env(lower).storage.chunk_size == settings.storage.chunk_size, (
        "names are as spelled"
    )


# Every variable the README documents, each with a value other than its default: the oracle
# for the names, written here by hand rather than read from the declarations.
NOT_DEFAULT = {
    "TIERFLOW_REMOTE_STORAGE": "s3://bucket/tiered",
    "TIERFLOW_STORAGE_LAYOUT": "plain",
    "TIERFLOW_STORAGE_PREFIX": "cluster-a",
    "TIERFLOW_CHUNK_SIZE": "1048576",
    "TIERFLOW_COMPRESSION": "false",
    "TIERFLOW_COMPRESSION_HEURISTIC": "false",
    "TIERFLOW_AWS_CONN_ID": "aws_tiered",
    "TIERFLOW_GCP_CONN_ID": "gcp_tiered",
    "TIERFLOW_AZURE_CONN_ID": "wasb_tiered",
    "TIERFLOW_S3_PART_SIZE": "16777216",
    "TIERFLOW_STORAGE_RETRY_ATTEMPTS": "3",
    "TIERFLOW_STORAGE_RETRY_BASE_MS": "50",
    "TIERFLOW_STORAGE_RETRY_MAX_MS": "5000",
    "TIERFLOW_STORAGE_TIMEOUT_S": "30",
    "TIERFLOW_ICEBERG_CATALOG": "lake",
    "TIERFLOW_KAFKA_BOOTSTRAP": "localhost:9092",
    "TIERFLOW_PUBLISH_REMOTE_LOG_METADATA": "true",
    "TIERFLOW_MAX_SHARDS": "4",
    "TIERFLOW_BROKER_QUEUES": "1=kafka-broker-1,2=kafka-broker-2",
    "TIERFLOW_ALLOW_FIRST_RUN": "true",
    "TIERFLOW_SPARK_THRESHOLD_BYTES": "1024",
    "TIERFLOW_WORKER_PROCESSES": "3",
    "TIERFLOW_CHUNK_CACHE_BYTES": "0",
    "TIERFLOW_CHUNK_CACHE_DISK_BYTES": "1048576",
    "TIERFLOW_CHUNK_PREFETCH": "2",
    "TIERFLOW_DELETE_LOCAL_SEGMENTS": "true",
    "TIERFLOW_INDEX_CACHE_BYTES": "1048576",
    "TIERFLOW_STALE_COPY_GRACE_S": "60",
    "TIERFLOW_COPY_MAX_BYTES_PER_SECOND": "8388608",
    "TIERFLOW_COPY_LEASE_TTL_S": "30",
    "TIERFLOW_RECONCILE_GRACE_S": "0",
    "TIERFLOW_REMOVAL_GRACE_S": "600",
    "TIERFLOW_SCRUB_BUDGET_BYTES": "1048576",
    "TIERFLOW_DISKLESS_APPEND_BUFFER_MAX_BYTES": "1024",
    "TIERFLOW_DISKLESS_APPEND_COMMIT_INTERVAL_MS": "50",
    "TIERFLOW_DISKLESS_DELETE_GRACE_MS": "0",
    "TIERFLOW_DISKLESS_UNCOMMITTED_GRACE_MS": "1000",
}
PATHS = ("DATA_DIR", "KEYRING", "CHUNK_CACHE_DIR", "INDEX_CACHE_DIR")


def test_every_variable_is_read_and_written_back_as_given(tmp_path: Path) -> None:
    paths = {f"TIERFLOW_{name}": str(tmp_path / name.lower()) for name in PATHS}
    brokers = f"1={tmp_path / 'b1'},2={tmp_path / 'b2a'}:{tmp_path / 'b2b'}"
    given = {
        **NOT_DEFAULT,
        **paths,
        "TIERFLOW_DB_URL": "postgresql+psycopg://tf@db/tierflow",
        "TIERFLOW_BROKERS": brokers,
        "TIERFLOW_LOG_DIRS": ":".join(str(tmp_path / d) for d in ("b1", "b2a", "b2b")),
    }
    assert Settings.from_env(given).as_env() == given
