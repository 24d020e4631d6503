"""The lifecycle by hand: ``topics register|list``, ``copy``, ``verify``, ``events`` and ``db``.

Thin adapters from parsed arguments to the library; also what the other command modules share
that needs the library (the console, the errors every command reports in one line).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table

from tierflow.cli.common import (
    CommandError,
    NotFoundError,
    as_command_error,
    cli_actor,
    parse_config,
)
from tierflow.cli.console import stdout_console
from tierflow.cli.report import partition_table
from tierflow.cli.spec import OWNER, Command, Group, arg, config_option, flag, partition_option
from tierflow.cluster.brokers import META_PROPERTIES, BrokerIdError, read_properties
from tierflow.cluster.leaders import leader_logs
from tierflow.cluster.replicas import DuplicateReplicaError
from tierflow.config import Settings
from tierflow.kafka.cluster_metadata import ClusterMetadataError
from tierflow.kafka.errors import KafkaFormatError
from tierflow.kafka.uuid import derived_kafka_uuid
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.lifecycle.copy.steps import (
    CopyFailedError,
    PartitionBusyError,
    TopicIdMismatchError,
    copy_partition,
)
from tierflow.lifecycle.copy.verify import verify_partition
from tierflow.metadata.engine import describe_url
from tierflow.metadata.errors import InvalidConfigError, TopicConflictError, UnknownTopicError
from tierflow.metadata.log_config import parse_kafka_configs
from tierflow.metadata.tierable import NotTierableTopicError
from tierflow.rsm import RemoteStorageError
from tierflow.runtime import UnknownPartitionError, open_storage, open_store
from tierflow.storage.keys import InvalidTopicIdError, InvalidTopicNameError, validate_topic_name
from tierflow.units import iso_utc

if TYPE_CHECKING:
    from tierflow.kafka.log_dir import PartitionLog

console = stdout_console()

KNOWN_ERRORS = (
    KafkaFormatError,
    InvalidConfigError,
    UnknownTopicError,
    UnknownPartitionError,
    RemoteStorageError,
    PartitionBusyError,
    TopicIdMismatchError,
    CopyFailedError,
    FileNotFoundError,
)


def _settings() -> Settings:
    return Settings.from_env()


# What registration can refuse, besides KNOWN_ERRORS: each is a one-line operator error.
REGISTER_ERRORS = (
    InvalidTopicNameError,
    InvalidTopicIdError,
    TopicConflictError,
    NotTierableTopicError,
)


def topics_register(args: argparse.Namespace) -> int:
    settings = _settings()
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


def _leader_partition_logs(settings: Settings) -> list[PartitionLog]:
    """Every partition's leader replica (tierflow.cluster): the one copy and verify read."""
    with as_command_error(ClusterMetadataError, BrokerIdError, DuplicateReplicaError):
        return [found.log for found in leader_logs(settings)]


# The registration event's actor when the topic id was derived: the store records that it was.
DERIVED_ID_ACTOR = "cli (topic id derived: no partition.metadata)"


def _topic_id_from_log_dirs(settings: Settings, name: str) -> tuple[str, bool]:
    """The id in the topic's partition.metadata; for a broker before 2.8, which writes none,
    a stable id derived from the cluster id and the topic name, said on the terminal (and True:
    derived)."""
    logs = [log_ for log_ in _leader_partition_logs(settings) if log_.topic == name]
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
    table = Table(title="Registered topics")
    for column in ("topic", "id", "remote", "tiered state", "epoch", "retention.ms"):
        table.add_column(column)
    table.add_column("retention.bytes")
    for topic in open_store(_settings()).topics():
        table.add_row(
            topic.name,
            topic.topic_id,
            str(topic.remote_storage_enable).lower(),
            str(topic.tiered_state),
            str(topic.tiered_epoch),
            str(topic.retention_ms),
            str(topic.retention_bytes),
        )
    console.print(table)
    return 0


def copy(args: argparse.Namespace) -> int:
    settings = _settings()
    store, rsm = open_store(settings), open_storage(settings)
    owner = args.owner or cli_actor()
    logs = [
        log_
        for log_ in _leader_partition_logs(settings)
        if (args.topic is None or log_.topic == args.topic)
        and (args.partition is None or log_.partition == args.partition)
    ]
    if not logs:
        raise CommandError("no matching partitions in the log dirs")
    failures = 0
    for log_ in logs:
        label = f"{log_.topic}-{log_.partition}"
        try:
            report = copy_partition(
                log_,
                store,
                rsm,
                owner=owner,
                lease_ttl_s=settings.copy_lease_ttl_s,
                dry_run=args.dry_run,
                on_copied=lambda s, label=label: console.print(
                    f"  {label}: copied offsets {s.start_offset}-{s.end_offset} "
                    f"({s.size_in_bytes} bytes) as {s.segment_id}"
                ),
            )
        except UnknownTopicError:
            continue
        except KNOWN_ERRORS as exc:
            failures += 1
            console.print(f"[red]{label}: {exc}[/red]")
            continue
        if report.skipped:
            console.print(f"{label}: skipped ({report.skipped})")
        elif args.dry_run:
            console.print(f"{label}: would copy segments at base offsets {report.pending}")
        if report.held_back:
            console.print(f"{label}: {report.held_back}, later segments stay local")
        for segment_id in report.cleaned_up:
            console.print(f"{label}: removed abandoned attempt {segment_id}")
    return 1 if failures else 0


def verify(args: argparse.Namespace) -> int:
    settings = _settings()
    store, rsm = open_store(settings), open_storage(settings)
    logs, checks = _verify_all(store, rsm, settings, args.topic)
    console.print(partition_table(store, logs, checks, title="Remote copies checked"))
    bad = [c for c in checks if c.identical is False]
    for check in bad:
        console.print(f"[red]{check.topic}-{check.partition} {check.segment_id}: {check.detail}")
    return 1 if bad else 0


def _verify_all(store, rsm, settings: Settings, topic_filter: str | None):
    logs, checks = [], []
    for log_ in _leader_partition_logs(settings):
        if topic_filter and log_.topic != topic_filter:
            continue
        try:
            topic = store.topic(log_.topic)
        except UnknownTopicError:
            continue
        logs.append(log_)
        checks.extend(verify_partition(log_, topic, store, rsm))
    if topic_filter and not logs:
        store.topic(topic_filter)  # an unregistered topic: UnknownTopicError names it
        raise NotFoundError(
            f"topic {topic_filter!r}: no partition of it in the log dirs to verify against"
        )
    return logs, checks


def events(args: argparse.Namespace) -> int:
    store = open_store(_settings())
    topic_id = store.topic(args.topic).topic_id if args.topic else None
    rows = store.events(topic_id=topic_id, segment_id=args.segment)[-args.limit :]
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


def db_upgrade(args: argparse.Namespace) -> int:
    settings = _settings()
    open_store(settings)
    console.print(f"schema is at the latest revision: {describe_url(settings.db_url)}")
    return 0


# -- the commands --------------------------------------------------------------------------

TOPIC_ACTIONS = (
    Command(
        "register",
        topics_register,
        help="register a topic found in the log dirs (idempotent)",
        description="Register a topic, or update its configs. The topic id is read from "
        "the partition.metadata files in the log dirs unless --topic-id is given.",
        args=(
            arg("name"),
            arg("--topic-id", help="Kafka topic id (22-character base64)"),
            config_option(
                "a Kafka topic config, e.g. remote.storage.enable=true, retention.ms=86400000"
            ),
        ),
    ),
    Command("list", topics_list, help="list registered topics"),
)

COMMANDS = (
    Command(
        "copy",
        copy,
        help="copy eligible segments now (what the segment_copy DAG does)",
        description="Copy every eligible segment of tiered partitions. Safe to interrupt and "
        "rerun: abandoned attempts are cleaned up first.",
        args=(
            arg("--topic"),
            partition_option(),
            OWNER,
            flag("--dry-run", "list what would be copied"),
        ),
    ),
    Command(
        "verify",
        verify,
        help="read tiered segments back and compare them with the local files",
        args=(arg("--topic"),),
    ),
    Command(
        "events",
        events,
        help="show the state-transition history",
        args=(arg("--topic"), arg("--segment"), arg("--limit", type=int, default=50)),
    ),
    Group(
        "db",
        help="metadata store schema",
        dest="db_command",
        commands=(Command("upgrade", db_upgrade, help="apply Alembic migrations"),),
    ),
)
