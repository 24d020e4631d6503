"""`make kafka`, as the README shows it: one broker a person can produce to, the settings that
point tierflow at it printed, and everything stopped on Ctrl-C."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
from kafka import KafkaAdminClient

from tests.kafka.support import PROJECT_ROOT

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


def test_make_kafka_starts_a_broker_and_ctrl_c_stops_it(tmp_path: Path) -> None:
    env = {**os.environ, "TIERFLOW_DATA_DIR": str(tmp_path)}
    process = subprocess.Popen(
        ["make", "--no-print-directory", "kafka"],
        cwd=PROJECT_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        # A terminal's Ctrl-C: pytest-xdist's workers start their children with SIGINT ignored.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        printed = _until_settings(process)
        bootstrap = re.search(r"TIERFLOW_KAFKA_BOOTSTRAP=(\S+)", printed)[1]
        log_dir = Path(re.search(r"TIERFLOW_LOG_DIRS=(\S+)", printed)[1])
        client = KafkaAdminClient(bootstrap_servers=bootstrap)
        assert len(client.describe_cluster()["brokers"]) == 1
        client.close()
        assert log_dir.is_relative_to(tmp_path) and (log_dir / "meta.properties").is_file()
    finally:
        os.killpg(process.pid, signal.SIGINT)  # a person's Ctrl-C reaches the whole group
        process.wait(timeout=60)
    assert _gone(str(tmp_path)), "a JVM outlived make kafka"


def _gone(marker: str, timeout_s: float = 60) -> bool:
    """No process whose command line names ``marker`` is left (make may exit before the
    broker it started has finished its controlled shutdown)."""
    deadline = time.monotonic() + timeout_s
    while subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 0:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


def _until_settings(process: subprocess.Popen[str]) -> str:
    """The output up to the log line, which comes after the settings."""
    seen = []
    assert process.stdout is not None
    for line in process.stdout:
        seen.append(line)
        if "Ctrl-C stops it" in line:
            return "".join(seen)
    raise AssertionError(f"make kafka exited with {process.wait()}: {''.join(seen)}")
