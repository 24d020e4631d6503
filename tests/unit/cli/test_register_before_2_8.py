"""A log dir of a broker before Kafka 2.8 (no partition.metadata) can be registered."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.settings_env import use_settings
from tests.support.tiered import NOW_MS, TOPICS
from tierflow.cli import main
from tierflow.cli.commands import DERIVED_ID_ACTOR
from tierflow.config import Settings
from tierflow.demo.broker import generate_log_dir
from tierflow.kafka.partition_metadata import PARTITION_METADATA
from tierflow.runtime import open_store


def register_without_partition_metadata(
    base: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[str, str, list[str]]:
    """Register payments from a log dir whose payments partitions have no partition.metadata:
    (its id, what the command printed, the actors of its events)."""
    settings = Settings.embedded(base)
    generated = generate_log_dir(settings.log_dirs[0], topics=TOPICS, seed=11, now_ms=NOW_MS)
    for partition in generated.partitions:
        if partition.topic == "payments":
            (settings.log_dirs[0] / f"payments-{partition.partition}" / PARTITION_METADATA).unlink()
    use_settings(monkeypatch, settings)
    assert main(["topics", "register", "payments"]) == 0
    said = " ".join(capsys.readouterr().out.split())
    store = open_store(settings)
    topic_id = store.topic("payments").topic_id
    return topic_id, said, [event.actor for event in store.events(topic_id=topic_id)]


def test_the_topic_id_is_derived_stably_and_the_derivation_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    first, said, actors = register_without_partition_metadata(tmp_path / "a", monkeypatch, capsys)
    again, _, _ = register_without_partition_metadata(tmp_path / "b", monkeypatch, capsys)
    assert first == again, "the same cluster and topic name derive the same id"
    assert f"topic id {first} derived from cluster" in said, said
    assert actors == [DERIVED_ID_ACTOR], "the registration event says the id was derived"
