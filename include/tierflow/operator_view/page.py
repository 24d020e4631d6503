"""The Tiered storage page: server-rendered HTML, an inline SVG chart, one small script.

Shown by the Airflow UI in an iframe (an external view), so it must stand alone: no CDN, no
framework, styles inline. The HTML is the Jinja2 templates of ``templates/`` (``page.html``
lists the sections); this module hands them the snapshot.
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from functools import partial
from urllib.parse import urlencode

from tierflow.operator_view.chart import chart_figure
from tierflow.operator_view.model import OperatorSnapshot
from tierflow.operator_view.options import MAX_LIMIT, ViewOptions
from tierflow.operator_view.templating import render

MAX_DELETIONS_SHOWN = 200  # of the retention preview's; the page says how many more


def render_page(
    snapshot: OperatorSnapshot,
    *,
    options: ViewOptions,
    topic_names: Sequence[str],
    ui_root: str,
    linked_runs: Set[tuple[str, str]] = frozenset(),
) -> str:
    """``linked_runs``: the (dag_id, run_id) pairs whose task instances get links."""
    return render(
        "page.html",
        snapshot=snapshot,
        options=options,
        topic_names=topic_names,
        ui_root=ui_root,
        linked_runs=linked_runs,
        link=partial(view_link, options),
        chart=chart_figure(snapshot.history or []),
        max_limit=MAX_LIMIT,
        max_deletions_shown=MAX_DELETIONS_SHOWN,
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
    return render("error.html", message=message)
