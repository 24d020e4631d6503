"""A copy's worker process starts light (issue 34): it rewrites a sound segment without loading
kafka-python, whose package imports its admin client, consumer and producer (0.1-0.2 s in
every process the pool spawns). The batches are still checked: framing and CRC32C in the
upload's pass (kafka.batch_scan), kafka-python only for what that pass cannot read itself.

The worker runs in a fresh interpreter, handed its job pickled as the pool hands it over.
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


def test_a_copy_worker_rewrites_a_segment_without_kafka_python(tmp_path: Path) -> None:
    t = build_tiered(tmp_path, layout="chunked-encrypted")
    plan = prepare_copy(t.log("payments", 0), t.store, rsm=t.rsm, owner=CopyOwner("test"))
    job = plan.jobs[0]
    handed = tmp_path / "job.pickle"
    handed.write_bytes(pickle.dumps((SEGMENT_REWRITE, Worker(t.settings), job)))

    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(handed)], capture_output=True, text=True, check=True
    )
    found = json.loads(done.stdout.splitlines()[-1])

    (row,) = found["rows"]
    assert row["error"] is None and row["objects"], row
    assert row["scanned"]["max_timestamp_ms"] > 0  # the batches were read and checked
    assert among(found["modules"], ("kafka",)) == []
