"""``tierflow compact``: the README's dry run, a run, its JSON, and a second run finding only
segments after a transaction still open at the end of the tiered log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.compaction_data import CHANGELOG, tier_uncleaned
from tests.support.settings_env import use_settings
from tests.support.tiered import build_tiered
from tierflow.cli import main
from tierflow.metadata.states import RemoteLogSegmentState as S


def test_dry_run_then_run_then_nothing_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    configs = {"changelog": {"cleanup_policy": "compact", "segment_bytes": 1 << 17}}
    t = build_tiered(tmp_path, topics=(CHANGELOG,), topic_configs=configs)
    tier_uncleaned(t)
    use_settings(monkeypatch, t.settings)
    topic_id = t.store.topic("changelog").topic_id
    sources = t.store.segments(topic_id, 0, states=[S.COPY_SEGMENT_FINISHED])

    assert main(["compact", "--dry-run"]) == 0  # as the README shows it
    out = capsys.readouterr().out
    assert "changelog-0: would compact 3 groups: 0-1576" in out, out
    assert t.store.segments(topic_id, 0, states=[S.COPY_SEGMENT_FINISHED]) == sources

    assert main(["compact", "--json"]) == 0
    (report,) = json.loads(capsys.readouterr().out)["partitions"]
    assert len(report["replaced"]) == 5 and len(report["written"]) == 3
    assert report["reclaimed_bytes"] > 0 and report["reason"].startswith("dirty ratio 1.00")

    assert main(["compact"]) == 0
    out = capsys.readouterr().out
    assert "changelog-0: skipped, the dirty segments wait for the marker of a transaction" in out
