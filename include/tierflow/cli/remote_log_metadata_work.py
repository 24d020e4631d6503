"""The work behind ``tierflow remote-log-metadata ...``, ``topics handover`` and ``topics
follow`` (their options are in ``remote_log_metadata_commands``): imported when one of them
runs."""

from __future__ import annotations

import argparse
from dataclasses import asdict

from tierflow.cli.common import CommandError, as_command_error, cli_actor, parse_config, print_json
from tierflow.cli.console import stdout_console
from tierflow.config import InvalidSettingError, Settings, variable
from tierflow.kafka.errors import ClusterMetadataError
from tierflow.kafka.remote_log_metadata.topic import MetadataTopic, MetadataTopicError
from tierflow.lifecycle.remote_log_metadata.follow import follow, follow_topic
from tierflow.lifecycle.remote_log_metadata.handover import (
    HandoverPlan,
    HandoverRefused,
    hand_over,
    plan_handover,
)
from tierflow.lifecycle.remote_log_metadata.publish import publish
from tierflow.metadata.errors import MetadataError
from tierflow.metadata.store_base import wall_clock_ms
from tierflow.runtime import open_store

console = stdout_console(soft_wrap=True, highlight=False)


def _settings() -> Settings:
    with as_command_error(InvalidSettingError):
        return Settings.from_env()


def metadata_topic(settings: Settings) -> MetadataTopic:
    if not settings.cluster.bootstrap_servers:
        raise CommandError(
            f"{variable('kafka_bootstrap')} is not set: which cluster's metadata topic?"
        )
    return MetadataTopic(settings.cluster.bootstrap_servers)


def publish_command(args: argparse.Namespace) -> int:
    settings = _settings()
    topic = metadata_topic(settings)
    with as_command_error(MetadataTopicError):
        report = publish(open_store(settings), topic, chunk=args.chunk)
    _print(
        args.json,
        asdict(report),
        f"published {report.published} record(s) to {topic.topic} at {topic.bootstrap}"
        f" ({report.enqueued} new transition(s); {report.recovered} already there from a"
        f" stopped run); {report.waiting} waiting",
    )
    return 0


def _print(as_json: bool, document: dict, line: str) -> None:
    """A command's outcome: the document with --json, else the line."""
    if as_json:
        print_json(document)
    else:
        console.print(line)


HANDOVER_ERRORS = (HandoverRefused, MetadataError, MetadataTopicError, ClusterMetadataError)


def handover_command(args: argparse.Namespace) -> int:
    settings = _settings()
    store = open_store(settings)
    configs = dict(parse_config(item) for item in args.config)
    with as_command_error(*HANDOVER_ERRORS):
        plan = plan_handover(store, args.topic, configs)
        if not args.yes:
            _print_plan(plan, args.json)
            return 0 if plan.refusal is None else 2
        report = hand_over(
            store, metadata_topic(settings), plan, actor=cli_actor(), now_ms=wall_clock_ms()
        )
    settings_text = ", ".join(f"{k}={v}" for k, v in plan.configs.items())
    _print(
        args.json,
        {**_plan_json(plan), "published": report.published, "handed_over": True},
        f"{plan.topic}: handed over to the brokers ({report.published} record(s) "
        f"published; set {settings_text}). tierflow now follows it.",
    )
    return 0


def _plan_json(plan: HandoverPlan) -> dict:
    copied = {str(p): {"segments": n, "highest_offset": h} for p, (n, h) in plan.copied.items()}
    return {
        "topic": plan.topic,
        "topic_id": plan.topic_id,
        "copier": plan.copier,
        "copied": copied,
        "in_flight": plan.in_flight,
        "waiting": plan.waiting,
        "configs": plan.configs,
        "refusal": plan.refusal,
    }


def _print_plan(plan: HandoverPlan, as_json: bool) -> None:
    if as_json:
        print_json(_plan_json(plan))
        return
    console.print(f"Hand-over of {plan.topic} ({plan.topic_id}), copied by {plan.copier} now:")
    for partition, (segments, highest) in sorted(plan.copied.items()):
        console.print(f"  partition {partition}: {segments} segment(s) copied, to offset {highest}")
    console.print(f"  {plan.waiting} transition(s) to publish to __remote_log_metadata first")
    settings_text = ", ".join(f"{k}={v}" for k, v in plan.configs.items())
    console.print(f"  then in Kafka: {settings_text}; the brokers copy from there on")
    console.print(plan.refusal or "Dry run: nothing changed. Run again with --yes to hand over.")


def follow_command(args: argparse.Namespace) -> int:
    settings = _settings()
    topic = metadata_topic(settings)
    with as_command_error(MetadataTopicError, MetadataError):
        report = follow(open_store(settings), topic, from_start=args.from_start)
    _print(
        args.json,
        asdict(report),
        f"read {report.read} record(s) of {topic.topic} at {topic.bootstrap}: "
        f"{report.mirrored} transition(s) mirrored, {report.known} known already, "
        f"{report.not_followed} of topics tierflow does not follow",
    )
    return 0


def topics_follow_command(args: argparse.Namespace) -> int:
    settings = _settings()
    store = open_store(settings)
    with as_command_error(MetadataError, ValueError):
        changed = follow_topic(store, args.topic, actor=cli_actor(), now_ms=wall_clock_ms())
    state = "now follows" if changed else "already follows"
    console.print(
        f"tierflow {state} {args.topic}: the brokers copy it; "
        "run tierflow remote-log-metadata follow to mirror their segments"
    )
    return 0
