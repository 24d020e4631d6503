"""The work behind ``topics register|list``, ``events`` and ``db upgrade`` (their options are in
``commands``): imported when one of them runs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.table import Table

from tierflow.cli.commands import DERIVED_ID_ACTOR
from tierflow.cli.common import CommandError, as_command_error, parse_config, print_json
from tierflow.cli.shared import KNOWN_ERRORS, console, leader_partition_logs, settings_from_env
from tierflow.config import Settings
from tierflow.kafka.meta_properties import META_PROPERTIES, read_properties
from tierflow.kafka.uuid import derived_kafka_uuid
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.metadata.engine import describe_url
from tierflow.metadata.errors import TopicConflictError
from tierflow.metadata.log_config import parse_kafka_configs
from tierflow.metadata.models import MetadataEvent, Topic
from tierflow.metadata.tierable import NotTierableTopicError
from tierflow.operator_view.formatting import retention_bytes, retention_ms
from tierflow.runtime import open_store
from tierflow.storage.keys import InvalidTopicIdError, InvalidTopicNameError, validate_topic_name
from tierflow.units import iso_utc

# What registration can refuse, besides KNOWN_ERRORS: each is a one-line operator error.
REGISTER_ERRORS = (
    InvalidTopicNameError,
    InvalidTopicIdError,
    TopicConflictError,
    NotTierableTopicError,
)


def topics_register(args: argparse.Namespace) -> int:
    settings = settings_from_env()
    with as_command_error(*KNOWN_ERRORS, *REGISTER_ERRORS):
        # The name first: a hostile one must not even be looked up in the log dirs.
        validate_topic_name(args.name)
        configs = dict(parse_config(item) for item in args.config)
        topic_id, actor = args.topic_id, "cli"
        if topic_id is None:
            topic_id, derived = _topic_id_from_log_dirs(settings, args.name)
            actor = DERIVED_ID_ACTOR if derived else actor
        topic = open_store(settings).register_topic(
            args.name,
            topic_id,
            actor=actor,
            now_ms=wall_clock_ms(),
            **parse_kafka_configs(configs),
        )
    console.print(f"registered {topic.name} ({topic.topic_id}), tiered state {topic.tiered_state}")
    return 0


def _topic_id_from_log_dirs(settings: Settings, name: str) -> tuple[str, bool]:
    """The id in the topic's partition.metadata; for a broker before 2.8, which writes none,
    a stable id derived from the cluster id and the topic name, said on the terminal (and True:
    derived)."""
    logs = [log_ for log_ in leader_partition_logs(settings) if log_.topic == name]
    for log_ in logs:
        if log_.topic_id():
            return str(log_.topic_id()), False
    if not logs:
        raise CommandError(f"topic {name!r}: no partition of it in the log dirs; pass --topic-id")
    cluster = _cluster_id(logs[0].log_dir.path)
    topic_id = derived_kafka_uuid(f"{cluster}/{name}")
    console.print(
        f"{name}: no partition.metadata (a broker before Kafka 2.8): topic id {topic_id} "
        f"derived from cluster {cluster} and the topic name; the same every time"
    )
    return topic_id, True


def _cluster_id(log_dir: Path) -> str:
    """``cluster.id`` of the log dir's meta.properties (written since Kafka 0.10.1)."""
    path = log_dir / META_PROPERTIES
    cluster = read_properties(path).get("cluster.id") if path.is_file() else None
    if not cluster:
        raise CommandError(f"{path}: no cluster.id to derive a topic id from; pass --topic-id")
    return cluster


def topics_list(args: argparse.Namespace) -> int:
    topics = open_store(settings_from_env()).topics()
    if args.json:
        print_json([topic_json(t) for t in topics])
        return 0
    table = Table(title="Registered topics")
    for column in ("topic", "id", "copier", "remote", "tiered state", "epoch", "retention"):
        table.add_column(column)
    table.add_column("local retention")
    for topic in topics:
        config = topic.config
        table.add_row(
            topic.name,
            topic.topic_id,
            topic.copier,
            str(topic.remote_storage_enable).lower(),
            str(topic.tiered_state),
            str(topic.tiered_epoch),
            f"{retention_ms(config.retention_ms)} / {retention_bytes(config.retention_bytes)}",
            f"{retention_ms(config.local_retention_ms)} / "
            f"{retention_bytes(config.local_retention_bytes)}",
        )
    console.print(table)
    return 0


def topic_json(topic: Topic) -> dict:
    """A registered topic for scripts: its KIP-950 state and its configs under Kafka's names."""
    return {
        "topic": topic.name,
        "topic_id": topic.topic_id,
        "copier": topic.copier,  # "tierflow", or "broker" once handed over or followed
        "tiered_state": topic.tiered_state,
        "tiered_epoch": topic.tiered_epoch,
        "updated_ms": topic.updated_ms,
        "configs": topic.config.as_kafka_configs(),
    }


def events(args: argparse.Namespace) -> int:
    store = open_store(settings_from_env())
    topic_id = store.topic(args.topic).topic_id if args.topic else None
    rows = store.events(topic_id=topic_id, segment_id=args.segment)[-args.limit :]
    if args.json:
        print_json([event_json(event) for event in rows])
        return 0
    table = Table(title="State transitions (oldest first)")
    for column in ("#", "time (UTC)", "entity", "partition", "segment", "from", "to", "actor"):
        table.add_column(column)
    for event in rows:
        table.add_row(
            str(event.id),
            iso_utc(event.event_timestamp_ms),
            event.entity,
            "" if event.partition is None else str(event.partition),
            event.segment_id or "",
            event.from_state or "",
            event.to_state,
            event.actor,
        )
    console.print(table)
    return 0


def event_json(event: MetadataEvent) -> dict:
    """One state transition for scripts: the stored row, with its time also in ISO-8601."""
    return {
        "id": event.id,
        "time": iso_utc(event.event_timestamp_ms),
        "event_timestamp_ms": event.event_timestamp_ms,
        "entity": event.entity,
        "topic_id": event.topic_id,
        "partition": event.partition,
        "segment_id": event.segment_id,
        "from_state": event.from_state,
        "to_state": event.to_state,
        "actor": event.actor,
    }


def db_upgrade(args: argparse.Namespace) -> int:
    settings = settings_from_env()
    open_store(settings)
    console.print(f"schema is at the latest revision: {describe_url(settings.db_url)}")
    return 0
