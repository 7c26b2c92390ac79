"""`python -m rag_core chunks edit|keywords|questions|disable|enable|revert|history KEY`: change a chunk's text or
attach keywords and example questions (only it is re-embedded; hits mark it `edited`), leave it out of every lookup
(a drop with reason `disabled`), bring it back or go back to the original, or show what was done to it.
Chunks are named by evidence key (`runbooks/cpu_high.md#chunk-2`); `chunk FILE` stays the chunking preview."""

from __future__ import annotations

import argparse

from ..config import Settings
from .output import print_json
from .workbench import workbench


def cmd_chunks(args: argparse.Namespace, settings: Settings) -> int:
    from ..errors import RagError
    from ..kb.chunk_edits import edit_chunk, history, revert, set_disabled

    if args.action != "edit" and args.text is not None:
        raise RagError(f"chunks {args.action}: give the values after the key; --text is for `chunks edit`.")
    with workbench(settings, asked=getattr(args, "asked", ())) as wb:
        if args.action == "history":
            record = history(wb.store, args.key)
        elif args.action == "edit":
            record = edit_chunk(wb.store, wb.embedder, args.key, text=args.text, who="local")
        elif args.action == "keywords":
            record = edit_chunk(wb.store, wb.embedder, args.key, keywords=list(args.values), who="local")
        elif args.action == "questions":
            record = edit_chunk(wb.store, wb.embedder, args.key, questions=list(args.values), who="local")
        elif args.action == "revert":
            record = revert(wb.store, wb.embedder, args.key, who="local")
        else:
            record = set_disabled(wb.store, args.key, args.action == "disable", who="local")
    if args.json:
        print_json(record)
        return 0
    state = "disabled" if record.get("disabled") else "enabled"
    print(f"{record['evidence_key']}: {state}")
    for h in record.get("history") or []:
        print(f"  {h['when']}  {h['who']}  {h['what']}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("chunks", help="disable, enable or show the history of an indexed chunk (by evidence key)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("action", choices=("edit", "keywords", "questions", "disable", "enable", "revert", "history"),
                   help="what to do to the chunk (revert: back to the original text)")
    p.add_argument("key", metavar="DOC_ID#chunk-N", help="the chunk's evidence key, as search and the debugger show it")
    p.add_argument("values", nargs="*", metavar="VALUE", help="keywords or example questions (none: remove them)")
    p.add_argument("--text", help="the chunk's new text (chunks edit); it is re-embedded, its evidence key stays")
    p.add_argument("--json", action="store_true", help="print the chunk's record (state and history) as JSON")
    p.set_defaults(func=cmd_chunks)
