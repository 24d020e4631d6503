"""Topic-level operations by hand: ``delete-topic``, ``remove-partitions``, ``tiering`` and
``topics sync``.

They call the same library the topic_disablement and remote_partition_removal DAGs call, so
an operator can act (or look) without Airflow. Every destructive command prints what it would
do first and acts only with ``--yes``.
"""

from __future__ import annotations

import argparse
import json
import sys

from rich.table import Table

from tierflow.cli.commands import KNOWN_ERRORS, TOPIC_ACTIONS, console
from tierflow.cli.common import CommandError, as_command_error, cli_actor, parse_config
from tierflow.cli.remote_log_metadata_commands import HANDOVER, TOPICS_FOLLOW
from tierflow.cli.spec import Command, Group, add_commands, arg, config_option, flag
from tierflow.config import Settings
from tierflow.kafka.cluster_metadata import ClusterMetadataError, read_cluster_topic_configs
from tierflow.kafka.metadata_log import find_metadata_image
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.lifecycle.removal.mark import TopicDeletion, delete_topic, plan_topic_deletion
from tierflow.lifecycle.removal.remove import PartitionRemovalError, remove_marked_partitions
from tierflow.metadata.errors import MetadataError
from tierflow.metadata.log_config import TopicConfig, parse_kafka_configs
from tierflow.metadata.topic_sync import (
    FAILED,
    KafkaTopic,
    SyncOutcome,
    sync_topics,
    topics_from_cluster,
    topics_from_log_dirs,
)
from tierflow.runtime import open_objects, open_storage, open_store
from tierflow.storage.keys import key_layout
from tierflow.tasks.disablement import apply_request, complete_request
from tierflow.units import counted, human_bytes

ERRORS = (*KNOWN_ERRORS, MetadataError, PartitionRemovalError)


def delete_topic_command(args: argparse.Namespace) -> int:
    store = open_store(Settings.from_env())
    with as_command_error(*ERRORS):
        if args.yes:
            result = delete_topic(
                store, args.topic, topic_id=args.topic_id, actor=cli_actor(), now_ms=wall_clock_ms()
            )
        else:
            result = plan_topic_deletion(store, args.topic, topic_id=args.topic_id)
    if args.json:
        print(json.dumps(result.as_dict(), indent=2))
        return 0
    _print_deletion(result, acted=args.yes)
    return 0


def _print_deletion(result: TopicDeletion, *, acted: bool) -> None:
    what = (
        f"{result.topic} ({result.topic_id}): partitions {result.partitions}, "
        f"{counted(result.remote_segments, 'remote segment')}, {human_bytes(result.remote_bytes)}"
    )
    if not acted:
        state = " (already marked)" if result.already_marked else ""
        console.print(f"would mark for remote removal{state}: {what}")
        console.print("dry run: nothing changed; add --yes to mark it")
    elif result.already_marked:
        console.print(f"already marked for remote removal: {what}")
    else:
        console.print(f"marked for remote removal: {what}")
        console.print(
            "the remote_partition_removal DAG removes it within the hour, or run "
            "'tierflow remove-partitions --yes'"
        )


def remove_partitions_command(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    store = open_store(settings)
    from tierflow.tasks.partition_removal import list_pending_removals

    pending = list_pending_removals(settings)
    table = Table(title="Partitions of deleted topics")
    for column in ("topic", "topic id", "partition", "state"):
        table.add_column(column)
    for job in pending:
        table.add_row(job["topic"], job["topic_id"], str(job["partition"]), job["state"])
    console.print(table)
    if not args.yes:
        console.print("dry run: nothing changed; add --yes to remove them")
        return 0
    with as_command_error(PartitionRemovalError):
        reports = remove_marked_partitions(
            store,
            open_storage(settings),
            open_objects(settings),
            prefix=settings.storage_prefix,
            actor=cli_actor(),
            grace_ms=settings.removal_grace_s * 1000,
            keys=key_layout(settings.storage_layout),
        )
    segments = sum(len(r.deleted) for r in reports)
    console.print(
        f"removed {counted(len(reports), 'partition')}, {counted(segments, 'segment')} deleted"
    )
    return 0


def tiering_command(args: argparse.Namespace) -> int:
    if args.action == "disable" and args.policy == "delete" and not args.yes:
        raise CommandError(
            f"disabling {args.topic} with policy delete deletes all its remote data and moves "
            "its log start offset to the local log start; add --yes to go ahead"
        )
    settings = Settings.from_env()
    actor = cli_actor()
    with as_command_error(*ERRORS):
        outcome = apply_request(
            args.topic, args.action, args.policy, actor=actor, settings=settings
        )
        if args.action == "disable":
            outcome = complete_request(args.topic, actor=actor, settings=settings)
    console.print(
        f"{outcome['topic']}: tiered state {outcome['state']} "
        f"(policy {outcome['policy']}, tiered epoch {outcome.get('tiered_epoch', '-')})"
    )
    return 0


def _kafka_topics(settings: Settings) -> tuple[list[KafkaTopic], str]:
    """The topics and where they came from, for the report."""
    if settings.kafka_bootstrap:
        described = read_cluster_topic_configs(settings.kafka_bootstrap)
        return topics_from_cluster(described), f"cluster {settings.kafka_bootstrap}"
    image = find_metadata_image(settings.log_dirs)
    source = "log dirs" + (", configs from the KRaft metadata log" if image else "")
    return topics_from_log_dirs(settings.log_dirs, image), source


def topics_sync_command(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    with as_command_error(*ERRORS, ClusterMetadataError):
        defaults = dict(parse_config(item) for item in args.config)
        parse_kafka_configs(defaults)  # a bad default is the operator's error, not a topic's
        topics, source = _kafka_topics(settings)
        outcomes = sync_topics(
            open_store(settings),
            topics,
            defaults=defaults,
            actor=cli_actor(),
            now_ms=wall_clock_ms(),
            dry_run=args.dry_run,
        )
    if args.json:
        print(json.dumps([o.as_dict() for o in outcomes], indent=2))
        for warning in (w for o in outcomes for w in o.warnings):
            print(f"WARNING: {warning}", file=sys.stderr)  # loud even when a script reads stdout
    else:
        _print_sync(outcomes, source, dry_run=args.dry_run)
    return 1 if any(o.action == FAILED for o in outcomes) else 0


def _print_sync(outcomes: list[SyncOutcome], source: str, *, dry_run: bool) -> None:
    table = Table(title=f"Topics from {source}" + (" (dry run)" if dry_run else ""))
    table.add_column("topic", overflow="fold")
    table.add_column("id", no_wrap=True)
    table.add_column("action")
    table.add_column("remote")
    # A skipped or failed topic has a reason and no changes: one column holds either.
    table.add_column("changes (old -> new), or why not", ratio=1)
    for o in outcomes:
        table.add_row(
            o.topic,
            o.topic_id or "-",
            o.action,
            o.configs.get("remote.storage.enable", "-"),
            o.reason or _changes_text(o),
        )
    console.print(table)
    for o in outcomes:
        for warning in o.warnings:
            prefix = "WARNING (dry run, would apply)" if dry_run else "WARNING"
            console.print(f"{prefix}: {warning}", style="bold red", markup=False, soft_wrap=True)
    counts = {
        a: sum(o.action == a for o in outcomes) for a in dict.fromkeys(o.action for o in outcomes)
    }
    summary = ", ".join(f"{n} {a}" for a, n in counts.items()) or "no topics found"
    console.print(("dry run, nothing written: " if dry_run else "") + summary)


def _changes_text(outcome: SyncOutcome) -> str:
    """One line per changed key; a new topic shows what differs from Kafka's defaults."""
    if outcome.action == "created":
        kafka = TopicConfig().as_kafka_configs()
        own = [f"{k}={c['new']}" for k, c in outcome.changes.items() if kafka.get(k) != c["new"]]
        return "\n".join(own) or "Kafka's defaults"
    return "\n".join(f"{k}: {c['old']} -> {c['new']}" for k, c in outcome.changes.items())


# -- the commands --------------------------------------------------------------------------

COMMANDS = (
    Command(
        "delete-topic",
        delete_topic_command,
        help="mark a deleted Kafka topic so its remote data is removed",
        description="Record that Kafka deleted TOPIC: every partition of its topic id is "
        "marked DELETE_PARTITION_MARKED and the name is freed for a new topic. The hourly "
        "remote_partition_removal DAG (or 'tierflow remove-partitions --yes') then deletes "
        "the remote data. Without --yes, only shows what would be removed. Repeating it is "
        "harmless.",
        args=(
            arg("topic", help="the deleted topic's name, as registered"),
            arg("--topic-id", help="which incarnation, when the name was reused"),
            flag("--yes", "mark it (otherwise a dry run)"),
            flag("--json", "print the result as JSON"),
        ),
    ),
    Command(
        "remove-partitions",
        remove_partitions_command,
        help="remove the remote data of marked partitions now (what the hourly DAG does)",
        description="Carry every DELETE_PARTITION_MARKED or _STARTED partition to "
        "DELETE_PARTITION_FINISHED: delete each segment through DELETE_SEGMENT_STARTED/FINISHED "
        "and sweep the partition's prefix. Safe to interrupt and rerun. Without --yes, only "
        "lists the pending partitions.",
        args=(flag("--yes", "delete (otherwise a dry run)"),),
    ),
    Group(
        "tiering",
        help="turn tiered storage off (KIP-950) or on for a topic",
        description="What the topic_disablement DAG does, synchronously. disable moves the "
        "topic ENABLED -> DISABLING -> DISABLED: with --policy retain the remote data stays "
        "readable until retention expires it; with --policy delete it is deleted now (needs "
        "--yes). Rerunning an interrupted disable with the same policy finishes it.",
        dest="tiering_command",
        commands=(
            Command(
                "disable",
                tiering_command,
                help="turn tiered storage off",
                description="KIP-950: stop copying TOPIC. With --policy retain "
                "(remote.log.copy.disable=true) its remote data stays readable until "
                "retention expires it; with --policy delete (remote.storage.enable=false) the "
                "remote data is deleted now.",
                args=(
                    arg("topic", help="a registered topic"),
                    arg(
                        "--policy",
                        choices=("retain", "delete"),
                        default="retain",
                        help="remote.log.disable.policy [retain]",
                    ),
                    flag("--yes", "required with --policy delete"),
                ),
                defaults={"action": "disable"},
            ),
            Command(
                "enable",
                tiering_command,
                help="turn tiered storage on again",
                description="Resume copying TOPIC from max(highest remote offset + 1, log "
                "start offset), in a new tiered epoch.",
                args=(arg("topic", help="a registered topic"),),
                defaults={"action": "enable", "policy": "retain", "yes": True},
            ),
        ),
    ),
)

SYNC = Command(
    "sync",
    topics_sync_command,
    help="register every topic Kafka has, with its configs (rerun to update)",
    description="Register every topic with a partition in the log dirs (all brokers' "
    "dirs), or, when "
    "TIERFLOW_KAFKA_BOOTSTRAP is set, every topic of that cluster. Each config is Kafka's "
    "value: from a cluster, what DescribeConfigs says applies to the topic (its override, "
    "else the broker's default); from the log dirs, the KRaft metadata log's override. Else"
    " the --config default, else the value already registered (Kafka's default for a new "
    "topic). The tiering switches (remote.storage.enable, remote.log.copy.disable, "
    "remote.log.delete.on.disable) count only as a topic's own override, so a source that "
    "says nothing never turns tiering off. An explicit remote.storage.enable=false does, "
    "and is printed as a warning. A rerun updates what changed, lists each change (key: old"
    " -> new), and reports each topic as created, updated or unchanged; --dry-run shows the"
    " same without writing. Like Kafka, it never tiers internal topics (__consumer_offsets,"
    " __transaction_state, ...) or the metadata topics: those are reported as skipped. "
    "Unlike Kafka, it tiers compacted topics (cleanup.policy=compact or compact,delete), "
    "copying what the broker's log cleaner has cleaned.",
    args=(
        config_option("a default for topics that do not set KEY, e.g. remote.storage.enable=true"),
        flag("--dry-run", "show what would change, write nothing"),
        flag("--json", "print the outcomes as JSON"),
    ),
)

TOPICS = Group(
    "topics",
    help="register topics and their tiering configs",
    dest="topics_command",
    commands=(*TOPIC_ACTIONS, SYNC, HANDOVER, TOPICS_FOLLOW),
)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``delete-topic``, ``remove-partitions`` and ``tiering`` to the ``tierflow`` command."""
    add_commands(sub, COMMANDS)
