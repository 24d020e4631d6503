"""The work behind ``tierflow restore`` (its options are in ``restore_commands``): imported
when it runs."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from tierflow.cli.common import CommandError, as_command_error, cli_actor
from tierflow.cli.console import airflow_logging_to_stderr
from tierflow.cli.progress import work_progress
from tierflow.cli.shared import print_rows, settings_from_env
from tierflow.config import Settings
from tierflow.kafka.errors import ClusterMetadataError
from tierflow.kafka.log_dir import LogDir
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.metadata.errors import UnknownTopicError
from tierflow.metadata.store import MetadataStore
from tierflow.restore.aux_state import AuxStateReport, restore_aux_state
from tierflow.restore.plan import RestoreError
from tierflow.restore.request import (
    RestoreRequest,
    SegmentWriter,
    remote_bytes,
    remote_partitions,
    run_restore,
)
from tierflow.rsm import RemoteStorageManager
from tierflow.runtime import open_storage, open_store
from tierflow.storage.keys import InvalidTopicNameError
from tierflow.tasks.restore import restore_on_cores, restore_on_spark
from tierflow.tasks.spark_submit import SparkJobFailedError


def restore(args: argparse.Namespace) -> int:
    refuse_negative(args)
    settings = settings_from_env()
    store, rsm = open_store(settings), open_storage(settings)
    if args.aux_state_only:
        return restore_aux(store, rsm, args)
    errors = (RestoreError, UnknownTopicError, InvalidTopicNameError, ClusterMetadataError)
    with as_command_error(*errors):
        partitions = args.partition or remote_partitions(store, args.topic)
        total = remote_bytes(store, args.topic, partitions)
        enabled = not (args.json or args.dry_run)
        with work_progress("restore", bytes=total, enabled=enabled) as progress:
            request = RestoreRequest(
                topic=args.topic,
                to=Path(args.to),
                partitions=tuple(partitions),
                to_offset=args.to_offset,
                to_timestamp=args.to_timestamp,
                as_topic=args.as_topic,
                bootstrap=settings.cluster.bootstrap_servers,
                dry_run=args.dry_run,
                actor=cli_actor(),
                progress=progress,
            )
            writer = _writer(settings, args, total)
            with as_command_error(SparkJobFailedError):
                reports = run_restore(store, rsm, request, writer)
    print_rows(args.json, reports, lambda report: report.describe(), dry_run=args.dry_run)
    return 0


def refuse_negative(args: argparse.Namespace) -> None:
    """Offsets, times and partition numbers are never negative: say so, naming the option,
    before anything is looked up."""
    given = [("--to-offset", args.to_offset), ("--to-timestamp", args.to_timestamp)]
    given += [("--partition", partition) for partition in args.partition or ()]
    for option, value in given:
        if value is not None and value < 0:
            raise CommandError(f"{option} {value}: must not be negative")


def restore_aux(store: MetadataStore, rsm: RemoteStorageManager, args: argparse.Namespace) -> int:
    """--aux-state-only: the replica's partitions under --to get their snapshot and epochs."""
    with as_command_error(RestoreError, UnknownTopicError):
        logs = [log_ for log_ in LogDir(Path(args.to)).partitions() if log_.topic == args.topic]
        logs = [log_ for log_ in logs if not args.partition or log_.partition in args.partition]
        if not logs:
            raise RestoreError(f"{args.to}: no partition of {args.topic} to rebuild")
        reports = [restore_aux_state(store, rsm, log_) for log_ in logs]
    print_rows(args.json, reports, _aux_line)
    return 0


def _aux_line(r: AuxStateReport) -> str:
    return (
        f"{r.partition}: rebuilt from offset {r.local_start_offset}: {r.producer_snapshot}, "
        f"{r.leader_epochs} leader epochs"
    )


def _writer(settings: Settings, args: argparse.Namespace, total: int) -> SegmentWriter | None:
    """Spark with --spark, or at TIERFLOW_SPARK_THRESHOLD_BYTES unless --no-spark; else the
    engine's pool here (every core for a big enough batch); None for a dry run."""
    if args.dry_run:
        return None
    big = total >= settings.spark.threshold_bytes
    if not (args.spark or (big and not args.no_spark)):
        return restore_on_cores(settings, args.workers)
    airflow_logging_to_stderr(args.verbose)  # the Spark hook imports Airflow
    return restore_on_spark(settings, run_key=f"cli-{os.getpid()}-{wall_clock_ms()}")
