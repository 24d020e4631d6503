"""``tierflow copy``'s last line when it copied nothing says what is true of each partition:
skipped (and why), failed, or with every eligible segment remote already; never "every
eligible segment is already remote" of a partition it did not copy from at all."""

from __future__ import annotations

import pytest

from tests.support.tiered import Tiered
from tierflow.cli import main
from tierflow.kafka.checkpoint import (
    REPLICATION_OFFSET_CHECKPOINT,
    read_offset_checkpoint,
    write_offset_checkpoint,
)

NO_HW = "no high watermark in replication-offset-checkpoint"


def _forget_high_watermarks(t: Tiered, keys: list[tuple[str, int]]) -> None:
    """As a broker that never checkpointed them: the partitions' lines go."""
    path = t.settings.log_dirs[0] / REPLICATION_OFFSET_CHECKPOINT
    offsets = read_offset_checkpoint(path)
    write_offset_checkpoint(path, {k: v for k, v in offsets.items() if k not in keys})


@pytest.mark.parametrize(
    ("copied_first", "forgotten", "last_line"),
    [
        (
            True,
            [("orders", 0), ("orders", 1)],
            f"nothing copied: 2 partitions skipped ({NO_HW}); every eligible segment of the "
            "other 1 is already remote",
        ),
        (
            False,
            [("orders", 0), ("orders", 1), ("payments", 0)],
            f"nothing copied: 3 partitions skipped ({NO_HW})",
        ),
        (
            True,
            [],
            "nothing to copy: 3 partitions of registered topics checked, every eligible segment "
            "is already remote",
        ),
    ],
    ids=["some-skipped", "all-skipped", "none-skipped"],
)
def test_the_last_line_counts_skipped_partitions_apart(
    untiered: Tiered,
    capsys: pytest.CaptureFixture[str],
    copied_first: bool,
    forgotten: list[tuple[str, int]],
    last_line: str,
) -> None:
    if copied_first:
        assert main(["copy"]) == 0
    _forget_high_watermarks(untiered, forgotten)
    capsys.readouterr()
    assert main(["copy"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == last_line
    for topic, partition in forgotten:
        assert f"{topic}-{partition}: skipped ({NO_HW})" in lines
    assert main(["copy", "--dry-run"]) == 0
    dry = capsys.readouterr().out.splitlines()[-1]
    assert dry == last_line.replace("nothing copied", "nothing to copy") + (
        "; dry run, nothing written"
    )
