"""``tierflow copy --dry-run`` says when an open transaction keeps segments local."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.settings_env import use_settings
from tests.support.tiered import build_tiered
from tierflow.cli import main
from tierflow.kafka.last_stable_offset import last_stable_offset


def test_dry_run_names_the_open_transaction_holding_copying_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    t = build_tiered(tmp_path)
    use_settings(monkeypatch, t.settings)
    lagging = t.log("orders", 1)  # the generator lags its HW inside an open transaction
    stable = last_stable_offset(lagging, lagging.high_watermark())
    assert stable.held_back

    assert main(["copy", "--topic", "orders", "--dry-run"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert (
        f"orders-1: last stable offset {stable.offset} is below the high watermark "
        f"{lagging.high_watermark()}: producer {stable.open_transaction_producer}'s transaction "
        "is still open, later segments stay local"
    ) in text, text
    assert "orders-0: last stable offset" not in text
