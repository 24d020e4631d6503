"""The CLI starts fast (issue 34): ``tierflow --help``, a command's ``--help`` and ``status`` on
a local store import only what they use. Each runs as ``python -m tierflow.cli`` in a fresh
interpreter whose modules are read when it is done.

What keeps them light is checked here too: every command's function is ``Deferred`` to a module
of its work that has it, the values copied into ``cli.defaults`` are still the library's, and
the exit-code table names each class by the module that defines it.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.loaded_modules import among
from tests.support.tiered import Tiered
from tierflow.cli import build_parser, defaults
from tierflow.cli.exit_codes import EXIT_CODES
from tierflow.cli.spec import Deferred
from tierflow.kafka.metadata_log.writer import MetadataLogWriter, metadata_version_record
from tierflow.kafka.naming import METADATA_PARTITION_DIR

# What only the commands that use them may load: the cloud SDKs, Iceberg, Arrow, Airflow,
# kafka-python, Alembic, Spark. (``google`` and ``google.cloud`` themselves are namespace
# packages a .pth file of the environment makes at start-up; the SDKs are what is in them.)
HEAVY = (
    "botocore",
    "boto3",
    "azure",
    "google.cloud.",
    "google.api_core",
    "google.auth",
    "pyiceberg",
    "pyarrow",
    "airflow",
    "kafka",
    "alembic",
    "pyspark",
)
# What a --help needs none of either: the parser is built from the command modules alone.
LIBRARIES = (*HEAVY, "sqlalchemy", "sqlmodel", "pydantic", "rich")

# ``python -m tierflow.cli ARGV`` (its __main__), then the modules loaded on the last line.
PROBE = """\
import json, runpy, sys
try:
    runpy.run_module("tierflow.cli", run_name="__main__", alter_sys=True)
except SystemExit as stop:
    code = stop.code
print()
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def run_cli(*argv: str, env: dict[str, str] | None = None) -> tuple[int, str, list[str]]:
    """(exit code, stdout, modules loaded) of ``python -m tierflow.cli ARGV``."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, env=env, check=True
    )
    *output, last = done.stdout.splitlines()
    found = json.loads(last)
    return found["code"], "\n".join(output), found["modules"]


@pytest.mark.parametrize(
    "argv", [("--help",), ("status", "--help"), ("copy", "--help")], ids=" ".join
)
def test_help_loads_no_library(argv: tuple[str, ...]) -> None:
    code, out, modules = run_cli(*argv)
    assert code == 0 and out.startswith("usage: tierflow")
    assert among(modules, LIBRARIES) == []


def test_status_on_a_local_store_loads_no_sdk(tiered: Tiered) -> None:
    """Alembic loads only to migrate (metadata/schema_version.py), and kafka-python only to
    replay a KRaft metadata log (cluster/assignments.py), which these log dirs, like the
    demo's, do not hold; listing segments loads it no more (kafka/segment.py)."""
    code, out, modules = run_cli("status", env=_env(tiered))
    assert code == 0 and "orders" in out and "payments" in out
    assert among(modules, ("sqlalchemy",)) != []  # the probe sees what the command loads
    assert among(modules, HEAVY) == []


def test_status_replaying_a_kraft_metadata_log_loads_kafka_python(fresh_tiered: Tiered) -> None:
    """The other side of the test above: with a metadata log beside the partitions, status
    replays it with kafka-python's protocol schemas."""
    log_dir = Path(fresh_tiered.settings.log_dirs[0])
    writer = MetadataLogWriter(log_dir / METADATA_PARTITION_DIR)
    writer.transaction([metadata_version_record()], name="Bootstrap records")
    code, _out, modules = run_cli("status", env=_env(fresh_tiered))
    assert code == 0 and among(modules, ("kafka",)) != []


def _env(tiered: Tiered) -> dict[str, str]:
    kept = {k: v for k, v in os.environ.items() if not k.startswith("TIERFLOW_")}
    return {**kept, **tiered.settings.as_env()}


def command_functions(parser: argparse.ArgumentParser) -> Iterator[object]:
    """The function of each command the parser runs."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from command_functions(sub)
    if "func" in parser._defaults:
        yield parser._defaults["func"]


def test_every_deferred_command_function_exists() -> None:
    functions = [getattr(f, "work", f) for f in command_functions(build_parser())]  # cli.early
    deferred = [f for f in functions if isinstance(f, Deferred)]
    assert len(deferred) > 40
    missing = [
        f"{f.module}.{f.name}"
        for f in deferred
        if not callable(getattr(importlib.import_module(f.module), f.name, None))
    ]
    assert missing == []


def test_the_copied_defaults_are_the_librarys() -> None:
    from tierflow.diskless.merge_plan import KAFKA_SEGMENT_BYTES
    from tierflow.diskless.models import TIMESTAMP_TYPES
    from tierflow.lifecycle.remote_log_metadata.publish import CHUNK
    from tierflow.metadata.states import RemoteLogSegmentState
    from tierflow.transform.keyring import KEYRING_FILE, MIN_BITS

    library = {
        "SEGMENT_STATES": tuple(state.value for state in RemoteLogSegmentState),
        "KEYRING_FILE": KEYRING_FILE,
        "MIN_BITS": MIN_BITS,
        "KAFKA_SEGMENT_BYTES": KAFKA_SEGMENT_BYTES,
        "TIMESTAMP_TYPES": tuple(TIMESTAMP_TYPES),
        "PUBLISH_CHUNK": CHUNK,
    }
    copied = {name: value for name, value in vars(defaults).items() if name.isupper()}
    assert copied == library


def test_the_exit_code_table_names_where_each_class_is_defined() -> None:
    """A class is looked up only once its module is loaded (exit_codes.loaded): that is sound
    only for the module that defines it, which any module raising it has imported."""
    wrong = []
    for classes, _code in EXIT_CODES:
        for named in (c for c in classes if isinstance(c, str)):
            module, _, name = named.partition(":")
            found = getattr(importlib.import_module(module), name)
            if not (isinstance(found, type) and issubclass(found, BaseException)):
                wrong.append(f"{named}: not an exception class")
            elif found.__module__ != module:
                wrong.append(f"{named}: defined in {found.__module__}")
    assert wrong == []
