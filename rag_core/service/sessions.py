"""Chat sessions of the HTTP API: the chat page's history window, held for many clients at once.

A session keeps the last `chat.history-pairs` (6) answered question/answer pairs, like the chat page and
the seed; older pairs are dropped, so memory per session is bounded. The number of sessions is bounded
too (`api.max-sessions`): the least recently used one is dropped first. Sessions belong to a user
(`UserId` / `X-User-Id`, default "default_user"), so two users cannot read each other's history by id.
Everything here is called from worker threads and the event loop at once, hence the locks.

One API process keeps them in its memory (SessionStore). Several (`serve --workers N`) keep them in the shared
state's database (SharedSessionStore, the `chat_sessions` table of rag_core.db): a session's next turn may reach
another worker, which reads the history from there; a turn is written there when it ends, in one transaction
that appends it to what the row holds then, so two workers answering one session at once lose neither turn.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from ..agent.session import Session, Turn

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

DEFAULT_USER = "default_user"


class ServiceSession(Session):
    """A Session safe to use from several threads that keeps only the last `pairs` answered turns."""

    def __init__(self, session_id: str, pairs: int) -> None:
        super().__init__(session_id)
        self.pairs = pairs
        self.created_ms = int(time.time() * 1000)
        self._lock = threading.Lock()

    def add(self, turn: Turn) -> None:
        with self._lock:
            self.turns.append(turn)
            self.turns = [t for t in self.turns if t.answer.strip()][-self.pairs:] if self.pairs > 0 else []

    def clear(self) -> None:
        with self._lock:
            self.turns = []

    def window(self, pairs: int) -> list[Turn]:
        with self._lock:
            return super().window(pairs)

    def snapshot(self) -> list[Turn]:
        with self._lock:
            return list(self.turns)


class Sessions(Protocol):
    """Where the service keeps its chat sessions: in this process (SessionStore) or shared (SharedSessionStore)."""

    def __len__(self) -> int: ...

    def get(self, user: str, session_id: str) -> ServiceSession | None: ...

    def get_or_create(self, user: str, session_id: str | None) -> ServiceSession: ...


class SessionStore:
    def __init__(self, max_sessions: int, pairs: int) -> None:
        self.max_sessions = max_sessions
        self.pairs = pairs
        self._sessions: OrderedDict[tuple[str, str], ServiceSession] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def get(self, user: str, session_id: str) -> ServiceSession | None:
        with self._lock:
            session = self._sessions.get((user, session_id))
            if session is not None:
                self._sessions.move_to_end((user, session_id))
            return session

    def get_or_create(self, user: str, session_id: str | None) -> ServiceSession:
        """The session, created when new (a new random id when none is given)."""
        sid = session_id or uuid.uuid4().hex
        with self._lock:
            session = self._sessions.get((user, sid))
            if session is None:
                session = self._sessions[(user, sid)] = ServiceSession(sid, self.pairs)
                while len(self._sessions) > self.max_sessions:
                    self._sessions.popitem(last=False)
            else:
                self._sessions.move_to_end((user, sid))
            return session


# ---------------------------------------------------------------------------------------- shared by workers
def turn_json(turn: Turn) -> dict[str, Any]:
    return {**dataclasses.asdict(turn), "citations": list(turn.citations)}


def turn_from_json(data: dict[str, Any]) -> Turn:
    names = {f.name for f in dataclasses.fields(Turn)}
    values = {k: v for k, v in data.items() if k in names}
    return Turn(**{**values, "citations": tuple(values.get("citations") or ())})


def _lock_id(user: str, session_id: str) -> int:
    """PostgreSQL's advisory lock id of one session (a signed 64-bit number)."""
    digest = hashlib.blake2b(json.dumps([user, session_id]).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


class SharedSession(ServiceSession):
    """A session whose turns live in the database: read when the session is got, written as each turn ends."""

    def __init__(self, session_id: str, pairs: int, user: str, store: SharedSessionStore, turns: list[Turn]) -> None:
        super().__init__(session_id, pairs)
        self.user, self.store = user, store
        self.turns = turns
        if turns:
            self.created_ms = int(datetime.fromisoformat(turns[0].created_at).timestamp() * 1000)

    def add(self, turn: Turn) -> None:
        kept = self.store.append(self.user, self.id, turn)
        with self._lock:
            self.turns = kept

    def clear(self) -> None:
        self.store.write(self.user, self.id, [])
        with self._lock:
            self.turns = []


class SharedSessionStore:
    """Chat sessions in the `chat_sessions` table (rag_core.db): every API worker reads and writes the same rows.
    At most `max_sessions` rows: making one beyond drops the least recently updated."""

    def __init__(self, engine: Engine, max_sessions: int, pairs: int) -> None:
        from ..db.migrate import upgrade

        self.engine, self.max_sessions, self.pairs = engine, max_sessions, pairs
        upgrade(engine)  # the table exists once this returns (a new database is made here)

    def close(self) -> None:
        self.engine.dispose()

    def __len__(self) -> int:
        import sqlalchemy as sa

        from ..db.engine import reaching
        from ..db.tables import chat_sessions

        with reaching(self.engine), self.engine.connect() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(chat_sessions)).scalar_one())

    def _read(self, conn: Any, user: str, session_id: str) -> list[Turn] | None:
        import sqlalchemy as sa

        from ..db.tables import chat_sessions

        row = conn.execute(sa.select(chat_sessions.c.turns).where(chat_sessions.c.user_name == user,
                                                                  chat_sessions.c.session_id == session_id)).first()
        return None if row is None else [turn_from_json(t) for t in json.loads(row[0])]

    def get(self, user: str, session_id: str) -> ServiceSession | None:
        from ..db.engine import reaching

        with reaching(self.engine), self.engine.connect() as conn:
            turns = self._read(conn, user, session_id)
        return None if turns is None else SharedSession(session_id, self.pairs, user, self, turns)

    def get_or_create(self, user: str, session_id: str | None) -> ServiceSession:
        """The session, created (an empty row) when new (a new random id when none is given)."""
        sid = session_id or uuid.uuid4().hex
        found = self.get(user, sid) if session_id else None
        if found is not None:
            return found
        self._change(user, sid, lambda turns: turns or [])
        return SharedSession(sid, self.pairs, user, self, [])

    def append(self, user: str, session_id: str, turn: Turn) -> list[Turn]:
        """Adds `turn` to what the row holds now, keeps the last `pairs` answered ones; returns them."""
        def kept(turns: list[Turn] | None) -> list[Turn]:
            turns = [*(turns or []), turn]
            return [t for t in turns if t.answer.strip()][-self.pairs:] if self.pairs > 0 else []

        return self._change(user, session_id, kept)

    def write(self, user: str, session_id: str, turns: list[Turn]) -> None:
        self._change(user, session_id, lambda _old: turns)

    def _change(self, user: str, session_id: str, change: Callable[[list[Turn] | None], list[Turn]]) -> list[Turn]:
        """Read the row, `change` its turns, write it, in one write transaction (made when missing)."""
        import sqlalchemy as sa

        from ..db.engine import is_postgresql, reaching, writing
        from ..db.tables import chat_sessions

        where = (chat_sessions.c.user_name == user, chat_sessions.c.session_id == session_id)
        with reaching(self.engine), writing(self.engine) as conn:
            if is_postgresql(self.engine):  # one writer per session at a time (SQLite: BEGIN IMMEDIATE did it)
                conn.execute(sa.select(sa.func.pg_advisory_xact_lock(_lock_id(user, session_id))))
            old = self._read(conn, user, session_id)
            turns = change(old)
            text = json.dumps([turn_json(t) for t in turns], ensure_ascii=False)
            if old is None:
                conn.execute(sa.insert(chat_sessions).values(user_name=user, session_id=session_id, turns=text,
                                                             updated_at=_now()))
                self._prune(conn)
            else:
                conn.execute(sa.update(chat_sessions).where(*where).values(turns=text, updated_at=_now()))
        return turns

    def _prune(self, conn: Any) -> None:
        import sqlalchemy as sa

        from ..db.tables import chat_sessions

        oldest_kept = conn.execute(sa.select(chat_sessions.c.updated_at).order_by(chat_sessions.c.updated_at.desc())
                                   .offset(self.max_sessions - 1).limit(1)).scalar()
        if oldest_kept is not None:
            conn.execute(sa.delete(chat_sessions).where(chat_sessions.c.updated_at < oldest_kept))
