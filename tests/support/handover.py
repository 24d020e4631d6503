"""What a Spark executor does with the storage spec handed over to it, as a script for
``python -c SCRIPT SPEC_JSON``: it builds the store from the spec, writes ``from-executor``,
and prints, as a JSON list on its last line, the Airflow modules it imported (none, it must)."""

from __future__ import annotations

EXECUTOR = """
import json, sys
from tierflow.config import Settings
from tierflow.engine.worker import executor_storage
from tierflow.storage.handover import from_json

rsm = executor_storage(Settings.from_env(), from_json(sys.argv[1]))
rsm.objects.put_bytes("from-executor", b"no airflow here")
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] == "airflow")))
"""
