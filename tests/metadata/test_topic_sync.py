"""``tierflow topics sync``: topics from the log dirs (configs from the KRaft metadata log), from
the real Kafka 4.0 sample, and from a cluster; reruns; what Kafka never tiers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.support.kafka_metadata_server import KafkaMetadataServer
from tests.support.settings_env import use_settings
from tests.unit.kafka.log_builders import SAMPLES
from tierflow.cli import main
from tierflow.config import Settings
from tierflow.demo.broker import TopicSpec, generate_log_dir
from tierflow.ids import new_kafka_uuid
from tierflow.kafka.metadata_log import METADATA_PARTITION_DIR
from tierflow.kafka.metadata_log.writer import (
    MetadataLogWriter,
    partition_record,
    topic_config_record,
    topic_record,
)
from tierflow.kafka.partition_metadata import write_partition_metadata
from tierflow.metadata.states import TieredState
from tierflow.runtime import open_store

NOW_MS = 1_700_000_000_000
TOPICS = (
    TopicSpec(name="orders", partitions=2, segments=2),
    TopicSpec(name="payments", partitions=1, segments=2),
)
SAMPLE_LOGS = SAMPLES / "thanhnhadev__Data_Enginer/data/logs"


def _empty_partition(log_dir: Path, topic: str, topic_id: str) -> None:
    directory = log_dir / f"{topic}-0"
    directory.mkdir(parents=True)
    (directory / "00000000000000000000.log").touch()
    write_partition_metadata(directory / "partition.metadata", topic_id)


@pytest.fixture
def cluster(tmp_path: Path) -> tuple[Settings, MetadataLogWriter, dict[str, str]]:
    """Two brokers' log dirs: orders-0 on both, an internal and a compacted topic, and a
    KRaft metadata log holding the topics' config overrides."""
    broker1, broker2 = tmp_path / "broker-1", tmp_path / "broker-2"
    settings = Settings.embedded(tmp_path, log_dirs=(broker1, broker2))
    generate_log_dir(broker1, topics=TOPICS, seed=3, now_ms=NOW_MS)
    broker2.mkdir()
    shutil.copytree(broker1 / "orders-0", broker2 / "orders-0")  # a follower's replica
    ids = {
        p.name[:-2]: (p / "partition.metadata").read_text().split()[-1] for p in broker1.glob("*-0")
    }
    ids |= {"__consumer_offsets": new_kafka_uuid(), "changelog": new_kafka_uuid()}
    _empty_partition(broker2, "__consumer_offsets", ids["__consumer_offsets"])
    _empty_partition(broker2, "changelog", ids["changelog"])
    writer = MetadataLogWriter(broker1 / METADATA_PARTITION_DIR)
    for name, topic_id in ids.items():
        writer.append(topic_record(name, topic_id), partition_record(topic_id, 0, [1, 2]))
    writer.append(
        topic_config_record("orders", "retention.ms", "3600000"),
        topic_config_record("payments", "remote.storage.enable", "false"),
        topic_config_record("changelog", "cleanup.policy", "compact,delete"),
        topic_config_record("__consumer_offsets", "cleanup.policy", "compact"),
    )
    return settings, writer, ids


def _sync(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    settings: Settings,
    *args: str,
) -> tuple[int, dict[str, dict[str, object]]]:
    use_settings(monkeypatch, settings)
    capsys.readouterr()
    code = main(["topics", "sync", "--json", *args])
    return code, {o["topic"]: o for o in json.loads(capsys.readouterr().out)}


def test_sync_registers_the_log_dir_topics_with_kafka_configs(
    cluster: tuple[Settings, MetadataLogWriter, dict[str, str]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings, _, ids = cluster
    code, out = _sync(monkeypatch, capsys, settings, "--config", "remote.storage.enable=true")
    assert code == 0
    assert {name: o["action"] for name, o in out.items()} == {
        "__consumer_offsets": "skipped",
        "changelog": "created",
        "orders": "created",
        "payments": "created",
    }
    assert "internal topic" in str(out["__consumer_offsets"]["reason"])
    store = open_store(settings)
    changelog = store.topic("changelog")
    assert (changelog.cleanup_policy, changelog.remote_storage_enable) == ("compact,delete", True)
    orders, payments = store.topic("orders"), store.topic("payments")
    assert orders.topic_id == ids["orders"]
    # The topic's own override wins; the --config default fills what it does not set.
    assert (orders.remote_storage_enable, orders.retention_ms) == (True, 3600000)
    assert (payments.remote_storage_enable, payments.retention_ms) == (False, 604_800_000)
    assert {t.name for t in store.topics()} == {"changelog", "orders", "payments"}


def test_rerun_reports_unchanged_then_updates_what_kafka_changed(
    cluster: tuple[Settings, MetadataLogWriter, dict[str, str]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings, writer, _ = cluster
    default = ("--config", "remote.storage.enable=true")
    _sync(monkeypatch, capsys, settings, *default)
    _, again = _sync(monkeypatch, capsys, settings, *default)
    assert {again[t]["action"] for t in ("orders", "payments")} == {"unchanged"}
    assert again["orders"]["changes"] == {} and again["orders"]["warnings"] == []
    writer.roll()
    writer.append(
        topic_config_record("orders", "retention.ms", None),  # deleted: the source is silent
        topic_config_record("payments", "retention.ms", "86400000"),
    )
    _, dry = _sync(monkeypatch, capsys, settings, "--dry-run", *default)
    assert (dry["orders"]["action"], dry["payments"]["action"]) == ("unchanged", "updated")
    assert dry["payments"]["changes"] == {"retention.ms": {"old": "604800000", "new": "86400000"}}
    assert open_store(settings).topic("payments").retention_ms == 604_800_000  # nothing written
    _, updated = _sync(monkeypatch, capsys, settings, *default)
    assert updated["payments"]["action"] == "updated"
    store = open_store(settings)
    # A key no source states keeps its registered value (here the override Kafka dropped).
    assert store.topic("orders").retention_ms == 3_600_000
    assert store.topic("payments").retention_ms == 86_400_000


def _enable_by_hand(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    settings: Settings,
    topic_id: str,
) -> None:
    """What an operator does: ``tierflow topics register orders --config ...=true``."""
    use_settings(monkeypatch, settings)
    enable = ("--topic-id", topic_id, "--config", "remote.storage.enable=true")
    assert main(["topics", "register", "orders", *enable]) == 0
    assert open_store(settings).topic("orders").state is TieredState.ENABLED
    capsys.readouterr()


def test_a_topic_enabled_by_hand_stays_enabled_when_the_source_says_nothing(
    cluster: tuple[Settings, MetadataLogWriter, dict[str, str]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings, _, ids = cluster
    _, first = _sync(monkeypatch, capsys, settings)
    assert first["orders"]["configs"]["remote.storage.enable"] == "false"  # Kafka's default
    _enable_by_hand(monkeypatch, capsys, settings, ids["orders"])
    code, out = _sync(monkeypatch, capsys, settings)
    assert code == 0
    assert (out["orders"]["action"], out["orders"]["warnings"]) == ("unchanged", [])
    assert out["orders"]["configs"]["remote.storage.enable"] == "true"
    orders = open_store(settings).topic("orders")
    assert (orders.remote_storage_enable, orders.state) == (True, TieredState.ENABLED)


def test_an_explicit_false_in_the_metadata_log_disables_and_says_so(
    cluster: tuple[Settings, MetadataLogWriter, dict[str, str]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings, writer, ids = cluster
    _sync(monkeypatch, capsys, settings)
    _enable_by_hand(monkeypatch, capsys, settings, ids["orders"])
    writer.roll()
    writer.append(topic_config_record("orders", "remote.storage.enable", "false"))
    assert main(["topics", "sync", "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert "remote.storage.enable: true -> false" in text
    warnings = [line for line in text.splitlines() if line.startswith("WARNING")]
    assert len(warnings) == 1  # one line per topic, however long
    assert warnings[0].startswith(
        "WARNING (dry run, would apply): orders: remote.storage.enable true -> false"
    )
    assert warnings[0].endswith("until retention expires it")
    assert open_store(settings).topic("orders").state is TieredState.ENABLED  # nothing written
    code, out = _sync(monkeypatch, capsys, settings)
    assert code == 0
    orders = out["orders"]
    assert orders["action"] == "updated"
    assert orders["changes"] == {"remote.storage.enable": {"old": "true", "new": "false"}}
    assert orders["warnings"] == [
        "orders: remote.storage.enable true -> false (the topic's own config in Kafka): the "
        "topic goes to DISABLING and KIP-950 disablement keeps its remote data read-only until "
        "retention expires it"
    ]
    assert out["payments"]["warnings"] == []
    assert open_store(settings).topic("orders").state is TieredState.DISABLING


def test_json_warnings_also_go_to_stderr(
    cluster: tuple[Settings, MetadataLogWriter, dict[str, str]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An explicit --config false disables too, and a script reading stdout is still told."""
    settings, _, _ = cluster
    _sync(monkeypatch, capsys, settings, "--config", "remote.storage.enable=true")
    capsys.readouterr()
    code = main(["topics", "sync", "--json", "--config", "remote.storage.enable=false"])
    captured = capsys.readouterr()
    assert code == 0
    out = {o["topic"]: o for o in json.loads(captured.out)}
    # payments was never enabled: Kafka's own config says false, which beats --config.
    assert out["payments"]["warnings"] == []
    assert len(out["orders"]["warnings"]) == 1
    assert "(the --config default)" in out["orders"]["warnings"][0]
    warned = ("changelog", "orders")  # the compacted changelog was enabled too
    assert captured.err.splitlines() == [f"WARNING: {out[t]['warnings'][0]}" for t in warned]


def test_topic_ids_that_disagree_fail_that_topic_only(
    cluster: tuple[Settings, MetadataLogWriter, dict[str, str]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A dir left from a deleted incarnation of the name: the metadata log's id is Kafka's."""
    settings, _, ids = cluster
    stale = new_kafka_uuid()
    write_partition_metadata(settings.log_dirs[1] / "orders-0" / "partition.metadata", stale)
    code, out = _sync(monkeypatch, capsys, settings)
    assert code == 1
    assert out["orders"]["action"] == "failed"
    assert f"log dirs hold topic id(s) {stale} but the metadata log says {ids['orders']}" in str(
        out["orders"]["reason"]
    )
    assert out["payments"]["action"] == "created"


def test_register_refuses_internal_topics(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use_settings(monkeypatch, Settings.embedded(tmp_path))
    for name in ("__consumer_offsets", "__transaction_state", "__remote_log_metadata"):
        capsys.readouterr()
        code = main(["topics", "register", name, "--topic-id", new_kafka_uuid()])
        err = capsys.readouterr().err.strip()
        assert code == 2
        assert len(err.splitlines()) == 1 and f"topic {name}: " in err and "never tier" in err


def test_sync_from_the_kafka_4_sample(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    if not SAMPLE_LOGS.is_dir():
        pytest.skip(f"real Kafka samples not present at {SAMPLES}")
    settings = Settings.embedded(tmp_path, log_dirs=(SAMPLE_LOGS,))
    code, out = _sync(monkeypatch, capsys, settings)
    assert code == 0
    # Reference §8: no ConfigRecord, so every topic takes Kafka's defaults (not tiered).
    assert {name: (o["topic_id"], o["action"]) for name, o in out.items()} == {
        "demo-topic": ("k4aNnUMjRpGjG__v5ciNsw", "created"),
        "demo.orders": ("DO-MxASdQvK1gWdIMjBZbg", "created"),
        "demos-topic": ("o2YW3a3ITuGD_YpaS1WnZg", "created"),
        "lab.orders": ("Cir6k_qzQUmcJTezNUDiug", "created"),
    }
    assert {o["configs"]["remote.storage.enable"] for o in out.values()} == {"false"}
    _, again = _sync(monkeypatch, capsys, settings, "--config", "remote.storage.enable=true")
    assert {o["action"] for o in again.values()} == {"updated"}
    assert all(t.remote_storage_enable for t in open_store(settings).topics())


def test_sync_from_a_cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    topics = {
        "orders": new_kafka_uuid(),
        "__consumer_offsets": new_kafka_uuid(),
        "changelog": new_kafka_uuid(),
    }
    configs = {
        "orders": {
            "remote.storage.enable": "true",
            "retention.ms": "60000",
            "segment.bytes": "1048576",
        },
        "changelog": {"cleanup.policy": "compact"},
    }
    (tmp_path / "kafka-logs").mkdir()
    with KafkaMetadataServer(topics, configs=configs) as server:
        settings = Settings.embedded(tmp_path, kafka_bootstrap=server.bootstrap)
        code, out = _sync(monkeypatch, capsys, settings)
        server.configs["orders"]["retention.ms"] = "120000"
        _, again = _sync(monkeypatch, capsys, settings)
    assert code == 0
    assert {name: o["action"] for name, o in out.items()} == {
        "__consumer_offsets": "skipped",
        "changelog": "created",
        "orders": "created",
    }
    assert open_store(settings).topic("changelog").cleanup_policy == "compact"
    assert out["orders"]["topic_id"] == topics["orders"]
    assert again["orders"]["action"] == "updated"
    orders = open_store(settings).topic("orders")
    assert (orders.remote_storage_enable, orders.retention_ms) == (True, 120000)


def test_sync_help_explains(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["topics", "sync", "--help"])
    text = capsys.readouterr().out
    assert "TIERFLOW_KAFKA_BOOTSTRAP" in text and "--dry-run" in text and "compacted" in text
