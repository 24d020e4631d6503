"""``tierflow verify --topic`` of a topic it cannot check is a not-found error naming the topic,
not an empty table and exit 0."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.support.settings_env import use_settings
from tests.support.tiered import build_tiered
from tierflow.cli import main
from tierflow.cli.exit_codes import NOT_FOUND
from tierflow.ids import to_kafka_uuid


@pytest.fixture
def tiered_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    t = build_tiered(tmp_path)
    use_settings(monkeypatch, t.settings)
    return t


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_an_unregistered_topic_is_not_found(tiered_cli, capsys) -> None:
    assert main(["verify", "--topic", "nosuch"]) == NOT_FOUND
    assert "nosuch" in one_error_line(capsys)


def test_a_registered_topic_without_local_partitions_is_not_found(tiered_cli, capsys) -> None:
    tiered_cli.store.register_topic(
        "ghost", to_kafka_uuid(uuid.UUID(int=7)), actor="test", now_ms=0, remote_storage_enable=True
    )
    assert main(["verify", "--topic", "ghost"]) == NOT_FOUND
    line = one_error_line(capsys)
    assert "ghost" in line and "log dirs" in line


def test_a_known_topic_still_verifies(tiered_cli, capsys) -> None:
    assert main(["copy", "--topic", "payments"]) == 0
    assert main(["verify", "--topic", "payments"]) == 0
    err = capsys.readouterr().err.splitlines()  # only progress, no error
    assert [line.split(":")[0] for line in err] == ["copy", "verify"], err
