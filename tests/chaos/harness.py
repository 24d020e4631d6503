"""Kill each lifecycle operation at every step boundary, rerun it, and check the invariants.

For each scenario (scenarios.py) and storage layout:

1. The starting state is built once into a template directory (log dir, SQLite store, bucket),
   and its log dir is read as the pristine reference. Every run works on a fresh copy. With a
   cloud bucket (``bucket_url``), the template's objects sit under a prefix of their own and
   each run copies them to another.
2. The operation runs once uninterrupted with TIERFLOW_CRASH_TRACE set: every crash point it
   reaches, ``name#n`` for the n-th hit in a process, is a kill point (tierflow.faults).
3. For each kill point: a fresh copy, the operation with TIERFLOW_CRASH_AT=name#n (the trace
   must show the kill, and the process must have died by SIGKILL unless the kill was in a
   child, a Spark Python worker), the same command again as a task clear does, a reconcile
   with zero grace periods, then the five invariants (invariants.py).
4. For each storage fault plan (storage_faults.py): a fresh copy, the operation against a
   failing bucket, the rerun, reconcile and the invariants the same way.

The uninterrupted run is checked the same way, as the reference.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tests.chaos.invariants import (
    INVARIANTS,
    PartitionKey,
    PristinePartition,
    Violation,
    check_invariants,
    read_pristine,
)
from tests.chaos.scenarios import Scenario
from tests.chaos.storage_faults import (
    FAST_RETRIES,
    RETRIED,
    FaultPlan,
    count_injected,
    fault_plan,
)
from tests.support.faulty_storage import storage_fault_env
from tests.support.tiered import LAYOUTS, build_tiered
from tierflow.config import Settings
from tierflow.faults import ENV_CRASH_AT, ENV_CRASH_TRACE
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.lifecycle.reconcile import (
    ReconcileGrace,
    ReconcileScope,
    apply_reconcile,
    plan_reconcile,
)
from tierflow.runtime import open_objects, open_storage, open_store

PROJECT_ROOT = Path(__file__).resolve().parents[2]
UNINTERRUPTED = "(none)"
RUN_TIMEOUT_S = 600
TIMED_OUT = 124  # the exit status timeout(1) uses


@dataclass(frozen=True)
class TraceLine:
    pid: int
    point: str  # name#n
    killed: bool


@dataclass
class Outcome:
    """One run of a scenario: killed at ``point`` (or not), rerun, reconciled, checked."""

    scenario: str
    layout: str
    point: str
    killed: bool = False
    rerun_ok: bool = False
    violations: list[Violation] = field(default_factory=list)
    records_verified: int = 0
    reconcile_fixed: int = 0
    seconds: float = 0.0
    faults_injected: int = 0  # storage faults the operation met (fault plans only)

    @property
    def ok(self) -> bool:
        return not self.violations

    def held(self, invariant: str) -> bool:
        return not any(v.invariant == invariant for v in self.violations)


# Violations of the harness's own expectations, reported beside the five invariants.
KILL = "kill"
RERUN = "rerun"


class Template:
    """A scenario's starting state, built once; each run gets a copy of it."""

    def __init__(
        self, scenario: Scenario, layout: str, work: Path, bucket_url: str | None = None
    ) -> None:
        self.scenario, self.layout, self.work = scenario, layout, work
        self.base = work / f"{scenario.name}-{layout}" / "template"
        self.bucket_url = bucket_url and f"{bucket_url}/{scenario.name}-{layout}"
        cloud = {"remote_storage": f"{self.bucket_url}/template"} if self.bucket_url else {}
        t = build_tiered(self.base, layout=layout, **scenario.settings, **cloud)
        scenario.prepare(t)
        t.store.close()
        self.settings = t.settings
        self.pristine: dict[PartitionKey, PristinePartition] = read_pristine(t.settings.log_dirs)

    def fresh(self, name: str) -> Settings:
        target = self.base.parent / name
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(self.base, target, symlinks=True)  # copy2: mtimes (object ages) kept
        settings = rebase(self.settings, self.base, target)
        if self.bucket_url is None:
            return settings
        return settings.updated(remote_storage=self._copy_bucket(name))

    def _copy_bucket(self, name: str) -> str:
        """The template's objects under a prefix of the run's own: its bucket URL."""
        source = open_objects(self.settings)
        url = f"{self.bucket_url}/{name}"
        target = open_objects(self.settings.updated(remote_storage=url))
        target.delete(list(target.list()))  # a name used before (none is, in one run)
        for key in source.list():
            target.put_bytes(key, source.read_range(key))
        return url


def rebase(settings: Settings, old: Path, new: Path) -> Settings:
    """The same settings with every path under ``old`` moved under ``new``."""
    env = settings.as_env()
    return Settings.from_env({name: text.replace(str(old), str(new)) for name, text in env.items()})


def operation_env(
    settings: Settings,
    *,
    crash_at: str | None,
    trace: Path | None,
    extra_env: dict[str, str] | None = None,
) -> dict:
    """The subprocess's environment: the settings, and nothing else of ours but ``extra_env``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TIERFLOW_")}
    env.update(settings.as_env())
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), env.get("PYTHONPATH")]))
    if crash_at:
        env[ENV_CRASH_AT] = crash_at
    if trace:
        env[ENV_CRASH_TRACE] = str(trace)
    env.update(extra_env or {})
    return env


@dataclass(frozen=True)
class Finished:
    pid: int
    returncode: int
    output: str


def run_operation(
    scenario: Scenario,
    settings: Settings,
    *,
    crash_at: str | None = None,
    trace: Path | None = None,
    extra_env: dict[str, str] | None = None,
) -> Finished:
    with subprocess.Popen(
        [sys.executable, *scenario.command],
        env=operation_env(settings, crash_at=crash_at, trace=trace, extra_env=extra_env),
        cwd=PROJECT_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as process:
        try:
            output, _ = process.communicate(timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:  # hung: a failure, never mistaken for our SIGKILL
            process.kill()
            output = f"{process.communicate()[0]}\ntimed out after {RUN_TIMEOUT_S} s"
            return Finished(process.pid, TIMED_OUT, output)
        return Finished(process.pid, process.returncode, output)


def read_trace(path: Path) -> list[TraceLine]:
    if not path.is_file():
        return []
    lines = []
    for raw in path.read_text().splitlines():
        pid, point, what = raw.split("\t")
        lines.append(TraceLine(int(pid), point, what == "kill"))
    return lines


def kill_points(trace: Iterable[TraceLine]) -> list[str]:
    """Every ``name#n`` reached, in the order first reached."""
    return list(dict.fromkeys(line.point for line in trace))


def reconcile_zero_grace(settings: Settings) -> int:
    """Plan and apply with no grace at all: what is left over must be an orphan. Returns the
    number of fixes."""
    store = open_store(settings)
    try:
        objects = open_objects(settings)
        now = wall_clock_ms() + 1000  # objects written this very second are old enough too
        plan = plan_reconcile(
            store, objects, ReconcileScope(settings.storage.prefix), ReconcileGrace(now, 0, 0)
        )
        report = apply_reconcile(
            plan, store, open_storage(settings), objects, actor="chaos:reconcile", now_ms=now
        )
        return len(report.fixed)
    finally:
        store.close()


def tail(text: str, lines: int = 6) -> str:
    return " | ".join(text.strip().splitlines()[-lines:])


def finish(outcome: Outcome, template: Template, settings: Settings, started: float) -> Outcome:
    """Reconcile with zero grace, then check the invariants."""
    outcome.reconcile_fixed = reconcile_zero_grace(settings)
    checked = check_invariants(settings, template.pristine)
    outcome.violations += checked.violations
    outcome.records_verified = checked.records_verified
    outcome.seconds = time.monotonic() - started
    return outcome


def enumerate_kill_points(template: Template) -> tuple[list[str], Outcome]:
    """The uninterrupted run, traced: its kill points, and its own outcome as the reference."""
    started = time.monotonic()
    settings = template.fresh("uninterrupted")
    trace = settings.data_dir / "crash-trace"
    outcome = Outcome(template.scenario.name, template.layout, UNINTERRUPTED, rerun_ok=True)
    ran = run_operation(template.scenario, settings, trace=trace)
    if ran.returncode != 0:
        outcome.rerun_ok = False
        outcome.violations.append(Violation(RERUN, f"exit {ran.returncode}: {tail(ran.output)}"))
    return kill_points(read_trace(trace)), finish(outcome, template, settings, started)


def try_kill_point(template: Template, point: str, index: int) -> Outcome:
    """Kill at ``point``, rerun as a clear does, reconcile, check."""
    started = time.monotonic()
    settings = template.fresh(f"kill-{index:03d}")
    trace = settings.data_dir / "crash-trace"
    outcome = Outcome(template.scenario.name, template.layout, point)
    crashed = run_operation(template.scenario, settings, crash_at=point, trace=trace)
    kills = [line for line in read_trace(trace) if line.killed and line.point == point]
    outcome.killed = bool(kills)
    if not kills:
        outcome.violations.append(Violation(KILL, f"{point} not reached: {tail(crashed.output)}"))
    elif any(k.pid == crashed.pid for k in kills) and crashed.returncode != -signal.SIGKILL:
        outcome.violations.append(
            Violation(KILL, f"killed at {point}, yet exit {crashed.returncode}")
        )
    elif crashed.returncode == 0:
        outcome.violations.append(Violation(KILL, f"a child died at {point}; the run succeeded"))
    rerun = run_operation(template.scenario, settings)
    outcome.rerun_ok = rerun.returncode == 0
    if not outcome.rerun_ok:
        detail = f"exit {rerun.returncode}: {tail(rerun.output)}"
        outcome.violations.append(Violation(RERUN, detail))
    finished = finish(outcome, template, settings, started)
    shutil.rmtree(settings.data_dir, ignore_errors=True)
    return finished


def is_fault_plan(outcome: Outcome) -> bool:
    return outcome.point.startswith("storage: ")


def try_fault_plan(template: Template, plan: FaultPlan) -> Outcome:
    """Run with the plan's faults, rerun without, reconcile, check."""
    started = time.monotonic()
    settings = template.fresh(f"faults-{plan.name}")
    trace = settings.data_dir / "storage-fault-trace"
    outcome = Outcome(template.scenario.name, template.layout, f"storage: {plan.name}")
    env = {**FAST_RETRIES, **storage_fault_env(plan.rules, trace=trace)}
    faulty = run_operation(template.scenario, settings, extra_env=env)
    outcome.faults_injected = count_injected(trace)
    if plan.absorbed and faulty.returncode != 0:
        detail = f"exit {faulty.returncode} despite retries: {tail(faulty.output)}"
        outcome.violations.append(Violation(RETRIED, detail))
    rerun = run_operation(template.scenario, settings)
    outcome.rerun_ok = rerun.returncode == 0
    if not outcome.rerun_ok:
        detail = f"exit {rerun.returncode}: {tail(rerun.output)}"
        outcome.violations.append(Violation(RERUN, detail))
    finished = finish(outcome, template, settings, started)
    shutil.rmtree(settings.data_dir, ignore_errors=True)
    return finished


def sample(points: Sequence[str], count: int | None) -> list[str]:
    """All points, or ``count`` spread evenly from the first to the last."""
    if count is None or count >= len(points):
        return list(points)
    if count <= 1:
        return list(points[:count])
    last = len(points) - 1
    return [points[i * last // (count - 1)] for i in range(count)]


def run_scenario(
    scenario: Scenario,
    layout: str,
    work: Path,
    *,
    sample_size: int | None = None,
    fault_plans: Sequence[str] = (),
    on_outcome: Callable[[Outcome], None] | None = None,
    bucket_url: str | None = None,
) -> list[Outcome]:
    """The reference run, then every (or a sample of the) kill point(s), then the named
    storage fault plans; on the local bucket, or under ``bucket_url`` (a cloud bucket)."""

    if layout not in LAYOUTS:
        raise KeyError(f"unknown layout {layout!r}")
    template = Template(scenario, layout, work, bucket_url)
    points, reference = enumerate_kill_points(template)
    outcomes = [reference]
    if on_outcome:
        on_outcome(reference)
    for index, point in enumerate(sample(points, sample_size)):
        outcome = try_kill_point(template, point, index)
        outcomes.append(outcome)
        if on_outcome:
            on_outcome(outcome)
    for name in fault_plans if scenario.uses_storage else ():
        outcome = try_fault_plan(template, fault_plan(name))
        outcomes.append(outcome)
        if on_outcome:
            on_outcome(outcome)
    shutil.rmtree(template.base.parent, ignore_errors=True)
    return outcomes


@dataclass(frozen=True)
class Totals:
    scenarios: int
    kill_points: int
    kills: int  # kill points where the SIGKILL really happened
    fault_plans: int
    storage_faults: int
    invariant_checks: int
    violations: int
    records_verified: int


def totals(outcomes: Sequence[Outcome]) -> Totals:
    killed = [o for o in outcomes if o.point != UNINTERRUPTED and not is_fault_plan(o)]
    return Totals(
        scenarios=len({(o.scenario, o.layout) for o in outcomes}),
        kill_points=len(killed),
        kills=sum(o.killed for o in killed),
        fault_plans=sum(is_fault_plan(o) for o in outcomes),
        storage_faults=sum(o.faults_injected for o in outcomes),
        invariant_checks=len(outcomes) * len(INVARIANTS),
        violations=sum(len(o.violations) for o in outcomes),
        records_verified=sum(o.records_verified for o in outcomes),
    )
