"""Every tierflow DAG run by Airflow itself in the world of ``world``, as a deployment would
run them over a week: copy (through Spark), warm the index cache, expire payments' old data,
disable tiering of orders (and refuse a bad request), remove audit after Kafka deleted it,
reconcile. Orders' segments stay in the bucket.

The runs share one private AIRFLOW_HOME, so its logs and metadata database hold the whole
history afterwards, as a long-lived deployment's would. They run in one subprocess
(``run_dags``), as ``tierflow airflow test-dag`` runs one, to keep the test quick.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from dev.airflow_local import airflow_env
from tests.security.world import World
from tests.support.tiered import NOW_MS
from tierflow.runtime import open_store

PROJECT = Path(__file__).resolve().parents[2]
DAY_MS = 24 * 3600 * 1000
# Seven runs take well under a minute; one that waits out retry delays is broken here.
TIMEOUT_S = 300
STATE = re.compile(r"^TIERFLOW_DAG_STATE (\S+)=(\S+)$", re.MULTILINE)


@dataclass
class FullRun:
    world: World
    airflow_home: Path
    output_file: Path
    states: dict[str, str] = field(default_factory=dict)

    def output(self) -> str:
        return self.output_file.read_text(errors="replace")

    def captured_output(self) -> dict[str, str]:
        """Label -> what each DAG run and CLI command wrote to stdout and stderr."""
        sections = re.split(r"^=== TIERFLOW_STEP (\S+)\n", self.output(), flags=re.MULTILINE)
        runs = dict(zip(sections[1::2], sections[2::2], strict=True))
        return {"airflow db migrate": sections[0], **runs, **self.world.outputs}


def plan(world: World) -> list[dict]:
    two_days_later = datetime.fromtimestamp(NOW_MS / 1000, tz=UTC) + timedelta(days=2)
    log_dir = str(world.settings.log_dirs[0])
    return [
        {"label": "segment_copy", "dag_id": "segment_copy"},
        {"label": "index_cache", "dag_id": "index_cache"},
        {
            "label": "retention_expiry",
            "dag_id": "retention_expiry",
            "logical_date": two_days_later.isoformat(),
            # Manual runs of a deleting DAG default to a dry run: this one must really delete.
            "conf": {"dry_run": False},
        },
        {
            "label": "topic_disablement",
            "dag_id": "topic_disablement",
            "conf": {"topic": "orders", "action": "disable", "policy": "retain"},
        },
        {
            "label": "topic_disablement_refused",
            "dag_id": "topic_disablement",
            "conf": {"topic": "no-such-topic", "action": "disable", "policy": "retain"},
        },
        {"label": "kafka_deletes_audit", "delete_topic": "audit", "log_dir": log_dir},
        {
            "label": "remote_partition_removal",
            "dag_id": "remote_partition_removal",
            "conf": {"dry_run": False},
        },
        {
            "label": "remote_reconcile",
            "dag_id": "remote_reconcile",
            "conf": {"apply": True, "grace_hours": 0},
        },
    ]


def run_every_dag(world: World) -> FullRun:
    home = world.base / "airflow-home"
    home.mkdir()
    run = FullRun(world, home, world.base / "dag-runs.log")
    with open_store(world.settings) as store:  # payments' data expires after one day
        payments = store.topic("payments")
        store.register_topic(
            "payments", payments.topic_id, actor="test", now_ms=NOW_MS, retention_ms=DAY_MS
        )
    plan_file = world.base / "plan.json"
    plan_file.write_text(json.dumps(plan(world)))
    env = {**os.environ, **airflow_env(PROJECT, home), **world.env}
    with open(run.output_file, "w") as out:
        for command in (
            [sys.executable, "-m", "airflow", "db", "migrate"],
            [sys.executable, "-m", "tests.security.run_dags", str(plan_file)],
        ):
            subprocess.run(
                command,
                env=env,
                cwd=PROJECT,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=TIMEOUT_S,
                check=False,
            )
    run.states = dict(STATE.findall(run.output()))
    # What an operator runs afterwards, on the same store, bucket and key ring.
    world.cli("tierflow db upgrade", "db", "upgrade")
    world.cli("tierflow status", "status")
    world.cli("tierflow verify", "verify", "--topic", "orders")  # decrypts from the bucket
    return run
