"""``tierflow remote-log-metadata ...``: tierflow and the brokers' ``__remote_log_metadata``.

``publish`` sends each transition of the topics tierflow copies to the metadata topic as a
broker would write it, so brokers serve the segments tierflow tiered (a hand-over).
"""

from __future__ import annotations

import argparse
from dataclasses import asdict

from tierflow.cli.common import CommandError, as_command_error, print_json
from tierflow.cli.console import stdout_console
from tierflow.cli.spec import Command, Group, add_commands, arg, flag
from tierflow.config import ENV_KAFKA_BOOTSTRAP, InvalidSettingError, Settings
from tierflow.kafka.remote_log_metadata.topic import MetadataTopic, MetadataTopicError
from tierflow.lifecycle.remote_log_metadata.publish import CHUNK, publish
from tierflow.runtime import open_store

console = stdout_console(soft_wrap=True, highlight=False)


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def metadata_topic(settings: Settings) -> MetadataTopic:
    if not settings.kafka_bootstrap:
        raise CommandError(f"{ENV_KAFKA_BOOTSTRAP} is not set: which cluster's metadata topic?")
    return MetadataTopic(settings.kafka_bootstrap)


def publish_command(args: argparse.Namespace) -> int:
    with as_command_error(InvalidSettingError):
        settings = Settings.from_env()
    topic = metadata_topic(settings)
    with as_command_error(MetadataTopicError):
        report = publish(open_store(settings), topic, chunk=args.chunk)
    if args.json:
        print_json(asdict(report))
    else:
        console.print(
            f"published {report.published} record(s) to {topic.topic} at {topic.bootstrap}"
            f" ({report.enqueued} new transition(s); {report.recovered} already there from a"
            f" stopped run); {report.waiting} waiting"
        )
    return 0


PUBLISH = Command(
    "publish",
    publish_command,
    help="publish tierflow's transitions to __remote_log_metadata",
    description="Send every segment and partition-delete transition of the topics tierflow "
    "copies to the cluster's __remote_log_metadata (TIERFLOW_KAFKA_BOOTSTRAP), as a broker's "
    "RemoteLogManager writes them: Kafka's record format, the metadata partition Kafka's "
    "partitioner picks, oldest first. Each is sent exactly once: a run that is stopped is "
    "finished by the next, never duplicated.",
    args=(
        arg("--chunk", type=positive, default=CHUNK, help=f"records per produce round [{CHUNK}]"),
        flag("--json", "print the counts as JSON"),
    ),
)

REMOTE_LOG_METADATA = Group(
    "remote-log-metadata",
    help="publish to and follow the brokers' __remote_log_metadata",
    dest="rlm_command",
    commands=(PUBLISH,),
)


def register(sub: argparse._SubParsersAction) -> None:
    add_commands(sub, (REMOTE_LOG_METADATA,))
