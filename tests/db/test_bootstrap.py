"""bootstrap.build_access_store: the SQL store on the data folder's SQLite file, or on PostgreSQL by database.url."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_core.access.records import Role
from rag_core.access.sql import SqlAccessStore
from rag_core.bootstrap import build_access_store
from rag_core.config import load_settings
from rag_core.db import migrate
from rag_core.db.engine import engine
from rag_core.errors import StoreError


def test_without_a_database_url_the_store_is_the_data_folders_sqlite_file(tmp_path: Path) -> None:
    store = build_access_store(load_settings(data_dir=tmp_path, env={}), env={})
    assert isinstance(store, SqlAccessStore) and store.where == f"sqlite:///{(tmp_path / 'team.db').resolve()}"
    _, token = store.create_user("ann", {"docs": Role.READER})
    store.close()
    again = build_access_store(load_settings(data_dir=tmp_path, env={}), env={})  # another process, later
    assert again.authenticate(token) is not None
    assert migrate.current(engine(f"sqlite:///{tmp_path / 'team.db'}")) == migrate.head()
    again.close()


def test_with_a_database_url_the_store_is_on_postgresql(tmp_path: Path, postgres_db: str) -> None:
    store = build_access_store(load_settings(data_dir=tmp_path, env={"RAG_DATABASE_URL": postgres_db}))
    assert store.where.startswith("postgresql+psycopg://***@127.0.0.1:")
    store.create_user("ann", {"docs": Role.READER})
    store.close()
    assert not (tmp_path / "team.db").exists()
    other = build_access_store(load_settings(data_dir=tmp_path, env={}), env={"RAG_DATABASE_URL": postgres_db})
    assert [u.name for u in other.users()] == ["ann"]
    other.close()


def test_a_database_that_cannot_be_used_is_one_line(tmp_path: Path) -> None:
    settings = load_settings(data_dir=tmp_path, env={}, overrides={"database.url": "mysql://ann:pw@db/team"})
    with pytest.raises(StoreError, match=r"^The database 'mysql://\*\*\*@db/team' is neither PostgreSQL"):
        build_access_store(settings)
