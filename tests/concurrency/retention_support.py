"""Two retention_expiry runs over one tiered store: the nightly run and a backfill of an earlier
night, each deleting local files (TIERFLOW_DELETE_LOCAL_SEGMENTS) and remote segments.

With retention.ms = 40 h and local.retention.ms = 20 h, the generated segments (ages as of
NOW_MS) expire like this; every segment the backfill expires, the nightly run expires too:

             remote segments                   local segments (base offsets)
partition    nightly (NOW)   backfill (-12 h)  nightly   backfill
orders-0     [0, 588]        [0, 588]          0, 589    0
orders-1     [0, 584]        [0, 584]          0, 585    0, 585
payments-0   [0, 728]        -                 0         0
"""

from __future__ import annotations

from pathlib import Path

from tests.retention.support import HOUR_MS, configure, copy_all
from tests.support.tiered import NOW_MS, Tiered

NIGHTLY = ("retention", NOW_MS)
BACKFILL = ("retention", NOW_MS - 12 * HOUR_MS)

# (topic, partition) -> start offsets of the remote segments, base offsets of local segments.
EXPIRED_REMOTE = {("orders", 0): [0], ("orders", 1): [0], ("payments", 0): [0]}
EXPIRED_LOCAL = {("orders", 0): [0, 589], ("orders", 1): [0, 585], ("payments", 0): [0]}
NEW_LOG_START = {("orders", 0): 589, ("orders", 1): 585, ("payments", 0): 729}
NEW_LOCAL_LOG_START = {("orders", 0): 1208, ("orders", 1): 1147, ("payments", 0): 729}


def tiered_and_expiring(t: Tiered) -> None:
    """Everything tiered; remote segments expire after 40 h, local ones after 20 h."""
    copy_all(t)
    for topic in ("orders", "payments"):
        configure(t, topic, retention_ms=40 * HOUR_MS, local_retention_ms=20 * HOUR_MS)


def local_files_gone(t: Tiered, before: dict[tuple[str, int], list[Path]]) -> dict:
    """Per partition, the base offsets whose .log file is no longer there."""
    return {
        key: sorted(int(p.stem) for p in files if not p.exists()) for key, files in before.items()
    }


def local_logs(t: Tiered) -> dict[tuple[str, int], list[Path]]:
    return {log_.key: [s.log_path for s in log_.segments()] for log_ in t.logs()}
