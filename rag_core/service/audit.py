"""Who did what over HTTP: uploads, deletes, chunk edits, tags, ratings and knowledge-base changes are recorded in
the access store's audit log (`audit list`) under the caller's name. Recorded after the change is made: a failure to
record is logged and never undoes or refuses the change.

MERGE: when rag_core/access/audit.py (helper "users") lands, `record` can call its helper instead; the routes only
call `record` here."""

from __future__ import annotations

import logging
from typing import Any

from ..access.records import AuditEvent, Principal
from .state import Service

log = logging.getLogger(__name__)


def record(svc: Service, principal: Principal, action: str, kb: str = "", target: str = "", **detail: Any) -> None:
    """Appends one event (blocking: call it from a worker thread, as the sync routes run)."""
    if svc.access is None:
        return
    try:
        svc.access.record(AuditEvent(principal.name, action, kb, target, detail))
    except Exception:  # noqa: BLE001 - the change is made; losing its audit line must not fail the request
        log.exception("could not record %s on %r by %r in the audit log", action, kb, principal.name)


def who(principal: Principal) -> str:
    """The name a chunk edit's history keeps: the user, or "api" for the one-person setup (as before users)."""
    return "api" if principal.everything else principal.name
