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


LISTED_KEYS = [
    "orders-abc/0/00000000000000000000-x.log",
    "orders-abc/0/00000000000000000100-y.log",
    "orders-abc/0/10000000000000000000-z.log",
    "orders-abc/0/sub/00000000000000000000-deep.log",
    "orders-abc/1/00000000000000000000-w.log",
    "orders-abcd/0/00000000000000000000-v.log",
    "top-level-object",
]


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        # ending mid-name: the last part filters the names in its parent directory
        ("orders-abc/0/000", [0, 1]),
        ("orders-abc/0/00000000000000000000-x.log", [0]),
        ("orders-abc/0/s", [3]),
        ("orders-abc", [0, 1, 2, 3, 4, 5]),
        ("top", [6]),
        # ending at a '/': that directory's whole subtree, and nothing beside it
        ("orders-abc/0/", [0, 1, 2, 3]),
        ("orders-abc/", [0, 1, 2, 3, 4]),
        ("orders-abc/0/sub/", [3]),
        ("", [0, 1, 2, 3, 4, 5, 6]),
        # naming nothing
        ("orders-abc/7/", []),
        ("orders-abc/0/9", []),
        ("nope", []),
        ("nope/deeper/", []),
        ("orders-abc/0/00000000000000000000-x.log/", []),  # a file, not a directory
        ("top-level-object/", []),
        ("/orders-abc/", []),
        ("orders-abc//0/", []),
        ("./orders-abc/", []),
        ("../bucket/orders-abc/", []),
        ("orders-abc/../orders-abc/0/", []),
    ],
)
def test_list_prefixes_ending_mid_name_at_a_slash_or_naming_nothing(
    store: ObjectStore, prefix: str, expected: list[int]
):
    for key in LISTED_KEYS:
        store.put_bytes(key, b"x")
    listed = list(store.list(prefix))
    assert sorted(listed) == [LISTED_KEYS[i] for i in expected]
    # In the order a listing of everything gives them, so callers see the same either way.
    assert listed == [key for key in store.list() if key.startswith(prefix)]


def test_list_from_a_prefix_skips_killed_writer_leftovers(tmp_path: Path):
    store = LocalDirectoryObjectStore(tmp_path / "bucket")
    store.put_bytes("t/0/seg.log", b"data")
    (tmp_path / "bucket" / "t" / "0" / ".seg.log.tmp-deadbeef").write_bytes(b"half")
    assert list(store.list("t/0/")) == ["t/0/seg.log"]
    assert list(store.list("t/0/.")) == []


def test_list_does_not_follow_links_to_directories(tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_bytes(b"x")
    store = LocalDirectoryObjectStore(tmp_path / "bucket")
    store.put_bytes("t/0/seg.log", b"data")
    (tmp_path / "bucket" / "link").symlink_to(outside, target_is_directory=True)
    assert list(store.list()) == ["t/0/seg.log"]
    assert list(store.list("link/")) == []
    assert list(store.list("li")) == []
