"""``make demo``'s broker log dir, tiered by ``tierflow copy`` with the demo's settings (zstd +
AES-GCM chunks), every local partition directory deleted, and each topic restored by
``tierflow restore`` into the same log dir: the restored partitions are the broker's, byte for
byte, as kafka-python reads them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.demo_data import demo_copy
from tests.support.restored import assert_restored_as_written
from tests.support.settings_env import use_settings
from tierflow.cli import main
from tierflow.kafka.log_dir import LogDir
from tierflow.runtime import open_store, partition_logs

pytestmark = pytest.mark.slow


def test_the_demos_partitions_come_back_from_the_bucket(
    demo_log_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = demo_copy(demo_log_dir, tmp_path / "demo")
    log_dir, aside = settings.log_dirs[0], tmp_path / "deleted"
    use_settings(monkeypatch, settings)
    store = open_store(settings)
    logs = partition_logs(settings.log_dirs)
    assert main(["copy", "--owner", "test", "--no-spark"]) == 0
    aside.mkdir()
    for log_ in logs:
        shutil.move(log_.path, aside / log_.path.name)
    first, *others = sorted({log_.topic for log_ in logs})
    assert main(["restore", first, "--to", str(log_dir)]) == 0  # on Spark, as the demo's are
    for topic in others:  # here: a Spark start each is 15 s, and the same segments' work
        assert main(["restore", topic, "--to", str(log_dir), "--no-spark"]) == 0
    originals = LogDir(aside).partitions()
    assert len(originals) == len(logs) >= 3
    for original in originals:
        assert_restored_as_written(store, original, log_dir)
