"""A topic tierflow tiered is handed over to a real broker, which then serves every offset.

Kafka's own code is the judge. A broker tiering with Kafka's LocalTieredStorage reads the
directory tierflow copied into (the ``kafka-local`` layout), and its topic-based metadata
manager reads what tierflow published to ``__remote_log_metadata``:

1. records (plain, a committed and an aborted transaction) are produced to a topic the broker
   does not tier;
2. ``tierflow copy`` tiers the backlog; ``tierflow topics handover --yes`` publishes and turns
   ``remote.storage.enable`` on, with a short ``local.retention.ms``;
3. the broker drops its local copies of tierflow's segments: ListOffsets earliest-local (-4)
   moves past them, and latest-tiered (-5) reaches tierflow's last offset;
4. a kafka-python consumer from offset 0 reads exactly what was produced (read_committed leaves
   out the aborted transaction), the dropped offsets served from tierflow's copies;
5. the metadata topic names no offset twice among the finished segments of both writers.

Then the other way: the broker tiers more segments itself; ``tierflow remote-log-metadata
follow`` (SIGKILLed once midway, then run again, then from the start) mirrors them into the
store; ``tierflow restore`` rebuilds the whole partition from both writers' segments, each
``.log`` byte-identical to the broker's file: tierflow's as the broker had them before the
hand-over, the broker's as its own copier put them in LocalTieredStorage (a byte copy of
the file, by Kafka's code).
"""

from __future__ import annotations

import itertools
import json
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaProducer
from kafka.protocol.consumer.offsets import OffsetSpec
from kafka.structs import TopicPartition

from dev.kafka_broker import KafkaCluster
from tests.kafka.produced import Record, mixed_backlog, send_all, varied
from tests.kafka.support import consume, register, run, settings_for, tierflow
from tests.support.kafka_broker import create_topic
from tierflow.config import Settings
from tierflow.kafka.checkpoint import REPLICATION_OFFSET_CHECKPOINT, read_offset_checkpoint
from tierflow.kafka.remote_log_metadata.records import SegmentMetadata
from tierflow.kafka.remote_log_metadata.serde import deserialize
from tierflow.kafka.remote_log_metadata.topic import MetadataTopic
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.runtime import open_store

pytestmark = [pytest.mark.kafka, pytest.mark.slow]
TOPIC = "handed-over"
MIB = 1024 * 1024
PARTITIONS = 5  # dev.kafka_broker.tiering's default
FINISHED = 1


@dataclass(frozen=True)
class HandedOver:
    settings: Settings
    topic_id: str
    sent: dict[int, Record]
    aborted: set[int]
    tierflow_segments: list[tuple[int, int, str]]  # (start, end, segment id)
    local_logs: dict[str, bytes]  # the broker's .log files of the partition before hand-over


@pytest.fixture(scope="module")
def handed_over(
    tiering_broker: KafkaCluster, tmp_path_factory: pytest.TempPathFactory
) -> HandedOver:
    topic_id = create_topic(tiering_broker, TOPIC, segment_bytes=str(MIB))
    sent, aborted = mixed_backlog(tiering_broker.bootstrap, TOPIC, plain=1500, tx_id="handover")
    _wait_for_high_watermark(tiering_broker, max(sent) + 1)
    remote = tiering_broker.nodes[0].home.parent / "remote"  # the broker's rsm.config.dir
    base = tmp_path_factory.mktemp("tierflow")
    settings = settings_for(tiering_broker, base)
    settings = Settings.embedded(
        base,
        log_dirs=settings.log_dirs,
        kafka_bootstrap=settings.cluster.bootstrap_servers,
        remote_storage=str(remote),
        storage_layout="kafka-local",
    )
    register(settings, TOPIC)
    done = run(settings, "copy", "--no-spark")
    assert done.returncode == 0, done.stderr
    spans = _tierflow_segments(settings)
    assert len(spans) >= 3, spans
    partition_dir = tiering_broker.nodes[0].log_dir / f"{TOPIC}-0"
    local_logs = {p.name: p.read_bytes() for p in partition_dir.glob("*.log")}
    dry = run(settings, "topics", "handover", TOPIC)  # as the README shows it: a dry run
    assert dry.returncode == 0 and "Dry run: nothing changed" in dry.stdout, dry.stderr
    assert open_store(settings).topic(TOPIC).copied_by_tierflow
    done = run(
        settings,
        "topics",
        "handover",
        TOPIC,
        "--yes",
        "--json",
        "--config",
        "local.retention.ms=1000",
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["handed_over"] is True
    return HandedOver(settings, topic_id, sent, aborted, spans, local_logs)


def _tierflow_segments(settings: Settings) -> list[tuple[int, int, str]]:
    store = open_store(settings)
    rows = store.segments(store.topic(TOPIC).topic_id, 0, states=[S.COPY_SEGMENT_FINISHED])
    return [(r.start_offset, r.end_offset, r.segment_id) for r in rows]


def _wait_for_high_watermark(cluster: KafkaCluster, at_least: int, timeout_s: float = 30) -> None:
    path = cluster.nodes[0].log_dir / REPLICATION_OFFSET_CHECKPOINT
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists() and read_offset_checkpoint(path).get((TOPIC, 0), -1) >= at_least:
            return
        time.sleep(0.2)
    raise TimeoutError(f"{TOPIC}-0: the high watermark did not reach {at_least}")


def _offsets(cluster: KafkaCluster, spec: OffsetSpec) -> int:
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        where = TopicPartition(TOPIC, 0)
        return int(admin.list_partition_offsets({where: spec})[where].offset)
    finally:
        admin.close()


def _until(predicate, timeout_s: float = 90) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(1)
    return bool(predicate())


def test_the_broker_drops_its_local_copies_of_what_tierflow_tiered(
    handed_over: HandedOver, tiering_broker: KafkaCluster
) -> None:
    highest = handed_over.tierflow_segments[-1][1]
    assert _until(lambda: _offsets(tiering_broker, OffsetSpec.LATEST_TIERED) >= highest)
    assert _until(lambda: _offsets(tiering_broker, OffsetSpec.EARLIEST_LOCAL) > highest)
    assert _offsets(tiering_broker, OffsetSpec.EARLIEST) == 0


def test_a_consumer_from_offset_zero_reads_exactly_what_was_produced(
    handed_over: HandedOver, tiering_broker: KafkaCluster
) -> None:
    highest = handed_over.tierflow_segments[-1][1]
    assert _until(lambda: _offsets(tiering_broker, OffsetSpec.EARLIEST_LOCAL) > highest)
    everything = [handed_over.sent[o] for o in sorted(handed_over.sent)]
    assert consume(tiering_broker, TOPIC) == everything
    committed = [r for r in everything if r.offset not in handed_over.aborted]
    assert consume(tiering_broker, TOPIC, committed=True) == committed


def test_the_metadata_topic_names_no_offset_twice(
    handed_over: HandedOver, tiering_broker: KafkaCluster
) -> None:
    """tierflow's segments, by their ids, then the broker's: the broker copied none of
    tierflow's offsets again, so it served them from tierflow's objects."""
    assert _until(lambda: len(_finished(tiering_broker, handed_over.topic_id)) > 0)
    spans = sorted(_finished(tiering_broker, handed_over.topic_id))
    assert spans[: len(handed_over.tierflow_segments)] == handed_over.tierflow_segments
    for (_, end, _), (start, _, _) in itertools.pairwise(spans):
        assert start == end + 1, spans


def _settled(cluster: KafkaCluster, topic_id: str) -> list[tuple[int, int, str]]:
    """The finished segments once the broker has tiered every rolled one: the same twice."""
    before: list[tuple[int, int, str]] = []
    while True:
        time.sleep(2)  # more than four copy intervals of the broker (500 ms)
        now = sorted(_finished(cluster, topic_id))
        if now == before:
            return now
        before = now


def _finished(cluster: KafkaCluster, topic_id: str) -> list[tuple[int, int, str]]:
    """(start, end, segment id) of every segment of the topic whose last state on the metadata
    topic is COPY_SEGMENT_FINISHED, whoever wrote it."""
    metadata = MetadataTopic(cluster.bootstrap)
    spans: dict[str, tuple[int, int]] = {}
    states: dict[str, int] = {}
    for partition in range(PARTITIONS):
        for record in metadata.read(partition, 0):
            found = deserialize(record.value)
            if found.partition.topic_id != topic_id:
                continue
            if isinstance(found, SegmentMetadata):
                spans[found.segment_id] = (found.start_offset, found.end_offset)
            states[found.segment_id] = found.state  # type: ignore[union-attr]
    return [(*spans[s], s) for s, state in states.items() if state == FINISHED]


def test_tierflow_copies_nothing_more_of_a_handed_over_topic(handed_over: HandedOver) -> None:
    done = run(handed_over.settings, "copy", "--no-spark")
    assert done.returncode == 0, done.stderr
    assert _tierflow_segments(handed_over.settings) == handed_over.tierflow_segments
    again = run(handed_over.settings, "topics", "handover", TOPIC, "--yes", "--json")
    assert again.returncode == 0, again.stderr  # finished already: nothing to do, no error


def test_tierflow_mirrors_what_the_broker_tiers_and_restores_both_writers_segments(
    handed_over: HandedOver, tiering_broker: KafkaCluster, tmp_path: Path
) -> None:
    settings, ours = handed_over.settings, len(handed_over.tierflow_segments)
    producer = KafkaProducer(bootstrap_servers=tiering_broker.bootstrap)
    send_all(producer, TOPIC, varied(1500, start_ms=int(time.time() * 1000), seed=5))
    producer.close()
    assert _until(lambda: len(_finished(tiering_broker, handed_over.topic_id)) >= ours + 3)
    finished = _settled(tiering_broker, handed_over.topic_id)

    killed = tierflow(
        settings,
        "remote-log-metadata",
        "follow",
        "--json",
        env={"TIERFLOW_CRASH_AT": "rlmm.after_mirror#3"},
    )
    assert killed.wait(timeout=120) == -signal.SIGKILL
    for argv in ((), ("--from-start",)):
        done = run(settings, "remote-log-metadata", "follow", "--json", *argv)
        assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["mirrored"] == 0  # a re-read changes nothing

    store = open_store(settings)
    rows = store.segments(handed_over.topic_id, 0, states=[S.COPY_SEGMENT_FINISHED])
    assert [(r.start_offset, r.end_offset, r.segment_id) for r in rows] == finished
    assert {r.writer for r in rows} == {"tierflow", "broker"}

    restored = tmp_path / "restored"
    done = run(settings, "restore", TOPIC, "--to", str(restored), "--no-spark")
    assert done.returncode == 0, done.stderr
    remote = tiering_broker.nodes[0].home.parent / "remote"
    for row in rows:
        name = f"{row.start_offset:020d}.log"
        if row.writer == "tierflow":
            expected = handed_over.local_logs[name]
        else:
            (copied,) = remote.rglob(f"{row.start_offset:020d}-{row.segment_id}.log")
            expected = copied.read_bytes()
        assert (restored / f"{TOPIC}-0" / name).read_bytes() == expected, name
