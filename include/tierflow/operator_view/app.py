"""The web app behind the Tiered storage page: HTML for people, JSON for scripts.

``auth`` is an app-level dependency, so it runs before every route, present and future.
FastAPI's own /docs, /redoc and /openapi.json are turned off: it adds them outside the
app's dependencies, where they would answer anonymous requests.

Only FastAPI is imported with this module; the store and the figures are imported by the
handlers, since Airflow imports plugins (and so this) in every process.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse

from tierflow.operator_view.options import (
    DEFAULT_EVENTS,
    DEFAULT_LIMIT,
    MAX_EVENTS,
    MAX_LIMIT,
    ViewOptions,
)

if TYPE_CHECKING:
    from tierflow.config import Settings
    from tierflow.metadata.store import MetadataStore
    from tierflow.operator_view.links import RunLookup
    from tierflow.operator_view.model import OperatorSnapshot

Clock = Callable[[], int]

_stores: dict[str, MetadataStore] = {}
_stores_lock = threading.Lock()


def create_app(
    *,
    auth: Callable[..., Any],
    mount_prefix: str = "/tierflow",
    settings: Callable[[], Settings] | None = None,
    clock: Clock | None = None,
    runs: RunLookup | None = None,
) -> FastAPI:
    """The app; ``mount_prefix`` is where the API server mounts it (for links to the UI).

    ``runs`` says which of the runs the page names exist in the Airflow serving it; only
    those are linked (without it, none).
    """
    app = FastAPI(
        title="tierflow: tiered storage",
        dependencies=[Depends(auth)],
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
    )

    def load(options: ViewOptions) -> tuple[OperatorSnapshot, list[str]]:
        return _load(options, settings, clock)

    _add_page(app, load, mount_prefix, runs)

    @app.get("/api/snapshot")
    def snapshot(
        topic: str | None = None,
        partition: int | None = Query(None, ge=0),
        stuck_after: int | None = Query(None, ge=0, description="seconds"),
        events: int = Query(DEFAULT_EVENTS, ge=0, le=MAX_EVENTS),
        history: bool = True,
        page: int = Query(1, ge=1),
        limit: int = Query(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT),
    ) -> JSONResponse:
        options = ViewOptions(
            topic or None, partition, stuck_after, events, history, page=page, limit=limit
        )
        found, _names = load(options)
        return JSONResponse(found.as_dict())

    return app


def _add_page(
    app: FastAPI,
    load: Callable[[ViewOptions], tuple[OperatorSnapshot, list[str]]],
    mount_prefix: str,
    runs: RunLookup | None,
) -> None:
    """The HTML page at /: its form's fields arrive as text, empty meaning "not given"."""

    @app.get("/", response_class=HTMLResponse)
    def page(
        request: Request,
        topic: str | None = None,
        partition: str | None = Query(None, description="a number; empty: all"),
        stuck_after: str | None = Query(None, description="seconds; empty: the default"),
        events: int = Query(DEFAULT_EVENTS, ge=0, le=MAX_EVENTS),
        page: int = Query(1, ge=1),
        limit: int = Query(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT),
    ) -> HTMLResponse:
        from tierflow.operator_view.links import linked_runs
        from tierflow.operator_view.page import error_page, render_page

        try:
            numbers = _form_number("partition", partition), _form_number("stuck_after", stuck_after)
            options = ViewOptions(topic or None, *numbers, events, page=page, limit=limit)
            snapshot, names = load(options)
        except HTTPException as exc:
            return HTMLResponse(error_page(str(exc.detail)), status_code=exc.status_code)
        html = render_page(
            snapshot,
            options=options,
            topic_names=names,
            ui_root=ui_root(request, mount_prefix),
            linked_runs=linked_runs(snapshot, runs),  # one query of Airflow's DB, if any
        )
        return HTMLResponse(html)


def _load(
    options: ViewOptions, settings: Callable[[], Settings] | None, clock: Clock | None
) -> tuple[OperatorSnapshot, list[str]]:
    """The snapshot asked for, and every topic's name (the form's choices)."""
    from tierflow.config import Settings
    from tierflow.metadata.errors import UnknownTopicError
    from tierflow.metadata.store import wall_clock_ms
    from tierflow.operator_view.snapshot import build_snapshot

    current = settings() if settings else Settings.from_env()
    store = _store(current)
    now_ms = clock() if clock else wall_clock_ms()
    try:
        snapshot = build_snapshot(store, current, now_ms=now_ms, options=options)
    except UnknownTopicError as exc:
        raise HTTPException(404, str(exc)) from exc
    return snapshot, [t.name for t in store.topics()]


def _form_number(name: str, raw: str | None) -> int | None:
    """A number field of the page's form: left empty, it is not given."""
    if raw is None or not raw.strip():
        return None
    if not raw.strip().isdigit():
        raise HTTPException(422, f"{name} must be a whole number of 0 or more, got {raw!r}")
    return int(raw)


def ui_root(request: Request, mount_prefix: str) -> str:
    """Airflow's root path (e.g. "" or "/airflow"), for links to the UI's own pages."""
    root = str(request.scope.get("root_path", ""))
    return root.removesuffix(mount_prefix.rstrip("/")).rstrip("/")


def _store(settings: Settings) -> MetadataStore:
    """One store (and connection pool) per database for the life of the API server."""
    from tierflow.runtime import open_store

    with _stores_lock:
        store = _stores.get(settings.db_url)
        if store is None:
            store = _stores[settings.db_url] = open_store(settings)
        return store
