"""Metadata store failures name the store (user, host, port, database) but never its password.

The store is a real PostgreSQL role that must authenticate with SCRAM (``pg_role``), so a
wrong password is refused by the server itself. Each failure is checked as an exception (its
text and the whole formatted traceback, chained causes included) and as ``tierflow`` prints it.
"""

from __future__ import annotations

import pickle
import traceback
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.security.cli import tierflow
from tests.security.needles import PG_PASSWORD, pg_password_secret
from tests.security.pg_role import PasswordRole
from tests.security.scan import find_secrets, text
from tests.support.ports import free_port
from tierflow.cli import exit_codes
from tierflow.config import Settings
from tierflow.metadata.engine import InvalidStoreURLError, StoreUnavailableError
from tierflow.metadata.store import MetadataStore
from tierflow.runtime import mask_in_airflow

WRONG_PASSWORD = "tfSecLeakWrongPg/9@x:y%7"
SECRETS = [pg_password_secret(PG_PASSWORD), pg_password_secret(WRONG_PASSWORD)]


def leaks(*texts: str) -> list:
    return find_secrets([text(f"message {n}", t) for n, t in enumerate(texts)], SECRETS)


def failure_of(url: str) -> BaseException:
    with pytest.raises(Exception) as caught:
        MetadataStore(url)
    return caught.value


def formatted(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc))


def env_for(tmp_path: Path, url: str) -> dict[str, str]:
    return Settings.embedded(tmp_path, db_url=url).as_env()


def test_the_right_password_is_needed_and_works(pg_role: PasswordRole):
    with MetadataStore(pg_role.url()) as store:
        assert store.topics() == []


def test_a_wrong_password_names_user_host_and_database_only(pg_role: PasswordRole):
    exc = failure_of(pg_role.url(WRONG_PASSWORD))
    assert isinstance(exc, StoreUnavailableError)
    message = str(exc)
    assert f"{pg_role.user}:***@{pg_role.host}:{pg_role.port}/{pg_role.dbname}" in message
    assert "password authentication failed" in message
    assert leaks(message, formatted(exc)) == []
    assert str(pickle.loads(pickle.dumps(exc))) == message, "crosses process boundaries"


def test_an_unreachable_server_names_host_and_database_only(pg_role: PasswordRole):
    url = pg_role.url().replace(f":{pg_role.port}/", f":{free_port()}/")
    exc = failure_of(url)
    assert isinstance(exc, StoreUnavailableError)
    assert "Connection refused" in str(exc) and pg_role.dbname in str(exc)
    assert leaks(str(exc), formatted(exc)) == []


def test_an_unquoted_password_is_refused_without_showing_any_of_it(pg_role: PasswordRole):
    # SQLAlchemy would end the password at its '@' and report the rest as host and database.
    url = f"postgresql+psycopg://{pg_role.user}:{PG_PASSWORD}@{pg_role.host}:{pg_role.port}/db"
    exc = failure_of(url)
    assert isinstance(exc, InvalidStoreURLError)
    tail = PG_PASSWORD.split("@", 1)[1]
    assert tail not in formatted(exc) and leaks(formatted(exc)) == []


@pytest.mark.parametrize("case", ["wrong password", "unreachable", "unquoted"])
@pytest.mark.parametrize(
    "command", [("topics", "list"), ("db", "upgrade")], ids=["topics-list", "db-upgrade"]
)
def test_the_cli_prints_one_line_without_the_password(
    tmp_path: Path, pg_role: PasswordRole, case: str, command: tuple[str, ...]
):
    url = {
        "wrong password": pg_role.url(WRONG_PASSWORD),
        "unreachable": pg_role.url().replace(f":{pg_role.port}/", f":{free_port()}/"),
        "unquoted": f"postgresql+psycopg://{pg_role.user}:{PG_PASSWORD}@{pg_role.host}/db",
    }[case]
    run = tierflow(env_for(tmp_path, url), *command)
    # A store that refuses or cannot be reached is a store error; a URL that does not parse is
    # a setting the operator mistyped.
    assert run.returncode == (exit_codes.USAGE if case == "unquoted" else exit_codes.STORE), (
        run.output
    )
    assert run.output.startswith("tierflow: error: ") and "Traceback" not in run.output
    assert run.leaks(SECRETS) == []


def test_db_upgrade_reports_the_store_without_its_password(tmp_path: Path, pg_role: PasswordRole):
    run = tierflow(env_for(tmp_path, pg_role.url()), "db", "upgrade")
    assert run.returncode == 0, run.output
    assert f"{pg_role.user}:***@{pg_role.host}" in run.output
    assert run.leaks(SECRETS) == []


def test_inside_airflow_the_password_is_registered_with_the_secrets_masker(tmp_path: Path):
    """A task that opens the store teaches Airflow's masker the password, raw and quoted."""
    from airflow.sdk.log import redact

    url = f"postgresql+psycopg://u:{quote(WRONG_PASSWORD, safe='')}@127.0.0.1:{free_port()}/d"
    assert WRONG_PASSWORD in redact(f"before: {WRONG_PASSWORD}"), "not masked before"
    mask_in_airflow(Settings.embedded(tmp_path, db_url=url))
    logged = redact(f"raw {WRONG_PASSWORD} and in a URL {url}")
    assert leaks(str(logged)) == [], logged
