"""A Spark standalone cluster (one master, one worker) on loopback, for the integration test.

Both daemons come with the pyspark package (``spark-class``); nothing is downloaded. They run
in their own process groups so that stopping the cluster leaves no JVM behind, even when the
worker has started executors.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyspark

from tests.support.ports import free_port

SPARK_HOME = Path(pyspark.__file__).parent
READY_TIMEOUT_S = 90.0


@dataclass(frozen=True)
class SparkCluster:
    master_url: str
    logs: tuple[Path, ...]


@contextmanager
def spark_standalone(
    work_dir: Path, *, cores: int = 2, memory: str = "2g"
) -> Iterator[SparkCluster]:
    """Start a master and a worker bound to 127.0.0.1; stop both (and executors) on exit."""
    work_dir.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_NO_DAEMONIZE": "1",
        "SPARK_LOG_DIR": str(work_dir / "logs"),
    }
    port = free_port()
    master_url = f"spark://127.0.0.1:{port}"
    master_log, worker_log = work_dir / "master.log", work_dir / "worker.log"
    daemons: list[subprocess.Popen] = []
    try:
        master_args = ["--host", "127.0.0.1", "--port", str(port), "--webui-port", str(free_port())]
        daemons.append(
            _start(["org.apache.spark.deploy.master.Master", *master_args], env, master_log)
        )
        _wait_for(master_log, "I have been elected leader", daemons[0])
        worker_args = [master_url, "--host", "127.0.0.1", "--webui-port", str(free_port())]
        worker_args += [
            "--cores",
            str(cores),
            "--memory",
            memory,
            "--work-dir",
            str(work_dir / "work"),
        ]
        daemons.append(
            _start(["org.apache.spark.deploy.worker.Worker", *worker_args], env, worker_log)
        )
        _wait_for(worker_log, "Successfully registered with master", daemons[1])
        yield SparkCluster(master_url, (master_log, worker_log))
    finally:
        for daemon in reversed(daemons):
            _stop(daemon)


def _start(args: list[str], env: dict[str, str], log_file: Path) -> subprocess.Popen:
    with open(log_file, "wb") as out:
        return subprocess.Popen(
            [str(SPARK_HOME / "bin" / "spark-class"), *args],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: executors included on stop
        )


def _wait_for(log_file: Path, marker: str, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if marker in log_file.read_text(errors="replace"):
            return
        if process.poll() is not None:
            break
        time.sleep(0.5)
    tail = "\n".join(log_file.read_text(errors="replace").splitlines()[-20:])
    raise RuntimeError(f"Spark daemon not ready ({marker!r} not in {log_file}):\n{tail}")


def _stop(process: subprocess.Popen) -> None:
    for sig, wait_s in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait_s)
            # The group may still hold executors the daemon started: make sure they go too.
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        except subprocess.TimeoutExpired:
            continue
        return
