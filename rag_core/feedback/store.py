"""The turns store: every chat turn and its rating, in the data folder's SQLite file (`turns.db`), or in
PostgreSQL with the rest of the shared state when `database.url` is set (rag_core/db: the table is revision
0002_turns, run when the store is first used).

Why SQLite in WAL mode by default: the app, the HTTP service and the CLI may run at once on one data folder, and
each writes turns as they end. WAL lets readers read while one writer writes, `BEGIN IMMEDIATE` plus a busy timeout
serialises writers across processes (db/engine.py), and a transaction is on disk once `COMMIT` returns: a process
killed in the middle of a write loses that write only (SQLite rolls it back on the next open), never what was
committed before. On PostgreSQL an add holds a transaction-level advisory lock instead, so two API workers adding a
turn to one session at once number it one after the other. Connections come from the engine's pool: safe from any
thread.

Bounded: each write first deletes turns older than `feedback.retention-days` and the oldest beyond
`feedback.max-turns`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import exc
from sqlalchemy.engine import Connection, Engine, Row

from ..db.engine import engine, is_postgresql, writing
from ..db.migrate import upgrade
from ..db.tables import turns
from ..db.url import shown
from ..errors import FeedbackError, StoreError, TurnNotFound, TurnQueryError
from .records import Lookup, TurnRecord, now

FILE_NAME = "turns.db"
COMMENT_MAX = 2000
ADD_LOCK = 0x7277_6274_7572  # "rwbtur": PostgreSQL's advisory lock of adds (numbering and pruning)

_KB_FILTER = {  # a turn that searched knowledge base :kb, its list kept as JSON text
    "sqlite": "EXISTS (SELECT 1 FROM json_each(turns.knowledge_bases) WHERE value = :kb)",
    "postgresql": "EXISTS (SELECT 1 FROM json_array_elements_text(CAST(turns.knowledge_bases AS json)) AS kb(value) "
                  "WHERE kb.value = :kb)",
}


class TurnStore:
    def __init__(self, path: Path | str, *, retention_days: int = 90, max_turns: int = 100_000) -> None:
        """`path`: an SQLite file (made on first use), or a database URL (postgresql://..., sqlite:///...)."""
        text = str(path)
        self.url = text if "://" in text else f"sqlite:///{Path(path).as_posix()}"
        self.path = Path(path) if "://" not in text else None
        self.retention_days = retention_days
        self.max_turns = max_turns
        self._engine: Engine | None = None

    @property
    def where(self) -> str:
        return str(self.path) if self.path is not None else shown(self.url)

    def __repr__(self) -> str:
        return f"TurnStore({self.where!r})"

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None

    def _opened(self) -> Engine:
        if self._engine is None:
            try:
                made = engine(self.url)
                upgrade(made)
            except (OSError, StoreError) as error:
                hint = ("check the data folder (RAG_DATA_DIR) is writable" if self.path is not None
                        else "check database.url and that the server is up")
                raise FeedbackError(f"The turns store {self.where} cannot be opened ({error}); {hint}.") from None
            self._engine = made
        return self._engine

    @contextmanager
    def _connect(self, write: bool = False) -> Iterator[Connection]:
        eng = self._opened()
        try:
            with writing(eng) if write else eng.connect() as conn:
                yield conn
        except exc.SQLAlchemyError as error:
            reason = str(getattr(error, "orig", None) or error).strip().splitlines()[0]
            hint = " If the file is damaged, move it away: a new one is made." if self.path is not None else ""
            raise FeedbackError(f"The turns store {self.where} failed ({reason}).{hint}") from None

    # ------------------------------------------------------------------------------------------ writes
    def add(self, record: TurnRecord) -> TurnRecord:
        """Store a finished turn; returns it with its id and its index in its session (0, 1, ...)."""
        with self._connect(write=True) as conn:
            if is_postgresql(self._opened()):
                conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({ADD_LOCK})")
            self._prune(conn)
            index = conn.scalar(sa.select(sa.func.coalesce(sa.func.max(turns.c.turn_index) + 1, 0))
                                .where(turns.c.session_id == record.session_id))
            row_id = conn.scalar(sa.insert(turns).values(
                session_id=record.session_id, turn_index=index, trace_id=record.trace_id,
                created_at=record.created_at, question=record.question, answer=record.answer,
                knowledge_bases=_json(record.knowledge_bases), lookups=_json([lk.to_dict() for lk in record.lookups]),
                evidence_keys=_json(record.evidence_keys), citations=_json(record.citations), model=record.model,
                mode=record.mode, seconds=float(record.seconds), error=record.error,
                user_name=record.user_name).returning(turns.c.id))
        return replace(record, id=int(row_id or 0), turn_index=int(index or 0))

    def rate(self, rating: int, comment: str | None = None, *, trace_id: str | None = None,
             session_id: str | None = None, turn_index: int | None = None) -> TurnRecord:
        """Rate one turn (1 = 👍, -1 = 👎), found by its trace id or by session and turn index; a later rating
        replaces an earlier one. `comment` None keeps the turn's comment ("" removes it). Raises TurnNotFound."""
        if rating not in (1, -1):
            raise TurnQueryError(f"The rating must be 1 (up) or -1 (down), got {rating!r}.")
        which = self._which(trace_id, session_id, turn_index)
        kept_comment = turns.c.comment if comment is None else comment.strip()[:COMMENT_MAX]
        with self._connect(write=True) as conn:
            done = conn.execute(sa.update(turns).where(which).values(rating=rating, comment=kept_comment,
                                                                        rated_at=now()))
            if done.rowcount == 0:
                raise TurnNotFound(self._missing(trace_id, session_id, turn_index))
            row = conn.execute(sa.select(turns).where(which)).first()
        assert row is not None
        return _record(row)

    def _prune(self, conn: Connection) -> None:
        if self.retention_days:
            cutoff = (datetime.now(UTC) - timedelta(days=self.retention_days)).isoformat(timespec="milliseconds")
            conn.execute(sa.delete(turns).where(turns.c.created_at < cutoff))
        if self.max_turns:
            # Room for the one being added: keep max_turns - 1 of the others.
            oldest_kept = (sa.select(turns.c.id).order_by(turns.c.id.desc()).limit(1).offset(self.max_turns - 1)
                           .scalar_subquery())
            conn.execute(sa.delete(turns).where(turns.c.id <= oldest_kept))

    # ------------------------------------------------------------------------------------------- reads
    def get(self, *, trace_id: str | None = None, session_id: str | None = None,
            turn_index: int | None = None) -> TurnRecord:
        which = self._which(trace_id, session_id, turn_index)
        with self._connect() as conn:
            row = conn.execute(sa.select(turns).where(which)).first()
        if row is None:
            raise TurnNotFound(self._missing(trace_id, session_id, turn_index))
        return _record(row)

    def find(self, *, rating: int | None = None, rated: bool = False, kb: str | None = None,
             since: str | None = None, until: str | None = None, limit: int = 100,
             user: str | None = None) -> list[TurnRecord]:
        """Turns newest first. `rating`: only 👍 (1) or 👎 (-1); `rated`: only rated ones; `kb`: only turns that
        searched that knowledge base; `since`/`until`: ISO dates or times (UTC), `until` a date includes that day;
        `user`: only turns that person asked (TurnRecord.user_name)."""
        query = sa.select(turns).order_by(turns.c.created_at.desc(), turns.c.id.desc()).limit(max(1, int(limit)))
        if rating is not None:
            query = query.where(turns.c.rating == rating)
        elif rated:
            query = query.where(turns.c.rating.is_not(None))
        if since := parse_when(since, "since"):
            query = query.where(turns.c.created_at >= since)
        if until := parse_when(until, "until"):
            query = query.where(turns.c.created_at < _day_after(until))
        if user:
            query = query.where(turns.c.user_name == user.strip())
        eng = self._opened()
        if kb:
            query = query.where(sa.text(_KB_FILTER[eng.dialect.name]).bindparams(kb=kb))
        with self._connect() as conn:
            rows = conn.execute(query).all()
        return [_record(r) for r in rows]

    def count(self) -> int:
        with self._connect() as conn:
            return int(conn.scalar(sa.select(sa.func.count()).select_from(turns)) or 0)

    # ------------------------------------------------------------------------------------------------
    @staticmethod
    def _which(trace_id: str | None, session_id: str | None, turn_index: int | None) -> sa.ColumnElement[bool]:
        if trace_id and trace_id.strip():
            return turns.c.trace_id == trace_id.strip().lower()
        if session_id and turn_index is not None:
            return sa.and_(turns.c.session_id == session_id, turns.c.turn_index == int(turn_index))
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


def _record(row: Row) -> TurnRecord:
    return TurnRecord(
        session_id=row.session_id, question=row.question, answer=row.answer,
        knowledge_bases=tuple(json.loads(row.knowledge_bases)),
        lookups=tuple(Lookup.from_dict(d) for d in json.loads(row.lookups)),
        evidence_keys=tuple(json.loads(row.evidence_keys)), citations=tuple(json.loads(row.citations)),
        model=row.model, mode=row.mode, seconds=row.seconds, trace_id=row.trace_id, error=row.error,
        created_at=row.created_at, turn_index=row.turn_index, id=row.id, rating=row.rating,
        comment=row.comment, rated_at=row.rated_at, user_name=row.user_name)
