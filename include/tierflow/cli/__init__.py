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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tierflow",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log every step")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = sub.add_parser(
        "demo",
        help="generate a broker log dir, copy it through Airflow, verify every byte",
        description="Generate a realistic broker log directory under <data>/demo (replacing "
        "any previous demo there), register its topics with tiering on, run the segment_copy "
        "DAG through Airflow's dag.test(), read every tiered segment back and compare it "
        "byte for byte with the local file.",
    )
    demo.add_argument("--data-dir", help="where to put the demo [<data>/demo]")
    demo.set_defaults(func=commands.demo)

    topics = sub.add_parser("topics", help="register topics and their tiering configs")
    topics_sub = topics.add_subparsers(dest="topics_command", required=True, metavar="ACTION")
    register = topics_sub.add_parser(
        "register",
        help="register a topic found in the log dirs (idempotent)",
        description="Register a topic, or update its configs. The topic id is read from the "
        "partition.metadata files in the log dirs unless --topic-id is given.",
    )
    register.add_argument("name")
    register.add_argument("--topic-id", help="Kafka topic id (22-character base64)")
    register.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Kafka topic config, e.g. remote.storage.enable=true, retention.ms=86400000",
    )
    register.set_defaults(func=commands.topics_register)
    topics_list = topics_sub.add_parser("list", help="list registered topics")
    topics_list.set_defaults(func=commands.topics_list)
    topic_commands.register_sync(topics_sub)

    copy = sub.add_parser(
        "copy",
        help="copy eligible segments now (what the segment_copy DAG does)",
        description="Copy every eligible segment of tiered partitions. Safe to interrupt and "
        "rerun: abandoned attempts are cleaned up first.",
    )
    copy.add_argument("--topic")
    copy.add_argument("--partition", type=int)
    copy.add_argument("--owner", help="lease owner; a rerun with the same owner resumes at once")
    copy.add_argument("--dry-run", action="store_true", help="list what would be copied")
    copy.set_defaults(func=commands.copy)

    verify = sub.add_parser(
        "verify", help="read tiered segments back and compare them with the local files"
    )
    verify.add_argument("--topic")
    verify.set_defaults(func=commands.verify)

    events = sub.add_parser("events", help="show the state-transition history")
    events.add_argument("--topic")
    events.add_argument("--segment")
    events.add_argument("--limit", type=int, default=50)
    events.set_defaults(func=commands.events)

    db = sub.add_parser("db", help="metadata store schema")
    db_sub = db.add_subparsers(dest="db_command", required=True, metavar="ACTION")
    db_sub.add_parser("upgrade", help="apply Alembic migrations").set_defaults(
        func=commands.db_upgrade
    )

    fetch_commands.register(sub)
    status_commands.register(sub)
    key_commands.register(sub)
    topic_commands.register(sub)
    reconcile_commands.register(sub)
    diskless_commands.register(sub)
    cluster_commands.register(sub)

    airflow = sub.add_parser("airflow", help="drive a local Airflow (used by demo and tests)")
    airflow_sub = airflow.add_subparsers(dest="airflow_command", required=True, metavar="ACTION")
    apply = airflow_sub.add_parser("apply-settings", help="apply airflow_settings.yaml")
    apply.add_argument("--file", default=None, help="[<checkout>/airflow_settings.yaml]")
    apply.set_defaults(func=commands.airflow_apply_settings)
    test_dag = airflow_sub.add_parser("test-dag", help="run one DAG run with dag.test()")
    test_dag.add_argument("dag_id")
    test_dag.add_argument("--conf", default="{}", help="run conf as JSON")
    test_dag.add_argument(
        "--logical-date",
        help="ISO date-time of the run (e.g. 2026-11-18T02:00:00+00:00), as a backfill sets it",
    )
    test_dag.set_defaults(func=commands.airflow_test_dag)
    serve = airflow_sub.add_parser(
        "serve",
        help="run a local Airflow 3 with tierflow's DAGs (what `make airflow` does)",
        description=SERVE_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument(
        "--port",
        type=int,
        default=None,
        help="port of the UI and REST API on 127.0.0.1; 0 picks a free one "
        "[8080 if free, else a free one]",
    )
    serve.add_argument("--home", default=None, help="AIRFLOW_HOME [<data>/airflow-home]")
    serve.set_defaults(func=commands.airflow_serve)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        return int(args.func(args) or 0)
    except (commands.CommandError, *SETTINGS_ERRORS) as exc:
        print(f"tierflow: error: {_redacted(str(exc))}", file=sys.stderr)
        return 2


def _redacted(message: str) -> str:
    """The message without the secrets of the configured URLs (an error may quote one)."""
    try:
        settings = Settings.from_env()
    except InvalidSettingError:
        settings = None
    return redact(message, settings)
