"""The Tiered storage page: server-rendered HTML, an inline SVG chart, one small script.

Shown by the Airflow UI in an iframe (an external view), so it must stand alone: no CDN, no
framework, styles inline. Sections follow an on-call engineer's questions: how much is where
(topics, partitions), is copying keeping up (chart), what will retention delete tonight, what
is stuck and which task started it, and what happened last.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from tierflow.metadata.states import RemoteLogSegmentState
from tierflow.metrics import PartitionMetrics, StateTotals
from tierflow.operator_view import cells
from tierflow.operator_view.chart import history_chart
from tierflow.operator_view.formatting import human_duration, retention_bytes, retention_ms, utc
from tierflow.operator_view.model import (
    EventView,
    OperatorSnapshot,
    RetentionPreview,
    StuckSegment,
    TopicView,
)
from tierflow.operator_view.options import ViewOptions

TITLE = "Tiered storage"
STATES = tuple(state.value for state in RemoteLogSegmentState)
STATE_HEADERS = ("Copying", "Remote", "Deleting", "Deleted")  # the four states, in order
MAX_DELETIONS_SHOWN = 200

STYLE = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1a202c;
margin:16px 20px;background:#fff}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:24px 0 6px}
.meta,.sub,.note{color:#4a5568;font-size:12px}.empty{color:#4a5568;font-style:italic}
table{border-collapse:collapse;margin:4px 0 8px;font-size:13px}
th,td{padding:3px 6px;border-bottom:1px solid #e2e8f0;text-align:left;vertical-align:top}
th{background:#f7fafc;font-weight:600;white-space:nowrap}td.num{text-align:right;
font-variant-numeric:tabular-nums;white-space:nowrap}tr:hover td{background:#f7fafc}
form{margin:8px 0 0;display:flex;gap:12px;align-items:end;flex-wrap:wrap}
label{font-size:12px;color:#4a5568;display:flex;flex-direction:column;gap:2px}
input,select,button{font:inherit;padding:2px 6px}a{color:#2b6cb0}
.state-ENABLED{color:#276749}.state-DISABLING,.state-DISABLED{color:#9c4221}
code{font-size:12px}.scroll{overflow-x:auto}td .sub{white-space:nowrap}
"""

# The Airflow UI shows this page in a sandboxed iframe that may not navigate the window
# itself. Links to Airflow's own pages therefore go through the UI's router: push the URL
# onto the (same-origin) top window's history and tell it, as a back/forward button would.
SCRIPT = """
document.addEventListener("click", function (event) {
  var link = event.target.closest && event.target.closest("a[data-airflow-link]");
  if (!link || window.top === window || event.button !== 0 || event.metaKey ||
      event.ctrlKey || event.shiftKey) { return; }
  try {
    var url = new URL(link.href);
    window.top.history.pushState(null, "", url.pathname + url.search + url.hash);
    window.top.dispatchEvent(new PopStateEvent("popstate", {state: null}));
    event.preventDefault();
  } catch (error) { /* not same-origin: the link opens in this frame instead */ }
});
"""


def render_page(
    snapshot: OperatorSnapshot,
    *,
    options: ViewOptions,
    topic_names: Sequence[str],
    ui_root: str,
) -> str:
    sections = [
        _header(snapshot, options, topic_names),
        "<h2>Topics</h2>",
        _topics(snapshot.topics),
        "<h2>Partitions</h2>",
        _partitions(snapshot.partitions),
        "<h2>Remote size and copy lag over time</h2>",
        '<p class="note">Replayed from the event history; copy lag is measured against '
        "today's log segments.</p>",
        history_chart(snapshot.history or []),
        _retention(snapshot.retention),
        _stuck(snapshot.stuck, snapshot.stuck_after_s, ui_root),
        f"<h2>Latest events ({len(snapshot.events)})</h2>",
        _events(snapshot.events, ui_root),
    ]
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{TITLE}</title><style>{STYLE}</style></head>"
        f'<body data-generated-ms="{snapshot.generated_ms}">{"".join(sections)}'
        f"<script>{SCRIPT}</script></body></html>"
    )


def error_page(message: str) -> str:
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{TITLE}</title>'
        f'<style>{STYLE}</style></head><body><h1>{TITLE}</h1><p class="error">'
        f"{escape(message)}</p></body></html>"
    )


def _header(snapshot: OperatorSnapshot, options: ViewOptions, topic_names: Sequence[str]) -> str:
    choices = ['<option value="">all topics</option>'] + [
        f"<option{' selected' if name == options.topic else ''}>{escape(name)}</option>"
        for name in topic_names
    ]
    return (
        f"<h1>{TITLE}</h1>"
        f'<div class="meta">As of <span id="generated">{escape(utc(snapshot.generated_ms))}'
        "</span>. Sizes in binary units; hover a figure for the exact bytes.</div>"
        '<form method="get" id="filters">'
        f'<label>Topic<select name="topic">{"".join(choices)}</select></label>'
        '<label>Stuck after (s)<input type="number" min="0" name="stuck_after" '
        f'value="{snapshot.stuck_after_s}" size="7"></label>'
        '<label>Events<input type="number" min="0" max="1000" name="events" '
        f'value="{options.events}" size="5"></label>'
        '<button type="submit">Show</button></form>'
    )


def _topics(topics: Sequence[TopicView]) -> str:
    headers = (
        "Topic",
        "Tiered / epoch",
        "Partitions",
        "Local",
        "Remote size",
        *STATE_HEADERS,
        "Copy lag",
        "Delete lag",
        "Retention",
        "Local retention",
    )
    rows = []
    for t in topics:
        state = (
            f'<td data-field="tiered_state" data-value="{escape(t.tiered_state)}">'
            f'<span class="state-{escape(t.tiered_state)}">{escape(t.tiered_state)}</span> / '
            f'<span data-field="tiered_epoch" data-value="{t.tiered_epoch}">{t.tiered_epoch}'
            f"</span>{_copy_note(t)}</td>"
        )
        rows.append(
            cells.row(
                [
                    cells.text("topic", t.topic),
                    state,
                    cells.number("partitions", t.partitions),
                    cells.pair("local", t.local_bytes, t.local_segments),
                    cells.size("remote_log_size_bytes", t.remote_log_size_bytes),
                    *(_state_cell(name, t.remote[name]) for name in STATES),
                    cells.pair(
                        "remote_copy_lag", t.remote_copy_lag_bytes, t.remote_copy_lag_segments
                    ),
                    cells.pair(
                        "remote_delete_lag", t.remote_delete_lag_bytes, t.remote_delete_lag_segments
                    ),
                    _retention_cell("retention", t.retention_ms, t.retention_bytes, ""),
                    _retention_cell(
                        "local_retention",
                        t.effective_local_retention_ms,
                        t.effective_local_retention_bytes,
                        _local_retention_note(t),
                    ),
                ],
                data_topic=t.topic,
            )
        )
    return cells.table("topics", headers, rows, "No topic is registered.") + (
        '<p class="note">Copying, Remote, Deleting, Deleted: segments in COPY_SEGMENT_STARTED, '
        "COPY_SEGMENT_FINISHED, DELETE_SEGMENT_STARTED and DELETE_SEGMENT_FINISHED (hover for "
        "bytes). Lags are bytes / segments.</p>"
    )


def _copy_note(t: TopicView) -> str:
    if not t.remote_storage_enable:
        return '<div class="sub">remote.storage.enable=false</div>'
    if t.remote_log_copy_disable:
        return '<div class="sub">remote.log.copy.disable=true</div>'
    return ""


def _state_cell(state: str, totals: StateTotals) -> str:
    segments, size = totals.segments, totals.bytes
    return (
        f'<td class="num"{cells.attrs(data_field=f"segments_{state}", data_value=segments)}'
        f"{cells.attrs(data_bytes=size, title=f'{state}: {size} bytes')}>{segments}</td>"
    )


def _retention_cell(field: str, ms: int, size: int, note: str) -> str:
    """Time and size limits as Kafka configures them (-1: unlimited), exact in data-*."""
    shown = f"{retention_ms(ms)} / {retention_bytes(size)}"
    data = cells.attrs(data_field=field, data_ms=ms, data_bytes=size)
    return f"<td{data}>{escape(shown)}{note}</td>"


def _local_retention_note(t: TopicView) -> str:
    """Where the applied local limits come from (they are shown resolved)."""
    if not t.remote_storage_enable or t.remote_log_copy_disable:
        return '<div class="sub">retention.* (copy is off)</div>'
    if t.local_retention_ms == -2 and t.local_retention_bytes == -2:
        return '<div class="sub">= retention.*</div>'
    return ""


def _partitions(metrics: Sequence[PartitionMetrics]) -> str:
    headers = (
        "Topic",
        "Partition",
        "Local",
        "Remote size",
        "Copy lag",
        "Delete lag",
        "Highest remote offset",
        "Log start offset",
        "Local log start offset",
    )
    rows = [
        cells.row(
            [
                cells.text("topic", m.topic),
                cells.number("partition", m.partition),
                cells.pair("local", m.local_bytes, m.local_segments),
                cells.size("remote_log_size_bytes", m.remote_log_size_bytes),
                cells.pair("remote_copy_lag", m.remote_copy_lag_bytes, m.remote_copy_lag_segments),
                cells.pair(
                    "remote_delete_lag", m.remote_delete_lag_bytes, m.remote_delete_lag_segments
                ),
                cells.number("highest_remote_offset", m.highest_remote_offset),
                cells.number("log_start_offset", m.log_start_offset),
                cells.number("local_log_start_offset", m.local_log_start_offset),
            ],
            data_topic=m.topic,
            data_partition=m.partition,
        )
        for m in metrics
    ]
    return cells.table("partitions", headers, rows, "No partition yet.")


def _retention(preview: RetentionPreview) -> str:
    local_note = (
        "local segments are deleted from the broker's log dirs"
        if preview.delete_local_files
        else "local segments are only reported (TIERFLOW_DELETE_LOCAL_SEGMENTS is off)"
    )
    topic_rows = [
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
    partition_rows = [
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
    deletion_rows = [
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
    more = len(preview.deletions) - len(deletion_rows)
    return "".join(
        [
            "<h2>Next retention run</h2>",
            f'<p class="meta" id="retention-as-of" data-value="{preview.as_of_ms}">'
            f"retention_expiry at {escape(utc(preview.as_of_ms))} would delete the following "
            f"(its dry-run plan as of that time); {local_note}.</p>",
            cells.table(
                "retention-topics",
                ("Topic", "Remote segments", "Remote bytes", "Local segments", "Local bytes"),
                topic_rows,
                "No topic has remote retention.",
            ),
            cells.table(
                "retention-partitions",
                (
                    "Topic",
                    "Partition",
                    "Remote segments",
                    "Remote bytes",
                    "Local segments",
                    "Local bytes",
                    "New log start",
                    "New local log start",
                    "Note",
                ),
                partition_rows,
                "",
            ),
            f"<details><summary>Segments it would delete ({len(preview.deletions)})</summary>",
            cells.table(
                "retention-deletions",
                ("Tier", "Topic", "Partition", "Segment", "Offsets", "Size", "Reason"),
                deletion_rows,
                "Nothing.",
            ),
            f'<p class="note">and {more} more</p>' if more > 0 else "",
            "</details>",
        ]
    )


def _stuck(stuck: Sequence[StuckSegment], stuck_after_s: int, ui_root: str) -> str:
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
            f'<h2>Stuck segments ({len(stuck)})</h2><p class="meta" id="stuck-after" '
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
        ]
    )


def _events(events: Sequence[EventView], ui_root: str) -> str:
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
    return cells.table(
        "events",
        ("#", "Time", "Entity", "Topic", "Partition", "Segment", "Transition", "By"),
        rows,
        "No events yet.",
    )
