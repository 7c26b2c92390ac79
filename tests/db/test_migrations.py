"""The database layer (rag_core/db): which database, opening it, and the migrations run to the newest revision on
SQLite and on a real PostgreSQL, once, even when several processes open it at once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from rag_core.config import load_settings
from rag_core.db import migrate
from rag_core.db.engine import engine, where
from rag_core.db.tables import metadata
from rag_core.db.url import database_url
from rag_core.errors import StoreError
from tests.postgres import free_port

ROOT = Path(__file__).resolve().parents[2]
REVISIONS = ["0001_access", "0002_turns", "0003_test_sets", "0004_eval_runs", "0005_turn_user",
             "0006_kept_records"]  # oldest first


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'team.db'}"
    return request.getfixturevalue("postgres_db")


def test_the_default_database_is_the_data_folders_sqlite_file(tmp_path: Path) -> None:
    settings = load_settings(data_dir=tmp_path, env={})
    assert database_url(settings) == f"sqlite:///{(tmp_path / 'team.db').resolve().as_posix()}"
    assert database_url(settings, {"RAG_DATABASE_URL": "postgresql://u:p@db/x"}) == "postgresql://u:p@db/x"
    assert database_url(load_settings(data_dir=tmp_path, env={"RAG_DATABASE_URL": "postgresql://u:p@h/db"})) \
        == "postgresql://u:p@h/db"
    set_here = load_settings(data_dir=tmp_path, env={}, overrides={"database.url": "postgresql://h/a"})
    assert database_url(set_here, {"RAG_DATABASE_URL": "postgresql://h/b"}) == "postgresql://h/a"


def test_a_database_of_another_kind_is_one_line_without_its_password() -> None:
    with pytest.raises(StoreError) as caught:
        engine("mysql://ann:s3cret@db.example/team")
    message = str(caught.value)
    assert "s3cret" not in message and "mysql://***@db.example/team" in message and "\n" not in message
    assert "postgresql://" in message
    with pytest.raises(StoreError, match="neither PostgreSQL"):
        engine("team.db")


def test_a_server_that_cannot_be_reached_is_one_line_without_its_password() -> None:
    port = free_port()  # nothing listens there
    unreachable = engine(f"postgresql://ann:s3cret@127.0.0.1:{port}/team?sslmode=disable")
    with pytest.raises(StoreError) as caught:
        migrate.upgrade(unreachable)
    message = str(caught.value)
    assert message.startswith(f"Cannot use the database postgresql+psycopg://***@127.0.0.1:{port}/team")
    assert "s3cret" not in message and "\n" not in message
    assert "s3cret" not in where(unreachable)


def test_sqlite_is_opened_for_several_processes(tmp_path: Path) -> None:
    eng = engine(f"sqlite:///{tmp_path / 'sub' / 'team.db'}")  # the folder is made
    with eng.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() >= 10_000


def test_migrations_run_to_head_once(url: str) -> None:
    eng = engine(url)
    assert migrate.current(eng) is None
    assert migrate.upgrade(eng) == REVISIONS and migrate.head() == REVISIONS[-1]
    assert migrate.current(eng) == migrate.head()
    assert migrate.upgrade(eng) == []  # a second open does nothing
    assert migrate.upgrade(engine(url)) == [] and migrate.current(eng) == migrate.head()
    with eng.connect() as conn:
        assert conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalars().all() == [migrate.head()]
    eng.dispose()


def test_the_migrated_schema_is_exactly_the_tables_the_stores_query(url: str) -> None:
    eng = engine(url)
    migrate.upgrade(eng)
    with eng.connect() as conn:
        differences = compare_metadata(MigrationContext.configure(conn), metadata)
    assert differences == []
    eng.dispose()


def test_processes_opening_a_new_database_at_once_migrate_it_once(url: str) -> None:
    code = ("import sys; from rag_core.db import migrate; from rag_core.db.engine import engine; "
            "print(','.join(migrate.upgrade(engine(sys.argv[1]))))")
    runs = [subprocess.Popen([sys.executable, "-c", code, url], cwd=ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outputs = [run.communicate(timeout=300) for run in runs]
    assert [run.returncode for run in runs] == [0, 0, 0], [err for _, err in outputs]
    assert sorted(out.strip() for out, _ in outputs) == ["", "", ",".join(REVISIONS)]
    assert migrate.current(engine(url)) == migrate.head()


def test_without_postgresql_installed_the_tests_say_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import tests.postgres

    monkeypatch.setattr(tests.postgres.glob, "glob", lambda pattern: [])
    with pytest.raises(RuntimeError, match="`apt-get install postgresql`"):
        tests.postgres.binaries()


def test_long_texts_are_kept_on_every_database(url: str) -> None:
    from rag_core.access.records import AuditEvent, Role
    from rag_core.access.sql import SqlAccessStore

    store = SqlAccessStore(engine(url))
    long_kb, long_user = "k" * 500, "proxy-user-" + "x" * 300
    store.create_user("ann", {long_kb: Role.READER})
    store.record(AuditEvent(long_user, "documents." + "a" * 200, long_kb, "t" * 5000, {"n": 1}))
    assert store.user("ann").roles == {long_kb: Role.READER}
    assert store.audit(user=long_user)[0].target == "t" * 5000
    store.close()
