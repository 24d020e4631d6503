"""Every concurrency scenario runs on a SQLite file and on the session's PostgreSQL server.

A scenario is several rounds, each on a fresh starting state: ``fresh`` builds one (the
generated log dir and bucket in a new directory, the store in a new SQLite file or a new
PostgreSQL database). The parameter ids are the backend names, so ``-k sqlite`` picks one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.concurrency import runs
from tests.metadata.metadata_support import BACKENDS, sqlite_url
from tests.support.tiered import Tiered, build_tiered

# The shared checks assert with plain ``assert``: show their diffs as in a test module (they
# are imported by the test modules, after this).
pytest.register_assert_rewrite(
    "tests.concurrency.checks",
    "tests.concurrency.copy_support",
    "tests.concurrency.retention_support",
    "tests.concurrency.disable_support",
)

Fresh = Callable[..., Tiered]


@pytest.fixture(autouse=True)
def _no_leftover_runs() -> Iterator[None]:
    yield
    runs.kill_leftovers()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """The store's backend; a test may parametrize ``backend`` itself to pick (backends.py)."""
    return request.param


@pytest.fixture
def fresh(request: pytest.FixtureRequest, backend: str, tmp_path: Path) -> Iterator[Fresh]:
    """Builds a fresh tiered starting state per call, on this test's backend."""
    built: list[Tiered] = []
    databases: list[str] = []

    def build(name: str, **settings: object) -> Tiered:
        base = tmp_path / name
        if backend == "sqlite":
            url = sqlite_url(base)
        else:
            server = request.getfixturevalue("postgres_server")
            databases.append(server.create_database())
            url = server.url(databases[-1])
        t = build_tiered(base, db_url=url, **settings)
        built.append(t)
        return t

    yield build
    for t in built:
        t.store.close()
    if databases:
        server = request.getfixturevalue("postgres_server")
        for name in databases:
            server.discard_database(name)


Prepare = Callable[[Tiered], None]


@pytest.fixture(scope="session")
def solo_order(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., list[str]]:
    """The crash points an operation passes running alone from a scenario's starting state
    (on SQLite; the path does not depend on the backend), computed once per scenario."""
    cache: dict[tuple, list[str]] = {}

    def order(prepare: Prepare, operation: str, *args: object, **settings: object) -> list[str]:
        key = (prepare.__name__, operation, *args, *sorted(settings.items()))
        if key not in cache:
            work = tmp_path_factory.mktemp("solo")
            t = build_tiered(work / "env", **settings)
            prepare(t)
            cache[key] = runs.solo_order(t.settings, work, operation, *args)
            t.store.close()
        return cache[key]

    return order
