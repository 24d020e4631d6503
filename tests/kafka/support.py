"""What the real-broker tests share: tierflow run as a person runs it, against a live broker,
and what they read back of the remote tier."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from dev.kafka_broker import KafkaCluster
from tierflow.config import Settings
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.runtime import open_store

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def settings_for(cluster: KafkaCluster, base: Path) -> Settings:
    node = cluster.nodes[0]
    return Settings.embedded(base, log_dirs=(node.log_dir,), kafka_bootstrap=node.bootstrap)


def tierflow(
    settings: Settings, *argv: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """``python -m tierflow.cli ARGV`` started on ``settings`` (``env`` on top), not waited for."""
    environ = {**os.environ, **settings.as_env(), "PYTHONPATH": str(PROJECT_ROOT), **(env or {})}
    command = [sys.executable, "-m", "tierflow.cli", *argv]
    return subprocess.Popen(
        command, env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def run(settings: Settings, *argv: str) -> subprocess.CompletedProcess[str]:
    process = tierflow(settings, *argv)
    out, err = process.communicate(timeout=300)
    return subprocess.CompletedProcess(argv, process.returncode, out, err)


def register(settings: Settings, topic: str) -> None:
    done = run(settings, "topics", "register", topic, "--config", "remote.storage.enable=true")
    assert done.returncode == 0, done.stderr


def finished_spans(settings: Settings, topic: str) -> list[tuple[int, int]]:
    store = open_store(settings)
    rows = store.segments(store.topic(topic).topic_id, 0, states=[S.COPY_SEGMENT_FINISHED])
    return [(r.start_offset, r.end_offset) for r in rows]


def live_rows(settings: Settings, topic: str) -> list[str]:
    store = open_store(settings)
    rows = store.segments(store.topic(topic).topic_id, 0)
    return [r.state for r in rows if r.state != S.DELETE_SEGMENT_FINISHED]


def assert_contiguous_from(spans: list[tuple[int, int]], first: int) -> None:
    """No gap and no offset twice: each segment starts right after the one before."""
    assert spans and spans[0][0] == first
    assert [start for start, _ in spans[1:]] == [end + 1 for _, end in spans[:-1]]
