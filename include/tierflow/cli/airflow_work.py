"""The work behind ``demo`` and ``airflow ...`` (their options are in ``airflow_commands``):
imported when one of them runs."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from tierflow.cli.common import CommandError
from tierflow.cli.shared import console
from tierflow.config import Settings, project_root
from tierflow.metadata.engine import describe_url
from tierflow.runtime import redact

if TYPE_CHECKING:
    from dev.airflow_server import LocalAirflow


def _checkout() -> Path:
    root = project_root()
    if root is None:
        raise CommandError(
            "this command needs the tierflow checkout (dags/, airflow_settings.yaml)"
        )
    return root


def demo(args: argparse.Namespace) -> int:
    with _from_checkout("demo"):
        from tierflow.cli.demo import run_demo

    base = Path(args.data_dir) if args.data_dir else Settings.from_env().data_dir / "demo"
    if base.exists():
        console.print(f"Replacing the previous demo in {base}")
        shutil.rmtree(base)
    return run_demo(_checkout(), base, console)


@contextmanager
def _from_checkout(make_target: str) -> Iterator[None]:
    """Imports of ``dev`` (the local Airflow, dag.test() runs), which is never installed.

    ``python -m tierflow.cli`` in the checkout's root finds it on sys.path; the ``tierflow``
    console script does not (its sys.path starts at the venv's bin/), nor does either run from
    another directory. The checkout this package is installed from is put on the path, last,
    so that every such run finds the same ``dev``."""
    root = project_root()
    if root is not None and str(root) not in sys.path:
        sys.path.append(str(root))
    try:
        yield
    except ModuleNotFoundError as exc:
        if exc.name != "dev" and not (exc.name or "").startswith("dev."):
            raise
        raise CommandError(
            f"this command runs from a checkout of tierflow (`make {make_target}` there)"
        ) from None


def airflow_apply_settings(args: argparse.Namespace) -> int:
    from tierflow.airflow_dags.airflow_settings import apply_settings

    path = Path(args.file) if args.file else _checkout() / "airflow_settings.yaml"
    counts = apply_settings(path)
    console.print(f"applied {path.name}: {counts}")
    return 0


def airflow_test_dag(args: argparse.Namespace) -> int:
    from tierflow.airflow_dags.airflow_settings import apply_settings

    with _from_checkout("test"):
        from dev.airflow_local import test_dag

    project = _checkout()
    apply_settings(project / "airflow_settings.yaml")
    logical_date = datetime.fromisoformat(args.logical_date) if args.logical_date else None
    state = test_dag(
        args.dag_id, project / "dags", run_conf=json.loads(args.conf), logical_date=logical_date
    )
    # A marker line that callers find in the noisy Airflow output.
    print(f"TIERFLOW_DAG_STATE={state}", flush=True)
    return 0 if state == "success" else 1


def airflow_serve(args: argparse.Namespace) -> int:
    import signal

    with _from_checkout("airflow"):
        from dev.airflow_server import AirflowServerError, LocalAirflow, choose_port

    project = _checkout()
    settings = Settings.from_env()
    home = Path(args.home) if args.home else settings.data_dir / "airflow-home"
    server = LocalAirflow(project, home, choose_port(args.port), report=console.print)
    # Ctrl-C and `kill` both stop the components cleanly, even when started in the background
    # (where a shell makes the process ignore SIGINT).
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.default_int_handler)
    try:
        server.start()
        server.wait_ready()
        _print_serving(server, settings)
        server.wait()
    except KeyboardInterrupt:
        console.print("Stopping Airflow...")
    except AirflowServerError as exc:
        raise CommandError(str(exc)) from exc
    finally:
        # A second Ctrl-C must not cut the shutdown short and leave components running.
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)
        server.stop()
    console.print("Airflow stopped.")
    return 0


def _print_serving(server: LocalAirflow, settings: Settings) -> None:
    for error in server.import_errors():
        console.print(f"import error in {error['filename']}:", style="red", markup=False)
        console.print(error["stack_trace"], markup=False, highlight=False)
    console.print(f"DAGs: {', '.join(server.dag_ids())}")
    console.print(
        f"tierflow: store {describe_url(settings.db_url)}, "
        f"bucket {redact(settings.remote_storage, settings)}, "
        f"log dirs {':'.join(str(p) for p in settings.log_dirs)}",
        markup=False,
    )
    console.print("ready", style="bold green")
    console.print(f"UI: {server.url}  login: admin / {server.password}", markup=False)
    console.print(f"Tiered storage page: {server.url}/plugin/tiered-storage", markup=False)
    console.print("Ctrl-C stops Airflow.")
