"""A replication-offset-checkpoint naming a high watermark above the log end is reported."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tests.support.tiered import build_tiered
from tierflow.kafka.checkpoint import (
    REPLICATION_OFFSET_CHECKPOINT,
    read_offset_checkpoint,
    write_offset_checkpoint,
)
from tierflow.lifecycle.copy.prepare import CopyOwner, prepare_copy


def test_a_high_watermark_above_the_log_end_is_a_warning_naming_the_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    t = build_tiered(tmp_path)
    log_ = t.log("orders", 0)
    checkpoint = log_.log_dir.path / REPLICATION_OFFSET_CHECKPOINT
    offsets = read_offset_checkpoint(checkpoint)
    log_end = log_.log_end_offset()
    offsets[("orders", 0)] = log_end + 1_000
    write_offset_checkpoint(checkpoint, offsets)

    with caplog.at_level(logging.WARNING, logger="tierflow.lifecycle.copy.prepare"):
        plan = prepare_copy(log_, t.store, rsm=t.rsm, owner=CopyOwner("test"), dry_run=True)

    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(
        str(checkpoint) in w and f"{log_end + 1_000} is above the log end {log_end}" in w
        for w in warnings
    ), warnings
    assert plan.report.pending, "the segments below the log end are still copied"
