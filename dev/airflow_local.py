"""Run tierflow's DAGs through Airflow itself on this machine, with no server.

The demo and the DAG tests use this: a private AIRFLOW_HOME with a SQLite metadata
database, the project's ``dags/`` folder, the pools and connections of
``airflow_settings.yaml`` (``tierflow.airflow_dags.airflow_settings``), and ``dag.test()`` to
execute one real DAG run in-process. Airflow's own database stays separate from tierflow's
store, as Airflow 3 requires. Development machinery: it runs from a checkout, never installed.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import IO, Any


def airflow_env(project: Path, airflow_home: Path) -> dict[str, str]:
    """Environment for a private Airflow: our dags/, no examples, SQLite under airflow_home."""
    return {
        "AIRFLOW_HOME": str(airflow_home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(project / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(project / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
        # spark-submit comes with pyspark, beside this interpreter.
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }


def prepare_airflow_db(env: Mapping[str, str], settings_file: Path, log: IO[str]) -> None:
    """Migrate a private Airflow DB and apply airflow_settings.yaml, each in a subprocess.

    Run before any long-lived component starts: the first Airflow process writes airflow.cfg
    with freshly generated secrets (JWT, Fernet), and every component must read the same ones.
    """
    apply = ["airflow", "apply-settings", "--file", str(settings_file)]
    steps = (
        [sys.executable, "-m", "airflow", "db", "migrate"],
        [sys.executable, "-m", "tierflow.cli", *apply],
    )
    for command in steps:
        log.write(f"$ {' '.join(command)}\n")
        log.flush()
        subprocess.run(command, env=dict(env), stdout=log, stderr=subprocess.STDOUT, check=True)


@functools.cache
def _migrated_database(project: Path) -> Path:
    """An empty Airflow database migrated once per process, in a home of its own.

    Each DAG test gets a fresh AIRFLOW_HOME; copying this file into it costs nothing, where
    `airflow db migrate` costs seconds a run. Nothing of the tests' is in it: no connection,
    no secret (those live in airflow.cfg, which each home writes for itself).
    """
    home = Path(tempfile.mkdtemp(prefix="tierflow-airflow-db-"))
    atexit.register(shutil.rmtree, home, ignore_errors=True)
    env = {**os.environ, **airflow_env(project, home)}
    migrate = [sys.executable, "-m", "airflow", "db", "migrate"]
    done = subprocess.run(migrate, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"airflow db migrate failed: {done.stderr.strip()[-2000:]}")
    return home / "airflow.db"


def migrated_home(project: Path, airflow_home: Path) -> None:
    """Give ``airflow_home`` a migrated database, unless it has one from an earlier run."""
    airflow_home.mkdir(parents=True, exist_ok=True)
    database = airflow_home / "airflow.db"
    if not database.exists():
        shutil.copyfile(_migrated_database(project), database)


def test_dag(
    dag_id: str,
    dags_folder: Path,
    *,
    run_conf: Mapping[str, Any] | None = None,
    logical_date: datetime | None = None,
) -> str:
    """Run one DAG run with dag.test() and return its final state ("success", "failed")."""
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(dags_folder))
    if bag.import_errors:
        raise RuntimeError(f"DAG import errors: {bag.import_errors}")
    dag = bag.dags.get(dag_id)
    if dag is None:
        raise KeyError(f"no DAG {dag_id!r} in {dags_folder}")
    kwargs: dict[str, Any] = {"run_conf": dict(run_conf or {})}
    if logical_date is not None:
        kwargs["logical_date"] = logical_date
    run = dag.test(**kwargs)
    return str(run.state)


def run_dag_in_subprocess(
    dag_id: str,
    *,
    project: Path,
    airflow_home: Path,
    extra_env: Mapping[str, str],
    log_file: Path,
    run_conf: Mapping[str, Any] | None = None,
    logical_date: datetime | None = None,
    timeout_s: float = 600,
) -> str:
    """Run the DAG in a private AIRFLOW_HOME (migrated once); Airflow's output goes to log_file.

    A subprocess keeps Airflow's global configuration (read once, at import) out of the caller.
    dag.test() waits out retry delays of failing tasks, so a run that takes longer than
    timeout_s is stopped and reported rather than left hanging.
    """
    migrated_home(project, airflow_home)
    env = {**os.environ, **airflow_env(project, airflow_home), **extra_env}
    # `airflow test-dag` runs this module's test_dag(): the checkout must be importable.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(project), env.get("PYTHONPATH")]))
    command = [
        sys.executable,
        "-m",
        "tierflow.cli",
        "airflow",
        "test-dag",
        dag_id,
        "--conf",
        json.dumps(dict(run_conf or {})),
    ]
    if logical_date is not None:
        command += ["--logical-date", logical_date.isoformat()]
    with open(log_file, "w") as out:
        try:
            done = subprocess.run(
                command, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=timeout_s
            )
        except subprocess.TimeoutExpired:
            done = None
    lines = log_file.read_text(errors="replace").splitlines()
    if done is None:
        errors = [ln for ln in lines if "error" in ln.lower()][-10:]
        raise RuntimeError(
            f"DAG {dag_id} did not complete within {timeout_s:.0f} s (a task failing and "
            f"waiting to retry?); see {log_file}:\n" + "\n".join(errors)
        )
    states = [ln.split("=", 1)[1] for ln in lines if ln.startswith("TIERFLOW_DAG_STATE=")]
    if not states:  # killed, or refused before the run started (e.g. an invalid Param)
        tail = "\n".join(lines[-30:])
        raise RuntimeError(f"DAG {dag_id} did not complete; see {log_file}:\n{tail}")
    return states[-1]
