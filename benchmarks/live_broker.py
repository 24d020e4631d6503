"""Does tierflow slow a live broker's producers? Produce latency beside a copy, three ways.

One Apache Kafka broker (``dev/kafka_broker.py``, its JVM with the JIT on) takes a backlog of
``--backlog-mib`` MiB in ``--partitions`` partitions (random, incompressible values, 16 MiB
segments). Then a kafka-python producer sends ``--rate`` records a second of ``--record-bytes``
bytes (acks=all, linger 0) for ``--seconds`` seconds, and every record's latency is taken from
send() to its acknowledgement, three times in a row:

1. alone: the ceiling the other two are shown against;
2. beside ``tierflow copy`` at full speed: the copy of the whole backlog from the broker's disk,
   started again on an empty store and bucket each time it finishes, so it reads all along
   (in one process that imported tierflow before the measurement starts);
3. the same copy under ``TIERFLOW_COPY_MAX_BYTES_PER_SECOND`` (``--quota-mib`` MiB/s).

It prints p50 and p99 for each, and each against the first, and the copy's rate in segment
bytes as its last progress line gave it: the quota counts what a copy reads of the disk, and a
copy reads each byte twice today (its checks, then its upload), so it copies at half the quota.
KIP-405 published a produce p99 of 25 ms with tiering against 21 ms without (1.19x) on its
test cluster; the last line says where tierflow stands beside it. On a 2-core machine the
broker, the producer and the copy share the same two cores, which a production broker does not.

Run: .venv/bin/python benchmarks/live_broker.py [--seconds 20] [--rate 2000]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import NewTopic

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dev.kafka_broker import KafkaCluster, new_cluster  # noqa: E402

MIB = 1024 * 1024
TOPIC = "bench"
KIP_405 = (21.0, 25.0)  # produce p99 ms without and with tiering, as KIP-405 reports
BROKER_JVM = ("-Xms1g", "-Xmx1g", "-XX:+UseG1GC")


def main() -> None:
    if sys.argv[1:2] == ["--copy-worker"]:
        copy_worker(*sys.argv[2:5])
        return
    args = _parser().parse_args()
    base = Path(tempfile.mkdtemp(prefix="tierflow-live-broker-"))
    cluster = new_cluster(base / "kafka", overrides={"log.segment.bytes": str(16 * MIB)})
    cluster.jvm = BROKER_JVM
    try:
        cluster.start()
        _prepare(cluster, args)
        runs = {
            "alone": _measure(cluster, args, quota=None),
            "copy at full speed": _measure(cluster, args, quota=""),
            f"copy at {args.quota_mib} MiB/s": _measure(cluster, args, str(args.quota_mib * MIB)),
        }
        _report(runs, args)
    finally:
        cluster.stop()
        shutil.rmtree(base, ignore_errors=True)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20, help="each measurement's length")
    parser.add_argument("--rate", type=int, default=2000, help="records produced a second")
    parser.add_argument("--record-bytes", type=int, default=1024)
    parser.add_argument("--backlog-mib", type=int, default=64, help="what the copy reads")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--quota-mib", type=int, default=16, help="the copy quota, MiB/s")
    return parser


def _prepare(cluster: KafkaCluster, args: argparse.Namespace) -> None:
    """The topic, and the backlog the copy will read."""
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    admin.create_topics([NewTopic(TOPIC, args.partitions, 1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, linger_ms=20, acks=1)
    value = os.urandom(64 * 1024)
    for _ in range(args.backlog_mib * MIB // len(value)):
        producer.send(TOPIC, os.urandom(16) + value)
    producer.flush()
    producer.close()
    time.sleep(2)  # the high watermark checkpoint catches up


def _measure(cluster: KafkaCluster, args: argparse.Namespace, quota: str | None) -> Run:
    """Produce latencies for ``args.seconds``, with a copy looping beside unless ``quota`` is
    None ("" copies at full speed)."""
    if quota is None:
        return Run(_produce(cluster, args))
    node = cluster.nodes[0]
    worker = subprocess.Popen(
        [sys.executable, __file__, "--copy-worker", str(node.log_dir), node.bootstrap, quota],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert worker.stdout is not None and worker.stderr is not None
    worker.stdout.readline()  # "ready": imported, about to copy
    rates: list[str] = []
    reader = threading.Thread(target=_copy_rates, args=(worker.stderr, rates), daemon=True)
    reader.start()
    time.sleep(1)  # the copy is reading by the time the producer starts
    try:
        return Run(_produce(cluster, args), rates[-1] if rates else "?")
    finally:
        worker.kill()
        worker.wait()


@dataclass
class Run:
    latencies_ms: list[float]
    copy_rate: str = ""  # the copy's read rate as its progress line last gave it


def _copy_rates(stderr: IO[str], rates: list[str]) -> None:
    """The rate of each ``copy:`` progress line (one every 10 s, and one at each end)."""
    for line in stderr:
        if found := re.search(r"^copy: .*?([\d.]+ [KMG]iB/s)", line):
            rates.append(found[1])


def _produce(cluster: KafkaCluster, args: argparse.Namespace) -> list[float]:
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all", linger_ms=0)
    latencies: list[float] = []
    payload = os.urandom(args.record_bytes)
    tick, per_tick = 0.01, max(1, args.rate // 100)
    start = time.perf_counter()
    while (now := time.perf_counter()) - start < args.seconds:
        for _ in range(per_tick):
            sent = time.perf_counter()
            future = producer.send(TOPIC, payload)
            future.add_callback(lambda _m, sent=sent: latencies.append(time.perf_counter() - sent))
        time.sleep(max(0.0, tick - (time.perf_counter() - now)))
    producer.flush()
    producer.close()
    return [1000 * s for s in latencies]


def copy_worker(log_dir: str, bootstrap: str, quota: str) -> None:
    """``tierflow copy`` of every partition, on an empty store and bucket each time, until
    killed."""
    from tierflow.cli import main as tierflow

    os.environ.update(
        TIERFLOW_LOG_DIRS=log_dir,
        TIERFLOW_KAFKA_BOOTSTRAP=bootstrap,
        TIERFLOW_STORAGE_LAYOUT="plain",
        TIERFLOW_COPY_MAX_BYTES_PER_SECOND=quota,
    )
    print("ready", flush=True)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # what it copied: nobody reads it
    while True:
        data = Path(tempfile.mkdtemp(prefix="tierflow-copy-"))
        os.environ["TIERFLOW_DATA_DIR"] = str(data)
        tierflow(["topics", "register", TOPIC, "--config", "remote.storage.enable=true"])
        tierflow(["copy"])
        shutil.rmtree(data, ignore_errors=True)


def _report(runs: dict[str, Run], args: argparse.Namespace) -> None:
    p50, p99 = _percentiles(runs["alone"].latencies_ms)
    print(f"produce latency, {args.rate} records/s of {args.record_bytes} B, acks=all:")
    for name, run in runs.items():
        q50, q99 = _percentiles(run.latencies_ms)
        print(
            f"  {name:22s} p50 {q50:7.2f} ms ({q50 / p50:4.2f}x)   "
            f"p99 {q99:7.2f} ms ({q99 / p99:4.2f}x)   {len(run.latencies_ms)} records"
            + (f"   copy read {run.copy_rate}" if run.copy_rate else "")
        )
    _, full99 = _percentiles(runs["copy at full speed"].latencies_ms)
    quota99 = _percentiles(list(runs.values())[-1].latencies_ms)[1]
    without, with_tiering = KIP_405
    print(
        f"KIP-405: p99 {with_tiering:.0f} ms with tiering against {without:.0f} ms without "
        f"({with_tiering / without:.2f}x); tierflow: {full99 / p99:.2f}x at full speed, "
        f"{quota99 / p99:.2f}x under the quota"
    )


def _percentiles(values: list[float]) -> tuple[float, float]:
    cuts = statistics.quantiles(values, n=100)
    return cuts[49], cuts[98]


if __name__ == "__main__":
    main()
