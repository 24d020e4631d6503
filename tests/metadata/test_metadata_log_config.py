"""Topic config parsing and Kafka's LogConfig validation rules, as a matrix."""

from __future__ import annotations

import re

import pytest

from tierflow.metadata import InvalidConfigError, TopicConfig, parse_kafka_configs

ON = {"remote.storage.enable": "true"}

VALID = [
    {},
    ON,
    {**ON, "retention.bytes": "100", "local.retention.bytes": "100"},
    {**ON, "retention.bytes": "100", "local.retention.bytes": "1"},
    {**ON, "retention.bytes": "100", "local.retention.bytes": "-2"},
    {**ON, "retention.bytes": "-1", "local.retention.bytes": "-1"},  # both unlimited
    {**ON, "retention.bytes": "-1", "local.retention.bytes": "5000"},  # total unlimited
    {**ON, "retention.ms": "1000", "local.retention.ms": "0"},
    {**ON, "retention.ms": "-1", "local.retention.ms": "-1"},
    {**ON, "remote.log.copy.disable": "true"},  # local.* default -2
    {**ON, "remote.log.copy.disable": "true", "retention.ms": "9", "local.retention.ms": "9"},
    {"remote.log.disable.policy": "delete"},
    {"remote.log.delete.on.disable": "true", "remote.log.disable.policy": "delete"},
    # Kafka checks local against total retention only while remote storage is enabled.
    {"retention.bytes": "100", "local.retention.bytes": "500"},
    # tierflow's own: the Iceberg export.
    {**ON, "tierflow.iceberg.export": "true", "tierflow.iceberg.value.format": "json"},
    {"tierflow.iceberg.retention.wait.max.ms": "3600000"},
]

INVALID = [
    (
        {**ON, "retention.bytes": "100", "local.retention.bytes": "500"},
        "local.retention.bytes",
        "local.retention.bytes=500 must be <= retention.bytes=100",
    ),
    (
        {**ON, "retention.ms": "1000", "local.retention.ms": "1001"},
        "local.retention.ms",
        "local.retention.ms=1001 must be <= retention.ms=1000",
    ),
    (
        {**ON, "retention.bytes": "100", "local.retention.bytes": "-1"},
        "local.retention.bytes",
        "local.retention.bytes=-1 (unlimited) is not allowed while retention.bytes=100",
    ),
    (
        {**ON, "local.retention.ms": "-1"},  # retention.ms defaults to 7 days: finite
        "local.retention.ms",
        "local.retention.ms=-1 (unlimited) is not allowed while retention.ms=604800000",
    ),
    ({"retention.ms": "-2"}, "retention.ms", "retention.ms=-2 must be >= -1"),
    ({"retention.bytes": "-3"}, "retention.bytes", "retention.bytes=-3 must be >= -1"),
    ({"local.retention.ms": "-3"}, "local.retention.ms", "local.retention.ms=-3 must be >= -2"),
    (
        {"local.retention.bytes": "-5"},
        "local.retention.bytes",
        "local.retention.bytes=-5 must be >= -2",
    ),
    (
        {"remote.log.disable.policy": "archive"},
        "remote.log.disable.policy",
        "remote.log.disable.policy=archive must be one of delete, retain",
    ),
    (
        {**ON, "remote.log.copy.disable": "true", "local.retention.ms": "10"},
        "local.retention.ms",
        "local.retention.ms=10 must be -2 or equal to retention.ms=604800000 when "
        "remote.log.copy.disable=true",
    ),
    (
        {
            **ON,
            "remote.log.copy.disable": "true",
            "retention.bytes": "100",
            "local.retention.bytes": "50",
        },
        "local.retention.bytes",
        "local.retention.bytes=50 must be -2 or equal to retention.bytes=100",
    ),
    ({"retention.ms": "7d"}, "retention.ms", "retention.ms=7d is not an integer"),
    (
        {"tierflow.iceberg.value.format": "avro"},
        "tierflow.iceberg.value.format",
        "tierflow.iceberg.value.format=avro must be one of none, json",
    ),
    (
        {"tierflow.iceberg.retention.wait.max.ms": "-2"},
        "tierflow.iceberg.retention.wait.max.ms",
        "tierflow.iceberg.retention.wait.max.ms=-2 must be >= -1",
    ),
    ({"tierflow.iceberg.export": "1"}, "tierflow.iceberg.export", "must be true or false"),
    ({"remote.storage.enable": "yes"}, "remote.storage.enable", "must be true or false"),
    ({"flush.ms": "1024"}, "flush.ms", "flush.ms: unknown topic config"),
    ({"segment.bytes": "13"}, "segment.bytes", "segment.bytes=13 must be >= 14"),
    ({"min.cleanable.dirty.ratio": "1.5"}, "min.cleanable.dirty.ratio", "from 0 to 1"),
    ({"min.cleanable.dirty.ratio": "half"}, "min.cleanable.dirty.ratio", "is not a number"),
    (
        {"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"},
        "min.compaction.lag.ms",
        "must not exceed max.compaction.lag.ms=5",
    ),
    (
        {"remote.log.delete.on.disable": "true", "remote.log.disable.policy": "retain"},
        "remote.log.disable.policy",
        "remote.log.disable.policy=retain contradicts",
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
