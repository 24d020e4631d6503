"""Run one retention step in this process, for the crash tests (TIERFLOW_CRASH_AT kills it).

python -m tests.retention.crash_worker local|remote TOPIC PARTITION NOW_MS
"""

from __future__ import annotations

import sys

from tierflow.cluster.leaders import leader_log
from tierflow.config import Settings
from tierflow.lifecycle.retention.local import execute_local_retention, plan_local_retention
from tierflow.lifecycle.retention.remote import execute_remote_retention, plan_partition_retention
from tierflow.runtime import open_storage, open_store


def main(kind: str, topic_name: str, partition: int, now_ms: int) -> None:
    settings = Settings.from_env()
    store = open_store(settings)
    log_ = leader_log(settings, topic_name, partition).log
    topic = store.topic(topic_name)
    clock = lambda: now_ms  # noqa: E731
    if kind == "local":
        plan = plan_local_retention(log_, store, topic, now_ms=now_ms)
        execute_local_retention(plan, log_, store, delete_files=True, actor="crash", clock=clock)
    else:
        state = store.partition(topic.topic_id, partition)
        assert state is not None
        remote = plan_partition_retention(store, topic, state, now_ms=now_ms, log_=log_)
        execute_remote_retention(remote, store, open_storage(settings), actor="crash", clock=clock)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
