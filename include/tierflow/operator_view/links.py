"""Which task instances the page may link to: those whose run is in the Airflow serving it.

An actor names its task instance wherever the task ran, so an event of another Airflow (the
demo's private one, a second Airflow sharing the store) names a run this one never had, and
its link would end on the UI's "was not found". The page therefore asks once, for the distinct
runs it lists (at most its 1,000 events and 100 stuck segments), which of them exist here, and
links only those. Without a way to ask (``tierflow status``, a page outside Airflow) nothing
links.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from tierflow.operator_view.model import OperatorSnapshot

RunKey = tuple[str, str]  # (dag_id, run_id)
# Of the runs asked about, those that exist: one query, however many are asked.
RunLookup = Callable[[frozenset[RunKey]], Collection[RunKey]]


def named_runs(snapshot: OperatorSnapshot) -> frozenset[RunKey]:
    """Every run that a listed event or stuck segment names."""
    refs = [e.task_instance for e in snapshot.events] + [s.task_instance for s in snapshot.stuck]
    return frozenset((ti.dag_id, ti.run_id) for ti in refs if ti is not None)


def linked_runs(snapshot: OperatorSnapshot, lookup: RunLookup | None) -> frozenset[RunKey]:
    """The runs named on the page that ``lookup`` finds; none without a lookup."""
    wanted = named_runs(snapshot)
    if lookup is None or not wanted:
        return frozenset()
    return wanted & frozenset(lookup(wanted))
