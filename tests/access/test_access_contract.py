"""The AccessStore contract on every adapter: the in-memory store, the SQL store on an SQLite file and on a real
PostgreSQL (tests/postgres.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from rag_core.access.memory import MemoryAccessStore
from rag_core.access.sql import SqlAccessStore
from rag_core.db.engine import engine
from tests.contracts.access import AccessStoreContract


def every_row(store: SqlAccessStore) -> str:
    """Every row of every table of the store's database, as text."""
    eng = store._engine
    tables = sa.MetaData()
    tables.reflect(eng)
    rows = []
    with eng.connect() as conn:
        for table in tables.sorted_tables:
            rows += [repr(tuple(row)) for row in conn.execute(table.select())]
    return "\n".join(rows)


class TestMemoryAccessStore(AccessStoreContract):
    @pytest.fixture
    def store(self) -> MemoryAccessStore:
        return MemoryAccessStore()

    @pytest.fixture
    def stored(self, store: MemoryAccessStore) -> Callable[[], str]:
        return lambda: repr(vars(store))


class TestSqliteAccessStore(AccessStoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[SqlAccessStore]:
        opened = SqlAccessStore(engine(f"sqlite:///{tmp_path / 'team.db'}"))
        yield opened
        opened.close()

    @pytest.fixture
    def stored(self, store: SqlAccessStore, tmp_path: Path) -> Callable[[], str]:
        def read() -> str:  # the rows, and the bytes of the file and its write-ahead log
            files = b"".join(p.read_bytes() for p in sorted(tmp_path.glob("team.db*")))
            return every_row(store) + "\n" + files.decode("latin-1")

        return read


class TestPostgresAccessStore(AccessStoreContract):
    @pytest.fixture
    def store(self, postgres_db: str) -> Iterator[SqlAccessStore]:
        opened = SqlAccessStore(engine(postgres_db))
        yield opened
        opened.close()

    @pytest.fixture
    def stored(self, store: SqlAccessStore) -> Callable[[], str]:
        return lambda: every_row(store)


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'team.db'}"
    return request.getfixturevalue("postgres_db")


def test_a_change_made_by_one_process_reaches_another_at_once(url: str) -> None:
    """Two API workers: nothing is cached, so a revoke, a new token or a role change in one holds in the other."""
    from rag_core.access.records import Role

    here, there = SqlAccessStore(engine(url)), SqlAccessStore(engine(url))
    _, token = here.create_user("ann", {"docs": Role.READER})
    assert there.authenticate(token) is not None
    here.set_user("ann", roles={"docs": Role.EDITOR})
    assert there.authenticate(token).can("docs", Role.EDITOR)
    fresh = there.new_token("ann")
    assert here.authenticate(token) is None and here.authenticate(fresh) is not None
    here.revoke("ann")
    assert there.authenticate(fresh) is None and there.principal("ann") is None
    here.close()
    there.close()
