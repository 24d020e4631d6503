"""Storage fault plans for the harness: each operation run against a failing bucket, then rerun
(``harness.try_fault_plan``).

A fault plan (tests.support.faulty_storage) is set in the operation's environment, with the
directory whose sitecustomize wraps the store on its PYTHONPATH, so the real process meets the
faults in its own storage calls, Spark executors included. Plans of
faults that retries must absorb (one transient error of each request kind, a slow bucket)
expect the run to succeed as if nothing happened. The others (a stream reset after its source
was read, a partial object, a permanent error, an outage longer than the retry budget) may
fail the run; the rerun, as a task clear does, must then finish the job. Either way reconcile
and the five invariants follow, exactly as after a kill.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.support.faulty_storage import ENV_STORAGE_FAULT_DELAY_MS

RETRIED = "retried"  # a violation: faults the retries should have absorbed failed the run


@dataclass(frozen=True)
class FaultPlan:
    name: str
    rules: str  # TIERFLOW_STORAGE_FAULTS
    absorbed: bool  # retries hide it: the first run must succeed


FAULT_PLANS: tuple[FaultPlan, ...] = (
    FaultPlan(
        "transient",
        "put:error:1;put:timeout:3;stat:error:1;read:timeout:1;read:reset:2;"
        "delete:error:1;list:error:1",
        absorbed=True,
    ),
    FaultPlan("slow", "*:slow:1-40", absorbed=True),
    FaultPlan("partial", "put:partial:1;put:partial:4", absorbed=False),
    FaultPlan("reset", "put:reset:2", absorbed=False),
    FaultPlan("fatal", "*:fatal:5", absorbed=False),
    FaultPlan("outage", "*:error:3-1000000", absorbed=False),
)

# Fast retries and short stalls: the harness tests the logic, not the waiting.
FAST_RETRIES = {
    "TIERFLOW_STORAGE_RETRY_BASE_MS": "5",
    "TIERFLOW_STORAGE_RETRY_MAX_MS": "20",
    ENV_STORAGE_FAULT_DELAY_MS: "5",
}


def fault_plan(name: str) -> FaultPlan:
    for plan in FAULT_PLANS:
        if plan.name == name:
            return plan
    raise KeyError(f"no fault plan {name!r}; known: {', '.join(p.name for p in FAULT_PLANS)}")


def count_injected(trace: Path) -> int:
    return len(trace.read_text().splitlines()) if trace.is_file() else 0
