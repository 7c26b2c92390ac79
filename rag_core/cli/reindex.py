"""`python -m rag_core reindex | rebuild | migrate`: a knowledge base's index made again, from its kept originals
(reindex), from the kept originals of a lost one (rebuild), or from a collection an older version made (migrate)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..config import Settings
from .audit import record
from .logs import library_log
from .output import EXIT_FAILED_FILES, ingest_progress_bar, print_json, report_line
from .workbench import workbench


def cmd_reindex(args: argparse.Namespace, settings: Settings) -> int:
    from ..bootstrap import open_source_store

    with workbench(settings, asked=getattr(args, "asked", ())) as wb, ingest_progress_bar(not args.quiet) as progress, \
            library_log(settings):
        source = open_source_store(settings, args.from_collection) if args.from_collection else None
        try:
            reports = wb.ingestor.reindex(args.doc_ids or None, source=source, progress=progress)
        finally:
            if source is not None:
                source.close()
    failed = sum(r.status == "failed" for r in reports)
    detail: dict[str, object] = {"documents": len(reports) - failed, "failed": failed}
    if args.doc_ids:
        detail["doc_ids"] = list(args.doc_ids)
    if args.from_collection:
        detail["from"] = args.from_collection
    record(settings, "documents.reindex", settings.kb_name, "", detail)
    if args.json:
        print_json([r.to_dict() for r in reports])
    else:
        for r in reports:
            print(report_line(r))
        print(f"{len(reports) - failed} rebuilt, {failed} could not be rebuilt")
    return EXIT_FAILED_FILES if any(r.status == "failed" for r in reports) else 0


def cmd_rebuild(args: argparse.Namespace, settings: Settings) -> int:
    from ..bootstrap import build_workbench
    from ..rebuild import check, rebuild

    check(settings, Path(args.source), args.collection)  # bad input: one line, before any progress bar
    with ingest_progress_bar(not args.quiet) as progress, library_log(settings):
        result = rebuild(settings, Path(args.source), args.collection, open_workbench=build_workbench, force=args.force,
                         progress=progress)
    if args.json:
        print_json(result.to_dict())
    else:
        for r in result.reports:
            print(report_line(r))
        for note in result.notes:
            print(f"note: {note}")
        print(f"{len(result.reports) - result.failed} restored, {result.failed} could not be restored "
              f"(kept originals read from {result.source})")
    return EXIT_FAILED_FILES if result.failed else 0


def cmd_migrate(args: argparse.Namespace, settings: Settings) -> int:
    from ..bootstrap import knowledge_bases

    with workbench(settings, migrate=True, asked=getattr(args, "asked", ())) as wb:
        docs = wb.store.list_documents()
    print(f"{settings.kb_name}: up to date ({len(docs)} documents, {sum(d.chunks for d in docs)} chunks)")
    with knowledge_bases(settings) as kbs:  # collections made before knowledge bases, if any was missed
        for name in kbs.adopt():
            print(f"{name}: adopted as a knowledge base")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("reindex", help="re-chunk and re-embed from the kept originals")
    p.add_argument("doc_ids", nargs="*", help="only these documents (default: all)")
    p.add_argument("--from", dest="from_collection", help="copy all documents of another collection")
    p.add_argument("--json", action="store_true", help="print one report per document as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_reindex)

    p = sub.add_parser(
        "rebuild", help="re-index a lost or damaged knowledge base from its kept originals",
        description="Re-chunk and re-embed, into the knowledge base of the current data dir, the newest committed "
                    "version of every document whose original --from kept (each kept original's sidecar names its "
                    "document, so the database is not needed; another data dir is only read). Refuses a "
                    "knowledge base that has documents unless --force. Exits 1 when any document could not be "
                    "restored.")
    p.add_argument("--from", dest="source", required=True, metavar="DIR",
                   help="the data dir of the lost knowledge base (or its originals/ folder, or a folder of kept "
                        "originals)")
    p.add_argument("--collection", metavar="NAME",
                   help="whose kept originals to read (default: the setting milvus.collection)")
    p.add_argument("--force", action="store_true",
                   help="rebuild into a knowledge base that has documents (those found are replaced)")
    p.add_argument("--json", action="store_true", help="print the source, one report per document and the notes "
                                                       "as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_rebuild)

    p = sub.add_parser("migrate", help="rebuild a collection made by an older version (keeps the vectors)")
    p.set_defaults(func=cmd_migrate)
