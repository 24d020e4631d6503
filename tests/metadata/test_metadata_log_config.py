"""Topic config parsing and Kafka's LogConfig validation rules, as a matrix."""

from __future__ import annotations

import re

import pytest

from tierflow.metadata import InvalidConfigError, TopicConfig, parse_kafka_configs

ON = {"remote.storage.enable": "true"}

VALID = [
    pytest.param({}, id="nothing-set"),
    pytest.param(ON, id="remote-storage-on"),
    pytest.param(
        {**ON, "retention.bytes": "100", "local.retention.bytes": "100"},
        id="local-bytes-equal-total",
    ),
    pytest.param(
        {**ON, "retention.bytes": "100", "local.retention.bytes": "1"}, id="local-bytes-below-total"
    ),
    pytest.param(
        {**ON, "retention.bytes": "100", "local.retention.bytes": "-2"}, id="local-bytes-as-total"
    ),
    pytest.param(
        {**ON, "retention.bytes": "-1", "local.retention.bytes": "-1"}, id="bytes-both-unlimited"
    ),
    pytest.param(
        {**ON, "retention.bytes": "-1", "local.retention.bytes": "5000"}, id="total-bytes-unlimited"
    ),
    pytest.param({**ON, "retention.ms": "1000", "local.retention.ms": "0"}, id="local-ms-zero"),
    pytest.param({**ON, "retention.ms": "-1", "local.retention.ms": "-1"}, id="ms-both-unlimited"),
    # local.* default -2
    pytest.param({**ON, "remote.log.copy.disable": "true"}, id="copy-disabled"),
    pytest.param(
        {**ON, "remote.log.copy.disable": "true", "retention.ms": "9", "local.retention.ms": "9"},
        id="copy-disabled-local-ms-equal-total",
    ),
    pytest.param({"remote.log.disable.policy": "delete"}, id="disable-policy-delete"),
    pytest.param(
        {"remote.log.delete.on.disable": "true", "remote.log.disable.policy": "delete"},
        id="delete-on-disable-with-policy-delete",
    ),
    # Kafka checks local against total retention only while remote storage is enabled.
    pytest.param(
        {"retention.bytes": "100", "local.retention.bytes": "500"},
        id="local-above-total-with-remote-storage-off",
    ),
    # tierflow's own: the Iceberg export.
    pytest.param(
        {**ON, "tierflow.iceberg.export": "true", "tierflow.iceberg.value.format": "json"},
        id="iceberg-export-json",
    ),
    pytest.param(
        {"tierflow.iceberg.retention.wait.max.ms": "3600000"}, id="iceberg-retention-wait"
    ),
]

INVALID = [
    pytest.param(
        {**ON, "retention.bytes": "100", "local.retention.bytes": "500"},
        "local.retention.bytes",
        "local.retention.bytes=500 must be <= retention.bytes=100",
        id="local-bytes-above-total",
    ),
    pytest.param(
        {**ON, "retention.ms": "1000", "local.retention.ms": "1001"},
        "local.retention.ms",
        "local.retention.ms=1001 must be <= retention.ms=1000",
        id="local-ms-above-total",
    ),
    pytest.param(
        {**ON, "retention.bytes": "100", "local.retention.bytes": "-1"},
        "local.retention.bytes",
        "local.retention.bytes=-1 (unlimited) is not allowed while retention.bytes=100",
        id="local-bytes-unlimited-total-finite",
    ),
    pytest.param(
        {**ON, "local.retention.ms": "-1"},  # retention.ms defaults to 7 days: finite
        "local.retention.ms",
        "local.retention.ms=-1 (unlimited) is not allowed while retention.ms=604800000",
        id="local-ms-unlimited-total-default",
    ),
    pytest.param(
        {"retention.ms": "-2"},
        "retention.ms",
        "retention.ms=-2 must be >= -1",
        id="retention-ms-below-minus-1",
    ),
    pytest.param(
        {"retention.bytes": "-3"},
        "retention.bytes",
        "retention.bytes=-3 must be >= -1",
        id="retention-bytes-below-minus-1",
    ),
    pytest.param(
        {"local.retention.ms": "-3"},
        "local.retention.ms",
        "local.retention.ms=-3 must be >= -2",
        id="local-ms-below-minus-2",
    ),
    pytest.param(
        {"local.retention.bytes": "-5"},
        "local.retention.bytes",
        "local.retention.bytes=-5 must be >= -2",
        id="local-bytes-below-minus-2",
    ),
    pytest.param(
        {"remote.log.disable.policy": "archive"},
        "remote.log.disable.policy",
        "remote.log.disable.policy=archive must be one of delete, retain",
        id="unknown-disable-policy",
    ),
    pytest.param(
        {**ON, "remote.log.copy.disable": "true", "local.retention.ms": "10"},
        "local.retention.ms",
        "local.retention.ms=10 must be -2 or equal to retention.ms=604800000 when "
        "remote.log.copy.disable=true",
        id="copy-disabled-local-ms-not-total",
    ),
    pytest.param(
        {
            **ON,
            "remote.log.copy.disable": "true",
            "retention.bytes": "100",
            "local.retention.bytes": "50",
        },
        "local.retention.bytes",
        "local.retention.bytes=50 must be -2 or equal to retention.bytes=100",
        id="copy-disabled-local-bytes-not-total",
    ),
    pytest.param(
        {"retention.ms": "7d"},
        "retention.ms",
        "retention.ms=7d is not an integer",
        id="retention-ms-not-an-integer",
    ),
    pytest.param(
        {"tierflow.iceberg.value.format": "avro"},
        "tierflow.iceberg.value.format",
        "tierflow.iceberg.value.format=avro must be one of none, json",
        id="unknown-iceberg-value-format",
    ),
    pytest.param(
        {"tierflow.iceberg.retention.wait.max.ms": "-2"},
        "tierflow.iceberg.retention.wait.max.ms",
        "tierflow.iceberg.retention.wait.max.ms=-2 must be >= -1",
        id="iceberg-retention-wait-below-minus-1",
    ),
    pytest.param(
        {"tierflow.iceberg.export": "1"},
        "tierflow.iceberg.export",
        "must be true or false",
        id="iceberg-export-not-a-boolean",
    ),
    pytest.param(
        {"remote.storage.enable": "yes"},
        "remote.storage.enable",
        "must be true or false",
        id="remote-storage-enable-not-a-boolean",
    ),
    pytest.param(
        {"flush.ms": "1024"}, "flush.ms", "flush.ms: unknown topic config", id="unknown-config"
    ),
    pytest.param(
        {"segment.bytes": "13"},
        "segment.bytes",
        "segment.bytes=13 must be >= 14",
        id="segment-bytes-too-small",
    ),
    pytest.param(
        {"min.cleanable.dirty.ratio": "1.5"},
        "min.cleanable.dirty.ratio",
        "from 0 to 1",
        id="dirty-ratio-above-1",
    ),
    pytest.param(
        {"min.cleanable.dirty.ratio": "half"},
        "min.cleanable.dirty.ratio",
        "is not a number",
        id="dirty-ratio-not-a-number",
    ),
    pytest.param(
        {"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"},
        "min.compaction.lag.ms",
        "must not exceed max.compaction.lag.ms=5",
        id="min-compaction-lag-above-max",
    ),
    pytest.param(
        {"remote.log.delete.on.disable": "true", "remote.log.disable.policy": "retain"},
        "remote.log.disable.policy",
        "remote.log.disable.policy=retain contradicts",
        id="delete-on-disable-with-policy-retain",
    ),
]


@pytest.mark.parametrize("configs", VALID)
def test_valid_configs(configs: dict[str, str]) -> None:
    config = TopicConfig.from_kafka_configs(configs)
    for name, value in configs.items():
        if name != "remote.log.delete.on.disable":
            assert config.as_kafka_configs()[name] == value


@pytest.mark.parametrize(("configs", "key", "message"), INVALID)
def test_invalid_configs_name_the_kafka_config(
    configs: dict[str, str], key: str, message: str
) -> None:
    with pytest.raises(InvalidConfigError) as caught:
        TopicConfig.from_kafka_configs(configs)
    assert caught.value.config == key
    assert message in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_kafka_names_map_to_fields_with_kafka_defaults() -> None:
    config = TopicConfig.from_kafka_configs(
        {"remote.storage.enable": "TRUE", "retention.ms": " 1000 ", "local.retention.ms": "10"}
    )
    assert config == TopicConfig(
        remote_storage_enable=True, retention_ms=1000, local_retention_ms=10
    )
    assert (config.retention_bytes, config.local_retention_bytes) == (-1, -2)
    assert config.remote_log_disable_policy == "retain"


def test_parse_returns_only_the_given_keys_for_partial_updates() -> None:
    assert parse_kafka_configs({"retention.ms": "5", "remote.log.delete.on.disable": "true"}) == {
        "retention_ms": 5,
        "remote_log_disable_policy": "delete",
    }


def test_effective_local_retention_resolves_minus_two() -> None:
    config = TopicConfig(retention_ms=1000, retention_bytes=500, local_retention_bytes=20)
    assert config.effective_local_retention_ms() == 1000
    assert config.effective_local_retention_bytes() == 20


def test_python_values_are_type_checked() -> None:
    with pytest.raises(InvalidConfigError, match=re.escape("retention.ms='5' must be an integer")):
        TopicConfig(retention_ms="5").validate()  # type: ignore[arg-type]
    with pytest.raises(
        InvalidConfigError, match=re.escape("remote.storage.enable=1 must be a bool")
    ):
        TopicConfig(remote_storage_enable=1).validate()  # type: ignore[arg-type]


def test_as_fields_round_trips_through_register_topic_names() -> None:
    config = TopicConfig.from_kafka_configs({"remote.storage.enable": "true", "retention.ms": "5"})
    assert TopicConfig(**config.as_fields()) == config
    assert config.as_fields()["retention_ms"] == 5
