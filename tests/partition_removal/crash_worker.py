"""Run remove_marked_partitions in this process, for the crash tests (TIERFLOW_CRASH_AT kills it).

python -m tests.partition_removal.crash_worker NOW_MS
"""

from __future__ import annotations

import sys

from tierflow.config import Settings
from tierflow.lifecycle.removal.remove import remove_marked_partitions
from tierflow.runtime import open_storage, open_store
from tierflow.storage.factory import open_object_store


def main(now_ms: int) -> None:
    settings = Settings.from_env()
    remove_marked_partitions(
        open_store(settings),
        open_storage(settings),
        open_object_store(settings.remote_storage),
        prefix=settings.storage.prefix,
        actor="crash",
        clock=lambda: now_ms,
    )


if __name__ == "__main__":
    main(int(sys.argv[1]))
