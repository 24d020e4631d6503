"""Invalid topic configs and hostile topic names: rejected with the config or name spelled out,
before any row, event or object exists, through the library and through ``tierflow topics
register``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.corpus.state import snapshot
from tests.support.settings_env import use_settings
from tests.support.tiered import Tiered, build_tiered
from tierflow.cli import main
from tierflow.ids import new_kafka_uuid
from tierflow.metadata.errors import InvalidConfigError, TopicConflictError
from tierflow.metadata.log_config import parse_kafka_configs
from tierflow.rsm import RemoteSegment
from tierflow.storage.keys import InvalidTopicNameError, validate_topic_name

EXISTING = "orders"  # registered by build_tiered, remote.storage.enable=true
NEW = "audit"  # not registered, not in the log dirs


@dataclass(frozen=True)
class ConfigCase:
    name: str
    configs: dict[str, str]
    message: str  # regex


CONFIG_CASES = [
    ConfigCase(
        "retention.ms not a number",
        {"retention.ms": "abc"},
        r"retention\.ms=abc is not an integer",
    ),
    ConfigCase(
        "local.retention.bytes above retention.bytes",
        {"remote.storage.enable": "true", "retention.bytes": "100", "local.retention.bytes": "200"},
        r"local\.retention\.bytes=200 must be <= retention\.bytes=100",
    ),
    ConfigCase(
        "local.retention.ms above retention.ms",
        {"remote.storage.enable": "true", "retention.ms": "1000", "local.retention.ms": "5000"},
        r"local\.retention\.ms=5000 must be <= retention\.ms=1000",
    ),
    ConfigCase(
        "unknown config name",
        {"retention.msec": "1000"},
        r"retention\.msec: unknown topic config",
    ),
    ConfigCase(
        "an empty cleanup policy",
        {"cleanup.policy": " , "},
        r"cleanup\.policy=: must be a list of delete, compact",
    ),
    ConfigCase(
        "unknown cleanup policy",
        {"cleanup.policy": "shred"},
        r"cleanup\.policy=shred: .*delete, compact",
    ),
    ConfigCase(
        "remote.storage.enable not a boolean",
        {"remote.storage.enable": "yes"},
        r"remote\.storage\.enable=yes must be true or false",
    ),
    ConfigCase(
        "negative retention.bytes",
        {"retention.bytes": "-5"},
        r"retention\.bytes=-5 must be >= -1",
    ),
]


def run_cli(t: Tiered, monkeypatch: pytest.MonkeyPatch, capsys, argv: list[str]) -> tuple[int, str]:
    use_settings(monkeypatch, t.settings)
    capsys.readouterr()
    code = main(argv)
    return code, capsys.readouterr().err


@pytest.fixture
def tiered(tmp_path: Path) -> Tiered:
    return build_tiered(tmp_path)


def topic_id_of(t: Tiered, name: str) -> str:
    return t.store.topic(name).topic_id if name == EXISTING else new_kafka_uuid()


@pytest.mark.parametrize("topic", [EXISTING, NEW])
@pytest.mark.parametrize("case", CONFIG_CASES, ids=lambda c: c.name)
def test_invalid_config_changes_nothing(
    tiered: Tiered, monkeypatch: pytest.MonkeyPatch, capsys, case: ConfigCase, topic: str
) -> None:
    before = snapshot(tiered)
    topic_id = topic_id_of(tiered, topic)

    with pytest.raises(InvalidConfigError, match=case.message):
        tiered.store.register_topic(
            topic, topic_id, actor="corpus", now_ms=1, **parse_kafka_configs(case.configs)
        )
    assert snapshot(tiered) == before

    argv = ["topics", "register", topic, "--topic-id", topic_id]
    for name, value in case.configs.items():
        argv += ["--config", f"{name}={value}"]
    code, err = run_cli(tiered, monkeypatch, capsys, argv)
    assert code == 2
    assert re.search(r"^tierflow: error: .*" + case.message, err), err
    assert snapshot(tiered) == before


HOSTILE_NAMES = {
    "parent directory": "../orders",
    "nested traversal": "orders/../../etc",
    "absolute path": "/etc/passwd",
    "slash": "orders/0",
    "NUL": "orders\x00x",
    "too long": "t" * 250,
    "dot": ".",
    "dot dot": "..",
    "empty": "",
    "space": "my topic",
    "backslash": "..\\orders",
    "trailing newline": "orders\n",
}


@pytest.mark.parametrize("name", HOSTILE_NAMES.values(), ids=HOSTILE_NAMES.keys())
def test_hostile_topic_name_is_rejected_before_any_key_or_row(
    tiered: Tiered, monkeypatch: pytest.MonkeyPatch, capsys, name: str
) -> None:
    before = snapshot(tiered)
    named = re.escape(repr(name))
    illegal = f"illegal topic name {named}"

    with pytest.raises(InvalidTopicNameError, match=illegal):
        validate_topic_name(name)
    segment = RemoteSegment(name, new_kafka_uuid(), 0, new_kafka_uuid(), 0, 9)
    with pytest.raises(InvalidTopicNameError, match=illegal):
        tiered.rsm.key(segment, "log")
    with pytest.raises(InvalidTopicNameError, match=illegal):
        tiered.store.register_topic(
            name, new_kafka_uuid(), actor="corpus", now_ms=1, remote_storage_enable=True
        )
    assert snapshot(tiered) == before

    for argv in (
        ["topics", "register", name, "--topic-id", new_kafka_uuid()],
        ["topics", "register", name, "--config", "remote.storage.enable=true"],
    ):
        code, err = run_cli(tiered, monkeypatch, capsys, argv)
        assert code == 2
        assert re.search(f"^tierflow: error: {illegal}", err), err
    assert snapshot(tiered) == before


@pytest.mark.parametrize(
    "topic_id", ["not-a-uuid", "", "../AAAAAAAAAAAAAAAAAAAA", "3Ld2yxqAQXGhsYHpGRjNpw\n"]
)
def test_invalid_topic_id_is_rejected_before_any_row(
    tiered: Tiered, monkeypatch: pytest.MonkeyPatch, capsys, topic_id: str
) -> None:
    before = snapshot(tiered)
    invalid = f"topic {NEW}: invalid topic id {re.escape(repr(topic_id))}"
    with pytest.raises(ValueError, match=invalid):
        tiered.store.register_topic(NEW, topic_id, actor="corpus", now_ms=1)
    code, err = run_cli(
        tiered, monkeypatch, capsys, ["topics", "register", NEW, "--topic-id", topic_id]
    )
    assert code == 2
    assert re.search(f"^tierflow: error: {invalid}", err), err
    assert snapshot(tiered) == before


def test_registered_name_with_another_id_is_refused_by_the_cli(
    tiered: Tiered, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    before = snapshot(tiered)
    other = new_kafka_uuid()
    registered = tiered.store.topic(EXISTING).topic_id
    message = f"topic {EXISTING} is registered with id {registered}, not {other}"
    with pytest.raises(TopicConflictError, match=message):
        tiered.store.register_topic(EXISTING, other, actor="corpus", now_ms=1)
    code, err = run_cli(
        tiered, monkeypatch, capsys, ["topics", "register", EXISTING, "--topic-id", other]
    )
    assert code == 2
    assert re.search(f"^tierflow: error: {message}", err), err
    assert snapshot(tiered) == before
