"""Topic configs that matter to tiered storage, validated the way Kafka's LogConfig does.

Kafka checks the retention relationships only while remote storage is enabled
(``validateTopicLogConfigValues``), because ``local.retention.*`` means nothing otherwise; the
checks run on the merged config, so enabling a topic later still catches a bad value.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tierflow.metadata.errors import InvalidConfigError
from tierflow.metadata.tierable import is_compacted, policy_deletes

# -1: unlimited. -2 (local.retention.* only): same as the matching retention.* value.
UNLIMITED = -1
SAME_AS_RETENTION = -2
DISABLE_POLICIES = frozenset({"retain", "delete"})

# Kafka config name -> TopicConfig field. remote.log.delete.on.disable is handled separately:
# it is the 3.9 boolean that replaced KIP-950's remote.log.disable.policy.
KAFKA_NAMES: dict[str, str] = {
    "remote.storage.enable": "remote_storage_enable",
    "retention.ms": "retention_ms",
    "retention.bytes": "retention_bytes",
    "local.retention.ms": "local_retention_ms",
    "local.retention.bytes": "local_retention_bytes",
    "remote.log.disable.policy": "remote_log_disable_policy",
    "remote.log.copy.disable": "remote_log_copy_disable",
    "cleanup.policy": "cleanup_policy",
    # What a compacted topic's remote compaction honours (issue 21), Kafka's names and defaults.
    "segment.bytes": "segment_bytes",
    "delete.retention.ms": "delete_retention_ms",
    "min.compaction.lag.ms": "min_compaction_lag_ms",
    "max.compaction.lag.ms": "max_compaction_lag_ms",
    "min.cleanable.dirty.ratio": "min_cleanable_dirty_ratio",
    # tierflow's own (Kafka has no such configs): the topic's Iceberg export, issue 19.
    "tierflow.iceberg.export": "iceberg_export",
    "tierflow.iceberg.value.format": "iceberg_value_format",
    "tierflow.iceberg.retention.wait.max.ms": "iceberg_retention_wait_max_ms",
}
VALUE_FORMATS = ("none", "json")  # tierflow.iceberg.value.format: json adds value_json
DELETE_ON_DISABLE = "remote.log.delete.on.disable"
CLEANUP_POLICY = "cleanup.policy"
CLEANUP_POLICIES = ("delete", "compact")
FIELD_NAMES: dict[str, str] = {field: name for name, field in KAFKA_NAMES.items()}

_BOOL_FIELDS = frozenset({"remote_storage_enable", "remote_log_copy_disable", "iceberg_export"})
_STR_FIELDS = frozenset({"remote_log_disable_policy", "iceberg_value_format"})
_FLOAT_FIELDS = frozenset({"min_cleanable_dirty_ratio"})
LONG_MAX = (1 << 63) - 1
SEGMENT_BYTES_MIN = 14  # Kafka's floor: LegacyRecord.RECORD_OVERHEAD_V0


@dataclass(frozen=True)
class TopicConfig:
    remote_storage_enable: bool = False
    retention_ms: int = 604_800_000
    retention_bytes: int = UNLIMITED
    local_retention_ms: int = SAME_AS_RETENTION
    local_retention_bytes: int = SAME_AS_RETENTION
    remote_log_disable_policy: str = "retain"
    remote_log_copy_disable: bool = False
    cleanup_policy: str = "delete"  # Kafka's list, normalized: "compact", "compact,delete"...
    segment_bytes: int = 1 << 30
    delete_retention_ms: int = 86_400_000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    min_cleanable_dirty_ratio: float = 0.5
    iceberg_export: bool = False
    iceberg_value_format: str = "none"
    iceberg_retention_wait_max_ms: int = UNLIMITED  # how long retention waits for the export

    @classmethod
    def from_kafka_configs(cls, configs: Mapping[str, str]) -> TopicConfig:
        """Kafka-named string configs (as on a command line) over the Kafka defaults."""
        config = cls(**parse_kafka_configs(configs))
        config.validate()
        return config

    def with_changes(self, changes: Mapping[str, Any]) -> TopicConfig:
        """This config with python-named ``changes`` applied; unknown names are rejected."""
        for field in changes:
            if field not in FIELD_NAMES:
                raise InvalidConfigError(field, f"{field}: unknown topic config")
        return dataclasses.replace(self, **changes)

    def as_fields(self) -> dict[str, Any]:
        """Every field by python name, as ``register_topic(**config.as_fields())`` takes them.

        This sets all configs (unlisted ones to Kafka's defaults); for a partial alter pass
        ``parse_kafka_configs(...)`` instead.
        """
        return dataclasses.asdict(self)

    def as_kafka_configs(self) -> dict[str, str]:
        out = {}
        for field, name in FIELD_NAMES.items():
            value = getattr(self, field)
            out[name] = str(value).lower() if isinstance(value, bool) else str(value)
        return out

    def validate(self) -> None:
        """Raise InvalidConfigError naming the first Kafka config that LogConfig would reject."""
        _check_type("remote.storage.enable", self.remote_storage_enable, bool)
        _check_type("remote.log.copy.disable", self.remote_log_copy_disable, bool)
        _check_min("retention.ms", self.retention_ms, UNLIMITED)
        _check_min("retention.bytes", self.retention_bytes, UNLIMITED)
        _check_min("local.retention.ms", self.local_retention_ms, SAME_AS_RETENTION)
        _check_min("local.retention.bytes", self.local_retention_bytes, SAME_AS_RETENTION)
        if self.remote_log_disable_policy not in DISABLE_POLICIES:
            raise InvalidConfigError(
                "remote.log.disable.policy",
                f"remote.log.disable.policy={self.remote_log_disable_policy} must be one of "
                f"{', '.join(sorted(DISABLE_POLICIES))}",
            )
        self._validate_iceberg()
        _check_cleanup_policy(self.cleanup_policy)
        self._validate_compaction()
        if not self.remote_storage_enable:
            return
        _check_local_retention("bytes", self.local_retention_bytes, self.retention_bytes)
        _check_local_retention("ms", self.local_retention_ms, self.retention_ms)
        if self.remote_log_copy_disable:
            _check_copy_disabled("bytes", self.local_retention_bytes, self.retention_bytes)
            _check_copy_disabled("ms", self.local_retention_ms, self.retention_ms)

    def _validate_iceberg(self) -> None:
        _check_type("tierflow.iceberg.export", self.iceberg_export, bool)
        _check_min("tierflow.iceberg.retention.wait.max.ms", self.iceberg_retention_wait_max_ms, -1)
        if self.iceberg_value_format not in VALUE_FORMATS:
            raise InvalidConfigError(
                "tierflow.iceberg.value.format",
                f"tierflow.iceberg.value.format={self.iceberg_value_format} must be one of "
                f"{', '.join(VALUE_FORMATS)}",
            )

    def _validate_compaction(self) -> None:
        """LogConfig's ranges, and its check that the two compaction lags are in order."""
        _check_min("segment.bytes", self.segment_bytes, SEGMENT_BYTES_MIN)
        _check_min("delete.retention.ms", self.delete_retention_ms, 0)
        _check_min("min.compaction.lag.ms", self.min_compaction_lag_ms, 0)
        _check_min("max.compaction.lag.ms", self.max_compaction_lag_ms, 1)
        ratio = self.min_cleanable_dirty_ratio
        if isinstance(ratio, bool) or not isinstance(ratio, int | float) or not 0 <= ratio <= 1:
            raise InvalidConfigError(
                "min.cleanable.dirty.ratio",
                f"min.cleanable.dirty.ratio={ratio!r} must be a number from 0 to 1",
            )
        if self.min_compaction_lag_ms > self.max_compaction_lag_ms:
            raise InvalidConfigError(
                "min.compaction.lag.ms",
                f"min.compaction.lag.ms={self.min_compaction_lag_ms} must not exceed "
                f"max.compaction.lag.ms={self.max_compaction_lag_ms}",
            )

    @property
    def compacted(self) -> bool:
        return is_compacted(self.cleanup_policy)

    @property
    def deletes(self) -> bool:
        return policy_deletes(self.cleanup_policy)

    def effective_local_retention_ms(self) -> int:
        """local.retention.ms with -2 resolved (-1 still means unlimited)."""
        if self.local_retention_ms == SAME_AS_RETENTION:
            return self.retention_ms
        return self.local_retention_ms

    def effective_local_retention_bytes(self) -> int:
        if self.local_retention_bytes == SAME_AS_RETENTION:
            return self.retention_bytes
        return self.local_retention_bytes


def parse_kafka_configs(configs: Mapping[str, str]) -> dict[str, Any]:
    """Kafka names and string values -> python field names and typed values (no defaults).

    Use this for a partial update (``register_topic(..., **parse_kafka_configs(d))``) and
    ``TopicConfig.from_kafka_configs`` for a full config.
    """
    out: dict[str, Any] = {}
    for name, raw in configs.items():
        if name == DELETE_ON_DISABLE:
            policy = "delete" if _parse_bool(name, raw) else "retain"
            _set_once(out, "remote_log_disable_policy", policy, name)
            continue
        if name == CLEANUP_POLICY:
            _set_once(out, "cleanup_policy", _cleanup_policy(raw), name)
            continue
        field = KAFKA_NAMES.get(name)
        if field is None:
            known = ", ".join(sorted([*KAFKA_NAMES, DELETE_ON_DISABLE]))
            raise InvalidConfigError(name, f"{name}: unknown topic config (known: {known})")
        if field in _BOOL_FIELDS:
            value: Any = _parse_bool(name, raw)
        elif field in _STR_FIELDS:
            value = raw.strip()
        elif field in _FLOAT_FIELDS:
            value = _parse_float(name, raw)
        else:
            value = _parse_int(name, raw)
        _set_once(out, field, value, name)
    return out


def _cleanup_policy(raw: str) -> str:
    """Kafka's list type: comma-separated, blanks around items dropped; kept in its order."""
    return ",".join(p.strip().lower() for p in raw.split(",") if p.strip())


def _check_cleanup_policy(policy: str) -> None:
    items = policy.split(",") if policy else []
    if not items or any(p not in CLEANUP_POLICIES for p in items):
        raise InvalidConfigError(
            CLEANUP_POLICY,
            f"{CLEANUP_POLICY}={policy}: must be a list of {', '.join(CLEANUP_POLICIES)}",
        )


def _set_once(out: dict[str, Any], field: str, value: Any, name: str) -> None:
    if field in out and out[field] != value:
        raise InvalidConfigError(
            name, f"{name}={value} contradicts {FIELD_NAMES[field]}={out[field]}"
        )
    out[field] = value


def _parse_bool(name: str, raw: str) -> bool:
    text = raw.strip().lower()
    if text not in ("true", "false"):
        raise InvalidConfigError(name, f"{name}={raw} must be true or false")
    return text == "true"


def _parse_int(name: str, raw: str) -> int:
    try:
        return int(raw.strip())
    except ValueError:
        raise InvalidConfigError(name, f"{name}={raw} is not an integer") from None


def _parse_float(name: str, raw: str) -> float:
    try:
        return float(raw.strip())
    except ValueError:
        raise InvalidConfigError(name, f"{name}={raw} is not a number") from None


def _check_type(name: str, value: object, kind: type) -> None:
    if not isinstance(value, kind):
        raise InvalidConfigError(name, f"{name}={value!r} must be a {kind.__name__}")


def _check_min(name: str, value: object, minimum: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidConfigError(name, f"{name}={value!r} must be an integer")
    if value < minimum:
        raise InvalidConfigError(name, f"{name}={value} must be >= {minimum}")


def _check_local_retention(unit: str, local: int, total: int) -> None:
    """LogConfig.validateRemoteStorageRetentionSize/Time: only a finite total constrains local."""
    if total == UNLIMITED or local == SAME_AS_RETENTION:
        return
    name, total_name = f"local.retention.{unit}", f"retention.{unit}"
    if local == UNLIMITED:
        raise InvalidConfigError(
            name, f"{name}=-1 (unlimited) is not allowed while {total_name}={total} is finite"
        )
    if local > total:
        raise InvalidConfigError(name, f"{name}={local} must be <= {total_name}={total}")


def _check_copy_disabled(unit: str, local: int, total: int) -> None:
    """validateRetentionConfigsWhenRemoteCopyDisabled: nothing more will be copied, so local
    data must live as long as the topic's retention says."""
    if local in (SAME_AS_RETENTION, total):
        return
    name = f"local.retention.{unit}"
    raise InvalidConfigError(
        name,
        f"{name}={local} must be -2 or equal to retention.{unit}={total} "
        "when remote.log.copy.disable=true",
    )
