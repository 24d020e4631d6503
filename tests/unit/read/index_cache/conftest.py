"""Tiered stores for the on-disk index cache, and a storage manager that can be made to fail.

``tiered``: the shared small store (orders has transaction indexes, payments has none).
``many``: one topic with 30 small segments, for load tests.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.tiered import NOW_MS, Tiered, build_tiered
from tierflow.config import Settings
from tierflow.demo.broker import generate_log_dir
from tierflow.demo.topics import TopicSpec
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.metadata.states import RemoteLogSegmentState
from tierflow.rsm import IndexType, RemoteSegment
from tierflow.runtime import open_storage, open_store, partition_logs
from tierflow.segment_refs import remote_segment


def tier_everything(t: Tiered) -> Tiered:
    for log_ in t.logs():
        copy_partition(log_, t.store, t.rsm, owner="test")
    return t


@pytest.fixture(scope="module")
def tiered(tmp_path_factory: pytest.TempPathFactory) -> Tiered:
    return tier_everything(build_tiered(tmp_path_factory.mktemp("tiered")))


@pytest.fixture
def fresh_tiered(tmp_path: Path) -> Tiered:
    return tier_everything(build_tiered(tmp_path / "store"))


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Tiered:
    base = tmp_path_factory.mktemp("many")
    settings = Settings.embedded(base, storage_layout="plain")
    generate_log_dir(
        settings.log_dirs[0],
        topics=(TopicSpec(name="clicks", partitions=3, segments=10),),
        seed=5,
        now_ms=NOW_MS,
        segment_bytes=16 * 1024,
        index_interval_bytes=512,
    )
    store = open_store(settings)
    for log_ in partition_logs(settings.log_dirs):
        store.register_topic(
            log_.topic, log_.topic_id(), actor="test", now_ms=NOW_MS, remote_storage_enable=True
        )
    return tier_everything(Tiered(settings, store, open_storage(settings), "plain"))


def refs(t: Tiered, topic: str | None = None) -> list[RemoteSegment]:
    """Every COPY_SEGMENT_FINISHED segment, as the read path names it."""
    found = []
    for row_topic in t.store.topics():
        if topic is not None and row_topic.name != topic:
            continue
        for part in t.store.partitions(row_topic.topic_id):
            rows = t.store.segments(
                row_topic.topic_id,
                part.partition,
                states=[RemoteLogSegmentState.COPY_SEGMENT_FINISHED],
            )
            found += [remote_segment(row_topic, row) for row in rows]
    return found


class FailingIndexes:
    """The real storage manager, except that chosen index fetches fail or come back cut short.

    A fault injection at the storage boundary: everything else is delegated unchanged.
    """

    def __init__(
        self, rsm, *, fail: set[IndexType] = frozenset(), cut: set[IndexType] = frozenset()
    ):
        self.rsm = rsm
        self.fail = set(fail)
        self.cut = set(cut)
        self.index_fetches: list[tuple[str, IndexType]] = []

    def fetch_index(self, segment: RemoteSegment, index_type: IndexType) -> bytes:
        self.index_fetches.append((segment.segment_id, index_type))
        if index_type in self.fail:
            raise OSError(f"injected failure fetching the {index_type.value} index")
        data = self.rsm.fetch_index(segment, index_type)
        return data[:-3] if index_type in self.cut and data else data

    def __getattr__(self, name: str):
        return getattr(self.rsm, name)
