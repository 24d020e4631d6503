"""The page's Jinja2 environment: the templates of this package, autoescaped.

Every value a template prints is escaped unless the template says otherwise, so topic names,
actors and error messages cannot inject markup. The filters are the page's rounding for
people (``formatting``); the exact figure always travels with it in a data attribute.
"""

from __future__ import annotations

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from tierflow.metadata.states import RemoteLogSegmentState
from tierflow.operator_view.cells import actor_label, task_instance_path
from tierflow.operator_view.formatting import (
    human_bytes,
    human_duration,
    retention_bytes,
    retention_ms,
    utc,
)
from tierflow.operator_view.paging import page_range


def thousands(value: int) -> str:
    """``12,345``: counts of rows, as the headings and notes print them."""
    return f"{value:,}"


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("tierflow.operator_view"),
        autoescape=select_autoescape(),
        undefined=StrictUndefined,  # a misspelt field fails the render instead of showing ""
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        {
            "bytes": human_bytes,
            "duration": human_duration,
            "utc": utc,
            "retention_ms": retention_ms,
            "retention_bytes": retention_bytes,
            "thousands": thousands,
            "page_range": page_range,
            "task_instance_path": task_instance_path,
            "actor_label": actor_label,
        }
    )
    # The four segment states in Kafka's order: the topic table's columns.
    env.globals["STATES"] = tuple(state.value for state in RemoteLogSegmentState)
    return env


ENVIRONMENT = _environment()


def render(template: str, **context: object) -> str:
    return ENVIRONMENT.get_template(template).render(**context)
