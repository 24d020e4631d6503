"""A copy's serial work per partition does not grow with the active segment (issue 34).

Every ``tierflow copy`` and retention run asks each partition it plans for its log end offset
and its last stable offset, in the parent, one partition after another. Both are read from the
active segment, which a broker fills up to ``segment.bytes`` (1 GiB by default). This writes
two log dirs of the same partitions (a few small rolled segments each, a producer snapshot at
every roll as a broker leaves them) that differ only in the active segment: 256 KiB, or
``--active-mib``. It then runs ``tierflow copy --json`` on each and compares the prepare
step's seconds (``--json``'s ``seconds``). The figure is their ratio, 1.0 when the active
segment costs the copy nothing; beside it, in the same run, what one walk over the big active
segment's batch headers costs: what the copy read per partition, twice, before it began at
the offset index's last entry (Kafka's ``LogSegment.readNextOffset``) and stopped the last
stable offset's walk at the active segment when no transaction is open below it.

Run: .venv/bin/python benchmarks/active_segment.py [--active-mib 512] [--partitions 4]
     [--batch-kib 16]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from big_segments import SMALL_ACTIVE_BYTES, build_templates
from tiered_topic import build_topic

from tierflow.config import Settings
from tierflow.kafka.record_batch import iter_batches
from tierflow.runtime import partition_logs

MIB = 1 << 20
ROLLED, ROLLED_MIB = 2, 4
RECORD_BYTES = 320  # about what one of tierflow.demo's JSON records takes in a batch
GOAL_RATIO = 1.5  # prepare beside a big active segment, over prepare beside a small one


def write_log_dir(base: Path, args: argparse.Namespace, active_bytes: int) -> Settings:
    """``args.partitions`` partitions of one topic, registered in a fresh store."""
    settings = Settings.embedded(base)
    per_batch = max(1, args.batch_kib * 1024 // RECORD_BYTES)
    templates = build_templates(records_per_batch=per_batch)
    build_topic(
        settings, "active", args.partitions, ROLLED_MIB * MIB, ROLLED, templates, active_bytes
    )
    os.sync()
    return settings


def prepare_s(settings: Settings) -> float:
    """The prepare step of one ``tierflow copy`` over the log dir, from its --json."""
    command = [sys.executable, "-m", "tierflow.cli", "copy", "--json", "--no-spark"]
    env = {**os.environ, **settings.as_env()}
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return float(json.loads(done.stdout)["seconds"]["prepare_s"])


def full_walk_s(settings: Settings) -> float:
    """One walk over the first partition's active segment, every batch header from byte 0."""
    active = partition_logs(settings.log_dirs)[0].segments()[-1]
    started = time.perf_counter()
    for _ in iter_batches(active.log_path, validate_crc=False):
        pass
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--active-mib", type=int, default=512)
    parser.add_argument("--partitions", type=int, default=4)
    # A producer's default batch.size: what a busy partition's batches come close to.
    parser.add_argument("--batch-kib", type=int, default=16)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tierflow-active-") as tmp:
        small = write_log_dir(Path(tmp, "small"), args, SMALL_ACTIVE_BYTES)
        big = write_log_dir(Path(tmp, "big"), args, args.active_mib * MIB)
        small_s, big_s = prepare_s(small), prepare_s(big)
        walk_s = full_walk_s(big)
    ratio = big_s / small_s
    verdict = "met" if ratio <= GOAL_RATIO else "MISSED"
    print(
        f"{args.partitions} partitions, {ROLLED} rolled segments of {ROLLED_MIB} MiB each, "
        f"batches of about {args.batch_kib} KiB"
    )
    print(f"prepare beside 256 KiB active segments  {small_s:6.3f} s")
    print(
        f"prepare beside {args.active_mib} MiB active segments  {big_s:6.3f} s: "
        f"{ratio:.2f}x (goal <= {GOAL_RATIO}x, {verdict})"
    )
    print(
        f"one walk over a {args.active_mib} MiB active segment's batch headers  {walk_s:.3f} s "
        f"(the copy made two per partition before: {2 * walk_s * args.partitions:.1f} s)"
    )


if __name__ == "__main__":
    main()
