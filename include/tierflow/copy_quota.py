"""TIERFLOW_COPY_MAX_BYTES_PER_SECOND: what tierflow reads of each broker's disks, bounded.

Kafka's KIP-956 (``remote.log.manager.copy.max.bytes.per.second``) bounds the bytes a broker's
RemoteLogManager copies per second, so that tiering leaves the disk to producers and followers.
tierflow reads a broker's segment files from outside the broker, in as many processes as a copy
spreads over (a pool on every core, Spark executors, several shards), so the bound is kept per
broker in one small file that every process on the host shares: a generic cell rate algorithm
(GCRA), its theoretical arrival time in ``<data dir>/copy-quota/<broker>`` under an exclusive
flock. A reader takes the bytes it reads from the budget and sleeps until they are due; up to
``BURST_S`` worth may go at once, as Kafka's quota window allows a burst.

The broker is the ``node.id`` (or ``broker.id``) of the log dir's meta.properties, so processes
that know only a file's path agree on whose budget it is (a dir without one has a budget of its
own). Unset, nothing is counted: one environment lookup per read.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from tierflow.config import default_data_dir, variable
from tierflow.kafka.meta_properties import NODE_ID_KEYS, log_dir_properties

BURST_S = 1.0
CELLS = "copy-quota"
STEP = 1 << 20  # bytes a process takes from the budget at once
_owed: dict[Path, int] = {}  # per budget: bytes this process read and has not taken yet
_owed_lock = threading.Lock()


@dataclass(frozen=True)
class CopyQuota:
    """One broker's budget: ``bytes_per_second``, shared through the file ``cell``."""

    cell: Path
    bytes_per_second: int
    burst_s: float = BURST_S

    def take(
        self,
        nbytes: int,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> float:
        """Take ``nbytes`` from the budget and sleep until they are due; the seconds slept."""
        wait = reserve(self.cell, nbytes / self.bytes_per_second, self.burst_s, clock())
        if wait > 0:
            sleep(wait)
        return wait


def reserve(cell: Path, cost_s: float, burst_s: float, now: float) -> float:
    """GCRA: the bytes are due at the theoretical arrival time less the burst; the time moves
    on by their cost. Returns how long until they are due (0: now). One flock'd read-modify-
    write, so processes reserving together are served one after the other, never both free."""
    cell.parent.mkdir(parents=True, exist_ok=True)
    with open(cell, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        stored = handle.read().decode().strip()
        tat = max(float(stored) if stored else now, now)
        handle.seek(0)
        handle.truncate()
        handle.write(repr(tat + cost_s).encode())
    return max(0.0, tat - burst_s - now)


def quota_for(path: Path) -> CopyQuota | None:
    """The budget of the broker whose log dir holds the segment file ``path``; None when
    TIERFLOW_COPY_MAX_BYTES_PER_SECOND is unset."""
    raw = os.environ.get(variable("copy_max_bytes_per_second"), "").strip()
    if not raw:
        return None
    return _quota(raw, os.environ.get(variable("data_dir"), ""), Path(path).parent)


@lru_cache(maxsize=256)
def _quota(raw: str, data_dir: str, partition_dir: Path) -> CopyQuota:
    """Worked out once per partition directory: every batch of a copy asks. The value was
    checked (a whole number, at least 1) where the settings were read."""
    cells = Path(data_dir or default_data_dir()) / CELLS
    return CopyQuota(cells / _broker_cell(partition_dir.resolve().parent), int(raw))


def throttle(path: Path, nbytes: int) -> None:
    """Reading ``nbytes`` of the broker file ``path``: wait for them, when a quota is set.
    Reads are taken from the shared budget a ``STEP`` at a time, so a scan of 16 KiB batches
    costs one locked write of the budget file per MiB, not one per batch."""
    quota = quota_for(path)
    if quota is None:
        return
    with _owed_lock:
        owed = _owed.pop(quota.cell, 0) + nbytes
        if owed < STEP:
            _owed[quota.cell] = owed
            return
    quota.take(owed)


@lru_cache(maxsize=256)
def _broker_cell(log_dir: Path) -> str:
    properties = log_dir_properties(log_dir) if log_dir.is_dir() else {}
    broker = next((properties[k] for k in NODE_ID_KEYS if k in properties), None)
    if broker is not None:
        return f"broker-{broker}"
    return f"dir-{hashlib.sha256(str(log_dir).encode()).hexdigest()[:16]}"
