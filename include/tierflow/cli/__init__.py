"""The ``tierflow`` command: operate the lifecycle by hand, run the demo, drive a local Airflow."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from tierflow.cli import (
    airflow_commands,
    cluster_commands,
    commands,
    diskless_commands,
    fetch_commands,
    key_commands,
    reconcile_commands,
    retention_commands,
    status_commands,
    topic_commands,
)
from tierflow.cli.common import CommandError
from tierflow.cli.spec import add_commands
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tierflow",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log every step")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_commands(sub, (airflow_commands.DEMO, topic_commands.TOPICS, *commands.COMMANDS))
    for module in (
        fetch_commands,
        status_commands,
        key_commands,
        topic_commands,
        reconcile_commands,
        retention_commands,
        diskless_commands,
        cluster_commands,
    ):
        module.register(sub)
    add_commands(sub, (airflow_commands.AIRFLOW,))
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
