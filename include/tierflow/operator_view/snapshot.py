"""Assemble one snapshot for the Tiered storage page and ``tierflow status``.

The log dirs are read once and every section sees that same view of the disk, so the tables,
the chart's last point and the retention preview agree with each other. At cluster scale
(10,000 partitions) the cost is two GROUP BY queries and one directory listing per partition
for the topic and broker rows and the chart; the per-partition rows and the retention preview
cover one page of a topic's partitions; stuck segments and events are bounded lists.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import fields

from tierflow.cluster.unread import UnreadPartition
from tierflow.config import Settings
from tierflow.export.status import export_lags
from tierflow.metadata.models import Topic
from tierflow.metadata.store import MetadataStore, wall_clock_ms
from tierflow.metrics import compute_metrics
from tierflow.operator_view.aggregate import Aggregates, aggregate
from tierflow.operator_view.collector import collector_paused
from tierflow.operator_view.disk import (
    Leader,
    LocalLeaders,
    PartitionName,
    listed_log,
    read_local_leaders,
)
from tierflow.operator_view.events import count_events, latest_events
from tierflow.operator_view.history import remote_history
from tierflow.operator_view.model import HistoryPoint, OperatorSnapshot, PartitionView, TopicView
from tierflow.operator_view.options import ViewOptions
from tierflow.operator_view.paging import partition_page
from tierflow.operator_view.retention_preview import next_retention_run_ms, preview_retention
from tierflow.operator_view.scrub_findings import count_scrub_findings, scrub_findings
from tierflow.operator_view.stuck import count_stuck, stuck_segments
from tierflow.operator_view.topics import topic_views
from tierflow.runtime import open_store


def build_snapshot(
    store: MetadataStore, settings: Settings, *, now_ms: int, options: ViewOptions
) -> OperatorSnapshot:
    """Raises UnknownTopicError for an unknown ``options.topic``."""
    with collector_paused():
        return _build(store, settings, now_ms=now_ms, options=options)


def _build(
    store: MetadataStore, settings: Settings, *, now_ms: int, options: ViewOptions
) -> OperatorSnapshot:
    topics = [store.topic(options.topic)] if options.topic else store.topics()
    local = read_local_leaders(settings)
    leaders = local.leaders
    totals = aggregate(store, topics, leaders, partition=options.partition)
    page, shown = partition_page(totals.keys, options)
    stuck_after_s = (
        settings.stale_copy_grace_s if options.stuck_after_s is None else options.stuck_after_s
    )
    unread = [
        u
        for u in local.unread
        if u.topic in {t.name for t in topics}
        and (options.partition is None or u.partition == options.partition)
    ]
    return OperatorSnapshot(
        generated_ms=now_ms,
        topics=_leaderless_counted(topic_views(topics, totals.topics), local, unread, options),
        brokers=[totals.brokers[b] for b in sorted(totals.brokers, key=_broker_order)],
        partition_page=page,
        partitions=_partition_rows(store, settings, options, totals, leaders, shown, topics),
        retention=preview_retention(
            store,
            {key: leaders[key].log for key in shown if key in leaders},
            as_of_ms=next_retention_run_ms(now_ms),
            copy_grace_ms=settings.stale_copy_grace_s * 1000,
            delete_local_files=settings.delete_local_segments,
            partitions=shown,
        ),
        stuck_after_s=stuck_after_s,
        stuck=stuck_segments(
            store, topics, now_ms=now_ms, stuck_after_s=stuck_after_s, partition=options.partition
        ),
        stuck_total=count_stuck(
            store, topics, now_ms=now_ms, stuck_after_s=stuck_after_s, partition=options.partition
        ),
        events=latest_events(store, topics, limit=options.events, partition=options.partition),
        events_total=count_events(store, topics, partition=options.partition),
        history=_history(store, topics, totals, options, now_ms) if options.history else None,
        export_lag=export_lags(store, [t for t in topics if t.iceberg_export], options.partition),
        unread=unread,
        scrub_findings=scrub_findings(store, topics, partition=options.partition),
        scrub_findings_total=count_scrub_findings(store, topics, partition=options.partition),
    )


def _leaderless_counted(
    views: list[TopicView], local: LocalLeaders, unread: list[UnreadPartition], options: ViewOptions
) -> list[TopicView]:
    """Each topic's partitions without a leader in the metadata: read from their last leader,
    or not read at all."""
    counts = Counter(u.topic for u in unread if u.leaderless)
    counts.update(
        name
        for (name, number), leader in local.leaders.items()
        if leader.leaderless and (options.partition is None or number == options.partition)
    )
    for view in views:
        view.leaderless = counts[view.topic]
    return views


def _partition_rows(
    store: MetadataStore,
    settings: Settings,
    options: ViewOptions,
    totals: Aggregates,
    leaders: dict[PartitionName, Leader],
    shown: list[PartitionName],
    topics: list[Topic],
) -> list[PartitionView]:
    """The page's partitions, from the same listing of their directories as the totals."""
    if not shown:
        return []
    ids = {t.name: t.topic_id for t in topics}
    logs = [
        listed_log(leaders[(name, n)].log, totals.sizes[key])
        for name, n in shown
        if (key := (ids[name], n)) in totals.sizes
    ]
    metrics = compute_metrics(
        store, settings.log_dirs, topic=options.topic, partition=options.partition, logs=logs
    )
    wanted = set(shown)
    return [
        PartitionView(
            **{f.name: getattr(m, f.name) for f in fields(m)},
            broker=leaders[key].broker if key in leaders else None,
            leaderless=key in leaders and leaders[key].leaderless,
        )
        for m in metrics
        if (key := (m.topic, m.partition)) in wanted
    ]


def _history(
    store: MetadataStore,
    topics: list[Topic],
    totals: Aggregates,
    options: ViewOptions,
    now_ms: int,
) -> list[HistoryPoint]:
    history = remote_history(store, topics, totals.sizes, partition=options.partition)
    # The chart ends at today's gauges: the same figures as the topic rows.
    history.append(
        HistoryPoint(
            now_ms,
            sum(t.remote_log_size_bytes for t in totals.topics.values()),
            sum(t.remote_copy_lag_bytes for t in totals.topics.values()),
        )
    )
    return history


def _broker_order(broker: int | None) -> tuple[bool, int]:
    return broker is None, broker or 0


def snapshot_from_settings(
    settings: Settings, options: ViewOptions, *, now_ms: int | None = None
) -> OperatorSnapshot:
    """Open the configured store, build, close: for one-off callers such as the CLI."""
    store = open_store(settings)
    try:
        return build_snapshot(
            store, settings, now_ms=wall_clock_ms() if now_ms is None else now_ms, options=options
        )
    finally:
        store.close()
