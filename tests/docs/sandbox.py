"""Where the README's commands run: a temporary directory standing in for a broker host.

Each sandbox has its own SQLite store, directory bucket and generated broker log dir (or
several brokers' dirs), and every ``TIERFLOW_*`` variable of the calling shell is dropped, so
nothing reaches the checkout's ``data/`` or a developer's settings. Commands run either
in-process (``run_cli``: the same ``main`` the console script calls) or in a real shell.
"""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tierflow.cli import main
from tierflow.demo.broker import generate_log_dir
from tierflow.demo.topics import TopicSpec
from tierflow.kafka.batch_builder import Record, build_batch

PROJECT = Path(__file__).resolve().parents[2]
# 2026-04-01T00:00:00Z: the generated records end here, so the README's
# `tierflow retention --now 2026-05-01T02:00:00Z` finds them past its 7-day retention.ms.
RECORDS_END_MS = 1_775_001_600_000
ORDERS = TopicSpec(name="orders", partitions=2, segments=3, transactional=True)
PAYMENTS = TopicSpec(name="payments", partitions=1, segments=2)


@dataclass(frozen=True)
class Ran:
    """One command as run: what the README says, what ran, and what came back."""

    command: str
    argv: tuple[str, ...]
    code: int | None  # None: not run (an earlier command of its `&&` line failed)
    out: str = ""
    err: str = ""
    wrote: bool | None = None  # whether the store or the bucket changed (in-process runs)


def sandbox_env(base: Path) -> dict[str, str]:
    """The settings every sandbox sets; the log dirs come from the README's own lines."""
    return {
        "TIERFLOW_DATA_DIR": str(base / "data"),
        "TIERFLOW_DB_URL": f"sqlite:///{base / 'tierflow.db'}",
        "TIERFLOW_REMOTE_STORAGE": str(base / "bucket"),
    }


def enter_sandbox(mp: pytest.MonkeyPatch, base: Path) -> None:
    """Drop the caller's TIERFLOW_* settings, set the sandbox's, and work from ``base``."""
    for name in [n for n in os.environ if n.startswith("TIERFLOW_")]:
        mp.delenv(name)
    for name, value in sandbox_env(base).items():
        mp.setenv(name, value)
    mp.chdir(base)


def shell_env(base: Path | None = None) -> dict[str, str]:
    """A shell's environment without the caller's TIERFLOW_* settings (with the sandbox's, for
    a ``base``), and this interpreter's `tierflow` and `airflow` first on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TIERFLOW_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return {**env, **(sandbox_env(base) if base else {})}


def run_cli(command: str, argv: list[str] | None = None) -> Ran:
    """``command`` (or ``argv``, its placeholders filled) through the CLI's ``main``."""
    argv = argv if argv is not None else shlex.split(command)
    assert argv[0] == "tierflow", command
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv[1:])
        except SystemExit as exc:  # --help, --version and argparse's usage errors
            code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 2
    return Ran(command, tuple(argv), code, out.getvalue(), err.getvalue())


def run_shell(script: str, env: dict[str, str], cwd: Path = PROJECT) -> Ran:
    """``script`` in bash, as a reader's terminal runs it."""
    done = subprocess.run(
        ["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    return Ran(script, ("bash", "-c", script), done.returncode, done.stdout, done.stderr)


def writes(base: Path) -> tuple[int, tuple[str, ...]]:
    """What a command may have written: the store's state transitions and the bucket's files."""
    store, bucket = base / "tierflow.db", base / "bucket"
    events = 0
    if store.exists():
        with contextlib.closing(sqlite3.connect(store)) as db:
            events = db.execute("SELECT count(*) FROM metadata_events").fetchone()[0]
    files = sorted(str(p.relative_to(bucket)) for p in bucket.rglob("*")) if bucket.exists() else []
    return events, tuple(files)


def generate_broker(log_dir: Path, *topics: TopicSpec, broker_id: int = 0) -> None:
    """A broker's log dir holding ``topics`` (the same seed: replicas agree byte for byte)."""
    generate_log_dir(log_dir, topics=topics, seed=3, now_ms=RECORDS_END_MS)
    meta = log_dir / "meta.properties"
    text = meta.read_text().replace("broker.id=0", f"broker.id={broker_id}")
    meta.write_text(text.replace("node.id=0", f"node.id={broker_id}"))


def write_batches(path: Path, count: int = 4) -> list[str]:
    """A file of record batches, as ``tierflow diskless produce`` reads them; returns the keys."""
    keys, batches = [], []
    for number in range(count):
        records = [
            Record(key=f"click-{number}-{i}".encode(), value=b'{"page": "/"}', timestamp=at)
            for i, at in enumerate(range(RECORDS_END_MS, RECORDS_END_MS + 3))
        ]
        keys += [r.key.decode() for r in records if r.key]
        batches.append(build_batch(records, base_offset=0, leader_epoch=0))
    path.write_bytes(b"".join(batches))
    return keys


def need_program(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"`{name}` is not on PATH")
    return found
