"""The names of a restore's staging and replaced directories: in the log dir, so a rename is
atomic, yet never a partition. Kafka's LogManager reads every directory name of a log dir as
``topic-partition``: it deletes a ``-delete`` one, adopts ``-future`` and ``-stray`` ones, loads
any whose last ``-`` is followed by a number, and refuses to start on the rest. So neither name
may end in one of those suffixes or in a number, and tierflow's own scan must skip both."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tierflow.kafka.log_dir import LogDir
from tierflow.kafka.naming import parse_partition_dir
from tierflow.restore.swap import replaced_name, staging_name

NAMES = ["orders-0", "a.b_c-d-12", "t-" * 5 + "3", "x" * 249 + "-2147483647"]


@pytest.mark.parametrize("name", NAMES, ids=["plain", "dots-and-dashes", "dashes", "longest"])
@pytest.mark.parametrize("kind", [staging_name, replaced_name], ids=["staging", "replaced"])
def test_a_broker_never_takes_it_for_a_partition(name: str, kind: Callable[[str], str]) -> None:
    hidden = kind(name)
    assert hidden.startswith(".") and len(hidden) <= 255
    assert not hidden.endswith(("-delete", "-future", "-stray"))
    last = hidden.rsplit("-", 1)[1]
    assert not last.lstrip("+-").isdigit(), "Kafka would load it as a partition"
    assert parse_partition_dir(hidden) is None


def test_each_partition_has_its_own() -> None:
    names = ["orders-1", "orders-10", "orders-copy-1", "x" * 249 + "-1", "x" * 249 + "-2"]
    for kind in (staging_name, replaced_name):
        assert len({kind(name) for name in names}) == len(names)
    assert staging_name("orders-0") != replaced_name("orders-0")


def test_the_log_dir_scan_skips_them(tmp_path: Path) -> None:
    for name in ("orders-0", staging_name("orders-0"), replaced_name("orders-1")):
        (tmp_path / name).mkdir()
    assert [p.path.name for p in LogDir(tmp_path).partitions()] == ["orders-0"]
