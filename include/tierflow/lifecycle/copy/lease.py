"""The partition's copy lease as the copy, the remote compaction and the diskless merge take it:
one writer of a partition's remote segments at a time (metadata.partition_registry).

A refusal is one line that says who holds the lease, since and until when, and how to get it:
wait, stop a holder that still runs here, or take over as its owner once it is gone.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from contextlib import contextmanager

from tierflow.config import variable
from tierflow.lifecycle.clock import Clock
from tierflow.metadata.lease_holder import HolderState, LeaseHolder
from tierflow.metadata.models import Partition, Topic
from tierflow.metadata.partition_registry import Lease, lease_until_ms
from tierflow.metadata.store import MetadataStore
from tierflow.units import iso_utc


class PartitionBusyError(RuntimeError):
    """Another live attempt holds the partition's copy lease."""


@contextmanager
def partition_lease(
    store: MetadataStore,
    topic: Topic,
    partition: int,
    owner: str,
    ttl_s: int,
    clock: Clock,
    holder: LeaseHolder | None = None,
) -> Iterator[Lease]:
    """The partition's copy lease for a step that works under it; the Lease fences this
    attempt's writes. It is given back at once if the step fails or is interrupted, so a rerun
    by another owner does not wait out its TTL; a step that succeeds keeps holding it, and the
    step after it (a copy's finalize) writes under the same taking and releases it by its
    token. ``holder``: this process holds it for as long as it runs (a CLI run), and takes over
    the lease of such a process on this host that is gone (metadata.lease_holder)."""
    lease = store.take_lease(
        topic.topic_id, partition, owner, now_ms=clock(), ttl_ms=ttl_s * 1000, holder=holder
    )
    if lease is None:
        held = store.partition(topic.topic_id, partition)
        raise PartitionBusyError(f"{topic.name}-{partition}: {busy_reason(held, ttl_s)}")
    try:
        yield lease
    except BaseException:
        release_taking(store, lease)
        raise


def release_taking(store: MetadataStore, lease: Lease) -> None:
    """Give up this taking of the lease; one taken over since is left to its new holder."""
    store.release_lease(lease.topic_id, lease.partition, lease.owner, token=lease.token)


def busy_reason(held: Partition | None, ttl_s: int) -> str:
    """Who holds the lease, since and until when (judged with ``ttl_s``), and what to do."""
    if held is None or held.lease_owner is None:
        return "copy lease was held by another run, which has just let it go; rerun"
    owner = held.lease_owner
    holder = LeaseHolder.from_json(held.lease_holder)
    state = holder.state() if holder else HolderState.UNKNOWN
    since = f" since {iso_utc(held.lease_taken_ms)}" if held.lease_taken_ms is not None else ""
    until_ms = lease_until_ms(held, ttl_s * 1000)
    until = iso_utc(until_ms) if until_ms is not None else "?"
    ttl = f"{variable('copy_lease_ttl_s')}={ttl_s}"
    if state is HolderState.RUNNING:
        todo = "let it finish, or stop it and rerun (its lease is then taken over at once)"
    else:
        takeover = f"--owner {shlex.quote(owner)}"
        todo = f"wait until {until}, or once it is gone take it over now with {takeover}"
    return (
        f"copy lease held by {owner!r} ({_process(holder, state)}){since}, until {until} "
        f"({ttl}); {todo}"
    )


def _process(holder: LeaseHolder | None, state: HolderState) -> str:
    if holder is None:
        return "no process recorded: an Airflow task, or an older tierflow"
    if state is HolderState.RUNNING:
        return f"{holder.describe()}, still running"
    if state is HolderState.GONE:
        return f"{holder.describe()}, gone"
    return f"{holder.describe()}, which cannot be checked from this host"
