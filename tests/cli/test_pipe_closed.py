"""``tierflow ... | head``: every command that prints a report ends quietly when its reader goes
away, with exit 141 and nothing on stderr, never a BrokenPipeError traceback.

The reader closes the pipe before the command writes anything, the hardest case: the first
write fails, wherever in the command it happens (a table, a streamed JSON document, a line per
copied segment, a progress line's neighbour)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.cli_commands import ALL
from tests.support.tiered import Tiered, build_tiered
from tierflow.cli.exit_codes import BROKEN_PIPE
from tierflow.export.catalog import settings_catalog
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.metadata.states import RemoteLogSegmentState

pytestmark = pytest.mark.slow

# Each command that prints a report, with arguments that make it print a real one; a segment id
# and the key ring are filled in from the sandbox.
COMMANDS = (
    ("topics", "list"),
    ("topics", "sync", "--dry-run", "--json"),
    ("topics", "handover", "orders", "--json"),
    ("copy", "--dry-run"),
    ("copy",),
    ("verify",),
    ("scrub", "--json"),
    ("events", "--json"),
    ("fetch", "--topic", "orders", "--partition", "0", "--offset", "0", "--print-records"),
    ("dump-segment", "--segment-id", "{segment}", "--print-records", "--json"),
    ("metadata",),
    ("status", "--json"),
    ("keys", "list", "--keyring", "{keyring}"),
    ("delete-topic", "orders"),
    ("reconcile", "--json"),
    ("retention", "--dry-run"),
    ("cluster", "describe"),
    ("broker-config", "--key-dir", "{broker_keys}"),
    ("diskless", "describe", "--json"),
    ("restore", "orders", "--to", "{restored}", "--dry-run"),
    ("export", "iceberg", "--topic", "orders", "--dry-run"),
    ("export", "status", "--topic", "orders"),
    ("compact", "--force", "--dry-run", "--json"),
)
# What may reach stderr: the progress lines of the long commands (stdout is the report alone).
PROGRESS = ("copy: ", "verify: ", "reconcile: ")


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> tuple[Tiered, dict[str, str]]:
    base = tmp_path_factory.mktemp("pipes")
    t = build_tiered(base, layout="chunked-encrypted")
    for log_ in t.logs():
        if log_.topic == "orders":
            copy_partition(log_, t.store, t.rsm, owner="test")
    settings_catalog(t.settings)  # the Iceberg catalog's tables, made before the readers start
    topic_id = t.store.topic("orders").topic_id
    finished = [RemoteLogSegmentState.COPY_SEGMENT_FINISHED]
    fill = {
        "segment": t.store.segments(topic_id, 0, states=finished)[0].segment_id,
        "keyring": str(t.settings.storage.keyring),
        "restored": str(base / "restored"),
        "broker_keys": str(base / "broker-keys"),
    }
    return t, fill


def test_every_command_with_json_is_tried() -> None:
    """A command that gains --json (a report for scripts) must be tried here too."""
    with_json = {
        path
        for path, parser, _help in ALL
        if any("--json" in action.option_strings for action in parser._actions)
    }
    tried = {tuple(word for word in argv if not word.startswith("-")) for argv in COMMANDS}
    untried = {path for path in with_json if not any(t[: len(path)] == path for t in tried)}
    # These need a live cluster (or a writer) to print anything; tests/kafka runs them.
    needs_kafka = {("remote-log-metadata", "publish"), ("remote-log-metadata", "follow")}
    diskless = {("diskless", "produce"), ("diskless", "merge"), ("diskless", "fetch")}
    assert untried <= diskless | needs_kafka


def test_a_closed_pipe_ends_every_command_quietly(sandbox: tuple[Tiered, dict[str, str]]) -> None:
    t, fill = sandbox
    env = {**os.environ, **t.settings.as_env()}
    started = []
    for argv in COMMANDS:  # all at once: each is mostly Python's start-up
        words = [word.format(**fill) for word in argv]
        run = subprocess.Popen(
            [sys.executable, "-m", "tierflow.cli", *words],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        run.stdout.close()
        started.append((argv, run))
    failed = []
    for argv, run in started:
        err = run.stderr.read().decode()
        code = run.wait(timeout=300)
        if code != BROKEN_PIPE or not all(line.startswith(PROGRESS) for line in err.splitlines()):
            failed.append(f"tierflow {' '.join(argv)}: exit {code}, stderr {err!r}")
    assert failed == []
