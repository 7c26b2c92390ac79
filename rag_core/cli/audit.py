"""`python -m rag_core audit list`: who did what, newest first; and how the CLI's changing commands record it.

    python -m rag_core audit list                          # the last 50 events
    python -m rag_core audit list --user cli:ana --kb biz --action documents. --limit 20 --json

The person behind a command is `cli:<OS user>`: whoever can run the CLI on this machine reaches the data folder
and the database directly, so the operating system's account is who did it. Each changing command (ingest,
delete, tag, chunks, kb create/set/copy/delete, feedback rate, users ...) records its change after it is made,
through `access.audit.audited`, the helper the HTTP service uses too: a log that cannot be written is one
warning line on stderr, and the change stays.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..access.audit import audited, failed
from ..config import Settings
from .output import format_table, print_json

if TYPE_CHECKING:
    from ..ports import AccessStore

DEFAULT_LIMIT = 50


def who() -> str:
    """`cli:<OS user>`: the account the process runs as (not $USER, which anyone can set); a uid without an
    account (a container's bare uid) is `cli:uid-N`."""
    try:
        import pwd

        return f"cli:{pwd.getpwuid(os.getuid()).pw_name}"
    except (ImportError, KeyError):  # no pwd module (Windows) or no account for this uid
        pass
    try:
        return f"cli:{getpass.getuser()}"
    except (OSError, KeyError):
        return f"cli:uid-{os.getuid()}"


def warn(message: str) -> None:
    print(message, file=sys.stderr)


@contextmanager
def access_store(settings: Settings) -> Iterator[AccessStore]:
    """The users, roles and audit log of these settings' database, closed afterwards."""
    from ..bootstrap import build_access_store

    store = build_access_store(settings)
    try:
        yield store
    finally:
        store.close()


class Trail:
    """The audit log of one command that changed something: opened at its first event, closed at the end of the
    `with`. When the log cannot be opened or written, that is said once and the command's next events are not
    tried (an ingest of a thousand files warns once, not a thousand times)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.user = who()
        self.store: AccessStore | None = None
        self.broken = False

    def __enter__(self) -> Trail:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.store is not None:
            try:
                self.store.close()
            except Exception:  # noqa: BLE001 - what was recorded is kept; closing is not the user's change
                pass

    def add(self, action: str, kb: str = "", target: str = "", detail: Mapping[str, object] | None = None) -> None:
        if self.broken:
            return
        if self.store is None:
            from ..bootstrap import build_access_store

            try:
                self.store = build_access_store(self.settings)
            except Exception as exc:  # noqa: BLE001 - the change is made: say it was not recorded, keep it
                self.broken = True
                failed(action, target, exc, warn)
                return
        if audited(self.store, self.user, action, kb, target, detail, warn=warn) is None:
            self.broken = True


def record(settings: Settings, action: str, kb: str = "", target: str = "",
           detail: Mapping[str, object] | None = None) -> None:
    """One change made by this command, in the audit log (a warning on stderr when it cannot be written)."""
    with Trail(settings) as trail:
        trail.add(action, kb, target, detail)


def show_detail(detail: Mapping[str, Any]) -> str:
    """An event's detail on one line: `roles=biz=reader; groups=sre`."""
    def value(v: Any) -> str:
        if isinstance(v, Mapping):
            return ",".join(f"{k}={x}" for k, x in v.items())
        if isinstance(v, (list, tuple, set, frozenset)):
            return ",".join(str(x) for x in v)
        return str(v)

    text = "; ".join(f"{k}={value(v)}" for k, v in detail.items())
    return text if len(text) <= 70 else text[:69] + "…"


def cmd_list(args: argparse.Namespace, settings: Settings) -> int:
    from ..errors import AccessError

    if args.limit < 1:
        raise AccessError(f"--limit is how many events to show, at least 1, got {args.limit}.")
    with access_store(settings) as store:
        events = store.audit(limit=args.limit, user=args.user, kb=args.kb_name or args.kb, action=args.action)
    if args.json:
        print_json([e.to_dict() for e in events])
        return 0
    if not events:
        print("no audit events match")
        return 0
    rows = [{"when": e.at[:19].replace("T", " "), "user": e.user, "action": e.action, "kb": e.kb or None,
             "target": e.target or None, "detail": show_detail(e.detail) or None} for e in events]
    print(format_table(rows, ["when", "user", "action", "kb", "target", "detail"]))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("audit", help="who did what: uploads, deletes, chunk edits, tags, ratings, knowledge bases, "
                       "users", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = p.add_subparsers(dest="action_command", required=True, metavar="ACTION")
    ls = actions.add_parser("list", help="the audit log, newest first")
    ls.add_argument("--user", help="only what this user did (a user's name, or cli:<OS user> for the command line)")
    ls.add_argument("--kb", dest="kb_name", metavar="KB",
                    help="only what was done to this knowledge base (as the global --kb does)")
    ls.add_argument("--action", metavar="PREFIX", help="only actions starting with this, e.g. documents. or users.set")
    ls.add_argument("--limit", type=int, default=DEFAULT_LIMIT, metavar="N",
                    help=f"at most this many events (default {DEFAULT_LIMIT})")
    ls.add_argument("--json", action="store_true", help="the events as JSON (at, user, action, kb, target, detail)")
    ls.set_defaults(func=cmd_list)
