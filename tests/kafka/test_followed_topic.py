"""A topic the broker tiers itself, followed by tierflow: everything that only reads works on it.

A real broker with ``remote.storage.enable=true`` on the topic copies its rolled 1 MiB
segments (plain records, a committed and an aborted transaction) into Kafka's
LocalTieredStorage and publishes each transition to ``__remote_log_metadata``. tierflow reads
the same directory (the ``kafka-local`` layout), ``tierflow topics follow`` marks the topic as
the broker's and ``tierflow remote-log-metadata follow`` mirrors the broker's segments into the
store (``writer=broker``; no ``remote_segment_objects`` rows, tierflow never saw their bytes).
Then, on those segments alone:

* ``tierflow status`` and the metrics count the broker's segments and bytes;
* ``tierflow verify`` finds each object identical to the broker's local file;
* ``tierflow export iceberg`` writes exactly the committed records (read back with pyiceberg);
* ``tierflow fetch`` serves the produced records from the remote tier;
* ``tierflow copy`` and ``tierflow retention`` (as of 2100) change nothing of the topic: no
  segment and no transition by anyone but the broker.

Restore of broker-written segments is proved in ``test_handover.py``.
"""

from __future__ import annotations

import base64
import json
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pytest

from dev.kafka_broker import KafkaCluster
from tests.kafka.produced import Record, mixed_backlog
from tests.kafka.support import run, settings_for
from tests.support.kafka_broker import create_topic
from tierflow.config import Settings
from tierflow.export.catalog import settings_target
from tierflow.export.table import committed_ends, topic_table
from tierflow.kafka.remote_log_metadata.partitioner import metadata_partition
from tierflow.kafka.remote_log_metadata.records import SegmentMetadata
from tierflow.kafka.remote_log_metadata.serde import deserialize
from tierflow.kafka.remote_log_metadata.topic import MetadataTopic
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.metrics import compute_metrics, emit_metrics
from tierflow.operator_view.options import ViewOptions
from tierflow.operator_view.page import render_page
from tierflow.operator_view.snapshot import snapshot_from_settings
from tierflow.runtime import open_store
from tierflow.units import human_bytes

pytestmark = [pytest.mark.kafka, pytest.mark.slow]
TOPIC = "followed"
MIB = 1024 * 1024
METADATA_PARTITIONS = 5  # dev.kafka_broker.tiering's default
FINISHED = 1
FAR_FUTURE = "2100-01-01T00:00:00Z"  # every segment is past the topic's retention.ms by then


@dataclass(frozen=True)
class Followed:
    settings: Settings
    topic_id: str
    sent: dict[int, Record]
    aborted: set[int]
    segments: list[SegmentMetadata]  # the broker's finished segments, by start offset
    remote: Path  # the broker's rsm.config.dir, tierflow's bucket

    @property
    def last_tiered(self) -> int:
        return self.segments[-1].end_offset

    def tiered(self, *, committed: bool) -> list[Record]:
        """What was produced into the tiered segments (without the aborted records)."""
        return [
            self.sent[o]
            for o in sorted(self.sent)
            if o <= self.last_tiered and not (committed and o in self.aborted)
        ]


@pytest.fixture(scope="module")
def followed(tiering_broker: KafkaCluster, tmp_path_factory: pytest.TempPathFactory) -> Followed:
    topic_id = create_topic(
        tiering_broker, TOPIC, remote_storage_enable="true", segment_bytes=str(MIB)
    )
    sent, aborted = mixed_backlog(tiering_broker.bootstrap, TOPIC, plain=1000, tx_id="followed")
    segments = _until_tiered(tiering_broker, topic_id)
    assert max(aborted) < segments[-1].end_offset, "the aborted transaction is not tiered"
    remote = tiering_broker.nodes[0].home.parent / "remote"
    plain = settings_for(tiering_broker, tmp_path_factory.mktemp("tierflow"))
    settings = Settings.embedded(
        plain.data_dir,
        log_dirs=plain.log_dirs,
        kafka_bootstrap=plain.cluster.bootstrap_servers,
        remote_storage=str(remote),
        storage_layout="kafka-local",
    )
    configs = ("remote.storage.enable=true", "tierflow.iceberg.export=true")
    _ok(settings, "topics", "register", TOPIC, *(f"--config={c}" for c in configs))
    _ok(settings, "topics", "follow", TOPIC)
    report = json.loads(_ok(settings, "remote-log-metadata", "follow", "--json"))
    assert report["mirrored"] >= 2 * len(segments), report
    return Followed(settings, topic_id, sent, aborted, segments, remote)


def _ok(settings: Settings, *argv: str) -> str:
    """``tierflow ARGV``'s stdout; the test fails with its stderr if it exits non-zero."""
    done = run(settings, *argv)
    assert done.returncode == 0, f"tierflow {' '.join(argv)}: {done.stderr}"
    return done.stdout


def _until_tiered(
    cluster: KafkaCluster, topic_id: str, timeout_s: float = 90
) -> list[SegmentMetadata]:
    """The broker's finished segments once it has copied every rolled one (all the local
    segments but the active one), at least three."""
    partition_dir = cluster.nodes[0].log_dir / f"{TOPIC}-0"
    deadline = time.monotonic() + timeout_s
    while True:
        rolled = len(list(partition_dir.glob("*.log"))) - 1
        finished = _finished(cluster, topic_id)
        if len(finished) >= max(rolled, 3) or time.monotonic() > deadline:
            assert len(finished) >= 3, f"the broker tiered {len(finished)} of {rolled} segments"
            return finished
        time.sleep(0.5)


def _finished(cluster: KafkaCluster, topic_id: str) -> list[SegmentMetadata]:
    """The topic's segments whose last state on the metadata topic is COPY_SEGMENT_FINISHED."""
    where = metadata_partition(topic_id, 0, METADATA_PARTITIONS)
    segments: dict[str, SegmentMetadata] = {}
    states: dict[str, int] = {}
    for record in MetadataTopic(cluster.bootstrap).read(where, 0):
        found = deserialize(record.value)
        if found.partition.topic_id != topic_id:
            continue
        if isinstance(found, SegmentMetadata):
            segments[found.segment_id] = found
        states[found.segment_id] = found.state  # type: ignore[union-attr]
    done = [segments[s] for s, state in states.items() if state == FINISHED]
    return sorted(done, key=lambda s: s.start_offset)


def _remote_size(followed: Followed) -> int:
    """The bytes of the ``.log`` files the broker copied: what Kafka's RemoteLogSizeBytes sums."""
    return sum(_remote_log(followed, s).stat().st_size for s in followed.segments)


def _remote_log(followed: Followed, segment: SegmentMetadata) -> Path:
    name = f"{segment.start_offset:020d}-{segment.segment_id}.log"
    (found,) = followed.remote.rglob(name)
    return found


def test_the_store_mirrors_the_brokers_finished_segments(followed: Followed) -> None:
    store = open_store(followed.settings)
    assert store.topic(TOPIC).copier == "broker"
    rows = store.segments(followed.topic_id, 0)
    assert [(r.segment_id, r.start_offset, r.end_offset, r.state, r.writer) for r in rows] == [
        (s.segment_id, s.start_offset, s.end_offset, S.COPY_SEGMENT_FINISHED, "broker")
        for s in followed.segments
    ]
    for row, segment in zip(rows, followed.segments, strict=True):
        assert row.segment_size_bytes == _remote_log(followed, segment).stat().st_size


def test_status_the_page_and_the_metrics_count_the_brokers_segments(followed: Followed) -> None:
    count, size = len(followed.segments), _remote_size(followed)
    status = json.loads(_ok(followed.settings, "status", "--topic", TOPIC, "--json"))
    (partition,) = status["partitions"]
    (topic,) = status["topics"]
    for figures in (partition, topic):
        assert figures["remote"][S.COPY_SEGMENT_FINISHED] == {"segments": count, "bytes": size}
        assert figures["remote_log_size_bytes"] == size
        assert figures["remote_log_metadata_count"] == count
        assert figures["remote_copy_lag_segments"] == 0  # only the active segment is local-only
    assert partition["highest_remote_offset"] == followed.last_tiered
    assert status["stuck"] == [] and status["retention"]["deletions"] == []
    assert {e["actor"] for e in status["events"] if e["entity"] == "segment"} == {"broker:1"}

    store = open_store(followed.settings)
    (metrics,) = compute_metrics(store, followed.settings.log_dirs, topic=TOPIC)
    assert metrics.as_dict() == {k: v for k, v in partition.items() if k in metrics.as_dict()}
    gauges = dict(emit_metrics([metrics], gauge=lambda *_a, **_k: None))
    assert gauges[f"tierflow.remote_log_size_bytes.{TOPIC}.0"] == size
    assert gauges[f"tierflow.remote_log_metadata_count.{TOPIC}.0"] == count

    options = ViewOptions(topic=TOPIC, history=False)
    snapshot = snapshot_from_settings(followed.settings, options)
    page = render_page(snapshot, options=options, topic_names=[TOPIC], ui_root="/")
    assert TOPIC in page and human_bytes(size) in page


def test_verify_finds_every_object_identical_to_the_local_file(followed: Followed) -> None:
    report = json.loads(_ok(followed.settings, "verify", "--topic", TOPIC, "--json"))
    assert [(s["segment_id"], s["identical"]) for s in report["segments"]] == [
        (s.segment_id, True) for s in followed.segments
    ]
    count = len(followed.segments)
    assert (report["identical"], report["different"], report["local_copy_gone"]) == (count, 0, 0)
    (figures,) = report["partitions"]
    assert (figures["verified"], figures["checked"]) == (count, count)
    assert (figures["remote_segments"], figures["remote_bytes"]) == (count, _remote_size(followed))
    assert figures["stored_bytes"] is None  # the broker's objects: tierflow never recorded them


def test_the_iceberg_export_holds_exactly_the_committed_records(followed: Followed) -> None:
    report = json.loads(_ok(followed.settings, "export", "iceberg", "--topic", TOPIC, "--json"))
    assert [(t["topic"], t["committed"]) for t in report["topics"]] == [(TOPIC, True)], report
    table = topic_table(settings_target(followed.settings), TOPIC)
    assert committed_ends(table) == {0: followed.last_tiered}
    rows = table.scan().to_arrow().sort_by("offset")
    assert pa.compute.all(pa.compute.equal(rows["partition"], 0)).as_py()
    found = [
        Record(
            r["offset"],
            r["key"],
            r["value"],
            tuple((h["key"], h["value"]) for h in r["headers"]),
            int(r["timestamp"].timestamp() * 1000),
        )
        for r in rows.select(["offset", "key", "value", "headers", "timestamp"]).to_pylist()
    ]
    assert found == followed.tiered(committed=True)


def test_fetch_serves_the_produced_records_from_the_remote_tier(followed: Followed) -> None:
    """Batch after batch from offset 0, as a consumer's remote reads: every record produced
    into the tiered segments (the aborted ones too, as read_uncommitted), from their objects."""
    found: list[tuple] = []
    read: set[str] = set()
    offset = 0
    while offset <= followed.last_tiered:
        argv = ("--topic", TOPIC, "--partition", "0", "--offset", str(offset), "--max-bytes")
        fetched = _ok(followed.settings, "fetch", *argv, str(4 * MIB), "--print-records", "--json")
        document = json.loads(fetched)
        assert document["batches"] and document["first_offset"] <= offset, document
        found.extend(_data_records(document))
        read.update(document["segments_read"])
        offset = document["next_offset"]
    want = [
        (r.offset, r.key, r.value, [k for k, _ in r.headers], r.timestamp)
        for r in followed.tiered(committed=False)
    ]
    assert [f for f in found if f[0] <= followed.last_tiered] == want
    assert read == {s.segment_id for s in followed.segments}


def _data_records(document: dict) -> list[tuple]:
    """(offset, key, value, header keys, timestamp) of each data record of fetch --json."""
    out = []
    for batch in document["batches"]:
        if batch["isControl"]:
            continue
        for r in batch["records"]:
            key, value = (
                None if b is None else base64.b64decode(b) for b in (r["key"], r["payload"])
            )
            out.append((r["offset"], key, value, r["headerKeys"], r["timestamp"]))
    return out


def test_copy_and_retention_leave_the_followed_topic_to_the_broker(followed: Followed) -> None:
    """As of 2100 every segment is past the topic's retention.ms: tierflow's retention would
    expire them all, were the topic tierflow's."""
    store = open_store(followed.settings)
    assert store.topic(TOPIC).retention_ms == 7 * 24 * 3600 * 1000  # Kafka's default
    before = [(r.segment_id, r.state) for r in store.segments(followed.topic_id, 0)]
    events = [e.id for e in store.events(topic_id=followed.topic_id)]
    copied = json.loads(_ok(followed.settings, "copy", "--no-spark", "--json"))
    (partition,) = [p for p in copied["partitions"] if p["topic"] == TOPIC]
    assert partition["copied"] == [] and "the brokers copy it" in partition["skipped"]
    for dry_run in (("--dry-run",), ()):
        argv = ("retention", *dry_run, "--now", FAR_FUTURE, "--json")
        done = json.loads(_ok(followed.settings, *argv))
        assert done["plan"]["partitions"] == [] and done["result"]["topics"] == {}, done
    assert [(r.segment_id, r.state) for r in store.segments(followed.topic_id, 0)] == before
    after = json.loads(
        _ok(followed.settings, "events", "--topic", TOPIC, "--limit", "9999", "--json")
    )
    assert [e["id"] for e in after] == events
    ours = [(e["entity"], e["to_state"]) for e in after if not e["actor"].startswith("broker:")]
    assert ours == [("topic", "ENABLED"), ("topic", "COPIER_BROKER"), ("partition", "REGISTERED")]
