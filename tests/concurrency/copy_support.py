"""The two copies that overlap: the segment_copy DAG's task bodies, and ``tierflow copy``.

Both run in their own process against one store, bucket and log dir. The DAG run's lease owner
is the same for every run of the DAG (``copy_owner``: a cleared or later run takes a killed
run's lease over at once); the CLI's is its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.chaos.invariants import PartitionKey, PristinePartition, read_pristine
from tests.concurrency import checks
from tests.concurrency.runs import Run, start
from tests.support.tiered import Tiered

SCHEDULED = ("copy-dag", "scheduled__2026-05-01T00:05:00+00:00")
BACKFILL = ("copy-dag", "backfill__2026-05-01T00:00:00+00:00")
MANUAL_CLI = ("copy-cli", "cli:on-call")
BUSY = "copy lease held by"


def from_scratch(_t: Tiered) -> None:
    """Copy starts from the bare log dir: nothing tiered yet."""


@dataclass
class Overlap:
    """A scenario's state and its two runs."""

    t: Tiered
    work: Path
    pristine: dict[PartitionKey, PristinePartition]

    def start(self, name: str, run: tuple[str, str], *, gated: bool = True) -> Run:
        return start(self.t.settings, self.work, name, *run, gated=gated)


def overlap(t: Tiered, work: Path) -> Overlap:
    return Overlap(t, work, read_pristine(t.settings.log_dirs))


def assert_consistent(o: Overlap) -> None:
    """What any interleaving must leave: each eligible segment finished once, a valid history
    with no transition recorded twice, the bucket holding exactly the finished objects, and
    every offset readable locally and from the bucket alone."""
    checks.assert_each_transition_once(o.t.store)
    checks.assert_bucket_is_exactly_the_finished_objects(o.t)
    checks.assert_invariants(o.t, o.pristine)
    checks.assert_remote_readable(o.t, o.pristine)
    for log_ in o.t.logs():
        topic_id = o.t.store.topic(log_.topic).topic_id
        assert o.t.store.partition(topic_id, log_.partition).lease_owner is None


def cli_busy_partitions(run: Run) -> set[str]:
    """Partitions the CLI reported as held by another copy's lease."""
    return {
        line.removeprefix("tierflow: error: ").split(":", 1)[0].strip()
        for line in run.output().splitlines()
        if BUSY in line and ":" in line
    }
