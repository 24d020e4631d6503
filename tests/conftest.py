"""Fixtures shared by the whole suite.

Airflow reads its configuration once, at first import, so ``pytest_configure`` points it at a
private AIRFLOW_HOME before any test module can import it.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# The session's Azurite (Azure Blob Storage on loopback) and a fresh container.
from tests.support.azurite import azure_container, azurite  # noqa: F401

# make demo's log dir, generated once for the session.
from tests.support.demo_data import demo_log_dir  # noqa: F401

# The cases each property-based test passed, summed over the workers and printed at the end.
from tests.support.fuzz_report import pytest_runtest_logreport, pytest_terminal_summary  # noqa: F401

# The session's GCS emulator (the JSON API on loopback) and a fresh bucket.
from tests.support.gcs_emulator import gcs_bucket, gcs_emulator, service_account  # noqa: F401

# Apache Iceberg's REST catalog server, shared by a test module; no tables left between tests.
from tests.support.iceberg_rest import iceberg_rest, iceberg_rest_server  # noqa: F401

# Real Apache Kafka brokers (KRaft) on loopback, one or three nodes, shared by a test module.
from tests.support.kafka_broker import (  # noqa: F401
    kafka_broker,
    kafka_cluster,
    tiering_broker,
)

# The session's moto_server (a real S3-compatible HTTP server on loopback) and a fresh bucket.
from tests.support.moto_server import moto_server, s3_bucket  # noqa: F401

# The session's throwaway PostgreSQL server, for any test that asks for it (started on first
# use), and its log in the report of a test that fails while it runs.
from tests.support.postgres import (  # noqa: F401
    postgres_server,
    postgres_url,
    pytest_runtest_logstart,
    pytest_runtest_makereport,
)

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SHARED_SAMPLES = PROJECT_ROOT.parent / "shared" / "kafka-samples"


def pytest_configure(config: pytest.Config) -> None:
    home = Path(tempfile.mkdtemp(prefix="tierflow-airflow-home-"))
    os.environ["AIRFLOW_HOME"] = str(home)
    os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
    os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(PROJECT_ROOT / "dags")
    os.environ.pop("TIERFLOW_CRASH_AT", None)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules with slow tests first. ``make test`` hands whole files to its workers in this
    order (``--dist loadfile --no-loadscope-reorder``), so they end on short files instead of
    one worker running a five-minute DAG module alone at the end."""
    slow = {item.nodeid.split("::")[0] for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.nodeid.split("::")[0] not in slow)


@pytest.fixture
def project_root() -> Path:
    return PROJECT_ROOT


@pytest.fixture
def kafka_samples() -> Path:
    if not SHARED_SAMPLES.is_dir():
        pytest.skip("../shared/kafka-samples is not present beside the checkout")
    return SHARED_SAMPLES


@pytest.fixture(autouse=True)
def _root_logging_as_it_was() -> Iterator[None]:
    """Each test leaves the root logger's handlers and level as it found them.

    Tests call the CLI's ``main`` in-process, and a command whose settings reach Airflow
    (a cloud bucket) hands the root logger to Airflow's logging for the rest of the process: a
    later test's warning then came out in Airflow's format, or as "--- Logging error ---"
    from a handler bound to an earlier test's captured, closed stderr. A real CLI process runs
    one command, so only the tests share this state.
    """
    root = logging.getLogger()
    before, level = set(root.handlers), root.level
    yield
    for handler in root.handlers[:]:  # pytest's own capture handlers come and go by phase
        if handler not in before and not type(handler).__module__.startswith("_pytest"):
            root.removeHandler(handler)
    root.setLevel(level)
