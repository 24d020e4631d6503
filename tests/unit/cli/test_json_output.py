"""``--json`` of ``topics list``, ``events`` and ``keys list``: stable keys, exact values, the
same facts the tables show."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.tiered import Tiered
from tierflow.cli import main
from tierflow.units import iso_utc

TOPIC_KEYS = {
    "topic",
    "topic_id",
    "copier",
    "tiered_state",
    "tiered_epoch",
    "updated_ms",
    "configs",
}
EVENT_KEYS = {
    "id",
    "time",
    "event_timestamp_ms",
    "entity",
    "topic_id",
    "partition",
    "segment_id",
    "from_state",
    "to_state",
    "actor",
}


@pytest.fixture
def copied(untiered: Tiered) -> Tiered:
    assert main(["copy", "--topic", "orders"]) == 0
    return untiered


def json_of(capsys: pytest.CaptureFixture[str], *argv: str) -> object:
    capsys.readouterr()
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_topics_list_json_names_configs_as_kafka_does(
    copied: Tiered, capsys: pytest.CaptureFixture[str]
) -> None:
    topics = json_of(capsys, "topics", "list", "--json")
    assert [t["topic"] for t in topics] == [t.name for t in copied.store.topics()]
    for document in topics:
        assert set(document) == TOPIC_KEYS
        row = copied.store.topic(document["topic"])
        assert document["configs"]["remote.storage.enable"] == "true"
        assert document["configs"]["retention.ms"] == str(row.retention_ms)
        assert (document["topic_id"], document["tiered_state"]) == (row.topic_id, "ENABLED")


def test_events_json_has_every_transition_with_exact_and_iso_times(
    copied: Tiered, capsys: pytest.CaptureFixture[str]
) -> None:
    events = json_of(capsys, "events", "--topic", "orders", "--limit", "1000", "--json")
    topic_id = copied.store.topic("orders").topic_id
    stored = copied.store.events(topic_id=topic_id, segment_id=None)
    assert [e["id"] for e in events] == [e.id for e in stored]
    for document in events:
        assert set(document) == EVENT_KEYS
        assert document["time"] == iso_utc(document["event_timestamp_ms"])
    finished = [e for e in events if e["to_state"] == "COPY_SEGMENT_FINISHED"]
    assert finished and all(e["from_state"] == "COPY_SEGMENT_STARTED" for e in finished)
    newest = json_of(capsys, "events", "--limit", "2", "--json")
    assert [e["id"] for e in newest] == [e.id for e in copied.store.events()[-2:]]


def test_keys_list_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ring = tmp_path / "keys"
    assert main(["keys", "generate", "--dir", str(ring), "--key-id", "k1"]) == 0
    keyring = ring / "keyring.json"
    assert main(["keys", "add", "--keyring", str(keyring), "--key-id", "k2", "--generate"]) == 0
    listed = json_of(capsys, "keys", "list", "--keyring", str(keyring), "--json")
    assert listed["keyring"] == str(keyring)
    assert [(k["key_id"], k["active"], k["private_key"]) for k in listed["keys"]] == [
        ("k1", True, True),
        ("k2", False, True),
    ]
    assert all(Path(k["public_key_file"]).is_file() for k in listed["keys"])
