"""``make demo``'s broker log dir, generated once per test session (it takes most of a minute:
every record is encoded) and copied for each test that changes it, with the demo's settings
(zstd + AES-GCM chunks) and every topic registered for tiering."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tierflow.cli.demo import demo_settings
from tierflow.config import Settings
from tierflow.demo.broker import generate_log_dir
from tierflow.runtime import open_store, partition_logs


@pytest.fixture(scope="session")
def demo_log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The generated log dir: read it, never change it (copy it with ``demo_copy``)."""
    log_dir = tmp_path_factory.mktemp("demo-log-dir") / "kafka-logs"
    generate_log_dir(log_dir)
    return log_dir


def demo_copy(demo_log_dir: Path, base: Path) -> Settings:
    """A private copy of the demo's log dir under ``base``, its topics registered."""
    settings = demo_settings(base)
    shutil.copytree(demo_log_dir, settings.log_dirs[0])
    store = open_store(settings)
    logs = partition_logs(settings.log_dirs)
    for name, topic_id in sorted({(log_.topic, log_.topic_id()) for log_ in logs}):
        store.register_topic(name, topic_id, actor="test", now_ms=0, remote_storage_enable=True)
    return settings
