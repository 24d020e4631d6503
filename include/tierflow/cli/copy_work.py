"""The work behind ``tierflow copy`` and ``tierflow verify`` (their options are in
``copy_commands``): imported when one of them runs."""

from __future__ import annotations

import argparse
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from tierflow.cli.common import (
    NotFoundError,
    as_command_error,
    cli_actor,
    partition_failed,
    print_json,
)
from tierflow.cli.console import airflow_logging_to_stderr
from tierflow.cli.progress import WorkProgress, work_progress
from tierflow.cli.report import partition_figures, partition_table
from tierflow.cli.selection import NothingSelectedError, select_leaders
from tierflow.cli.shared import console, leader_partition_logs, settings_from_env
from tierflow.cluster.unread import UnreadPartition, why_unread
from tierflow.config import Settings
from tierflow.engine.worker import Worker
from tierflow.kafka.log_dir import PartitionLog
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.lifecycle.copy.batch import (
    BatchCopy,
    CopyOutcome,
    CopyPhases,
    Rewrite,
    copy_partitions,
)
from tierflow.lifecycle.copy.plan import CopiedSegment, PartitionCopyReport
from tierflow.lifecycle.copy.rewrite import RewriteJob, RewriteResult, rewrite_jobs
from tierflow.lifecycle.progress import Progress
from tierflow.metadata.errors import MetadataError, UnknownTopicError
from tierflow.metadata.lease_holder import LeaseHolder
from tierflow.metadata.store import MetadataStore
from tierflow.rsm import RemoteStorageManager
from tierflow.runtime import open_storage, open_store
from tierflow.tasks.spark_submit import SparkJobFailedError, rewrite_on_spark
from tierflow.units import counted, human_bytes, plural

if TYPE_CHECKING:  # verify reads batches with kafka-python, which a copy does not load
    from tierflow.lifecycle.copy.verify import SegmentCheck


@dataclass
class CopyRun:
    """Every partition the run looked at, in the order it did."""

    dry_run: bool
    outcomes: list[CopyOutcome] = field(default_factory=list)
    # Partitions of registered topics the filters match whose leader replica is not read.
    unread: list[UnreadPartition] = field(default_factory=list)
    # Each step's wall seconds: how long the batch spent outside the rewrite.
    phases: CopyPhases = field(default_factory=CopyPhases)

    def failed(self) -> list[CopyOutcome]:
        return [o for o in self.outcomes if o.error is not None]

    def as_dict(self) -> dict:
        return {
            "dry_run": self.dry_run,
            "partitions": [o.as_dict() for o in self.outcomes],
            "unread": [u.as_dict() for u in self.unread],
            "seconds": self.phases.as_dict(),
        }


def copy(args: argparse.Namespace) -> int:
    settings = settings_from_env()
    store, rsm = open_store(settings), open_storage(settings)
    try:
        selection = select_leaders(settings, args.topic, args.partition)
    except NothingSelectedError as exc:
        if args.json:
            exc.print_json()
        raise
    registered = {t.name for t in store.topics()}
    logs = selection.logs
    with work_progress("copy", enabled=not args.json) as progress:
        how = BatchCopy(
            owner=args.owner or cli_actor(),
            lease_ttl_s=settings.copy_lease_ttl_s,
            holder=LeaseHolder.this_process(),
            rewrite=_rewrite(settings, args),
            dry_run=args.dry_run,
            progress=progress,
            on_copied=None if args.json else _print_copied,
        )
        run = CopyRun(args.dry_run, copy_partitions(logs, store, rsm, how), phases=how.phases)
        if failed := run.failed():  # the lines below say why; "done" would say otherwise
            progress.ended(f"{counted(len(failed), 'partition')} failed")
    run.unread = [u for u in selection.unread if u.topic in registered]
    published = None if args.dry_run else _publish(settings)
    if args.json:
        print_json({**run.as_dict(), "published": published})
        return 1 if run.failed() or published == PUBLISH_FAILED else 0
    for outcome in run.outcomes:
        _print_outcome(outcome, args.dry_run)
    console.print(copy_summary(run))
    if isinstance(published, int):
        console.print(f"published {published} record(s) to __remote_log_metadata")
    return 1 if run.failed() or published == PUBLISH_FAILED else 0


PUBLISH_FAILED = "failed"


def _publish(settings: Settings) -> int | str | None:
    """With TIERFLOW_PUBLISH_REMOTE_LOG_METADATA on: the records published after the copy, or
    PUBLISH_FAILED (said on stderr: the next publish sends them, nothing is lost)."""
    if not settings.cluster.publish_remote_log_metadata:
        return None
    from tierflow.kafka.remote_log_metadata.topic import MetadataTopicError
    from tierflow.tasks.remote_log_metadata import publish_transitions

    try:
        return int(publish_transitions(settings)["published"])
    except (MetadataTopicError, MetadataError) as error:
        partition_failed("__remote_log_metadata", f"publishing: {error}; the next run sends it")
        return PUBLISH_FAILED


def _rewrite(settings: Settings, args: argparse.Namespace) -> Rewrite:
    """On Spark with --spark or at the DAG's threshold (TIERFLOW_SPARK_THRESHOLD_BYTES),
    otherwise on every core here (--workers); --no-spark keeps a big batch here too."""

    def rewrite(jobs: Sequence[RewriteJob], progress: Progress) -> Iterable[RewriteResult]:
        total = sum(job.size_in_bytes for job in jobs)
        big = bool(jobs) and total >= settings.spark.threshold_bytes
        if args.spark or (big and not args.no_spark):
            airflow_logging_to_stderr(args.verbose)  # the Spark hook imports Airflow
            run_key = f"cli-{os.getpid()}-{wall_clock_ms()}"
            with as_command_error(SparkJobFailedError):
                return rewrite_on_spark(jobs, settings, run_key=run_key, progress=progress)
        return rewrite_jobs(jobs, Worker.here(settings), workers=args.workers, progress=progress)

    return rewrite


def _print_copied(topic: str, partition: int, s: CopiedSegment) -> None:
    console.print(
        f"  {topic}-{partition}: copied offsets {s.start_offset}-{s.end_offset} "
        f"({human_bytes(s.size_in_bytes)}) as {s.segment_id}"
    )


def _print_outcome(outcome: CopyOutcome, dry_run: bool) -> None:
    label = f"{outcome.topic}-{outcome.partition}"
    report = outcome.report
    if report is not None:
        _print_report(label, report, dry_run)
    if outcome.error is not None:
        partition_failed(label, outcome.error)


def _print_report(label: str, report: PartitionCopyReport, dry_run: bool) -> None:
    if report.skipped:
        console.print(f"{label}: skipped ({report.skipped})")
    elif dry_run and report.pending:
        offsets = ", ".join(str(offset) for offset in report.pending)
        count = f"{_segments(len(report.pending))} ({human_bytes(report.pending_bytes)})"
        where = plural(len(report.pending), "base offset")
        console.print(f"{label}: would copy {count} at {where} {offsets}")
    if report.held_back:
        console.print(f"{label}: {report.held_back}, later segments stay local")
    if report.waiting:
        console.print(f"{label}: {report.waiting}")
    for segment_id in report.cleaned_up:
        console.print(f"{label}: removed abandoned attempt {segment_id}")


def copy_summary(run: CopyRun) -> str:
    """The run in one line: what was (or would be) copied, what was already remote, what
    failed. A run that found nothing to copy says so, rather than printing nothing."""
    reports = [o.report for o in run.outcomes if o.report is not None]
    copying = [r for r in reports if (r.pending if run.dry_run else r.copied)]
    segments = sum(len(r.pending if run.dry_run else r.copied) for r in copying)
    checked = f"{_partitions(len(run.outcomes))} of registered topics checked"
    if not run.outcomes:
        text = "nothing to copy: no partition in the log dirs belongs to a registered topic"
    elif not copying:
        text = _nothing_copied(run, checked)
    elif run.dry_run:
        size = human_bytes(sum(r.pending_bytes for r in copying))
        text = (
            f"would copy {_segments(segments)} ({size}) of {_partitions(len(copying))} ({checked})"
        )
    else:
        size = human_bytes(sum(o.copied_bytes for o in run.outcomes))
        text = f"copied {_segments(segments)} ({size}) of {_partitions(len(copying))} ({checked})"
    failed = run.failed()
    if failed:
        names = ", ".join(f"{o.topic}-{o.partition}" for o in failed)
        text += f"; {_partitions(len(failed))} failed: {names}"
    if run.unread:
        text += f"; not read: {why_unread(run.unread)}"
    return text + ("; dry run, nothing written" if run.dry_run else "")


def _nothing_copied(run: CopyRun, checked: str) -> str:
    """What a run that copied nothing found, each partition counted once: skipped (by why),
    failed (said after), the others already remote."""
    skipped = Counter(
        o.report.skipped for o in run.outcomes if o.report and o.report.skipped and not o.error
    )
    if not skipped and not run.failed():
        return f"nothing to copy: {checked}, every eligible segment is already remote"
    said = [f"{_partitions(n)} skipped ({why})" for why, n in skipped.items()]
    remote = len(run.outcomes) - sum(skipped.values()) - len(run.failed())
    if remote:
        said.append(f"every eligible segment of the other {remote} is already remote")
    prefix = "nothing to copy" if run.dry_run else "nothing copied"
    return f"{prefix}: {'; '.join(said)}" if said else prefix


def _segments(n: int) -> str:
    return counted(n, "segment")


def _partitions(n: int) -> str:
    return counted(n, "partition")


def verify(args: argparse.Namespace) -> int:
    settings = settings_from_env()
    store, rsm = open_store(settings), open_storage(settings)
    with work_progress("verify", enabled=not args.json) as progress:
        logs, checks = _verify_all(store, rsm, settings, args.topic, progress)
    figures = [partition_figures(store, log_, checks) for log_ in logs]
    bad = [c for c in checks if c.identical is False]
    if args.json:
        print_json(verify_report(figures, checks))
        return 1 if bad else 0
    console.print(partition_table(figures, title="Remote copies checked"))
    for check in bad:
        console.print(
            f"[red]{check.topic}-{check.partition} {check.segment_id}: {check.detail}",
            highlight=False,
        )
    console.print(verify_summary(checks))
    return 1 if bad else 0


def verify_report(figures: Sequence, checks: Sequence[SegmentCheck]) -> dict:
    """``--json``: the partitions' figures and every segment's check, exact."""
    return {
        "partitions": [f.as_dict() for f in figures],
        "segments": [asdict(c) for c in checks],
        "identical": sum(1 for c in checks if c.identical),
        "different": sum(1 for c in checks if c.identical is False),
        "local_copy_gone": sum(1 for c in checks if c.identical is None),
    }


def verify_summary(checks: Sequence[SegmentCheck]) -> str:
    identical = sum(1 for c in checks if c.identical)
    different = sum(1 for c in checks if c.identical is False)
    gone = sum(1 for c in checks if c.identical is None)
    text = f"{identical} of {_segments(len(checks))} read back identical to the local files"
    if different:
        text += f"; {different} different"
    if gone:
        text += f"; {gone} no longer local, nothing to compare with"
    return text


def _verify_all(
    store: MetadataStore,
    rsm: RemoteStorageManager,
    settings: Settings,
    topic_filter: str | None,
    progress: WorkProgress,
) -> tuple[list[PartitionLog], list[SegmentCheck]]:
    from tierflow.lifecycle.copy.verify import verify_partition

    logs, checks = [], []
    for log_ in leader_partition_logs(settings):
        if topic_filter and log_.topic != topic_filter:
            continue
        try:
            topic = store.topic(log_.topic)
        except UnknownTopicError:
            continue
        logs.append(log_)
        checks.extend(verify_partition(log_, topic, store, rsm, progress=progress))
    if topic_filter and not logs:
        store.topic(topic_filter)  # an unregistered topic: UnknownTopicError names it
        raise NotFoundError(
            f"topic {topic_filter!r}: no partition of it in the log dirs to verify against"
        )
    return logs, checks
