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


# The debugger's knobs, as options: each is the setting it overrides for this command, so values are checked by the
# setting's own rules (choices, range, finite) and its help text is the option's help.
def lookup_arguments(p: argparse.ArgumentParser) -> None:
    """Every control of the retrieval debugger, as options (`lookup_overrides` reads them)."""
    p.add_argument("--retrieve-k", type=int, metavar="N", help=setting_help("rag.retrieve-k"))
    p.add_argument("--return-n", type=int, metavar="N", help=setting_help("rag.return-n"))
    p.add_argument("--max-chunks-per-document", type=int, metavar="N",
                   help=setting_help("rag.max-chunks-per-document"))
    p.add_argument("--mode", choices=KEYS["rag.search-mode"].choices, help=setting_help("rag.search-mode"))
    p.add_argument("--fusion", choices=KEYS["rag.fusion"].choices, help=setting_help("rag.fusion", " (hybrid only)"))
    p.add_argument("--rrf-k", type=int, metavar="N", help=setting_help("rag.rrf-k", " (hybrid with rrf only)"))
    p.add_argument("--dense-weight", type=float, metavar="W", help=setting_help("rag.dense-weight"))
    p.add_argument("--bm25-weight", type=float, metavar="W", help=setting_help("rag.bm25-weight"))
    p.add_argument("--cross-language", choices=("on", "off"), help=setting_help("rag.cross-language"))
    p.add_argument("--score-threshold", type=float, metavar="S",
                   help="drop hits scoring below S in this lookup's search mode (0 = off); default: the setting "
                        "rag.score-threshold.<mode>")
    p.add_argument("--filter", action="append", metavar="KEY=VALUE",
                   help="only documents whose metadata match (repeatable: one key's values OR, keys AND; "
                        "folder=runbooks/ matches a folder and below; keys: folder, type, ingested, front matter, "
                        "tags)")
    p.add_argument("--no-rerank", action="store_true", help="skip the reranker (rerank.provider) for this lookup")


def lookup_overrides(args: argparse.Namespace, settings: Settings) -> dict[str, Any]:
    """The options of `lookup_arguments`, as `lookup(...)` keyword arguments (by the function the HTTP API's
    query parameters go through too)."""
    from ..retrieval.options import lookup_overrides as overrides

    return overrides(vars(args), settings, no_rerank=getattr(args, "no_rerank", False))


# The arguments that are text (not paths), as `dest -> how the error names it`. Python turns bytes of an
# argument that are not UTF-8 into lone surrogates (surrogateescape): fine in a path, which goes back to the
# same bytes, but text that the embedder or the JSON output would fail on (rag_core.text). Paths (--data-dir,
# ingest's files, --queries, rebuild --from, eval's SET and --out, ...) are left out on purpose.
TEXT_ARGUMENTS = {"query": "the query", "question": "the question", "expect": "--expect", "answer": "--answer",
                  "doc_id": "the doc_id", "doc_ids": "the doc_ids", "prefix": "--prefix", "set": "--set",
                  "kb": "--kb", "kbs": "--kb", "name": "the name", "from_collection": "--from",
                  "collection": "--collection", "split": "--split", "by": "--by", "filter": "--filter",
                  "tags": "the tags", "key": "the evidence key"}


def check_text_arguments(args: argparse.Namespace) -> None:
    from ..text import check_text

    for dest, shown in TEXT_ARGUMENTS.items():
        value = getattr(args, dest, None)
        values = [value] if isinstance(value, str) else value if isinstance(value, (list, tuple)) else []
        for i, item in enumerate(values):
            if isinstance(item, str):
                check_text(item, shown if len(values) == 1 else f"{shown} (argument {i + 1})")
