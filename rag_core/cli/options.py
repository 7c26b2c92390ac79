"""Options that several commands share, and how they are read: `--set key=value`, an option's help taken from the
setting it overrides, the retrieval debugger's knobs (`search`, `explain`), and the check of text arguments."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from ..config import KEYS, Settings
from ..errors import RagError


def parse_sets(pairs: Sequence[str]) -> dict[str, str]:
    overrides = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise RagError(f"--set {pair!r}: expected key=value, e.g. --set chunk.max-size=600.")
        overrides[key.strip()] = value
    return overrides


def setting_help(key: str, extra: str = "") -> str:
    """An option's help is the help of the setting it overrides (one text, also in `config` and the README)."""
    return f"{KEYS[key].help.rstrip('.')}{extra}; default: the setting {key}"


def lookup_arguments(p: argparse.ArgumentParser, *, explain: bool = False) -> None:
    """Every option of a lookup (retrieval.options.LOOKUP_OPTIONS), as flags: `explain` leaves out those explain
    does not take. Each is checked by the rules of the setting it overrides, whose help is its help."""
    from ..retrieval.options import LOOKUP_OPTIONS

    for o in LOOKUP_OPTIONS:
        if explain and not o.explain:
            continue
        if o.flag:
            p.add_argument(o.flag_name, dest=o.name, action="store_false", default=None, help=o.description)
        elif o.kind is list:
            p.add_argument(o.flag_name, action="append", metavar="KEY=VALUE" if o.name == "filter" else "VALUE",
                           help=o.description)
        elif o.kind is bool:
            p.add_argument(o.flag_name, choices=("on", "off"), help=o.description)
        elif o.choices:
            p.add_argument(o.flag_name, choices=o.choices, help=o.description)
        else:
            p.add_argument(o.flag_name, type=o.kind, metavar="N" if o.kind is int else "X", help=o.description)


def lookup_overrides(args: argparse.Namespace, settings: Settings) -> dict[str, Any]:
    """The options of `lookup_arguments`, as `lookup(...)` keyword arguments (by the function the HTTP API's
    query parameters, the MCP tools' arguments and the debugger's controls go through too)."""
    from ..retrieval.options import OPTIONS
    from ..retrieval.options import lookup_overrides as overrides

    return overrides({name: getattr(args, name) for name in OPTIONS if hasattr(args, name)}, settings)


# The arguments that are text (not paths), as `dest -> how the error names it`. Python turns bytes of an
# argument that are not UTF-8 into lone surrogates (surrogateescape): fine in a path, which goes back to the
# same bytes, but text that the embedder or the JSON output would fail on (rag_core.text). Paths (--data-dir,
# ingest's files, --queries, rebuild --from, eval's SET and --out, ...) are left out on purpose.
TEXT_ARGUMENTS = {"query": "the query", "question": "the question", "expect": "--expect", "answer": "--answer",
                  "doc_id": "the doc_id", "doc_ids": "the doc_ids", "prefix": "--prefix", "set": "--set",
                  "kb": "--kb", "kbs": "--kb", "name": "the name", "from_collection": "--from",
                  "collection": "--collection", "split": "--split", "by": "--by", "filter": "--filter",
                  "tags": "the tags", "key": "the evidence key", "role": "--role", "remove_role": "--remove-role",
                  "group": "--group", "groups": "--groups", "user": "--user", "kb_name": "--kb", "action": "--action"}


def check_text_arguments(args: argparse.Namespace) -> None:
    from ..text import check_text

    for dest, shown in TEXT_ARGUMENTS.items():
        value = getattr(args, dest, None)
        values = [value] if isinstance(value, str) else value if isinstance(value, (list, tuple)) else []
        for i, item in enumerate(values):
            if isinstance(item, str):
                check_text(item, shown if len(values) == 1 else f"{shown} (argument {i + 1})")
