"""A copy's processes start light (issue 34): a worker rewrites a sound segment, and the parent
plans the copy, without loading kafka-python, whose package imports its admin client, consumer
and producer (0.1-0.2 s in every process; the parent's is serial, before any worker starts).
The batches are still checked: framing and CRC32C in the upload's pass and in the log end's
walk (kafka.batch_scan), kafka-python only for what that scan cannot read itself.

Each runs in a fresh interpreter: the worker handed its job pickled as the pool hands it over,
the parent handed the settings.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

from tests.support.loaded_modules import among
from tests.support.tiered import build_tiered
from tierflow.engine.worker import Worker
from tierflow.lifecycle.copy.prepare import CopyOwner, prepare_copy
from tierflow.lifecycle.copy.rewrite import SEGMENT_REWRITE

# What a spawned worker does with each job: unpickle it, then engine.pool.run_one.
PROBE = """\
import json, pickle, sys
kind, worker, job = pickle.loads(open(sys.argv[1], "rb").read())
from tierflow.engine.pool import run_one
rows = run_one(kind, worker, job)
print(json.dumps({"rows": rows, "modules": sorted(sys.modules)}))
"""

# What the copy's parent does per partition before any job exists: list, bound, plan.
PLAN_PROBE = """\
import json, pickle, sys
settings, topic, partition = pickle.loads(open(sys.argv[1], "rb").read())
from tierflow.lifecycle.copy.prepare import CopyOwner, prepare_copy
from tierflow.runtime import open_storage, open_store, partition_logs
logs = partition_logs(settings.log_dirs)
log_ = next(p for p in logs if (p.topic, p.partition) == (topic, partition))
plan = prepare_copy(log_, open_store(settings), rsm=open_storage(settings), owner=CopyOwner("t"))
print(json.dumps({"jobs": len(plan.jobs), "modules": sorted(sys.modules)}))
"""


def fresh_interpreter(probe: str, handed: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", probe, str(handed)], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.splitlines()[-1])


def test_a_copy_worker_rewrites_a_segment_without_kafka_python(tmp_path: Path) -> None:
    t = build_tiered(tmp_path, layout="chunked-encrypted")
    plan = prepare_copy(t.log("payments", 0), t.store, rsm=t.rsm, owner=CopyOwner("test"))
    job = plan.jobs[0]
    handed = tmp_path / "job.pickle"
    handed.write_bytes(pickle.dumps((SEGMENT_REWRITE, Worker(t.settings), job)))

    found = fresh_interpreter(PROBE, handed)

    (row,) = found["rows"]
    assert row["error"] is None and row["objects"], row
    assert row["scanned"]["max_timestamp_ms"] > 0  # the batches were read and checked
    assert among(found["modules"], ("kafka",)) == []


def test_a_copy_is_planned_without_kafka_python(tmp_path: Path) -> None:
    """The plan reads each partition's log end from its active segment (kafka.segment)."""
    t = build_tiered(tmp_path, layout="chunked-encrypted")
    handed = tmp_path / "settings.pickle"
    handed.write_bytes(pickle.dumps((t.settings, "payments", 0)))

    found = fresh_interpreter(PLAN_PROBE, handed)

    assert found["jobs"] > 0
    assert among(found["modules"], ("kafka",)) == []
