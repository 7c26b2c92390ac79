"""Chat sessions of the HTTP API: the chat page's history window, held for many clients at once.

A session keeps the last `chat.history-pairs` (6) answered question/answer pairs, like the chat page and
the seed; older pairs are dropped, so memory per session is bounded. The number of sessions is bounded
too (`api.max-sessions`): the least recently used one is dropped first. Sessions belong to a user
(`UserId` / `X-User-Id`, default "default_user"), so two users cannot read each other's history by id.
Everything here is called from worker threads and the event loop at once, hence the locks.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict

from ..agent.session import Session, Turn

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
