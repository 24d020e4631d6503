"""Is a copy attempt still live? One rule for retention and reconciliation.

Both must leave alone a COPY_SEGMENT_STARTED row that a copy may still be working on (Kafka's
segmentIdsBeingCopied), and may delete it only once it is abandoned; if they judged it
differently, one of them would delete what the other keeps.
"""

from __future__ import annotations

from tierflow.metadata.models import Partition


def copy_lease_live(partition: Partition | None, now_ms: int) -> bool:
    """Someone holds an unexpired copy lease on the partition."""
    return (
        partition is not None
        and partition.lease_owner is not None
        and partition.lease_expires_ms is not None
        and partition.lease_expires_ms > now_ms
    )


def copy_attempt_live(created_ms: int, *, lease_live: bool, now_ms: int, grace_ms: int) -> bool:
    """A COPY_SEGMENT_STARTED row created at ``created_ms`` may still be copied: a lease is
    held on its partition, or it is younger than the grace period."""
    return lease_live or now_ms - created_ms < grace_ms
