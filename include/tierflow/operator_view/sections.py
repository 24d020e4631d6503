"""The page's sections after the figures: the next retention run, stuck segments, events.

Each is bounded: the retention preview plans the partitions on the page shown, and the stuck
segments and events show their first rows with a line saying how many more there are.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from tierflow.operator_view import cells
from tierflow.operator_view.formatting import human_duration, utc
from tierflow.operator_view.model import EventView, PartitionPage, RetentionPreview, StuckSegment
from tierflow.operator_view.paging import page_range

MAX_DELETIONS_SHOWN = 200


def more(shown: int, total: int, what: str) -> str:
    """``and 12 more``: what a bounded list leaves out (nothing when it shows all)."""
    left = total - shown
    if left <= 0:
        return ""
    return f'<p class="note more" data-more="{left}">and {left:,} more {escape(what)}</p>'


def retention_section(preview: RetentionPreview, page: PartitionPage) -> str:
    """The dry-run plan of the partitions on the page: the run plans each partition with a
    few queries and file reads, too many to redo for 10,000 partitions on every view."""
    heading = "<h2>Next retention run</h2>"
    if not page.listed:
        return heading + (
            f'<p class="note" id="retention-as-of" data-value="{preview.as_of_ms}">'
            f"retention_expiry at {escape(utc(preview.as_of_ms))}: choose a topic to see its "
            "dry-run plan for the partitions listed. For every partition at once, trigger "
            "retention_expiry with dry_run on.</p>"
        )
    local_note = (
        "local segments are deleted from the broker's log dirs"
        if preview.delete_local_files
        else "local segments are only reported (TIERFLOW_DELETE_LOCAL_SEGMENTS is off)"
    )
    return "".join(
        [
            heading,
            f'<p class="meta" id="retention-as-of" data-value="{preview.as_of_ms}">'
            f"retention_expiry at {escape(utc(preview.as_of_ms))} would delete the following "
            f"from the partitions listed above ({escape(page_range(page))}): its dry-run plan "
            f"as of that time; {local_note}.</p>",
            _retention_topics(preview),
            _retention_partitions(preview),
            _retention_deletions(preview),
        ]
    )


def _retention_topics(preview: RetentionPreview) -> str:
    rows = [
        cells.row(
            [
                cells.text("topic", t.topic),
                cells.number("remote_segments", t.remote_segments),
                cells.size("remote_bytes", t.remote_bytes),
                cells.number("local_segments", t.local_segments),
                cells.size("local_bytes", t.local_bytes),
            ],
            data_topic=t.topic,
        )
        for t in preview.topics
    ]
    return cells.table(
        "retention-topics",
        ("Topic", "Remote segments", "Remote bytes", "Local segments", "Local bytes"),
        rows,
        "No topic has remote retention.",
    )


def _retention_partitions(preview: RetentionPreview) -> str:
    rows = [
        cells.row(
            [
                cells.text("topic", p.topic),
                cells.number("partition", p.partition),
                cells.number("remote_segments", p.remote_segments),
                cells.size("remote_bytes", p.remote_bytes),
                cells.number("local_segments", p.local_segments),
                cells.size("local_bytes", p.local_bytes),
                cells.number("new_log_start_offset", p.new_log_start_offset),
                cells.number("new_local_log_start_offset", p.new_local_log_start_offset),
                cells.text("note", "; ".join(filter(None, [p.stopped_at, *p.blocked]))),
            ],
            data_topic=p.topic,
            data_partition=p.partition,
        )
        for p in preview.partitions
    ]
    headers = (
        "Topic",
        "Partition",
        "Remote segments",
        "Remote bytes",
        "Local segments",
        "Local bytes",
        "New log start",
        "New local log start",
        "Note",
    )
    return cells.table("retention-partitions", headers, rows, "")


def _retention_deletions(preview: RetentionPreview) -> str:
    rows = [
        cells.row(
            [
                cells.text("tier", d.tier),
                cells.text("topic", d.topic),
                cells.number("partition", d.partition),
                f"<td><code>{escape(d.segment)}</code></td>",
                cells.text("offsets", f"{d.start_offset}-{d.end_offset}"),
                cells.size("size_bytes", d.size_bytes),
                cells.text("reason", d.reason),
            ],
            data_segment=d.segment,
            data_tier=d.tier,
        )
        for d in preview.deletions[:MAX_DELETIONS_SHOWN]
    ]
    return "".join(
        [
            f"<details><summary>Segments it would delete ({len(preview.deletions)})</summary>",
            cells.table(
                "retention-deletions",
                ("Tier", "Topic", "Partition", "Segment", "Offsets", "Size", "Reason"),
                rows,
                "Nothing.",
            ),
            more(len(rows), len(preview.deletions), "segments"),
            "</details>",
        ]
    )


def stuck_section(
    stuck: Sequence[StuckSegment], total: int, stuck_after_s: int, ui_root: str
) -> str:
    rows = [
        cells.row(
            [
                cells.text("topic", s.topic),
                cells.number("partition", s.partition),
                f"<td><code>{escape(s.segment_id)}</code></td>",
                cells.text("state", s.state),
                cells.text("offsets", f"{s.start_offset}-{s.end_offset}"),
                cells.size("size_bytes", s.size_bytes),
                cells.time("since", s.since_ms),
                cells.age("age", s.age_ms),
                cells.actor("started_by", s.actor, s.task_instance, ui_root),
                cells.text(
                    "lease",
                    f"{'live' if s.lease_live else 'expired'}: {s.lease_owner}"
                    if s.lease_owner
                    else "none",
                ),
            ],
            data_segment_id=s.segment_id,
        )
        for s in stuck
    ]
    return "".join(
        [
            f'<h2>Stuck segments ({total:,})</h2><p class="meta" id="stuck-after" '
            f'data-value="{stuck_after_s}">In COPY_SEGMENT_STARTED or DELETE_SEGMENT_STARTED '
            f"for longer than {escape(human_duration(stuck_after_s * 1000))}. The next copy "
            "of the partition removes an abandoned copy; the next retention run retries a "
            "failed delete.</p>",
            cells.table(
                "stuck",
                (
                    "Topic",
                    "Partition",
                    "Segment",
                    "State",
                    "Offsets",
                    "Size",
                    "Since",
                    "For",
                    "Started by",
                    "Copy lease",
                ),
                rows,
                "Nothing is stuck.",
            ),
            more(len(stuck), total, "stuck segments (the oldest are shown)"),
        ]
    )


def events_section(events: Sequence[EventView], total: int, ui_root: str) -> str:
    rows = [
        cells.row(
            [
                cells.number("id", e.id),
                cells.time("time", e.time_ms),
                cells.text("entity", e.entity),
                cells.text("topic", e.topic),
                cells.number("partition", e.partition),
                f"<td><code>{escape(e.segment_id or '')}</code></td>",
                cells.text("transition", f"{e.from_state or '∅'} → {e.to_state}"),
                cells.actor("actor", e.actor, e.task_instance, ui_root),
            ],
            data_event_id=e.id,
        )
        for e in events
    ]
    return "".join(
        [
            f"<h2>Latest events ({len(events):,} of {total:,})</h2>",
            cells.table(
                "events",
                ("#", "Time", "Entity", "Topic", "Partition", "Segment", "Transition", "By"),
                rows,
                "No events yet.",
            ),
            more(len(events), total, "events (tierflow events lists them all)"),
        ]
    )
