"""The workbench a command works on: the chosen knowledge base, opened for the command and closed after it."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..config import Settings


@contextmanager
def workbench(settings: Settings, migrate: bool = False, asked: Sequence[str] = (),
              succeeded: Callable[[], bool] = lambda: True) -> Iterator[Any]:
    """The workbench of the chosen knowledge base, closed afterwards (releasing Milvus Lite). Imported lazily:
    `chunk` and `config` need no Milvus. `asked`: the settings given with --set; those the knowledge base
    keeps at another value are named on stderr (its own values win).

    The default knowledge base made by this command (the first one on a new data dir) keeps the settings it
    was given, --set included, and says so; when the command fails (an error, or `succeeded()` False at the
    end: every file failed) it is undone while it holds no documents, so a failed command records nothing."""
    from ..bootstrap import build_workbench
    from ..kb.settings import ignored, made_with

    wb = build_workbench(settings, migrate=migrate)
    ok = False
    try:
        for note in ignored(wb.kb, settings, asked) if wb.kb is not None else ():
            print(f"note: {note}", file=sys.stderr)
        yield wb
        ok = succeeded()
    finally:
        wb.close()
        if wb.made and wb.kb is not None and (ok or not _discard_made(settings, wb.kb)) \
                and (made_note := made_with(wb.kb, asked)):
            print(f"note: {made_note}", file=sys.stderr)


def _discard_made(settings: Settings, kb: Any) -> bool:
    """Undo the default knowledge base a failed command made (see workbench). False when it is kept (it holds
    documents, or it cannot be undone now)."""
    from ..bootstrap import knowledge_bases

    try:
        with knowledge_bases(settings) as kbs:
            discarded = kbs.discard_made(kb)
    except Exception:  # noqa: BLE001 - the command's own error is the one reported
        return False
    if discarded:
        print(f"note: the default knowledge base {kb.name!r} this command made was not kept, since the command "
              "failed; the next command makes it again with its own settings.", file=sys.stderr)
    return discarded
