"""``--topic`` exits as the README's exit-code table says, from the installed ``tierflow`` in
a process of its own: ``compact --topic`` of a topic that is not compacted refuses in one line
(2) instead of finding no work and exiting 0, and an unknown topic is not found (3), also
where the command turns the store's error into its own. (tests/unit/cli/ tries every command
that takes --topic, in-process.)"""

from __future__ import annotations

import subprocess

import pytest

from tests.cli.process import finish, start, tierflow_env
from tests.support.tiered import build_tiered
from tierflow.cli.exit_codes import NOT_FOUND, USAGE

# argv, exit status, the one line on stderr.
CASES = {
    "compact a topic that is not compacted": (
        ["compact", "--topic", "orders"],
        USAGE,
        "tierflow: error: topic orders: cleanup.policy=delete: not a compacted topic; there is "
        "nothing to compact",
    ),
    "compact an unknown topic": (
        ["compact", "--topic", "nosuch"],
        NOT_FOUND,
        "tierflow: error: unknown topic 'nosuch'",
    ),
    "export status of an unknown topic": (
        ["export", "status", "--topic", "nosuch", "--json"],
        NOT_FOUND,
        "tierflow: error: unknown topic 'nosuch'",
    ),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, subprocess.Popen[str]]:
    """Every case started at once (each is mostly Python's start-up)."""
    env = tierflow_env(build_tiered(tmp_path_factory.mktemp("topics")).settings)
    return {name: start(env, *argv) for name, (argv, _code, _line) in CASES.items()}


@pytest.mark.parametrize("name", list(CASES))
def test_exit_status_and_one_line(runs: dict[str, subprocess.Popen[str]], name: str) -> None:
    _argv, code, line = CASES[name]
    done = finish(runs[name])
    assert (done.returncode, done.stderr) == (code, line + "\n"), done.stdout
    assert done.stdout == ""
