"""The records of access control, shared by the stores, the HTTP service, the MCP server, the CLI and the app.

* A **role** is held per knowledge base (`ALL` = every one): reader < editor < admin; a higher role can do
  everything a lower one can.
* A **principal** is who is calling: a user (from their token or a trusted proxy's header), or `EVERYONE`, the
  one-person setup (no users, or RAG_API_TOKEN), which is an admin of everything and sees every document.
* **Access groups**: a document carrying `access=GROUP` labels is retrieved only for principals in one of those
  groups; a document without any is retrieved for everyone. `Principal.scope(kb)` says what a lookup may see.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ..errors import AccessError

ALL = "*"  # a role on every knowledge base
ACCESS_KEY = "access"  # the label key of a document's access groups: tag `access=sre`


class Role(enum.Enum):
    READER = "reader"  # search, chat, explain, rate answers
    EDITOR = "editor"  # + upload, delete documents, edit chunks, tags, test sets, evaluation runs
    ADMIN = "admin"  # + create, delete, copy knowledge bases; users and roles

    @property
    def rank(self) -> int:
        return ROLES.index(self)

    def covers(self, needed: Role) -> bool:
        return self.rank >= needed.rank

    @classmethod
    def parse(cls, value: str) -> Role:
        try:
            return cls(value.strip().lower())
        except ValueError:
            raise AccessError(f"Unknown role {value!r}; roles: {', '.join(r.value for r in ROLES)}.") from None


ROLES = (Role.READER, Role.EDITOR, Role.ADMIN)


@dataclass(frozen=True)
class AccessScope:
    """What one lookup may retrieve. `groups` None: every document. `reveal`: the caller may learn how many
    documents the groups hid (an admin of the knowledge base), shown as the drop reason `no_access`."""

    groups: frozenset[str] | None = None
    reveal: bool = False

    @property
    def unrestricted(self) -> bool:
        return self.groups is None


UNRESTRICTED = AccessScope()


@dataclass(frozen=True)
class Principal:
    """Who is calling. `roles`: knowledge base (or ALL) -> role; `everything`: the one-person setup or the
    RAG_API_TOKEN holder, an admin of every knowledge base who sees every document."""

    name: str
    roles: Mapping[str, Role] = field(default_factory=dict)
    groups: frozenset[str] = frozenset()
    everything: bool = False

    def role_in(self, kb: str) -> Role | None:
        if self.everything:
            return Role.ADMIN
        held = [r for r in (self.roles.get(kb), self.roles.get(ALL)) if r is not None]
        return max(held, key=lambda r: r.rank) if held else None

    def can(self, kb: str, needed: Role) -> bool:
        role = self.role_in(kb)
        return role is not None and role.covers(needed)

    def readable(self, kbs: Iterable[str]) -> list[str]:
        """The knowledge bases among `kbs` this principal may read, in their order (the others stay unnamed)."""
        return [kb for kb in kbs if self.can(kb, Role.READER)]

    def scope(self, kb: str) -> AccessScope:
        if self.everything:
            return UNRESTRICTED
        return AccessScope(groups=self.groups, reveal=self.can(kb, Role.ADMIN))


EVERYONE = Principal("local", everything=True)


@dataclass(frozen=True)
class User:
    name: str
    roles: Mapping[str, Role]
    groups: frozenset[str] = frozenset()
    created_at: str = ""
    revoked_at: str | None = None  # a revoked user's token stops working at once

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    def principal(self) -> Principal:
        return Principal(self.name, dict(self.roles), self.groups)

    def to_dict(self) -> dict:
        return {"name": self.name, "roles": {kb: r.value for kb, r in sorted(self.roles.items())},
                "groups": sorted(self.groups), "created_at": self.created_at, "revoked_at": self.revoked_at,
                "active": self.active}


@dataclass(frozen=True)
class AuditEvent:
    """One thing a person did: `action` as `documents.upload`, `documents.delete`, `chunks.edit`, `tags.set`,
    `users.create`, `users.set`, `users.revoke`, `feedback.rate`, `kbs.create`, `kbs.delete`, `kbs.copy` (every
    name, and what its detail holds: rag_core/access/audit.py)."""

    user: str
    action: str
    kb: str = ""
    target: str = ""  # a document id, chunk key, user name, turn id...
    detail: Mapping[str, object] = field(default_factory=dict)
    at: str = ""  # ISO 8601 UTC, set by the store when empty

    def to_dict(self) -> dict:
        return {"at": self.at, "user": self.user, "action": self.action, "kb": self.kb, "target": self.target,
                "detail": dict(self.detail)}


def parse_roles(items: Iterable[str]) -> dict[str, Role]:
    """`["docs=reader", "*=admin"]` -> {"docs": READER, "*": ADMIN}; AccessError naming a bad item."""
    roles: dict[str, Role] = {}
    for item in items:
        kb, sep, role = item.partition("=")
        if not sep or not kb.strip() or not role.strip():
            raise AccessError(f"A role is KB=ROLE (as docs=reader, or *=admin for every knowledge base), got {item!r}.")
        roles[kb.strip()] = Role.parse(role)
    return roles
