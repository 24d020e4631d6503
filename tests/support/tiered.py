"""A small generated broker log dir with its store and bucket, ready to copy.

Shared by the lifecycle, crash and DAG tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.settings_env import use_settings
from tierflow.cli import main
from tierflow.config import Settings
from tierflow.demo.broker import generate_log_dir
from tierflow.demo.topics import TopicSpec
from tierflow.kafka.log_dir import PartitionLog
from tierflow.lifecycle.copy.candidates import candidate_segments
from tierflow.metadata.store import MetadataStore
from tierflow.rsm import RemoteStorageManager
from tierflow.runtime import open_storage, open_store, partition_logs
from tierflow.transform.keyring import KeyRing

TOPICS = (
    TopicSpec(name="orders", partitions=2, segments=3, transactional=True, lagging_partitions=(1,)),
    TopicSpec(name="payments", partitions=1, segments=2),
)
NOW_MS = 1_790_000_000_000


@dataclass
class Tiered:
    settings: Settings
    store: MetadataStore
    rsm: RemoteStorageManager
    layout: str

    def logs(self) -> list[PartitionLog]:
        return partition_logs(self.settings.log_dirs)

    def log(self, topic: str, partition: int) -> PartitionLog:
        return next(p for p in self.logs() if (p.topic, p.partition) == (topic, partition))

    def bucket(self) -> Path:
        return Path(self.settings.remote_storage)


# The storage layouts the lifecycle is tested on: plain objects, and Aiven's chunked layout
# with zstd and AES-GCM (small chunks, so segments span several).
LAYOUTS = {
    "plain": {"storage_layout": "plain"},
    "chunked-encrypted": {
        "storage_layout": "chunked",
        "chunk_size": 16 * 1024,
        "compression": True,
    },
}


def build_tiered(
    base: Path,
    *,
    enable: bool = True,
    layout: str = "plain",
    topics: tuple[TopicSpec, ...] = TOPICS,
    topic_configs: dict[str, dict[str, object]] | None = None,
    **settings_overrides: object,
) -> Tiered:
    """``topic_configs``: more register_topic fields by topic name (e.g. cleanup_policy)."""
    overrides = {**LAYOUTS[layout], **settings_overrides}
    if layout == "chunked-encrypted":
        overrides["keyring"] = KeyRing.generate(base / "keys", "tierflow-test-1").path
    settings = Settings.embedded(base, **overrides)
    generate_log_dir(settings.log_dirs[0], topics=topics, seed=11, now_ms=NOW_MS)
    store = open_store(settings)
    for log_ in partition_logs(settings.log_dirs):
        extra = (topic_configs or {}).get(log_.topic, {})
        store.register_topic(
            log_.topic,
            log_.topic_id(),
            actor="test",
            now_ms=NOW_MS,
            remote_storage_enable=enable,
            **extra,
        )
    rsm = open_storage(settings)
    return Tiered(settings, store, rsm, layout)


def eligible(log_: PartitionLog) -> list[tuple[int, int]]:
    """(start, end) of every segment a complete copy must have tiered, from the files alone."""
    found = candidate_segments(
        log_.segments(), from_offset=log_.log_start_offset(), upper_bound=log_.high_watermark()
    )
    return [(c.base_offset, c.end_offset) for c in found]


def copied_by_cli(base: Path, layout: str = "chunked-encrypted") -> Tiered:
    """A tiered world whose eligible segments ``tierflow copy`` has copied (in this process,
    its settings in the environment only meanwhile): the starting point of the restore and
    export tests that run the CLI."""
    t = build_tiered(base, layout=layout)
    with pytest.MonkeyPatch.context() as monkeypatch:
        use_settings(monkeypatch, t.settings)
        assert main(["copy", "--owner", "test"]) == 0
    return t
