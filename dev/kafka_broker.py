"""Apache Kafka brokers on loopback: the real brokers the tests run tierflow beside, and
``make kafka`` for a person to try things by hand.

Kafka 4 runs in KRaft mode only. Every node here is broker and controller at once ("combined"),
and every node is a voter, so a 3-node cluster keeps its quorum when one node dies. The jars
come from Maven Central (``dev/kafka/pom.xml``; ``make test-servers`` copies them into
``.test-servers/kafka/libs``); the JVM is the machine's Java 17.

The settings make a broker quick to watch: 1 MiB segments (Kafka's minimum ``segment.bytes``),
the high watermark and log start checkpoints written every half second, retention checked every
second. Each node's JVM runs in a process group of its own and is told to stop when the process
that started it dies, so a killed test run leaves no broker behind.

``python -m dev.kafka_broker [--nodes N] [--dir DIR]`` starts a cluster (under
``$TIERFLOW_DATA_DIR/kafka`` by default, ``data/kafka`` of the checkout), prints how to reach it
and which log dirs tierflow should read, and stops it on Ctrl-C.
"""

from __future__ import annotations

import argparse
import base64
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from dev.children import set_parent_death_signal

ROOT = Path(__file__).resolve().parents[1]
LIBS = ROOT / ".test-servers" / "kafka" / "libs"
LOG4J = Path(__file__).parent / "kafka" / "log4j2.properties"
MAIN_JAR = "kafka_2.13-*.jar"
START_TIMEOUT_S = 90
STOP_TIMEOUT_S = 30
INSTALL_HINT = (
    f"no Apache Kafka jars in {LIBS}: run `make test-servers`, which copies the broker named "
    "in dev/kafka/pom.xml and its dependencies there from Maven Central"
)
# Small and quick: what a test needs to see segments roll, checkpoints move and retention run.
QUICK = {
    "log.segment.bytes": "1048576",
    "replica.high.watermark.checkpoint.interval.ms": "500",
    "log.flush.start.offset.checkpoint.interval.ms": "500",
    "log.flush.offset.checkpoint.interval.ms": "500",
    "log.retention.check.interval.ms": "1000",
    "log.initial.task.delay.ms": "0",
    "group.initial.rebalance.delay.ms": "0",
    "auto.create.topics.enable": "false",
    "num.partitions": "1",
}
# A JVM that starts fast and stays small; benchmarks pass their own.
TEST_JVM = ("-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")


LOCAL_TIERED_STORAGE = "org.apache.kafka.server.log.remote.storage.LocalTieredStorage"


def tiering(remote_dir: Path, *, metadata_partitions: int = 5) -> dict[str, str]:
    """Overrides for brokers that tier themselves (KIP-405), as a broker-owned topic's do: the
    topic-based metadata manager (``__remote_log_metadata``, ``metadata_partitions``
    partitions, replication 1) and Kafka's LocalTieredStorage under ``remote_dir``, copying
    every half second."""
    return {
        "remote.log.storage.system.enable": "true",
        "remote.log.storage.manager.class.name": LOCAL_TIERED_STORAGE,
        "rsm.config.dir": str(remote_dir),
        "remote.log.metadata.manager.listener.name": "PLAINTEXT",
        "rlmm.config.remote.log.metadata.topic.replication.factor": "1",
        "rlmm.config.remote.log.metadata.topic.num.partitions": str(metadata_partitions),
        "remote.log.manager.task.interval.ms": "500",
    }


class KafkaUnavailableError(RuntimeError):
    """The broker's jars are missing, or a node did not come up; the message says which."""


def kafka_jars() -> Path:
    """The directory of the broker's jars; KafkaUnavailableError with what to run if absent."""
    if not any(LIBS.glob(MAIN_JAR)):
        raise KafkaUnavailableError(INSTALL_HINT)
    return LIBS


def kafka_version() -> str:
    """The broker's version, from its jar's name (``kafka_2.13-4.1.1.jar``)."""
    jar = next(kafka_jars().glob(MAIN_JAR))
    return jar.stem.rsplit("-", 1)[1]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def new_cluster_id() -> str:
    """A KRaft cluster id: a random UUID in Kafka's URL-safe base64 form.

    Like Kafka's own Uuid.randomUuid, never one that starts with '-': a command
    line reads such an id as an option (kafka-storage format refused one, 1 in 64).
    """
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


@dataclass
class KafkaNode:
    """One broker+controller: its ports, its directory (properties, log) and its JVM."""

    node_id: int
    port: int
    controller_port: int
    home: Path
    process: subprocess.Popen | None = None

    @property
    def log_dir(self) -> Path:
        """The broker's ``log.dirs``: what tierflow reads."""
        return self.home / "logs"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def properties(self, voters: str, replication: int, overrides: Mapping[str, str]) -> str:
        settings = {
            "process.roles": "broker,controller",
            "node.id": str(self.node_id),
            "controller.quorum.voters": voters,
            "listeners": f"PLAINTEXT://{self.bootstrap},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://{self.bootstrap}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.log_dir),
            "offsets.topic.replication.factor": str(replication),
            "transaction.state.log.replication.factor": str(replication),
            "transaction.state.log.min.isr": "1",
            **QUICK,
            **overrides,
        }
        return "".join(f"{key}={value}\n" for key, value in settings.items())


@dataclass
class KafkaCluster:
    """A KRaft cluster of combined nodes on loopback, all of one cluster id."""

    nodes: list[KafkaNode]
    cluster_id: str
    jvm: tuple[str, ...] = TEST_JVM
    env: dict[str, str] = field(default_factory=dict)

    @property
    def bootstrap(self) -> str:
        return ",".join(node.bootstrap for node in self.nodes)

    def node(self, node_id: int) -> KafkaNode:
        return next(node for node in self.nodes if node.node_id == node_id)

    def brokers_setting(self) -> str:
        """TIERFLOW_BROKERS for tierflow: each node's id and its log dir."""
        return ",".join(f"{node.node_id}={node.log_dir}" for node in self.nodes)

    def start(self) -> None:
        """Start every node that is not running, then wait until each one answers."""
        for node in self.nodes:
            if not node.running:
                node.process = _launch(node, self.jvm, self.env)
        for node in self.nodes:
            _wait_listening(node, START_TIMEOUT_S)

    def start_node(self, node_id: int) -> None:
        node = self.node(node_id)
        node.process = _launch(node, self.jvm, self.env)
        _wait_listening(node, START_TIMEOUT_S)

    def stop_node(self, node_id: int) -> None:
        """A clean stop (SIGTERM: the broker's controlled shutdown moves its leaderships)."""
        _stop(self.node(node_id), signal.SIGTERM)

    def kill_node(self, node_id: int) -> None:
        """SIGKILL: the node's JVM dies at once, as in a power cut."""
        _stop(self.node(node_id), signal.SIGKILL)

    def replace_node(self, node_id: int) -> None:
        """The node's JVM killed and its disk lost: a new, formatted, empty log dir under the
        same node id, not started (a restore may fill it first)."""
        node = self.node(node_id)
        _stop(node, signal.SIGKILL)
        shutil.rmtree(node.log_dir)
        _format(node, self.cluster_id, kafka_jars())

    def stop(self) -> None:
        """Every node at once: one by one, the last ones would wait for a quorum that left."""
        running = [node for node in self.nodes if node.running]
        for node in running:
            os.killpg(node.process.pid, signal.SIGTERM)  # type: ignore[union-attr]
        for node in running:
            _stop(node, signal.SIGTERM)


def new_cluster(
    base: Path, *, nodes: int = 1, overrides: Mapping[str, str] | None = None
) -> KafkaCluster:
    """A formatted, not yet started cluster of ``nodes`` under ``base``."""
    jars = kafka_jars()
    members = [
        KafkaNode(i, free_port(), free_port(), base / f"node-{i}") for i in range(1, nodes + 1)
    ]
    voters = ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in members)
    cluster = KafkaCluster(members, new_cluster_id())
    for node in members:
        node.home.mkdir(parents=True, exist_ok=True)
        replication = min(nodes, 3)
        text = node.properties(voters, replication, overrides or {})
        (node.home / "server.properties").write_text(text)
        _format(node, cluster.cluster_id, jars)
    return cluster


def _java(jars: Path, home: Path, jvm: tuple[str, ...], main: str, *args: str) -> list[str]:
    return [
        shutil.which("java") or "java",
        *jvm,
        f"-Dlog4j2.configurationFile={LOG4J}",
        f"-Dkafka.logs.dir={home}",
        "-cp",
        f"{jars}/*",
        main,
        *args,
    ]


def _format(node: KafkaNode, cluster_id: str, jars: Path) -> None:
    """kafka-storage format: the node's log dir gets its meta.properties and the cluster id."""
    properties = str(node.home / "server.properties")
    command = _java(jars, node.home, TEST_JVM, "kafka.tools.StorageTool", "format")
    command += ["-t", cluster_id, "-c", properties, "--ignore-formatted"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise KafkaUnavailableError(f"formatting node {node.node_id} failed: {done.stderr[-2000:]}")


def _launch(node: KafkaNode, jvm: tuple[str, ...], env: Mapping[str, str]) -> subprocess.Popen:
    properties = str(node.home / "server.properties")
    command = _java(kafka_jars(), node.home, jvm, "kafka.Kafka", properties)
    out = (node.home / "stdout.log").open("ab")
    return subprocess.Popen(
        command,
        stdout=out,
        stderr=subprocess.STDOUT,
        env={**os.environ, **env},
        start_new_session=True,
        preexec_fn=set_parent_death_signal,
    )


def _wait_listening(node: KafkaNode, timeout_s: float) -> None:
    """Until the broker accepts connections; its log's tail if it exits or stays silent."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if node.process is not None and node.process.poll() is not None:
            raise KafkaUnavailableError(
                f"Kafka node {node.node_id} exited with {node.process.returncode}: {_tail(node)}"
            )
        try:
            with socket.create_connection(("127.0.0.1", node.port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise KafkaUnavailableError(
        f"Kafka node {node.node_id} not up in {timeout_s:.0f} s: {_tail(node)}"
    )


def _tail(node: KafkaNode, chars: int = 3000) -> str:
    found = [p for p in (node.home / "server.log", node.home / "stdout.log") if p.exists()]
    return " | ".join(p.read_text(errors="replace")[-chars:] for p in found)


def _stop(node: KafkaNode, how: signal.Signals) -> None:
    """Signal the node's process group and wait for it; SIGKILL if a clean stop hangs."""
    process = node.process
    if process is None or process.poll() is not None:
        return
    os.killpg(process.pid, how)
    try:
        process.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(prog="make kafka", description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1, help="combined broker+controller nodes")
    data = Path(os.environ.get("TIERFLOW_DATA_DIR") or ROOT / "data")
    parser.add_argument("--dir", type=Path, default=data / "kafka", help="where they live")
    args = parser.parse_args()
    shutil.rmtree(args.dir, ignore_errors=True)
    cluster = new_cluster(args.dir, nodes=args.nodes)
    cluster.start()
    print(f"Apache Kafka {kafka_version()}: {args.nodes} node(s), cluster id {cluster.cluster_id}")
    print(f"  TIERFLOW_KAFKA_BOOTSTRAP={cluster.bootstrap}")
    if args.nodes == 1:
        print(f"  TIERFLOW_LOG_DIRS={cluster.nodes[0].log_dir}")
    else:
        print(f"  TIERFLOW_BROKERS='{cluster.brokers_setting()}'")
    print(f"  logs: {args.dir}/node-*/server.log   Ctrl-C stops it")
    try:
        while all(node.running for node in cluster.nodes):
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
