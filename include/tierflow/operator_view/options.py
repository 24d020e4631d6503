"""What to show: the page's query parameters and ``tierflow status``'s options.

Its own module so that the web app can read them without importing the store.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_EVENTS = 50
MAX_EVENTS = 1000


@dataclass(frozen=True)
class ViewOptions:
    topic: str | None = None
    partition: int | None = None
    stuck_after_s: int | None = None  # None: TIERFLOW_STALE_COPY_GRACE_S
    events: int = DEFAULT_EVENTS
    history: bool = True
