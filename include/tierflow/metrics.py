"""Kafka's tiered-storage gauges per topic and partition, computed from the store and log dirs.

Names and meanings follow ``kafka.server:type=BrokerTopicMetrics`` (codes like C11 refer to
docs/kafka-behaviours.md):

* ``RemoteCopyLagBytes`` / ``RemoteCopyLagSegments`` (C11): local segments not yet in remote
  storage, minus the active segment, which is never copied. "Not yet in remote storage" is
  a base offset *above* the highest remote offset (the KAFKA-20977 fix of Kafka's ``>=``);
  the figures are clamped at 0 as newer trunk does, and are 0 when copying is off (remote
  storage disabled, ``remote.log.copy.disable``, or the topic not ENABLED), as Kafka resets
  them. They need the partition's local log; without it they are None.
* ``RemoteDeleteLagBytes`` / ``RemoteDeleteLagSegments``: segments in DELETE_SEGMENT_STARTED,
  i.e. deletes begun and not finished (a failed delete waits there for the next run).
  Kafka also counts segments its expiration run has just chosen to delete; those are known
  only inside that run, and recomputing retention here would duplicate its rules, so a
  breached segment shows up once the expiration task marks it.
* ``RemoteLogSizeBytes`` (E1, newer trunk): sizes of COPY_SEGMENT_FINISHED plus
  DELETE_SEGMENT_STARTED segments; unfinished copies are excluded.
* ``RemoteLogMetadataCount`` (E1): rows in every non-terminal state (COPY_SEGMENT_STARTED,
  COPY_SEGMENT_FINISHED, DELETE_SEGMENT_STARTED).

Remote figures come from one GROUP BY over the segment table, not from loading rows.
``emit_metrics`` publishes them through Airflow's stats when Airflow is installed.

One gauge is tierflow's own, with no Kafka counterpart: ``scrub_open_findings``, per topic and
in total, the segments whose last scrub found an object wrong (``open_findings_by_topic``).
``publish_metrics`` sends it beside Kafka's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from sqlalchemy import func
from sqlmodel import Session, col, select

from tierflow.cluster.leaders import leader_logs
from tierflow.config import Settings
from tierflow.kafka.errors import KafkaFormatError
from tierflow.kafka.log_dir import PartitionLog
from tierflow.metadata.models import Partition, RemoteLogSegment, Topic
from tierflow.metadata.states import RemoteLogSegmentState, TieredState
from tierflow.metadata.store import MetadataStore
from tierflow.runtime import open_store, partition_logs

log = logging.getLogger(__name__)

_S = RemoteLogSegmentState
_SIZE_STATES = (_S.COPY_SEGMENT_FINISHED, _S.DELETE_SEGMENT_STARTED)
_LIVE_STATES = (_S.COPY_SEGMENT_STARTED, _S.COPY_SEGMENT_FINISHED, _S.DELETE_SEGMENT_STARTED)
PREFIX = "tierflow"
# Kafka's gauge names, as they are published (tierflow.<name>[.<topic>[.<partition>]]).
GAUGES: dict[str, str] = {
    "remote_copy_lag_bytes": "RemoteCopyLagBytes",
    "remote_copy_lag_segments": "RemoteCopyLagSegments",
    "remote_delete_lag_bytes": "RemoteDeleteLagBytes",
    "remote_delete_lag_segments": "RemoteDeleteLagSegments",
    "remote_log_size_bytes": "RemoteLogSizeBytes",
    "remote_log_metadata_count": "RemoteLogMetadataCount",
}
# tierflow's own: segments with an open scrub finding (tierflow.scrub_open_findings[.<topic>]).
SCRUB_GAUGE = "scrub_open_findings"


@dataclass
class StateTotals:
    segments: int = 0
    bytes: int = 0


def _by_state() -> dict[str, StateTotals]:
    return {state.value: StateTotals() for state in RemoteLogSegmentState}


class _Row:
    """A row of gauges as JSON and the operator view take it: every field, nested ones too."""

    def as_dict(self) -> dict:
        return asdict(self)  # type: ignore[call-overload]  # every row is a dataclass


@dataclass
class PartitionMetrics(_Row):
    topic: str
    topic_id: str
    partition: int
    tiered_state: str
    tiered_epoch: int
    log_start_offset: int
    local_log_start_offset: int
    highest_remote_offset: int
    local_segments: int | None  # None: the partition is not in the log dirs
    local_bytes: int | None
    remote: dict[str, StateTotals] = field(default_factory=_by_state)
    remote_copy_lag_bytes: int | None = None
    remote_copy_lag_segments: int | None = None
    remote_delete_lag_bytes: int = 0
    remote_delete_lag_segments: int = 0
    remote_log_size_bytes: int = 0
    remote_log_metadata_count: int = 0


@dataclass(kw_only=True)
class SummedMetrics(_Row):
    """Partitions' gauges summed (None counts as 0): a topic's, or a broker's leaders'."""

    partitions: int = 0
    local_segments: int = 0
    local_bytes: int = 0
    remote: dict[str, StateTotals] = field(default_factory=_by_state)
    remote_copy_lag_bytes: int = 0
    remote_copy_lag_segments: int = 0
    remote_delete_lag_bytes: int = 0
    remote_delete_lag_segments: int = 0
    remote_log_size_bytes: int = 0
    remote_log_metadata_count: int = 0


@dataclass
class TopicMetrics(SummedMetrics):
    """A topic's partitions summed, as Kafka's topic-level gauges are."""

    topic: str


def compute_metrics(
    store: MetadataStore,
    log_dirs: Sequence[Path],
    *,
    topic: str | None = None,
    partition: int | None = None,
    logs: Sequence[PartitionLog] | None = None,
) -> list[PartitionMetrics]:
    """Every partition of the registered topics (in the store or the log dirs), sorted.

    ``logs``: the log dirs' partitions when the caller has read them already.
    """
    topics = [store.topic(topic)] if topic is not None else store.topics()
    by_id = {t.topic_id: t for t in topics}
    rows = {(p.topic_id, p.partition): p for p in _partitions(store, topics)}
    locals_ = {
        (by_name.topic_id, log_.partition): log_
        for log_ in (local_logs(log_dirs) if logs is None else logs)
        if (by_name := _topic_named(topics, log_.topic)) is not None
    }
    keys = sorted(
        {k for k in (*rows, *locals_) if partition is None or k[1] == partition},
        key=lambda k: (by_id[k[0]].name, k[1]),
    )
    totals = _state_totals(store, topic_ids=[t.topic_id for t in topics], partition=partition)
    return [
        _partition_metrics(by_id[key[0]], key[1], rows.get(key), locals_.get(key), totals)
        for key in keys
    ]


def aggregate_by_topic(metrics: Iterable[PartitionMetrics]) -> list[TopicMetrics]:
    found: dict[str, TopicMetrics] = {}
    for m in metrics:
        t = found.setdefault(m.topic, TopicMetrics(m.topic))
        t.partitions += 1
        t.local_segments += m.local_segments or 0
        t.local_bytes += m.local_bytes or 0
        for state, totals in m.remote.items():
            t.remote[state].segments += totals.segments
            t.remote[state].bytes += totals.bytes
        t.remote_copy_lag_bytes += m.remote_copy_lag_bytes or 0
        t.remote_copy_lag_segments += m.remote_copy_lag_segments or 0
        t.remote_delete_lag_bytes += m.remote_delete_lag_bytes
        t.remote_delete_lag_segments += m.remote_delete_lag_segments
        t.remote_log_size_bytes += m.remote_log_size_bytes
        t.remote_log_metadata_count += m.remote_log_metadata_count
    return [found[name] for name in sorted(found)]


Gauge = Callable[..., None]
Send = Callable[[str, int | None, dict[str, str]], None]


def emit_metrics(
    metrics: Sequence[PartitionMetrics], *, gauge: Gauge | None = None
) -> list[tuple[str, float]]:
    """Publish the gauges per partition, per topic and in total; returns what was sent.

    ``gauge`` defaults to Airflow's ``stats.gauge`` (StatsD/OpenTelemetry, as Airflow is
    configured); without Airflow installed nothing is sent but the list is still returned.
    """
    sent: list[tuple[str, float]] = []
    send = _sender(_airflow_gauge() if gauge is None else gauge, sent)
    for m in metrics:
        tags = {"topic": m.topic, "partition": str(m.partition)}
        for metric in GAUGES:
            send(f"{PREFIX}.{metric}.{_stat(m.topic)}.{m.partition}", getattr(m, metric), tags)
    topics = aggregate_by_topic(metrics)
    for t in topics:
        for metric in GAUGES:
            send(f"{PREFIX}.{metric}.{_stat(t.topic)}", getattr(t, metric), {"topic": t.topic})
    for metric in GAUGES:
        send(f"{PREFIX}.{metric}", sum(getattr(t, metric) for t in topics), {})
    return sent


def open_findings_by_topic(store: MetadataStore) -> dict[str, int]:
    """Every topic's open scrub findings by name, 0 for none: a gauge that is no longer sent
    keeps its last value in StatsD, so a closed finding must be sent as 0."""
    topics = store.topics()
    counts = store.count_open_findings([t.topic_id for t in topics])
    return {t.name: counts.get(t.topic_id, 0) for t in topics}


def emit_open_findings(
    findings: Mapping[str, int], *, gauge: Gauge | None = None
) -> list[tuple[str, float]]:
    """Publish ``scrub_open_findings`` per topic (``open_findings_by_topic``) and in total, as
    ``emit_metrics`` does Kafka's gauges; returns what was sent."""
    sent: list[tuple[str, float]] = []
    send = _sender(_airflow_gauge() if gauge is None else gauge, sent)
    for topic in sorted(findings):
        send(f"{PREFIX}.{SCRUB_GAUGE}.{_stat(topic)}", findings[topic], {"topic": topic})
    send(f"{PREFIX}.{SCRUB_GAUGE}", sum(findings.values()), {})
    return sent


def _sender(gauge: Gauge | None, sent: list[tuple[str, float]]) -> Send:
    """Send a figure (None: unknown, not sent) through ``gauge`` and note it in ``sent``."""

    def send(name: str, value: int | None, tags: dict[str, str]) -> None:
        if value is None:
            return
        sent.append((name, float(value)))
        if gauge is not None:
            gauge(name, float(value), tags=tags)

    return send


def publish_metrics(settings: Settings) -> dict:
    """Task body for a DAG: compute from the configured store and log dirs, emit, summarize."""
    store = open_store(settings)
    try:
        metrics = compute_metrics(store, settings.log_dirs, logs=leader_local_logs(settings))
        findings = open_findings_by_topic(store)
    finally:
        store.close()
    sent = emit_metrics(metrics) + emit_open_findings(findings)
    return {
        "partitions": len(metrics),
        "gauges": len(sent),
        "topics": [t.as_dict() for t in aggregate_by_topic(metrics)],
        "scrub_open_findings": sum(findings.values()),
    }


# -- internals ------------------------------------------------------------------------------


def _state_totals(
    store: MetadataStore, *, topic_ids: list[str], partition: int | None
) -> dict[tuple[str, int], dict[str, StateTotals]]:
    """(topic id, partition) -> state -> count and bytes, in one GROUP BY."""
    seg = RemoteLogSegment
    query = (
        select(
            col(seg.topic_id),
            col(seg.partition),
            col(seg.state),
            func.count(),
            func.coalesce(func.sum(seg.segment_size_bytes), 0),
        )
        .where(col(seg.topic_id).in_(topic_ids))
        .group_by(col(seg.topic_id), col(seg.partition), col(seg.state))
    )
    if partition is not None:
        query = query.where(col(seg.partition) == partition)
    found: dict[tuple[str, int], dict[str, StateTotals]] = {}
    with Session(store.engine) as session:
        for topic_id, part, state, count, size in session.exec(query).all():
            found.setdefault((topic_id, part), _by_state())[state] = StateTotals(
                int(count), int(size)
            )
    return found


def _partitions(store: MetadataStore, topics: list[Topic]) -> list[Partition]:
    if len(topics) == 1:
        return store.partitions(topics[0].topic_id)
    ids = {t.topic_id for t in topics}
    return [p for p in store.partitions() if p.topic_id in ids]


def leader_local_logs(settings: Settings) -> list[PartitionLog]:
    """The leaders' replicas (a follower's figures would understate the local log); none, with
    a warning, when the log dirs cannot be read."""
    try:
        return [leader.log for leader in leader_logs(settings)]
    except (KafkaFormatError, ValueError) as exc:
        log.warning("metrics without local figures: %s", exc)
        return []


def local_logs(log_dirs: Sequence[Path]) -> list[PartitionLog]:
    """The broker's partitions; none (with a warning) when a log dir cannot be read."""
    present = [Path(d) for d in log_dirs if Path(d).is_dir()]
    try:
        return partition_logs(present)
    except (KafkaFormatError, ValueError) as exc:
        log.warning("metrics without local figures: %s", exc)
        return []


def _topic_named(topics: list[Topic], name: str) -> Topic | None:
    return next((t for t in topics if t.name == name), None)


def _partition_metrics(
    topic: Topic,
    partition: int,
    row: Partition | None,
    log_: PartitionLog | None,
    totals: dict[tuple[str, int], dict[str, StateTotals]],
) -> PartitionMetrics:
    remote = totals.get((topic.topic_id, partition), _by_state())
    segments = log_.segments() if log_ is not None else None
    sizes = None if segments is None else [s.size_in_bytes() for s in segments]
    highest_remote = row.highest_remote_offset if row is not None else -1
    if row is not None:
        log_start, local_start = row.log_start_offset, row.local_log_start_offset
    else:
        log_start = log_.log_start_offset() if log_ is not None else 0
        local_start = log_start
    m = PartitionMetrics(
        topic=topic.name,
        topic_id=topic.topic_id,
        partition=partition,
        tiered_state=topic.tiered_state,
        tiered_epoch=topic.tiered_epoch,
        log_start_offset=log_start,
        local_log_start_offset=local_start,
        highest_remote_offset=highest_remote,
        local_segments=None if sizes is None else len(sizes),
        local_bytes=None if sizes is None else sum(sizes),
        remote=remote,
        remote_delete_lag_bytes=remote[_S.DELETE_SEGMENT_STARTED].bytes,
        remote_delete_lag_segments=remote[_S.DELETE_SEGMENT_STARTED].segments,
        remote_log_size_bytes=sum(remote[s].bytes for s in _SIZE_STATES),
        remote_log_metadata_count=sum(remote[s].segments for s in _LIVE_STATES),
    )
    if segments is not None and sizes is not None:
        lag = copy_lag(topic, [s.base_offset for s in segments], sizes, highest_remote)
        m.remote_copy_lag_bytes, m.remote_copy_lag_segments = lag
    return m


def copy_lag(
    topic: Topic, base_offsets: list[int], sizes: list[int], highest_remote: int
) -> tuple[int, int]:
    """recordLagStats: only-local segments (base offset > highest remote) less the active one."""
    if not copy_enabled(topic) or not sizes:
        return 0, 0
    only_local = [
        size for base, size in zip(base_offsets, sizes, strict=True) if base > highest_remote
    ]
    return max(sum(only_local) - sizes[-1], 0), max(len(only_local) - 1, 0)


def copy_enabled(topic: Topic) -> bool:
    """Kafka reports copy lag only while it copies; otherwise the gauges read 0."""
    return (
        topic.remote_storage_enable
        and not topic.remote_log_copy_disable
        and topic.tiered_state == TieredState.ENABLED
    )


def _stat(topic: str) -> str:
    """A topic name as one level of a dotted stat name (Airflow's convention for dots)."""
    return topic.replace(".", "__")


def _airflow_gauge() -> Gauge | None:
    try:
        from airflow.sdk.observability import stats
    except ImportError:
        log.debug("Airflow is not installed: metrics are computed but not sent")
        return None
    return stats.gauge
