"""The Tiered storage page: server-rendered HTML, an inline SVG chart, one small script.

Shown by the Airflow UI in an iframe (an external view), so it must stand alone: no CDN, no
framework, styles inline. Sections follow an on-call engineer's questions: how much is where
(topics, partitions), is copying keeping up (chart), what will retention delete tonight, what
is stuck and which task started it, and what happened last.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from urllib.parse import urlencode

from tierflow.metadata.states import RemoteLogSegmentState
from tierflow.metrics import StateTotals
from tierflow.operator_view import cells
from tierflow.operator_view.chart import history_chart
from tierflow.operator_view.formatting import retention_bytes, retention_ms, utc
from tierflow.operator_view.model import (
    BrokerView,
    OperatorSnapshot,
    PartitionPage,
    PartitionView,
    TopicView,
)
from tierflow.operator_view.options import MAX_LIMIT, ViewOptions
from tierflow.operator_view.paging import page_range
from tierflow.operator_view.sections import events_section, retention_section, stuck_section

TITLE = "Tiered storage"
STATES = tuple(state.value for state in RemoteLogSegmentState)
STATE_HEADERS = ("Copying", "Remote", "Deleting", "Deleted")  # the four states, in order

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
nav.pages{display:flex;gap:12px;align-items:baseline;margin:4px 0 8px}
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
    page = snapshot.partition_page
    sections = [
        _header(snapshot, options, topic_names),
        "<h2>Topics</h2>",
        _topics(snapshot.topics, options),
        _brokers(snapshot.brokers),
        "<h2>Partitions</h2>",
        _partitions(snapshot.partitions, page, options),
        "<h2>Remote size and copy lag over time</h2>",
        '<p class="note">Replayed from the event history; copy lag is measured against '
        "today's log segments.</p>",
        history_chart(snapshot.history or []),
        retention_section(snapshot.retention, page),
        stuck_section(snapshot.stuck, snapshot.stuck_total, snapshot.stuck_after_s, ui_root),
        events_section(snapshot.events, snapshot.events_total, ui_root),
    ]
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{TITLE}</title><style>{STYLE}</style></head>"
        f'<body data-generated-ms="{snapshot.generated_ms}">{"".join(sections)}'
        f"<script>{SCRIPT}</script></body></html>"
    )


def view_link(options: ViewOptions, **changes: object) -> str:
    """This view's query string with ``changes``: links keep the threshold, events, limit."""
    current: dict[str, object] = {
        "topic": options.topic,
        "partition": options.partition,
        "stuck_after": options.stuck_after_s,
        "events": options.events,
        "limit": options.limit,
        "page": options.page,
    }
    current.update(changes)
    if current["page"] == 1:
        current["page"] = None
    return "?" + urlencode({k: v for k, v in current.items() if v is not None})


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
        '<label>Partition<input type="number" min="0" name="partition" '
        f'value="{"" if options.partition is None else options.partition}" size="5"></label>'
        '<label>Stuck after (s)<input type="number" min="0" name="stuck_after" '
        f'value="{snapshot.stuck_after_s}" size="7"></label>'
        '<label>Events<input type="number" min="0" max="1000" name="events" '
        f'value="{options.events}" size="5"></label>'
        f'<label>Partitions a page<input type="number" min="1" max="{MAX_LIMIT}" name="limit" '
        f'value="{options.limit}" size="5"></label>'
        '<button type="submit">Show</button></form>'
    )


def _topics(topics: Sequence[TopicView], options: ViewOptions) -> str:
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
                    cells.link("topic", t.topic, view_link(options, topic=t.topic, page=1)),
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
        "bytes). Lags are bytes / segments. A topic's name lists its partitions.</p>"
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


def _brokers(brokers: Sequence[BrokerView]) -> str:
    """Per broker, once there is more than one: where the local data and the lag are."""
    if len(brokers) < 2:
        return ""
    headers = ("Broker", "Partitions", "Local", "Remote size", "Copy lag", "Delete lag")
    rows = [
        cells.row(
            [
                cells.text("broker", "none" if b.broker is None else b.broker),
                cells.number("partitions", b.partitions),
                cells.pair("local", b.local_bytes, b.local_segments),
                cells.size("remote_log_size_bytes", b.remote_log_size_bytes),
                cells.pair("remote_copy_lag", b.remote_copy_lag_bytes, b.remote_copy_lag_segments),
                cells.pair(
                    "remote_delete_lag", b.remote_delete_lag_bytes, b.remote_delete_lag_segments
                ),
            ],
            data_broker="" if b.broker is None else b.broker,
        )
        for b in brokers
    ]
    return (
        "<h2>Brokers</h2>"
        + cells.table("brokers", headers, rows, "")
        + '<p class="note">Each partition counts on the broker holding its leader replica; '
        '"none": in the store, on no configured broker.</p>'
    )


def _partitions(metrics: Sequence[PartitionView], page: PartitionPage, options: ViewOptions) -> str:
    if not page.listed:
        return (
            f'<p class="note" id="partitions-summary" data-total="{page.total}">'
            f"{page.total:,} partitions, summed per topic above. Choose a topic to list its "
            f"partitions, {page.limit} a page.</p>"
        )
    headers = (
        "Topic",
        "Partition",
        "Broker",
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
                cells.number("broker", m.broker),
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
    pager = _pager(page, options)
    return pager + cells.table("partitions", headers, rows, "No partition on this page.") + pager


def _pager(page: PartitionPage, options: ViewOptions) -> str:
    """Previous and next links around ``partitions 51-100 of 500``."""
    links = []
    if page.page > 1:
        previous = min(page.page - 1, page.pages)
        links.append(
            f'<a rel="prev" href="{escape(view_link(options, page=previous))}">previous</a>'
        )
    links.append(
        f'<span class="meta"{cells.attrs(data_page=page.page, data_pages=page.pages)}>'
        f"page {page.page} of {page.pages}: {escape(page_range(page))}</span>"
    )
    if page.page < page.pages:
        links.append(
            f'<a rel="next" href="{escape(view_link(options, page=page.page + 1))}">next</a>'
        )
    return f'<nav class="pages">{"".join(links)}</nav>'
