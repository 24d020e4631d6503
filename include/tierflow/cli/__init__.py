"""The ``tierflow`` command: operate the lifecycle by hand, run the demo, drive a local Airflow."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from tierflow.cli import (
    cluster_commands,
    commands,
    diskless_commands,
    fetch_commands,
    key_commands,
    reconcile_commands,
    status_commands,
    topic_commands,
)
from tierflow.cli.common import CommandError
from tierflow.cli.spec import (
    OWNER,
    Command,
    Group,
    add_commands,
    arg,
    config_option,
    flag,
    partition_option,
    topic_option,
)
from tierflow.config import InvalidSettingError, Settings
from tierflow.metadata.engine import InvalidStoreURLError, StoreUnavailableError
from tierflow.runtime import redact
from tierflow.storage.factory import UnsupportedStorageURLError
from tierflow.transform.errors import KeyRingError

# Configuration the operator must fix, wherever a command meets it: one line, no traceback.
SETTINGS_ERRORS = (
    InvalidSettingError,
    InvalidStoreURLError,
    StoreUnavailableError,
    UnsupportedStorageURLError,
    KeyRingError,
)

DESCRIPTION = """\
tierflow runs Kafka's tiered-storage lifecycle (KIP-405, KIP-950) from Apache Airflow.
These commands do by hand what the DAGs schedule, on the same store and storage.

Configuration comes from the environment (defaults in brackets):
  TIERFLOW_DATA_DIR        [<checkout>/data]  where the embedded defaults live
  TIERFLOW_DB_URL          [sqlite:///<data>/tierflow.db]  any SQLAlchemy URL
  TIERFLOW_REMOTE_STORAGE  [<data>/bucket]  a directory standing in for the bucket
  TIERFLOW_LOG_DIRS        [<data>/kafka-logs]  the broker's log.dirs, ':'-separated
  TIERFLOW_BROKERS         []  several brokers: 1=/b1/a:/b1/b,2=/b2/a (id=log.dirs)
  TIERFLOW_STORAGE_LAYOUT  [chunked]  Aiven's chunked layout, or plain (one object per file)
  TIERFLOW_COMPRESSION     [true]  zstd per chunk (skipped when a segment is already compressed)
  TIERFLOW_KEYRING         []  a key ring file (tierflow keys generate) turns on AES-GCM
  TIERFLOW_SPARK_THRESHOLD_BYTES [67108864]  smaller batches skip Spark
  TIERFLOW_KAFKA_BOOTSTRAP []  host:port; set, deleted topics are also found in the cluster
"""

SERVE_DESCRIPTION = """\
Start a local Airflow 3 on this machine and keep it in the foreground until Ctrl-C.

It runs Airflow's api-server (UI and REST API, on 127.0.0.1 only), scheduler (LocalExecutor)
and dag-processor with the checkout's dags/ and plugins/, a SQLite database in AIRFLOW_HOME,
and the pools and connections of airflow_settings.yaml, which plain Airflow does not read.
The TIERFLOW_* variables of this shell reach every task, so the DAGs work on the same store,
bucket and log dirs as the other tierflow commands.

Log in as "admin" with the password printed at start-up. Airflow's SimpleAuthManager keeps it
in AIRFLOW_HOME/simple_auth_manager_passwords.json.generated; it stays the same for the same
home. DAGs start paused: unpause them in the UI. Each component logs to AIRFLOW_HOME/logs/.
Ctrl-C stops every component and the tasks they run.
"""


DEMO = Command(
    "demo",
    commands.demo,
    help="generate a broker log dir, copy it through Airflow, verify every byte",
    description="Generate a realistic broker log directory under <data>/demo (replacing "
    "any previous demo there), register its topics with tiering on, run the segment_copy "
    "DAG through Airflow's dag.test(), read every tiered segment back and compare it "
    "byte for byte with the local file.",
    args=(arg("--data-dir", help="where to put the demo [<data>/demo]"),),
)

TOPICS = Group(
    "topics",
    help="register topics and their tiering configs",
    dest="topics_command",
    commands=(
        Command(
            "register",
            commands.topics_register,
            help="register a topic found in the log dirs (idempotent)",
            description="Register a topic, or update its configs. The topic id is read from "
            "the partition.metadata files in the log dirs unless --topic-id is given.",
            args=(
                arg("name"),
                arg("--topic-id", help="Kafka topic id (22-character base64)"),
                config_option(
                    "a Kafka topic config, e.g. remote.storage.enable=true, retention.ms=86400000"
                ),
            ),
        ),
        Command("list", commands.topics_list, help="list registered topics"),
        topic_commands.SYNC,
    ),
)

LIFECYCLE = (
    Command(
        "copy",
        commands.copy,
        help="copy eligible segments now (what the segment_copy DAG does)",
        description="Copy every eligible segment of tiered partitions. Safe to interrupt and "
        "rerun: abandoned attempts are cleaned up first.",
        args=(
            topic_option(),
            partition_option(),
            OWNER,
            flag("--dry-run", "list what would be copied"),
        ),
    ),
    Command(
        "verify",
        commands.verify,
        help="read tiered segments back and compare them with the local files",
        args=(topic_option(),),
    ),
    Command(
        "events",
        commands.events,
        help="show the state-transition history",
        args=(topic_option(), arg("--segment"), arg("--limit", type=int, default=50)),
    ),
    Group(
        "db",
        help="metadata store schema",
        dest="db_command",
        commands=(Command("upgrade", commands.db_upgrade, help="apply Alembic migrations"),),
    ),
)

AIRFLOW = Group(
    "airflow",
    help="drive a local Airflow (used by demo and tests)",
    dest="airflow_command",
    commands=(
        Command(
            "apply-settings",
            commands.airflow_apply_settings,
            help="apply airflow_settings.yaml",
            args=(arg("--file", default=None, help="[<checkout>/airflow_settings.yaml]"),),
        ),
        Command(
            "test-dag",
            commands.airflow_test_dag,
            help="run one DAG run with dag.test()",
            args=(
                arg("dag_id"),
                arg("--conf", default="{}", help="run conf as JSON"),
                arg(
                    "--logical-date",
                    help="ISO date-time of the run (e.g. 2026-11-18T02:00:00+00:00), as a "
                    "backfill sets it",
                ),
            ),
        ),
        Command(
            "serve",
            commands.airflow_serve,
            help="run a local Airflow 3 with tierflow's DAGs (what `make airflow` does)",
            description=SERVE_DESCRIPTION,
            raw=True,
            args=(
                arg(
                    "--port",
                    type=int,
                    default=None,
                    help="port of the UI and REST API on 127.0.0.1; 0 picks a free one "
                    "[8080 if free, else a free one]",
                ),
                arg("--home", default=None, help="AIRFLOW_HOME [<data>/airflow-home]"),
            ),
        ),
    ),
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tierflow",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log every step")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_commands(sub, (DEMO, TOPICS, *LIFECYCLE))
    for module in (
        fetch_commands,
        status_commands,
        key_commands,
        topic_commands,
        reconcile_commands,
        diskless_commands,
        cluster_commands,
    ):
        module.register(sub)
    add_commands(sub, (AIRFLOW,))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        return int(args.func(args) or 0)
    except (CommandError, *SETTINGS_ERRORS) as exc:
        print(f"tierflow: error: {_redacted(str(exc))}", file=sys.stderr)
        return 2


def _redacted(message: str) -> str:
    """The message without the secrets of the configured URLs (an error may quote one)."""
    try:
        settings = Settings.from_env()
    except InvalidSettingError:
        settings = None
    return redact(message, settings)
