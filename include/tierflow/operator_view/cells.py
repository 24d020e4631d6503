"""Table cells of the page: the rounded figure shown, the exact one in data-value and title.

Every figure cell names its field (``data-field``), so the browser test reads the DOM the way
a script would and compares it with the store.
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape
from urllib.parse import quote

from tierflow.operator_view.formatting import human_bytes, human_duration, utc
from tierflow.tasks.attribution import TaskInstanceRef


def attrs(**values: object) -> str:
    """HTML attributes, escaped; ``data_x`` becomes ``data-x`` and None values are left out."""
    return "".join(
        f' {name.replace("_", "-")}="{escape(str(value))}"'
        for name, value in values.items()
        if value is not None
    )


def text(field: str, value: object) -> str:
    return f"<td{attrs(data_field=field)}>{escape(str(value))}</td>"


def link(field: str, value: object, href: str) -> str:
    """A text cell that opens another view of this page (same frame)."""
    return f"<td{attrs(data_field=field)}><a{attrs(href=href)}>{escape(str(value))}</a></td>"


def number(field: str, value: int | None) -> str:
    shown = "-" if value is None else str(value)
    raw = "" if value is None else value
    return f'<td class="num"{attrs(data_field=field, data_value=raw)}>{shown}</td>'


def size(field: str, value: int | None) -> str:
    raw = "" if value is None else value
    title = None if value is None else f"{value} bytes"
    return (
        f'<td class="num"{attrs(data_field=field, data_value=raw, title=title)}>'
        f"{escape(human_bytes(value))}</td>"
    )


def pair(field: str, size: int | None, segments: int | None) -> str:
    """``1.2 MiB / 3``: bytes and segments, each exact in its own data attribute."""
    if size is None or segments is None:
        return f'<td class="num"{attrs(data_field=field)}>-</td>'
    return (
        f'<td class="num"{attrs(data_field=field, data_bytes=size, data_segments=segments)}'
        f"{attrs(title=f'{size} bytes in {segments} segments')}>"
        f"{escape(human_bytes(size))} / {segments}</td>"
    )


def time(field: str, ms: int) -> str:
    return f"<td{attrs(data_field=field, data_value=ms)}>{escape(utc(ms))}</td>"


def age(field: str, ms: int) -> str:
    return f'<td class="num"{attrs(data_field=field, data_value=ms)}>{human_duration(ms)}</td>'


def row(cells: Iterable[str], **data: object) -> str:
    return f"<tr{attrs(**data)}>{''.join(cells)}</tr>"


def table(table_id: str, headers: Iterable[str], rows: list[str], empty: str) -> str:
    if not rows:
        return f'<p class="empty"{attrs(data_empty=table_id)}>{escape(empty)}</p>'
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    return (
        f'<div class="scroll"><table id="{escape(table_id)}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def task_instance_path(ti: TaskInstanceRef) -> str:
    """The Airflow UI's page of a task instance, relative to Airflow's root."""
    path = (
        f"dags/{quote(ti.dag_id, safe='')}/runs/{quote(ti.run_id, safe='')}"
        f"/tasks/{quote(ti.task_id, safe='')}"
    )
    return path + (f"/mapped/{ti.map_index}" if ti.map_index >= 0 else "")


def actor(field: str, who: str, ti: TaskInstanceRef | None, ui_root: str) -> str:
    """Who did it: a link to the task instance when the actor names one."""
    if ti is None:
        return text(field, who)
    label = f"{ti.dag_id} / {ti.task_id}"
    if ti.map_index >= 0:
        label += f"[{ti.map_index}]"
    if ti.try_number is not None:
        label += f" (try {ti.try_number})"
    href = f"{ui_root}/{task_instance_path(ti)}"
    link = (
        f'<a class="ti-link" target="_top"'
        f"{attrs(href=href, title=who, data_airflow_link='', data_dag_id=ti.dag_id)}"
        f"{attrs(data_run_id=ti.run_id, data_task_id=ti.task_id, data_map_index=ti.map_index)}>"
        f"{escape(label)}</a>"
    )
    return f'<td{attrs(data_field=field)}>{link}<div class="sub">{escape(ti.run_id)}</div></td>'
