"""The whole copy on an S3 that misbehaves, through the fault proxy: transient faults are
absorbed by retries; a partial object fails its segment at verification, never reaches
COPY_SEGMENT_FINISHED, and the rerun ends exactly where an undisturbed copy would."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cloud_lifecycle import finished_keys
from tests.support.fault_proxy import FaultProxy, Rule, running_fault_proxy
from tests.support.moto_server import MotoServer
from tests.support.tiered import NOW_MS, Tiered, build_tiered, eligible
from tierflow.lifecycle.copy.plan import CopyFailedError
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.lifecycle.copy.verify import verify_partition
from tierflow.metadata.states import RemoteLogSegmentState as S


@pytest.fixture
def proxy(moto_server: MotoServer) -> Iterator[FaultProxy]:
    with running_fault_proxy(moto_server.endpoint) as running:
        yield running


@pytest.fixture
def tiered(
    tmp_path: Path,
    s3_bucket: str,
    proxy: FaultProxy,
    moto_server: MotoServer,
    monkeypatch: pytest.MonkeyPatch,
) -> Tiered:
    """aws_default points at the proxy; retries are quick, the read timeout short."""
    through_proxy = MotoServer(proxy.endpoint, moto_server.log).connection_env()
    for name, value in through_proxy.items():
        monkeypatch.setenv(name, value)
    return build_tiered(
        tmp_path,
        layout="chunked-encrypted",
        remote_storage=f"s3://{s3_bucket}/faulty",
        storage_retry_base_ms=1,
        storage_retry_max_ms=10,
        storage_timeout_s=1,
    )


def copy_each(t: Tiered) -> list[str]:
    """Copy every partition as the mapped tasks do; the failures, as messages."""
    failures = []
    for log_ in t.logs():
        try:
            copy_partition(log_, t.store, t.rsm, owner="copy", clock=lambda: NOW_MS)
        except CopyFailedError as exc:
            failures.append(str(exc))
    return failures


def assert_fully_tiered(t: Tiered) -> None:
    for log_ in t.logs():
        topic = t.store.topic(log_.topic)
        rows = t.store.segments(topic.topic_id, log_.partition)
        finished = [
            (r.start_offset, r.end_offset) for r in rows if r.state == S.COPY_SEGMENT_FINISHED
        ]
        assert finished == eligible(log_)
        # A failed attempt leaves only a tombstone: deleted through the regular transitions.
        assert {r.state for r in rows} <= {S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_FINISHED}
        checks = verify_partition(log_, topic, t.store, t.rsm)
        assert checks and all(c.identical for c in checks), checks
    assert set(t.rsm.objects.list()) == finished_keys(t)


def test_transient_faults_are_absorbed(tiered: Tiered, proxy: FaultProxy) -> None:
    proxy.add(Rule("status", method="PUT", status=503, code="SlowDown", times=3))
    proxy.add(Rule("reset", method="PUT", skip=4, times=2))
    proxy.add(Rule("status", method="HEAD", status=500, code="InternalError", times=2))
    proxy.add(Rule("stall", method="GET", seconds=1.5, then_close=True))
    proxy.add(Rule("truncate_download", method="GET", skip=2, times=2))
    assert copy_each(tiered) == []
    assert proxy.injected == {"status": 5, "reset": 2, "stall": 1, "truncate_download": 2}
    assert_fully_tiered(tiered)


def test_a_partial_object_never_reaches_finished_and_the_rerun_completes(
    tiered: Tiered, proxy: FaultProxy
) -> None:
    proxy.add(Rule("truncate_upload", method="PUT", skip=5))
    failures = copy_each(tiered)
    assert proxy.injected["truncate_upload"] == 1
    [failure] = failures
    assert "size" in failure and "uploaded" in failure and "faulty/" not in failure, failure
    # What did finish is whole: every FINISHED segment reads back byte-identical.
    for log_ in tiered.logs():
        checks = verify_partition(log_, tiered.store.topic(log_.topic), tiered.store, tiered.rsm)
        assert all(c.identical for c in checks), checks
    assert copy_each(tiered) == []  # the rerun, as a task clear
    assert_fully_tiered(tiered)
