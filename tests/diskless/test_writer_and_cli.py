"""The WAL writer's buffering, and ``tierflow diskless`` register/produce/fetch/gc, including
a writer killed between its upload and its commit."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.diskless.diskless_support import NOW, TOPIC_ID, Env, producer_batch_bytes, records
from tierflow.cli import main
from tierflow.config import Settings
from tierflow.diskless.coordinator import DisklessCoordinator
from tierflow.diskless.errors import UnknownDisklessPartitionError
from tierflow.diskless.models import WalObjectState
from tierflow.diskless.wal_object import read_wal_object
from tierflow.faults import ENV_CRASH_AT
from tierflow.kafka.batch_builder import build_batch
from tierflow.metadata.store import MetadataStore


def test_the_buffer_is_uploaded_when_full_and_never_exceeds_its_size(sqlite_env: Env) -> None:
    batch = producer_batch_bytes("a", 2)
    limit = 1 + 3 * len(batch)  # three batches and the version byte fill an object
    writer = sqlite_env.writer(buffer_max_bytes=limit)
    results = [writer.append(TOPIC_ID, i % 2, batch) for i in range(7)]
    assert [r.done for r in results] == [True] * 6 + [False]
    assert writer.stats.objects == 2 and writer.buffered_bytes == 1 + len(batch)
    writer.close()
    sizes = [o.total_size for o in sqlite_env.coordinator.wal_objects()]
    assert sizes == [limit, limit, 1 + len(batch)]
    for found in sqlite_env.coordinator.wal_objects():
        data = sqlite_env.objects.read_range(found.object_key)
        assert len(read_wal_object(data, found.object_key)) == found.total_size // len(batch)
    big = producer_batch_bytes("big", 40)
    alone = writer.append(TOPIC_ID, 0, big)
    assert alone.done, "a batch larger than the buffer goes alone in one object"


def test_the_buffer_is_uploaded_when_the_commit_interval_has_passed(sqlite_env: Env) -> None:
    now = [NOW]
    writer = sqlite_env.writer(commit_interval_ms=250, clock=lambda: now[0])
    first = writer.append(TOPIC_ID, 0, producer_batch_bytes("a", 1))
    now[0] += 249
    assert writer.poll() is None and not first.done
    second = writer.append(TOPIC_ID, 1, producer_batch_bytes("b", 1))
    now[0] += 1
    flushed = writer.poll()
    assert flushed is not None and first.done and second.done
    assert len(flushed.batches) == 2, "the interval counts from the first buffered request"
    assert writer.poll() is None


def test_a_request_for_a_partition_that_is_not_diskless_uploads_nothing(sqlite_env: Env) -> None:
    writer = sqlite_env.writer()
    with pytest.raises(UnknownDisklessPartitionError, match=r"no diskless partition .*-9"):
        writer.append(TOPIC_ID, 9, producer_batch_bytes("a", 1))
    assert writer.flush() is None and sqlite_env.coordinator.wal_objects() == []


def _cli_env(tmp_path: Path) -> dict[str, str]:
    settings = Settings.embedded(tmp_path / "data")
    return {**settings.as_env(), "TIERFLOW_DISKLESS_APPEND_BUFFER_MAX_BYTES": "4096"}


def _segment_file(path: Path, batches: int) -> list[bytes]:
    """A classic segment: offsets assigned, leader epoch 3."""
    written = []
    offset = 0
    for i in range(batches):
        batch = build_batch(records(f"s{i}", 3, size=300), base_offset=offset, leader_epoch=3)
        written.append(batch)
        offset += 3
    path.write_bytes(b"".join(written))
    return written


def test_cli_register_produce_fetch_round_trip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, value in _cli_env(tmp_path).items():
        monkeypatch.setenv(name, value)
    assert main(["diskless", "register", "clicks", "--partitions", "2"]) == 0
    segment = tmp_path / "00000000000000000000.log"
    classic = _segment_file(segment, 10)
    assert main(["diskless", "produce", "clicks", "--partition", "1", str(segment)]) == 0
    assert "produced 10 batches in 3 WAL objects" in capsys.readouterr().out
    out = tmp_path / "fetched.bin"
    assert main(["diskless", "fetch", "clicks", "--partition", "1", "--offset", "0"]) == 0
    assert "10 batches, offsets 0-29, 0 from tiered segments" in capsys.readouterr().out
    fetch = ["diskless", "fetch", "clicks", "--partition", "1", "--offset", "0"]
    assert main([*fetch, "--output", str(out)]) == 0
    # Leader epoch 0 (the partition's), offsets as in the classic segment: same bytes otherwise.
    assert out.read_bytes() == b"".join(c[:12] + b"\x00\x00\x00\x00" + c[16:] for c in classic)
    capsys.readouterr()
    assert main([*fetch, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["first_offset"], report["next_offset"], report["tiered_batches"]) == (0, 30, 0)
    assert [b["baseOffset"] for b in report["batches"]] == list(range(0, 30, 3))
    assert all(b["partitionLeaderEpoch"] == 0 and b["isvalid"] for b in report["batches"])
    assert main(["diskless", "produce", "clicks", str(segment), "--partition", "5"]) == 2
    assert "no diskless partition" in capsys.readouterr().err
    bad = tmp_path / "bad.log"
    bad.write_bytes(segment.read_bytes()[:-10])
    assert main(["diskless", "produce", "clicks", str(bad)]) == 2
    assert f"{bad}: byte {len(b''.join(classic[:-1]))}" in capsys.readouterr().err


def test_a_writer_killed_after_its_upload_leaves_garbage_found_only_after_the_grace(
    tmp_path: Path,
) -> None:
    env = _cli_env(tmp_path)
    run = [sys.executable, "-m", "tierflow.cli", "diskless"]
    subprocess.run([*run, "register", "clicks", "--partitions", "1"], env=env, check=True)
    segment = tmp_path / "seg.log"
    _segment_file(segment, 2)
    killed = subprocess.run(
        [*run, "produce", "clicks", str(segment)],
        env={**env, ENV_CRASH_AT: "diskless.writer.after_upload"},
        capture_output=True,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    settings = Settings.from_env(env)
    store = MetadataStore(settings.db_url)
    coordinator = DisklessCoordinator.for_store(store)
    (orphan,) = coordinator.wal_objects()
    assert orphan.object_state is WalObjectState.UPLOADING
    assert (Path(settings.remote_storage) / orphan.object_key).is_file()
    assert coordinator.log(coordinator.topic_id_of("clicks"), 0).high_watermark == 0
    # gc now: the orphan is younger than the grace period and stays.
    subprocess.run([*run, "gc"], env=env, check=True, capture_output=True)
    assert (Path(settings.remote_storage) / orphan.object_key).is_file()
    done = subprocess.run(
        [*run, "gc"],
        env={**env, "TIERFLOW_DISKLESS_UNCOMMITTED_GRACE_MS": "0"},
        check=True,
        capture_output=True,
        text=True,
    )
    assert "deleted 1 WAL object," in done.stdout and "(1 never committed)" in done.stdout
    assert not (Path(settings.remote_storage) / orphan.object_key).exists()
    assert coordinator.wal_objects() == []
    # Producing again works and starts at offset 0: the killed attempt assigned nothing.
    produce = [*run, "produce", "clicks", str(segment), "--json"]
    again = subprocess.run(produce, env=env, check=True, capture_output=True, text=True)
    assert '"offsets": {"0": [0, 5]}' in again.stdout
    store.close()
