"""Copying a compacted topic (cleanup.policy=compact) with the broker's log cleaner at work.

A generated changelog (a few hundred keys, one record in ten a tombstone) is cleaned by the
test cleaner (``tests/support/log_cleaner.py``, Kafka's pass reduced): only what a pass has
cleaned is copied; offsets missing after compaction are carried exactly and a fetch at one
returns the next offset, as Kafka does; a later pass that merges copied segments with uncopied
ones makes the copy take only the merged segment's tail (a slice); nothing is copied while a
pass is swapping segments in; and files replaced while an upload reads them fail that upload,
which a rerun copies again.
"""

from __future__ import annotations

from functools import partial
from itertools import pairwise
from pathlib import Path

import pytest
from kafka.record.default_records import DefaultRecordBatch

from tests.support.compacted_copy import (
    CHANGELOG,
    bases,
    copy,
    finished_changelog_ranges,
    merge_across_the_boundary,
)
from tests.support.log_cleaner import clean_partition
from tests.support.tiered import Tiered, build_tiered
from tierflow.kafka.record_batch import iter_batches
from tierflow.lifecycle.copy.candidates import copy_backlog_bytes
from tierflow.lifecycle.copy.verify import verify_partition
from tierflow.read.fetch import FetchRequest, fetch_remote
from tierflow.restore.request import restore_partition
from tierflow.transform import segment_files


@pytest.fixture
def t(tmp_path: Path) -> Tiered:
    return build_tiered(
        tmp_path, topics=(CHANGELOG,), topic_configs={"changelog": {"cleanup_policy": "compact"}}
    )


def records(batches: list[bytes]) -> list[tuple[int, bytes, bytes | None, int, list]]:
    found = []
    for raw in batches:
        for r in DefaultRecordBatch(raw):
            found.append((r.offset, r.key, r.value, r.timestamp, list(r.headers)))
    return found


def remote_records(t: Tiered, end: int) -> list[tuple[int, bytes, bytes | None, int, list]]:
    found, offset = [], 0
    while offset < end:
        result = fetch_remote(
            t.store, t.rsm, FetchRequest("changelog", 0, offset=offset, max_bytes=1 << 20)
        )
        found += records(result.batches)
        offset = result.next_offset
    return found


def local_records(t: Tiered, end: int) -> list[tuple[int, bytes, bytes | None, int, list]]:
    found = []
    for segment in t.log("changelog", 0).segments():
        data = segment.log_path.read_bytes()
        for h in iter_batches(segment.log_path):
            found += records([data[h.position : h.position + h.size_in_bytes]])
    return [r for r in found if r[0] < end]


def latest_by_key(found: list[tuple]) -> dict[bytes, tuple]:
    return {r[1]: r for r in sorted(found)}


def test_only_cleaned_segments_are_copied_with_their_gaps(t: Tiered) -> None:
    first = bases(t)
    assert copy(t).copied == [] and finished_changelog_ranges(t) == []
    assert copy(t).waiting == f"offsets from {first[0]} wait for the log cleaner's next pass"
    clean_partition(t.log("changelog", 0).path, first_uncleanable=first[4])
    report = copy(t)
    assert finished_changelog_ranges(t) == [(first[i], first[i + 1] - 1) for i in range(4)]
    assert report.waiting == f"offsets from {first[4]} wait for the log cleaner's next pass"
    checks = verify_partition(t.log("changelog", 0), t.store.topic("changelog"), t.store, t.rsm)
    assert [c.identical for c in checks] == [True] * 4, checks
    remote = remote_records(t, first[4])
    assert remote == local_records(t, first[4]), "offsets, keys, values, headers, timestamps"
    offsets = [r[0] for r in remote]
    gap = next(o + 1 for o, after in pairwise(offsets) if after > o + 1)
    result = fetch_remote(t.store, t.rsm, FetchRequest("changelog", 0, offset=gap, max_bytes=1))
    assert records(result.batches)[-1][0] >= gap and gap not in offsets
    assert min(r[0] for r in records(result.batches) if r[0] >= gap) == min(
        o for o in offsets if o > gap
    ), "the next offset there is, as Kafka returns it"


def test_a_pass_merging_copied_and_uncopied_segments_is_copied_as_a_slice(t: Tiered) -> None:
    first = merge_across_the_boundary(t)
    copy(t)
    expected = [(first[i], first[i + 1] - 1) for i in range(4)]
    expected += [(first[4], first[5] - 1), (first[5], first[6] - 1)]
    assert finished_changelog_ranges(t) == expected, (
        "the merged segment's tail from the first uncopied offset"
    )
    checks = verify_partition(t.log("changelog", 0), t.store.topic("changelog"), t.store, t.rsm)
    merged = "the log cleaner has merged the local segment with others since the copy"
    assert [c.identical for c in checks] == [None, None, None, None, True, True], checks
    assert "cleaned the local segment again since the copy" in checks[0].detail
    assert checks[2].detail == merged
    remote, local = remote_records(t, first[6]), local_records(t, first[6])
    assert latest_by_key(remote) == latest_by_key(local), "one view of every key's latest"


def test_nothing_is_copied_while_a_pass_swaps_segments_in(t: Tiered) -> None:
    first = bases(t)
    path = t.log("changelog", 0).path
    clean_partition(path, first_uncleanable=first[2])
    swap = path / "00000000000000000000.log.swap"
    swap.write_bytes(b"")
    report = copy(t)
    assert report.copied == [] and report.waiting == f"the log cleaner is replacing {swap.name}"
    swap.unlink()
    assert len(copy(t).copied) == 2


def test_files_replaced_while_read_fail_the_upload_and_a_rerun_copies(
    t: Tiered, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = bases(t)
    path = t.log("changelog", 0).path
    clean_partition(path, first_uncleanable=first[1])
    real = segment_files.read_chunks

    def replaced_after_the_first_read(log_path: Path, size: int, start: int = 0):
        for number, chunk in enumerate(real(log_path, size, start)):
            if number == 0:
                copied = log_path.with_name("copy")
                copied.write_bytes(log_path.read_bytes())
                copied.replace(log_path)  # the same bytes, another file: as a swap does
            yield chunk

    monkeypatch.setattr(segment_files, "read_chunks", replaced_after_the_first_read)
    with pytest.raises(Exception, match="files were replaced while they were read"):
        copy(t)
    assert finished_changelog_ranges(t) == []
    monkeypatch.undo()
    copy(t)
    assert finished_changelog_ranges(t) == [(first[0], first[1] - 1)]


def test_a_restore_of_compacted_segments_and_a_slice_reads_as_the_remote_tier(
    t: Tiered, tmp_path: Path
) -> None:
    """The restore (tierflow.restore) takes a slice like any segment: named by its start
    offset, its records exactly the remote tier's, gaps and all."""
    first = merge_across_the_boundary(t)
    copy(t)
    target = tmp_path / "restored"
    restore_partition(t.store, t.rsm, topic="changelog", partition=0, log_dir=target)
    restored = sorted((target / "changelog-0").glob("*.log"))
    assert [int(p.stem) for p in restored] == first[:6], "the slice too, by its start offset"
    found = [r for p in restored for r in records(list(_batches(p)))]
    assert found == remote_records(t, first[6])


def _batches(log_path: Path) -> list[bytes]:
    data = log_path.read_bytes()
    return [data[h.position : h.position + h.size_in_bytes] for h in iter_batches(log_path)]


def test_the_planner_sees_only_what_the_cleaner_has_cleaned(t: Tiered) -> None:
    """The segment_copy plan's cheap look (no segment read) applies the cleaner's rules too, so
    an idle compacted partition costs no task."""
    log_ = t.log("changelog", 0)
    backlog = partial(copy_backlog_bytes, highest_remote_offset=-1, remote_log_start_offset=0)
    assert backlog(log_, compacted=True) == 0 < backlog(log_)
    first = bases(t)
    clean_partition(log_.path, first_uncleanable=first[2])
    sizes = [s.size_in_bytes() for s in t.log("changelog", 0).segments()]
    assert backlog(t.log("changelog", 0), compacted=True) == sum(sizes[:2])
    (log_.path / "00000000000000000000.log.cleaned").write_bytes(b"")
    assert backlog(t.log("changelog", 0), compacted=True) == 0
