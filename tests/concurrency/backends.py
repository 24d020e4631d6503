"""Which backends a held-run schedule runs on.

Free-running overlaps race inside the database, so each of them runs on SQLite and PostgreSQL
(extra staggers on SQLite only). A held run (gate.py) serializes the two runs' steps, so each
schedule runs on one backend or both: those that found a bug run on PostgreSQL, which keeps
the directory's run time modest.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest


def schedules(all_of: Iterable[Any], *, also_on_postgresql: Iterable[Any]) -> list[Any]:
    """``(backend, *schedule)`` parameters: ``all_of`` on SQLite, ``also_on_postgresql`` on
    PostgreSQL (a schedule may be in either or both)."""
    params = []
    for backend, chosen in (("sqlite", list(all_of)), ("postgresql", list(also_on_postgresql))):
        for schedule in chosen:
            values = schedule if isinstance(schedule, tuple) else (schedule,)
            params.append(pytest.param(backend, *values, id="-".join(map(str, (backend, *values)))))
    return params
