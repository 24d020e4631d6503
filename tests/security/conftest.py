"""Fixtures of the security tests: a PostgreSQL role that must present its password."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.security.needles import PG_PASSWORD, PG_USER
from tests.security.pg_role import PasswordRole, password_role
from tests.support.postgres import PostgresServer


@pytest.fixture(scope="module")
def pg_role(postgres_server: PostgresServer) -> Iterator[PasswordRole]:
    """A role that authenticates with PG_PASSWORD (SCRAM), owning a fresh database."""
    with password_role(postgres_server, PG_USER, PG_PASSWORD) as role:
        yield role
