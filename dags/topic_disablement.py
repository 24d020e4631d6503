"""
### Topic tiering disablement (KIP-950)

Triggered from the UI (**Trigger DAG** shows a form): turn tiered storage off for a topic, or
back on.

* **disable / retain**: copying stops; remote data stays readable and still expires by
  `retention.*`; local retention falls back to `retention.*`. Kafka (3.9) requires
  `local.retention.*` to be -2 or equal to `retention.*` for this, and so do we.
* **disable / delete**: the log start offset moves to the local log start offset (reads below
  it get "offset out of range"), then every remote segment goes DELETE_SEGMENT_STARTED →
  storage delete → DELETE_SEGMENT_FINISHED and its cached indexes are dropped.
* **enable**: tiering resumes from max(highest remote offset + 1, log start offset) with a new
  tiered epoch, recorded on every segment copied from then on.

The topic moves ENABLED → DISABLING → DISABLED. A second request while DISABLING is rejected
with `TIERED_STORAGE_DISABLEMENT_IN_PROGRESS`, unless it repeats the interrupted request's
policy and nothing is still working on the topic: then this run finishes the interrupted one.
Clearing a failed `complete` task finishes it too.

**Dry run** (`dry_run`, on by default, like every trigger of a DAG that deletes): a
**disable / delete** request is only described, not recorded, and nothing changes; switch
`dry_run` off (or `{"dry_run": false}` in the conf) to delete. `retain` and `enable` delete
nothing and ignore it.
"""

from __future__ import annotations

import logging

from airflow.sdk import Param, task

from tierflow.airflow_dags.defaults import tierflow_dag
from tierflow.airflow_dags.task_helpers import (
    choice_param,
    deleting_dry_run_param,
    dry_run,
    fail_for_good,
    run_param,
)

log = logging.getLogger(__name__)
DRY_RUN = "dry run"  # the outcome of a disable/delete request left undone


def _actor() -> str:
    """The task instance, in the form task_instance_of parses: the run is the requester (a
    retry or a clear of the same run is the same request), and the Tiered storage page links
    each event to the task that wrote it. Called inside the tasks only."""
    from tierflow.tasks.attribution import attributed

    return attributed("airflow:topic_disablement")


@tierflow_dag(
    schedule=None,
    tags=["tiered-storage", "kip-950"],
    params={
        "topic": Param(
            "",
            type="string",
            minLength=1,
            title="Topic",
            description="A topic registered with tierflow (tierflow topics list).",
        ),
        "action": choice_param(
            ("disable", "enable"),
            "Action",
            "disable: turn tiered storage off; enable: turn it back on.",
        ),
        "policy": choice_param(
            ("retain", "delete"),
            "Disable policy (remote.log.disable.policy)",
            "retain: keep remote data readable until retention expires it; "
            "delete: delete all remote data now. Ignored for enable.",
        ),
        "dry_run": deleting_dry_run_param(
            "For disable with policy delete: say what would happen; change nothing."
        ),
    },
)
def topic_disablement() -> None:
    @task
    def request() -> dict:
        from tierflow.metadata.errors import MetadataError
        from tierflow.tasks.disablement import apply_request

        topic, action, policy = run_param("topic"), run_param("action"), run_param("policy")
        if action == "disable" and policy == "delete" and dry_run():
            log.warning(
                "dry run: disabling %s with policy delete would delete all its remote data and "
                "move its log start offset to the local log start; nothing changed",
                topic,
            )
            return {"topic": topic, "action": action, "policy": policy, "outcome": DRY_RUN}
        with fail_for_good(MetadataError):  # a rejected request: retrying cannot make it valid
            return apply_request(topic, action, policy, actor=_actor())

    @task
    def complete(outcome: dict) -> dict:
        from tierflow.tasks.disablement import complete_request

        if outcome["action"] != "disable" or outcome["outcome"] == DRY_RUN:
            return outcome
        return complete_request(outcome["topic"], actor=_actor())

    complete(request())


topic_disablement()
