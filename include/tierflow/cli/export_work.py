"""The work behind ``tierflow export``: kept apart from its command table so that pyiceberg
(0.6 s to import) loads only when an export command runs, not for every other command."""

from __future__ import annotations

import argparse

from pyiceberg.catalog import Catalog

from tierflow.cli.common import as_command_error, print_json
from tierflow.cli.progress import work_progress
from tierflow.cli.shared import console, print_rows, settings_from_env
from tierflow.engine.worker import Worker
from tierflow.export.catalog import settings_target
from tierflow.export.run import ExportError, ExportReport, dry_run, export_topic, exported_topics
from tierflow.export.status import PartitionLag, export_lags
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.metadata.errors import UnknownTopicError
from tierflow.metadata.models import Topic
from tierflow.metadata.store import MetadataStore
from tierflow.runtime import open_objects, open_store
from tierflow.units import counted, human_bytes


def export_iceberg(args: argparse.Namespace) -> int:
    settings = settings_from_env()
    store = open_store(settings)
    with as_command_error(UnknownTopicError, ValueError, ExportError):
        topics = exported_topics(store, args.topic)
        target = settings_target(settings, open_objects(settings))
        if args.dry_run:
            return _dry_run(store, target.catalog, topics, args.json)
        run = args.run or f"cli-{wall_clock_ms()}"
        worker = Worker.here(settings)
        with work_progress("export", enabled=not args.json) as progress:
            reports = [
                export_topic(
                    store, worker, target, t, run=run, progress=progress, workers=args.workers
                )
                for t in topics
            ]
    print_rows(args.json, reports, _describe, key="topics", run=run)
    return 0


def _describe(report: ExportReport) -> str:
    if report.committed_before:
        return f"{report.topic}: run {report.run} was committed before; nothing to do"
    if not report.committed:
        return f"{report.topic}: nothing new to export into {report.table}"
    ranges = ", ".join(
        f"{p['partition']}: {p['first_offset']}-{p['next_offset'] - 1}"
        for p in report.partitions
        if p["next_offset"] > p["first_offset"]
    )
    unparsed = f"; {report.json_failures} values not JSON" if report.json_failures else ""
    return f"{report.topic}: {report.records} records into {report.table} ({ranges}){unparsed}"


def _lag_line(lag: PartitionLag) -> str:
    return (
        f"{lag.topic}-{lag.partition}: exported to {lag.exported_end_offset} of "
        f"{lag.remote_end_offset}, export lag {lag.lag_offsets} offsets "
        f"({human_bytes(lag.lag_bytes)})"
    )


def _dry_run(store: MetadataStore, catalog: Catalog, topics: list[Topic], as_json: bool) -> int:
    plans = dry_run(store, catalog, topics)
    if as_json:
        print_json({"dry_run": True, "partitions": plans})
        return 0
    for p in plans:
        console.print(
            f"{p['topic']}-{p['partition']}: would export from offset {p['from']}, "
            f"{counted(p['segments'], 'segment')} ({human_bytes(p['size_in_bytes'])})",
            highlight=False,
        )
    return 0


def export_status(args: argparse.Namespace) -> int:
    settings = settings_from_env()
    store = open_store(settings)
    with as_command_error(UnknownTopicError):
        lags = export_lags(store, exported_topics(store, args.topic))
    print_rows(args.json, lags, _lag_line)
    return 0
