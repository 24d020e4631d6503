"""``make demo``'s topics, tiered and exported to Iceberg: pyiceberg reads back, for every
exported partition, the records kafka-python reads from the broker's own segments (offsets,
timestamps, keys, values, headers), without the aborted and control records; an export with
nothing new adds nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.demo_data import demo_copy
from tests.support.iceberg_rows import expected_rows, table_rows
from tests.support.settings_env import use_settings
from tierflow.cli import main
from tierflow.export.catalog import settings_catalog
from tierflow.export.table import committed_ends, existing_table
from tierflow.runtime import partition_logs


def test_the_demos_topics_as_iceberg_tables(
    demo_log_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = demo_copy(demo_log_dir, tmp_path / "demo")
    use_settings(monkeypatch, settings)
    logs = partition_logs(settings.log_dirs)
    topics = sorted({log_.topic for log_ in logs})
    for topic in topics:
        config = "tierflow.iceberg.export=true"
        assert main(["topics", "register", topic, "--config", config]) == 0
    assert main(["copy", "--owner", "test", "--no-spark"]) == 0
    assert main(["export", "iceberg", "--run", "demo"]) == 0
    catalog = settings_catalog(settings)
    for topic in topics:
        table = existing_table(catalog, topic)
        ends, rows = committed_ends(table), table.scan().to_arrow()
        exported = [log_ for log_ in logs if log_.topic == topic and log_.partition in ends]
        assert exported, f"{topic}: nothing exported"
        for log_ in exported:
            want = expected_rows(log_, below=ends[log_.partition] + 1)
            assert table_rows(rows, log_.partition) == want, f"{topic}-{log_.partition}"
    snapshots = {t: len(existing_table(catalog, t).snapshots()) for t in topics}
    assert main(["export", "iceberg", "--run", "again"]) == 0
    assert {t: len(existing_table(catalog, t).snapshots()) for t in topics} == snapshots
