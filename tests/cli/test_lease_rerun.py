"""After a SIGKILL or a Ctrl-C of ``tierflow copy``, ``compact``, ``diskless merge`` or
``restore``, the same command run again, with no flag added, finishes at once: a lease whose
process is gone is taken over, and one given back on Ctrl-C is free. A lease whose process still
runs is not taken, and the refusal says on one stderr line who holds it, since and until when,
judged with the TTL configured now, and how to take it.

Every run is a real ``python -m tierflow.cli`` process, killed at a tierflow.faults crash point
by a real signal (TIERFLOW_CRASH_SIGNAL=INT is Ctrl-C's SIGINT)."""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.diskless.diskless_support import TOPIC_ID as DISKLESS_TOPIC_ID
from tests.diskless.merge_support import (
    GRACE_MS,
    PARTITIONS,
    SEGMENT_BYTES,
    assert_merged_exactly_once,
    consolidated,
)
from tests.support.compaction_data import CHANGELOG, tier_uncleaned
from tests.support.restored import assert_restored_as_written
from tests.support.tiered import build_tiered, eligible
from tierflow.cli import main
from tierflow.config import Settings
from tierflow.faults import ENV_CRASH_AT, ENV_CRASH_SIGNAL, ENV_CRASH_TRACE
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.metadata.lease_holder import LeaseHolder
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.metadata.store import MetadataStore
from tierflow.runtime import open_store
from tierflow.units import iso_utc

pytestmark = pytest.mark.slow

RUN_TIMEOUT_S = 180


def tierflow(
    settings: Settings, *argv: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m tierflow.cli ARGV`` on ``settings``, with ``env`` on top."""
    full = {**os.environ, **settings.as_env(), **(env or {})}
    for name in (ENV_CRASH_AT, ENV_CRASH_SIGNAL, ENV_CRASH_TRACE):
        if env is None or name not in env:
            full.pop(name, None)
    command = [sys.executable, "-m", "tierflow.cli", *argv]
    return subprocess.run(command, env=full, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)


def leases(store: MetadataStore) -> dict[tuple[str, int], str]:
    return {(p.topic_id, p.partition): p.lease_owner for p in store.partitions() if p.lease_owner}


# -- the four commands, each with a world to run in and the check of a finished run -----------


@dataclass
class World:
    settings: Settings
    argv: tuple[str, ...]
    check: Callable[[subprocess.CompletedProcess[str]], None]
    env: dict[str, str] = dataclasses.field(default_factory=dict)
    label: str = "orders-0"  # a partition the command takes the lease of


def copy_world(base: Path) -> World:
    t = build_tiered(base)

    def check(_done: subprocess.CompletedProcess[str]) -> None:
        for log_ in t.logs():
            topic_id = t.store.topic(log_.topic).topic_id
            rows = t.store.segments(topic_id, log_.partition, states=[S.COPY_SEGMENT_FINISHED])
            assert [(r.start_offset, r.end_offset) for r in rows] == eligible(log_)

    return World(t.settings, ("copy",), check)


def compact_world(base: Path) -> World:
    configs = {"changelog": {"cleanup_policy": "compact", "segment_bytes": 1 << 17}}
    t = build_tiered(base, topics=(CHANGELOG,), topic_configs=configs)
    tier_uncleaned(t)

    def check(done: subprocess.CompletedProcess[str]) -> None:
        compacted = r"changelog-0: 5 segments?\S*, .* compacted into"  # "(s)" or not
        assert re.search(compacted, done.stdout), done.stdout
        topic_id = t.store.topic("changelog").topic_id
        left = t.store.segments(topic_id, 0, states=[S.COPY_SEGMENT_STARTED])
        assert left == [], "the killed run's attempt was removed"

    return World(t.settings, ("compact",), check, label="changelog-0")


def merge_world(base: Path) -> World:
    world = consolidated(base, objects=3, committed_at=wall_clock_ms() - 60_000)
    before = {p: world.read_all(p) for p in range(PARTITIONS)}

    def check(_done: subprocess.CompletedProcess[str]) -> None:
        assert_merged_exactly_once(world, before)
        for partition in range(PARTITIONS):
            log = world.coordinator.log(DISKLESS_TOPIC_ID, partition)
            assert log.diskless_start_offset == log.high_watermark, "everything merged"

    argv = ("diskless", "merge", "--segment-bytes", str(SEGMENT_BYTES))
    env = {"TIERFLOW_DISKLESS_DELETE_GRACE_MS": str(GRACE_MS)}
    return World(world.settings, argv, check, env, label="events-0")


def restore_world(base: Path) -> World:
    t = build_tiered(base / "tiered")
    assert tierflow(t.settings, "copy").returncode == 0
    target = base / "restored"

    def check(_done: subprocess.CompletedProcess[str]) -> None:
        assert_restored_as_written(t.store, t.log("orders", 0), target)

    return World(t.settings, ("restore", "orders", "--to", str(target), "--partition", "0"), check)


WORLDS = {
    "copy": copy_world,
    "compact": compact_world,
    "merge": merge_world,
    "restore": restore_world,
}


def middle_restore_point(world: World, base: Path) -> str:
    """A crash point in the middle of a restore, whatever its steps are named: a restore into
    a scratch directory lists them (tierflow.faults' trace)."""
    trace = base / "trace"
    scratch = base / "scratch"
    argv = [scratch.as_posix() if a == world.argv[3] else a for a in world.argv]
    assert tierflow(world.settings, *argv, env={ENV_CRASH_TRACE: str(trace)}).returncode == 0
    points = [line.split("\t")[1] for line in trace.read_text().splitlines()]
    assert points, "a restore passes crash points"
    return points[len(points) // 2]


# (command, crash point, signal): each kill lands while the run holds a partition's lease
# (restore takes none: its rerun must finish all the same).
KILLS = [
    pytest.param("copy", "copy.after_lease", "KILL", id="copy SIGKILL"),
    pytest.param("copy", "copy.after_lease#2", "INT", id="copy Ctrl-C, two leases held"),
    pytest.param("compact", "compaction.after_started", "KILL", id="compact SIGKILL"),
    pytest.param("compact", "compaction.after_scan", "INT", id="compact Ctrl-C in the job"),
    pytest.param("merge", "merge.after_started", "KILL", id="merge SIGKILL"),
    pytest.param("merge", "merge.after_run", "INT", id="merge Ctrl-C in the job"),
    pytest.param("restore", None, "KILL", id="restore SIGKILL"),
    pytest.param("restore", None, "INT", id="restore Ctrl-C"),
]


@pytest.mark.parametrize(("command", "point", "how"), KILLS)
def test_a_plain_rerun_after_a_kill_or_ctrl_c_finishes_at_once(
    tmp_path: Path, command: str, point: str | None, how: str
) -> None:
    world = WORLDS[command](tmp_path)
    point = point or middle_restore_point(world, tmp_path)
    crash = {**world.env, ENV_CRASH_AT: point, ENV_CRASH_SIGNAL: how}
    killed = tierflow(world.settings, *world.argv, env=crash)
    expected = -signal.SIGKILL if how == "KILL" else 130
    assert killed.returncode == expected, killed.stdout + killed.stderr
    held = leases(open_store(world.settings))
    if how == "INT" or command == "restore":
        assert held == {}, "Ctrl-C gives every lease back (and a restore takes none)"
    else:
        assert held and all(owner.startswith("cli:") for owner in held.values()), held

    rerun = tierflow(world.settings, *world.argv, env=world.env)  # TTL: the default 900 s
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert "lease held" not in rerun.stderr, rerun.stderr
    took_over = "taking the lease of 'cli:" in rerun.stderr
    assert took_over == (how == "KILL" and command != "restore"), rerun.stderr
    world.check(rerun)
    assert leases(open_store(world.settings)) == {}


# -- a lease held by a live process, or by one that cannot be checked -------------------------


def hold(world: World, owner: str, holder: LeaseHolder, taken_ms: int) -> None:
    """Take ``world.label``'s lease as ``owner`` (its partition registered first, as the
    command itself would)."""
    store = open_store(world.settings)
    name, partition = world.label.rsplit("-", 1)
    topic_id = store.topic(name).topic_id
    store.ensure_partition(topic_id, int(partition), log_start_offset=0, local_log_start_offset=0)
    lease = store.take_lease(
        topic_id, int(partition), owner, now_ms=taken_ms, ttl_ms=900_000, holder=holder
    )
    assert lease is not None


def refusal(done: subprocess.CompletedProcess[str], label: str) -> str:
    """The one stderr line that names ``label``, naming it once; stdout never speaks of it."""
    lines = [line for line in done.stderr.splitlines() if label in line]
    assert len(lines) == 1, done.stderr
    (line,) = lines
    assert line.startswith(f"tierflow: error: {label}: copy lease held by "), line
    assert line.count(label) == 1, line
    assert "lease" not in done.stdout, done.stdout
    return line


@pytest.mark.parametrize("command", ["copy", "compact", "merge"])
def test_a_lease_whose_process_runs_is_not_taken_and_its_holder_is_named(
    tmp_path: Path, command: str
) -> None:
    world = WORLDS[command](tmp_path)
    me = LeaseHolder.this_process()  # this test's process: alive, on this host
    owner = f"cli:{me.host}:{me.pid}"
    taken = wall_clock_ms()
    hold(world, owner, me, taken)

    refused = tierflow(world.settings, *world.argv, env=world.env)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    line = refusal(refused, world.label)
    assert f"{owner!r} (pid {me.pid} on {me.host}, still running) since {iso_utc(taken)}" in line
    assert f"until {iso_utc(taken + 900_000)} ({'TIERFLOW_COPY_LEASE_TTL_S'}=900)" in line
    todo = "; let it finish, or stop it and rerun (its lease is then taken over at once)"
    assert line.endswith(todo), line
    assert owner in leases(open_store(world.settings)).values(), "still this process's"


def test_the_ttl_configured_now_applies_to_a_lease_already_held(tmp_path: Path) -> None:
    """A holder on another host cannot be checked: the lease waits for its TTL, counted from
    its taking with the TTL set when the rerun looks, or for ``--owner``."""
    world = copy_world(tmp_path)
    elsewhere = dataclasses.replace(LeaseHolder.this_process(), host="another-host", pid=4242)
    owner = "cli:another-host:4242"
    taken = wall_clock_ms() - 120_000  # two minutes ago, for 900 s as it was configured then
    hold(world, owner, elsewhere, taken)

    refused = tierflow(world.settings, "copy", "--partition", "0", "--topic", "orders")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    line = refusal(refused, "orders-0")
    assert "(pid 4242 on another-host, which cannot be checked from this host)" in line
    until = iso_utc(taken + 900_000)
    assert f"until {until} ({'TIERFLOW_COPY_LEASE_TTL_S'}=900); wait until {until}" in line, line
    assert line.endswith(f"take it over now with --owner {owner}"), line

    lowered = tierflow(world.settings, "copy", env={"TIERFLOW_COPY_LEASE_TTL_S": "60"})
    assert lowered.returncode == 0, lowered.stdout + lowered.stderr
    world.check(lowered)


def test_the_same_owner_takes_a_lease_over_at_once(tmp_path: Path) -> None:
    """The way out the refusal names, for a holder that cannot be checked."""
    world = copy_world(tmp_path)
    elsewhere = dataclasses.replace(LeaseHolder.this_process(), host="another-host", pid=4242)
    hold(world, "cli:another-host:4242", elsewhere, wall_clock_ms())
    done = tierflow(world.settings, "copy", "--owner", "cli:another-host:4242")
    assert done.returncode == 0, done.stdout + done.stderr
    world.check(done)


@pytest.mark.parametrize(
    "argv", [["copy"], ["compact"], ["diskless", "merge"]], ids=["copy", "compact", "merge"]
)
def test_help_says_the_default_owner_and_how_a_rerun_takes_the_lease(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "[cli:<host>:<pid>]" in text and "process is gone" in text, text
    assert not re.search(r"\[cli\]", text), text
