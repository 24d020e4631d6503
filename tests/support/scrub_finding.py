"""A real open scrub finding, made as a misfiring lifecycle rule or a bad disk would: every
partition tiered, one byte flipped in a segment's log in the bucket, then a scrub run that
finds it. The surfaces that show findings (the page, ``tierflow status``, the metrics) are
tested on it; ``heal`` puts the byte back so that the next scrub closes the finding."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

from tests.support.tiered import NOW_MS, Tiered
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.lifecycle.scrub.run import ScrubReport, ScrubRun, scrub
from tierflow.metadata.models import RemoteLogSegment

BIG = 1 << 40  # a budget that checks every segment


@dataclass(frozen=True)
class Damaged:
    segment: RemoteLogSegment
    key: str  # the log object's key, as the finding names it
    what: str  # what the scrubber found wrong with it
    path: Path  # its file in the bucket
    original: bytes


def tier_everything(t: Tiered) -> None:
    for log_ in t.logs():
        copy_partition(log_, t.store, t.rsm, owner="test")


def run_scrub(t: Tiered, start_ms: int = NOW_MS) -> ScrubReport:
    """Check every finished segment, each verdict at its own time from ``start_ms``."""
    ticks = itertools.count(start_ms, 1000)
    return scrub(t.store, t.rsm, ScrubRun(BIG, actor="test", clock_ms=lambda: next(ticks)))


def damage_and_scrub(t: Tiered, topic: str = "orders", partition: int = 1) -> Damaged:
    """Flip a byte of the first finished segment's log of the partition, then scrub: exactly
    that segment has an open finding, naming that key."""
    topic_id = t.store.topic(topic).topic_id
    segment = next(
        s
        for s in t.store.scrub_queue(limit=10_000)
        if (s.topic_id, s.partition) == (topic_id, partition)
    )
    (key,) = [o.key for o in t.store.segment_objects(segment.segment_id) if o.kind == "log"]
    path = t.bucket() / key
    original = path.read_bytes()
    flip_log_object(t, segment.segment_id)
    (found,) = run_scrub(t).findings
    assert found.finding is not None and found.segment_id == segment.segment_id
    assert found.finding.key == key
    return Damaged(segment, key, found.finding.what, path, original)


def heal(damaged: Damaged) -> None:
    damaged.path.write_bytes(damaged.original)


def flip_log_object(t: Tiered, segment_id: str) -> Path:
    """Flip a byte in the middle of the segment's log object in a local bucket; its file."""
    (key,) = [o.key for o in t.store.segment_objects(segment_id) if o.kind == "log"]
    path = t.bucket() / key
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x5A
    path.write_bytes(bytes(data))
    return path


def local_file(t: Tiered, row: RemoteLogSegment) -> Path:
    """The broker's ``.log`` a (whole, unsliced) segment was copied from: a repair's oracle."""
    topic = t.store.topic_by_id(row.topic_id)
    (segment,) = [
        s for s in t.log(topic.name, row.partition).segments() if s.base_offset == row.start_offset
    ]
    return segment.log_path
