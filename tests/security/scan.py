"""Search files, database dumps and captured output for every form of every secret.

Each place searched is a ``Haystack``: a label for the report and its bytes. Database rows are
searched value by value, with bytes kept as bytes (a text dump would hex-encode a blob and hide
a secret inside it), and each file under a directory is searched whole, binary or not.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.security.needles import Secret


@dataclass(frozen=True)
class Haystack:
    label: str
    data: bytes


@dataclass(frozen=True)
class Finding:
    place: str
    secret: str
    form: str

    def __str__(self) -> str:
        return f"{self.secret} ({self.form}) in {self.place}"


def find_secrets(haystacks: Iterable[Haystack], secrets: Iterable[Secret]) -> list[Finding]:
    secrets = list(secrets)
    return [
        Finding(stack.label, secret.name, form)
        for stack in haystacks
        for secret in secrets
        for form, needle in secret.forms.items()
        if needle in stack.data
    ]


def files_under(root: Path, *, exclude: Iterable[Path] = ()) -> Iterator[Haystack]:
    """Every regular file below root, except those below an excluded directory."""
    skipped = [Path(p).resolve() for p in exclude]
    for path in sorted(root.rglob("*")):
        resolved = path.resolve()
        if path.is_symlink() or not path.is_file():
            continue
        if any(resolved.is_relative_to(s) for s in skipped):
            continue
        yield Haystack(str(path), path.read_bytes())


def text(label: str, value: str | bytes) -> Haystack:
    return Haystack(label, value if isinstance(value, bytes) else value.encode())


def value_bytes(value: Any) -> bytes:
    """A database value as searchable bytes: blobs as they are, anything else as text."""
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    return str(value).encode()


def rows_haystack(label: str, rows: Iterable[Iterable[Any]]) -> Haystack:
    return Haystack(label, b"\x00".join(value_bytes(v) for row in rows for v in row))


def sqlite_tables(path: Path) -> list[str]:
    with sqlite3.connect(path) as db:
        found = db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return sorted(name for (name,) in found)


def sqlite_rows(path: Path, table: str, columns: str = "*") -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as db:
        return db.execute(f'SELECT {columns} FROM "{table}"').fetchall()


def sqlite_dump(path: Path) -> Iterator[Haystack]:
    """Every table of a SQLite database, one haystack per table, plus its SQL text dump."""
    for table in sqlite_tables(path):
        yield rows_haystack(f"{path.name}:{table}", sqlite_rows(path, table))
    with sqlite3.connect(path) as db:
        yield text(f"{path.name} (iterdump)", "\n".join(db.iterdump()))


def sqlalchemy_dump(url: str) -> Iterator[Haystack]:
    """Every table of any SQLAlchemy database (tierflow's store), one haystack per table."""
    from sqlalchemy import MetaData, create_engine, select

    engine = create_engine(url)
    try:
        metadata = MetaData()
        metadata.reflect(engine)
        with engine.connect() as connection:
            for table in metadata.sorted_tables:
                rows = connection.execute(select(table)).all()
                yield rows_haystack(f"store:{table.name}", rows)
    finally:
        engine.dispose()
