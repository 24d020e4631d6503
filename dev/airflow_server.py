"""A local Airflow 3 for tierflow: api-server, scheduler and dag-processor on loopback.

``make airflow`` (``tierflow airflow serve``) and the end-to-end tests start the real Airflow
components, not ``dag.test()``. Each gets the same environment: a private AIRFLOW_HOME with a
SQLite metadata database, the checkout's ``dags/`` and ``plugins/``, no examples, the
LocalExecutor (Airflow 3 allows it on SQLite; task processes talk to the api-server's Execution
API and never write the database themselves), and Airflow 3's SimpleAuthManager with one user,
``admin``, whose password lives in the auth manager's password file in AIRFLOW_HOME.

Plain Airflow does not read ``airflow_settings.yaml``, so its pools and connections are applied
before the components start. The components share one process group, so stopping it (Ctrl-C, or
``stop()``) ends every one of them and the task processes they started.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from dev.airflow_local import airflow_env, prepare_airflow_db
from dev.children import set_parent_death_signal

COMPONENTS = ("api-server", "scheduler", "dag-processor")
ADMIN = "admin"
PASSWORD_FILE = "simple_auth_manager_passwords.json.generated"
SIMPLE_AUTH_MANAGER = (
    "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
)
DEFAULT_PORT = 8080
READY_TIMEOUT_S = 180
STOP_TIMEOUT_S = 20
LOG_TAIL_LINES = 40
# A 503 (SQLite locked by the scheduler) is tried again this many times, so far apart.
BUSY_RETRIES, BUSY_WAIT_S = 5, 2.0
# Settings the caller's environment may override. The LocalExecutor starts one worker process
# per slot of [core] parallelism (32 by default), far more than a laptop needs.
DEFAULTS = {"AIRFLOW__CORE__PARALLELISM": "8"}

Report = Callable[[str], None]


class AirflowServerError(RuntimeError):
    """A component failed to start, died, or Airflow did not become ready in time."""


class AirflowApiError(RuntimeError):
    def __init__(self, method: str, path: str, status: int, body: str) -> None:
        super().__init__(f"{method} {path}: HTTP {status}: {body[:2000]}")
        self.status = status
        self.body = body


def free_port() -> int:
    """A port nothing listens on right now, on loopback."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_is_free(port: int) -> bool:
    """Whether a server could listen on the port (uvicorn, too, reuses a port in TIME_WAIT)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def choose_port(requested: int | None) -> int:
    """The requested port (0: any free one); without one, 8080 when free, else any free port."""
    if requested is None:
        return DEFAULT_PORT if port_is_free(DEFAULT_PORT) else free_port()
    return requested or free_port()


def admin_password(home: Path) -> str:
    """The admin password from the auth manager's password file, generated on first use.

    SimpleAuthManager reads ``{"user": "password"}`` from this file; writing it ourselves (mode
    0600) lets ``serve`` print the login, and keeps it stable across restarts of the same home.
    """
    path = home / PASSWORD_FILE
    passwords: dict[str, str] = {}
    if path.exists():
        passwords = json.loads(path.read_text() or "{}")
        if passwords.get(ADMIN):
            return passwords[ADMIN]
    passwords[ADMIN] = secrets.token_urlsafe(12)
    home.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(json.dumps(passwords) + "\n")
    return passwords[ADMIN]


def server_env(
    project: Path, home: Path, port: int, extra_env: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment every component runs with: ours over the caller's (TIERFLOW_* pass on).

    ``[api] base_url`` stays unset, so the UI works as http://localhost:<port> too; task
    processes reach the Execution API on loopback directly.
    """
    base_url = f"http://127.0.0.1:{port}"
    env = {
        **DEFAULTS,
        **os.environ,
        **airflow_env(project, home),
        "AIRFLOW_CONFIG": str(home / "airflow.cfg"),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__AUTH_MANAGER": SIMPLE_AUTH_MANAGER,
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{ADMIN}:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "False",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(home / PASSWORD_FILE),
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{base_url}/execution/",
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(home / "logs"),
    }
    env.update(extra_env or {})
    return env


def expected_dag_files(dags_folder: Path) -> set[str]:
    """DAG files the dag-processor will parse, relative to the folder.

    Airflow's safe mode only parses a .py file that mentions both "airflow" and "dag".
    """
    found = set()
    for path in dags_folder.rglob("*.py"):
        text = path.read_bytes().lower()
        if b"airflow" in text and b"dag" in text:
            found.add(path.relative_to(dags_folder).as_posix())
    return found


class AirflowApi:
    """A small client of the public REST API v2, with a JWT from SimpleAuthManager."""

    def __init__(self, base_url: str, username: str, password: str, timeout_s: float = 30):
        self.base_url = base_url.rstrip("/")
        self.username = username
        self.password = password
        self.timeout_s = timeout_s
        self._token: str | None = None

    def token(self) -> str:
        """A JWT for the user (POST /auth/token), cached until the server rejects it."""
        if self._token is None:
            body = {"username": self.username, "password": self.password}
            self._token = self._send("POST", "/auth/token", body, auth=False)["access_token"]
        return self._token

    def get(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params=params)

    def post(self, path: str, body: Any) -> Any:
        return self.request("POST", path, body)

    def patch(self, path: str, body: Any, **params: Any) -> Any:
        return self.request("PATCH", path, body, params=params)

    def request(
        self, method: str, path: str, body: Any = None, params: Mapping[str, Any] | None = None
    ) -> Any:
        """One call; a 503 is tried again a few times, as any client would: on SQLite, Airflow
        answers 503 "Database is locked" while the scheduler writes, having rolled back."""
        for _ in range(BUSY_RETRIES):
            try:
                return self._authorized(method, path, body, params)
            except AirflowApiError as exc:
                if exc.status != 503:
                    raise
                time.sleep(BUSY_WAIT_S)
        return self._authorized(method, path, body, params)

    def _authorized(
        self, method: str, path: str, body: Any, params: Mapping[str, Any] | None
    ) -> Any:
        try:
            return self._send(method, path, body, params=params)
        except AirflowApiError as exc:
            if exc.status != 401:
                raise
            self._token = None  # expired: log in again once
            return self._send(method, path, body, params=params)

    def _send(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        params: Mapping[str, Any] | None = None,
        auth: bool = True,
    ) -> Any:
        url = self.base_url + path
        if params:
            url += "?" + urllib.parse.urlencode(
                {k: v for k, v in params.items() if v is not None}, doseq=True
            )
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if auth:
            headers["Authorization"] = f"Bearer {self.token()}"
        request = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            body_text = exc.read().decode(errors="replace")
            raise AirflowApiError(method, path, exc.code, body_text) from None
        return json.loads(raw) if raw else None


@dataclass
class LocalAirflow:
    """Airflow's api-server, scheduler and dag-processor as children in one process group."""

    project: Path
    home: Path
    port: int
    extra_env: Mapping[str, str] = field(default_factory=dict)
    report: Report = print
    processes: dict[str, subprocess.Popen] = field(default_factory=dict, init=False)
    _pgid: int | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.project = Path(self.project).resolve()
        self.home = Path(self.home).resolve()
        self.password = admin_password(self.home)
        self.env = server_env(self.project, self.home, self.port, self.extra_env)
        self.api = AirflowApi(self.url, ADMIN, self.password)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_dir(self) -> Path:
        return self.home / "logs"

    def log_file(self, name: str) -> Path:
        return self.log_dir / f"{name}.log"

    def __enter__(self) -> LocalAirflow:
        try:
            self.start()
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Migrate the DB, apply airflow_settings.yaml, then start every component."""
        if not port_is_free(self.port):
            raise AirflowServerError(f"port {self.port} on 127.0.0.1 is already in use")
        self.log_dir.mkdir(parents=True, exist_ok=True)
        setup_log = self.log_file("setup")
        self.report(f"Preparing Airflow's database in {self.home} (log: {setup_log})")
        with open(setup_log, "w") as log:
            try:
                prepare_airflow_db(self.env, self.project / "airflow_settings.yaml", log)
            except subprocess.CalledProcessError as exc:
                raise AirflowServerError(
                    f"setting up Airflow failed: {exc}\n{self._tail(setup_log)}"
                ) from exc
        for name in COMPONENTS:
            self._spawn(name)
            self.report(f"  {name:<14} log: {self.log_file(name)}")

    def _spawn(self, name: str) -> None:
        command = [sys.executable, "-m", "airflow", name]
        if name == "api-server":
            command += ["--host", "127.0.0.1", "--port", str(self.port)]
        if name == "scheduler":
            # Its log server would listen on every interface; the api-server reads task logs
            # from the files in this same AIRFLOW_HOME instead.
            command += ["--skip-serve-logs"]
        with open(self.log_file(name), "ab") as log:
            process = subprocess.Popen(
                command,
                env=self.env,
                cwd=self.home,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                process_group=self._pgid if self.processes else 0,
                preexec_fn=set_parent_death_signal,
            )
        if not self.processes:
            self._pgid = process.pid  # the first component leads the group
        self.processes[name] = process

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Until the api-server answers, the scheduler and dag-processor heartbeat, and every
        DAG file is parsed (as a DAG or an import error)."""
        deadline = time.monotonic() + timeout_s
        self._wait_for("the api-server to answer", deadline, self._api_answers)
        self._wait_for("the scheduler and dag-processor", deadline, self._components_healthy)
        self._wait_for("the DAG files to be parsed", deadline, self._dags_parsed)

    def _wait_for(self, what: str, deadline: float, check: Callable[[], bool]) -> None:
        self.report(f"Waiting for {what}...")
        while True:
            self.check_alive()
            try:
                if check():
                    return
            except (OSError, AirflowApiError):
                pass  # not up yet
            if time.monotonic() > deadline:
                raise AirflowServerError(f"timed out waiting for {what}; logs in {self.log_dir}")
            time.sleep(1)

    def _api_answers(self) -> bool:
        with urllib.request.urlopen(f"{self.url}/api/v2/monitor/health", timeout=5) as response:
            return response.status == 200

    def health(self) -> dict[str, Any]:
        return self.api.get("/api/v2/monitor/health")

    def _components_healthy(self) -> bool:
        health = self.health()
        return all(
            (health.get(part) or {}).get("status") == "healthy"
            for part in ("metadatabase", "scheduler", "dag_processor")
        )

    def _dags_parsed(self) -> bool:
        expected = expected_dag_files(self.project / "dags")
        dags = self.api.get("/api/v2/dags", limit=100)["dags"]
        errors = self.import_errors()
        seen = {d["relative_fileloc"] for d in dags} | {e["filename"] for e in errors}
        return expected <= seen

    def import_errors(self) -> list[dict[str, Any]]:
        return self.api.get("/api/v2/importErrors", limit=100)["import_errors"]

    def dag_ids(self) -> list[str]:
        return sorted(d["dag_id"] for d in self.api.get("/api/v2/dags", limit=100)["dags"])

    def check_alive(self) -> None:
        """Raise, with the end of its log, if a component has exited."""
        for name, process in self.processes.items():
            if process.poll() is not None:
                log = self.log_file(name)
                raise AirflowServerError(
                    f"{name} exited with status {process.returncode}; "
                    f"end of {log}:\n{self._tail(log)}"
                )

    def wait(self, poll_s: float = 1.0) -> None:
        """Block until a component exits (raises) or the caller is interrupted."""
        while True:
            self.check_alive()
            time.sleep(poll_s)

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """SIGTERM the process group and every descendant, SIGKILL what is left, reap all."""
        if not self.processes:
            return
        ours = self._descendants()
        if self._pgid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._pgid, signal.SIGTERM)
        for process in ours:
            _signal(process, signal.SIGTERM)  # task processes run in groups of their own
        _, alive = psutil.wait_procs(ours, timeout=timeout_s)
        for process in alive + self.leftovers():
            _signal(process, signal.SIGKILL)
        psutil.wait_procs(alive, timeout=5)
        for process in self.processes.values():
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes.clear()

    def _descendants(self) -> list[psutil.Process]:
        found: dict[int, psutil.Process] = {}
        for process in self.processes.values():
            try:
                parent = psutil.Process(process.pid)
                found[parent.pid] = parent
                for child in parent.children(recursive=True):
                    found[child.pid] = child
            except psutil.NoSuchProcess:
                continue
        for leftover in self.leftovers():
            found[leftover.pid] = leftover
        return list(found.values())

    def leftovers(self) -> list[psutil.Process]:
        """Live processes of this Airflow, even ones re-parented to init after a crash."""
        return list(_processes_of(self.home, self._pgid))

    def _tail(self, path: Path) -> str:
        if not path.exists():
            return ""
        lines = path.read_text(errors="replace").splitlines()
        return "\n".join(lines[-LOG_TAIL_LINES:])


def _signal(process: psutil.Process, sig: signal.Signals) -> None:
    with contextlib.suppress(psutil.NoSuchProcess):
        process.send_signal(sig)


def _processes_of(home: Path, pgid: int | None) -> Iterator[psutil.Process]:
    """Processes in the components' group, or Airflow processes working in this home.

    Task processes run in groups of their own, and setproctitle (the api-server, executor
    workers, task runners) overwrites /proc/<pid>/environ; but every process we start runs in
    AIRFLOW_HOME and Airflow's titles start with "airflow". A shell merely cd'd there is left.
    """
    wanted = str(home)
    me = os.getpid()
    for process in psutil.process_iter(["pid"]):
        if process.pid == me:
            continue
        try:
            if process.status() == psutil.STATUS_ZOMBIE:
                continue
            in_group = pgid is not None and os.getpgid(process.pid) == pgid
            if in_group or (process.cwd() == wanted and is_airflow_process(process.cmdline())):
                yield process
        except (psutil.Error, ProcessLookupError):
            continue


def is_airflow_process(cmdline: list[str]) -> bool:
    """An Airflow component, by its title or its program (``airflow``, ``python -m airflow``)."""
    first = cmdline[0] if cmdline else ""
    if first.startswith("airflow ") or Path(first.split(" ")[0]).name == "airflow":
        return True  # a title set by setproctitle, or the airflow script
    return any(a == "-m" and b == "airflow" for a, b in itertools.pairwise(cmdline))


def task_instances(api: AirflowApi, dag_id: str, run_id: str) -> list[dict[str, Any]]:
    """Every task instance of the run, mapped ones one by one, over as many pages as needed."""
    path = f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances"
    found: list[dict[str, Any]] = []
    while True:
        page = api.get(path, limit=100, offset=len(found))
        found += page["task_instances"]
        if not page["task_instances"] or len(found) >= page["total_entries"]:
            return found


def xcom_value(
    api: AirflowApi, dag_id: str, run_id: str, task_id: str, key: str = "return_value"
) -> Any:
    """What a task of the run pushed under ``key`` (its return value by default)."""
    path = f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/xcomEntries"
    return api.get(f"{path}/{key}")["value"]
