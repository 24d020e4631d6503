"""The Alembic migration creates exactly the SQLModel schema, idempotently and reversibly."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlmodel import SQLModel

from tests.metadata.metadata_support import NOW, TOPIC, TOPIC_ID, db_url
from tierflow.metadata import MetadataStore, migrate
from tierflow.metadata.engine import create_store_engine
from tierflow.metadata.models import TABLE_NAMES, VERSION_TABLE


def _schema_diffs(engine: sa.Engine) -> list[object]:
    def include_name(name: str | None, type_: str, _parents: object) -> bool:
        return type_ != "table" or name in TABLE_NAMES

    with engine.connect() as connection:
        context = MigrationContext.configure(
            connection,
            opts={"version_table": VERSION_TABLE, "include_name": include_name},
        )
        return list(compare_metadata(context, SQLModel.metadata))


def _tables(engine: sa.Engine) -> set[str]:
    return set(sa.inspect(engine).get_table_names())


def test_upgrade_from_empty_creates_the_models_schema(tmp_path: Path) -> None:
    store = MetadataStore(db_url(tmp_path))
    assert _tables(store.engine) == set(TABLE_NAMES) | {VERSION_TABLE}
    assert migrate.current_revision(store.engine) == migrate.head_revision() == "0001"
    assert _schema_diffs(store.engine) == []
    indexes = {
        index["name"]
        for table in TABLE_NAMES
        for index in sa.inspect(store.engine).get_indexes(table)
    }
    assert {
        "ix_remote_log_segments_tp_start",
        "ix_remote_log_segments_tp_state",
        "ix_metadata_events_tp",
        "ix_metadata_events_segment_id",
    } <= indexes


def test_migrating_twice_is_a_no_op_that_keeps_data(tmp_path: Path) -> None:
    first = MetadataStore(db_url(tmp_path))
    first.register_topic(TOPIC, TOPIC_ID, actor="a", now_ms=NOW)
    first.close()
    second = MetadataStore(db_url(tmp_path))
    migrate.upgrade(second.engine)
    assert [t.name for t in second.topics()] == [TOPIC]
    assert migrate.current_revision(second.engine) == "0001"


def test_downgrade_then_upgrade(tmp_path: Path) -> None:
    engine = create_store_engine(db_url(tmp_path))
    migrate.upgrade(engine)
    migrate.downgrade(engine, "base")
    assert _tables(engine) == {VERSION_TABLE}
    assert migrate.current_revision(engine) is None
    migrate.upgrade(engine)
    assert migrate.current_revision(engine) == "0001"
    assert _schema_diffs(engine) == []


def test_migrate_false_leaves_an_empty_database_alone(tmp_path: Path) -> None:
    store = MetadataStore(db_url(tmp_path), migrate=False)
    assert _tables(store.engine) == set()


def test_sqlite_connections_get_wal_busy_timeout_and_foreign_keys(tmp_path: Path) -> None:
    store = MetadataStore(db_url(tmp_path))
    with store.engine.connect() as connection:
        pragma = connection.exec_driver_sql
        assert pragma("PRAGMA journal_mode").scalar() == "wal"
        assert pragma("PRAGMA busy_timeout").scalar() == 30_000
        assert pragma("PRAGMA foreign_keys").scalar() == 1


def test_the_migration_renders_for_postgresql(tmp_path: Path) -> None:
    """Offline mode: the same script produces PostgreSQL DDL (BIGSERIAL event ids)."""
    import io

    from alembic import command

    config = migrate.alembic_config("postgresql://tierflow@localhost/tierflow")
    buffer = io.StringIO()
    config.output_buffer = buffer
    command.upgrade(config, "head", sql=True)
    ddl = buffer.getvalue()
    assert "CREATE TABLE IF NOT EXISTS metadata_events" in ddl
    assert "id BIGSERIAL NOT NULL" in ddl
    assert f"CREATE TABLE {VERSION_TABLE}" in ddl
