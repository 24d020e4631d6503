"""The fault-injecting store, and the retrying store in front of it, on a local bucket."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.support.faulty_storage import (
    FaultPlan,
    FaultRule,
    FaultyObjectStore,
    InvalidFaultPlanError,
    inject_storage_faults,
)
from tierflow.rsm import RemoteStorageError, VerificationError
from tierflow.storage import factory
from tierflow.storage.factory import open_object_store
from tierflow.storage.local import LocalDirectoryObjectStore
from tierflow.storage.retry import RetryingObjectStore, RetryPolicy
from tierflow.storage.verification import verify_objects

DATA = bytes(range(256)) * 40  # 10,240 bytes
NO_WAIT = RetryPolicy(attempts=3, base_delay_s=0, max_delay_s=0)


def faulty(tmp_path: Path, rules: str) -> tuple[RetryingObjectStore, FaultyObjectStore]:
    plan = FaultPlan.from_env(
        {"TIERFLOW_STORAGE_FAULTS": rules, "TIERFLOW_STORAGE_FAULT_DELAY_MS": "1"}
    )
    assert plan is not None
    injecting = FaultyObjectStore(LocalDirectoryObjectStore(tmp_path / "bucket"), plan)
    return RetryingObjectStore(injecting, NO_WAIT), injecting


def test_rules_parse_and_match() -> None:
    rule = FaultRule.parse("put:partial:2-3")
    assert rule == FaultRule("put", "partial", 2, 3)
    assert [rule.matches("put", n) for n in (1, 2, 3, 4)] == [False, True, True, False]
    assert not rule.matches("read", 2)
    assert FaultRule.parse("*:error").matches("delete", 10**9)


@pytest.mark.parametrize("text", ["put", "put:melt", "upload:error", "put:error:0", "put:error:x"])
def test_a_bad_rule_is_named(text: str) -> None:
    with pytest.raises(InvalidFaultPlanError, match=text.split(":")[0]):
        FaultRule.parse(text)


def test_the_factory_reads_no_fault_plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Faults are test code: the library's factory ignores the variable, a test wraps."""
    monkeypatch.setenv("TIERFLOW_STORAGE_FAULTS", "put:error:1")
    assert isinstance(open_object_store(str(tmp_path)), LocalDirectoryObjectStore)
    plan = FaultPlan.from_env({"TIERFLOW_STORAGE_FAULTS": "put:error:1"})
    assert plan is not None
    inject_storage_faults(monkeypatch, plan)
    wrapped = factory.open_object_store(str(tmp_path))
    assert isinstance(wrapped, RetryingObjectStore)
    assert isinstance(wrapped.inner, FaultyObjectStore)


def test_transient_faults_are_retried_to_the_exact_object(tmp_path: Path) -> None:
    store, injecting = faulty(
        tmp_path,
        "put:error:1;put:timeout:2;stat:error:1;read:reset:1;list:error:1;delete:timeout:1",
    )
    info = store.put_bytes("a/b", DATA)
    assert info.size == len(DATA) and store.stat("a/b") is not None
    assert b"".join(store.iter_chunks("a/b", 1000)) == DATA  # resumed after half the bytes
    assert list(store.list("a/")) == ["a/b"]
    store.delete(["a/b"])
    assert injecting.injected == {"error": 3, "timeout": 2, "reset": 1}
    assert injecting.inner.stat("a/b") is None


def test_a_slow_store_is_no_failure(tmp_path: Path) -> None:
    store, injecting = faulty(tmp_path, "*:slow")
    store.put_bytes("k", DATA)
    assert store.read_range("k", 5, 9) == DATA[5:9]
    assert injecting.injected["slow"] == 2


def test_a_partial_object_reports_success_and_verification_catches_it(tmp_path: Path) -> None:
    store, injecting = faulty(tmp_path, "put:partial:1")
    info = store.put_chunks("seg/0.log", iter([DATA[:5000], DATA[5000:]]))
    assert info.size == len(DATA) and info.sha256 == hashlib.sha256(DATA).hexdigest()
    assert injecting.inner.stat("seg/0.log").size == len(DATA) // 2
    with pytest.raises(VerificationError, match=r"seg/0.log: size 5120 bytes, uploaded 10240"):
        verify_objects(store, [info])


def test_a_consumed_stream_is_not_sent_again(tmp_path: Path) -> None:
    """Chunks read once cannot be read twice: the upload fails, named, and stores nothing."""
    store, injecting = faulty(tmp_path, "put:reset:1")
    with pytest.raises(RemoteStorageError, match=r"seg/1\.log: upload failed: connection reset"):
        store.put_chunks("seg/1.log", iter([DATA]))
    assert injecting.calls["put"] == 1 and injecting.inner.stat("seg/1.log") is None


def test_an_unconsumed_stream_is_sent_again(tmp_path: Path) -> None:
    store, injecting = faulty(tmp_path, "put:error:1-2")
    store.put_chunks("seg/2.log", iter([DATA]))
    assert injecting.calls["put"] == 3 and store.read_range("seg/2.log") == DATA


def test_a_permanent_fault_is_not_retried(tmp_path: Path) -> None:
    store, injecting = faulty(tmp_path, "stat:fatal")
    with pytest.raises(RemoteStorageError, match="k: stat failed: 403 AccessDenied"):
        store.stat("k")
    assert injecting.calls["stat"] == 1


def test_an_outage_longer_than_the_budget_fails_named(tmp_path: Path) -> None:
    store, injecting = faulty(tmp_path, "read:error")
    store.put_bytes("k", DATA)
    with pytest.raises(RemoteStorageError, match="k: read failed after 3 attempts"):
        store.read_range("k")
    assert injecting.calls["read"] == 3


def test_every_injected_fault_is_traced(tmp_path: Path) -> None:
    trace = tmp_path / "trace"
    plan = FaultPlan.from_env(
        {"TIERFLOW_STORAGE_FAULTS": "put:error:1", "TIERFLOW_STORAGE_FAULT_TRACE": str(trace)}
    )
    store = RetryingObjectStore(
        FaultyObjectStore(LocalDirectoryObjectStore(tmp_path / "b"), plan), NO_WAIT
    )
    store.put_bytes("x/y", b"z")
    [line] = trace.read_text().splitlines()
    assert line.split("\t")[1:] == ["put#1", "error", "x/y"]
