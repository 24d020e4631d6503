"""How close Spark tiering gets to the machine's zstd + AES-GCM ceiling.

Target (issue): with Spark local[2], 4 MiB chunks and zstd plus AES-GCM over >= 1 GiB of
segments, reach >= 70% of the transform ceiling measured in the same run. The ceiling is the
chunked storage manager's own per-chunk transform (tierflow.transform's zstd, then AES-GCM) on
the chunks of one segment in a tight loop on one core, times the number of cores.

The Spark figure times exactly what the segment_copy DAG submits: the engine's ``run_rows``
of the copy's ``SEGMENT_REWRITE`` over one RewriteJob per segment, one Spark task each, into
the local bucket (read, transform, sha256, write, fsync). A one-core breakdown of those steps
shows where the difference goes.

Run: .venv/bin/python benchmarks/tiering_throughput.py [--gib 1] [--segment-mib 128]
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from itertools import repeat
from pathlib import Path
from typing import Any

import crc32c
from big_segments import BuiltPartition, BuiltSegment, build_partition
from local_spark import local_spark, timed_collect, warm

from tierflow.config import Settings
from tierflow.engine.kind import run_rows
from tierflow.engine.worker import Worker
from tierflow.ids import new_kafka_uuid
from tierflow.kafka.leader_epoch import entries_before, leader_epoch_checkpoint_bytes
from tierflow.lifecycle.copy.rewrite import SEGMENT_REWRITE, RewriteJob, rewrite_segment
from tierflow.rsm import LogSegmentData, RemoteSegment
from tierflow.runtime import open_storage
from tierflow.transform.chunking import read_chunks
from tierflow.transform.encryption import DataKey
from tierflow.transform.keyring import KeyRing
from tierflow.transform.pipeline import ChunkTransform

ROOT = Path(__file__).resolve().parents[1]
TOPIC = "bench"
TARGET_RATIO = 0.70
MIB = 1 << 20
REWRITE_ALL = "rewrite_segment, all segments"


@dataclass(frozen=True)
class Ceiling:
    per_core_mib_s: float
    cores: int
    compression_ratio: float

    @property
    def mib_s(self) -> float:
        return self.per_core_mib_s * self.cores


@dataclass(frozen=True)
class CpuSample:
    """CPU seconds so far: machine busy and idle, and this process tree by program (python
    for the driver and Spark's workers, java for Spark's JVM)."""

    busy_s: float
    idle_s: float
    ours_s: dict[str, float]

    @classmethod
    def take(cls) -> CpuSample:
        tick = os.sysconf("SC_CLK_TCK")
        with open("/proc/stat") as stat:
            fields = [int(v) for v in stat.readline().split()[1:]]
        idle = fields[3] + fields[4]  # idle + iowait
        parents: dict[int, int] = {}
        usage: dict[int, tuple[str, int]] = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                raw = (entry / "stat").read_text()
            except OSError:
                continue  # exited meanwhile
            name = raw[raw.index("(") + 1 : raw.rindex(")")]
            rest = raw[raw.rindex(")") + 1 :].split()
            parents[int(entry.name)] = int(rest[1])
            usage[int(entry.name)] = (name, int(rest[11]) + int(rest[12]))  # utime + stime
        ours: dict[str, float] = {}
        for pid, (name, ticks) in usage.items():
            if _descends(pid, os.getpid(), parents):
                ours[name] = ours.get(name, 0.0) + ticks / tick
        return cls((sum(fields) - idle) / tick, idle / tick, ours)

    def since(self, before: CpuSample) -> dict[str, float]:
        """Core-seconds per consumer in between; "other" is other processes and the kernel."""
        spent = {name: used - before.ours_s.get(name, 0.0) for name, used in self.ours_s.items()}
        spent = {name: used for name, used in spent.items() if used >= 0.01}
        spent["other"] = self.busy_s - before.busy_s - sum(spent.values())
        spent["idle"] = self.idle_s - before.idle_s
        return spent


def _descends(pid: int, root: int, parents: dict[int, int]) -> bool:
    while pid > 1:
        if pid == root:
            return True
        pid = parents.get(pid, 0)
    return False


@dataclass(frozen=True)
class SparkRun:
    startup_s: float  # JVM, SparkContext and the warm-up job
    job_s: float  # the timed collect() only
    stored_bytes: int
    objects: int
    cpu_s: dict[str, float]  # core-seconds during the job, per consumer (see CpuSample)

    @property
    def wall_s(self) -> float:
        return self.startup_s + self.job_s


def rewrite_job(built: BuiltPartition, segment: BuiltSegment) -> RewriteJob:
    """The job prepare_copy would record for this segment (see segment_facts.inspect_segment)."""
    remote = RemoteSegment(
        TOPIC,
        built.topic_id,
        built.partition,
        new_kafka_uuid(),
        segment.base_offset,
        segment.next_offset - 1,
    )
    data = LogSegmentData(
        log_segment=segment.log_path,
        offset_index=segment.offset_index_path,
        time_index=segment.time_index_path,
        transaction_index=None,
        producer_snapshot_index=segment.snapshot_path,
        leader_epoch_index=leader_epoch_checkpoint_bytes(
            entries_before(built.leader_epochs, segment.next_offset)
        ),
    )
    return RewriteJob.build(remote, data, segment.size_in_bytes)


def measure_ceiling(
    log_path: Path, chunk_size: int, cores: int, min_seconds: float = 3.0
) -> Ceiling:
    """The RSM's per-chunk forward transform on in-memory chunks: no I/O, no hashing."""
    chunks = list(read_chunks(log_path, chunk_size))
    transform = ChunkTransform(compression=True, data_key=DataKey.generate())
    transform.forward(chunks[0])  # first-call setup stays out of the figure
    original = stored = 0
    started = time.perf_counter()
    while True:
        for chunk in chunks:
            stored += len(transform.forward(chunk))
            original += len(chunk)
        elapsed = time.perf_counter() - started
        if elapsed >= min_seconds:
            return Ceiling(original / elapsed / MIB, cores, original / stored)


def mandatory_mib_s(
    log_paths: list[Path], chunk_size: int, cores: int, store_in: Path | None = None
) -> float:
    """The work no copy of these segments can skip, on every core at once: one process per
    core reads its share of the segments and, per chunk, CRC32C, sha256, zstd-3 and AES-GCM
    (issue 34's ceiling). Wall time over all of it; the processes start before the clock.
    With ``store_in``, each process also writes what it encrypted there, a file per segment,
    fsynced, as any copy to that disk must: not the issue's ceiling, but this disk's floor."""
    shares = [log_paths[i::cores] for i in range(cores)]
    context = multiprocessing.get_context("spawn")
    try:
        with ProcessPoolExecutor(cores, mp_context=context) as pool:
            list(pool.map(_mandatory_work, [[] for _ in range(cores)], repeat(chunk_size)))
            started = time.perf_counter()
            work = pool.map(_mandatory_work, shares, repeat(chunk_size), repeat(store_in))
            total = sum(work)
            return total / (time.perf_counter() - started) / MIB
    finally:
        if store_in is not None:
            shutil.rmtree(store_in, ignore_errors=True)


def _mandatory_work(paths: list[Path], chunk_size: int, store_in: Path | None = None) -> int:
    transform = ChunkTransform(compression=True, data_key=DataKey.generate())
    done = 0
    for path in paths:
        digest = hashlib.sha256()
        with _stored(store_in, path) as write:
            for chunk in read_chunks(path, chunk_size):
                crc32c.crc32c(chunk)
                digest.update(chunk)
                write(transform.forward(chunk))
                done += len(chunk)
    return done


@contextmanager
def _stored(store_in: Path | None, segment: Path) -> Iterator[Callable[[bytes], object]]:
    """Where the mandatory work puts a segment's encrypted chunks: nowhere, or a file in
    ``store_in`` fsynced once the segment is done."""
    if store_in is None:
        yield len
        return
    store_in.mkdir(parents=True, exist_ok=True)
    with open(store_in / f"{segment.parent.name}-{segment.name}", "wb") as out:
        yield out.write
        out.flush()
        os.fsync(out.fileno())


def _rate(size: int, work: Callable[[], Any], repeat: int = 1) -> float:
    """MiB/s of ``work`` handling ``size`` bytes per call; best of ``repeat`` calls."""
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    return size / best / MIB


def breakdown(settings: Settings, jobs: list[RewriteJob], chunk_size: int) -> dict[str, float]:
    """One core: each step of a rewrite alone on the first segment, then whole rewrites of
    every segment in this process, to split the Spark gap into pipeline and Spark costs."""
    first = jobs[0]
    path = Path(first.log_segment)
    size = first.size_in_bytes
    chunks = list(read_chunks(path, chunk_size))
    data_key = DataKey.generate()
    packed = [ChunkTransform(compression=True, data_key=None).forward(c) for c in chunks]
    stored = [ChunkTransform(compression=False, data_key=data_key).forward(p) for p in packed]

    def read_file() -> None:
        for _ in read_chunks(path, chunk_size):
            pass

    def compress() -> None:
        transform = ChunkTransform(compression=True, data_key=None)
        for chunk in chunks:
            transform.forward(chunk)

    def encrypt() -> None:
        transform = ChunkTransform(compression=False, data_key=data_key)
        for blob in packed:
            transform.forward(blob)

    def sha256() -> None:
        digest = hashlib.sha256()
        for blob in stored:
            digest.update(blob)

    def write_fsync() -> None:
        target = settings.data_dir / "breakdown.bin"
        with open(target, "wb") as out:
            for blob in stored:
                out.write(blob)
            out.flush()
            os.fsync(out.fileno())
        target.unlink()

    rsm = open_storage(settings.updated(remote_storage=str(settings.data_dir / "scratch")))

    def rewrite_all() -> None:
        for job in jobs:
            result = rewrite_segment(replace(job, segment_id=new_kafka_uuid()), rsm)
            if result.error:
                raise RuntimeError(result.error)

    # Every rate is per MiB of original segment data, also for steps on the smaller zstd output,
    # so that their inverses add up to the time a rewrite spends per MiB.
    return {
        "read .log (page cache)": _rate(size, read_file, 3),
        "zstd level 3": _rate(size, compress, 2),
        "AES-256-GCM of the zstd output": _rate(size, encrypt, 3),
        "sha256 of the stored bytes": _rate(size, sha256, 3),
        "write + fsync of the stored bytes": _rate(size, write_fsync, 3),
        REWRITE_ALL: _rate(sum(j.size_in_bytes for j in jobs), rewrite_all),
    }


def run_spark(settings: Settings, jobs: list[RewriteJob], cores: int) -> SparkRun:
    """Start local[cores], warm the workers, then time the collect() the DAG's job runs."""
    started = time.perf_counter()
    spark = local_spark(cores, "tierflow-tiering-benchmark")
    try:

        def work(part: Iterable[dict]) -> Iterator[dict]:
            return run_rows(SEGMENT_REWRITE, Worker(settings), part)

        warm(spark, work)
        startup = time.perf_counter() - started
        print(f"  spark local[{cores}] up and warm in {startup:.1f} s", flush=True)
        rows = [job.as_dict() for job in jobs]
        before = CpuSample.take()
        job_s, results = timed_collect(spark, rows, work)
        cpu = CpuSample.take().since(before)
    finally:
        spark.stop()
    failed = [r["error"] for r in results if r["error"]]
    if failed or len(results) != len(jobs):
        raise RuntimeError(f"{len(failed)} of {len(jobs)} rewrites failed: {failed[:3]}")
    objects = [o for r in results for o in r["objects"]]
    return SparkRun(startup, job_s, sum(o["size"] for o in objects), len(objects), cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=1.0, help="segment data to tier, in GiB")
    parser.add_argument("--segment-mib", type=int, default=128, help="segment size in MiB")
    parser.add_argument("--chunk-mib", type=int, default=4, help="chunk size in MiB")
    parser.add_argument("--cores", type=int, default=2, help="Spark local[N] and ceiling x N")
    parser.add_argument(
        "--no-breakdown", action="store_true", help="skip the one-core step breakdown"
    )
    args = parser.parse_args()
    args.load_before = os.getloadavg()[0]
    chunk_size = args.chunk_mib * MIB
    count = max(1, round(args.gib * 1024 / args.segment_mib))

    with tempfile.TemporaryDirectory(prefix="tierflow-bench-") as tmp:
        base = Path(tmp)
        ring = KeyRing.generate(base / "keys", "bench")
        settings = Settings.embedded(
            base,
            storage_layout="chunked",
            compression=True,
            keyring=ring.path,
            chunk_size=chunk_size,
        )
        started = time.perf_counter()
        print(f"writing {count} x {args.segment_mib} MiB segments ...", flush=True)
        built = build_partition(
            settings.log_dirs[0],
            topic=TOPIC,
            segment_bytes=args.segment_mib * MIB,
            segments=count,
        )
        size = sum(s.size_in_bytes for s in built.rolled)
        written = time.perf_counter() - started
        # A broker's rolled segments reached the disk long before they are tiered; without
        # this, every fsync in the rewrite waits behind the writeback of the fresh segments.
        os.sync()
        print(
            f"  {size / MIB:.0f} MiB in {written:.1f} s, synced in "
            f"{time.perf_counter() - started - written:.1f} s",
            flush=True,
        )
        jobs = [rewrite_job(built, s) for s in built.rolled]

        print("measuring the transform ceiling (one core, in-memory chunks) ...", flush=True)
        ceiling = measure_ceiling(built.rolled[0].log_path, chunk_size, args.cores)
        rates: dict[str, float] = {}
        if not args.no_breakdown:
            print("one-core breakdown of a rewrite ...", flush=True)
            rates = breakdown(settings, jobs, chunk_size)

        print(f"tiering {len(jobs)} segments with Spark ...", flush=True)
        spark = run_spark(settings, jobs, args.cores)

    if rates:
        print_breakdown(rates, ceiling)
    print_summary(args, size, len(jobs), ceiling, spark, rates)


def print_breakdown(rates: dict[str, float], ceiling: Ceiling) -> None:
    print()
    print("one core, MiB/s of original data (steps on the first segment):")
    for step, rate in rates.items():
        print(f"  {step:36s} {rate:8.1f}")
    print(f"  {'zstd + AES-GCM loop (the ceiling)':36s} {ceiling.per_core_mib_s:8.1f}")


def print_summary(
    args: argparse.Namespace,
    size: int,
    segments: int,
    ceiling: Ceiling,
    spark: SparkRun,
    rates: dict[str, float],
) -> None:
    """The block the README quotes."""
    spark_mib_s = size / spark.job_s / MIB
    ratio = spark_mib_s / ceiling.mib_s
    verdict = "meets" if ratio >= TARGET_RATIO else "below"
    print()
    print("== tiering throughput ==")
    print(
        f"data             {size / MIB:.0f} MiB in {segments} segments of {args.segment_mib} MiB, "
        f"{args.chunk_mib} MiB chunks, zstd-3 + AES-256-GCM"
    )
    print(
        f"ceiling          {ceiling.mib_s:.1f} MiB/s "
        f"({ceiling.per_core_mib_s:.1f} MiB/s per core x {ceiling.cores})"
    )
    print(
        f"spark local[{args.cores}]   {spark_mib_s:.1f} MiB/s "
        f"(job {spark.job_s:.2f} s; wall {spark.wall_s:.1f} s incl. "
        f"{spark.startup_s:.1f} s startup + warm-up)"
    )
    print(f"ratio            {ratio:.0%} of ceiling ({verdict} the {TARGET_RATIO:.0%} target)")
    in_process = rates.get(REWRITE_ALL)
    if in_process:
        print(
            f"in-process       {in_process:.1f} MiB/s on one core "
            f"({in_process / ceiling.per_core_mib_s:.0%} of per-core ceiling; spark reaches "
            f"{spark_mib_s / (in_process * args.cores):.0%} of it x {args.cores})"
        )
    spent = ", ".join(f"{name} {used:.2f}" for name, used in spark.cpu_s.items())
    print(
        f"cpu during job   {spent} core-s of {spark.job_s * args.cores:.2f} "
        f"(load avg before {args.load_before:.2f})"
    )
    print(
        f"stored           {spark.stored_bytes / MIB:.0f} MiB in {spark.objects} objects "
        f"(compression {size / spark.stored_bytes:.2f}x)"
    )


if __name__ == "__main__":
    main()
