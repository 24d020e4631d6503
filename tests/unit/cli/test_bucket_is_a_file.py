"""A local bucket path (TIERFLOW_REMOTE_STORAGE) that is a regular file is one clear line that
names it, not an errno."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.settings_env import use_settings
from tierflow.cli import main
from tierflow.config import Settings


@pytest.mark.parametrize("inside", [False, True], ids=["the-file", "below-the-file"])
def test_copy_names_the_bucket_path_that_is_a_file(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    inside: bool,
) -> None:
    a_file = tmp_path / "bucket"
    a_file.write_text("not a directory")
    bucket = a_file / "tiered" if inside else a_file
    (tmp_path / "kafka-logs").mkdir()
    use_settings(monkeypatch, Settings.embedded(tmp_path, remote_storage=str(bucket)))

    code = main(["copy"])

    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert code != 0
    assert len(lines) == 1, captured.err
    assert "Traceback" not in captured.err and "Errno" not in captured.err
    assert str(bucket) in lines[0] and "TIERFLOW_REMOTE_STORAGE" in lines[0]
    assert f"{a_file} is not a directory" in lines[0], lines[0]
