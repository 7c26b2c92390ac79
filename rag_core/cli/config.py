"""`python -m rag_core config`: every setting with its value, default and variable (or the README's table)."""

from __future__ import annotations

import argparse
import sys

from ..config import Settings, describe_keys, settings_table
from .output import print_json


def cmd_config(args: argparse.Namespace, settings: Settings) -> int:
    from ..retrieval.options import per_lookup

    overridden = per_lookup()
    if args.markdown:
        sys.stdout.write(settings_table(overridden))
        return 0
    if settings.knowledge_base:  # --kb: the values that knowledge base is opened with
        from ..bootstrap import kb_settings

        settings = kb_settings(settings)
    values = settings.public()
    if args.json:
        print_json({"data_dir": str(settings.data_dir), "settings": values})
        return 0
    for key, default, env, help_text in describe_keys():
        lookup = f"; per lookup: {overridden[key].replace('`', '')}" if key in overridden else ""
        print(f"{key} = {values[key]!r}   (default {default}; ${env}{lookup})\n    {help_text}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("config", help="show every setting with its value, default and variable")
    p.add_argument("--json", action="store_true", help="print the data dir and every value as JSON")
    p.add_argument(
        "--markdown", action="store_true", help="print the settings table of docs/configuration.md (Markdown)"
    )
    p.set_defaults(func=cmd_config)
