"""`python -m rag_core sources ...`: the sources a knowledge base is kept in sync with (docs/sources.md).

    python -m rag_core sources add biz folder /mnt/runbooks --include '*.md' --exclude 'drafts/*'
    python -m rag_core sources list
    python -m rag_core sources sync runbooks --dry-run   # what a sync would add, replace and delete
    python -m rag_core sources sync --all                # every source, e.g. from cron
    python -m rag_core sources show runbooks             # its last sync: counts, failures and their reasons
    python -m rag_core sources remove runbooks --delete-documents

A source is named NAME, or KB/NAME when several knowledge bases have one of that name.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import Any

from ..config import Settings
from ..errors import SourceError
from .audit import record
from .logs import library_log
from .output import EXIT_FAILED_FILES, ingest_progress_bar, print_json


def _book(settings: Settings) -> Any:
    from ..bootstrap import build_source_book

    return build_source_book(settings)


def _options(args: argparse.Namespace) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if args.include:
        options["include"] = list(args.include)
    if args.exclude:
        options["exclude"] = list(args.exclude)
    for pair in args.option:
        key, eq, value = pair.partition("=")
        if not eq or not key.strip():
            raise SourceError(f"--option {pair!r}: write it as KEY=VALUE")
        options[key.strip()] = value
    return options


def cmd_add(args: argparse.Namespace, settings: Settings) -> int:
    from ..bootstrap import knowledge_bases
    from ..sources.manage import new_source

    with knowledge_bases(settings) as kbs:
        if args.kb_name != settings["milvus.collection"]:  # the default one is made on first use
            kbs.get(args.kb_name)  # an unknown knowledge base is named, with `kb list`
    if args.every < 0:
        raise SourceError(f"--every {args.every}: give the minutes between scheduled syncs (0: none)")
    new = replace(new_source(settings, args.kb_name, args.type, args.location, _options(args), name=args.name,
                             folder=args.folder), every=args.every)
    source = _book(settings).add(new)
    record(settings, "sources.add", source.kb, source.name,
           {"type": source.type, "location": source.location, "folder": source.folder, **source.options})
    if args.json:
        print_json(source.to_dict())
    else:
        print(f"added source {source.key} ({source.type} {source.location} -> {source.folder}/); "
              f"`python -m rag_core sources sync {source.key}` indexes it")
    return 0


def _status(s: Any) -> str:
    from ..sources.schedule import next_run

    st, when = s.status, next_run(s)
    scheduled = "" if when is None else f"; every {s.every} min, next {'now' if not st else when.isoformat()}"
    return _last(st) + scheduled


def _last(st: dict[str, Any]) -> str:
    if st.get("running_since"):
        return (f"a sync started at {st['running_since']} has not finished (it is running, or was stopped: the next "
                "sync finishes its work)" + (f"; the one before: {_last(_ended(st))}" if _ended(st) else ""))
    if not st:
        return "never synced"
    if st.get("error"):
        return f"failed at {st['started_at']}: {st['error']}"
    return (f"synced {st['started_at']} in {st['seconds']:.1f}s: {st['added']} added, {st['replaced']} replaced, "
            f"{st['unchanged']} unchanged, {st['deleted']} deleted, {st['failed']} failed")


def _ended(st: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in st.items() if k != "running_since"}


def cmd_set(args: argparse.Namespace, settings: Settings) -> int:
    book = _book(settings)
    source = book.set_every(book.get(args.name), args.every)
    record(settings, "sources.set", source.kb, source.name, {"every": source.every})
    if args.json:
        print_json(source.to_dict())
    else:
        print(f"source {source.key}: " + (f"synced every {source.every} min by `serve`" if source.every else
                                           "synced only when asked"))
    return 0


def cmd_list(args: argparse.Namespace, settings: Settings) -> int:
    sources = _book(settings).all()
    if args.json:
        print_json([s.to_dict() for s in sources])
        return 0
    for s in sources:
        print(f"{s.key}  {s.type} {s.location} -> {s.folder}/  {len(s.indexed)} documents  [{_status(s)}]")
    if not sources:
        print("no sources; `python -m rag_core sources add KB TYPE LOCATION` adds one")
    return 0


def cmd_show(args: argparse.Namespace, settings: Settings) -> int:
    s = _book(settings).get(args.name)
    if args.json:
        print_json(s.to_dict())
        return 0
    print(f"{s.key}: {s.type} {s.location} -> {s.folder}/, {len(s.indexed)} documents")
    for key, value in s.options.items():
        print(f"  {key} = {value}")
    print(f"  last sync: {_status(s)}")
    for doc_id, reason in (s.status.get("failures") or {}).items():
        print(f"  failed {doc_id}: {reason}")
    return 0


def cmd_sync(args: argparse.Namespace, settings: Settings) -> int:
    from ..sources.manage import sync_source
    from .workbench import workbench

    book = _book(settings)
    if args.all == bool(args.name):
        raise SourceError("sources sync: name one source, or give --all")
    sources = book.all() if args.all else [book.get(args.name)]
    results, errors = [], 0
    for source in sources:
        try:
            with workbench(settings.for_kb(source.kb)) as wb, \
                    ingest_progress_bar(not (args.quiet or args.json)) as progress, library_log(settings):
                result = sync_source(settings, book, source, wb.ingestor, allow_deletes=args.allow_deletes,
                                     dry_run=args.dry_run, progress=progress)
        except SourceError as exc:
            if not args.all:
                raise
            errors += 1
            print(f"error: {exc}", file=sys.stderr)
            continue
        results.append(result)
        if not args.dry_run:
            record(settings, "sources.sync", source.kb, source.name,
                   {k: v for k, v in result.to_dict().items() if k in ("added", "replaced", "deleted", "failed")})
        if not args.json:
            _print_result(source.key, result)
    if args.json:
        print_json([r.to_dict() for r in results] if args.all else results[0].to_dict())
    return EXIT_FAILED_FILES if errors or any(r.failures for r in results) else 0


def _print_result(key: str, result: Any) -> None:
    if result.dry_run:
        for action in ("added", "replaced", "deleted"):
            for doc_id in getattr(result, action):
                print(f"would be {action}: {doc_id}")
    for doc_id, reason in result.failures.items():
        print(f"failed {doc_id}: {reason}")
    d = result.to_dict()
    verb = "would sync" if result.dry_run else "synced"
    print(f"{verb} {key}: {d['added']} added, {d['replaced']} replaced, {d['unchanged']} unchanged, "
          f"{d['deleted']} deleted, {d['failed']} failed ({result.seconds:.1f}s)")


def cmd_remove(args: argparse.Namespace, settings: Settings) -> int:
    from ..sources.manage import remove_source

    book = _book(settings)
    source = book.get(args.name)
    if args.delete_documents:
        from .workbench import workbench

        with workbench(settings.for_kb(source.kb)) as wb:
            deleted = remove_source(book, source, store=wb.store, ingestor=wb.ingestor)
    else:
        deleted = remove_source(book, source)
    record(settings, "sources.remove", source.kb, source.name, {"documents_deleted": deleted})
    kept = "" if args.delete_documents else f"; its documents stay under {source.folder}/"
    print(f"removed source {source.key}" + (f" and its {deleted} documents" if args.delete_documents else kept))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `sources ...` to `python -m rag_core`."""
    from ..sources.types import TYPES

    group = subparsers.add_parser("sources", help="folders (and other sources) a knowledge base is kept in sync with",
                                  description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = group.add_subparsers(dest="sources_command", required=True, metavar="ACTION")
    json_help = "print machine-readable JSON on stdout"

    p = sub.add_parser("add", help="a new source of a knowledge base (nothing is indexed until `sources sync`)")
    p.add_argument("kb_name", metavar="KB", help="the knowledge base it fills")
    p.add_argument("type", metavar="TYPE", help=f"the kind of source: {', '.join(sorted(TYPES))}")
    p.add_argument("location", metavar="LOCATION", help="where it is: a folder's path, a repository's URL, ...")
    p.add_argument("--name", help="its name, unique in the knowledge base (default: from the location)")
    p.add_argument("--folder", help="the folder its documents go in inside the knowledge base (default: its name)")
    p.add_argument("--every", type=int, default=0, metavar="MINUTES",
                   help="`serve` syncs it every MINUTES (default 0: only `sources sync` does)")
    p.add_argument("--include", action="append", default=[], metavar="GLOB",
                   help="only paths matching this glob (repeatable; `*` matches across folders: '*.md')")
    p.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                   help="leave out paths matching this glob (repeatable: 'drafts/*')")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="an option of the type (repeatable), e.g. --option branch=main")
    p.add_argument("--json", action="store_true", help=json_help)
    p.set_defaults(func=cmd_add)

    p = sub.add_parser("list", help="every source with its last sync")
    p.add_argument("--json", action="store_true", help=json_help)
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("show", help="one source: its options and its last sync, each failure with its reason")
    p.add_argument("name", help="the source (NAME or KB/NAME)")
    p.add_argument("--json", action="store_true", help=json_help)
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("set", help="change a source's schedule")
    p.add_argument("name", help="the source (NAME or KB/NAME)")
    p.add_argument("--every", type=int, required=True, metavar="MINUTES",
                   help="minutes between the syncs `serve` runs (0: only when asked)")
    p.add_argument("--json", action="store_true", help=json_help)
    p.set_defaults(func=cmd_set)

    p = sub.add_parser("sync", help="bring a knowledge base up to date with a source: add, replace and delete")
    p.add_argument("name", nargs="?", help="the source (NAME or KB/NAME)")
    p.add_argument("--all", action="store_true", help="every source, one after the other")
    p.add_argument("--dry-run", action="store_true", help="list what would be added, replaced and deleted; change "
                   "nothing")
    p.add_argument("--allow-deletes", action="store_true", help="delete past sources.max-delete-share")
    p.add_argument("--json", action="store_true", help="print the counts as JSON (a list with --all)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_sync)

    p = sub.add_parser("remove", help="forget a source (its documents stay unless --delete-documents)")
    p.add_argument("name", help="the source (NAME or KB/NAME)")
    p.add_argument("--delete-documents", action="store_true", help="also delete the documents it indexed")
    p.set_defaults(func=cmd_remove)
