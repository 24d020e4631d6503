"""Where tierflow finds its log directories, metadata store and bucket.

Everything comes from environment variables so that the same code runs from the CLI, from an
Airflow worker and from a Spark driver. The defaults are the embedded ones: a SQLite file, a
local directory standing in for the bucket, and the demo log directory, all under the data dir.

Settings never hold credentials: an S3 bucket (``s3://bucket/prefix``) is reached through an
Airflow connection, named here by its id only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BeforeValidator, Field, ValidationError, model_validator
from pydantic_core import ErrorDetails
from pydantic_settings import BaseSettings, EnvSettingsSource, SettingsConfigDict
from pydantic_settings.sources.utils import parse_env_vars

# Every setting is TIERFLOW_<its field name, upper-cased>: _Environment reads them by that rule.
ENV_PREFIX = "TIERFLOW_"
ENV_DATA_DIR = "TIERFLOW_DATA_DIR"
ENV_DB_URL = "TIERFLOW_DB_URL"
ENV_REMOTE_STORAGE = "TIERFLOW_REMOTE_STORAGE"
ENV_LOG_DIRS = "TIERFLOW_LOG_DIRS"
# id=dir:dir,id=dir: several brokers, each with its own log.dirs (tierflow.cluster).
ENV_BROKERS = "TIERFLOW_BROKERS"
ENV_LEASE_TTL_S = "TIERFLOW_COPY_LEASE_TTL_S"
ENV_STORAGE_LAYOUT = "TIERFLOW_STORAGE_LAYOUT"
ENV_STORAGE_PREFIX = "TIERFLOW_STORAGE_PREFIX"
ENV_CHUNK_SIZE = "TIERFLOW_CHUNK_SIZE"
ENV_COMPRESSION = "TIERFLOW_COMPRESSION"
ENV_COMPRESSION_HEURISTIC = "TIERFLOW_COMPRESSION_HEURISTIC"
ENV_KEYRING = "TIERFLOW_KEYRING"
ENV_SPARK_THRESHOLD_BYTES = "TIERFLOW_SPARK_THRESHOLD_BYTES"
# KIP-956's remote.log.manager.copy.max.bytes.per.second: unset, a copy reads at disk speed.
ENV_COPY_MAX_BYTES_PER_SECOND = "TIERFLOW_COPY_MAX_BYTES_PER_SECOND"
ENV_CHUNK_CACHE_BYTES = "TIERFLOW_CHUNK_CACHE_BYTES"
ENV_CHUNK_CACHE_DIR = "TIERFLOW_CHUNK_CACHE_DIR"
ENV_CHUNK_CACHE_DISK_BYTES = "TIERFLOW_CHUNK_CACHE_DISK_BYTES"
ENV_CHUNK_PREFETCH = "TIERFLOW_CHUNK_PREFETCH"
ENV_DELETE_LOCAL_SEGMENTS = "TIERFLOW_DELETE_LOCAL_SEGMENTS"
ENV_INDEX_CACHE_DIR = "TIERFLOW_INDEX_CACHE_DIR"
ENV_INDEX_CACHE_BYTES = "TIERFLOW_INDEX_CACHE_BYTES"
ENV_STALE_COPY_GRACE_S = "TIERFLOW_STALE_COPY_GRACE_S"
ENV_RECONCILE_GRACE_S = "TIERFLOW_RECONCILE_GRACE_S"
ENV_REMOVAL_GRACE_S = "TIERFLOW_REMOVAL_GRACE_S"
ENV_KAFKA_BOOTSTRAP = "TIERFLOW_KAFKA_BOOTSTRAP"
# On: every transition of a topic tierflow copies is published to __remote_log_metadata.
ENV_PUBLISH_REMOTE_LOG_METADATA = "TIERFLOW_PUBLISH_REMOTE_LOG_METADATA"
ENV_MAX_SHARDS = "TIERFLOW_MAX_SHARDS"
ENV_AWS_CONN_ID = "TIERFLOW_AWS_CONN_ID"
ENV_AZURE_CONN_ID = "TIERFLOW_AZURE_CONN_ID"
ENV_GCP_CONN_ID = "TIERFLOW_GCP_CONN_ID"
ENV_ICEBERG_CATALOG = "TIERFLOW_ICEBERG_CATALOG"
ENV_S3_PART_SIZE = "TIERFLOW_S3_PART_SIZE"
ENV_STORAGE_RETRY_ATTEMPTS = "TIERFLOW_STORAGE_RETRY_ATTEMPTS"
ENV_STORAGE_RETRY_BASE_MS = "TIERFLOW_STORAGE_RETRY_BASE_MS"
ENV_STORAGE_RETRY_MAX_MS = "TIERFLOW_STORAGE_RETRY_MAX_MS"
ENV_STORAGE_TIMEOUT_S = "TIERFLOW_STORAGE_TIMEOUT_S"

DEFAULT_LEASE_TTL_S = 900
DEFAULT_CHUNK_SIZE = 4 * 1024 * 1024
# Batches smaller than this are rewritten in the Airflow worker: starting Spark costs ~10 s.
DEFAULT_SPARK_THRESHOLD_BYTES = 64 * 1024 * 1024
# Decoded chunks kept in memory for reads: a fetch that extends its window never decrypts twice.
DEFAULT_CHUNK_CACHE_BYTES = 64 * 1024 * 1024
# Kafka's remote.log.index.file.cache.total.size.bytes.
DEFAULT_INDEX_CACHE_BYTES = 1024 * 1024 * 1024
# A COPY_SEGMENT_STARTED row older than this, with no live copy lease, is an orphan to delete.
DEFAULT_STALE_COPY_GRACE_S = 3600
# Task instances a lifecycle run maps over, whatever the partition count (see tasks/shards.py).
DEFAULT_MAX_SHARDS = 16
# Reconcile deletes an object no metadata names only once it is older than this: an upload in
# flight has its row written first, but clocks and listings lag.
DEFAULT_RECONCILE_GRACE_S = 24 * 3600
DEFAULT_AWS_CONN_ID = "aws_default"
DEFAULT_AZURE_CONN_ID = "wasb_default"
DEFAULT_GCP_CONN_ID = "google_cloud_default"
# Objects larger than one part go up as multipart uploads. S3 rejects parts below 5 MiB (all
# but the last), so that is the smallest part size there is.
DEFAULT_S3_PART_SIZE = 8 * 1024 * 1024
MIN_S3_PART_SIZE = 5 * 1024 * 1024
# Each storage request is tried this often in all, sleeping a random time up to base * 2**n
# (capped at max) between tries; see storage.retry.
DEFAULT_STORAGE_RETRY_ATTEMPTS = 5
DEFAULT_STORAGE_RETRY_BASE_MS = 200
DEFAULT_STORAGE_RETRY_MAX_MS = 20_000
# Connect and read timeout of one S3 request: a hung request becomes a retry.
DEFAULT_STORAGE_TIMEOUT_S = 60


class InvalidSettingError(ValueError):
    pass


@dataclass(frozen=True)
class BrokerSpec:
    """One broker of TIERFLOW_BROKERS: its id (Kafka's node.id / broker.id) and its log.dirs."""

    broker_id: int
    log_dirs: tuple[Path, ...]


_MAX_BROKER_ID = 2**31 - 1  # node.id is an int32


def parse_brokers(raw: str) -> tuple[BrokerSpec, ...]:
    """``1=/a:/b,2=/c`` -> one BrokerSpec per broker; a bad entry is named in the error."""
    brokers: list[BrokerSpec] = []
    owner: dict[Path, int] = {}
    for entry in raw.split(","):
        spec = _broker_entry(entry.strip())
        if any(b.broker_id == spec.broker_id for b in brokers):
            raise InvalidSettingError(f"{ENV_BROKERS}: broker {spec.broker_id} is given twice")
        for path in spec.log_dirs:
            if path in owner:
                raise InvalidSettingError(
                    f"{ENV_BROKERS}: log dir {path} is given for brokers {owner[path]} "
                    f"and {spec.broker_id}"
                )
            owner[path] = spec.broker_id
        brokers.append(spec)
    return tuple(brokers)


def _broker_entry(entry: str) -> BrokerSpec:
    broker, sep, dirs = entry.partition("=")
    expected = f"expected <broker id>=<log dir>[{os.pathsep}<log dir>...]"
    if not sep:
        raise InvalidSettingError(f"{ENV_BROKERS} entry {entry!r}: {expected}")
    try:
        broker_id = int(broker.strip())
    except ValueError:
        raise InvalidSettingError(
            f"{ENV_BROKERS} entry {entry!r}: broker id {broker.strip()!r} is not a whole number"
        ) from None
    if not 0 <= broker_id <= _MAX_BROKER_ID:
        raise InvalidSettingError(
            f"{ENV_BROKERS} entry {entry!r}: broker id must be 0 to {_MAX_BROKER_ID}"
        )
    paths = tuple(Path(p.strip()).resolve() for p in dirs.split(os.pathsep) if p.strip())
    if not paths:
        raise InvalidSettingError(f"{ENV_BROKERS} entry {entry!r}: no log dir; {expected}")
    return BrokerSpec(broker_id, paths)


def brokers_env(brokers: tuple[BrokerSpec, ...]) -> str:
    """The TIERFLOW_BROKERS text of ``brokers``; parse_brokers reads it back."""
    return ",".join(f"{b.broker_id}={os.pathsep.join(str(p) for p in b.log_dirs)}" for b in brokers)


def project_root() -> Path | None:
    """The checkout this package runs from, if it is one (an editable install)."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "dags").is_dir() and (root / "include").is_dir() else None


def default_data_dir() -> Path:
    root = project_root()
    return root / "data" if root else Path.home() / ".tierflow"


# -- Diskless topics (KIP-1163), tierflow.diskless ------------------------------------------
# Kafka's diskless.append.buffer.max.bytes and diskless.append.commit.interval.ms: a WAL object
# is uploaded when its buffer holds this much, or this long after its first batch arrived.
ENV_DISKLESS_BUFFER_MAX_BYTES = "TIERFLOW_DISKLESS_APPEND_BUFFER_MAX_BYTES"
ENV_DISKLESS_COMMIT_INTERVAL_MS = "TIERFLOW_DISKLESS_APPEND_COMMIT_INTERVAL_MS"
# A WAL object whose batches are all deleted is removed this long after, so that fetches
# that already hold its coordinates finish.
ENV_DISKLESS_DELETE_GRACE_MS = "TIERFLOW_DISKLESS_DELETE_GRACE_MS"
# An object registered for upload but not committed this long after is garbage. Longer than
# an upload can take with every storage retry (TIERFLOW_STORAGE_TIMEOUT_S x attempts).
ENV_DISKLESS_UNCOMMITTED_GRACE_MS = "TIERFLOW_DISKLESS_UNCOMMITTED_GRACE_MS"
DEFAULT_DISKLESS_BUFFER_MAX_BYTES = 4 * 1024 * 1024
DEFAULT_DISKLESS_COMMIT_INTERVAL_MS = 250
DEFAULT_DISKLESS_DELETE_GRACE_MS = 60_000
DEFAULT_DISKLESS_UNCOMMITTED_GRACE_MS = 10 * 60_000


@dataclass(frozen=True)
class DisklessSettings:
    append_buffer_max_bytes: int = DEFAULT_DISKLESS_BUFFER_MAX_BYTES
    append_commit_interval_ms: int = DEFAULT_DISKLESS_COMMIT_INTERVAL_MS
    delete_grace_ms: int = DEFAULT_DISKLESS_DELETE_GRACE_MS
    uncommitted_grace_ms: int = DEFAULT_DISKLESS_UNCOMMITTED_GRACE_MS

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> DisklessSettings:
        """The TIERFLOW_DISKLESS_* part of Settings.from_env (which checks every variable)."""
        return Settings.from_env(env).diskless

    def as_env(self) -> dict[str, str]:
        return {
            ENV_DISKLESS_BUFFER_MAX_BYTES: str(self.append_buffer_max_bytes),
            ENV_DISKLESS_COMMIT_INTERVAL_MS: str(self.append_commit_interval_ms),
            ENV_DISKLESS_DELETE_GRACE_MS: str(self.delete_grace_ms),
            ENV_DISKLESS_UNCOMMITTED_GRACE_MS: str(self.uncommitted_grace_ms),
        }


@dataclass(frozen=True)
class Settings:
    data_dir: Path
    db_url: str = field(repr=False)  # may hold the store's password: never printed
    remote_storage: str
    log_dirs: tuple[Path, ...]
    copy_lease_ttl_s: int = DEFAULT_LEASE_TTL_S
    # "chunked": Aiven's layout (chunked, optionally compressed and encrypted); "plain": one
    # untransformed object per segment file; "kafka-local": the same under the keys of Kafka's
    # LocalTieredStorage (a local bucket is a broker's rsm.config.dir).
    storage_layout: str = "chunked"
    storage_prefix: str = ""
    chunk_size: int = DEFAULT_CHUNK_SIZE
    compression: bool = True
    compression_heuristic: bool = True
    keyring: Path | None = None  # a key ring file turns encryption on
    spark_threshold_bytes: int = DEFAULT_SPARK_THRESHOLD_BYTES
    copy_max_bytes_per_second: int | None = None  # per broker, over every reading process
    chunk_cache_bytes: int = DEFAULT_CHUNK_CACHE_BYTES
    chunk_cache_dir: Path | None = None  # set, decoded chunks also spill to disk
    chunk_cache_disk_bytes: int = 0
    chunk_prefetch: int = 0  # following chunks to read ahead on a miss
    # Local retention deletes files from the broker's log dirs only when this is on.
    delete_local_segments: bool = False
    index_cache_dir: Path | None = None  # None: <data_dir>, holding remote-log-index-cache/
    index_cache_bytes: int = DEFAULT_INDEX_CACHE_BYTES
    stale_copy_grace_s: int = DEFAULT_STALE_COPY_GRACE_S
    reconcile_grace_s: int = DEFAULT_RECONCILE_GRACE_S
    # A deleted topic's partitions wait this long after being marked before removal starts,
    # so that a topic deleted by mistake can still be restored from the bucket.
    removal_grace_s: int = 0
    # host:port[,host:port]; set, deleted topics are also detected from the cluster metadata.
    kafka_bootstrap: str | None = None
    # Set, tierflow's transitions go to the cluster's __remote_log_metadata as a broker's
    # would (after each copy, and by the remote_log_metadata DAG), so brokers can serve them.
    publish_remote_log_metadata: bool = False
    max_shards: int = DEFAULT_MAX_SHARDS
    # The Airflow connection of an s3:// bucket: credentials, region, and an endpoint_url in
    # its extras for S3-compatible stores. Only the id is a setting.
    aws_conn_id: str = DEFAULT_AWS_CONN_ID
    # The Airflow connection of an abfs:// (or wasb://) container.
    azure_conn_id: str = DEFAULT_AZURE_CONN_ID
    # The Airflow connection of a gs:// bucket (the Google provider's GCSHook).
    gcp_conn_id: str = DEFAULT_GCP_CONN_ID
    s3_part_size: int = DEFAULT_S3_PART_SIZE
    # The Airflow Iceberg provider's connection of the catalog the Iceberg export commits to
    # (a REST catalog); None: a SQL catalog in the metadata store's database.
    iceberg_catalog: str | None = None
    storage_retry_attempts: int = DEFAULT_STORAGE_RETRY_ATTEMPTS
    storage_retry_base_ms: int = DEFAULT_STORAGE_RETRY_BASE_MS
    storage_retry_max_ms: int = DEFAULT_STORAGE_RETRY_MAX_MS
    storage_timeout_s: int = DEFAULT_STORAGE_TIMEOUT_S
    diskless: DisklessSettings = DisklessSettings()  # TIERFLOW_DISKLESS_*
    # TIERFLOW_BROKERS; empty: one broker over log_dirs (its id from meta.properties). Set,
    # log_dirs holds every broker's dirs.
    brokers: tuple[BrokerSpec, ...] = ()

    @property
    def index_cache_root(self) -> Path:
        return self.index_cache_dir or self.data_dir

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """The settings of ``env`` (os.environ when None); a bad value is an InvalidSettingError."""
        source = _Variables(os.environ if env is None else env)
        try:
            variables = _Environment(_build_sources=((source,), {}))
        except ValidationError as error:
            raise _invalid(error, source.env_vars) from None
        return variables.settings()

    @classmethod
    def embedded(cls, base: Path, **overrides: object) -> Settings:
        """The embedded defaults, all under one directory: SQLite, a local bucket, one log dir."""
        base = Path(base).resolve()
        settings = cls(
            data_dir=base,
            db_url=f"sqlite:///{base / 'tierflow.db'}",
            remote_storage=str(base / "bucket"),
            log_dirs=(base / "kafka-logs",),
        )
        brokers = overrides.get("brokers")
        if isinstance(brokers, tuple) and brokers and "log_dirs" not in overrides:
            # As from_env: with brokers, log_dirs are all of their dirs.
            overrides["log_dirs"] = tuple(p for b in brokers for p in b.log_dirs)
        return replace(settings, **overrides)

    def as_env(self) -> dict[str, str]:
        """The same settings as environment variables, for a subprocess (no credentials)."""
        return {
            ENV_DATA_DIR: str(self.data_dir),
            ENV_DB_URL: self.db_url,
            ENV_REMOTE_STORAGE: self.remote_storage,
            ENV_LOG_DIRS: os.pathsep.join(str(p) for p in self.log_dirs),
            ENV_LEASE_TTL_S: str(self.copy_lease_ttl_s),
            ENV_STORAGE_LAYOUT: self.storage_layout,
            ENV_STORAGE_PREFIX: self.storage_prefix,
            ENV_CHUNK_SIZE: str(self.chunk_size),
            ENV_COMPRESSION: str(self.compression).lower(),
            ENV_COMPRESSION_HEURISTIC: str(self.compression_heuristic).lower(),
            ENV_KEYRING: str(self.keyring or ""),
            ENV_SPARK_THRESHOLD_BYTES: str(self.spark_threshold_bytes),
            ENV_COPY_MAX_BYTES_PER_SECOND: str(self.copy_max_bytes_per_second or ""),
            ENV_CHUNK_CACHE_BYTES: str(self.chunk_cache_bytes),
            ENV_CHUNK_CACHE_DIR: str(self.chunk_cache_dir or ""),
            ENV_CHUNK_CACHE_DISK_BYTES: str(self.chunk_cache_disk_bytes),
            ENV_CHUNK_PREFETCH: str(self.chunk_prefetch),
            ENV_DELETE_LOCAL_SEGMENTS: str(self.delete_local_segments).lower(),
            ENV_INDEX_CACHE_DIR: str(self.index_cache_dir or ""),
            ENV_INDEX_CACHE_BYTES: str(self.index_cache_bytes),
            ENV_STALE_COPY_GRACE_S: str(self.stale_copy_grace_s),
            ENV_RECONCILE_GRACE_S: str(self.reconcile_grace_s),
            ENV_REMOVAL_GRACE_S: str(self.removal_grace_s),
            ENV_KAFKA_BOOTSTRAP: self.kafka_bootstrap or "",
            ENV_PUBLISH_REMOTE_LOG_METADATA: str(self.publish_remote_log_metadata).lower(),
            ENV_MAX_SHARDS: str(self.max_shards),
            ENV_AWS_CONN_ID: self.aws_conn_id,
            ENV_AZURE_CONN_ID: self.azure_conn_id,
            ENV_GCP_CONN_ID: self.gcp_conn_id,
            ENV_S3_PART_SIZE: str(self.s3_part_size),
            ENV_ICEBERG_CATALOG: self.iceberg_catalog or "",
            ENV_STORAGE_RETRY_ATTEMPTS: str(self.storage_retry_attempts),
            ENV_STORAGE_RETRY_BASE_MS: str(self.storage_retry_base_ms),
            ENV_STORAGE_RETRY_MAX_MS: str(self.storage_retry_max_ms),
            ENV_STORAGE_TIMEOUT_S: str(self.storage_timeout_s),
            **self.diskless.as_env(),
            ENV_BROKERS: brokers_env(self.brokers),
        }


# -- Reading the environment -----------------------------------------------------------------


def _flag(raw: object) -> object:
    """The spellings of a boolean variable: exactly these, not all that pydantic would take."""
    if isinstance(raw, str):
        if raw.lower() in ("true", "1", "yes", "on"):
            return True
        if raw.lower() in ("false", "0", "no", "off"):
            return False
        raise ValueError("expected true or false")
    return raw


def _whole(raw: object) -> object:
    """A whole number as int() reads it: "1.0" is not one, though pydantic would take it."""
    if isinstance(raw, str):
        try:
            return int(raw)
        except ValueError:
            raise ValueError("expected a whole number") from None
    return raw


def _brokers(raw: object) -> object:
    return parse_brokers(raw) if isinstance(raw, str) else raw


_Flag = Annotated[bool, BeforeValidator(_flag)]
_Whole = Annotated[int, BeforeValidator(_whole)]
_Count = Annotated[_Whole, Field(ge=0)]
_Positive = Annotated[_Whole, Field(ge=1)]
# Paths are resolved against the working directory of whoever reads the variable.
_ResolvedPath = Annotated[Path, AfterValidator(Path.resolve)]


class _Environment(BaseSettings):
    """The TIERFLOW_* variables, typed and checked: one field per Settings field, same name.

    A variable unset or empty is the default. Paths and URLs left unset (None) default to the
    embedded ones under the data dir, as Settings.embedded lays them out.
    """

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_ignore_empty=True,
        enable_decoding=False,
        frozen=True,
        # Built on the first from_env, not on import: modules that only import config stay cheap.
        defer_build=True,
    )

    data_dir: _ResolvedPath | None = None
    db_url: str | None = None
    remote_storage: str | None = None
    # Kept as given: it is checked against TIERFLOW_BROKERS and named as given when it differs.
    log_dirs: str = ""
    brokers: Annotated[tuple[BrokerSpec, ...], BeforeValidator(_brokers)] = ()
    copy_lease_ttl_s: _Positive = DEFAULT_LEASE_TTL_S
    storage_layout: Literal["chunked", "plain", "kafka-local"] = "chunked"
    storage_prefix: str = ""
    chunk_size: _Positive = DEFAULT_CHUNK_SIZE
    compression: _Flag = True
    compression_heuristic: _Flag = True
    keyring: _ResolvedPath | None = None
    spark_threshold_bytes: _Positive = DEFAULT_SPARK_THRESHOLD_BYTES
    copy_max_bytes_per_second: _Positive | None = None
    chunk_cache_bytes: _Count = DEFAULT_CHUNK_CACHE_BYTES
    chunk_cache_dir: _ResolvedPath | None = None
    chunk_cache_disk_bytes: _Count = 0
    chunk_prefetch: _Count = 0
    delete_local_segments: _Flag = False
    index_cache_dir: _ResolvedPath | None = None
    index_cache_bytes: _Positive = DEFAULT_INDEX_CACHE_BYTES
    stale_copy_grace_s: _Count = DEFAULT_STALE_COPY_GRACE_S
    reconcile_grace_s: _Count = DEFAULT_RECONCILE_GRACE_S
    removal_grace_s: _Count = 0
    kafka_bootstrap: str | None = None
    publish_remote_log_metadata: _Flag = False
    max_shards: _Positive = DEFAULT_MAX_SHARDS
    aws_conn_id: str = DEFAULT_AWS_CONN_ID
    azure_conn_id: str = DEFAULT_AZURE_CONN_ID
    gcp_conn_id: str = DEFAULT_GCP_CONN_ID
    s3_part_size: Annotated[_Whole, Field(ge=MIN_S3_PART_SIZE)] = DEFAULT_S3_PART_SIZE
    iceberg_catalog: str | None = None
    storage_retry_attempts: _Positive = DEFAULT_STORAGE_RETRY_ATTEMPTS
    storage_retry_base_ms: _Count = DEFAULT_STORAGE_RETRY_BASE_MS
    storage_retry_max_ms: _Count = DEFAULT_STORAGE_RETRY_MAX_MS
    storage_timeout_s: _Positive = DEFAULT_STORAGE_TIMEOUT_S
    # DisklessSettings, each field prefixed with diskless_.
    diskless_append_buffer_max_bytes: _Positive = DEFAULT_DISKLESS_BUFFER_MAX_BYTES
    diskless_append_commit_interval_ms: _Count = DEFAULT_DISKLESS_COMMIT_INTERVAL_MS
    diskless_delete_grace_ms: _Count = DEFAULT_DISKLESS_DELETE_GRACE_MS
    diskless_uncommitted_grace_ms: _Count = DEFAULT_DISKLESS_UNCOMMITTED_GRACE_MS

    def given_log_dirs(self) -> tuple[Path, ...]:
        return tuple(Path(p).resolve() for p in self.log_dirs.split(os.pathsep) if p)

    @model_validator(mode="after")
    def _check_pairs(self) -> _Environment:
        """The checks that take two variables; their errors name both."""
        if self.publish_remote_log_metadata and not self.kafka_bootstrap:
            raise InvalidSettingError(
                f"{ENV_PUBLISH_REMOTE_LOG_METADATA}=true needs {ENV_KAFKA_BOOTSTRAP}: which "
                "cluster's __remote_log_metadata?"
            )
        if self.storage_retry_max_ms < self.storage_retry_base_ms:
            raise InvalidSettingError(
                f"{ENV_STORAGE_RETRY_MAX_MS}={self.storage_retry_max_ms}: must be at least "
                f"{ENV_STORAGE_RETRY_BASE_MS}={self.storage_retry_base_ms}"
            )
        every = {path for broker in self.brokers for path in broker.log_dirs}
        given = self.given_log_dirs()
        if self.brokers and given and set(given) != every:
            raise InvalidSettingError(
                f"{ENV_LOG_DIRS}={self.log_dirs!r}: must list the same dirs as {ENV_BROKERS}, "
                "or be unset"
            )
        return self

    def settings(self) -> Settings:
        """These values as Settings; with TIERFLOW_BROKERS, log_dirs are all of their dirs."""
        values = dict(self)
        data_dir = values.pop("data_dir") or default_data_dir().resolve()
        # With brokers, embedded takes all of their dirs (any given are the same, checked above).
        values["log_dirs"] = () if self.brokers else self.given_log_dirs()
        names = [name for name in values if name.startswith("diskless_")]
        values["diskless"] = DisklessSettings(
            **{name.removeprefix("diskless_"): values.pop(name) for name in names}
        )
        # None or no dirs: unset, so the embedded default under data_dir.
        given = {name: value for name, value in values.items() if value not in (None, ())}
        return Settings.embedded(data_dir, **given)


class _Variables(EnvSettingsSource):
    """The TIERFLOW_* variables of one mapping: os.environ, or a subprocess's or a test's."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._env = env
        super().__init__(_Environment)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        # The hook pydantic-settings' own dotenv source overrides; os.environ is read here. It
        # matches names case-insensitively: only TIERFLOW_* as spelled reaches it.
        ours = {name: value for name, value in self._env.items() if name.startswith(ENV_PREFIX)}
        return parse_env_vars(
            ours, self.case_sensitive, self.env_ignore_empty, self.env_parse_none_str
        )


def _invalid(error: ValidationError, given: Mapping[str, str | None]) -> InvalidSettingError:
    """pydantic's first error as one line naming the variable, its text as given, what was wrong.

    ``given`` is the source's view of the variables (names lower-cased, as it matches them).
    """
    first = error.errors()[0]
    cause = first.get("ctx", {}).get("error")
    if isinstance(cause, InvalidSettingError):
        return cause  # already names its variable: a broker entry, or two variables
    name = ENV_PREFIX + str(first["loc"][0]).upper()
    raw = given.get(name.lower(), first["input"])
    return InvalidSettingError(f"{name}={raw!r}: {_reason(first)}")


def _reason(error: ErrorDetails) -> str:
    ctx = error.get("ctx", {})
    kind = error["type"]
    if kind == "value_error":
        return str(ctx["error"])
    if kind == "greater_than_equal":
        return f"must be at least {ctx['ge']}"
    if kind == "literal_error":
        return "expected " + ctx["expected"].replace("'", "")
    return error["msg"]
