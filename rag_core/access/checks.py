"""Role checks on one knowledge base, shared by the HTTP routes and the MCP tools.

A knowledge base a caller cannot read is answered exactly as one that does not exist: the same 404 and the same
message, listing only the knowledge bases the caller may read (never a 403 that confirms its name). A caller who may
read it but lacks the role asked for gets a 403 naming the role and the knowledge base.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..errors import Forbidden, KnowledgeBaseNotFound
from .records import AccessScope, Principal, Role

if TYPE_CHECKING:
    from ..ports import AccessStore


def unknown_kb(name: str, readable: Iterable[str]) -> KnowledgeBaseNotFound:
    """The answer to a knowledge base that is unknown or hidden from the caller (the same for both)."""
    names = list(readable)
    listed = f"the knowledge bases you can read are {', '.join(names)}" if names else "you can read none"
    return KnowledgeBaseNotFound(f"There is no knowledge base {name!r}; {listed}.")


def forbidden(principal: Principal, kb: str, needed: Role) -> Forbidden:
    held = principal.role_in(kb)
    you = f"you are a {held.value}" if held is not None else "you have no role there"
    return Forbidden(f"This needs the {needed.value} role on knowledge base {kb!r}; {you} (an admin of it can give "
                     "you the role).")


def require(principal: Principal, kb: str, needed: Role, names: Iterable[str] | None = None) -> None:
    """Raises `unknown_kb` when `principal` cannot read `kb` (`names`: every knowledge base, for the message) and
    `forbidden` when it can but lacks `needed`."""
    if not principal.can(kb, Role.READER):
        raise unknown_kb(kb, principal.readable(names or ()))
    if not principal.can(kb, needed):
        raise forbidden(principal, kb, needed)


def has_accounts(store: AccessStore) -> bool:
    """Whether anyone was ever made a user here (revoked ones too): from then on every caller signs in. Counting
    only active users would open the server to everyone as an admin the moment its last user is revoked."""
    return bool(store.users(include_revoked=True))


def lookup_access(scope: AccessScope) -> dict[str, Any]:
    """The arguments a lookup takes for what the caller may retrieve: the single place every HTTP route and MCP tool
    passes the caller's scope through (`KnowledgeRetriever.lookup` and `explain` take it as `access`)."""
    return {"access": scope}
