"""The README's and CONTRIBUTING's storage rows name every object store the factory opens: a
backend added to storage/factory.py and not to the docs (or dropped from them) fails here."""

from __future__ import annotations

from pathlib import Path

import pytest

from tierflow.storage.factory import BACKENDS

ROOT = Path(__file__).resolve().parents[2]

ROWS = {
    "README.md": "| `include/tierflow/storage/` |",
    "CONTRIBUTING.md": "| `storage/` |",
}


def storage_row(document: str) -> str:
    lines = (ROOT / document).read_text().splitlines()
    (row,) = [line for line in lines if line.startswith(ROWS[document])]
    return row


@pytest.mark.parametrize("document", sorted(ROWS))
def test_the_storage_row_names_every_backend_of_the_factory(document: str) -> None:
    row = storage_row(document).lower()
    missing = [b.name for b in BACKENDS if b.name.removeprefix("a ").lower() not in row]
    assert missing == []
