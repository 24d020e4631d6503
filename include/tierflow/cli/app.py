"""The ``tierflow`` command's parser and runner: every command module, loaded for a command
(``tierflow.cli.main`` answers ``--version`` without them).

The command modules hold only their options; each command's work, and the libraries it needs,
is imported when it runs (``spec.Deferred``), and so are the settings here: ``--help`` and a
command that reads the store load nothing else.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from tierflow.cli import (
    airflow_commands,
    broker_commands,
    cluster_commands,
    commands,
    compaction_commands,
    copy_commands,
    diskless_commands,
    export_commands,
    fetch_commands,
    key_commands,
    reconcile_commands,
    remote_log_metadata_commands,
    restore_commands,
    retention_commands,
    status_commands,
    topic_commands,
)
from tierflow.cli.common import require_existing_store
from tierflow.cli.exit_codes import BROKEN_PIPE, INTERRUPTED, exit_code_for
from tierflow.cli.spec import add_commands, place_trailing
from tierflow.cli.version import version
from tierflow.storage.urls import is_local_url
from tierflow.units import error_line

# Commands that run Airflow itself, its logging as Airflow sets it up.
RUNS_AIRFLOW = (
    airflow_commands.WORK.demo,
    airflow_commands.WORK.airflow_apply_settings,
    airflow_commands.WORK.airflow_test_dag,
    airflow_commands.WORK.airflow_serve,
)

# Commands that only read the store: they never create one (a mistyped TIERFLOW_DB_URL or
# TIERFLOW_DATA_DIR would otherwise leave an empty store behind and print nothing).
READS_STORE_ONLY = (
    commands.WORK.topics_list,
    copy_commands.WORK.verify,
    commands.WORK.events,
    fetch_commands.WORK.fetch_command,
    fetch_commands.WORK.metadata_command,
    status_commands.WORK.status_command,
    diskless_commands.WORK.fetch_command,
    diskless_commands.WORK.describe_command,
    restore_commands.RESTORE,
    export_commands.WORK.export_status,
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
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="log every step; a failure shows its traceback"
    )
    parser.add_argument("--version", action="version", version=f"tierflow {version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_commands(
        sub,
        (
            airflow_commands.DEMO,
            topic_commands.TOPICS,
            *copy_commands.COMMANDS,
            *restore_commands.COMMANDS,
            *commands.COMMANDS,
        ),
    )
    for module in (
        fetch_commands,
        status_commands,
        key_commands,
        topic_commands,
        reconcile_commands,
        retention_commands,
        diskless_commands,
        cluster_commands,
        broker_commands,
        export_commands,
        compaction_commands,
        remote_log_metadata_commands,
    ):
        module.register(sub)
    add_commands(sub, (airflow_commands.AIRFLOW,))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; an expected failure ends in one line on stderr and its exit code
    (exit_codes.py), a traceback only with ``-v``."""
    parser = build_parser()
    args = place_trailing(parser, *parser.parse_known_args(argv))
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if not args.verbose:  # kafka-python logs each refused connection it then retries past
        logging.getLogger("kafka").setLevel(logging.CRITICAL)
    from tierflow.config import Settings  # once the arguments parsed: not for --help

    try:
        if args.func not in RUNS_AIRFLOW:
            _airflow_logs_to_stderr(args.verbose)
        if args.func in READS_STORE_ONLY:
            require_existing_store(Settings.from_env().db_url)
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe fails here, not in the interpreter's exit
        return code
    except BrokenPipeError:
        return _reader_gone()
    except SystemExit as exc:
        # rich's Console met the closed pipe first: it already pointed stdout at devnull.
        if isinstance(exc.__context__, BrokenPipeError):
            return BROKEN_PIPE
        raise
    except KeyboardInterrupt:
        print("tierflow: interrupted", file=sys.stderr)
        return INTERRUPTED
    except Exception as exc:
        code = exit_code_for(exc)
        if code is None or args.verbose:
            raise
        print(f"tierflow: error: {_redacted(error_line(exc))}", file=sys.stderr)
        return code


def _airflow_logs_to_stderr(verbose: bool) -> None:
    """Settings that reach Airflow connections (a cloud bucket, an Iceberg catalog connection)
    import Airflow, whose logging writes to stdout from then on. Point it at
    stderr first, so stdout holds only the command's output and ``--json`` one document."""
    from tierflow.config import InvalidSettingError, Settings

    try:
        settings = Settings.from_env()
    except InvalidSettingError:
        return  # the command itself reports it
    if settings.iceberg_catalog or not is_local_url(settings.remote_storage):
        from airflow.sdk.log import configure_logging

        configure_logging(log_level="INFO" if verbose else "WARNING", output=sys.stderr)


def _reader_gone() -> int:
    """The reader closed the pipe (``| head``): stop quietly. Python's "Note on SIGPIPE":
    point stdout at devnull so the interpreter's own flush at exit cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout without a file descriptor (a test's capture)
        pass
    return BROKEN_PIPE


def _redacted(message: str) -> str:
    """The message without the secrets of the configured URLs (an error may quote one)."""
    from tierflow.config import InvalidSettingError, Settings
    from tierflow.runtime import redact

    try:
        settings = Settings.from_env()
    except InvalidSettingError:
        settings = None
    return redact(message, settings)
