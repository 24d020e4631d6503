"""Assemble one snapshot for the Tiered storage page and ``tierflow status``.

The log dirs are read once and every section sees that same view of the disk, so the tables,
the chart's last point and the retention preview agree with each other.
"""

from __future__ import annotations

from tierflow.config import Settings
from tierflow.metadata.store import MetadataStore, wall_clock_ms
from tierflow.metrics import compute_metrics, local_logs
from tierflow.operator_view.events import latest_events
from tierflow.operator_view.history import remote_history
from tierflow.operator_view.model import HistoryPoint, OperatorSnapshot
from tierflow.operator_view.options import ViewOptions
from tierflow.operator_view.retention_preview import next_retention_run_ms, preview_retention
from tierflow.operator_view.stuck import stuck_segments
from tierflow.operator_view.topics import topic_views
from tierflow.runtime import open_store


def build_snapshot(
    store: MetadataStore, settings: Settings, *, now_ms: int, options: ViewOptions
) -> OperatorSnapshot:
    """Raises UnknownTopicError for an unknown ``options.topic``."""
    topics = [store.topic(options.topic)] if options.topic else store.topics()
    logs = local_logs(settings.log_dirs)
    metrics = compute_metrics(
        store, settings.log_dirs, topic=options.topic, partition=options.partition, logs=logs
    )
    stuck_after_s = (
        settings.stale_copy_grace_s if options.stuck_after_s is None else options.stuck_after_s
    )
    ids = {t.name: t.topic_id for t in topics}
    history = None
    if options.history:
        by_key = {(ids[p.topic], p.partition): p for p in logs if p.topic in ids}
        history = remote_history(store, topics, by_key, partition=options.partition)
        # The chart ends at today's gauges: the same figures as the tables.
        history.append(
            HistoryPoint(
                now_ms,
                sum(m.remote_log_size_bytes for m in metrics),
                sum(m.remote_copy_lag_bytes or 0 for m in metrics),
            )
        )
    return OperatorSnapshot(
        generated_ms=now_ms,
        topics=topic_views(topics, metrics),
        partitions=metrics,
        retention=preview_retention(
            store,
            {(p.topic, p.partition): p for p in logs},
            as_of_ms=next_retention_run_ms(now_ms),
            copy_grace_ms=settings.stale_copy_grace_s * 1000,
            delete_local_files=settings.delete_local_segments,
            topics=set(ids),
            partition=options.partition,
        ),
        stuck_after_s=stuck_after_s,
        stuck=stuck_segments(
            store,
            topics,
            now_ms=now_ms,
            stuck_after_s=stuck_after_s,
            partition=options.partition,
        ),
        events=latest_events(store, topics, limit=options.events, partition=options.partition),
        history=history,
    )


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
