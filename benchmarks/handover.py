"""Hand a backlog over to the brokers, or let them tier it: tierflow against Kafka's copier.

One Apache Kafka broker (``dev/kafka_broker.py``, its JVM with the JIT on) tiers with Kafka's
LocalTieredStorage and the topic-based metadata manager (``dev.kafka_broker.tiering``). The
same backlog of ``--gib`` GiB (``--partitions`` partitions, ``--segment-mib`` MiB segments,
random, incompressible values, produced record for record into both) goes into two topics
created with ``remote.storage.enable=false``; producing is not timed. Then, one after the
other:

1. tierflow: ``tierflow copy --no-spark --workers <cores>`` of topic A (the ``kafka-local``
   layout, its bucket the broker's ``rsm.config.dir``, an embedded SQLite store), then
   ``tierflow topics handover A --yes``, until ListOffsets LATEST_TIERED (-5) of every
   partition of A reaches the end offset of its last rolled segment: the broker serves the
   whole backlog from tierflow's copies. Each command is a process of its own, as a person
   runs it.
2. the broker: ``remote.storage.enable=true`` set on topic B (IncrementalAlterConfigs), until
   LATEST_TIERED of B reaches the same point: Kafka's RemoteLogManager copied it all, one
   segment at a time per partition on its copier threads (Kafka's defaults, printed).

Each timed step starts with its topic's segments read once (in the page cache, as a broker's
recent backlog is) and after sync(2): neither pays for the producers' writeback.
LocalTieredStorage does not fsync its copies and tierflow does, so the sync just after the
broker's copy is printed beside its time, not counted in it.

It prints both times, each one's rate in segment bytes (the rolled ``.log`` files), and the
broker's time over tierflow's. With ``--spark`` it also times ``tierflow copy --spark`` of
topic A first (into a scratch bucket and store, copy only); the faster copy path is the one
reported, and named. Last, from ``__remote_log_metadata`` after the broker has had
``SETTLE_S`` seconds more: the offsets of A that are in two finished segments (the broker
copying tierflow's again), which must be 0, and the broker's own segments of A (none: nothing
was produced after the hand-over).

Both copy a file as it is here (LocalTieredStorage copies the bytes; kafka-local is tierflow's
layout without chunks, compression or encryption), but tierflow also checks every batch's CRC,
writes each file fsynced and reads it back (sha256) before FINISHED; the broker checks
nothing. The broker's copier is timed with ``remote.log.manager.task.interval.ms`` at 500 ms
(``tiering``'s; Kafka's default is 30 s, which would add up to 30 s to its time).

Run: .venv/bin/python benchmarks/handover.py [--gib 2] [--partitions 4] [--segment-mib 128]
     [--spark] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic
from kafka.protocol.consumer.offsets import OffsetSpec
from kafka.structs import TopicPartition

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dev.kafka_broker import KafkaCluster, new_cluster, tiering  # noqa: E402
from tierflow.config import Settings  # noqa: E402
from tierflow.kafka.checkpoint import (  # noqa: E402
    REPLICATION_OFFSET_CHECKPOINT,
    read_offset_checkpoint,
)
from tierflow.kafka.cluster_metadata import read_cluster_topics  # noqa: E402
from tierflow.kafka.remote_log_metadata.records import SegmentMetadata  # noqa: E402
from tierflow.kafka.remote_log_metadata.serde import deserialize  # noqa: E402
from tierflow.kafka.remote_log_metadata.topic import MetadataTopic  # noqa: E402
from tierflow.metadata.states import RemoteLogSegmentState as S  # noqa: E402
from tierflow.runtime import open_store  # noqa: E402

MIB = 1024 * 1024
OURS, THEIRS = "handover-tierflow", "handover-broker"  # topic A, topic B
BROKER_JVM = ("-Xms1g", "-Xmx1g", "-XX:+UseG1GC")
BROKER_SETTINGS = (
    "remote.log.manager.thread.pool.size",
    "remote.log.manager.copier.thread.pool.size",
    "remote.log.manager.task.interval.ms",
    "remote.log.manager.copy.max.bytes.per.second",
)
POLL_S = 0.1
TIMEOUT_S = 1800.0
SETTLE_S = 5.0  # ten of the broker's task intervals: time to copy anything it wrongly would
FINISHED = 1  # COPY_SEGMENT_FINISHED on __remote_log_metadata


@dataclass(frozen=True)
class Backlog:
    """A topic's rolled segments, once produced: what each copier must tier."""

    topic: str
    topic_id: str
    ends: dict[int, int]  # partition -> end offset of its last rolled segment
    segments: int
    size: int  # bytes of the rolled .log files
    files: tuple[Path, ...] = ()  # every file of the rolled segments


def _warm_and_sync(backlog: Backlog) -> None:
    """What each timed step starts from: the topic's segments read once (in the page cache, as
    a broker's recent backlog is), and nothing dirty left to write back (sync(2))."""
    for path in backlog.files:
        with path.open("rb") as source:
            while source.read(8 * MIB):
                pass
    os.sync()


@dataclass
class Timed:
    seconds: float
    phases: dict[str, float] = field(default_factory=dict)
    path: str = ""  # tierflow's copy path: processes or spark
    writeback_s: float | None = None  # sync(2) just after, for a copier that does not fsync


def main() -> None:
    if sys.argv[1:2] == ["--produce-worker"]:
        produce_worker(sys.argv[2], [int(p) for p in sys.argv[3].split(",")], *sys.argv[4:6])
        return
    args = _parser().parse_args()
    cores = len(os.sched_getaffinity(0))
    log = (lambda text: print(text, file=sys.stderr, flush=True)) if args.json else _say
    base = Path(tempfile.mkdtemp(prefix="tierflow-handover-"))
    remote = base / "remote"  # the broker's rsm.config.dir, and tierflow's bucket
    cluster = new_cluster(base / "kafka", overrides=tiering(remote))
    cluster.jvm = BROKER_JVM
    try:
        cluster.start()
        log(f"{cores} cores, load average {os.getloadavg()[0]:.2f} before")
        log(f"producing {args.gib:g} GiB into {OURS} and {THEIRS} ...")
        ours, theirs = _prepare(cluster, args)
        settings = _tierflow_settings(cluster, base / "tierflow", remote)
        copies = {}
        if args.spark:
            log("tierflow copy on Spark, into a scratch bucket ...")
            copies["spark"] = _spark_copy(settings, base / "spark", ours)
        log("tierflow copy on every core, then the hand-over ...")
        tierflow = _time_tierflow(cluster, settings, ours, cores)
        copies["processes"] = tierflow.phases["copy"]
        tierflow = _best_path(tierflow, copies)
        log(f"the broker's own copier on {theirs.topic} ...")
        broker = _time_broker(cluster, theirs)
        time.sleep(SETTLE_S)
        checks = _check(cluster, settings, ours, theirs)
        figures = _figures(args, cores, _broker_settings(cluster), ours, theirs, copies)
        figures |= {"tierflow": asdict(tierflow), "broker": asdict(broker), "checks": checks}
        figures |= _rates(ours, tierflow, theirs, broker)
        if args.json:
            print(json.dumps(figures, indent=2))
        else:
            _report(figures)
    finally:
        cluster.stop()
        shutil.rmtree(base, ignore_errors=True)


def _say(text: str) -> None:
    print(text, flush=True)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gib", type=float, default=2.0, help="rolled data in each topic")
    parser.add_argument("--partitions", type=int, default=4, help="of each topic")
    parser.add_argument("--segment-mib", type=int, default=128, help="segment.bytes in MiB")
    parser.add_argument("--record-kib", type=int, default=16, help="each record's value")
    parser.add_argument("--producers", type=int, default=2, help="producer processes")
    parser.add_argument(
        "--spark", action="store_true", help="also time tierflow copy --spark (copy only)"
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    return parser


def _prepare(cluster: KafkaCluster, args: argparse.Namespace) -> tuple[Backlog, Backlog]:
    """Both topics with the same records, and what each must tier once the high watermark
    checkpoint (what tierflow reads) has passed every rolled segment."""
    configs = {"segment.bytes": str(args.segment_mib * MIB), "remote.storage.enable": "false"}
    ids = _create_topics(cluster, [OURS, THEIRS], args.partitions, configs)
    # Past a whole number of segments by half of one, so that --gib GiB roll.
    per_partition = int(args.gib * 1024 * MIB / args.partitions)
    per_partition += (args.segment_mib * MIB) // 2
    _produce(cluster, args, per_partition)
    log_dir = cluster.nodes[0].log_dir
    found = tuple(_backlog(log_dir, topic, ids[topic], args.partitions) for topic in (OURS, THEIRS))
    _wait_for_checkpoint(log_dir, found)
    return found


def _create_topics(
    cluster: KafkaCluster, topics: list[str], partitions: int, configs: dict[str, str]
) -> dict[str, str]:
    """The topics, asked again until the broker is registered; their ids (Kafka's form)."""
    deadline = time.monotonic() + 60
    while True:
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
        try:
            if admin.describe_cluster()["brokers"]:
                new = [NewTopic(t, partitions, 1, topic_configs=configs) for t in topics]
                admin.create_topics(new)
                break
        except Exception:
            if time.monotonic() > deadline:
                raise
        finally:
            admin.close()
        time.sleep(0.5)
    time.sleep(2)  # every partition has its leader
    found = read_cluster_topics(cluster.bootstrap, topics=topics)
    return {topic: str(found[topic]) for topic in topics}


def _produce(cluster: KafkaCluster, args: argparse.Namespace, per_partition: int) -> None:
    """``--producers`` processes, each with its share of the partitions, each record sent to
    the same partition of both topics: both hold the same data."""
    workers = max(1, min(args.producers, args.partitions))
    shares = [list(range(args.partitions))[i::workers] for i in range(workers)]
    started = time.perf_counter()
    running = [
        subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--produce-worker",
                cluster.bootstrap,
                ",".join(map(str, share)),
                str(per_partition),
                str(args.record_kib * 1024),
            ]
        )
        for share in shares
    ]
    if any(worker.wait() != 0 for worker in running):
        raise RuntimeError("a producer failed")
    seconds = time.perf_counter() - started
    total = 2 * per_partition * args.partitions / MIB
    print(f"  produced {total:.0f} MiB in {seconds:.1f} s", file=sys.stderr, flush=True)


def produce_worker(bootstrap: str, partitions: list[int], size: str, record: str) -> None:
    """Send ``size`` bytes of values to each of ``partitions`` of both topics, round-robin:
    random slices of a random pool behind a counter (incompressible, none alike)."""
    value_bytes = int(record)
    pool = os.urandom(8 * MIB)
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        acks=1,
        linger_ms=20,
        batch_size=512 * 1024,
        max_request_size=2 * MIB,
    )
    for count in range(-(-int(size) // value_bytes)):
        for partition in partitions:
            at = random.randrange(len(pool) - value_bytes)
            value = count.to_bytes(8, "big") + pool[at : at + value_bytes - 8]
            for topic in (OURS, THEIRS):
                producer.send(topic, value, partition=partition)
    producer.flush()
    producer.close()


def _backlog(log_dir: Path, topic: str, topic_id: str, partitions: int) -> Backlog:
    """The rolled segments on the broker's disk: every .log but the active (last) one."""
    ends, segments, size, files = {}, 0, 0, []
    for partition in range(partitions):
        logs = sorted((log_dir / f"{topic}-{partition}").glob("*.log"))
        if len(logs) < 2:
            raise RuntimeError(f"{topic}-{partition}: no rolled segment; produce more")
        ends[partition] = int(logs[-1].stem) - 1
        segments += len(logs) - 1
        size += sum(p.stat().st_size for p in logs[:-1])
        files += [f for log in logs[:-1] for f in log.parent.glob(f"{log.stem}.*")]
    return Backlog(topic, topic_id, ends, segments, size, tuple(files))


def _wait_for_checkpoint(log_dir: Path, backlogs: tuple[Backlog, ...]) -> None:
    path = log_dir / REPLICATION_OFFSET_CHECKPOINT
    wanted = {(b.topic, p): end + 1 for b in backlogs for p, end in b.ends.items()}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        marks = read_offset_checkpoint(path) if path.exists() else {}
        if all(marks.get(where, -1) >= end for where, end in wanted.items()):
            return
        time.sleep(0.2)
    raise TimeoutError("the high watermark checkpoint did not pass the rolled segments")


def _tierflow_settings(cluster: KafkaCluster, base: Path, remote: Path) -> Settings:
    node = cluster.nodes[0]
    return Settings.embedded(
        base,
        log_dirs=(node.log_dir,),
        kafka_bootstrap=node.bootstrap,
        remote_storage=str(remote),
        storage_layout="kafka-local",
    )


def _tierflow(settings: Settings, *argv: str) -> str:
    """``python -m tierflow.cli ARGV`` as a person runs it; its stdout."""
    env = {**os.environ, **settings.as_env()}
    command = [sys.executable, "-m", "tierflow.cli", *argv]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"tierflow {' '.join(argv)} failed: {done.stderr[-3000:]}")
    return done.stdout


def _spark_copy(settings: Settings, base: Path, ours: Backlog) -> float:
    """``tierflow copy --spark`` of the topic on a store and bucket of its own: the copy only,
    nothing handed over (the broker never reads this bucket)."""
    scratch = settings.updated(
        data_dir=base,
        db_url=f"sqlite:///{base / 'tierflow.db'}",
        remote_storage=str(base / "bucket"),
    )
    base.mkdir(parents=True)
    _tierflow(scratch, "topics", "register", ours.topic, "--config", "remote.storage.enable=true")
    _warm_and_sync(ours)
    started = time.perf_counter()
    _tierflow(scratch, "copy", "--spark", "--topic", ours.topic, "--json")
    seconds = time.perf_counter() - started
    shutil.rmtree(base, ignore_errors=True)
    return seconds


def _time_tierflow(cluster: KafkaCluster, settings: Settings, ours: Backlog, cores: int) -> Timed:
    """Copy, hand over, until the broker says it has everything tiered (module doc, 1)."""
    _tierflow(settings, "topics", "register", ours.topic, "--config", "remote.storage.enable=true")
    _warm_and_sync(ours)
    started = time.perf_counter()
    _tierflow(settings, "copy", "--no-spark", "--workers", str(cores), "--topic", ours.topic)
    copied = time.perf_counter()
    _tierflow(settings, "topics", "handover", ours.topic, "--yes", "--json")
    handed = time.perf_counter()
    _until_tiered(cluster, ours)
    done = time.perf_counter()
    phases = {"copy": copied - started, "handover": handed - copied, "until -5": done - handed}
    return Timed(done - started, phases, "processes")


def _best_path(timed: Timed, copies: dict[str, float]) -> Timed:
    """The faster copy path's time in place of the processes' (the rest is the same)."""
    path = min(copies, key=copies.__getitem__)
    if path == timed.path:
        return timed
    phases = {**timed.phases, "copy": copies[path]}
    return Timed(sum(phases.values()), phases, path)


def _time_broker(cluster: KafkaCluster, theirs: Backlog) -> Timed:
    """remote.storage.enable=true on topic B, until the broker has tiered it all (2); then
    how long the writeback of what it left unsynced takes (LocalTieredStorage does not fsync,
    tierflow does: not counted in its time, shown beside it)."""
    _warm_and_sync(theirs)
    started = time.perf_counter()
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        resource = ConfigResource(
            ConfigResourceType.TOPIC, theirs.topic, {"remote.storage.enable": "true"}
        )
        answer = admin.alter_configs([resource], incremental=True)
    finally:
        admin.close()
    if answer.get("topic", {}).get(theirs.topic) != "OK":
        raise RuntimeError(f"{theirs.topic}: remote.storage.enable=true refused: {answer}")
    enabled = time.perf_counter()
    _until_tiered(cluster, theirs)
    done = time.perf_counter()
    os.sync()
    phases = {"enable": enabled - started, "until -5": done - enabled}
    return Timed(done - started, phases, writeback_s=time.perf_counter() - done)


def _until_tiered(cluster: KafkaCluster, backlog: Backlog) -> None:
    """Until ListOffsets LATEST_TIERED (-5) of every partition reaches its last rolled
    segment's end offset."""
    wanted = {TopicPartition(backlog.topic, p): end for p, end in backlog.ends.items()}
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while time.monotonic() < deadline:
            specs = {where: OffsetSpec.LATEST_TIERED for where in wanted}
            try:
                found = admin.list_partition_offsets(specs)
            except Exception:  # a leader moving its partitions' remote state: ask again
                found = {}
            if found and all(found[w].offset >= end for w, end in wanted.items()):
                return
            time.sleep(POLL_S)
    finally:
        admin.close()
    raise TimeoutError(f"{backlog.topic}: not tiered in {TIMEOUT_S:.0f} s")


def _check(cluster: KafkaCluster, settings: Settings, ours: Backlog, theirs: Backlog) -> dict:
    """From __remote_log_metadata: A's offsets in two finished segments, A's segments that are
    not tierflow's, and each topic's finished segments."""
    finished = _finished(cluster, {ours.topic_id, theirs.topic_id})
    store = open_store(settings)
    topic_id = store.topic(ours.topic).topic_id
    mine = {
        row.segment_id
        for partition in ours.ends
        for row in store.segments(topic_id, partition, states=[S.COPY_SEGMENT_FINISHED])
    }
    ours_finished = finished.get(ours.topic_id, {})
    return {
        "offsets_copied_twice": _copied_twice(ours_finished),
        "broker_segments_of_handed_over_topic": len(set(ours_finished) - mine),
        "tierflow_segments": len(mine),
        "finished_segments": {b.topic: len(finished.get(b.topic_id, {})) for b in (ours, theirs)},
    }


def _finished(cluster: KafkaCluster, topic_ids: set[str]) -> dict[str, dict[str, tuple]]:
    """topic id -> segment id -> (partition, start, end) of each segment whose last state on
    the metadata topic is COPY_SEGMENT_FINISHED, whoever wrote it."""
    metadata = MetadataTopic(cluster.bootstrap)
    spans: dict[str, tuple[str, int, int, int]] = {}
    states: dict[str, int] = {}
    for partition in range(metadata.partitions()):
        for record in metadata.read(partition, 0):
            found = deserialize(record.value)
            if found.partition.topic_id not in topic_ids:
                continue
            if isinstance(found, SegmentMetadata):
                where = found.partition
                spans[found.segment_id] = (
                    where.topic_id,
                    where.partition,
                    found.start_offset,
                    found.end_offset,
                )
            states[found.segment_id] = found.state  # type: ignore[union-attr]
    result: dict[str, dict[str, tuple]] = {}
    for segment, state in states.items():
        if state == FINISHED and segment in spans:
            topic_id, *span = spans[segment]
            result.setdefault(topic_id, {})[segment] = tuple(span)
    return result


def _copied_twice(segments: dict[str, tuple]) -> int:
    """Offsets that more than one finished segment holds, over every partition."""
    covered: dict[int, list[tuple[int, int]]] = {}
    for partition, start, end in segments.values():
        covered.setdefault(partition, []).append((start, end))
    twice = 0
    for spans in covered.values():
        reach = -1
        for start, end in sorted(spans):
            twice += max(0, min(end, reach) - start + 1)
            reach = max(reach, end)
    return twice


def _broker_settings(cluster: KafkaCluster) -> dict[str, str]:
    """The broker's settings that pace its copier, as it reports them (defaults included)."""
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        node = str(cluster.nodes[0].node_id)
        resource = ConfigResource(ConfigResourceType.BROKER, node)
        answer = admin.describe_configs([resource], config_filter="all")
    finally:
        admin.close()
    values = answer["broker"][node]
    return {name: str(values.get(name, {}).get("value")) for name in BROKER_SETTINGS}


def _figures(
    args: argparse.Namespace,
    cores: int,
    broker_settings: dict[str, str],
    ours: Backlog,
    theirs: Backlog,
    copies: dict[str, float],
) -> dict:
    return {
        "cores": cores,
        "gib": args.gib,
        "partitions": args.partitions,
        "segment_mib": args.segment_mib,
        "record_kib": args.record_kib,
        "broker_settings": broker_settings,
        "backlog": {b.topic: {"segments": b.segments, "bytes": b.size} for b in (ours, theirs)},
        "tierflow_copy_s": copies,
    }


def _rates(ours: Backlog, tierflow: Timed, theirs: Backlog, broker: Timed) -> dict:
    return {
        "mib_s": {
            "tierflow": ours.size / MIB / tierflow.seconds,
            "broker": theirs.size / MIB / broker.seconds,
        },
        "broker_over_tierflow": broker.seconds / tierflow.seconds,
        "load_average_after": os.getloadavg()[0],  # other work on the machine skews both
    }


def _report(figures: dict) -> None:
    ours, theirs = figures["tierflow"], figures["broker"]
    sizes = [b["bytes"] / MIB for b in figures["backlog"].values()]
    segments = [b["segments"] for b in figures["backlog"].values()]
    print(
        f"\n== {figures['partitions']} partitions per topic, {segments[0]} and {segments[1]} "
        f"rolled segments of {figures['segment_mib']} MiB ({sizes[0]:.0f} and "
        f"{sizes[1]:.0f} MiB), {figures['cores']} cores =="
    )
    print("broker: " + ", ".join(f"{k}={v}" for k, v in figures["broker_settings"].items()))
    for path, seconds in figures["tierflow_copy_s"].items():
        print(f"  tierflow copy on {path:10s} {seconds:6.1f} s  {sizes[0] / seconds:6.1f} MiB/s")
    for name, timed in (("tierflow", ours), ("broker", theirs)):
        steps = ", ".join(f"{k} {v:.1f} s" for k, v in timed["phases"].items())
        if timed["writeback_s"] is not None:
            steps += f"; then sync {timed['writeback_s']:.1f} s, not counted"
        label = f"{name} ({timed['path']})" if timed["path"] else name
        print(
            f"{label:22s} {timed['seconds']:6.1f} s  {figures['mib_s'][name]:6.1f} MiB/s"
            f"   ({steps})"
        )
    print(
        f"broker time / tierflow time: {figures['broker_over_tierflow']:.2f}x "
        f"(load average {figures['load_average_after']:.2f} after)"
    )
    checks = figures["checks"]
    print(
        f"after the hand-over: {checks['offsets_copied_twice']} offsets copied twice, "
        f"{checks['broker_segments_of_handed_over_topic']} segments of {OURS} by the broker; "
        f"finished segments on __remote_log_metadata: {checks['finished_segments']}"
    )


if __name__ == "__main__":
    main()
