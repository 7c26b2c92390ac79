"""`python -m rag_core chunks disable|enable|history KEY`: leave a chunk out of every lookup (it shows in the
debugger and `search --json` as a drop with reason `disabled`), bring it back, or show what was done to it.
Chunks are named by evidence key (`runbooks/cpu_high.md#chunk-2`); `chunk FILE` stays the chunking preview."""

from __future__ import annotations

import argparse

from ..config import Settings
from .output import print_json
from .workbench import workbench


def cmd_chunks(args: argparse.Namespace, settings: Settings) -> int:
    from ..kb.chunk_edits import history, set_disabled

    with workbench(settings, asked=getattr(args, "asked", ())) as wb:
        if args.action == "history":
            record = history(wb.store, args.key)
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
    p.add_argument("action", choices=("disable", "enable", "history"), help="what to do to the chunk")
    p.add_argument("key", metavar="DOC_ID#chunk-N", help="the chunk's evidence key, as search and the debugger show it")
    p.add_argument("--json", action="store_true", help="print the chunk's record (state and history) as JSON")
    p.set_defaults(func=cmd_chunks)
