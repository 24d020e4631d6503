"""A local directory standing in for a bucket: the embedded default, no server needed.

Objects are written to a temporary file beside the target, fsynced and renamed into place, so
a crash never leaves a half-written object under its real key; the temporary files it may leave
are ignored by ``list``, listed by ``list_leftovers`` (for reconcile, which reports and deletes
them as orphans) and swept by ``sweep_temporary_files``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from tierflow.rsm import (
    InvalidKeyError,
    ObjectInfo,
    RemoteResourceNotFoundError,
    RemoteStorageError,
)
from tierflow.storage.object_store import READ_CHUNK, ObjectStore, StreamingWrites, validate_key

_TMP_MARKER = ".tmp-"


class LocalDirectoryObjectStore(StreamingWrites):
    def __init__(self, root: Path) -> None:
        self.root = Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)

    def describe(self) -> str:
        return self.root.as_uri()

    def _path(self, key: str, *, leftover_ok: bool = False) -> Path:
        """The file of ``key``. Keys may not name temporary files, so no object collides with
        one; ``stat`` and ``delete`` take them (``leftover_ok``) for reconcile's leftovers."""
        parts = validate_key(key).split("/")
        *dirs, name = parts
        if any(_is_temporary(p) for p in dirs) or (_is_temporary(name) and not leftover_ok):
            raise InvalidKeyError(key, "key contains a temporary-file name")
        return self.root.joinpath(*parts)

    def _write(self, key: str, chunks: Iterable[bytes]) -> ObjectInfo:
        target = self._path(key)
        tmp = target.with_name(f".{target.name}{_TMP_MARKER}{uuid.uuid4().hex}")
        digest = hashlib.sha256()
        size = 0
        try:
            with _create(tmp) as out:
                for chunk in chunks:
                    out.write(chunk)
                    digest.update(chunk)
                    size += len(chunk)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, target)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise RemoteStorageError(key, f"write failed: {exc}") from exc
        except BaseException:
            tmp.unlink(missing_ok=True)  # the chunk producer failed: leave nothing behind
            raise
        _fsync_dir(target.parent)
        return ObjectInfo(key, size, digest.hexdigest())

    def read_range(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        path = self._path(key)
        try:
            with open(path, "rb") as handle:
                handle.seek(start)
                return handle.read() if end is None else handle.read(max(0, end - start))
        except FileNotFoundError as exc:
            raise RemoteResourceNotFoundError(key, "no such object") from exc
        except OSError as exc:
            raise RemoteStorageError(key, f"read failed: {exc}") from exc

    def iter_chunks(self, key: str, chunk_size: int = READ_CHUNK) -> Iterator[bytes]:
        path = self._path(key)
        try:
            with open(path, "rb") as handle:
                yield from iter(lambda: handle.read(chunk_size), b"")
        except FileNotFoundError as exc:
            raise RemoteResourceNotFoundError(key, "no such object") from exc

    def stat(self, key: str) -> ObjectInfo | None:
        try:
            found = self._path(key, leftover_ok=True).stat()
        except FileNotFoundError:
            return None
        return ObjectInfo(key, found.st_size, last_modified_ms=found.st_mtime_ns // 1_000_000)

    def delete(self, keys: Iterable[str]) -> None:
        for key in keys:
            path = self._path(key, leftover_ok=True)
            try:
                # A writer killed mid-upload leaves its temporary file beside the key: it goes too.
                for leftover in _leftovers_of(path):
                    leftover.unlink(missing_ok=True)
                path.unlink(missing_ok=True)
            except OSError as exc:
                raise RemoteStorageError(key, f"delete failed: {exc}") from exc
            self._prune_empty_parents(path.parent)

    def _prune_empty_parents(self, directory: Path) -> None:
        """Remove directories left empty, so a deleted partition leaves no prefix behind."""
        while directory != self.root and directory.is_relative_to(self.root):
            try:
                directory.rmdir()
            except OSError:
                return
            directory = directory.parent

    def list(self, prefix: str = "") -> Iterator[str]:
        """Keys starting with ``prefix``: each directory's files sorted, then its directories."""
        return self._walk(prefix, leftovers=False)

    def list_leftovers(self, prefix: str = "") -> Iterator[str]:
        """The temporary files under ``prefix`` (as keys) that writers killed mid-upload left."""
        return self._walk(prefix, leftovers=True)

    def _walk(self, prefix: str, *, leftovers: bool) -> Iterator[str]:
        """Objects, or else temporary files, whose keys start with ``prefix``.

        The walk starts at the deepest directory the prefix names, so listing one partition
        does not read the whole bucket; its last part (``000`` of ``t/0/000``) filters names.
        """
        *dirs, partial = prefix.split("/")
        if "\x00" in prefix or any(part in ("", ".", "..") for part in dirs):
            return  # no key has such a part, and the walk must not leave the root
        start = self.root
        for part in dirs:
            start = start / part
            if start.is_symlink():
                return  # a walk from the root does not follow links into directories either
        top = True
        for dirpath, dirnames, filenames in os.walk(start):
            if top:
                dirnames[:] = [name for name in dirnames if name.startswith(partial)]
                filenames = [name for name in filenames if name.startswith(partial)]
                top = False
            for name in sorted(filenames):
                if _is_temporary(name) != leftovers:
                    continue
                yield Path(dirpath, name).relative_to(self.root).as_posix()

    def sweep_temporary_files(self) -> list[Path]:
        """Delete temporary files left by writers that were killed mid-upload."""
        swept = []
        for dirpath, _dirnames, filenames in os.walk(self.root):
            for name in filenames:
                if _is_temporary(name):
                    path = Path(dirpath, name)
                    path.unlink(missing_ok=True)
                    swept.append(path)
        return swept

    def wipe(self) -> None:
        """Remove every object: for demos and tests only."""
        shutil.rmtree(self.root, ignore_errors=True)
        self.root.mkdir(parents=True, exist_ok=True)


def leftover_keys(objects: ObjectStore, prefix: str) -> Iterator[str]:
    """Temporary files of killed uploads under ``prefix``, as keys that ``stat`` and ``delete``
    take. Only a local-directory bucket has them: an S3 object appears whole or not at all."""
    if isinstance(objects, LocalDirectoryObjectStore):
        yield from objects.list_leftovers(prefix)


def _is_temporary(name: str) -> bool:
    """A writer's temporary file: ``.<name>.tmp-<hex>`` beside its target."""
    return name.startswith(".") and _TMP_MARKER in name


def _create(path: Path, attempts: int = 3) -> BinaryIO:
    """A new file, in a directory made on the way. A concurrent delete may prune the directory
    between the mkdir and the open (it was empty then), so both are tried again."""
    for _ in range(attempts - 1):
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            return open(path, "wb")
        except FileNotFoundError:
            continue
    path.parent.mkdir(parents=True, exist_ok=True)
    return open(path, "wb")


def _leftovers_of(path: Path) -> list[Path]:
    """Temporary files of killed writers of ``path``. A concurrent delete may prune the
    directory while it is read (pathlib's glob checks it exists, then reads it): then there are
    none."""
    prefix = f".{path.name}{_TMP_MARKER}"
    try:
        with os.scandir(path.parent) as entries:
            return [Path(entry.path) for entry in entries if entry.name.startswith(prefix)]
    except FileNotFoundError:
        return []


def _fsync_dir(directory: Path) -> None:
    """Make a rename durable. A directory gone already was pruned by a delete of what was just
    written, a delete that came after the write: nothing is left to make durable."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
