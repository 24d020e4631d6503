"""The work behind ``tierflow cluster describe`` (its options are in ``cluster_commands``):
imported when it runs."""

from __future__ import annotations

import argparse
import json
from collections import Counter
from itertools import groupby

from rich import box
from rich.markup import escape
from rich.table import Table

from tierflow.cli.common import NotFoundError, as_command_error
from tierflow.cli.console import stdout_console
from tierflow.cluster.brokers import BrokerIdError
from tierflow.cluster.describe import ClusterDescription, PartitionDescription, describe_cluster
from tierflow.cluster.replicas import DuplicateReplicaError
from tierflow.config import Settings
from tierflow.kafka.errors import ClusterMetadataError, KafkaFormatError

# Above this many partitions (and without --topic) one summary row per topic is shown.
MAX_PARTITION_ROWS = 200


def cluster_describe(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    errors = (BrokerIdError, DuplicateReplicaError, ClusterMetadataError, KafkaFormatError, OSError)
    with as_command_error(*errors):
        described = describe_cluster(settings, args.topic)
    if args.topic and not described.partitions:
        raise NotFoundError(f"no partition of topic {args.topic!r} in the log dirs")
    if args.json:
        print(json.dumps(described.as_json(), indent=2))
        return 0
    console = stdout_console()
    console.print(_brokers_table(described))
    if args.topic or len(described.partitions) <= MAX_PARTITION_ROWS:
        for topic, rows in _by_topic(described):
            console.print(_partitions_table(topic, rows))
    else:
        console.print(_topics_table(described))
    return 0


def _brokers_table(described: ClusterDescription) -> Table:
    table = Table(title="brokers", box=box.SIMPLE_HEAD)
    table.add_column("broker")
    table.add_column("log dirs", overflow="fold")
    table.add_column("partitions", justify="right")
    table.add_column("leads", justify="right")
    held = Counter(b for p in described.partitions for b in p.replicas)
    leads = Counter(p.leader for p in described.partitions if p.leader_local)
    for broker in described.brokers:
        dirs = "\n".join(escape(str(p)) for p in broker.log_dirs)
        broker_id = broker.broker_id
        table.add_row(str(broker_id), dirs, str(held[broker_id]), str(leads[broker_id]))
    return table


def _partitions_table(topic: str, rows: list[PartitionDescription]) -> Table:
    table = Table(title=escape(topic), box=box.SIMPLE_HEAD)
    for column in ("partition", "leader", "epoch", "source", "replicas", "isr", "diverged"):
        table.add_column(column)
    for p in rows:
        table.add_row(
            str(p.partition),
            _leader_text(p),
            _or_dash(p.leader_epoch),
            p.source,
            _brokers(p.replicas),
            "-" if p.isr is None else _brokers(p.isr),
            escape("; ".join(f"{d.broker}: {d.reason}" for d in p.diverged) or "-"),
        )
    return table


def _topics_table(described: ClusterDescription) -> Table:
    table = Table(
        title="topics (tierflow cluster describe --topic NAME shows each partition)",
        box=box.SIMPLE_HEAD,
    )
    for column in ("topic", "partitions", "leaders by broker", "sources", "not here", "diverged"):
        table.add_column(column)
    for topic, rows in _by_topic(described):
        leaders = Counter(p.leader for p in rows if p.leader_local)
        sources = Counter(p.source for p in rows)
        table.add_row(
            escape(topic),
            str(len(rows)),
            " ".join(f"{b}:{n}" for b, n in sorted(leaders.items())) or "-",
            " ".join(f"{s}:{n}" for s, n in sorted(sources.items())),
            str(sum(not p.leader_local for p in rows)),
            str(sum(len(p.diverged) for p in rows)),
        )
    return table


def _by_topic(described: ClusterDescription) -> list[tuple[str, list[PartitionDescription]]]:
    """Partitions grouped by topic; they come sorted by (topic, partition)."""
    return [(t, list(rows)) for t, rows in groupby(described.partitions, key=lambda p: p.topic)]


def _leader_text(p: PartitionDescription) -> str:
    if p.leader is None:
        return "none"
    return str(p.leader) if p.leader_local else f"{p.leader} (not configured)"


def _brokers(ids: tuple[int, ...]) -> str:
    return ",".join(str(i) for i in ids) or "-"


def _or_dash(value: int | None) -> str:
    return "-" if value is None else str(value)
