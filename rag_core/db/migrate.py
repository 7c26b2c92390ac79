"""The database's schema brought to the newest revision when a store opens: Alembic, run from here, no alembic.ini.

The revisions are hand-written files in migrations/versions/ (package data). Two processes opening at once (two
API workers, the app and a CLI) must not both migrate: the migration runs in one transaction that first takes a
lock, PostgreSQL's transaction-level advisory lock or SQLite's write lock (BEGIN IMMEDIATE), and the second
process, once it has the lock, finds the database at the newest revision and does nothing. A database already at
the newest revision costs one read and no lock.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from alembic.config import Config
from alembic.runtime.environment import EnvironmentContext
from alembic.runtime.migration import MigrationContext, MigrationInfo, RevisionStep
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection, Engine

from .engine import is_postgresql, reaching, writing

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
ADVISORY_LOCK = 0x7277_6264_6d69  # "rwbdmi": the advisory lock id of migrations on PostgreSQL


def scripts() -> ScriptDirectory:
    return ScriptDirectory(str(MIGRATIONS), version_locations=[str(MIGRATIONS / "versions")])


def head() -> str:
    """The newest revision."""
    newest = scripts().get_current_head()
    assert newest is not None, "no revision in rag_core/db/migrations/versions"
    return newest


def current(engine: Engine) -> str | None:
    """The revision the database is at (None: a new database)."""
    with reaching(engine), engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def upgrade(engine: Engine) -> list[str]:
    """Brings the database to the newest revision; the revisions applied (none when it was there already)."""
    newest = head()
    if current(engine) == newest:
        return []
    with reaching(engine), writing(engine) as conn:
        if is_postgresql(engine):
            conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({ADVISORY_LOCK})")
        return _run(conn, newest)


def _run(conn: Connection, destination: str) -> list[str]:
    script, applied = scripts(), []

    def steps(revision: str, _context: MigrationContext) -> list[RevisionStep]:
        return script._upgrade_revs(destination, revision)

    def done(ctx: MigrationContext, step: MigrationInfo, heads: Collection[Any], run_args: Mapping[str, Any]) -> None:
        applied.append(step.up_revision_id or "")

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with EnvironmentContext(config, script, fn=steps, destination_rev=destination) as env:
        env.configure(connection=conn, on_version_apply=done)
        env.run_migrations()
    return applied
