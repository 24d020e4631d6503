"""What the real-broker tests share: tierflow run as a person runs it, against a live broker,
and what they read back of the remote tier."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from kafka import KafkaConsumer
from kafka.structs import TopicPartition

from dev.kafka_broker import KafkaCluster
from tests.kafka.produced import Record
from tierflow.config import Settings
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.runtime import open_store

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def settings_for(cluster: KafkaCluster, base: Path) -> Settings:
    node = cluster.nodes[0]
    return Settings.embedded(base, log_dirs=(node.log_dir,), kafka_bootstrap=node.bootstrap)


def tierflow(
    settings: Settings, *argv: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """``python -m tierflow.cli ARGV`` started on ``settings`` (``env`` on top), not waited for."""
    environ = {**os.environ, **settings.as_env(), "PYTHONPATH": str(PROJECT_ROOT), **(env or {})}
    command = [sys.executable, "-m", "tierflow.cli", *argv]
    return subprocess.Popen(
        command, env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def run(settings: Settings, *argv: str) -> subprocess.CompletedProcess[str]:
    process = tierflow(settings, *argv)
    out, err = process.communicate(timeout=300)
    return subprocess.CompletedProcess(argv, process.returncode, out, err)


def register(settings: Settings, topic: str) -> None:
    done = run(settings, "topics", "register", topic, "--config", "remote.storage.enable=true")
    assert done.returncode == 0, done.stderr


def finished_spans(settings: Settings, topic: str) -> list[tuple[int, int]]:
    store = open_store(settings)
    rows = store.segments(store.topic(topic).topic_id, 0, states=[S.COPY_SEGMENT_FINISHED])
    return [(r.start_offset, r.end_offset) for r in rows]


def live_rows(settings: Settings, topic: str) -> list[str]:
    store = open_store(settings)
    rows = store.segments(store.topic(topic).topic_id, 0)
    return [r.state for r in rows if r.state != S.DELETE_SEGMENT_FINISHED]


def assert_contiguous_from(spans: list[tuple[int, int]], first: int) -> None:
    """No gap and no offset twice: each segment starts right after the one before."""
    assert spans and spans[0][0] == first
    assert [start for start, _ in spans[1:]] == [end + 1 for _, end in spans[:-1]]


def consume(
    cluster: KafkaCluster, topic: str, *, committed: bool = False, timeout_s: float = 60
) -> list[Record]:
    """Every record of partition 0 as a consumer reads it (read_committed when ``committed``),
    asked again until its leader serves any (a broker just started, a leader just elected)."""
    deadline = time.monotonic() + timeout_s
    while True:
        consumer = KafkaConsumer(
            bootstrap_servers=cluster.bootstrap,
            isolation_level="read_committed" if committed else "read_uncommitted",
            enable_auto_commit=False,
            consumer_timeout_ms=5000,
        )
        consumer.assign([TopicPartition(topic, 0)])
        consumer.seek_to_beginning()
        found = [
            Record(m.offset, m.key, m.value, tuple(m.headers or ()), m.timestamp) for m in consumer
        ]
        consumer.close()
        if found or time.monotonic() > deadline:
            return found
        time.sleep(1)
