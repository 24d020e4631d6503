"""The store's fast check of its schema revision agrees with Alembic's: the packaged head is
Alembic's head, and a store reads as at head exactly when Alembic says it is."""

from __future__ import annotations

from pathlib import Path

from tierflow.metadata import migrate
from tierflow.metadata.engine import create_store_engine
from tierflow.metadata.schema_version import at_head, packaged_head, stored_revision
from tierflow.metadata.store import MetadataStore


def test_the_packaged_head_is_alembics() -> None:
    assert packaged_head() == migrate.head_revision()


def test_a_store_is_at_head_exactly_when_alembic_says_so(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    engine = create_store_engine(url)
    assert stored_revision(engine) is None and not at_head(engine)  # nothing migrated yet
    migrate.upgrade(engine, "0007")
    assert stored_revision(engine) == migrate.current_revision(engine) == "0007"
    assert not at_head(engine)
    MetadataStore(url)  # opening it migrates what is missing
    assert stored_revision(engine) == migrate.current_revision(engine) == packaged_head()
    assert at_head(engine)
