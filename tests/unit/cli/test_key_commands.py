"""``tierflow keys ...`` and ``tierflow rewrap-keys`` on a real store and bucket."""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

import pytest

from tests.support.settings_env import use_settings
from tests.unit.transform.support import NOW_MS, a_segment, record_batches, segment_files
from tierflow.cli.commands import CommandError
from tierflow.cli.key_commands import register
from tierflow.config import Settings
from tierflow.lifecycle.key_rewrap import rewrap_segments
from tierflow.metadata import RemoteLogSegmentState, SegmentTransition, StartedSegment
from tierflow.runtime import open_storage, open_store
from tierflow.storage.chunked import ChunkedRemoteStorageManager
from tierflow.transform.keyring import KeyRing
from tierflow.units import human_bytes


def run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="tierflow")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    ring_dir = tmp_path / "keys"
    assert run("keys", "generate", "--dir", str(ring_dir), "--key-id", "k1") == 0
    settings = Settings.embedded(
        tmp_path,
        storage_layout="chunked",
        chunk_size=1000,
        compression=True,
        keyring=ring_dir / "keyring.json",
    )
    use_settings(monkeypatch, settings)
    return settings


def copy_finished(settings: Settings, tmp_path: Path, count: int) -> list:
    store = open_store(settings)
    rsm = open_storage(settings)
    assert isinstance(rsm, ChunkedRemoteStorageManager)
    segments = []
    topic_id = a_segment().topic_id
    store.register_topic("orders", topic_id, actor="t", now_ms=NOW_MS, remote_storage_enable=True)
    store.ensure_partition(topic_id, 3, log_start_offset=0, local_log_start_offset=0, now_ms=NOW_MS)
    for n in range(count):
        start = 1000 + 100 * n
        segment = a_segment(start=start, end=start + 99)
        segment = type(segment)("orders", topic_id, 3, segment.segment_id, start, start + 99)
        data = segment_files(tmp_path / f"seg{n}", record_batches(2500, seed=n), with_txn=False)
        infos = rsm.copy_log_segment_data(segment, data)
        store.add_segment(
            StartedSegment(
                segment_id=segment.segment_id,
                topic_id=topic_id,
                partition=3,
                start_offset=start,
                end_offset=start + 99,
                max_timestamp_ms=NOW_MS,
                segment_leader_epochs=[(5, start)],
                segment_size_bytes=data.log_segment.stat().st_size,
                txn_index_empty=True,
            ),
            actor="t",
            now_ms=NOW_MS,
        )
        store.transition_segment(
            SegmentTransition(
                segment.segment_id,
                RemoteLogSegmentState.COPY_SEGMENT_FINISHED,
                objects=[(i.key.rsplit(".", 1)[1], i.key, i.size, i.sha256) for i in infos],
            ),
            actor="t",
            now_ms=NOW_MS,
        )
        segments.append(segment)
    return segments


def test_keys_add_activate_list(env: Settings, capsys) -> None:
    assert run("keys", "add", "--key-id", "k2", "--generate") == 0
    assert KeyRing.load(env.storage.keyring).active_key_id == "k1"
    assert run("keys", "activate", "k2") == 0
    assert KeyRing.load(env.storage.keyring).active_key_id == "k2"
    assert run("keys", "list") == 0
    assert "* k2" in capsys.readouterr().out
    with pytest.raises(CommandError, match="'k9' is not in the key ring"):
        run("keys", "activate", "k9")
    with pytest.raises(CommandError, match="already"):
        run("keys", "add", "--key-id", "k2", "--generate")


def test_rotation_and_rewrap_keys_end_to_end(env: Settings, tmp_path: Path) -> None:
    segments = copy_finished(env, tmp_path, 3)
    store = open_store(env)
    bucket = Path(env.remote_storage)

    def digests(segment) -> dict[str, str]:
        rsm = open_storage(env)
        return {
            key: hashlib.sha256((bucket / key).read_bytes()).hexdigest()
            for key in rsm.object_keys(segment)
        }

    before = {s.segment_id: digests(s) for s in segments}
    expected = {s.segment_id: open_storage(env).fetch_log_segment(s, 0) for s in segments}

    assert run("keys", "add", "--key-id", "k2", "--generate", "--activate") == 0
    assert all(open_storage(env).fetch_log_segment(s, 0) == expected[s.segment_id]
               for s in segments)  # fmt: skip

    assert run("rewrap-keys") == 0
    rsm = open_storage(env)
    for segment in segments:
        after = digests(segment)
        log_key, indexes_key, manifest_key = rsm.object_keys(segment)
        assert after[log_key] == before[segment.segment_id][log_key]
        assert after[indexes_key] == before[segment.segment_id][indexes_key]
        assert after[manifest_key] != before[segment.segment_id][manifest_key]
        assert rsm.manifest(segment).encryption.key_id == "k2"
        rows = {row.kind: row for row in store.segment_objects(segment.segment_id)}
        assert rows["rsm-manifest"].sha256 == after[manifest_key]
        assert rows["rsm-manifest"].size == (bucket / manifest_key).stat().st_size
        assert rsm.fetch_log_segment(segment, 0) == expected[segment.segment_id]

    summary = rewrap_segments(store, rsm, actor="t", now_ms=lambda: NOW_MS)
    assert len(summary.unchanged) == 3 and not summary.rewrapped and not summary.failed


def test_rewrap_repairs_a_row_left_stale_by_a_crash(env: Settings, tmp_path: Path) -> None:
    (segment,) = copy_finished(env, tmp_path, 1)
    assert run("keys", "add", "--key-id", "k2", "--generate", "--activate") == 0
    rsm = open_storage(env)
    assert rsm.rewrap(segment) is not None  # manifest rewritten, the row not updated
    store = open_store(env)
    summary = rewrap_segments(store, rsm, actor="t", now_ms=lambda: NOW_MS)
    assert summary.repaired_rows == [segment.segment_id]
    row = next(r for r in store.segment_objects(segment.segment_id) if r.kind == "rsm-manifest")
    manifest = (Path(env.remote_storage) / row.key).read_bytes()
    assert row.sha256 == hashlib.sha256(manifest).hexdigest()


def test_rewrap_reports_segments_it_cannot_unwrap(env: Settings, tmp_path: Path, capsys) -> None:
    (segment,) = copy_finished(env, tmp_path, 1)
    KeyRing.generate(tmp_path / "other", "k7").save(env.storage.keyring)  # k1 is gone from the ring
    capsys.readouterr()
    assert run("rewrap-keys") == 1
    out = capsys.readouterr().out
    assert segment.segment_id in out and "key id 'k1' is not in the key ring" in out


def test_rewrap_progress_goes_to_stderr_in_manifest_bytes(
    env: Settings, tmp_path: Path, capsys
) -> None:
    segments = copy_finished(env, tmp_path, 3)
    store = open_store(env)
    manifests = sum(
        row.size
        for segment in segments
        for row in store.segment_objects(segment.segment_id)
        if row.kind == "rsm-manifest"
    )
    assert run("keys", "add", "--key-id", "k2", "--generate", "--activate") == 0
    capsys.readouterr()

    assert run("rewrap-keys") == 0

    out, err = capsys.readouterr()
    # Off a terminal: no bar, plain lines, the last one saying what was done.
    lines = err.splitlines()
    assert all(line.startswith("rewrap-keys: ") for line in lines)
    assert lines[-1].startswith(
        f"rewrap-keys: done, 3/3 segments, {human_bytes(manifests)} of {human_bytes(manifests)} "
        "(100%)"
    )
    assert out == "3 re-wrapped under 'k2', 0 unchanged, 0 store rows repaired, 0 failed\n"
