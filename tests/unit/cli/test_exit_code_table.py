"""The README's exit-code table is the contract: exit_codes.py has each code it lists, with
the meaning it gives, and no other."""

from __future__ import annotations

import re

from tests.docs.readme import readme_text
from tierflow.cli import exit_codes

ROW = re.compile(r"^\| `(\d+)` \| (.+) \|$")

# Each constant, and a word the README's row for it must hold.
MEANINGS = {
    "OK": "done",
    "FAILED": "reports a failure",
    "USAGE": "bad arguments or settings",
    "NOT_FOUND": "topic",
    "BAD_DATA": "Kafka file",
    "STORAGE": "bucket",
    "STORE": "metadata store",
    "INTERRUPTED": "Ctrl-C",
    "BROKEN_PIPE": "closed the pipe",
}


def readme_table() -> dict[int, str]:
    lines = readme_text().splitlines()
    start = lines.index("| exit | meaning |")
    rows = {}
    for line in lines[start + 2 :]:
        match = ROW.match(line)
        if match is None:
            break
        rows[int(match[1])] = match[2]
    return rows


def test_the_readme_table_is_the_exit_codes() -> None:
    table = readme_table()
    codes = {name: getattr(exit_codes, name) for name in MEANINGS}
    assert sorted(table) == sorted(codes.values())
    wrong = {n: table[c] for n, c in codes.items() if MEANINGS[n] not in table[c]}
    assert wrong == {}
