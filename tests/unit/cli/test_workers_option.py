"""``--workers`` takes a count of processes: 0, a negative number or a word is refused by the
parser on one line naming the option, exit 2, before anything runs (0 once ran the batch in
one process without a word)."""

from __future__ import annotations

import pytest

from tierflow.cli import main
from tierflow.cli.exit_codes import USAGE

COMMANDS = [  # (the command line, the program argparse names)
    (["copy"], "tierflow copy"),
    (["restore", "orders", "--to", "restored"], "tierflow restore"),
    (["export", "iceberg"], "tierflow export iceberg"),
]
VALUES = [("0", "must be at least 1, not 0"), ("-2", "must be at least 1, not -2"), ("x", "'x'")]


@pytest.mark.parametrize(("command", "program"), COMMANDS, ids=[p for _, p in COMMANDS])
@pytest.mark.parametrize(("value", "said"), VALUES, ids=[v for v, _ in VALUES])
def test_a_count_below_one_is_refused_naming_the_option(
    command: list[str],
    program: str,
    value: str,
    said: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*command, "--workers", value])
    assert exited.value.code == USAGE
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith(f"{program}: error: argument --workers: "), last
    assert said in last, last
