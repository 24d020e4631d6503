"""A batch submitted to Spark from a process of ours (``tierflow copy --spark``, a heavy
restore): the same application, connection and arguments the DAGs' ``<verb>_with_spark`` tasks
submit.

The connection is Airflow's ``spark_default``, read as Airflow reads it (its metadata database
or ``AIRFLOW_CONN_SPARK_DEFAULT``). Where neither has it, a shell outside any Airflow, the one
of the checkout's ``airflow_settings.yaml`` (``local[*]``) is used rather than the Spark hook's
silent fallback to YARN.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tierflow.config import Settings
from tierflow.engine.batch_files import Batch, batch_dir, write_batch
from tierflow.lifecycle.copy.rewrite import RewriteJob, RewriteResult, rewrite_results
from tierflow.lifecycle.progress import NO_PROGRESS, Progress
from tierflow.tasks.segment_copy import spark_bucket_handover

if TYPE_CHECKING:
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

log = logging.getLogger(__name__)

CHECKOUT = Path(__file__).resolve().parents[3]
SPARK_APPS = CHECKOUT / "spark_apps"
AIRFLOW_SETTINGS = CHECKOUT / "airflow_settings.yaml"
CONN_ID = "spark_default"


class SparkAppMissingError(FileNotFoundError):
    """The Spark applications live in the checkout, beside the package, not in it."""


class SparkJobFailedError(RuntimeError):
    """spark-submit ended in failure: no segment of the batch counts as rewritten."""


def rewrite_on_spark(
    jobs: Sequence[RewriteJob],
    settings: Settings,
    *,
    run_key: str,
    progress: Progress = NO_PROGRESS,
) -> list[RewriteResult]:
    """Write the batch, spark-submit ``rewrite_segments.py`` over it, read its results."""
    batch = write_batch(batch_dir(settings, "rewrite-jobs", run_key), jobs, settings)
    submit_batch("rewrite_segments.py", batch, settings, name="tierflow-copy")
    results = rewrite_results(batch)
    progress.advance(len(results), sum(j.size_in_bytes for j in jobs if j.segment_id in results))
    return list(results.values())


def submit_batch(app_file: str, batch: Batch, settings: Settings, *, name: str) -> None:
    """spark-submit one of ``spark_apps/`` over a batch (``engine.batch_files.write_batch``), with
    an S3 bucket's connection handed over in the driver's environment."""
    app = SPARK_APPS / app_file
    if not app.is_file():
        raise SparkAppMissingError(f"{app}: Spark jobs run from a checkout of tierflow")
    log.info("submitting %s over %d bytes to Spark", app_file, batch.bytes)
    from airflow.sdk.exceptions import AirflowException

    with spark_bucket_handover(settings):
        try:
            _hook(batch, name).submit(str(app))
        except AirflowException as exc:
            raise SparkJobFailedError(f"the Spark job over {batch.jobs_file}: {exc}") from exc


def _hook(batch: Batch, name: str) -> SparkSubmitHook:
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    _default_connection()
    _spark_submit_on_path()
    return SparkSubmitHook(
        conn_id=CONN_ID,
        name=name,
        application_args=batch.spark_args,
        py_files=batch.py_files,
        conf=batch.spark_conf,
    )


def _spark_submit_on_path() -> None:
    """The spark-submit pyspark installed beside this Python, when none is on PATH (a venv
    used without activating it)."""
    beside = Path(sys.executable).parent
    if shutil.which("spark-submit") is None and (beside / "spark-submit").is_file():
        os.environ["PATH"] = f"{beside}{os.pathsep}{os.environ.get('PATH', '')}"


def _default_connection() -> None:
    """``spark_default`` from airflow_settings.yaml when this Airflow has none."""
    from airflow.sdk import BaseHook
    from airflow.sdk.exceptions import AirflowNotFoundException

    try:
        BaseHook.get_connection(CONN_ID)
        return
    except AirflowNotFoundException:
        pass
    found = connection_json(AIRFLOW_SETTINGS, CONN_ID) if AIRFLOW_SETTINGS.is_file() else None
    if found:
        log.info("no %s connection in Airflow: using %s's", CONN_ID, AIRFLOW_SETTINGS.name)
        os.environ[f"AIRFLOW_CONN_{CONN_ID.upper()}"] = found


def connection_json(settings_file: Path, conn_id: str) -> str | None:
    """The Astro-style settings file's connection ``conn_id`` in the JSON form Airflow reads
    from ``AIRFLOW_CONN_<ID>``; None when the file has no such connection."""
    import yaml

    doc = yaml.safe_load(settings_file.read_text()) or {}
    for conn in (doc.get("airflow") or {}).get("connections") or []:
        if conn.get("conn_id") == conn_id:
            fields = {
                "conn_type": conn.get("conn_type"),
                "host": conn.get("conn_host"),
                "schema": conn.get("conn_schema"),
                "login": conn.get("conn_login"),
                "password": conn.get("conn_password"),
                "port": conn.get("conn_port"),
                "extra": conn.get("conn_extra"),
            }
            return json.dumps({k: v for k, v in fields.items() if v is not None})
    return None
