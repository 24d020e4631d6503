"""``tierflow restore`` refuses a negative offset, time or partition with one line naming the
option and exit 2, before it looks anything up: a tiered topic's restore ``--to-offset -5``
once said "no segment in remote storage to restore"."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.tiered import Tiered
from tierflow.cli import main
from tierflow.cli.exit_codes import USAGE

BAD = [
    ("--to-offset", "-5"),
    ("--to-timestamp", "-1"),
    ("--partition", "-1"),
]


@pytest.mark.parametrize(("option", "value"), BAD, ids=[option for option, _ in BAD])
def test_a_negative_value_is_refused_naming_the_option(
    tiered: Tiered,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    option: str,
    value: str,
) -> None:
    for name, setting in tiered.settings.as_env().items():
        monkeypatch.setenv(name, setting)
    target = tmp_path / "restored"
    capsys.readouterr()
    assert main(["restore", "orders", "--to", str(target), option, value]) == USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"tierflow: error: {option} {value}: must not be negative"]
    assert not target.exists()
