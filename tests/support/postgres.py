"""A throwaway PostgreSQL server for the test run: initdb'd in a temp dir, on 127.0.0.1.

The metadata store must behave the same on PostgreSQL as on SQLite, so the suite starts a real
server once per session (``postgres_server``) and gives each test its own database. The server
belongs to the run: it listens on loopback only, keeps its unix socket in its temp dir, trusts
loopback connections, and trades durability for speed (fsync off). It is stopped at the end of
the session, at interpreter exit if the session never got there, and (through the parent-death
signal) even when the test process is killed.

initdb and postgres refuse to run as root, so as root they run as the ``postgres`` system user
that Debian's package creates; otherwise as the current user.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import pytest

from tests.support.ports import free_port

SUPERUSER = "tierflow"
SERVER_OWNER = "postgres"  # the system user Debian's postgresql package creates
START_TIMEOUT_S = 60
STOP_TIMEOUT_S = 30
PORT_ATTEMPTS = 5
MAX_SOCKET_DIR = 90  # leaves room for "/.s.PGSQL.<port>" within the 107-byte limit
BASE_PREFIX = "tierflow-pg-"
OWNER_FILE = "owner.pid"  # the test process that made a server's temp dir
DROP_BATCH = 16  # databases a session keeps before dropping them together
LOG_TAIL_CHARS = 4000
BINDIR_ENV = "TIERFLOW_PG_BINDIR"
INSTALL_HINT = (
    "PostgreSQL server binaries (initdb, postgres) were not found in $TIERFLOW_PG_BINDIR, "
    "/usr/lib/postgresql/<version>/bin or on PATH. The metadata suite runs on a real "
    "PostgreSQL server: install Debian's package (`apt-get install postgresql`; `make test` "
    "does it as root) or point TIERFLOW_PG_BINDIR at a directory holding initdb and postgres."
)

# Speed over durability: the cluster lives for one test run.
SERVER_SETTINGS = {
    "listen_addresses": "127.0.0.1",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "200",
    "shared_buffers": "64MB",
    "max_locks_per_transaction": "128",
    "log_min_messages": "warning",
    "log_lock_waits": "on",
    "deadlock_timeout": "1s",
}
HBA = "local all all trust\nhost all all 127.0.0.1/32 trust\n"


class PostgresUnavailableError(RuntimeError):
    """The server could not be found or started; the message says what to do."""


def find_bindir() -> Path:
    """Where initdb and postgres are: $TIERFLOW_PG_BINDIR, Debian's newest version, or PATH."""
    candidates: list[Path] = []
    if os.environ.get(BINDIR_ENV):
        candidates.append(Path(os.environ[BINDIR_ENV]))
    debian = Path("/usr/lib/postgresql").glob("*/bin")
    candidates.extend(sorted(debian, key=_version_key, reverse=True))
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).resolve().parent)
    for bindir in candidates:
        if (bindir / "initdb").is_file() and (bindir / "postgres").is_file():
            return bindir
    raise PostgresUnavailableError(INSTALL_HINT)


def _version_key(bindir: Path) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", bindir.parent.name)) or (0,)


def _owner_prefix() -> list[str]:
    """The command prefix that runs the server as a non-root user and ties it to us.

    setpriv's --pdeathsig makes the kernel send SIGQUIT (immediate shutdown) to the postmaster
    if this process dies without stopping it, e.g. when CI kills the test run.
    """
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0:
        return [setpriv, "--pdeathsig=QUIT", "--"] if setpriv else []
    if setpriv is None:
        raise PostgresUnavailableError(
            "running as root: setpriv (util-linux) is needed to run PostgreSQL as the "
            f"{SERVER_OWNER!r} user"
        )
    try:
        pwd.getpwnam(SERVER_OWNER)
    except KeyError:
        raise PostgresUnavailableError(
            f"running as root, and there is no {SERVER_OWNER!r} user to run PostgreSQL as; "
            "Debian's postgresql package creates it"
        ) from None
    return [
        setpriv,
        f"--reuid={SERVER_OWNER}",
        f"--regid={SERVER_OWNER}",
        "--init-groups",
        "--pdeathsig=QUIT",
        "--",
    ]


def _server_env() -> dict[str, str]:
    """Our environment without PG* variables (PGDATA, PGPORT... would redirect the tools)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PG")}
    env.update(LC_ALL="C", LANG="C", TZ="UTC")
    return env


@dataclass
class PostgresServer:
    """A running throwaway server; ``url(dbname)`` and ``create_database()`` for the tests."""

    bindir: Path
    base: Path
    port: int = 0
    process: subprocess.Popen[bytes] | None = None
    _names: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    _admin: psycopg.Connection | None = None
    _discarded: list[str] = field(default_factory=list)

    @property
    def data_dir(self) -> Path:
        return self.base / "data"

    @property
    def log_path(self) -> Path:
        return self.base / "postgres.log"

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql+psycopg://{SUPERUSER}@127.0.0.1:{self.port}/{dbname}"

    def create_database(self, prefix: str = "test", *, template: str | None = None) -> str:
        """A new empty database (or a copy of ``template``); returns its name."""
        name = f"{prefix}_{os.getpid()}_{next(self._names)}"
        clause = f" TEMPLATE {template}" if template else ""
        self._execute(f'CREATE DATABASE "{name}"{clause}')
        return name

    def discard_database(self, name: str) -> None:
        """Drop it soon, even while stores still hold connections.

        Ending a session takes PostgreSQL up to 100 ms per DROP ... WITH (FORCE), which per
        test adds up; ending the sessions of a batch of databases at once costs that only once.
        """
        self._discarded.append(name)
        if len(self._discarded) >= DROP_BATCH:
            self.drop_discarded()

    def drop_discarded(self) -> None:
        names, self._discarded = self._discarded, []
        if not names:
            return
        quoted = ", ".join(f"'{name}'" for name in names)
        self._execute(
            f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname IN ({quoted})"
        )
        for name in names:
            self._execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def log_since(self, offset: int, chars: int = LOG_TAIL_CHARS) -> str:
        """What the server logged after byte ``offset`` (its last ``chars`` characters)."""
        try:
            with self.log_path.open("rb") as log:
                log.seek(offset)
                return log.read().decode(errors="replace")[-chars:]
        except OSError:
            return ""

    def log_tail(self, chars: int = LOG_TAIL_CHARS) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no server log)"

    def start(self) -> None:
        prefix = _owner_prefix()
        self._initdb(prefix)
        last_error = ""
        for _ in range(PORT_ATTEMPTS):
            self.port = free_port()
            self.process = self._spawn(prefix)
            if self._wait_until_ready():
                return
            last_error = self.log_tail()
            self._stop_process()
            if "could not bind" not in last_error and "in use" not in last_error:
                break  # not a lost port race: trying another port will not help
        raise PostgresUnavailableError(
            f"PostgreSQL did not start; the end of its log:\n{last_error}"
        )

    def stop(self) -> None:
        """Fast shutdown (SIGINT, as ``pg_ctl stop -m fast``), then make sure nothing is left."""
        if self._admin is not None:
            with contextlib.suppress(psycopg.Error):
                self._admin.close()
            self._admin = None
        self._stop_process()
        shutil.rmtree(self.base, ignore_errors=True)

    def _initdb(self, prefix: list[str]) -> None:
        self.base.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(self.base, SERVER_OWNER, SERVER_OWNER)
        command = [
            *prefix,
            str(self.bindir / "initdb"),
            f"--pgdata={self.data_dir}",
            f"--username={SUPERUSER}",
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",
        ]
        done = subprocess.run(
            command, cwd=self.base, env=_server_env(), capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise PostgresUnavailableError(
                f"initdb failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
            )
        hba = self.data_dir / "pg_hba.conf"
        hba.write_text(HBA)
        if os.geteuid() == 0:
            shutil.chown(hba, SERVER_OWNER, SERVER_OWNER)

    def _spawn(self, prefix: list[str]) -> subprocess.Popen[bytes]:
        settings = {**SERVER_SETTINGS, "port": str(self.port)}
        # A unix socket path must fit in 107 bytes; the tests use TCP, so a long path goes without.
        socket_dir = str(self.base) if len(str(self.base)) < MAX_SOCKET_DIR else ""
        settings["unix_socket_directories"] = socket_dir
        options = [arg for name, value in settings.items() for arg in ("-c", f"{name}={value}")]
        with self.log_path.open("ab") as log:
            # Its own session: a Ctrl-C in the terminal reaches pytest, which stops the server.
            return subprocess.Popen(
                [*prefix, str(self.bindir / "postgres"), "-D", str(self.data_dir), *options],
                cwd=self.base,
                env=_server_env(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def _wait_until_ready(self) -> bool:
        assert self.process is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                psycopg.connect(self._conninfo("postgres"), connect_timeout=2).close()
                return True
            except psycopg.OperationalError:
                time.sleep(0.05)
        return False

    def _stop_process(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        children = _children_of(process.pid)
        for sig, wait_s in ((signal.SIGINT, STOP_TIMEOUT_S), (signal.SIGQUIT, 10)):
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=wait_s)
                break
        else:
            process.kill()
            process.wait()
        _kill_leftovers(children)

    def _conninfo(self, dbname: str) -> str:
        return f"host=127.0.0.1 port={self.port} user={SUPERUSER} dbname={dbname}"

    def _execute(self, sql: str) -> None:
        """Run one statement outside a transaction (CREATE/DROP DATABASE need that)."""
        if self._admin is None or self._admin.closed:
            self._admin = psycopg.connect(self._conninfo("postgres"), autocommit=True)
        self._admin.execute(sql)


def _children_of(pid: int) -> list[int]:
    """The postmaster's children (backends, checkpointer, ...), from /proc."""
    children: list[int] = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            # The command name may hold spaces; the fields after its closing ')' do not.
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                children.append(int(stat.parent.name))
    return children


def _kill_leftovers(pids: list[int]) -> None:
    """Backends exit with their postmaster; kill any that has not after a short wait."""
    deadline = time.monotonic() + 5
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        alive = [pid for pid in alive if _is_postgres(pid)]
        time.sleep(0.05)
    for pid in alive:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _is_postgres(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/comm").read_text().startswith("postgres")
    except OSError:
        return False


def _server_base() -> Path:
    """A new temp dir the server's user can reach (as root, $TMPDIR may sit in /root)."""
    parent = Path(tempfile.gettempdir())
    if os.geteuid() == 0 and not _world_traversable(parent):
        parent = Path("/tmp")
    _remove_stale_bases(parent)
    base = Path(tempfile.mkdtemp(prefix=BASE_PREFIX, dir=parent))
    (base / OWNER_FILE).write_text(str(os.getpid()))
    return base


def _remove_stale_bases(parent: Path) -> None:
    """Delete the files of servers whose test run was killed (the server died with it).

    Each base names the process that made it in OWNER_FILE; a base whose owner is gone is
    stale. One without the file is being created right now, or predates it: left alone.
    """
    for base in parent.glob(f"{BASE_PREFIX}*"):
        with contextlib.suppress(OSError, ValueError):
            owner = int((base / OWNER_FILE).read_text())
            if not _alive(owner):
                shutil.rmtree(base, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _world_traversable(path: Path) -> bool:
    return all(os.stat(p).st_mode & 0o001 for p in [path, *path.parents])


@contextlib.contextmanager
def running_postgres() -> Iterator[PostgresServer]:
    """Start a throwaway server; stop it and delete its files on exit, however we leave."""
    global _running
    server = PostgresServer(find_bindir(), _server_base())
    atexit.register(server.stop)  # a session that never reaches the finally below
    try:
        server.start()
        _running = server
        yield server
    finally:
        _running = None
        server.stop()
        atexit.unregister(server.stop)


_running: PostgresServer | None = None
_log_offset = 0  # the size of the server log when the current test started


def pytest_runtest_logstart(nodeid: str, location: object) -> None:
    """Note where the server log stands as a test starts (registered by tests/conftest.py)."""
    global _log_offset
    _log_offset = _size(_running.log_path) if _running else 0


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> object:
    """A failed test's report shows what the server logged while it ran."""
    report = yield
    if _running is not None and getattr(report, "failed", False):
        logged = _running.log_since(_log_offset)
        if logged:
            report.sections.append(("PostgreSQL server log", logged))
    return report


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One server per test session, started on first use; never skipped when missing."""
    try:
        with running_postgres() as server:
            yield server
    except PostgresUnavailableError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """The URL of a fresh database on the session's server, dropped soon after the test."""
    name = postgres_server.create_database()
    yield postgres_server.url(name)
    postgres_server.discard_database(name)
