"""The cyclic collector is paused while snapshots are built, and left as it was after."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from tierflow.operator_view.collector import collector_paused


@pytest.fixture
def collector_state() -> Iterator[None]:
    was = gc.isenabled()
    yield
    (gc.enable if was else gc.disable)()


@pytest.mark.parametrize("enabled", [True, False])
def test_overlapping_pauses_restore_the_state_after_the_last(
    collector_state: None, enabled: bool
) -> None:
    (gc.enable if enabled else gc.disable)()
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer snapshot still runs
    assert gc.isenabled() == enabled


def test_a_failing_snapshot_resumes_collection(collector_state: None) -> None:
    gc.enable()
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("the store went away")
    assert gc.isenabled()
