"""The segment copy of every partition with its metadata on PostgreSQL instead of SQLite.

The lifecycle code is dialect-blind; this proves it on a real server: every eligible segment
ends COPY_SEGMENT_FINISHED with its objects recorded, reads back byte for byte, and a rerun
copies nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.tiered import LAYOUTS, Tiered, build_tiered, eligible
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.lifecycle.copy.verify import verify_partition
from tierflow.metadata.states import RemoteLogSegmentState as S


@pytest.fixture(params=sorted(LAYOUTS))
def tiered_pg(request: pytest.FixtureRequest, tmp_path: Path, postgres_url: str) -> Tiered:
    t = build_tiered(tmp_path, layout=request.param, db_url=postgres_url)
    request.addfinalizer(t.store.close)
    return t


def test_every_partition_copies_and_verifies_on_postgresql(tiered_pg: Tiered) -> None:
    assert tiered_pg.store.engine.dialect.name == "postgresql"
    for log_ in tiered_pg.logs():
        report = copy_partition(log_, tiered_pg.store, tiered_pg.rsm, owner="pg-test")
        topic = tiered_pg.store.topic(log_.topic)
        rows = tiered_pg.store.segments(topic.topic_id, log_.partition)

        assert [(r.start_offset, r.end_offset) for r in rows] == eligible(log_)
        assert [s.segment_id for s in report.copied] == [r.segment_id for r in rows]
        assert {r.state for r in rows} == {S.COPY_SEGMENT_FINISHED}
        assert all(tiered_pg.store.segment_objects(r.segment_id) for r in rows)
        state = tiered_pg.store.partition(topic.topic_id, log_.partition)
        assert state.highest_remote_offset == eligible(log_)[-1][1]
        assert state.lease_owner is None
        checks = verify_partition(log_, topic, tiered_pg.store, tiered_pg.rsm)
        assert [c.segment_id for c in checks] == [r.segment_id for r in rows]
        assert all(c.identical for c in checks), [c.detail for c in checks]

        again = copy_partition(log_, tiered_pg.store, tiered_pg.rsm, owner="pg-test")
        assert again.copied == [] and again.cleaned_up == []
