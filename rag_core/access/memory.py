"""An AccessStore in memory: the fake the service and CLI tests use, passing the same contract as the SQL one."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import UTC, datetime

from ..errors import AccessError
from .names import check_name
from .records import AuditEvent, Principal, Role, User
from .tokens import new_token, token_hash


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


class MemoryAccessStore:
    def __init__(self) -> None:
        self._users: dict[str, User] = {}
        self._hashes: dict[str, str] = {}  # token hash -> user name
        self._events: list[AuditEvent] = []
        self._lock = threading.Lock()

    @property
    def where(self) -> str:
        return "memory"

    def authenticate(self, token: str) -> Principal | None:
        with self._lock:
            user = self._users.get(self._hashes.get(token_hash(token), ""))
        return user.principal() if user is not None and user.active else None

    def principal(self, name: str) -> Principal | None:
        user = self.user(name)
        return user.principal() if user is not None and user.active else None

    def create_user(self, name: str, roles: Mapping[str, Role], groups: Iterable[str] = ()) -> tuple[User, str]:
        check_name(name)
        groups = frozenset(check_name(g, "group") for g in groups)
        with self._lock:
            if name in self._users:
                raise AccessError(f"A user {name!r} exists already (`users set` changes their roles).")
            user = self._users[name] = User(name, dict(roles), groups, created_at=now())
            token = new_token()
            self._hashes[token_hash(token)] = name
        return user, token

    def new_token(self, name: str) -> str:
        with self._lock:
            self._existing(name)
            self._hashes = {h: n for h, n in self._hashes.items() if n != name}
            token = new_token()
            self._hashes[token_hash(token)] = name
        return token

    def set_user(self, name: str, *, roles: Mapping[str, Role | None] | None = None,
                 groups: Iterable[str] | None = None) -> User:
        with self._lock:
            user = self._existing(name)
            held = dict(user.roles)
            for kb, role in (roles or {}).items():
                if role is None:
                    held.pop(kb, None)
                else:
                    held[kb] = role
            kept = user.groups if groups is None else frozenset(check_name(g, "group") for g in groups)
            user = self._users[name] = replace(user, roles=held, groups=kept)
        return user

    def revoke(self, name: str) -> User:
        with self._lock:
            user = self._existing(name)
            if user.active:
                user = self._users[name] = replace(user, revoked_at=now())
        return user

    def users(self, *, include_revoked: bool = False) -> list[User]:
        with self._lock:
            return sorted((u for u in self._users.values() if include_revoked or u.active), key=lambda u: u.name)

    def user(self, name: str) -> User | None:
        with self._lock:
            return self._users.get(name)

    def record(self, event: AuditEvent) -> AuditEvent:
        kept = event if event.at else replace(event, at=now())
        with self._lock:
            self._events.append(kept)
        return kept

    def audit(self, *, limit: int = 100, user: str | None = None, kb: str | None = None,
              action: str | None = None) -> list[AuditEvent]:
        with self._lock:
            events = [e for e in reversed(self._events) if (user is None or e.user == user)
                      and (kb is None or e.kb == kb) and (action is None or e.action.startswith(action))]
        return events[:limit]

    def close(self) -> None:
        pass

    def _existing(self, name: str) -> User:
        user = self._users.get(name)
        if user is None:
            raise AccessError(f"No user {name!r} (`users list` shows them).")
        return user
