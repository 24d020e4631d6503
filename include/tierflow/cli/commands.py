"""Command implementations: thin adapters from parsed arguments to the library."""

from __future__ import annotations

import argparse
import json
import shutil
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from tierflow.cli.common import CommandError, as_command_error, cli_actor, parse_config, pipe_width
from tierflow.cli.report import partition_table
from tierflow.cluster.brokers import BrokerIdError
from tierflow.cluster.leaders import leader_logs
from tierflow.cluster.replicas import DuplicateReplicaError
from tierflow.config import Settings, project_root
from tierflow.kafka.cluster_metadata import ClusterMetadataError
from tierflow.kafka.errors import KafkaFormatError
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.lifecycle.copy.steps import (
    CopyFailedError,
    PartitionBusyError,
    TopicIdMismatchError,
    copy_partition,
)
from tierflow.lifecycle.copy.verify import verify_partition
from tierflow.metadata.engine import describe_url
from tierflow.metadata.errors import InvalidConfigError, TopicConflictError, UnknownTopicError
from tierflow.metadata.log_config import parse_kafka_configs
from tierflow.metadata.tierable import NotTierableTopicError
from tierflow.rsm import RemoteStorageError
from tierflow.runtime import (
    UnknownPartitionError,
    open_storage,
    open_store,
    redact,
)
from tierflow.storage.keys import InvalidTopicIdError, InvalidTopicNameError, validate_topic_name

if TYPE_CHECKING:
    from tierflow.airflow_server import LocalAirflow
    from tierflow.kafka.log_dir import PartitionLog

console = Console(width=pipe_width(110))

KNOWN_ERRORS = (
    KafkaFormatError,
    InvalidConfigError,
    UnknownTopicError,
    UnknownPartitionError,
    RemoteStorageError,
    PartitionBusyError,
    TopicIdMismatchError,
    CopyFailedError,
    FileNotFoundError,
)


def _settings() -> Settings:
    return Settings.from_env()


def _project() -> Path:
    root = project_root()
    if root is None:
        raise CommandError(
            "this command needs the tierflow checkout (dags/, airflow_settings.yaml)"
        )
    return root


# What registration can refuse, besides KNOWN_ERRORS: each is a one-line operator error.
REGISTER_ERRORS = (
    InvalidTopicNameError,
    InvalidTopicIdError,
    TopicConflictError,
    NotTierableTopicError,
)


def topics_register(args: argparse.Namespace) -> int:
    settings = _settings()
    with as_command_error(*KNOWN_ERRORS, *REGISTER_ERRORS):
        # The name first: a hostile one must not even be looked up in the log dirs.
        validate_topic_name(args.name)
        configs = dict(parse_config(item) for item in args.config)
        topic_id = args.topic_id
        if topic_id is None:
            topic_id = _topic_id_from_log_dirs(settings, args.name)
        topic = open_store(settings).register_topic(
            args.name,
            topic_id,
            actor="cli",
            now_ms=wall_clock_ms(),
            **parse_kafka_configs(configs),
        )
    console.print(f"registered {topic.name} ({topic.topic_id}), tiered state {topic.tiered_state}")
    return 0


def _leader_partition_logs(settings: Settings) -> list[PartitionLog]:
    """Every partition's leader replica (tierflow.cluster): the one copy and verify read."""
    with as_command_error(ClusterMetadataError, BrokerIdError, DuplicateReplicaError):
        return [found.log for found in leader_logs(settings)]


def _topic_id_from_log_dirs(settings: Settings, name: str) -> str:
    for log_ in _leader_partition_logs(settings):
        if log_.topic == name and log_.topic_id():
            return str(log_.topic_id())
    raise CommandError(
        f"topic {name!r}: no partition.metadata in the log dirs to take its id from; "
        "pass --topic-id"
    )


def topics_list(args: argparse.Namespace) -> int:
    table = Table(title="Registered topics")
    for column in ("topic", "id", "remote", "tiered state", "epoch", "retention.ms"):
        table.add_column(column)
    table.add_column("retention.bytes")
    for topic in open_store(_settings()).topics():
        table.add_row(
            topic.name,
            topic.topic_id,
            str(topic.remote_storage_enable).lower(),
            str(topic.tiered_state),
            str(topic.tiered_epoch),
            str(topic.retention_ms),
            str(topic.retention_bytes),
        )
    console.print(table)
    return 0


def copy(args: argparse.Namespace) -> int:
    settings = _settings()
    store, rsm = open_store(settings), open_storage(settings)
    owner = args.owner or cli_actor()
    logs = [
        log_
        for log_ in _leader_partition_logs(settings)
        if (args.topic is None or log_.topic == args.topic)
        and (args.partition is None or log_.partition == args.partition)
    ]
    if not logs:
        raise CommandError("no matching partitions in the log dirs")
    failures = 0
    for log_ in logs:
        label = f"{log_.topic}-{log_.partition}"
        try:
            report = copy_partition(
                log_,
                store,
                rsm,
                owner=owner,
                lease_ttl_s=settings.copy_lease_ttl_s,
                dry_run=args.dry_run,
                on_copied=lambda s, label=label: console.print(
                    f"  {label}: copied offsets {s.start_offset}-{s.end_offset} "
                    f"({s.size_in_bytes} bytes) as {s.segment_id}"
                ),
            )
        except UnknownTopicError:
            continue
        except KNOWN_ERRORS as exc:
            failures += 1
            console.print(f"[red]{label}: {exc}[/red]")
            continue
        if report.skipped:
            console.print(f"{label}: skipped ({report.skipped})")
        elif args.dry_run:
            console.print(f"{label}: would copy segments at base offsets {report.pending}")
        if report.held_back:
            console.print(f"{label}: {report.held_back}, later segments stay local")
        for segment_id in report.cleaned_up:
            console.print(f"{label}: removed abandoned attempt {segment_id}")
    return 1 if failures else 0


def verify(args: argparse.Namespace) -> int:
    settings = _settings()
    store, rsm = open_store(settings), open_storage(settings)
    logs, checks = _verify_all(store, rsm, settings, args.topic)
    console.print(partition_table(store, logs, checks, title="Remote copies checked"))
    bad = [c for c in checks if c.identical is False]
    for check in bad:
        console.print(f"[red]{check.topic}-{check.partition} {check.segment_id}: {check.detail}")
    return 1 if bad else 0


def _verify_all(store, rsm, settings: Settings, topic_filter: str | None):
    logs, checks = [], []
    for log_ in _leader_partition_logs(settings):
        if topic_filter and log_.topic != topic_filter:
            continue
        try:
            topic = store.topic(log_.topic)
        except UnknownTopicError:
            continue
        logs.append(log_)
        checks.extend(verify_partition(log_, topic, store, rsm))
    return logs, checks


def events(args: argparse.Namespace) -> int:
    store = open_store(_settings())
    topic_id = store.topic(args.topic).topic_id if args.topic else None
    rows = store.events(topic_id=topic_id, segment_id=args.segment)[-args.limit :]
    table = Table(title="State transitions (oldest first)")
    for column in ("#", "time (ms)", "entity", "partition", "segment", "from", "to", "actor"):
        table.add_column(column)
    for event in rows:
        table.add_row(
            str(event.id),
            str(event.event_timestamp_ms),
            event.entity,
            "" if event.partition is None else str(event.partition),
            event.segment_id or "",
            event.from_state or "",
            event.to_state,
            event.actor,
        )
    console.print(table)
    return 0


def db_upgrade(args: argparse.Namespace) -> int:
    settings = _settings()
    open_store(settings)
    console.print(f"schema is at the latest revision: {describe_url(settings.db_url)}")
    return 0


def airflow_apply_settings(args: argparse.Namespace) -> int:
    from tierflow.airflow_local import apply_settings

    path = Path(args.file) if args.file else _project() / "airflow_settings.yaml"
    counts = apply_settings(path)
    console.print(f"applied {path.name}: {counts}")
    return 0


def airflow_test_dag(args: argparse.Namespace) -> int:
    from tierflow.airflow_local import apply_settings, test_dag

    project = _project()
    apply_settings(project / "airflow_settings.yaml")
    logical_date = datetime.fromisoformat(args.logical_date) if args.logical_date else None
    state = test_dag(
        args.dag_id, project / "dags", run_conf=json.loads(args.conf), logical_date=logical_date
    )
    # A marker line that callers find in the noisy Airflow output.
    print(f"TIERFLOW_DAG_STATE={state}", flush=True)
    return 0 if state == "success" else 1


def airflow_serve(args: argparse.Namespace) -> int:
    import signal

    from tierflow.airflow_server import AirflowServerError, LocalAirflow, choose_port

    project = _project()
    settings = _settings()
    home = Path(args.home) if args.home else settings.data_dir / "airflow-home"
    server = LocalAirflow(project, home, choose_port(args.port), report=console.print)
    # Ctrl-C and `kill` both stop the components cleanly, even when started in the background
    # (where a shell makes the process ignore SIGINT).
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.default_int_handler)
    try:
        server.start()
        server.wait_ready()
        _print_serving(server, settings)
        server.wait()
    except KeyboardInterrupt:
        console.print("Stopping Airflow...")
    except AirflowServerError as exc:
        raise CommandError(str(exc)) from exc
    finally:
        # A second Ctrl-C must not cut the shutdown short and leave components running.
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)
        server.stop()
    console.print("Airflow stopped.")
    return 0


def _print_serving(server: LocalAirflow, settings: Settings) -> None:
    for error in server.import_errors():
        console.print(f"import error in {error['filename']}:", style="red", markup=False)
        console.print(error["stack_trace"], markup=False, highlight=False)
    console.print(f"DAGs: {', '.join(server.dag_ids())}")
    console.print(
        f"tierflow: store {describe_url(settings.db_url)}, "
        f"bucket {redact(settings.remote_storage, settings)}, "
        f"log dirs {':'.join(str(p) for p in settings.log_dirs)}",
        markup=False,
    )
    console.print("ready", style="bold green")
    console.print(f"UI: {server.url}  login: admin / {server.password}", markup=False)
    console.print(f"Tiered storage page: {server.url}/plugin/tiered-storage", markup=False)
    console.print("Ctrl-C stops Airflow.")


def demo(args: argparse.Namespace) -> int:
    from tierflow.cli.demo import run_demo

    base = Path(args.data_dir) if args.data_dir else _settings().data_dir / "demo"
    if base.exists():
        console.print(f"Replacing the previous demo in {base}")
        shutil.rmtree(base)
    return run_demo(_project(), base, console)
