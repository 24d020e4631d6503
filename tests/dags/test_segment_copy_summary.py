"""The copy run's last task decides its colour: a partition whose prepare failed makes it red."""

from __future__ import annotations

import pytest

from tierflow.tasks.segment_copy import PartitionsNotCopiedError, summarize

REPORT = {"copied": [{"size_in_bytes": 10}, {"size_in_bytes": 5}], "cleaned_up": []}


def test_totals_when_every_partition_was_copied() -> None:
    assert summarize([REPORT, REPORT]) == {
        "partitions": 2,
        "segments": 4,
        "bytes": 30,
        "cleaned_up": 0,
    }


def test_a_partition_without_a_report_fails_the_run() -> None:
    with pytest.raises(PartitionsNotCopiedError, match="1 of 2 partitions were not copied"):
        summarize([REPORT, None])
