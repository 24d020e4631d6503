"""
### Remote log metadata

tierflow and the brokers' `__remote_log_metadata` topic (KIP-405's topic-based metadata).

* **When:** every five minutes, and whenever `segment_copy` finishes new remote segments (the
  `tierflow://remote-segments` Asset).
* **publish:** with `TIERFLOW_PUBLISH_REMOTE_LOG_METADATA=true`, every segment and
  partition-delete transition of the topics tierflow copies goes to the topic as a broker
  writes it, exactly once and in order per partition (an outbox in the store and an
  idempotent producer), so brokers can serve what tierflow tiered (a hand-over).
* **follow:** for topics the brokers copy (handed over, or followed), every segment and state
  they publish is mirrored into the store, marked as theirs, so restore, export, verify,
  reconcile and the Tiered storage page work on them. tierflow never copies or deletes them.

Both tasks resume where a killed or cleared run stopped; a rerun publishes nothing twice.
"""

from __future__ import annotations

from airflow.sdk import task

from tierflow.airflow_dags.defaults import cron_or_new_segments, tierflow_dag


@tierflow_dag(
    schedule=cron_or_new_segments("*/5 * * * *"),
    tags=["tiered-storage", "remote-log-metadata"],
    retries=3,
)
def remote_log_metadata() -> None:
    @task
    def publish() -> dict:
        from tierflow.config import Settings
        from tierflow.tasks.remote_log_metadata import publish_transitions

        return publish_transitions(Settings.from_env())

    @task
    def follow() -> dict:
        from tierflow.config import Settings
        from tierflow.tasks.remote_log_metadata import follow_brokers

        return follow_brokers(Settings.from_env())

    publish() >> follow()


remote_log_metadata()
