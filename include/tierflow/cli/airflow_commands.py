"""The commands that need the tierflow checkout (dags/, airflow_settings.yaml): ``demo``, which
copies through Airflow, and ``airflow ...``, which drives a local Airflow. What they run is in
``airflow_work``, imported when one of them runs.
"""

from __future__ import annotations

from tierflow.cli.spec import Command, Group, Work, arg

SERVE_DESCRIPTION = """\
Start a local Airflow 3 on this machine and keep it in the foreground until Ctrl-C.

It runs Airflow's api-server (UI and REST API, on 127.0.0.1 only), scheduler (LocalExecutor)
and dag-processor with the checkout's dags/ and plugins/, a SQLite database in AIRFLOW_HOME,
and the pools and connections of airflow_settings.yaml, which plain Airflow does not read.
The TIERFLOW_* variables of this shell reach every task, so the DAGs work on the same store,
bucket and log dirs as the other tierflow commands.

Log in as "admin" with the password printed at start-up. Airflow's SimpleAuthManager keeps it
in AIRFLOW_HOME/simple_auth_manager_passwords.json.generated; it stays the same for the same
home. DAGs start paused: unpause them in the UI. Each component logs to AIRFLOW_HOME/logs/.
Ctrl-C stops every component and the tasks they run.
"""

WORK = Work("tierflow.cli.airflow_work")


# -- the commands --------------------------------------------------------------------------

DEMO = Command(
    "demo",
    WORK.demo,
    help="generate a broker log dir, copy it through Airflow, verify every byte",
    description="Generate a realistic broker log directory under <data>/demo (replacing "
    "any previous demo there), register its topics with tiering on, run the segment_copy "
    "DAG through Airflow's dag.test(), read every tiered segment back and compare it "
    "byte for byte with the local file.",
    args=(arg("--data-dir", help="where to put the demo [<data>/demo]"),),
)

AIRFLOW = Group(
    "airflow",
    help="drive a local Airflow (used by demo and tests)",
    dest="airflow_command",
    commands=(
        Command(
            "apply-settings",
            WORK.airflow_apply_settings,
            help="apply airflow_settings.yaml",
            args=(arg("--file", default=None, help="[<checkout>/airflow_settings.yaml]"),),
        ),
        Command(
            "test-dag",
            WORK.airflow_test_dag,
            help="run one DAG run with dag.test()",
            args=(
                arg("dag_id", help="the DAG to run, e.g. segment_copy"),
                arg("--conf", default="{}", help="run conf as JSON"),
                arg(
                    "--logical-date",
                    help="ISO date-time of the run (e.g. 2026-11-18T02:00:00+00:00), as a "
                    "backfill sets it",
                ),
            ),
        ),
        Command(
            "serve",
            WORK.airflow_serve,
            help="run a local Airflow 3 with tierflow's DAGs (what `make airflow` does)",
            description=SERVE_DESCRIPTION,
            raw=True,
            args=(
                arg(
                    "--port",
                    type=int,
                    default=None,
                    help="port of the UI and REST API on 127.0.0.1; 0 picks a free one "
                    "[8080 if free, else a free one]",
                ),
                arg("--home", default=None, help="AIRFLOW_HOME [<data>/airflow-home]"),
            ),
        ),
    ),
)
