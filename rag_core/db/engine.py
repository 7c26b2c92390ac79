"""Opening the database: an SQLAlchemy engine set up for the one it is, and one clear line when it cannot be used.

SQLite is opened by several processes (the app, the API's workers, the CLI): WAL lets readers go on while one
writes, a busy timeout makes a writer wait for another instead of failing at once, and foreign keys are on. A
write starts with BEGIN IMMEDIATE (`writing`), which takes the write lock at once: a deferred transaction that
reads and then writes can find the lock taken and fail, busy timeout or not. PostgreSQL's connections are checked
before use (`pool_pre_ping`), so a restarted server costs a reconnect, not an error.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy import event, exc
from sqlalchemy.engine import Connection, Engine

from ..errors import StoreError
from .url import shown, sqlalchemy_url

BUSY_TIMEOUT_S = 30.0  # how long an SQLite writer waits for another's lock
CONNECT_TIMEOUT_S = 10  # how long a PostgreSQL connection attempt may take
_IMMEDIATE = "rwb_begin_immediate"  # the execution option `writing` sets, read when SQLite begins


def engine(url: str) -> Engine:
    """An engine on `url` (postgresql:// or sqlite:///); nothing is connected yet. StoreError for another kind."""
    target = sa.make_url(sqlalchemy_url(url))
    if target.get_backend_name() == "sqlite":
        if target.database and target.database != ":memory:":
            Path(target.database).parent.mkdir(parents=True, exist_ok=True)
        made = sa.create_engine(target, connect_args={"timeout": BUSY_TIMEOUT_S, "check_same_thread": False})
        event.listen(made, "connect", _sqlite_connect)
        event.listen(made, "begin", _sqlite_begin)
        return made
    return sa.create_engine(target, pool_pre_ping=True, connect_args={"connect_timeout": CONNECT_TIMEOUT_S})


def where(engine: Engine) -> str:
    """The engine's database without credentials, for messages."""
    return shown(engine.url.render_as_string(hide_password=False))


def is_postgresql(engine: Engine) -> bool:
    return engine.dialect.name == "postgresql"


@contextmanager
def reaching(engine: Engine) -> Iterator[None]:
    """Turns a database that cannot be reached or used (refused, unknown host, bad password, locked, read-only)
    into one StoreError line naming it without its password."""
    try:
        yield
    except (exc.OperationalError, exc.InterfaceError) as error:
        raise StoreError(f"Cannot use the database {where(engine)}: {reason(error)}") from None


def reason(error: exc.DBAPIError) -> str:
    lines = [line.strip() for line in str(error.orig).splitlines() if line.strip()]
    return lines[0] if lines else type(error.orig).__name__


@contextmanager
def writing(engine: Engine) -> Iterator[Connection]:
    """A connection in a transaction that will write, committed at the end (BEGIN IMMEDIATE on SQLite)."""
    with engine.connect() as conn:
        conn.execution_options(**{_IMMEDIATE: True})
        with conn.begin():
            yield conn


def _sqlite_connect(dbapi_connection: sqlite3.Connection, _record: object) -> None:
    # pysqlite's own transaction handling would begin lazily and never BEGIN IMMEDIATE: take it over (the
    # SQLAlchemy documentation's recipe, "Serializable isolation / Savepoints / Transactional DDL").
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    for pragma in ("journal_mode=WAL", f"busy_timeout={int(BUSY_TIMEOUT_S * 1000)}", "foreign_keys=ON",
                   "synchronous=NORMAL"):
        cursor.execute(f"PRAGMA {pragma}")
    cursor.close()


def _sqlite_begin(conn: Connection) -> None:
    conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get(_IMMEDIATE) else "BEGIN")
