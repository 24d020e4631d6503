"""
### Remote index cache

Keeps the offset, time and transaction indexes of remote segments on local disk, laid out as
Kafka's `RemoteIndexCache` (`remote-log-index-cache/<startOffset>_<segmentId>.*`), so remote
reads find their byte positions without downloading indexes.

* **When:** hourly, and whenever `segment_copy` finishes new remote segments (the
  `tierflow://remote-segments` Asset).
* **warm:** drops entries of segments that are no longer COPY_SEGMENT_FINISHED, loads the
  newest segments of every partition, and re-checks recently read entries (a corrupt or partial
  file is fetched again). The cache never grows past `TIERFLOW_INDEX_CACHE_BYTES`
  (Kafka's `remote.log.index.file.cache.total.size.bytes`, 1 GiB by default).
* **publish_metrics:** copy and delete lag, remote size and segment counts per partition, sent
  through Airflow's metrics (StatsD or OpenTelemetry, as configured).

Both tasks are read-only towards the metadata store and safe to clear at any time.
"""

from __future__ import annotations

from airflow.sdk import task

from tierflow.airflow_dags.defaults import cron_or_new_segments, tierflow_dag

NEWEST_PER_PARTITION = 3


@tierflow_dag(
    schedule=cron_or_new_segments("0 * * * *"),
    tags=["tiered-storage", "index-cache", "metrics"],
    retries=2,
)
def index_cache() -> None:
    @task
    def warm() -> dict:
        from tierflow.config import Settings
        from tierflow.tasks.index_cache import warm_index_cache

        return warm_index_cache(Settings.from_env(), newest_per_partition=NEWEST_PER_PARTITION)

    @task
    def publish_metrics() -> dict:
        from tierflow.config import Settings
        from tierflow.metrics import publish_metrics as publish

        return publish(Settings.from_env())

    warm()
    publish_metrics()


index_cache()
