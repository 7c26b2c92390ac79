"""Who did what over HTTP: uploads, deletes, chunk edits, tags, ratings and knowledge-base changes are recorded in
the access store's audit log (`audit list`) under the caller's name. Recorded after the change is made: a failure to
record is logged and never undoes or refuses the change.
(`access.audit.audited`, as the CLI's)."""

from __future__ import annotations

from typing import Any

from ..access.audit import audited
from ..access.records import Principal
from .state import Service


def record(svc: Service, principal: Principal, action: str, kb: str = "", target: str = "", **detail: Any) -> None:
    """Appends one event (blocking: call it from a worker thread, as the sync routes run)."""
    if svc.access is not None:
        audited(svc.access, principal.name, action, kb, target, detail)


def who(principal: Principal) -> str:
    """The name a chunk edit's history keeps: the user, or "api" for the one-person setup (as before users)."""
    return "api" if principal.everything else principal.name
