"""The index_cache DAG run by Airflow itself: it warms the on-disk cache of remote indexes."""

from __future__ import annotations

from pathlib import Path

import pytest

from dev.airflow_local import run_dag_in_subprocess
from tests.support.tiered import build_tiered
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.metadata.states import RemoteLogSegmentState as S

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

PROJECT = Path(__file__).resolve().parents[2]


def test_dag_warms_the_newest_segments_of_every_partition(tmp_path: Path):
    t = build_tiered(tmp_path, layout="chunked-encrypted")
    finished = []
    for log_ in t.logs():
        copy_partition(log_, t.store, t.rsm, owner="test")
        rows = t.store.segments(
            t.store.topic(log_.topic).topic_id, log_.partition, states=[S.COPY_SEGMENT_FINISHED]
        )
        finished += rows[-3:]  # the DAG warms the newest three per partition
    state = run_dag_in_subprocess(
        "index_cache",
        project=PROJECT,
        airflow_home=tmp_path / "airflow",
        extra_env=t.settings.as_env(),
        log_file=tmp_path / "index_cache.log",
    )
    assert state == "success"
    cache = tmp_path / "remote-log-index-cache"
    names = {p.name for p in cache.iterdir()}
    for row in finished:
        for suffix in ("index", "timeindex", "txnindex"):
            assert f"{row.start_offset}_{row.segment_id}.{suffix}" in names
    assert not [n for n in names if n.endswith((".tmp", ".deleted"))]
