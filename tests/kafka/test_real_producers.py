"""Real producers into a real broker, tiered by `tierflow copy` from the broker's running disk.

kafka-python produces with all five codecs, an idempotent producer, transactions committed and
aborted, headers, null keys and values, and a record larger than a producer batch; the broker
writes its log dir, rolling 1 MiB segments, and keeps running. Every record tierflow tiered is
then read back through tierflow's remote read and compared with what was produced: offset,
key, value, headers and timestamp. The active segment is never copied, and what was copied is
byte for byte the broker's files (`tierflow verify`). And `tierflow diskless produce` reads a
real topic with kafka-python's consumer into a diskless topic whose records are those produced.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from kafka import KafkaProducer

from dev.kafka_broker import KafkaCluster
from tests.kafka.produced import (
    CODECS,
    Record,
    Sent,
    batch_records,
    send_all,
    tiered_records,
    transaction,
    varied,
)
from tests.kafka.support import register, run, settings_for
from tests.support.kafka_broker import create_topic
from tierflow.config import Settings
from tierflow.kafka.checkpoint import REPLICATION_OFFSET_CHECKPOINT, read_offset_checkpoint
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.runtime import open_storage, open_store, partition_logs

TOPIC = "produced"
pytestmark = [pytest.mark.kafka, pytest.mark.slow]
LARGE = 600 * 1024  # larger than a producer batch (16 KiB), below max.request.size


def produce(cluster: KafkaCluster) -> Sent:
    sent: dict[int, Record] = {}
    aborted: set[int] = set()
    now_ms = int(time.time() * 1000)  # the broker's retention.ms (7 days) counts from its clock
    clock = iter(range(now_ms - 3_600_000, now_ms, 1000))
    for n, codec in enumerate(CODECS):
        producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, compression_type=codec)
        _keep(sent, send_all(producer, TOPIC, varied(250, start_ms=next(clock), seed=n * 1000)))
        producer.close()
    idempotent = KafkaProducer(
        bootstrap_servers=cluster.bootstrap, enable_idempotence=True, compression_type="lz4"
    )
    _keep(sent, send_all(idempotent, TOPIC, varied(200, start_ms=next(clock), seed=7000)))
    big = Record(-1, b"large", os.urandom(LARGE), (("size", b"large"),), next(clock))
    _keep(sent, send_all(idempotent, TOPIC, [big]))
    idempotent.close()
    for commit, seed in ((True, 8000), (False, 9000), (True, 10000)):
        batch = varied(120, start_ms=next(clock), seed=seed)
        done = transaction(cluster.bootstrap, TOPIC, batch, commit=commit)
        _keep(sent, done)
        if not commit:
            aborted.update(r.offset for r in done)
    # About 2 MiB more, so the segments holding all of the above roll and may be tiered.
    filler = KafkaProducer(bootstrap_servers=cluster.bootstrap)
    _keep(sent, send_all(filler, TOPIC, varied(1000, start_ms=next(clock), seed=20000)))
    filler.close()
    return Sent(sent, aborted)


def _keep(sent: dict[int, Record], records: list[Record]) -> None:
    for record in records:
        sent[record.offset] = record


def wait_for_high_watermark(log_dir: Path, at_least: int, timeout_s: float = 30) -> None:
    """Until the broker's replication-offset-checkpoint has caught up with what was produced
    (it writes it every half second here): the copy reads the high watermark from it."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        path = log_dir / REPLICATION_OFFSET_CHECKPOINT
        if path.exists() and read_offset_checkpoint(path).get((TOPIC, 0), -1) >= at_least:
            return
        time.sleep(0.2)
    raise TimeoutError(f"{TOPIC}-0: the high watermark did not reach {at_least}")


@pytest.fixture(scope="module")
def produced(kafka_broker: KafkaCluster) -> Sent:
    create_topic(kafka_broker, TOPIC, segment_bytes=str(1024 * 1024))
    sent = produce(kafka_broker)
    wait_for_high_watermark(kafka_broker.nodes[0].log_dir, max(sent.records) + 1)
    return sent


@pytest.fixture(scope="module")
def settings(kafka_broker: KafkaCluster, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return settings_for(kafka_broker, tmp_path_factory.mktemp("tierflow"))


@pytest.fixture(scope="module")
def tiered(produced: Sent, settings: Settings) -> Settings:
    register(settings, TOPIC)
    copied = run(settings, "copy")
    assert copied.returncode == 0, copied.stderr + copied.stdout
    return settings


def test_every_tiered_record_is_what_was_produced(produced: Sent, tiered: Settings) -> None:
    store = open_store(tiered)
    topic_id = store.topic(TOPIC).topic_id
    finished = store.segments(topic_id, 0, states=[S.COPY_SEGMENT_FINISHED])
    assert len(finished) >= 3, "the broker rolled several segments and they were tiered"
    spans = [(s.start_offset, s.end_offset) for s in finished]
    assert [start for start, _ in spans] == [0, *(end + 1 for _, end in spans[:-1])]  # no gap
    last = finished[-1].end_offset
    read = tiered_records(store, open_storage(tiered), TOPIC, 0, last)
    assert read == produced.between(0, last)
    offsets = {r.offset for r in read}
    assert produced.aborted <= offsets, "the aborted transaction's records are in the log too"
    assert any(len(r.value or b"") == LARGE for r in read)


def test_the_active_segment_stays_local(kafka_broker: KafkaCluster, tiered: Settings) -> None:
    store = open_store(tiered)
    highest = max(s.end_offset for s in store.segments(store.topic(TOPIC).topic_id, 0))
    logs = partition_logs([kafka_broker.nodes[0].log_dir])
    log_ = next(p for p in logs if p.topic == TOPIC)
    assert highest < log_.segments()[-1].base_offset


def test_what_was_tiered_is_byte_for_byte_the_brokers_files(tiered: Settings) -> None:
    verified = run(tiered, "verify", "--topic", TOPIC)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_diskless_topic_fed_from_a_real_topic_holds_what_was_produced(
    kafka_broker: KafkaCluster, tmp_path: Path
) -> None:
    create_topic(kafka_broker, "clicks-source")
    producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap, compression_type="zstd")
    start_ms = int(time.time() * 1000) - 60_000  # within the broker's retention.ms
    sent = send_all(producer, "clicks-source", varied(700, start_ms=start_ms, seed=3))
    producer.close()
    settings = settings_for(kafka_broker, tmp_path)
    assert run(settings, "diskless", "register", "clicks", "--partitions", "1").returncode == 0
    produced = run(settings, "diskless", "produce", "clicks", "--source-topic", "clicks-source")
    assert produced.returncode == 0, produced.stderr
    assert "offsets clicks-0: 0-699" in produced.stdout, produced.stdout
    fetched = tmp_path / "fetched.bin"
    fetch = ("diskless", "fetch", "clicks", "--partition", "0", "--offset", "0")
    done = run(settings, *fetch, "--max-bytes", str(64 << 20), "--output", str(fetched))
    assert done.returncode == 0, done.stderr
    # The diskless topic numbers its records from 0, as the source's first 700 are.
    assert list(batch_records(fetched.read_bytes())) == sent
