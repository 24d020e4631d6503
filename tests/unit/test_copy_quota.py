"""The copy quota (KIP-956's remote.log.manager.copy.max.bytes.per.second) as a shared GCRA:
the budget of one broker is one file, every reading process draws on it, and no byte is free.

The clock and the sleep are passed in, so nothing here waits or measures time."""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

import pytest

from tierflow.copy_quota import CELLS, CopyQuota, quota_for, reserve

RATE = 1000  # bytes per second


def test_a_burst_goes_at_once_then_bytes_are_due_at_the_rate(tmp_path: Path) -> None:
    cell = tmp_path / "broker-1"
    waits = [reserve(cell, 500 / RATE, 1.0, now=10.0) for _ in range(6)]
    # 1.5 s worth goes at once (the burst and the first cell), then every 500 B waits 0.5 s more.
    assert waits == [0.0, 0.0, 0.0, 0.5, 1.0, 1.5]


def test_an_idle_budget_does_not_bank_more_than_the_burst(tmp_path: Path) -> None:
    cell = tmp_path / "broker-1"
    reserve(cell, 1.0, 1.0, now=0.0)
    assert [reserve(cell, 1.0, 1.0, now=100.0) for _ in range(3)] == [0.0, 0.0, 1.0]


def test_take_sleeps_what_the_budget_says(tmp_path: Path) -> None:
    slept: list[float] = []
    quota = CopyQuota(tmp_path / "broker-1", RATE, burst_s=0.0)
    for _ in range(3):
        quota.take(250, clock=lambda: 5.0, sleep=slept.append)
    assert slept == [0.25, 0.5]


def _draw(cell: str, takes: int, barrier: Any) -> None:
    barrier.wait(timeout=60)
    for _ in range(takes):
        reserve(Path(cell), 0.001, 0.0, now=0.0)


def test_processes_draw_on_one_budget_and_none_gets_bytes_free(tmp_path: Path) -> None:
    """Four processes, 200 reservations each, all at the same instant: the budget's time moved
    by exactly the sum of their costs, so each one was counted once and none skipped."""
    cell = tmp_path / "broker-1"
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(4)
    workers = [context.Process(target=_draw, args=(str(cell), 200, barrier)) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0
    assert float(cell.read_text()) == pytest.approx(4 * 200 * 0.001)


def _log_dir(base: Path, node_id: int | None) -> Path:
    log_dir = base / f"logs-{node_id}"
    (log_dir / "orders-0").mkdir(parents=True)
    if node_id is not None:
        (log_dir / "meta.properties").write_text(f"version=1\nnode.id={node_id}\n")
    return log_dir


def test_a_brokers_log_dirs_share_its_budget_and_brokers_do_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIERFLOW_COPY_MAX_BYTES_PER_SECOND", str(RATE))
    monkeypatch.setenv("TIERFLOW_DATA_DIR", str(tmp_path / "data"))
    first, second, other = (
        _log_dir(tmp_path / name, node) for name, node in (("a", 1), ("b", 1), ("c", 2))
    )
    segment = Path("orders-0") / "00000000000000000000.log"
    cells = {log_dir: quota_for(log_dir / segment) for log_dir in (first, second, other)}
    assert cells[first] == cells[second] == CopyQuota(tmp_path / "data" / CELLS / "broker-1", RATE)
    assert cells[other] is not None and cells[other].cell.name == "broker-2"


def test_no_quota_set_counts_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TIERFLOW_COPY_MAX_BYTES_PER_SECOND", raising=False)
    assert quota_for(_log_dir(tmp_path, 1) / "orders-0" / "x.log") is None
