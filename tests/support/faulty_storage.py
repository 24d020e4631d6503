"""Storage faults on demand, for the reliability tests: an ObjectStore wrapper that fails,
stalls or stores a partial object where a plan says so.

Test code only: tierflow's storage factory knows nothing of it. A test in one process wraps the
store itself (``inject_storage_faults``, which wraps what ``open_object_store`` returns). A test
whose faults must reach another process (a DAG run, the CLI, the chaos harness' workers, Spark's
Python workers) starts it with ``storage_fault_env``: the plan in TIERFLOW_STORAGE_FAULTS, and on
PYTHONPATH the directory ``fault_site``, whose ``sitecustomize`` does the same wrapping when
Python starts. TIERFLOW_STORAGE_FAULTS holds rules separated by ``;``::

    <operation>:<fault>[:<calls>]

operation  put, read, stat, delete, list, or * for any
fault      error    a transient failure (as a 503 would be)
           timeout  a stall, then a transient failure (as a read timeout would be)
           slow     a stall, then the real request
           reset    an upload or read that breaks off half-way (a connection reset)
           partial  an upload that stores only the first half of the object, yet reports
                    success with the size and sha256 of the whole: only reading it back shows it
           fatal    a permanent failure (as access denied would be)
calls      which calls of that operation, counted per opened store from 1: ``3``, ``2-4``, or
           ``*`` (the default) for all of them

TIERFLOW_STORAGE_FAULT_DELAY_MS sets the stall (default 50). With TIERFLOW_STORAGE_FAULT_TRACE
naming a file, every fault injected is appended to it, one line each, so a harness can count.
Each faulty store has a retrying one in front of it, as an S3 bucket has its own retries.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tierflow.faults import append_trace
from tierflow.rsm import ObjectInfo, RemoteStorageError, TransientStorageError
from tierflow.storage import factory
from tierflow.storage.object_store import READ_CHUNK, ObjectStore
from tierflow.storage.retry import RetryingObjectStore, RetryPolicy

if TYPE_CHECKING:  # pytest itself is not imported in the processes sitecustomize starts
    import pytest

ENV_STORAGE_FAULTS = "TIERFLOW_STORAGE_FAULTS"
ENV_STORAGE_FAULT_DELAY_MS = "TIERFLOW_STORAGE_FAULT_DELAY_MS"
ENV_STORAGE_FAULT_TRACE = "TIERFLOW_STORAGE_FAULT_TRACE"
PROJECT_ROOT = Path(__file__).resolve().parents[2]
FAULT_SITE = Path(__file__).resolve().parent / "fault_site"  # its sitecustomize wraps the store

OPERATIONS = ("put", "read", "stat", "delete", "list")
FAULTS = ("error", "timeout", "slow", "reset", "partial", "fatal")
_ANY = 10**18


class InvalidFaultPlanError(ValueError):
    pass


@dataclass(frozen=True)
class FaultRule:
    operation: str  # one of OPERATIONS, or "*"
    fault: str
    first_call: int = 1
    last_call: int = _ANY

    def matches(self, operation: str, call: int) -> bool:
        return self.operation in ("*", operation) and self.first_call <= call <= self.last_call

    @classmethod
    def parse(cls, text: str) -> FaultRule:
        parts = text.strip().split(":")
        if len(parts) not in (2, 3):
            raise InvalidFaultPlanError(f"{text!r}: expected <operation>:<fault>[:<calls>]")
        operation, fault = parts[0], parts[1]
        if operation != "*" and operation not in OPERATIONS:
            raise InvalidFaultPlanError(f"{text!r}: operation is one of *, {', '.join(OPERATIONS)}")
        if fault not in FAULTS:
            raise InvalidFaultPlanError(f"{text!r}: fault is one of {', '.join(FAULTS)}")
        calls = parts[2] if len(parts) == 3 else "*"
        if calls == "*":
            return cls(operation, fault)
        first, _, last = calls.partition("-")
        if not first.isdigit() or not (last or first).isdigit() or int(first) < 1:
            raise InvalidFaultPlanError(f"{text!r}: calls are N, N-M or *")
        return cls(operation, fault, int(first), int(last or first))


@dataclass(frozen=True)
class FaultPlan:
    rules: tuple[FaultRule, ...]
    delay_s: float = 0.05
    trace: Path | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> FaultPlan | None:
        env = os.environ if env is None else env
        spec = env.get(ENV_STORAGE_FAULTS, "").strip()
        if not spec:
            return None
        rules = tuple(FaultRule.parse(rule) for rule in spec.split(";") if rule.strip())
        delay_ms = env.get(ENV_STORAGE_FAULT_DELAY_MS) or "50"
        if not delay_ms.isdigit():
            raise InvalidFaultPlanError(f"{ENV_STORAGE_FAULT_DELAY_MS}={delay_ms!r}: not ms")
        trace = env.get(ENV_STORAGE_FAULT_TRACE)
        return cls(rules, int(delay_ms) / 1000, Path(trace) if trace else None)


class FaultyObjectStore:
    def __init__(self, inner: ObjectStore, plan: FaultPlan) -> None:
        self.inner = inner
        self.plan = plan
        self.calls: Counter[str] = Counter()
        self.injected: Counter[str] = Counter()

    def describe(self) -> str:
        return self.inner.describe()

    def _fault(self, operation: str, key: str) -> str | None:
        """The fault for this call, after any stall it begins with; raises the plain ones."""
        self.calls[operation] += 1
        call = self.calls[operation]
        rule = next((r for r in self.plan.rules if r.matches(operation, call)), None)
        if rule is None:
            return None
        self.injected[rule.fault] += 1
        if self.plan.trace is not None:
            line = f"{os.getpid()}\t{operation}#{call}\t{rule.fault}\t{key}\n"
            append_trace(str(self.plan.trace), line)
        if rule.fault in ("slow", "timeout"):
            time.sleep(self.plan.delay_s)
        if rule.fault == "timeout":
            raise TransientStorageError(key, f"{operation} timed out (injected)")
        if rule.fault == "error":
            raise TransientStorageError(key, f"{operation} failed: 503 SlowDown (injected)")
        if rule.fault == "fatal":
            raise RemoteStorageError(key, f"{operation} failed: 403 AccessDenied (injected)")
        return rule.fault

    # -- writes -------------------------------------------------------------------------------

    def put_file(self, key: str, source: Path) -> ObjectInfo:
        fault = self._fault("put", key)
        if fault in ("reset", "partial"):
            return self._broken_put(key, Path(source).read_bytes(), fault)
        return self.inner.put_file(key, source)

    def put_bytes(self, key: str, data: bytes) -> ObjectInfo:
        fault = self._fault("put", key)
        if fault in ("reset", "partial"):
            return self._broken_put(key, data, fault)
        return self.inner.put_bytes(key, data)

    def put_chunks(self, key: str, chunks: Iterable[bytes]) -> ObjectInfo:
        fault = self._fault("put", key)
        if fault in ("reset", "partial"):
            return self._broken_put(key, b"".join(chunks), fault)
        return self.inner.put_chunks(key, chunks)

    def _broken_put(self, key: str, data: bytes, fault: str) -> ObjectInfo:
        """A reset fails after the upload consumed its source; a partial upload stores half the
        object and claims the whole was stored."""
        if fault == "reset":
            raise TransientStorageError(key, "upload failed: connection reset (injected)")
        self.inner.put_bytes(key, data[: len(data) // 2])
        return ObjectInfo(key, len(data), hashlib.sha256(data).hexdigest())

    # -- reads --------------------------------------------------------------------------------

    def read_range(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        fault = self._fault("read", key)
        if fault in ("reset", "partial"):
            raise TransientStorageError(key, "read failed: connection reset (injected)")
        return self.inner.read_range(key, start, end)

    def iter_chunks(self, key: str, chunk_size: int = READ_CHUNK) -> Iterator[bytes]:
        fault = self._fault("read", key)
        if fault not in ("reset", "partial"):
            yield from self.inner.iter_chunks(key, chunk_size)
            return
        size = (self.inner.stat(key) or ObjectInfo(key, 0)).size
        sent = 0
        for chunk in self.inner.iter_chunks(key, chunk_size):
            chunk = chunk[: max(0, size // 2 - sent)]
            if chunk:
                sent += len(chunk)
                yield chunk
            if sent >= size // 2:
                break
        raise TransientStorageError(key, f"read failed at byte {sent}: reset (injected)")

    def stat(self, key: str) -> ObjectInfo | None:
        self._fault("stat", key)
        return self.inner.stat(key)

    def delete(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        self._fault("delete", keys[0] if keys else "(no keys)")
        self.inner.delete(keys)

    def list(self, prefix: str = "") -> Iterator[str]:
        self._fault("list", prefix or "(bucket root)")
        return self.inner.list(prefix)


# -- putting the faults in front of tierflow's stores ---------------------------------------

OpenObjectStore = Callable[..., ObjectStore]


def faulty_opener(open_store: OpenObjectStore, plan: FaultPlan) -> OpenObjectStore:
    """``open_store`` whose every store fails by ``plan``, a retrying store in front of it."""

    def open_faulty(url: str, *, retry: RetryPolicy | None = None, **options: Any) -> ObjectStore:
        store = open_store(url, retry=retry, **options)
        return RetryingObjectStore(FaultyObjectStore(store, plan), retry or RetryPolicy())

    return open_faulty


def inject_storage_faults(monkeypatch: pytest.MonkeyPatch, plan: FaultPlan) -> None:
    """Every store tierflow opens in this process, until the test ends, fails by ``plan``."""
    faulty = faulty_opener(factory.open_object_store, plan)
    monkeypatch.setattr(factory, "open_object_store", faulty)


def install_from_env() -> None:
    """What ``fault_site/sitecustomize.py`` runs at start-up: the plan of the environment, for
    the whole life of this process (before any other module imported the factory)."""
    plan = FaultPlan.from_env()
    if plan is not None:
        factory.open_object_store = faulty_opener(factory.open_object_store, plan)


def storage_fault_env(
    rules: str, *, trace: Path | None = None, delay_ms: int | None = None
) -> dict[str, str]:
    """Environment that makes a child Python process (and the Python processes it starts) meet
    the faults of ``rules``: the plan, and ``fault_site`` plus the checkout on PYTHONPATH."""
    path = [str(FAULT_SITE), str(PROJECT_ROOT), os.environ.get("PYTHONPATH", "")]
    env = {ENV_STORAGE_FAULTS: rules, "PYTHONPATH": os.pathsep.join(filter(None, path))}
    if trace is not None:
        env[ENV_STORAGE_FAULT_TRACE] = str(trace)
    if delay_ms is not None:
        env[ENV_STORAGE_FAULT_DELAY_MS] = str(delay_ms)
    return env
