"""tierflow tiers a running broker's partitions while producers keep writing to them.

- `tierflow copy` and the segment_copy DAG (through Airflow) copy while a producer writes: the
  active segment is never copied (every tiered segment is byte for byte a rolled segment of the
  broker afterwards), and every record tiered is the one produced at that offset.
- The broker's own retention deletes a segment while the copy holds it (a DeleteRecords, held
  at a crash point so the race is certain): that attempt fails on one line naming the file,
  and the next run goes on from the new log start offset, with nothing left behind.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from kafka import KafkaProducer
from kafka.structs import TopicPartition

from dev.airflow_local import run_dag_in_subprocess
from dev.kafka_broker import KafkaCluster
from tests.concurrency.gate import Gate
from tests.kafka.produced import Record, send_all, tiered_records, varied
from tests.kafka.support import (
    PROJECT_ROOT,
    assert_contiguous_from,
    finished_spans,
    live_rows,
    register,
    run,
    settings_for,
    tierflow,
)
from tests.support.kafka_broker import admin, create_topic
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.runtime import open_storage, open_store

SEGMENT_BYTES = str(1024 * 1024)
pytestmark = [pytest.mark.kafka, pytest.mark.slow]


class Producer(threading.Thread):
    """Keeps producing batches of varied records until stopped; remembers each with its
    offset."""

    def __init__(self, cluster: KafkaCluster, topic: str) -> None:
        super().__init__(daemon=True)
        self.producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, linger_ms=5)
        self.topic = topic
        self.sent: dict[int, Record] = {}
        self.stopping = threading.Event()

    def run(self) -> None:
        seed = 0
        while not self.stopping.is_set():
            now = int(time.time() * 1000)
            for record in send_all(self.producer, self.topic, varied(100, start_ms=now, seed=seed)):
                self.sent[record.offset] = record
            seed += 100
            self.stopping.wait(0.1)  # about 1 MiB/s: a segment rolls every second or so

    def stop(self) -> dict[int, Record]:
        self.stopping.set()
        self.join(timeout=60)
        self.producer.close()
        return self.sent


def test_copy_and_the_dag_tier_while_a_producer_writes(
    kafka_broker: KafkaCluster, tmp_path: Path
) -> None:
    topic = "busy"
    create_topic(kafka_broker, topic, segment_bytes=SEGMENT_BYTES)
    settings = settings_for(kafka_broker, tmp_path / "tierflow")
    register(settings, topic)
    producer = Producer(kafka_broker, topic)
    producer.start()
    try:
        for _ in range(2):
            time.sleep(2)
            copied = run(settings, "copy")
            assert copied.returncode == 0, copied.stderr
        dag = run_dag_in_subprocess(
            "segment_copy",
            project=PROJECT_ROOT,
            airflow_home=tmp_path / "airflow",
            extra_env=settings.as_env(),
            log_file=tmp_path / "segment_copy.log",
        )
        assert dag == "success"
    finally:
        sent = producer.stop()
    spans = finished_spans(settings, topic)
    assert len(spans) >= 4, "several segments rolled and were tiered while producing"
    assert_contiguous_from(spans, 0)
    store, rsm = open_store(settings), open_storage(settings)
    read = tiered_records(store, rsm, topic, 0, spans[-1][1])
    assert read == [sent[o] for o in sorted(sent) if o <= spans[-1][1]]
    verified = run(settings, "verify", "--topic", topic)  # an active segment copied would differ
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_segment_the_broker_deletes_mid_copy_fails_that_attempt_and_the_next_goes_on(
    kafka_broker: KafkaCluster, tmp_path: Path
) -> None:
    topic = "racing"
    create_topic(kafka_broker, topic, segment_bytes=SEGMENT_BYTES)
    producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap)
    now = int(time.time() * 1000)
    send_all(producer, topic, varied(2500, start_ms=now, seed=1))
    producer.close()
    settings = settings_for(kafka_broker, tmp_path / "tierflow")
    register(settings, topic)
    time.sleep(1.5)  # the high watermark checkpoint catches up
    partition_dir = kafka_broker.nodes[0].log_dir / f"{topic}-0"
    bases = sorted(int(p.name.split(".")[0]) for p in partition_dir.glob("*.log"))
    gate = Gate(tmp_path, "copy")
    copying = tierflow(settings, "copy", env=gate.env())
    gate.bind(copying)
    gate.run_until("copy.after_started#1")  # the oldest segment recorded, not yet read
    new_start = bases[2]
    client = admin(kafka_broker)
    client.delete_records({TopicPartition(topic, 0): new_start})
    client.close()
    _wait_gone(partition_dir / f"{bases[0]:020d}.log")
    assert gate.finish() == 1
    _, err = copying.communicate(timeout=60)
    errors = [line for line in err.splitlines() if line.startswith("tierflow: error:")]
    assert len(errors) == 1 and f"{bases[0]:020d}.log is gone" in errors[0], err
    assert "the next run copies from the new log start offset" in errors[0]
    rerun = run(settings, "copy")
    assert rerun.returncode == 0, rerun.stderr
    assert_contiguous_from(finished_spans(settings, topic), new_start)
    assert set(live_rows(settings, topic)) == {S.COPY_SEGMENT_FINISHED}
    reconciled = run(settings, "reconcile", "--topic", topic, "--grace", "0")
    assert "orphan-object" not in reconciled.stdout, reconciled.stdout


def _wait_gone(path: Path, timeout_s: float = 30) -> None:
    """Until the broker's retention has deleted (renamed away) the segment's .log."""
    deadline = time.monotonic() + timeout_s
    while path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the broker did not delete {path}")
        time.sleep(0.2)
