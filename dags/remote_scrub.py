"""
### Remote scrub (hourly)

Re-reads tiered segments from the bucket, up to a budget of bytes per run, so that a damaged
object is found by tierflow rather than by a consumer. Kafka and Aiven's plugin have no
scrubber; Redpanda runs one.

* **scrub:** segments never checked first, newest first, then the one checked longest ago;
  each object's size and sha256, the manifest, every index, and every chunk opened under the
  key ring. The budget is `budget_bytes`, or `TIERFLOW_SCRUB_BUDGET_BYTES` (1 GiB). A finding
  is an event and an open finding in the store, on the Tiered storage page and a metric.
* **repair** (one task per broker queue, on that queue): a damaged segment whose leader still
  holds the same bytes locally is copied again under a new segment id and verified, and only
  then is the damaged one deleted through Kafka's delete states. Segments the brokers own are
  only reported. **Dry run by default** when triggered by hand, and on the first scheduled run.
* **check_findings:** red (without retries) while any finding stays open, for on-call.

**Safe to clear:** a killed scrub resumes where it stopped, and a killed repair is finished by
the next run.
"""

from __future__ import annotations

from airflow.sdk import TriggerRule, task

from tierflow.airflow_dags.defaults import tierflow_dag
from tierflow.airflow_dags.shard_tasks import broker_queues, lane_task_id, lanes
from tierflow.airflow_dags.task_helpers import (
    deleting_dry_run_param,
    dry_run,
    fail_for_good,
    optional_param,
    run_param,
)

SCRUB_POOL = "tierflow_scrub"


# The trigger form: the budget, and the repair's dry run (on by default).
PARAMS = {
    "budget_bytes": optional_param(
        "integer",
        "Budget (bytes)",
        "Bytes of objects to re-read in this run. Empty: TIERFLOW_SCRUB_BUDGET_BYTES "
        "(1 GiB by default).",
        minimum=1,
    ),
    "dry_run": deleting_dry_run_param(
        "Say how each open finding would be repaired; copy and delete nothing."
    ),
}


@tierflow_dag(
    schedule="20 * * * *",
    tags=["tiered-storage", "scrub"],
    params=PARAMS,
)
def remote_scrub() -> None:
    queues = broker_queues()

    @task(pool=SCRUB_POOL)
    def scrub() -> dict:
        from tierflow.tasks.scrub import scrub_bucket

        return scrub_bucket(run_param("budget_bytes"))

    @task(pool=SCRUB_POOL)
    def repair(lane: str) -> list[dict]:
        from tierflow.tasks.scrub import repair_lane

        return repair_lane(lane, queues, dry_run=dry_run())

    @task(trigger_rule=TriggerRule.ALL_DONE)
    def check_findings() -> int:
        from tierflow.tasks.scrub import OpenFindingsError
        from tierflow.tasks.scrub import check_findings as still_open

        with fail_for_good(OpenFindingsError):  # a retry cannot repair them
            return still_open()

    checked = scrub()
    repairs = [
        repair.override(task_id=lane_task_id("repair", lane), queue=lane)(lane)
        for lane in lanes(queues)
    ]
    checked >> repairs >> check_findings()


remote_scrub()
