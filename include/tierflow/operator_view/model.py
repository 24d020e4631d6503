"""What the Tiered storage page and ``tierflow status`` show, as plain data.

One snapshot feeds both, so the browser and the terminal print the same numbers. Every figure
is exact (bytes, offsets, milliseconds); rounding for people happens only when rendering.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from tierflow.cluster.unread import UnreadPartition
from tierflow.export.status import PartitionLag
from tierflow.metrics import PartitionMetrics, SummedMetrics, TopicMetrics
from tierflow.tasks.attribution import TaskInstanceRef


@dataclass
class TopicView(TopicMetrics):
    """A topic's partitions summed (Kafka's topic-level gauges) with its tiering settings."""

    topic_id: str = ""
    tiered_state: str = ""
    tiered_epoch: int = 0
    remote_storage_enable: bool = False
    remote_log_copy_disable: bool = False
    remote_log_disable_policy: str = "retain"
    retention_ms: int = -1
    retention_bytes: int = -1
    local_retention_ms: int = -2  # as configured; -2 means "same as retention.ms"
    local_retention_bytes: int = -2
    effective_local_retention_ms: int = -1  # what local retention applies
    effective_local_retention_bytes: int = -1
    # Partitions the metadata gives no leader: a stopped cluster's (figures from their last
    # leader's replica), or ones no replica is read of (in ``OperatorSnapshot.unread``).
    leaderless: int = 0


@dataclass
class PartitionView(PartitionMetrics):
    """A partition's gauges and the broker holding its leader replica (None: on no broker);
    ``leaderless``: the metadata gives it none, and ``broker`` holds its last leader's."""

    broker: int | None = None
    leaderless: bool = False


@dataclass
class BrokerView(SummedMetrics):
    """A broker's leader partitions summed, as the topic rows sum a topic's partitions."""

    broker: int | None  # None: partitions in the store that no configured broker holds


@dataclass(frozen=True)
class PartitionPage:
    """Which partitions the per-partition sections show: one page of those matching the
    topic (or partition number) asked for. Without either, none are listed: the topic rows
    sum them, and ``total`` counts them."""

    topic: str | None
    partition: int | None
    listed: bool  # a topic or a partition number was asked for
    page: int  # 1-based
    limit: int
    total: int  # partitions matching the filters
    pages: int  # 0 when nothing is listed
    first: int  # index of the first partition shown, 0-based


@dataclass(frozen=True)
class StuckSegment:
    """A segment in a STARTED state for longer than the threshold, and who put it there."""

    topic: str
    partition: int
    segment_id: str
    state: str
    start_offset: int
    end_offset: int
    size_bytes: int
    since_ms: int  # when it entered its state
    age_ms: int
    actor: str  # of the event that moved it into its state
    task_instance: TaskInstanceRef | None
    lease_owner: str | None  # the partition's copy lease, if any
    lease_live: bool


@dataclass(frozen=True)
class ScrubFindingView:
    """A segment whose last scrub found something wrong: where it is, which object, and what
    (``metadata.scrub_store``); open until a later check passes or the segment is deleted."""

    topic: str
    partition: int
    segment_id: str
    start_offset: int
    end_offset: int
    key: str  # the object at fault
    finding: str  # what is wrong with it
    checked_ms: int  # when the segment was last checked


@dataclass(frozen=True)
class PlannedDeletion:
    """One segment the next retention run would delete, remotely or from the broker's disk."""

    tier: str  # "remote" or "local"
    topic: str
    partition: int
    segment: str  # the remote segment id, or the local segment's base offset
    start_offset: int
    end_offset: int
    size_bytes: int
    reason: str


@dataclass
class PartitionRetention:
    topic: str
    partition: int
    remote_segments: int = 0
    remote_bytes: int = 0
    local_segments: int = 0
    local_bytes: int = 0
    new_log_start_offset: int | None = None
    new_local_log_start_offset: int | None = None
    stopped_at: str = ""  # where the remote scan stopped, and why
    blocked: list[str] = field(default_factory=list)  # local segments that may not go yet
    local_skipped: str | None = None


@dataclass
class TopicRetention:
    """Per topic, as the retention_expiry DAG's report sums it."""

    topic: str
    remote_segments: int = 0
    remote_bytes: int = 0
    local_segments: int = 0
    local_bytes: int = 0


@dataclass
class RetentionPreview:
    """The dry-run plan of the next scheduled retention run, evaluated as of its time."""

    as_of_ms: int
    delete_local_files: bool  # TIERFLOW_DELETE_LOCAL_SEGMENTS: otherwise local is reported only
    partitions: list[PartitionRetention] = field(default_factory=list)
    topics: list[TopicRetention] = field(default_factory=list)
    deletions: list[PlannedDeletion] = field(default_factory=list)


@dataclass(frozen=True)
class EventView:
    id: int
    time_ms: int
    entity: str
    topic: str
    partition: int | None
    segment_id: str | None
    from_state: str | None
    to_state: str
    actor: str
    task_instance: TaskInstanceRef | None


@dataclass(frozen=True)
class HistoryPoint:
    """Totals over the shown partitions right after the events at ``time_ms``."""

    time_ms: int
    remote_log_size_bytes: int
    remote_copy_lag_bytes: int


@dataclass
class OperatorSnapshot:
    """``partitions``, the retention preview's partitions: the page ``partition_page`` says;
    ``stuck``, ``events`` and ``scrub_findings``: the first of ``stuck_total``,
    ``events_total`` and ``scrub_findings_total``."""

    generated_ms: int
    topics: list[TopicView]
    brokers: list[BrokerView]
    partition_page: PartitionPage
    partitions: list[PartitionView]
    retention: RetentionPreview
    stuck_after_s: int
    stuck: list[StuckSegment]
    stuck_total: int
    events: list[EventView]
    events_total: int
    history: list[HistoryPoint] | None = None  # None: not asked for
    # Exported topics' partitions: how far each Iceberg table is behind the tiered data.
    export_lag: list[PartitionLag] = field(default_factory=list)
    # Partitions of the topics shown that are in the log dirs but whose leader is not read.
    unread: list[UnreadPartition] = field(default_factory=list)
    # Open scrub findings of the partitions shown, oldest check first.
    scrub_findings: list[ScrubFindingView] = field(default_factory=list)
    scrub_findings_total: int = 0

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if self.history is None:
            del out["history"]
        return out
