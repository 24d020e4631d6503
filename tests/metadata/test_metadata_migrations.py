"""The Alembic migration creates exactly the SQLModel schema, idempotently and reversibly,
on SQLite and on PostgreSQL (``store_url`` is an empty database of each)."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from tests.metadata.metadata_support import NOW, TOPIC, TOPIC_ID, sqlite_url
from tierflow.diskless.models import DISKLESS_TABLES
from tierflow.metadata import MetadataStore, migrate
from tierflow.metadata.engine import create_store_engine
from tierflow.metadata.models import DISKLESS_TABLE_NAMES, TABLE_NAMES, VERSION_TABLE

HEAD = "0011"
REVISIONS = ["0001", "0002", "0003", "0004", "0005", "0006", "0007", "0008", "0009", "0010", "0011"]


def _tables(engine: sa.Engine) -> set[str]:
    return set(sa.inspect(engine).get_table_names())


def test_upgrade_from_empty_creates_the_models_schema(store_url: str) -> None:
    store = MetadataStore(store_url)
    assert _tables(store.engine) == set(TABLE_NAMES) | {VERSION_TABLE}
    assert migrate.current_revision(store.engine) == migrate.head_revision() == HEAD
    assert migrate.schema_diffs(store.engine) == []
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


def test_migrating_twice_is_a_no_op_that_keeps_data(store_url: str) -> None:
    first = MetadataStore(store_url)
    first.register_topic(TOPIC, TOPIC_ID, actor="a", now_ms=NOW)
    first.close()
    second = MetadataStore(store_url)
    migrate.upgrade(second.engine)
    assert [t.name for t in second.topics()] == [TOPIC]
    assert migrate.current_revision(second.engine) == HEAD


def test_downgrade_then_upgrade(store_url: str) -> None:
    engine = create_store_engine(store_url)
    migrate.upgrade(engine)
    assert migrate.schema_diffs(engine) == []
    migrate.downgrade(engine, "base")
    assert _tables(engine) == {VERSION_TABLE}
    assert migrate.current_revision(engine) is None
    migrate.upgrade(engine)
    assert migrate.current_revision(engine) == HEAD
    assert migrate.schema_diffs(engine) == []
    engine.dispose()


def test_every_revision_steps_up_and_down_keeping_data(store_url: str) -> None:
    """One revision at a time, down to the first and up again, with a row in every table that
    0002 alters (written at the head: the models are the head's)."""
    engine = create_store_engine(store_url)
    migrate.upgrade(engine)
    with MetadataStore(store_url, migrate=False) as store:
        store.register_topic(TOPIC, TOPIC_ID, actor="a", now_ms=NOW)
        store.ensure_partition(TOPIC_ID, 0, log_start_offset=0, local_log_start_offset=0)
        store.acquire_lease(TOPIC_ID, 0, "owner", now_ms=NOW, ttl_ms=1)
    for revision in reversed(REVISIONS[:-1]):
        migrate.downgrade(engine, revision)
        assert migrate.current_revision(engine) == revision
    for revision in REVISIONS[1:]:
        migrate.upgrade(engine, revision)
        assert migrate.current_revision(engine) == revision
    with MetadataStore(store_url, migrate=False) as store:
        assert store.partition(TOPIC_ID, 0).lease_owner == "owner"
        assert [e.actor for e in store.events(topic_id=TOPIC_ID)] == ["a", "tierflow"]
        assert not store.topic(TOPIC).iceberg_export, "0004's default for every older topic"
        assert store.topic(TOPIC).cleanup_policy == "delete", "0005's, likewise"
        assert store.topic(TOPIC).min_cleanable_dirty_ratio == 0.5, "0006's, Kafka's default"
        assert store.partition(TOPIC_ID, 0).remote_cleaned_offset == -1
    assert migrate.schema_diffs(engine) == []
    engine.dispose()


def test_schema_diffs_sees_a_missing_index(store_url: str) -> None:
    """The comparison the tests rely on does find differences."""
    engine = create_store_engine(store_url)
    migrate.upgrade(engine)
    with engine.begin() as connection:
        connection.exec_driver_sql("DROP INDEX ix_metadata_events_segment_id")
    assert [diff[0] for diff in migrate.schema_diffs(engine)] == ["add_index"]
    engine.dispose()


def test_migrate_false_leaves_an_empty_database_alone(store_url: str) -> None:
    store = MetadataStore(store_url, migrate=False)
    assert _tables(store.engine) == set()


def test_sqlite_connections_get_wal_busy_timeout_and_foreign_keys(tmp_path: Path) -> None:
    store = MetadataStore(sqlite_url(tmp_path))
    with store.engine.connect() as connection:
        pragma = connection.exec_driver_sql
        assert pragma("PRAGMA journal_mode").scalar() == "wal"
        assert pragma("PRAGMA busy_timeout").scalar() == 30_000
        assert pragma("PRAGMA foreign_keys").scalar() == 1


def test_postgresql_connections_read_committed_whatever_the_server_default(
    postgres_url: str,
) -> None:
    """Conditional UPDATEs rely on READ COMMITTED: a server defaulting to SERIALIZABLE would
    turn every lost race into a serialization failure."""
    admin = create_store_engine(postgres_url)
    database = admin.url.database
    with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.exec_driver_sql(
            f"ALTER DATABASE \"{database}\" SET default_transaction_isolation = 'serializable'"
        )
    admin.dispose()
    store = MetadataStore(postgres_url)
    with store.engine.connect() as connection:
        show = connection.exec_driver_sql
        assert show("SHOW default_transaction_isolation").scalar() == "serializable"
        assert show("SHOW transaction_isolation").scalar() == "read committed"
    store.close()


def test_the_migration_renders_for_postgresql() -> None:
    """Offline mode: the same scripts produce PostgreSQL DDL (BIGSERIAL event ids, 0002's
    wider columns)."""
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
    assert "ALTER TABLE topics ALTER COLUMN name TYPE VARCHAR(512)" in ddl
    assert "ALTER TABLE metadata_events ALTER COLUMN actor TYPE TEXT" in ddl


def test_the_schema_names_the_diskless_tables_its_migrations_create() -> None:
    """metadata knows the diskless tables by name only; the names must be the models' names."""
    assert {str(model.__tablename__) for model in DISKLESS_TABLES} == DISKLESS_TABLE_NAMES
