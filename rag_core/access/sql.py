"""The AccessStore in SQL (rag_core/db): the data folder's SQLite file, or PostgreSQL when database.url is set.

It behaves as access/memory.py does, message for message (tests/contracts/access.py runs the same contract on
both, and on PostgreSQL). Every call reads the database, nothing is cached: a revoked user's token stops working
at once in every process. A token is kept only as its SHA-256 (access/tokens.py says why that is enough).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import replace

import sqlalchemy as sa
from sqlalchemy import exc
from sqlalchemy.engine import Connection

from ..db.store import SqlStore
from ..db.tables import audit, tokens, user_groups, user_roles, users
from ..errors import AccessError
from .memory import now
from .names import check_name
from .records import AuditEvent, Principal, Role, User
from .tokens import new_token, token_hash


class SqlAccessStore(SqlStore):
    def authenticate(self, token: str) -> Principal | None:
        with self._reading() as conn:
            name = conn.scalar(sa.select(tokens.c.user_name).where(tokens.c.hash == token_hash(token)))
            user = self._load(conn, name) if name is not None else None
        return user.principal() if user is not None and user.active else None

    def principal(self, name: str) -> Principal | None:
        user = self.user(name)
        return user.principal() if user is not None and user.active else None

    def create_user(self, name: str, roles: Mapping[str, Role], groups: Iterable[str] = ()) -> tuple[User, str]:
        check_name(name)
        kept_groups = frozenset(check_name(g, "group") for g in groups)
        user, token = User(name, dict(roles), kept_groups, created_at=now()), new_token()
        try:
            with self._writing() as conn:
                if self._load(conn, name) is not None:
                    raise _exists(name)
                conn.execute(sa.insert(users).values(name=name, created_at=user.created_at))
                self._write_roles(conn, name, user.roles)
                self._write_groups(conn, name, kept_groups)
                conn.execute(sa.insert(tokens).values(hash=token_hash(token), user_name=name))
        except exc.IntegrityError:  # another process created them between the check and the insert
            raise _exists(name) from None
        return user, token

    def new_token(self, name: str) -> str:
        token = new_token()
        with self._writing() as conn:
            self._existing(conn, name)
            conn.execute(sa.delete(tokens).where(tokens.c.user_name == name))
            conn.execute(sa.insert(tokens).values(hash=token_hash(token), user_name=name))
        return token

    def set_user(self, name: str, *, roles: Mapping[str, Role | None] | None = None,
                 groups: Iterable[str] | None = None) -> User:
        kept_groups = None if groups is None else frozenset(check_name(g, "group") for g in groups)
        with self._writing() as conn:
            user = self._existing(conn, name)
            held = dict(user.roles)
            for kb, role in (roles or {}).items():
                if role is None:
                    held.pop(kb, None)
                else:
                    held[kb] = role
            if held != user.roles:
                conn.execute(sa.delete(user_roles).where(user_roles.c.user_name == name))
                self._write_roles(conn, name, held)
            if kept_groups is not None and kept_groups != user.groups:
                conn.execute(sa.delete(user_groups).where(user_groups.c.user_name == name))
                self._write_groups(conn, name, kept_groups)
        return replace(user, roles=held, groups=user.groups if kept_groups is None else kept_groups)

    def revoke(self, name: str) -> User:
        with self._writing() as conn:
            user = self._existing(conn, name)
            if user.active:
                user = replace(user, revoked_at=now())
                conn.execute(sa.update(users).where(users.c.name == name).values(revoked_at=user.revoked_at))
                conn.execute(sa.delete(tokens).where(tokens.c.user_name == name))
        return user

    def users(self, *, include_revoked: bool = False) -> list[User]:
        query = sa.select(users.c.name).order_by(users.c.name)
        if not include_revoked:
            query = query.where(users.c.revoked_at.is_(None))
        with self._reading() as conn:
            loaded = [self._load(conn, name) for name in conn.scalars(query).all()]
        return [user for user in loaded if user is not None]

    def user(self, name: str) -> User | None:
        with self._reading() as conn:
            return self._load(conn, name)

    def record(self, event: AuditEvent) -> AuditEvent:
        kept = event if event.at else replace(event, at=now())
        with self._writing() as conn:
            conn.execute(sa.insert(audit).values(at=kept.at, user_name=kept.user, action=kept.action, kb=kept.kb,
                                                 target=kept.target, detail=dict(kept.detail)))
        return kept

    def audit(self, *, limit: int = 100, user: str | None = None, kb: str | None = None,
              action: str | None = None) -> list[AuditEvent]:
        query = sa.select(audit).order_by(audit.c.id.desc()).limit(max(limit, 0))
        if user is not None:
            query = query.where(audit.c.user_name == user)
        if kb is not None:
            query = query.where(audit.c.kb == kb)
        if action is not None:
            query = query.where(audit.c.action.startswith(action, autoescape=True))
        with self._reading() as conn:
            rows = conn.execute(query).all()
        return [AuditEvent(row.user_name, row.action, row.kb, row.target, _detail(row.detail), row.at)
                for row in rows]

    # -- the rows of one user

    def _load(self, conn: Connection, name: str) -> User | None:
        row = conn.execute(sa.select(users).where(users.c.name == name)).first()
        if row is None:
            return None
        roles = {kb: Role(role) for kb, role in
                 conn.execute(sa.select(user_roles.c.kb, user_roles.c.role).where(user_roles.c.user_name == name))}
        groups = frozenset(conn.scalars(sa.select(user_groups.c.group_name).where(user_groups.c.user_name == name)))
        return User(row.name, roles, groups, created_at=row.created_at, revoked_at=row.revoked_at)

    def _existing(self, conn: Connection, name: str) -> User:
        user = self._load(conn, name)
        if user is None:
            raise AccessError(f"No user {name!r} (`users list` shows them).")
        return user

    @staticmethod
    def _write_roles(conn: Connection, name: str, roles: Mapping[str, Role]) -> None:
        if roles:
            conn.execute(sa.insert(user_roles), [{"user_name": name, "kb": kb, "role": role.value}
                                                 for kb, role in roles.items()])

    @staticmethod
    def _write_groups(conn: Connection, name: str, groups: Iterable[str]) -> None:
        rows = [{"user_name": name, "group_name": group} for group in sorted(groups)]
        if rows:
            conn.execute(sa.insert(user_groups), rows)


def _exists(name: str) -> AccessError:
    return AccessError(f"A user {name!r} exists already (`users set` changes their roles).")


def _detail(value: object) -> dict:
    """The JSON column as a dict (SQLite may hand back the text)."""
    return json.loads(value) if isinstance(value, str) else dict(value or {})  # type: ignore[call-overload]
