"""``make demo``'s broker log dir, tiered by ``tierflow copy`` with the demo's settings (zstd +
AES-GCM chunks), every local partition directory deleted, and each topic restored by
``tierflow restore`` into the same log dir: the restored partitions are the broker's, byte for
byte, as kafka-python reads them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.restore.test_restore_partition import assert_restored_as_written
from tests.support.settings_env import use_settings
from tierflow.cli import main
from tierflow.cli.demo import demo_settings
from tierflow.demo.broker import generate_log_dir
from tierflow.kafka.log_dir import LogDir
from tierflow.runtime import open_store, partition_logs


def test_the_demos_partitions_come_back_from_the_bucket(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = demo_settings(tmp_path / "demo")
    log_dir, aside = settings.log_dirs[0], tmp_path / "deleted"
    generate_log_dir(log_dir)
    use_settings(monkeypatch, settings)
    store = open_store(settings)
    logs = partition_logs(settings.log_dirs)
    for name, topic_id in sorted({(log_.topic, log_.topic_id()) for log_ in logs}):
        store.register_topic(name, topic_id, actor="test", now_ms=0, remote_storage_enable=True)
    assert main(["copy", "--owner", "test", "--no-spark"]) == 0
    aside.mkdir()
    for log_ in logs:
        shutil.move(log_.path, aside / log_.path.name)
    for topic in sorted({log_.topic for log_ in logs}):
        assert main(["restore", topic, "--to", str(log_dir)]) == 0
    originals = LogDir(aside).partitions()
    assert len(originals) == len(logs) >= 3
    for original in originals:
        assert_restored_as_written(store, original, log_dir)
