"""Bounded shards: how a lifecycle run over any number of partitions stays a few task instances.

Kafka's RemoteLogManager works with a fixed thread pool per broker however many partitions it
leads. The DAGs do the same in Airflow's terms: one task plans the whole cluster, the work is cut
into at most ``max_shards`` shards (by broker, then balanced by bytes), and Airflow maps over the
shards, never over partitions, so ``[core] max_map_length`` is never approached.

Inside a shard every partition is still its own unit: it is processed, logged and reported by
name, and one partition's failure neither hides nor stops the others (``run_partitions``).
"""

from __future__ import annotations

import heapq
import logging
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from tierflow.runtime import shared_resources

log = logging.getLogger(__name__)

DEFAULT_QUEUE = "default"


class PartitionFailure(BaseModel):
    """A partition that was not done, named as Kafka names it, with the one-line reason."""

    model_config = ConfigDict(frozen=True)

    topic: str
    partition: int
    label: str
    error: str


class ShardOutcome(BaseModel):
    """What one shard task did, as XCom carries it (JSON, under the key ``outcome``): each
    partition's result, in its operation's shape (a plan, a report), and each failure."""

    model_config = ConfigDict(frozen=True)

    shard: int | None = None
    results: list[dict] = Field(default_factory=list)
    failures: list[PartitionFailure] = Field(default_factory=list)

    def as_xcom(self) -> dict:
        return self.model_dump(mode="json")


def shard_outcome(raw: dict | None) -> ShardOutcome | None:
    """An outcome as XCom gave it back; None where the shard task left none."""
    return None if raw is None else ShardOutcome.model_validate(raw)


class ShardFailedError(RuntimeError):
    """Some partitions of a shard failed; the others were processed, and each is named."""

    def __init__(self, failures: Sequence[PartitionFailure]) -> None:
        self.failures = list(failures)
        names = ", ".join(f"{f.label} ({f.error})" for f in self.failures[:10])
        more = f" and {len(self.failures) - 10} more" if len(self.failures) > 10 else ""
        super().__init__(
            f"{len(self.failures)} partition(s) failed: {names}{more}; the others were "
            "processed. Clear this task to retry them"
        )


class PartitionsFailedError(RuntimeError):
    """Some partitions were not done: the run must end red although the rest was."""


def label(target: dict) -> str:
    """How logs and summaries name a partition: topic-partition, as Kafka does."""
    return f"{target['topic']}-{target['partition']}"


def cut_shards(
    targets: Sequence[dict], *, max_shards: int, queues: Mapping[int, str] | None = None
) -> list[dict]:
    """At most ``max_shards`` shards (one at least per broker with work), each on one broker,
    on that broker's queue in ``queues`` (else ``default``).

    A target is a dict with ``topic``, ``partition``, and optionally ``broker`` (default 0)
    and ``bytes`` (its expected work, default 0). Brokers get shards in proportion to their
    work; within a broker, partitions go largest first to the lightest shard.
    """
    by_broker: dict[int, list[dict]] = defaultdict(list)
    for target in targets:
        by_broker[int(target.get("broker", 0))].append(target)
    counts = _shards_per_broker(by_broker, max(max_shards, 1))
    shards = []
    for broker in sorted(by_broker):
        for bucket in _balance(by_broker[broker], counts[broker]):
            queue = (queues or {}).get(broker, DEFAULT_QUEUE)
            shards.append(_shard(len(shards), broker, queue, bucket))
    return shards


def _shards_per_broker(by_broker: dict[int, list[dict]], max_shards: int) -> dict[int, int]:
    """Every broker with work gets one shard; the rest go by weight (largest remainders),
    never more than a broker has partitions."""
    counts = {broker: 1 for broker in by_broker}
    spare = max(max_shards - len(counts), 0)
    weights = {b: sum(_weight(t) for t in items) for b, items in by_broker.items()}
    total = sum(weights.values()) or 1
    exact = {b: spare * weights[b] / total for b in by_broker}
    for broker in by_broker:
        counts[broker] += min(int(exact[broker]), len(by_broker[broker]) - 1)
    left = max_shards - sum(counts.values())
    for broker in sorted(by_broker, key=lambda b: (-(exact[b] - int(exact[b])), b)):
        if left > 0 and counts[broker] < len(by_broker[broker]):
            counts[broker] += 1
            left -= 1
    return counts


def _balance(items: list[dict], count: int) -> list[list[dict]]:
    """Largest first into the lightest bin; bins come back sorted by their first partition."""
    bins: list[list[dict]] = [[] for _ in range(count)]
    heap = [(0, index) for index in range(count)]
    for item in sorted(items, key=lambda t: (-_weight(t), t["topic"], t["partition"])):
        load, index = heapq.heappop(heap)
        bins[index].append(item)
        heapq.heappush(heap, (load + _weight(item), index))
    for bucket in bins:
        bucket.sort(key=lambda t: (t["topic"], t["partition"]))
    return sorted((b for b in bins if b), key=lambda b: (b[0]["topic"], b[0]["partition"]))


def _weight(target: dict) -> int:
    return max(int(target.get("bytes") or 0), 1)


def _shard(index: int, broker: int, queue: str, targets: list[dict]) -> dict:
    first, last = label(targets[0]), label(targets[-1])
    name = first if len(targets) == 1 else f"{len(targets)} partitions, {first} .. {last}"
    return {
        "index": index,
        "broker": broker,
        "queue": queue,
        "label": f"broker {broker}: {name}",
        "bytes": sum(int(t.get("bytes") or 0) for t in targets),
        "targets": targets,
    }


def run_partitions(
    items: Iterable[dict],
    work: Callable[[dict], dict | None],
    *,
    what: str,
    shard: int | None = None,
) -> ShardOutcome:
    """``work`` on each partition in turn: the results and failures. A failure is logged with
    the partition's name and kept, and the next partition goes ahead."""
    results: list[dict] = []
    failures: list[PartitionFailure] = []
    with shared_resources():  # one store, storage and bucket for the whole shard
        for item in items:
            _run_one(item, work, what, results, failures)
    return ShardOutcome(shard=shard, results=results, failures=failures)


def failed(target: dict, error: str) -> PartitionFailure:
    return PartitionFailure(
        topic=target["topic"], partition=int(target["partition"]), label=label(target), error=error
    )


def _run_one(
    item: dict,
    work: Callable[[dict], dict | None],
    what: str,
    results: list[dict],
    failures: list[PartitionFailure],
) -> None:
    try:
        result = work(item)
    except Exception as exc:
        log.error("%s %s failed: %s: %s", what, label(item), type(exc).__name__, exc)
        failures.append(failed(item, f"{type(exc).__name__}: {exc}"))
        return
    if result is not None:
        results.append(result)


def failures_of(
    shards: Sequence[dict], *outcome_lists: Sequence[ShardOutcome | None]
) -> list[PartitionFailure]:
    """Every partition that failed in any step, and every partition of a shard whose task
    left no outcome at all (killed, or failed before it could say)."""
    found: dict[str, PartitionFailure] = {}
    for index, shard in enumerate(shards):
        for outcomes in outcome_lists:
            outcome = outcomes[index] if index < len(outcomes) else None
            if outcome is None:
                lost = "its shard task did not finish"
                failures = [failed(t, lost) for t in shard["targets"]]
            else:
                failures = outcome.failures
            for failure in failures:
                found.setdefault(failure.label, failure)
    return list(found.values())


def not_done_message(failed: Sequence[PartitionFailure]) -> str:
    names = ", ".join(f"{f.label} ({f.error})" for f in failed[:20])
    more = f" and {len(failed) - 20} more" if len(failed) > 20 else ""
    return (
        f"{len(failed)} partition(s) were not done: {names}{more}; the others were. Clear the "
        "failed shard tasks together with their downstream tasks to finish the run"
    )


def raise_on_failures(outcome: ShardOutcome) -> None:
    """A shard task ends red when any of its partitions failed, after all were processed."""
    if outcome.failures:
        raise ShardFailedError(outcome.failures)


def check_run(shards: Sequence[dict], *outcome_lists: Sequence[ShardOutcome | None]) -> None:
    """The run's last task: red, naming each partition, when any partition was not done."""
    missing = failures_of(shards, *outcome_lists)
    if missing:
        raise PartitionsFailedError(not_done_message(missing))
