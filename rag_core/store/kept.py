"""Where the records kept beside an index live: a knowledge base's chunk edits (store.edits) and document labels
(store.labels) are each one JSON document, read whole, changed, and written whole under the store's lock. A
`KeptDocument` is that document's place: a file in the data folder (`FileDocument`, without database.url), this
process's memory (`MemoryDocument`, stores that keep no files), or a row of the shared-state database's
`kept_records` table (store.kept_sql.SqlDocument, when database.url is set: API servers on several machines sharing
one Milvus server and one PostgreSQL see the same edits and tags).

A row is written whole in one transaction, so a reader sees the old document or the new one. When a row does not
exist yet but the data folder's file does, the file's content is taken into the row once (a team moving to
PostgreSQL loses nothing) and renamed `<name>.adopted`, so nothing reads it again.

What holds across machines: with a database, the store's lock (files.FileLock) also takes kept_sql.database_lock
after its flock, for its outermost `with` only: PostgreSQL's session advisory lock on one connection held for the
block (SQLite, one machine's file: a lock file beside the database file). So every read-modify-write of the
records, and a whole change held under the lock (begin, write the chunk row, finish: store.edits), runs alone
across every machine sharing the database, as it does across the processes of one data folder. Not guaranteed: a
holder whose database connection breaks loses the advisory lock with its session while it still runs (its next
write fails or lands after another's); reads outside the lock see the last committed document; and recovery on
another machine cannot tell whether a pending change's writer still runs, so it waits 6 hours before settling it
(store.milvus.writers).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol

from ..files import read_json_object, write_atomic

EDITS, LABELS = "edits", "labels"  # the kinds of record, a row each per knowledge base


class KeptDocument(Protocol):
    """One JSON object kept beside an index, read and written whole (changes are made under the store's lock)."""

    def read(self) -> dict[str, Any]:
        """The document ({} when there is none yet); a copy the caller may change."""
        ...

    def write(self, data: dict[str, Any]) -> None:
        """The whole document replaced, at once."""
        ...

    def remove(self) -> None:
        """The document gone (a dropped knowledge base)."""
        ...


def dumped(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, sort_keys=True)


class FileDocument:
    """The file in the data folder, replaced atomically (files.write_atomic). `damaged`: what a file that cannot be
    read holds and what to do ({path}, {exc})."""

    def __init__(self, path: Path, damaged: str) -> None:
        self.path = path
        self.damaged = damaged

    def read(self) -> dict[str, Any]:
        return read_json_object(self.path, self.damaged)

    def write(self, data: dict[str, Any]) -> None:
        write_atomic(self.path, dumped(data))

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


class MemoryDocument:
    """This process's memory (stores that keep no files)."""

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}

    def read(self) -> dict[str, Any]:
        return json.loads(json.dumps(self._data))

    def write(self, data: dict[str, Any]) -> None:
        self._data = json.loads(json.dumps(data))

    def remove(self) -> None:
        self._data = {}
