"""The turns store: every chat turn and its rating, in one SQLite file under the data folder (`turns.db`).

Why SQLite in WAL mode: the app, the HTTP service and the CLI may run at once on one data folder, and each
writes turns as they end. WAL lets readers read while one writer writes, `BEGIN IMMEDIATE` plus a busy timeout
serialises writers across processes, and a transaction is on disk once `COMMIT` returns: a process killed
in the middle of a write loses that write only (SQLite rolls it back on the next open), never what was
committed before. A connection is opened per operation: cheap next to a chat turn, and safe from any thread.

Bounded: each write first deletes turns older than `feedback.retention-days` and the oldest beyond
`feedback.max-turns`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ..errors import FeedbackError, TurnNotFound, TurnQueryError
from .records import Lookup, TurnRecord, now

FILE_NAME = "turns.db"
BUSY_TIMEOUT_S = 10.0
COMMENT_MAX = 2000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS turns (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    turn_index INTEGER NOT NULL,
    trace_id TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    question TEXT NOT NULL,
    answer TEXT NOT NULL,
    knowledge_bases TEXT NOT NULL DEFAULT '[]',
    lookups TEXT NOT NULL DEFAULT '[]',
    evidence_keys TEXT NOT NULL DEFAULT '[]',
    citations TEXT NOT NULL DEFAULT '[]',
    model TEXT NOT NULL DEFAULT '',
    mode TEXT NOT NULL DEFAULT '',
    seconds REAL NOT NULL DEFAULT 0,
    error TEXT,
    rating INTEGER,
    comment TEXT NOT NULL DEFAULT '',
    rated_at TEXT,
    UNIQUE (session_id, turn_index)
);
CREATE INDEX IF NOT EXISTS turns_trace ON turns (trace_id);
CREATE INDEX IF NOT EXISTS turns_created ON turns (created_at);
CREATE INDEX IF NOT EXISTS turns_rating ON turns (rating, created_at);
"""


class TurnStore:
    def __init__(self, path: Path, *, retention_days: int = 90, max_turns: int = 100_000) -> None:
        self.path = Path(path)
        self.retention_days = retention_days
        self.max_turns = max_turns
        self._ready = False

    def __repr__(self) -> str:
        return f"TurnStore({str(self.path)!r})"

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        try:
            if not self._ready:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise FeedbackError(f"The turns store {self.path} cannot be opened ({exc}); check the data folder "
                                "(RAG_DATA_DIR) is writable.") from None
        try:
            conn.row_factory = sqlite3.Row
            if not self._ready:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.executescript(_SCHEMA)
                self._ready = True
            conn.execute("PRAGMA synchronous=NORMAL")  # in WAL mode: a commit survives the process being killed
            yield conn
        except sqlite3.Error as exc:
            raise FeedbackError(f"The turns store {self.path} failed ({exc}). If the file is damaged, move it "
                                "away: a new one is made.") from None
        finally:
            conn.close()

    # ------------------------------------------------------------------------------------------ writes
    def add(self, record: TurnRecord) -> TurnRecord:
        """Store a finished turn; returns it with its id and its index in its session (0, 1, ...)."""
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                self._prune(conn)
                (index,) = conn.execute("SELECT COALESCE(MAX(turn_index) + 1, 0) FROM turns WHERE session_id = ?",
                                        (record.session_id,)).fetchone()
                cursor = conn.execute(
                    "INSERT INTO turns (session_id, turn_index, trace_id, created_at, question, answer, "
                    "knowledge_bases, lookups, evidence_keys, citations, model, mode, seconds, error) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (record.session_id, index, record.trace_id, record.created_at, record.question, record.answer,
                     _json(record.knowledge_bases), _json([lk.to_dict() for lk in record.lookups]),
                     _json(record.evidence_keys), _json(record.citations), record.model, record.mode,
                     float(record.seconds), record.error))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        from dataclasses import replace

        return replace(record, id=int(cursor.lastrowid or 0), turn_index=int(index))

    def rate(self, rating: int, comment: str | None = None, *, trace_id: str | None = None,
             session_id: str | None = None, turn_index: int | None = None) -> TurnRecord:
        """Rate one turn (1 = 👍, -1 = 👎), found by its trace id or by session and turn index; a later rating
        replaces an earlier one. `comment` None keeps the turn's comment ("" removes it). Raises TurnNotFound."""
        if rating not in (1, -1):
            raise TurnQueryError(f"The rating must be 1 (up) or -1 (down), got {rating!r}.")
        where, args = self._which(trace_id, session_id, turn_index)
        with self._connect() as conn:
            cursor = conn.execute(f"UPDATE turns SET rating = ?, comment = COALESCE(?, comment), rated_at = ? "
                                  f"WHERE {where}",
                                  (rating, None if comment is None else comment.strip()[:COMMENT_MAX], now(), *args))
            if cursor.rowcount == 0:
                raise TurnNotFound(self._missing(trace_id, session_id, turn_index))
            row = conn.execute(f"SELECT * FROM turns WHERE {where}", args).fetchone()
        return _record(row)

    def _prune(self, conn: sqlite3.Connection) -> None:
        if self.retention_days:
            cutoff = (datetime.now(UTC) - timedelta(days=self.retention_days)).isoformat(timespec="milliseconds")
            conn.execute("DELETE FROM turns WHERE created_at < ?", (cutoff,))
        if self.max_turns:
            # Room for the one being added: keep max_turns - 1 of the others.
            conn.execute("DELETE FROM turns WHERE id <= (SELECT id FROM turns ORDER BY id DESC LIMIT 1 OFFSET ?)",
                         (self.max_turns - 1,))

    # ------------------------------------------------------------------------------------------- reads
    def get(self, *, trace_id: str | None = None, session_id: str | None = None,
            turn_index: int | None = None) -> TurnRecord:
        where, args = self._which(trace_id, session_id, turn_index)
        with self._connect() as conn:
            row = conn.execute(f"SELECT * FROM turns WHERE {where}", args).fetchone()
        if row is None:
            raise TurnNotFound(self._missing(trace_id, session_id, turn_index))
        return _record(row)

    def find(self, *, rating: int | None = None, rated: bool = False, kb: str | None = None,
             since: str | None = None, until: str | None = None, limit: int = 100) -> list[TurnRecord]:
        """Turns newest first. `rating`: only 👍 (1) or 👎 (-1); `rated`: only rated ones; `kb`: only turns that
        searched that knowledge base; `since`/`until`: ISO dates or times (UTC), `until` a date includes that day."""
        clauses: list[str] = []
        args: list[Any] = []
        if rating is not None:
            clauses.append("rating = ?")
            args.append(rating)
        elif rated:
            clauses.append("rating IS NOT NULL")
        if kb:
            clauses.append("EXISTS (SELECT 1 FROM json_each(turns.knowledge_bases) WHERE value = ?)")
            args.append(kb)
        if since := parse_when(since, "since"):
            clauses.append("created_at >= ?")
            args.append(since)
        if until := parse_when(until, "until"):
            clauses.append("created_at < ?")
            args.append(_day_after(until))
        where = " AND ".join(clauses) or "1"
        with self._connect() as conn:
            rows = conn.execute(f"SELECT * FROM turns WHERE {where} ORDER BY created_at DESC, id DESC LIMIT ?",
                                (*args, max(1, int(limit)))).fetchall()
        return [_record(r) for r in rows]

    def count(self) -> int:
        with self._connect() as conn:
            return int(conn.execute("SELECT COUNT(*) FROM turns").fetchone()[0])

    # ------------------------------------------------------------------------------------------------
    @staticmethod
    def _which(trace_id: str | None, session_id: str | None, turn_index: int | None) -> tuple[str, tuple[Any, ...]]:
        if trace_id and trace_id.strip():
            return "trace_id = ?", (trace_id.strip().lower(),)
        if session_id and turn_index is not None:
            return "session_id = ? AND turn_index = ?", (session_id, int(turn_index))
        raise TurnQueryError("Name the turn by its trace id (`feedback list` shows them), or by its session id and "
                             "turn index.")

    @staticmethod
    def _missing(trace_id: str | None, session_id: str | None, turn_index: int | None) -> str:
        if trace_id:
            return f"No recorded turn has trace id {trace_id!r} (turns are kept feedback.retention-days)."
        return (f"Session {session_id!r} has no recorded turn {turn_index} (turns count from 0; "
                "`python -m rag_core feedback list` shows them).")


def _json(value: Any) -> str:
    return json.dumps(list(value), ensure_ascii=False)


def parse_when(value: str | None, name: str) -> str | None:
    """A `since` / `until` bound as the turns are stored: a date (2026-12-01) as it is, a time in UTC (naive: UTC);
    None when not given. TurnQueryError, naming `name` and the accepted forms, for anything else."""
    text = (value or "").strip()
    if not text:
        return None
    try:
        if len(text) == 10:
            return datetime.strptime(text, "%Y-%m-%d").date().isoformat()
        moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise TurnQueryError(f"{name}={value!r} is not a date or a time: use ISO 8601, e.g. 2026-12-01 or "
                             "2026-12-01T08:30:00Z (UTC when no offset is given).") from None
    moment = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="milliseconds")


def _day_after(value: str) -> str:
    """`until` as an exclusive bound: a bare date (2026-12-01) means the whole of that day."""
    if len(value) == 10:
        try:
            return (datetime.fromisoformat(value) + timedelta(days=1)).date().isoformat()
        except ValueError:
            return value
    return value


def _record(row: sqlite3.Row) -> TurnRecord:
    return TurnRecord(
        session_id=row["session_id"], question=row["question"], answer=row["answer"],
        knowledge_bases=tuple(json.loads(row["knowledge_bases"])),
        lookups=tuple(Lookup.from_dict(d) for d in json.loads(row["lookups"])),
        evidence_keys=tuple(json.loads(row["evidence_keys"])), citations=tuple(json.loads(row["citations"])),
        model=row["model"], mode=row["mode"], seconds=row["seconds"], trace_id=row["trace_id"], error=row["error"],
        created_at=row["created_at"], turn_index=row["turn_index"], id=row["id"], rating=row["rating"],
        comment=row["comment"], rated_at=row["rated_at"])
