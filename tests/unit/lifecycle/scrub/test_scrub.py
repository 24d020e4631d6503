"""The scrubber re-reads tiered segments within its budget and names each damaged object.

The damage is done to the bucket's files by hand, as a misfiring lifecycle rule or a bad disk
would: a flipped byte, a truncated or deleted object, two segments' logs swapped. The oracle is
the damage itself (which key was touched), not the scrubber's own reading.
"""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

import pytest

from tests.support.tiered import Tiered, build_tiered
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.lifecycle.scrub.run import ScrubReport, ScrubRun, scrub
from tierflow.metadata.events import EventEntity

LAYOUTS = ("plain", "chunked-encrypted")
BIG = 1 << 40


def tiered(tmp_path: Path, layout: str) -> Tiered:
    t = build_tiered(tmp_path, layout=layout)
    for log_ in t.logs():
        copy_partition(log_, t.store, t.rsm, owner="test")
    return t


def run(t: Tiered, budget: int = BIG, clock: itertools.count | None = None) -> ScrubReport:
    ticks = clock or itertools.count(1_000)
    return scrub(t.store, t.rsm, ScrubRun(budget, actor="test", clock_ms=lambda: next(ticks)))


def finished(t: Tiered) -> list[str]:
    return [r.segment_id for r in t.store.scrub_queue(limit=10_000)]


def object_file(t: Tiered, segment_id: str, kind: str) -> Path:
    """The bucket file of one of the segment's objects (kind: the store's object kind)."""
    (key,) = [o.key for o in t.store.segment_objects(segment_id) if o.kind == kind]
    return t.bucket() / key


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_sound_bucket_passes_and_one_run_checks_every_segment_once(
    tmp_path: Path, layout: str
) -> None:
    t = tiered(tmp_path, layout)
    every = finished(t)
    assert len(every) >= 5
    report = run(t)
    assert sorted(s.segment_id for s in report.segments) == sorted(every)
    assert report.findings == []
    assert t.store.open_findings() == []
    assert t.store.events(entity=EventEntity.SCRUB.value) == [], "a pass that changes nothing"


def flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x5A
    path.write_bytes(bytes(data))


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


# The object each damage is done to: the log, or (for a deletion) the object a reader needs
# first besides it: the offset index in the plain layout, the manifest in Aiven's.
DAMAGE = {
    "flipped byte": ("log", flip),
    "truncated": ("log", truncate),
    "deleted": ("second", Path.unlink),
}
SECOND = {"plain": "index", "chunked-encrypted": "rsm-manifest"}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_each_damaged_object_is_found_and_named(tmp_path: Path, layout: str, damage: str) -> None:
    t = tiered(tmp_path, layout)
    victim = finished(t)[2]
    kind, harm = DAMAGE[damage]
    path = object_file(t, victim, SECOND[layout] if kind == "second" else kind)
    harm(path)
    report = run(t)
    assert [(f.segment_id, f.finding.key) for f in report.findings] == [
        (victim, str(path.relative_to(t.bucket())))
    ]
    assert len(report.segments) == len(finished(t)), "the others are still checked"
    (open_,) = t.store.open_findings()
    assert (open_.segment_id, open_.finding_key) == (victim, report.findings[0].finding.key)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_two_segments_logs_swapped_are_both_found(tmp_path: Path, layout: str) -> None:
    t = tiered(tmp_path, layout)
    first, second = finished(t)[:2]
    a, b = object_file(t, first, "log"), object_file(t, second, "log")
    data_a, data_b = a.read_bytes(), b.read_bytes()
    a.write_bytes(data_b)
    b.write_bytes(data_a)
    found = {f.segment_id: f.finding.key for f in run(t).findings}
    assert found == {
        first: str(a.relative_to(t.bucket())),
        second: str(b.relative_to(t.bucket())),
    }


def test_a_key_ring_that_cannot_open_the_chunks_is_a_finding(tmp_path: Path) -> None:
    from tierflow.transform.keyring import KeyRing

    t = tiered(tmp_path, "chunked-encrypted")
    ring = t.settings.storage.keyring
    KeyRing.generate(tmp_path / "other-keys", "tierflow-test-1").save(ring)
    t = Tiered(t.settings, t.store, _storage(t), t.layout)
    report = run(t)
    assert len(report.findings) == len(report.segments) > 0, "every object's sha256 holds"


def _storage(t: Tiered):
    from tierflow.runtime import open_storage

    return open_storage(t.settings)


def test_the_budget_holds_and_the_next_run_goes_on_where_it_stopped(tmp_path: Path) -> None:
    t = tiered(tmp_path, "plain")
    every = finished(t)
    sizes = {s: sum(o.size for o in t.store.segment_objects(s)) for s in every}
    budget = max(sizes.values()) * 2
    clock, seen = itertools.count(1_000), []
    while len(seen) < len(every):
        report = run(t, budget, clock)
        assert report.checked_bytes <= budget
        assert report.segments, "every run checks something"
        seen += [s.segment_id for s in report.segments]
    first_pass = seen[: len(every)]
    assert sorted(first_pass) == sorted(every), "no segment twice before every one once"
    wrapped = seen[len(every) :]
    assert wrapped == first_pass[: len(wrapped)], "the next pass takes them in the same order"


def test_a_segment_larger_than_the_budget_is_still_checked(tmp_path: Path) -> None:
    t = tiered(tmp_path, "plain")
    assert len(run(t, budget=1).segments) == 1


def test_a_finding_stays_open_until_a_check_passes(tmp_path: Path) -> None:
    t = tiered(tmp_path, "plain")
    victim = finished(t)[0]
    path = object_file(t, victim, "log")
    good = path.read_bytes()
    flip(path)
    run(t)
    run(t)
    assert [f.segment_id for f in t.store.open_findings()] == [victim]
    path.write_bytes(good)
    run(t)
    assert t.store.open_findings() == []
    events = t.store.events(entity=EventEntity.SCRUB.value)
    assert [(e.segment_id, e.to_state) for e in events] == [
        (victim, "SCRUB_FINDING"),
        (victim, "SCRUB_PASSED"),
    ], "one event when the verdict changes, none per pass"
    assert events[0].details_dict["object"] == str(path.relative_to(t.bucket()))


class CountingReads:
    """The bucket read through, counting the bytes read of each key."""

    def __init__(self, objects) -> None:
        self.objects, self.read = objects, Counter[str]()

    def __getattr__(self, name: str):
        return getattr(self.objects, name)

    def read_range(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        data = self.objects.read_range(key, start, end)
        self.read[key] += len(data)
        return data

    def iter_chunks(self, key: str, chunk_size: int = 1 << 20):
        for chunk in self.objects.iter_chunks(key, chunk_size):
            self.read[key] += len(chunk)
            yield chunk


@pytest.mark.parametrize("layout", LAYOUTS)
def test_each_stored_byte_is_read_once(tmp_path: Path, layout: str) -> None:
    """The sha256 is taken from the decoding's own reads. Aiven's manifest is read twice: to
    decode, and again by the layout's own check; it is a few hundred bytes."""
    t = tiered(tmp_path, layout)
    counted: list[CountingReads] = []
    rsm = t.rsm.reading_through(
        lambda objects: counted.append(CountingReads(objects)) or counted[-1]
    )
    ticks = itertools.count(1_000)
    report = scrub(t.store, rsm, ScrubRun(BIG, actor="test", clock_ms=lambda: next(ticks)))
    assert report.findings == [] and len(report.segments) == len(finished(t))
    sizes = {o.key: o.size for s in finished(t) for o in t.store.segment_objects(s)}
    (reads,) = counted
    times = {key: reads.read[key] / size for key, size in sizes.items() if size}
    manifests = {key for key in times if key.endswith(".rsm-manifest")}
    assert {key: n for key, n in times.items() if key not in manifests} == dict.fromkeys(
        set(times) - manifests, 1.0
    )
    assert all(times[key] == 2.0 for key in manifests)
