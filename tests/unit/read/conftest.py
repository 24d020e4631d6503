"""A generated broker log dir with every eligible segment tiered to a local bucket (plain RSM).

Read-only tests share one copy per module; tests that change metadata build their own.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.settings_env import use_settings
from tests.support.tiered import Tiered, build_tiered
from tierflow.cli.fetch_commands import register
from tierflow.kafka.record_batch import BatchHeader, iter_batches
from tierflow.kafka.segment import LogSegment
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.metadata.models import RemoteLogSegment
from tierflow.metadata.states import RemoteLogSegmentState
from tierflow.read.index_cache.memory import RemoteIndexCache


def tier_everything(base: Path) -> Tiered:
    tiered = build_tiered(base)
    for log_ in tiered.logs():
        copy_partition(log_, tiered.store, tiered.rsm, owner="test")
    return tiered


@pytest.fixture(scope="module")
def tiered(tmp_path_factory: pytest.TempPathFactory) -> Tiered:
    return tier_everything(tmp_path_factory.mktemp("tiered"))


@pytest.fixture
def fresh_tiered(tmp_path: Path) -> Tiered:
    return tier_everything(tmp_path)


@pytest.fixture
def cache() -> RemoteIndexCache:
    return RemoteIndexCache()


@dataclass(frozen=True)
class LocalBatch:
    header: BatchHeader
    data: bytes
    segment: LogSegment


def finished(t: Tiered, topic: str, partition: int) -> list[RemoteLogSegment]:
    topic_id = t.store.topic(topic).topic_id
    return t.store.segments(
        topic_id, partition, states=[RemoteLogSegmentState.COPY_SEGMENT_FINISHED]
    )


def local_batches(t: Tiered, topic: str, partition: int) -> list[LocalBatch]:
    """Every batch of the partition's local files, with its exact bytes."""
    found = []
    for segment in t.log(topic, partition).segments():
        raw = segment.log_path.read_bytes()
        for header in iter_batches(segment.log_path):
            found.append(LocalBatch(header, raw[header.position : header.end_position], segment))
    return found


def partitions(t: Tiered) -> list[tuple[str, int]]:
    return [(log_.topic, log_.partition) for log_ in t.logs()]


@pytest.fixture
def run_cli(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[..., tuple[int, str, str]]:
    """Run a command registered by fetch_commands against a Tiered's settings."""

    def run(t: Tiered, *argv: str) -> tuple[int, str, str]:
        use_settings(monkeypatch, t.settings)
        monkeypatch.setenv("TIERFLOW_STORAGE_LAYOUT", "plain")
        parser = argparse.ArgumentParser()
        sub = parser.add_subparsers()
        register(sub)
        args = parser.parse_args(list(argv))
        capsys.readouterr()
        status = args.func(args)
        captured = capsys.readouterr()
        return status, captured.out, captured.err

    return run
