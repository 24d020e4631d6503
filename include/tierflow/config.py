"""Where tierflow finds its log directories, metadata store and bucket, and how it works.

Everything comes from TIERFLOW_* environment variables so that the same code runs from the
CLI, from an Airflow worker and from a Spark driver. Each setting is declared once, below: its
variable, default, validation and meaning. Reading the environment, ``as_env`` for a
subprocess, and the README's table are all derived from those declarations.

The defaults are the embedded ones: a SQLite file, a local directory standing in for the
bucket, and the demo log directory, all under the data dir. Settings never hold credentials:
a bucket is reached through an Airflow connection, named here by its id only.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from pydantic import Field, ValidationError, ValidationInfo, field_validator
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails
from pydantic_settings import BaseSettings, SettingsConfigDict

from tierflow.config_groups import (
    MIN_S3_PART_SIZE,
    AirflowSettings,
    ClusterSettings,
    DisklessSettings,
    EnvFlag,
    EnvPaths,
    SettingsGroup,
    SparkSettings,
    StorageSettings,
    setting,
)
from tierflow.config_values import (
    VARIABLE_PREFIX,
    BrokerSpec,
    Count,
    InvalidSettingError,
    Positive,
    ResolvedPath,
    parse_brokers,
    paths_text,
)

__all__ = [
    "MIN_S3_PART_SIZE",
    "BrokerSpec",
    "DisklessSettings",
    "InvalidSettingError",
    "Settings",
    "default",
    "parse_brokers",
    "reads_settings",
    "variable",
]
_MiB = 1024 * 1024


def default_data_dir() -> Path:
    root = project_root()
    return root / "data" if root else Path.home() / ".tierflow"


def project_root() -> Path | None:
    """The checkout this package runs from, if it is one (an editable install)."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "dags").is_dir() and (root / "include").is_dir() else None


def _under_data(name: str) -> Callable[[dict[str, Any]], str]:
    return lambda values: str(values["data_dir"] / name)


def _every_log_dir(values: dict[str, Any]) -> tuple[Path, ...]:
    """With TIERFLOW_BROKERS, log_dirs are all of their dirs; else the embedded one."""
    cluster = values.get("cluster")
    if cluster is not None and cluster.brokers:
        return tuple(path for broker in cluster.brokers for path in broker.log_dirs)
    return (values["data_dir"] / "kafka-logs",)


class Settings(BaseSettings):
    """Every setting, frozen. Build it with from_env, or embedded (tests, demos)."""

    model_config = SettingsConfigDict(
        frozen=True,
        extra="forbid",
        validate_by_name=True,
        # Built on the first from_env, not on import: modules that only import config stay cheap.
        defer_build=True,
    )

    data_dir: ResolvedPath = setting(
        "TIERFLOW_DATA_DIR",
        "where the embedded defaults live",
        default_factory=lambda: default_data_dir().resolve(),
        shown="`<checkout>/data`",
    )
    db_url: str = setting(  # may hold the store's password: never printed
        "TIERFLOW_DB_URL",
        "the metadata store; any SQLAlchemy URL",
        default_factory=lambda values: f"sqlite:///{values['data_dir'] / 'tierflow.db'}",
        shown="`sqlite:///<data>/tierflow.db`",
        repr=False,
    )
    remote_storage: str = setting(
        "TIERFLOW_REMOTE_STORAGE",
        "the bucket: a directory, `s3://bucket[/prefix]`, `gs://bucket[/prefix]`, or "
        "`abfs://container@account[/prefix]` (also `wasb://`)",
        default_factory=_under_data("bucket"),
        shown="`<data>/bucket`",
    )
    storage: StorageSettings = Field(default_factory=StorageSettings)
    iceberg_catalog: str | None = setting(
        "TIERFLOW_ICEBERG_CATALOG",
        "the Iceberg export's catalog: an Airflow connection of the Iceberg provider (a REST "
        "catalog); unset, a SQL catalog in the metadata store's database",
        None,
    )
    cluster: ClusterSettings = Field(default_factory=ClusterSettings)
    log_dirs: EnvPaths = setting(
        "TIERFLOW_LOG_DIRS",
        "the broker's log directories (`:`-separated); with `TIERFLOW_BROKERS`, unset or the "
        "same dirs",
        default_factory=_every_log_dir,
        shown="`<data>/kafka-logs`",
    )
    max_shards: Positive = setting(
        "TIERFLOW_MAX_SHARDS", "shards a lifecycle run maps over, whatever the partition count", 16
    )
    airflow: AirflowSettings = Field(default_factory=AirflowSettings)
    spark: SparkSettings = Field(default_factory=SparkSettings)
    chunk_cache_bytes: Count = setting(
        "TIERFLOW_CHUNK_CACHE_BYTES", "decoded chunks kept in memory for reads", 64 * _MiB
    )
    chunk_cache_dir: ResolvedPath | None = setting(
        "TIERFLOW_CHUNK_CACHE_DIR", "a disk tier for the chunk cache", None
    )
    chunk_cache_disk_bytes: Count = setting(
        "TIERFLOW_CHUNK_CACHE_DISK_BYTES", "the disk tier's budget", 0
    )
    chunk_prefetch: Count = setting(
        "TIERFLOW_CHUNK_PREFETCH", "chunks to read ahead on a miss (never past the segment)", 0
    )
    delete_local_segments: EnvFlag = setting(
        "TIERFLOW_DELETE_LOCAL_SEGMENTS",
        "let local retention delete files from the broker's log dirs",
        False,
    )
    index_cache_dir: ResolvedPath | None = setting(
        "TIERFLOW_INDEX_CACHE_DIR",
        "where `remote-log-index-cache/` lives",
        None,
        shown="`<data>`",
    )
    index_cache_bytes: Positive = setting(
        "TIERFLOW_INDEX_CACHE_BYTES",
        "the index cache's budget (Kafka's `remote.log.index.file.cache.total.size.bytes`)",
        1024 * _MiB,
    )
    stale_copy_grace_s: Count = setting(
        "TIERFLOW_STALE_COPY_GRACE_S",
        "age after which a COPY_SEGMENT_STARTED orphan with no live copy lease is deleted",
        3600,
    )
    copy_max_bytes_per_second: Positive | None = setting(
        "TIERFLOW_COPY_MAX_BYTES_PER_SECOND",
        "KIP-956's `remote.log.manager.copy.max.bytes.per.second`: the bytes a copy (its checks "
        "and uploads, and `verify`) reads of each broker's disks per second, summed over every "
        "process on the host (a shared budget under `<data>/copy-quota/`, up to a second's "
        "worth at once); unset, a copy reads at disk speed",
        None,
        shown="unset",
    )
    copy_lease_ttl_s: Positive = setting(
        "TIERFLOW_COPY_LEASE_TTL_S",
        "how long a partition's lease (copy, compact, merge) blocks *other* owners, counted "
        "from its taking with the value set when they look; a plain CLI rerun on the same host "
        "does not wait for a run whose process is gone",
        900,
    )
    reconcile_grace_s: Count = setting(
        "TIERFLOW_RECONCILE_GRACE_S",
        "age before reconcile may delete an object no metadata names (an upload in flight has "
        "its row written first, but clocks and listings lag)",
        24 * 3600,
    )
    removal_grace_s: Count = setting(
        "TIERFLOW_REMOVAL_GRACE_S",
        "how long a deleted topic's partitions wait, once marked, before "
        "`remote_partition_removal` removes them; until then the restore can bring the topic "
        "back",
        0,
    )
    scrub_budget_bytes: Positive = setting(
        "TIERFLOW_SCRUB_BUDGET_BYTES",
        "bytes of tiered objects one scrub run re-reads and checks (`tierflow scrub`)",
        1024 * _MiB,
    )
    diskless: DisklessSettings = Field(default_factory=DisklessSettings)

    @field_validator("log_dirs", mode="after")
    @classmethod
    def _same_dirs_as_the_brokers(cls, given: tuple[Path, ...], info: ValidationInfo) -> Any:
        every = _every_log_dir(info.data)
        cluster = info.data.get("cluster")
        if not given or cluster is None or not cluster.brokers:
            return given or every
        if set(given) != set(every):
            raise InvalidSettingError(
                f"TIERFLOW_LOG_DIRS={paths_text(given)!r}: must list the same dirs as "
                "TIERFLOW_BROKERS, or be unset"
            )
        return every

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: Any,
        env_settings: Any,
        dotenv_settings: Any,
        file_secret_settings: Any,
    ) -> tuple[Any, ...]:
        """Only what from_env or embedded pass: our variables are flat, the model is nested."""
        return (init_settings,)

    @property
    def index_cache_root(self) -> Path:
        return self.index_cache_dir or self.data_dir

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """The settings of ``env`` (os.environ when None); a variable unset or empty is its
        default; a bad value is an InvalidSettingError naming the variable."""
        env = os.environ if env is None else env
        return cls._of({v.key: raw for v in variables() if (raw := env.get(v.name))})

    @classmethod
    def embedded(cls, base: Path, **values: Any) -> Settings:
        """The embedded defaults, all under one directory: SQLite, a local bucket, one log dir;
        ``values`` are named as their variable (``keyring=`` for TIERFLOW_KEYRING)."""
        return cls._of({"data_dir": base, **values})

    @classmethod
    def airflow_from_env(cls, env: Mapping[str, str] | None = None) -> AirflowSettings:
        """The Airflow group alone, as DAG files read it when parsed: a bad value elsewhere
        fails the task that reads it, not the import of every DAG."""
        env = os.environ if env is None else env
        given = {
            v.key: raw for v in variables() if v.group == "airflow" and (raw := env.get(v.name))
        }
        try:
            return AirflowSettings(**nested(given).get("airflow", {}))
        except ValidationError as error:
            raise _invalid(error, given, group="airflow") from None

    @classmethod
    def _of(cls, values: dict[str, Any]) -> Settings:
        try:
            return cls(**nested(values))
        except ValidationError as error:
            raise _invalid(error, values) from None

    def updated(self, **values: Any) -> Settings:
        """A copy with ``values`` (named as in embedded) in place, unchecked, as
        dataclasses.replace was: a narrowed view, such as only the log dirs present."""
        changes = nested(values)
        for name, sub in changes.items():
            if isinstance(getattr(self, name), SettingsGroup):
                changes[name] = getattr(self, name).model_copy(update=sub)
        return self.model_copy(update=changes)

    def as_env(self) -> dict[str, str]:
        """The same settings as environment variables, for a subprocess (no credentials)."""
        dumped = self.model_dump(mode="json")
        env = {}
        for v in variables():
            value = dumped[v.group][v.field] if v.group else dumped[v.field]
            env[v.name] = "" if value is None else str(value)
        return env


@dataclass(frozen=True)
class Variable:
    """One TIERFLOW_* variable: where its value lives in Settings, and its declaration."""

    name: str
    group: str | None  # the Settings attribute holding it; None: Settings itself
    field: str
    info: FieldInfo

    @property
    def key(self) -> str:
        """Its name in Settings.embedded and updated: the variable's, lower-case, unprefixed."""
        return self.name.removeprefix(VARIABLE_PREFIX).lower()

    @property
    def shown_default(self) -> str:
        extra = self.info.json_schema_extra
        if isinstance(extra, dict) and extra.get("shown"):
            return str(extra["shown"])
        value = self.info.default
        if value is None:
            return "(none)"
        if isinstance(value, bool):
            return str(value).lower()
        return str(value) if value != "" else "(empty)"


@functools.cache
def variables() -> tuple[Variable, ...]:
    """Every setting, in declaration order: groups in place of their field in Settings."""
    found: list[Variable] = []
    for name, info in Settings.model_fields.items():
        group = info.annotation
        if isinstance(group, type) and issubclass(group, SettingsGroup):
            found += [
                Variable(str(sub.validation_alias), name, field, sub)
                for field, sub in group.model_fields.items()
            ]
        else:
            found.append(Variable(str(info.validation_alias), None, name, info))
    return tuple(found)


@functools.cache
def _by_key() -> dict[str, Variable]:
    return {v.key: v for v in variables()}


def _declared(key: str) -> Variable:
    try:
        return _by_key()[key]
    except KeyError:
        raise KeyError(f"no setting is read from {VARIABLE_PREFIX}{key.upper()}") from None


def variable(key: str) -> str:
    """The variable of a setting, by its key: ``variable("keyring") == "TIERFLOW_KEYRING"``."""
    return _declared(key).name


def default(key: str) -> Any:
    """A setting's declared default, for library functions that are also called without
    settings (a test, a tool): they then behave as with the variable unset."""
    return _declared(key).info.default


def nested(values: Mapping[str, Any]) -> dict[str, Any]:
    """``{key: value}`` by variable keys -> the nested field names Settings validates."""
    tree: dict[str, Any] = {}
    for key, value in values.items():
        found = _declared(key)
        place = tree.setdefault(found.group, {}) if found.group else tree
        place[found.field] = value
    return tree


P = ParamSpec("P")
R = TypeVar("R")


def reads_settings(function: Callable[P, R]) -> Callable[P, R]:
    """Airflow calls a task function without ``settings``: it then reads the environment. Tests
    and the CLI pass their own. The one place that falls back to the environment."""
    signature = inspect.signature(function)

    @functools.wraps(function)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        bound = signature.bind(*args, **kwargs)
        if bound.arguments.get("settings") is None:
            bound.arguments["settings"] = Settings.from_env()
        return function(*bound.args, **bound.kwargs)

    return call


def _invalid(
    error: ValidationError, values: Mapping[str, Any], group: str | None = None
) -> InvalidSettingError:
    """pydantic's first error as one line naming the variable, its value as given, and what
    was wrong with it; ``group`` when a group was validated alone."""
    first = error.errors()[0]
    cause = first.get("ctx", {}).get("error")
    if isinstance(cause, InvalidSettingError):
        return cause  # already names its variables: a broker entry, or a pair
    where = [*([group] if group else []), *(str(part) for part in first["loc"])]
    found = next(
        v
        for v in variables()
        if [v.group, v.field] == where[:2] or (v.group is None and [v.field] == where[:1])
    )
    raw = values.get(found.key, first["input"])
    return InvalidSettingError(f"{found.name}={raw!r}: {_reason(first)}")


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
