"""The read path through the chunked storage manager: ranges map to chunks, bytes are counted
by the manager itself (``bytes_read``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.tiered import Tiered, build_tiered
from tests.unit.read.conftest import finished, local_batches
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.read.fetch import FetchRequest, fetch_remote
from tierflow.read.index_cache.memory import RemoteIndexCache

pytest.importorskip("tierflow.storage.chunked")
CHUNK = 4096


@pytest.fixture(scope="module")
def chunked(tmp_path_factory: pytest.TempPathFactory) -> Tiered:
    base: Path = tmp_path_factory.mktemp("chunked")
    t = build_tiered(base, storage_layout="chunked", chunk_size=CHUNK, compression=True)
    for log_ in t.logs():
        copy_partition(log_, t.store, t.rsm, owner="test")
    return t


def test_fetches_through_chunks_are_byte_identical_and_read_few_chunks(chunked: Tiered) -> None:
    cache = RemoteIndexCache()
    batches = local_batches(chunked, "orders", 0)
    first, second = finished(chunked, "orders", 0)[:2]
    in_second = [b for b in batches if second.start_offset <= b.header.base_offset]
    middle = in_second[len(in_second) // 3]
    result = fetch_remote(
        chunked.store,
        chunked.rsm,
        FetchRequest("orders", 0, offset=middle.header.last_offset, max_bytes=1),
        index_cache=cache,
    )
    assert result.batches == [middle.data]
    assert 0 < result.remote_bytes_read < second.segment_size_bytes / 3

    tail = [b for b in batches if first.start_offset <= b.header.base_offset <= first.end_offset]
    wanted = [b.data for b in tail[-2:] + in_second[:2]]
    across = fetch_remote(
        chunked.store,
        chunked.rsm,
        FetchRequest(
            "orders", 0, offset=tail[-2].header.base_offset, max_bytes=sum(map(len, wanted))
        ),
        index_cache=cache,
    )
    assert across.batches == wanted
    assert across.segments_read == [first.segment_id, second.segment_id]
