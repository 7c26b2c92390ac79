"""Recording who did what, written once for every entry point (the CLI, the HTTP service, the app).

The audit log is a record of changes that have already happened: the document is stored, the user made. So a
failure to write the log must not undo or hide the change; `audited` never raises, it says so in one warning
line (to `warn`, else the `rag_core.audit` logger) and returns None.

The actions, named alike by every entry point (`audit list --action documents.` finds them all):
`documents.upload` (one per added or replaced document; detail: status, chunks), `documents.delete`,
`documents.reindex` (detail: documents, failed), `tags.set` (detail: tags, replace), `chunks.<what>` for edit,
keywords, questions, disable, enable, revert, add, keep and drop (target: the evidence key; detail: a text's
length, never the text), `kbs.create`, `kbs.set` (detail: the settings given), `kbs.copy` (detail: from,
documents), `kbs.delete`, `testsets.create`, `feedback.rate` (target: the trace id; detail: rating, comment),
`users.create`, `users.set` (detail: roles, removed, groups), `users.revoke`, `users.token` (never the token).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from .records import AuditEvent

if TYPE_CHECKING:
    from ..ports import AccessStore

log = logging.getLogger("rag_core.audit")


def audited(store: AccessStore, user: str, action: str, kb: str = "", target: str = "",
            detail: Mapping[str, object] | None = None, *,
            warn: Callable[[str], None] | None = None) -> AuditEvent | None:
    """Appends `user` did `action` (on knowledge base `kb`, to `target`, with `detail`) to the audit log; the
    event as kept, or None when it could not be written (said once to `warn`)."""
    event = AuditEvent(user, action, kb, target, dict(detail or {}))
    try:
        return store.record(event)
    except Exception as exc:  # noqa: BLE001 - any failure of the log: the change itself is made and stays
        failed(action, target, exc, warn)
        return None


def failed(action: str, target: str, exc: BaseException, warn: Callable[[str], None] | None = None) -> None:
    """Says that `action` on `target` was done but not recorded, in one line: to `warn`, else the log."""
    on = f" of {target!r}" if target else ""
    reason = " ".join(str(exc).split())[:200]  # one line, whatever the database said
    message = f"warning: {action}{on} was done, but the audit log did not record it ({type(exc).__name__}: {reason})."
    if warn is not None:
        warn(message)
    else:
        log.warning("%s", message)
