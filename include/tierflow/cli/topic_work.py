"""The work behind ``delete-topic``, ``remove-partitions``, ``tiering`` and ``topics sync``
(their options are in ``topic_commands``): imported when one of them runs."""

from __future__ import annotations

import argparse
import json
import sys

from rich.table import Table

from tierflow.cli.common import CommandError, as_command_error, cli_actor, parse_config
from tierflow.cli.shared import KNOWN_ERRORS, console
from tierflow.config import Settings
from tierflow.kafka.cluster_metadata import read_cluster_topic_configs
from tierflow.kafka.errors import ClusterMetadataError
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
            prefix=settings.storage.prefix,
            actor=cli_actor(),
            grace_ms=settings.removal_grace_s * 1000,
            keys=key_layout(settings.storage.layout),
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
    if settings.cluster.bootstrap_servers:
        described = read_cluster_topic_configs(settings.cluster.bootstrap_servers)
        return topics_from_cluster(described), f"cluster {settings.cluster.bootstrap_servers}"
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
