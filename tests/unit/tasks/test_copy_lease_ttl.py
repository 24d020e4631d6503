"""The segment_copy pipeline takes its partition leases for TIERFLOW_COPY_LEASE_TTL_S, as the
CLI's copy does, rather than a TTL written into the DAG."""

from __future__ import annotations

import time
from pathlib import Path

from tests.support.tiered import build_tiered
from tierflow.tasks import staged
from tierflow.tasks.segment_copy import COPY

TTL_S = 7
REPO = Path(__file__).resolve().parents[3]


def test_prepare_takes_the_lease_for_the_configured_ttl(tmp_path: Path) -> None:
    t = build_tiered(tmp_path, copy_lease_ttl_s=TTL_S)
    op = COPY
    shards = staged.plan_shards(op, {}, t.settings)
    before_ms = int(time.time() * 1000)
    for shard in shards:
        staged.prepare_shard(op, shard, params={}, run_key="ttl", settings=t.settings)
    after_ms = int(time.time() * 1000)

    leased = [p for p in t.store.partitions() if p.lease_owner]
    assert leased, "prepare holds each partition's lease until finalize"
    for p in leased:
        assert p.lease_expires_ms is not None
        assert before_ms + TTL_S * 1000 <= p.lease_expires_ms <= after_ms + TTL_S * 1000 + 1, p


def test_the_dag_passes_no_lease_ttl_of_its_own() -> None:
    """Checked on the source: importing the DAG needs Airflow, which the unit lane has not."""
    source = (REPO / "dags" / "segment_copy.py").read_text()
    assert "lease_ttl_s" not in source and "LEASE_TTL_S =" not in source
