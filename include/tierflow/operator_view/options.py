"""What to show: the page's query parameters and ``tierflow status``'s options.

Its own module so that the web app can read them without importing the store.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_EVENTS = 50
MAX_EVENTS = 1000
# Partitions per page. Each one shown is planned by the retention preview (the DAG's own
# planners, a few queries and file reads each), so a page stays well under the page's 2 s.
DEFAULT_LIMIT = 50
MAX_LIMIT = 500


@dataclass(frozen=True)
class ViewOptions:
    topic: str | None = None
    partition: int | None = None
    stuck_after_s: int | None = None  # None: TIERFLOW_STALE_COPY_GRACE_S
    events: int = DEFAULT_EVENTS
    history: bool = True
    page: int = 1  # of the partitions of ``topic`` (or numbered ``partition``), 1-based
    limit: int = DEFAULT_LIMIT

    def __post_init__(self) -> None:
        if self.page < 1:
            raise ValueError(f"page must be 1 or more, got {self.page}")
        if not 1 <= self.limit <= MAX_LIMIT:
            raise ValueError(f"limit must be between 1 and {MAX_LIMIT}, got {self.limit}")

    @property
    def lists_partitions(self) -> bool:
        """Partitions are listed one by one only for a topic or a partition number."""
        return self.topic is not None or self.partition is not None
