"""Apache Iceberg's REST catalog test server, for the export's tests: the real REST protocol
between tierflow's pyiceberg and a catalog that is not ours.

The server is ``org.apache.iceberg.rest.RESTCatalogServer`` (iceberg-open-api's test-fixtures
jar; the ``apache/iceberg-rest-fixture`` image runs the same class), whose jars ``make
test-servers`` copies from Maven Central (``dev/iceberg-rest/pom.xml``). Behind it: a
JdbcCatalog on a SQLite file, and its own warehouse, both in the module's temporary directory;
so a server stopped and started again on the same port has the same tables. It takes its
settings from ``CATALOG_*`` variables and no host: Jetty listens on every interface, on a free
port, for as long as the module runs.

``iceberg_rest``: the module's server, running, with no tables left by an earlier test. Without
Java or the jars a test fails under ``make`` (``make test`` installs them) and is skipped
with the command to run elsewhere.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from dev.children import set_parent_death_signal
from tests.support.ports import free_port
from tests.support.processes import stop_group, wait_answering

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog

PROJECT = Path(__file__).resolve().parents[2]
LIBS = PROJECT / ".test-servers" / "iceberg-rest" / "libs"
MAIN_JAR = "iceberg-open-api-*-test-fixtures.jar"
SERVER_CLASS = "org.apache.iceberg.rest.RESTCatalogServer"
JVM = ("-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
READY_TIMEOUT_S = 90.0
INSTALL_HINT = (
    f"no Iceberg REST catalog jars in {LIBS}: run `make test-servers`, which copies the server "
    "of dev/iceberg-rest/pom.xml and its dependencies there from Maven Central"
)


@dataclass
class IcebergRest:
    """One RESTCatalogServer JVM: its port and directory (SQLite catalog, warehouse, log)."""

    home: Path
    port: int
    process: subprocess.Popen | None = None

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> None:
        """Start it (on the same port, catalog and warehouse as before) and wait until it
        answers ``GET /v1/config``."""
        if self.running:
            return
        log = self.home / "server.log"
        env = {
            **os.environ,
            "CATALOG_URI": f"jdbc:sqlite:{self.home / 'catalog.db'}",
            "CATALOG_WAREHOUSE": f"file://{self.home / 'warehouse'}",
            "CATALOG_REST_PORT": str(self.port),  # the server's rest.port
        }
        command = [shutil.which("java") or "java", *JVM, "-cp", f"{LIBS}/*", SERVER_CLASS]
        with log.open("ab") as out:
            self.process = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=env, start_new_session=True, preexec_fn=set_parent_death_signal,
            )  # fmt: skip
        name = f"Iceberg REST catalog on port {self.port}"
        wait_answering(name, f"{self.uri}/v1/config", self.process, log, READY_TIMEOUT_S)

    def stop(self) -> None:
        """SIGTERM (Jetty stops), SIGKILL if it hangs."""
        if self.process is not None:
            stop_group(self.process, term_wait_s=10)

    def catalog(self, **properties: str) -> Catalog:
        """pyiceberg's own REST client for it: the tests' view, apart from tierflow's."""
        from pyiceberg.catalog import load_catalog  # 0.6 s: not for every test session

        return load_catalog("iceberg-rest-test", type="rest", uri=self.uri, **properties)

    def clear(self) -> None:
        """Drop every table an earlier test of the module made (their files stay in its
        temporary directory): each test starts with no ``kafka.<topic>`` table."""
        catalog = self.catalog()
        for namespace in catalog.list_namespaces():
            for table in catalog.list_tables(namespace):
                catalog.drop_table(table)


def connection_env(conn_id: str, uri: str, *, login: str = "", password: str = "") -> dict:
    """An Airflow Iceberg connection to a REST catalog (JSON form, as the environment holds
    it); ``login`` and ``password`` are the OAuth2 client id and secret."""
    value = {"conn_type": "iceberg", "host": uri, "login": login, "password": password}
    if login:  # where pyiceberg asks for the token, said rather than left to its fallback
        value["extra"] = {"oauth2-server-uri": f"{uri}/v1/oauth/tokens"}
    return {f"AIRFLOW_CONN_{conn_id.upper()}": json.dumps(value)}


def require_server() -> None:
    """Java and the jars, or: a failure under ``make``, a skip saying what to run elsewhere."""
    missing = None if shutil.which("java") else "no java on PATH: install Java 17 (make java)"
    if missing is None and not any(LIBS.glob(MAIN_JAR)):
        missing = INSTALL_HINT
    if missing is None:
        return
    if os.environ.get("MAKELEVEL"):  # make test promised them: say so loudly
        pytest.fail(missing, pytrace=False)
    pytest.skip(missing)


@pytest.fixture(scope="module")
def iceberg_rest_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IcebergRest]:
    require_server()
    server = IcebergRest(tmp_path_factory.mktemp("iceberg-rest"), free_port())
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture
def iceberg_rest(iceberg_rest_server: IcebergRest) -> IcebergRest:
    """The module's server, running again if a test stopped it, and without tables."""
    iceberg_rest_server.start()
    iceberg_rest_server.clear()
    return iceberg_rest_server
