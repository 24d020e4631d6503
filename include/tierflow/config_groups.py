"""The groups of settings: storage, Spark, diskless topics, the cluster, Airflow.

Each field is one setting, declared once with ``setting``: the TIERFLOW_* variable it is read
from, its meaning (the README's table is generated from these), its default and its rules.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, model_validator
from pydantic_core import PydanticUndefined

from tierflow.config_values import (
    BrokerQueues,
    Brokers,
    Count,
    Flag,
    InvalidSettingError,
    Positive,
    ResolvedPath,
    ResolvedPaths,
    Whole,
    broker_queues_text,
    brokers_text,
    paths_text,
)

# S3 rejects multipart parts below 5 MiB (all but the last): no smaller part size is valid.
MIN_S3_PART_SIZE = 5 * 1024 * 1024
_MiB = 1024 * 1024


def setting(
    name: str, meaning: str, default: Any = PydanticUndefined, *, shown: str = "", **rules: Any
) -> Any:
    """One setting: the variable it is read from, its meaning (the README's), its default and
    the rules its value must keep; ``shown`` is the default as the README prints it."""
    extra = {"shown": shown} if shown else None
    return Field(
        default, validation_alias=name, description=meaning, json_schema_extra=extra, **rules
    )


# Values as a subprocess reads them back: flags lower-case, paths and brokers in their syntax.
EnvFlag = Annotated[Flag, PlainSerializer(lambda b: str(b).lower(), when_used="json")]
EnvPaths = Annotated[ResolvedPaths, PlainSerializer(paths_text, when_used="json")]
EnvBrokers = Annotated[Brokers, PlainSerializer(brokers_text, when_used="json")]
EnvQueues = Annotated[BrokerQueues, PlainSerializer(broker_queues_text, when_used="json")]


class SettingsGroup(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", validate_by_name=True)


class StorageSettings(SettingsGroup):
    """How segments are laid out in the bucket and how the bucket is reached."""

    layout: Literal["chunked", "plain", "kafka-local"] = setting(
        "TIERFLOW_STORAGE_LAYOUT",
        "Aiven's chunked layout, `plain` (one object per file), or `kafka-local` (the same "
        "under the keys of Kafka's `LocalTieredStorage`)",
        "chunked",
    )
    prefix: str = setting("TIERFLOW_STORAGE_PREFIX", "a prefix for every object key", "")
    chunk_size: Positive = setting("TIERFLOW_CHUNK_SIZE", "chunk size in bytes", 4 * _MiB)
    compression: EnvFlag = setting(
        "TIERFLOW_COMPRESSION", "zstd per chunk (skipped when the first batch is compressed)", True
    )
    compression_heuristic: EnvFlag = setting(
        "TIERFLOW_COMPRESSION_HEURISTIC",
        "skip zstd for a segment whose first batch is already compressed",
        True,
    )
    keyring: ResolvedPath | None = setting(
        "TIERFLOW_KEYRING", "a key ring file; set, it turns on AES-256-GCM encryption", None
    )
    aws_conn_id: str = setting(
        "TIERFLOW_AWS_CONN_ID", "the Airflow connection of an `s3://` bucket", "aws_default"
    )
    gcp_conn_id: str = setting(
        "TIERFLOW_GCP_CONN_ID", "the Airflow connection of a `gs://` bucket", "google_cloud_default"
    )
    azure_conn_id: str = setting(
        "TIERFLOW_AZURE_CONN_ID", "the Airflow connection of an `abfs://` container", "wasb_default"
    )
    s3_part_size: Whole = setting(
        "TIERFLOW_S3_PART_SIZE",
        "multipart upload part size (at least 5 MiB); on GCS the resumable upload's chunk size, "
        "rounded down to a multiple of 256 KiB",
        8 * _MiB,
        ge=MIN_S3_PART_SIZE,
    )
    retry_attempts: Positive = setting(
        "TIERFLOW_STORAGE_RETRY_ATTEMPTS", "tries per storage request, the first included", 5
    )
    retry_base_ms: Count = setting(
        "TIERFLOW_STORAGE_RETRY_BASE_MS",
        "backoff before retry *n*: random in [0, min(max, base·2ⁿ⁻¹)]",
        200,
    )
    retry_max_ms: Count = setting(
        "TIERFLOW_STORAGE_RETRY_MAX_MS", "the cap of that backoff (at least the base)", 20_000
    )
    timeout_s: Positive = setting(
        "TIERFLOW_STORAGE_TIMEOUT_S", "connect and read timeout of one storage request", 60
    )

    @model_validator(mode="after")
    def _backoff_in_order(self) -> StorageSettings:
        if self.retry_max_ms < self.retry_base_ms:
            raise InvalidSettingError(
                f"TIERFLOW_STORAGE_RETRY_MAX_MS={self.retry_max_ms}: must be at least "
                f"TIERFLOW_STORAGE_RETRY_BASE_MS={self.retry_base_ms}"
            )
        return self


class SparkSettings(SettingsGroup):
    # Starting Spark costs ~10 s: below this a batch is rewritten in the Airflow worker.
    threshold_bytes: Positive = setting(
        "TIERFLOW_SPARK_THRESHOLD_BYTES", "smaller batches are rewritten in the worker", 64 * _MiB
    )
    # Each such batch runs one process per core; an Airflow worker that runs several tasks at
    # once, or a broker host, may want fewer.
    worker_processes: Count = setting(
        "TIERFLOW_WORKER_PROCESSES",
        "processes for a batch run outside Spark (0: one per core from 32 MiB)",
        0,
    )


class DisklessSettings(SettingsGroup):
    """Diskless topics (KIP-1163): Kafka's diskless.append.* and the WAL objects' clean-up."""

    append_buffer_max_bytes: Positive = setting(
        "TIERFLOW_DISKLESS_APPEND_BUFFER_MAX_BYTES",
        "a writer uploads its WAL object when the buffer holds this much",
        4 * _MiB,
    )
    append_commit_interval_ms: Count = setting(
        "TIERFLOW_DISKLESS_APPEND_COMMIT_INTERVAL_MS",
        "or this long after the buffer's first batch",
        250,
    )
    delete_grace_ms: Count = setting(
        "TIERFLOW_DISKLESS_DELETE_GRACE_MS",
        "a WAL object whose batches are all deleted goes this long after, so that fetches "
        "holding its coordinates finish",
        60_000,
    )
    uncommitted_grace_ms: Count = setting(
        "TIERFLOW_DISKLESS_UNCOMMITTED_GRACE_MS",
        "a WAL object registered but not committed this long after is garbage (longer than an "
        "upload with every storage retry)",
        600_000,
    )


class ClusterSettings(SettingsGroup):
    """The brokers whose log dirs tierflow reads, and the cluster it talks to."""

    brokers: EnvBrokers = setting(
        "TIERFLOW_BROKERS",
        "several brokers: `1=/data/b1/a:/data/b1/b,2=/data/b2/a` (id=log dirs); unset, "
        "`TIERFLOW_LOG_DIRS` is one broker",
        (),
        shown="(none)",
    )
    bootstrap_servers: str | None = setting(
        "TIERFLOW_KAFKA_BOOTSTRAP",
        "`host:port`; set, leaders and topic configs come from the cluster, and deleted topics "
        "are also detected from it",
        None,
    )
    publish_remote_log_metadata: EnvFlag = setting(
        "TIERFLOW_PUBLISH_REMOTE_LOG_METADATA",
        "`true`: every segment and partition-delete transition of the topics tierflow copies "
        "goes to the cluster's `__remote_log_metadata` (`TIERFLOW_KAFKA_BOOTSTRAP`) exactly as a "
        "broker writes it, after each `tierflow copy` and by the `remote_log_metadata` DAG, so "
        "brokers serve what tierflow tiered (see Running beside Kafka)",
        False,
    )

    @model_validator(mode="after")
    def _publish_needs_a_cluster(self) -> ClusterSettings:
        if self.publish_remote_log_metadata and not self.bootstrap_servers:
            raise InvalidSettingError(
                "TIERFLOW_PUBLISH_REMOTE_LOG_METADATA=true needs TIERFLOW_KAFKA_BOOTSTRAP: which "
                "cluster's __remote_log_metadata?"
            )
        return self


class AirflowSettings(SettingsGroup):
    """Read when the DAG files are parsed or a deleting run decides whether it is a dry run."""

    broker_queues: EnvQueues = setting(
        "TIERFLOW_BROKER_QUEUES",
        "`1=kafka-broker-1,2=kafka-broker-2`: each broker's shards run on its Airflow queue; "
        "read when DAG files are parsed",
        (),
        shown="(none)",
    )
    allow_first_run: EnvFlag = setting(
        "TIERFLOW_ALLOW_FIRST_RUN",
        "let a deleting DAG's first scheduled run (no earlier success) delete instead of "
        "dry-running",
        False,
    )
