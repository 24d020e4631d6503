"""A real broker configured with exactly what ``tierflow broker-config`` prints tiers into
tierflow's bucket.

``tierflow broker-config`` runs as the operator runs it (the console script, the settings in
the environment) for a directory bucket in the ``kafka-local`` layout. Every property it prints
becomes the broker's override; the test adds only what is its own: the harness's listener and
ports (dev/kafka_broker.py) and a replication factor of 1 for ``__remote_log_metadata`` on a
single broker. A topic with ``remote.storage.enable=true`` and 1 MiB segments gets 4 MiB, and
the broker's own RemoteLogManager copies the rolled segments into the bucket, under
``kafka-tiered-storage/<topic>-<partition>-<topicId>/``: the keys tierflow's kafka-local layout
uses. Its local copies then go (``local.retention.bytes=1``), and every record reads back from
offset 0, the first segments' through the storage manager from the bucket. Nothing else is
tuned, so the first copy waits for Kafka's default 30 s task interval.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka.structs import TopicPartition

from dev.kafka_broker import new_cluster
from tests.cli.process import tierflow, tierflow_env
from tests.support.kafka_broker import create_topic, wait_for_brokers
from tierflow.config import Settings

pytestmark = [pytest.mark.kafka, pytest.mark.slow]
TOPIC = "handed-over"
MIB = 1024 * 1024
# The test's own: one broker holds the metadata topic alone.
SINGLE_BROKER = {"rlmm.config.remote.log.metadata.topic.replication.factor": "1"}
SEGMENT_FILE = re.compile(r"(?P<offset>\d{20})-[A-Za-z0-9_-]{22}\.log")
COPY_TIMEOUT_S = 150


def broker_config(base: Path, bucket: Path) -> dict[str, str]:
    """What ``tierflow broker-config`` prints for ``bucket``, parsed as a broker reads it."""
    settings = Settings.embedded(base, storage_layout="kafka-local", remote_storage=str(bucket))
    done = tierflow(tierflow_env(settings), "broker-config", timeout_s=120)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line and not line.startswith("#")]
    return dict(line.split("=", 1) for line in lines)


def test_a_broker_with_the_printed_settings_tiers_into_the_bucket(tmp_path: Path) -> None:
    bucket = tmp_path / "bucket"
    printed = broker_config(tmp_path / "tierflow", bucket)
    assert printed["rsm.config.dir"] == str(bucket.resolve())
    assert not set(printed) & set(SINGLE_BROKER)
    cluster = new_cluster(tmp_path / "kafka", nodes=1, overrides={**printed, **SINGLE_BROKER})
    try:
        cluster.start()
        wait_for_brokers(cluster, 1)
        # local.retention.bytes=1: once copied, the broker drops its local copies, so the
        # records read back below come from the bucket.
        topic_id = create_topic(
            cluster,
            TOPIC,
            remote_storage_enable="true",
            segment_bytes=str(MIB),
            local_retention_bytes="1",
        )
        sent = _produce(cluster.bootstrap)
        partition_dir = bucket / "kafka-tiered-storage" / f"{TOPIC}-0-{topic_id}"
        logs = _until_tiered(partition_dir, segments=3)
        _until_local_start_moves(cluster.nodes[0].log_dir / f"{TOPIC}-0")
        read = _consume(cluster.bootstrap, len(sent))
    finally:
        cluster.stop()
    assert logs[0].name.startswith("0" * 20 + "-")  # from the partition's first offset
    for log in logs:
        assert log.stat().st_size > MIB * 9 // 10  # a rolled 1 MiB segment, whole
        for suffix in (".index", ".timeindex", ".snapshot", ".leader_epoch_checkpoint"):
            assert log.with_suffix(suffix).is_file(), log.with_suffix(suffix)
    assert read == sent


def _produce(bootstrap: str) -> list[bytes]:
    """4 MiB of 1 KiB values: three 1 MiB segments roll, the fourth stays open."""
    values = [os.urandom(1024) for _ in range(4 * 1024)]
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    for n, value in enumerate(values):
        producer.send(TOPIC, value, f"k{n}".encode(), partition=0)
    producer.flush()
    producer.close()
    return values


def _until_local_start_moves(log_dir: Path) -> None:
    """Until the broker has deleted its local copy of the first segment (it is remote now)."""
    first = log_dir / f"{0:020d}.log"
    deadline = time.monotonic() + COPY_TIMEOUT_S
    while first.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"{first} still there after {COPY_TIMEOUT_S} s")
        time.sleep(0.5)


def _consume(bootstrap: str, count: int) -> list[bytes]:
    """The topic's values from offset 0; the first segments' from the bucket."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=30_000
    )
    consumer.assign([TopicPartition(TOPIC, 0)])
    consumer.seek(TopicPartition(TOPIC, 0), 0)
    values = []
    for message in consumer:
        values.append(message.value)
        if len(values) == count:
            break
    consumer.close()
    return values


def _until_tiered(partition_dir: Path, *, segments: int) -> list[Path]:
    """The ``.log`` files in ``partition_dir``, sorted, once there are ``segments`` of them."""
    deadline = time.monotonic() + COPY_TIMEOUT_S
    while True:
        logs = sorted(p for p in partition_dir.glob("*.log") if SEGMENT_FILE.fullmatch(p.name))
        if len(logs) >= segments:
            return logs
        if time.monotonic() > deadline:
            found = sorted(str(p) for p in partition_dir.parent.parent.rglob("*"))
            raise AssertionError(f"{len(logs)} segments tiered in {COPY_TIMEOUT_S} s: {found}")
        time.sleep(1)
