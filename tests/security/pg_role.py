"""A PostgreSQL login role that must present its password, on the session's test server.

The suite's server trusts every loopback connection, so a password in a URL would never even
be sent. For the security tests one role authenticates with SCRAM instead: a line for it alone
goes in front of pg_hba.conf (first match wins, every other role stays trusted), and is taken
out again afterwards. The role owns one fresh database.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import quote

import psycopg
from psycopg import sql

from tests.support.postgres import SUPERUSER, PostgresServer

RELOAD_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class PasswordRole:
    host: str
    port: int
    user: str
    password: str
    dbname: str

    def url(self, password: str | None = None) -> str:
        """A SQLAlchemy URL as an operator writes it: the password URL-quoted."""
        secret = quote(self.password if password is None else password, safe="")
        return f"postgresql+psycopg://{self.user}:{secret}@{self.host}:{self.port}/{self.dbname}"


def _admin(server: PostgresServer) -> psycopg.Connection:
    return psycopg.connect(
        host="127.0.0.1", port=server.port, user=SUPERUSER, dbname="postgres", autocommit=True
    )


@contextmanager
def password_role(server: PostgresServer, user: str, password: str) -> Iterator[PasswordRole]:
    hba = server.data_dir / "pg_hba.conf"
    original = hba.read_text()
    dbname = f"{user}_{time.monotonic_ns()}"
    with _admin(server) as admin:
        admin.execute(
            sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(user), sql.Literal(password)
            )
        )
        admin.execute(
            sql.SQL("CREATE DATABASE {} OWNER {}").format(
                sql.Identifier(dbname), sql.Identifier(user)
            )
        )
        role = PasswordRole("127.0.0.1", server.port, user, password, dbname)
        try:
            # Written in place: the file keeps its owner (the server's user, when run as root).
            hba.write_text(f"host all {user} 127.0.0.1/32 scram-sha-256\n{original}")
            admin.execute("SELECT pg_reload_conf()")
            _wait_until_password_required(role)
            yield role
        finally:
            hba.write_text(original)
            admin.execute("SELECT pg_reload_conf()")
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(dbname))
            )
            admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(user)))


def _wait_until_password_required(role: PasswordRole) -> None:
    """The postmaster rereads pg_hba.conf asynchronously: wait until a wrong password fails."""
    deadline = time.monotonic() + RELOAD_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            psycopg.connect(
                host=role.host,
                port=role.port,
                user=role.user,
                password="not-the-password",
                dbname=role.dbname,
            ).close()
        except psycopg.OperationalError:
            return
        time.sleep(0.05)
    raise RuntimeError("pg_hba.conf reload did not take effect: the role still needs no password")
