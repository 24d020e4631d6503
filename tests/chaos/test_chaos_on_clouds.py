"""The kill harness on the cloud buckets: the copy killed (a real SIGKILL) at its first, middle
and last kill point, remote retention at its first and last, with the bucket on S3
(moto_server), on GCS (gcp-storage-emulator) and on Azure (Azurite); the rerun, a reconcile
and the five invariants hold as on a local bucket (test_chaos.py covers every scenario and the
storage fault plans there)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.chaos.harness import KILL, UNINTERRUPTED, run_scenario
from tests.chaos.scenarios import scenario
from tests.support.object_backends import cloud_bucket_url

pytestmark = [pytest.mark.slow]

# Kill points sampled per scenario: the suite's time goes mostly to these runs.
SAMPLED = {"copy": 3, "remote-retention": 2}


@pytest.mark.parametrize("backend", ["s3", "gcs", "azure"])
@pytest.mark.parametrize("name", list(SAMPLED))
def test_sampled_kill_points_hold_every_invariant_on_a_cloud_bucket(
    tmp_path: Path, request: pytest.FixtureRequest, backend: str, name: str
) -> None:
    url = cloud_bucket_url(request, backend, "chaos")
    outcomes = run_scenario(
        scenario(name),
        "chunked-encrypted",
        tmp_path,
        sample_size=SAMPLED[name],
        bucket_url=url,
    )
    killed = [o for o in outcomes if o.point != UNINTERRUPTED]
    assert len(killed) == SAMPLED[name]
    assert all(o.killed and o.held(KILL) for o in killed)
    assert all(o.records_verified > 0 for o in outcomes)
    assert [(o.point, v) for o in outcomes for v in o.violations] == []
