"""The object-store contract, run against every backend: the local directory, S3 (moto's
standalone server on loopback), Google Cloud Storage (fake-gcs-server on loopback) and Azure
Blob Storage (Azurite on loopback), each through its
Airflow connection, at a bucket's root and under a prefix."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import pytest

from tests.support.object_backends import open_backend
from tierflow.rsm import InvalidKeyError, RemoteResourceNotFoundError
from tierflow.storage.local import LocalDirectoryObjectStore
from tierflow.storage.object_store import ObjectStore

BACKENDS = ["local", "s3", "s3-prefix", "gcs", "gcs-prefix", "azure", "azure-prefix"]


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> ObjectStore:
    return open_backend(request, request.param, tmp_path)


def test_put_file_reports_size_and_sha256_and_reads_back(store: ObjectStore, tmp_path: Path):
    source = tmp_path / "segment.log"
    data = bytes(range(256)) * 5000
    source.write_bytes(data)
    info = store.put_file("t-id/0/x.log", source)
    assert info.size == len(data)
    assert info.sha256 == hashlib.sha256(data).hexdigest()
    assert b"".join(store.iter_chunks("t-id/0/x.log", chunk_size=1000)) == data
    found = store.stat("t-id/0/x.log")
    assert found.size == len(data)
    assert found.sha256 in (None, info.sha256), "a backend that keeps the digest keeps it right"
    assert abs(found.last_modified_ms - time.time() * 1000) < 60_000


def test_stat_of_a_missing_object_is_none_and_reads_name_the_key(store: ObjectStore):
    assert store.stat("t/0/missing.log") is None
    with pytest.raises(RemoteResourceNotFoundError, match=r"t/0/missing\.log"):
        store.read_range("t/0/missing.log", 0, 10)
    with pytest.raises(RemoteResourceNotFoundError, match=r"t/0/missing\.log"):
        list(store.iter_chunks("t/0/missing.log"))


def test_ranged_read(store: ObjectStore):
    store.put_bytes("a/b", b"0123456789")
    assert store.read_range("a/b", 3, 7) == b"3456"
    assert store.read_range("a/b", 8) == b"89"
    assert store.read_range("a/b", 20) == b""


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        (0, None, b"0123456789"),
        (0, 1, b"0"),
        (9, 10, b"9"),
        (9, None, b"9"),
        (10, None, b""),  # exactly at the end
        (10, 11, b""),
        (8, 30, b"89"),  # end past the object: clipped
        (4, 4, b""),  # empty range
        (6, 2, b""),  # end before start
    ],
)
def test_ranged_read_edges_end_exclusive(store: ObjectStore, start, end, expected):
    store.put_bytes("a/b", b"0123456789")
    assert store.read_range("a/b", start, end) == expected


def test_empty_object(store: ObjectStore):
    info = store.put_bytes("t/0/empty.log", b"")
    assert (info.size, info.sha256) == (0, hashlib.sha256(b"").hexdigest())
    assert store.read_range("t/0/empty.log") == b""
    assert store.read_range("t/0/empty.log", 0, 5) == b""
    assert b"".join(store.iter_chunks("t/0/empty.log")) == b""
    assert store.stat("t/0/empty.log").size == 0


def test_put_chunks_streams_and_a_failing_producer_stores_nothing(store: ObjectStore):
    def chunks():
        yield b"a" * 1000
        yield b"b" * 10
        raise RuntimeError("producer died")

    info = store.put_chunks("t/0/ok.log", iter([b"x" * 7, b"", b"y" * 5]))
    assert (info.size, store.read_range("t/0/ok.log")) == (12, b"x" * 7 + b"y" * 5)
    with pytest.raises(RuntimeError, match="producer died"):
        store.put_chunks("t/0/failed.log", chunks())
    assert store.stat("t/0/failed.log") is None
    assert list(store.list()) == ["t/0/ok.log"]


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
    ids=lambda value: f"lists-{len(value) or 'nothing'}" if isinstance(value, list) else None,
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


def test_a_directory_pruned_by_a_concurrent_delete_is_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A delete prunes a partition directory it left empty; a writer between its mkdir and its
    open (two steps) must not fail for that. The prune is played here at exactly that moment."""
    store = LocalDirectoryObjectStore(tmp_path / "bucket")
    real_mkdir = Path.mkdir
    pruned: list[Path] = []

    def mkdir_then_pruned(self: Path, *args, **kwargs) -> None:
        real_mkdir(self, *args, **kwargs)
        if not pruned and self.name == "0":
            pruned.append(self)
            self.rmdir()  # what the concurrent delete's _prune_empty_parents does

    monkeypatch.setattr(Path, "mkdir", mkdir_then_pruned)
    info = store.put_bytes("orders-x/0/seg.log", b"data")
    assert pruned and info.size == 4
    assert store.read_range("orders-x/0/seg.log") == b"data"


def test_a_delete_whose_directory_a_concurrent_delete_prunes_meanwhile_succeeds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Two deleters of one partition (a copy run taken over, and the run that took it over):
    the other one prunes the directory between this one's check that it exists and its read
    of it, looking for killed writers' leftovers. Found in CI as a FileNotFoundError from a
    copy's finalize, instead of the CopyFailedError naming what it lost."""
    store = LocalDirectoryObjectStore(tmp_path / "bucket")
    store.put_bytes("orders-x/1/a.log", b"a")
    store.put_bytes("orders-x/1/b.log", b"b")
    real_scandir = os.scandir
    pruned: list[str] = []

    def scandir_after_the_other_delete(path):
        if not pruned and str(path).endswith("orders-x/1"):
            pruned.append(str(path))
            LocalDirectoryObjectStore(tmp_path / "bucket").delete(
                ["orders-x/1/a.log", "orders-x/1/b.log"]
            )
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir_after_the_other_delete)
    store.delete(["orders-x/1/a.log"])
    assert pruned
    assert list(store.list("")) == []
    assert not (tmp_path / "bucket" / "orders-x").exists()


def test_a_write_deleted_before_its_directory_is_synced_is_a_write_then_a_delete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A delete may remove the object and prune its directory right after the rename that
    published it: the write happened before the delete, as it would on S3, and succeeds."""
    store = LocalDirectoryObjectStore(tmp_path / "bucket")
    real_replace = os.replace

    def replace_then_deleted(src, dst):
        real_replace(src, dst)
        LocalDirectoryObjectStore(tmp_path / "bucket").delete(["orders-x/0/seg.log"])

    monkeypatch.setattr(os, "replace", replace_then_deleted)
    info = store.put_bytes("orders-x/0/seg.log", b"data")
    assert info.size == 4
    assert store.stat("orders-x/0/seg.log") is None
