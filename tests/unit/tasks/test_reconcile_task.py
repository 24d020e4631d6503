"""The remote_reconcile DAG's task bodies, called directly: JSON out, failures as exceptions."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from tests.reconcile.support import Planted, bucket_keys, build_planted
from tierflow.tasks.reconcile import (
    DataLossFoundError,
    check_data_loss,
    object_grace_ms,
    reconcile,
)


@pytest.fixture
def planted(tmp_path: Path) -> Planted:
    return build_planted(tmp_path)


def test_dry_run_returns_json_and_logs_every_finding(
    planted: Planted, caplog: pytest.LogCaptureFixture
) -> None:
    t = planted.t
    keys = bucket_keys(t)
    with caplog.at_level(logging.INFO, logger="tierflow.tasks.reconcile"):
        summary = reconcile(apply=False, grace_hours=None, settings=t.settings)
    assert json.loads(json.dumps(summary)) == summary
    assert summary["applied"] is False and summary["data_loss"] == 2
    assert bucket_keys(t) == keys
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 2 and all("COPY_SEGMENT_FINISHED" in e for e in errors)
    assert planted.old_orphan in caplog.text and "dry run" in caplog.text
    with pytest.raises(DataLossFoundError, match=planted.missing_key):
        check_data_loss(summary)


def test_apply_with_grace_zero(planted: Planted) -> None:
    t = planted.t
    summary = reconcile(apply=True, grace_hours=0, settings=t.settings)
    assert summary["report"]["results"]["fixed"] == 7
    assert not bucket_keys(t) & planted.orphans
    assert summary["remaining"] == 2


def test_grace_comes_from_the_dag_or_the_settings(tmp_path: Path) -> None:
    from tierflow.config import Settings

    settings = Settings.embedded(tmp_path, reconcile_grace_s=7200)
    assert object_grace_ms(settings, None) == 7_200_000
    assert object_grace_ms(settings, 0) == 0
    assert object_grace_ms(settings, 1.5) == 5_400_000
    with pytest.raises(ValueError, match="negative"):
        object_grace_ms(settings, -1)


def test_no_data_loss_passes_the_check() -> None:
    check_data_loss({"data_loss": 0, "findings": []})
