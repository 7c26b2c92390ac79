"""`python -m rag_core chunks edit|keywords|questions|disable|enable|revert|history KEY`: change a chunk's text or
attach keywords and example questions (only it is re-embedded; hits mark it `edited`), leave it out of every lookup
(a drop with reason `disabled`), bring it back or go back to the original, or show what was done to it.
`chunks add DOC_ID --text ...` adds a chunk to a document (under its next free chunk index; hits mark it `added`).
After a changed original is re-uploaded, `chunks conflicts DOC_ID` lists the edits that stopped applying and
`chunks keep|drop KEY` re-applies one to the chunk now under its key or lets it go.
Chunks are named by evidence key (`runbooks/cpu_high.md#chunk-2`); `chunk FILE` stays the chunking preview."""

from __future__ import annotations

import argparse
from typing import Any

from ..config import Settings
from . import audit
from .output import print_json
from .workbench import workbench

ACTIONS = ("edit", "keywords", "questions", "disable", "enable", "revert", "history", "add", "conflicts", "keep",
           "drop")
CHANGES = ("edit", "keywords", "questions", "disable", "enable", "revert", "add", "keep", "drop")  # audited


def _detail(args: argparse.Namespace) -> dict[str, Any]:
    """What an audit event of a chunk change says about it: sizes and keywords, not the text itself."""
    if args.action in ("edit", "add"):
        return {"characters": len(args.text or "")}
    if args.action in ("keywords", "questions"):
        return {args.action: list(args.values)}
    return {}


def cmd_chunks(args: argparse.Namespace, settings: Settings) -> int:
    from ..errors import RagError
    from ..kb import chunk_edits as edits

    if args.action not in ("edit", "add") and args.text is not None:
        raise RagError(f"chunks {args.action}: give the values after the key; --text is for `chunks edit` and "
                       "`chunks add`.")
    if args.values and args.action not in ("keywords", "questions"):
        raise RagError(f"chunks {args.action}: unexpected values {' '.join(args.values)!r} after the key (values are "
                       "for `chunks keywords` and `chunks questions`).")
    user = audit.who()  # the chunk's own history names who did it, as the audit log does
    with workbench(settings, asked=getattr(args, "asked", ())) as wb:
        record: Any
        if args.action == "history":
            record = edits.history(wb.store, args.key)
        elif args.action == "edit":
            record = edits.edit_chunk(wb.store, wb.embedder, args.key, text=args.text, who=user)
        elif args.action == "keywords":
            record = edits.edit_chunk(wb.store, wb.embedder, args.key, keywords=list(args.values), who=user)
        elif args.action == "questions":
            record = edits.edit_chunk(wb.store, wb.embedder, args.key, questions=list(args.values), who=user)
        elif args.action == "revert":
            record = edits.revert(wb.store, wb.embedder, args.key, who=user)
        elif args.action == "add":
            record = edits.add_chunk(wb.store, wb.embedder, wb.ingestor.resolve_doc_id(args.key), args.text or "",
                                     who=user)
        elif args.action == "conflicts":
            doc_id = wb.ingestor.resolve_doc_id(args.key)
            record = {"doc_id": doc_id, "conflicts": edits.conflicts(wb.store, doc_id)}
        elif args.action == "keep":
            record = edits.keep(wb.store, wb.embedder, args.key, who=user)
        elif args.action == "drop":
            record = edits.drop(wb.store, args.key, who=user)
        else:
            record = edits.set_disabled(wb.store, args.key, args.action == "disable", who=user)
    if args.action in CHANGES:
        audit.record(settings, f"chunks.{args.action}", settings.kb_name, record.get("evidence_key") or args.key,
                     _detail(args))
    if args.json:
        print_json(record)
        return 0
    if args.action == "conflicts":
        _print_conflicts(record)
        return 0
    state = "disabled" if record.get("disabled") else "enabled"
    print(f"{record['evidence_key']}: {state}{', added' if record.get('added') else ''}")
    for h in record.get("history") or []:
        print(f"  {h['when']}  {h['who']}  {h['what']}")
    return 0


def _print_conflicts(record: dict[str, Any]) -> None:
    found = record["conflicts"]
    if not found:
        print(f"{record['doc_id']}: no edit in conflict")
        return
    for c in found:
        did = "added" if c["kind"] == "added" else ", ".join(
            n for n, on in (("disabled", c["disabled"]), ("text edited", c["text"]), ("keywords", c["keywords"]),
                            ("questions", c["questions"])) if on)
        now = "no such chunk any more" if c["now"] is None else f"now: {' '.join(c['now'].split())[:70]}"
        print(f"{c['evidence_key']}  {did}  ({now})")
    print("keep one with `chunks keep KEY` (re-applied to the chunk now under its key) or `chunks drop KEY`")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("chunks", help="edit, disable, enable, add or show the history of an indexed chunk (by "
                       "evidence key)", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("action", choices=ACTIONS,
                   help="what to do to the chunk (revert: back to the original text; keep/drop: an edit in conflict)")
    p.add_argument("key", metavar="KEY", help="the chunk's evidence key (DOC_ID#chunk-N, as search and the debugger "
                   "show it); for add and conflicts, the document's DOC_ID")
    p.add_argument("values", nargs="*", metavar="VALUE", help="keywords or example questions (none: remove them)")
    p.add_argument("--text", help="the chunk's new text (edit) or the added chunk's text (add); it is embedded, the "
                   "evidence key stays")
    p.add_argument("--json", action="store_true", help="print the chunk's record (state and history) as JSON")
    p.set_defaults(func=cmd_chunks)
