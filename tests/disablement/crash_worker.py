"""Complete one topic's disablement in this process, for the crash tests.

python -m tests.disablement.crash_worker TOPIC NOW_MS   (TIERFLOW_CRASH_AT kills it)
"""

from __future__ import annotations

import sys

from tierflow.config import Settings
from tierflow.lifecycle.disablement import complete_disable
from tierflow.runtime import open_storage, open_store

ACTOR = "airflow:disablement"


def main(topic_name: str, now_ms: int) -> None:
    settings = Settings.from_env()
    store = open_store(settings)
    complete_disable(store, open_storage(settings), topic_name, actor=ACTOR, clock=lambda: now_ms)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
