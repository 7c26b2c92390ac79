"""The records kept beside an index in the shared-state database (see store.kept, whose module docstring says what
holds across machines): a knowledge base's chunk edits and labels as rows of `kept_records`, and the lock its store
takes there."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import exc
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine

from ..db.engine import is_postgresql, reaching, writing
from ..db.tables import kept_records
from ..errors import StoreError
from ..files import FileLock, read_json_object
from .kept import dumped


class SqlDocument:
    """The row (`collection`, `kind`) of `kept_records` in the shared-state database. `adopt`: the data folder's file
    whose content the row takes when it has none yet (see the module docstring)."""

    def __init__(self, engine: Engine, collection: str, kind: str, adopt: Path | None = None,
                 damaged: str = "") -> None:
        self._engine = engine
        self.collection = collection
        self.kind = kind
        self.adopt = adopt
        self.damaged = damaged
        self._where = (kept_records.c.collection == collection) & (kept_records.c.kind == kind)

    def read(self) -> dict[str, Any]:
        with reaching(self._engine), self._engine.connect() as conn:
            text = conn.execute(sa.select(kept_records.c.document).where(self._where)).scalar()
        if text is None and self.adopt is not None and self.adopt.is_file():
            text = self._adopted()
        if text is None:
            return {}
        try:
            data = json.loads(text)
        except ValueError as error:
            raise StoreError(f"The {self.kind} of knowledge base {self.collection!r} in the database cannot be read "
                             f"({error}); set them again.") from None
        return data if isinstance(data, dict) else {}

    def _adopted(self) -> str | None:
        """The file's content made the row's, unless a row appeared meanwhile (another process adopted first); the
        file adopted is renamed `<name>.adopted`, so nothing reads it again (a rebuild from the kept originals)."""
        assert self.adopt is not None
        text = dumped(read_json_object(self.adopt, self.damaged))
        with reaching(self._engine), writing(self._engine) as conn:
            won = conn.execute(_insert(self._engine).values(collection=self.collection, kind=self.kind, document=text,
                                                            updated_at=_now()).on_conflict_do_nothing()).rowcount
            found: str | None = conn.execute(sa.select(kept_records.c.document).where(self._where)).scalar()
        if won:
            with contextlib.suppress(FileNotFoundError):
                os.replace(self.adopt, adopted(self.adopt))
        return found

    def write(self, data: dict[str, Any]) -> None:
        text = dumped(data)
        row = _insert(self._engine).values(collection=self.collection, kind=self.kind, document=text,
                                           updated_at=_now())
        upsert = row.on_conflict_do_update(index_elements=["collection", "kind"],
                                           set_={"document": text, "updated_at": row.excluded.updated_at})
        with reaching(self._engine), writing(self._engine) as conn:
            conn.execute(upsert)

    def remove(self) -> None:
        with reaching(self._engine), writing(self._engine) as conn:
            conn.execute(sa.delete(kept_records).where(self._where))
        if self.adopt is not None:  # else it would be taken in again
            self.adopt.unlink(missing_ok=True)
            adopted(self.adopt).unlink(missing_ok=True)


def adopted(path: Path) -> Path:
    """Where a file taken into the database is kept afterwards."""
    return path.with_name(f"{path.name}.adopted")


def _insert(engine: Engine) -> Any:
    return (postgresql.insert if is_postgresql(engine) else sqlite.insert)(kept_records)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def database_lock(engine: Engine, collection: str) -> Callable[[bool], AbstractContextManager[bool]]:
    """The lock of `collection`'s records in the database, for files.FileLock's `beyond` (see the module docstring):
    `lock(wait)` is a context manager yielding whether it was taken (`wait` False: False at once when another holds
    it)."""
    if not is_postgresql(engine):
        database = Path(engine.url.database or "")
        return FileLock(database.parent / f".{database.name}.{collection}.kept.lock")
    key = int.from_bytes(hashlib.sha256(f"rag-kept:{collection}".encode()).digest()[:8], "big", signed=True)

    @contextmanager
    def advisory(wait: bool = True) -> Iterator[bool]:
        with reaching(engine):
            conn = engine.connect()
        try:
            with reaching(engine):
                if wait:
                    conn.execute(sa.text("SELECT pg_advisory_lock(:key)"), {"key": key})
                    got = True
                else:
                    got = bool(conn.execute(sa.text("SELECT pg_try_advisory_lock(:key)"), {"key": key}).scalar())
                conn.commit()  # a session lock: it stays, the connection is not left inside a transaction
            if not got:
                yield False
                return
            try:
                yield True
            finally:
                try:
                    conn.execute(sa.text("SELECT pg_advisory_unlock(:key)"), {"key": key})
                    conn.commit()
                except exc.DBAPIError:  # the session is gone, and its lock with it
                    conn.invalidate()
        finally:
            conn.close()
    return advisory


_engines: dict[str, Engine] = {}
_engines_guard = threading.Lock()


def kept_engine(url: str) -> Engine:
    """One engine per database for every store of this process, its schema brought to the newest revision once."""
    from ..db.engine import engine
    from ..db.migrate import upgrade

    with _engines_guard:
        if url not in _engines:
            made = engine(url)
            upgrade(made)
            _engines[url] = made
        return _engines[url]
