"""Job and result files as JSON lines: one job or result per line, so a batch of thousands of
segments streams, and only the files' paths travel in XCom."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path


def write_json_lines(path: Path, rows: Iterable[dict]) -> None:
    """Write rows atomically: a reader never sees half a file."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as out:
        for row in rows:
            out.write(json.dumps(row, sort_keys=True) + "\n")
    tmp.replace(path)


def read_json_lines(path: Path) -> Iterator[dict]:
    with open(path) as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)
