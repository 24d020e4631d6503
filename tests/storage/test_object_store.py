"""The object-store contract, run against every backend (the local directory for now)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tierflow.storage.errors import InvalidKeyError, RemoteResourceNotFoundError
from tierflow.storage.local import LocalDirectoryObjectStore
from tierflow.storage.object_store import ObjectStore


@pytest.fixture(params=["local"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> ObjectStore:
    return LocalDirectoryObjectStore(tmp_path / "bucket")


def test_put_file_reports_size_and_sha256_and_reads_back(store: ObjectStore, tmp_path: Path):
    source = tmp_path / "segment.log"
    data = bytes(range(256)) * 5000
    source.write_bytes(data)
    info = store.put_file("t-id/0/x.log", source)
    assert info.size == len(data)
    assert info.sha256 == hashlib.sha256(data).hexdigest()
    assert b"".join(store.iter_chunks("t-id/0/x.log", chunk_size=1000)) == data
    assert store.stat("t-id/0/x.log").size == len(data)


def test_ranged_read(store: ObjectStore):
    store.put_bytes("a/b", b"0123456789")
    assert store.read_range("a/b", 3, 7) == b"3456"
    assert store.read_range("a/b", 8) == b"89"
    assert store.read_range("a/b", 20) == b""


def test_retry_overwrites(store: ObjectStore):
    store.put_bytes("k", b"first attempt, longer")
    store.put_bytes("k", b"second")
    assert store.read_range("k") == b"second"


def test_delete_is_idempotent_and_missing_reads_name_the_key(store: ObjectStore):
    store.put_bytes("p/q/r", b"x")
    store.delete(["p/q/r", "p/q/never-existed"])
    store.delete(["p/q/r"])
    assert store.stat("p/q/r") is None
    with pytest.raises(RemoteResourceNotFoundError, match="p/q/r"):
        store.read_range("p/q/r")
    assert list(store.list()) == []


def test_list_filters_by_prefix(store: ObjectStore):
    for key in ("t1/0/a", "t1/1/b", "t2/0/c"):
        store.put_bytes(key, b"x")
    assert sorted(store.list("t1/")) == ["t1/0/a", "t1/1/b"]


@pytest.mark.parametrize("key", ["../escape", "/abs/path", "a/../../b", "a//b", "", "a/\x00b"])
def test_keys_cannot_escape_the_bucket(store: ObjectStore, key: str):
    with pytest.raises(InvalidKeyError):
        store.put_bytes(key, b"x")


def test_killed_writer_leftovers_are_invisible_and_removed_with_the_key(tmp_path: Path):
    store = LocalDirectoryObjectStore(tmp_path / "bucket")
    store.put_bytes("t/0/seg.log", b"data")
    leftover = tmp_path / "bucket" / "t" / "0" / ".seg.log.tmp-deadbeef"
    leftover.write_bytes(b"half an upload")
    assert list(store.list()) == ["t/0/seg.log"]
    store.delete(["t/0/seg.log"])
    assert not leftover.exists()
    assert not (tmp_path / "bucket" / "t").exists(), "empty prefixes are pruned"
