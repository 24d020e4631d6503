"""Topic-level operations by hand: ``delete-topic``, ``remove-partitions`` and ``tiering``.

They call the same library the topic_disablement and remote_partition_removal DAGs call, so
an operator can act (or look) without Airflow. Every destructive command prints what it would
do first and acts only with ``--yes``.
"""

from __future__ import annotations

import argparse
import json
import os
import socket

from rich.table import Table

from tierflow.cli.commands import KNOWN_ERRORS, CommandError, console
from tierflow.config import Settings
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.lifecycle.partition_removal import PartitionRemovalError, remove_marked_partitions
from tierflow.lifecycle.topic_deletion import TopicDeletion, delete_topic, plan_topic_deletion
from tierflow.metadata.errors import MetadataError
from tierflow.runtime import open_objects, open_storage, open_store
from tierflow.tasks.disablement import apply_request, complete_request

ERRORS = (*KNOWN_ERRORS, MetadataError, PartitionRemovalError)


def _actor() -> str:
    return f"cli:{socket.gethostname()}:{os.getpid()}"


def register(sub: argparse._SubParsersAction) -> None:
    delete = sub.add_parser(
        "delete-topic",
        help="mark a deleted Kafka topic so its remote data is removed",
        description="Record that Kafka deleted TOPIC: every partition of its topic id is "
        "marked DELETE_PARTITION_MARKED and the name is freed for a new topic. The hourly "
        "remote_partition_removal DAG (or 'tierflow remove-partitions --yes') then deletes "
        "the remote data. Without --yes, only shows what would be removed. Repeating it is "
        "harmless.",
    )
    delete.add_argument("topic")
    delete.add_argument("--topic-id", help="which incarnation, when the name was reused")
    delete.add_argument("--yes", action="store_true", help="mark it (otherwise a dry run)")
    delete.add_argument("--json", action="store_true", help="print the result as JSON")
    delete.set_defaults(func=delete_topic_command)

    remove = sub.add_parser(
        "remove-partitions",
        help="remove the remote data of marked partitions now (what the hourly DAG does)",
        description="Carry every DELETE_PARTITION_MARKED or _STARTED partition to "
        "DELETE_PARTITION_FINISHED: delete each segment through DELETE_SEGMENT_STARTED/FINISHED "
        "and sweep the partition's prefix. Safe to interrupt and rerun. Without --yes, only "
        "lists the pending partitions.",
    )
    remove.add_argument("--yes", action="store_true", help="delete (otherwise a dry run)")
    remove.set_defaults(func=remove_partitions_command)

    tiering = sub.add_parser(
        "tiering",
        help="turn tiered storage off (KIP-950) or on for a topic",
        description="What the topic_disablement DAG does, synchronously. disable moves the "
        "topic ENABLED -> DISABLING -> DISABLED: with --policy retain the remote data stays "
        "readable until retention expires it; with --policy delete it is deleted now (needs "
        "--yes). Rerunning an interrupted disable with the same policy finishes it.",
    )
    actions = tiering.add_subparsers(dest="tiering_command", required=True, metavar="ACTION")
    disable = actions.add_parser("disable", help="turn tiered storage off")
    disable.add_argument("topic")
    disable.add_argument(
        "--policy",
        choices=("retain", "delete"),
        default="retain",
        help="remote.log.disable.policy [retain]",
    )
    disable.add_argument("--yes", action="store_true", help="required with --policy delete")
    disable.set_defaults(func=tiering_command, action="disable")
    enable = actions.add_parser("enable", help="turn tiered storage on again")
    enable.add_argument("topic")
    enable.set_defaults(func=tiering_command, action="enable", policy="retain", yes=True)


def delete_topic_command(args: argparse.Namespace) -> int:
    store = open_store(Settings.from_env())
    try:
        if args.yes:
            result = delete_topic(
                store, args.topic, topic_id=args.topic_id, actor=_actor(), now_ms=wall_clock_ms()
            )
        else:
            result = plan_topic_deletion(store, args.topic, topic_id=args.topic_id)
    except ERRORS as exc:
        raise CommandError(str(exc)) from exc
    if args.json:
        print(json.dumps(result.as_dict(), indent=2))
        return 0
    _print_deletion(result, acted=args.yes)
    return 0


def _print_deletion(result: TopicDeletion, *, acted: bool) -> None:
    what = (
        f"{result.topic} ({result.topic_id}): partitions {result.partitions}, "
        f"{result.remote_segments} remote segment(s), {result.remote_bytes:,} bytes"
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
    try:
        reports = remove_marked_partitions(
            store,
            open_storage(settings),
            open_objects(settings),
            prefix=settings.storage_prefix,
            actor=_actor(),
        )
    except PartitionRemovalError as exc:
        raise CommandError(str(exc)) from exc
    segments = sum(len(r.deleted) for r in reports)
    console.print(f"removed {len(reports)} partition(s), {segments} segment(s) deleted")
    return 0


def tiering_command(args: argparse.Namespace) -> int:
    if args.action == "disable" and args.policy == "delete" and not args.yes:
        raise CommandError(
            f"disabling {args.topic} with policy delete deletes all its remote data and moves "
            "its log start offset to the local log start; add --yes to go ahead"
        )
    settings = Settings.from_env()
    actor = _actor()
    try:
        outcome = apply_request(
            args.topic, args.action, args.policy, actor=actor, settings=settings
        )
        if args.action == "disable":
            outcome = complete_request(args.topic, actor=actor, settings=settings)
    except ERRORS as exc:
        raise CommandError(str(exc)) from exc
    console.print(
        f"{outcome['topic']}: tiered state {outcome['state']} "
        f"(policy {outcome['policy']}, tiered epoch {outcome.get('tiered_epoch', '-')})"
    )
    return 0
