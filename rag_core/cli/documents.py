"""`python -m rag_core ingest | chunk | docs | delete`: the documents of a knowledge base, and a file's chunks."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from .. import chunking, loaders
from ..config import Settings
from ..errors import RagError
from ..records import IngestStatus
from .audit import Trail, record
from .logs import library_log
from .options import setting_help
from .output import EXIT_FAILED_FILES, ingest_progress_bar, ocr_progress_bar, print_json
from .workbench import workbench


def cmd_ingest(args: argparse.Namespace, settings: Settings) -> int:
    reports: list[Any] = []
    with workbench(settings, asked=getattr(args, "asked", ()),
                   succeeded=lambda: not any(r.status == "failed" for r in reports)) as wb, \
            ingest_progress_bar(not args.quiet) as progress, library_log(settings):
        reports = wb.ingestor.ingest_paths(args.paths, prefix=args.prefix, force=args.force, progress=progress)
    with Trail(settings) as trail:  # what changed: added and replaced documents
        for r in reports:
            if r.status in ("added", "replaced"):
                trail.add("documents.upload", settings.kb_name, r.doc_id, {"status": str(r.status), "chunks": r.chunks})
    return print_reports(reports, args.json)


def print_reports(reports: list[Any], as_json: bool) -> int:
    """What `ingest` prints of its reports (also of those a server answered: cli/remote.py), and its exit status."""
    if as_json:
        print_json([r.to_dict() for r in reports])
    else:
        for r in reports:
            detail = r.error if r.status in ("failed", "skipped") else f"{r.chunks} chunks"
            if r.status == "replaced" and r.diff is not None:
                detail += f": {len(r.diff.added)} added, {len(r.diff.removed)} removed, {r.diff.unchanged} unchanged"
            print(f"{r.status:<9} {r.doc_id or r.path}  ({detail}, {r.seconds:.2f}s)")
            for note in r.notes:  # how it was read: OCR'd pages, Q&A sheets, pages left unread
                print(f"          note: {note}")
        counts = {s: sum(r.status == s for r in reports) for s in IngestStatus}
        print(", ".join(f"{n} {s}" for s, n in counts.items()))
    return EXIT_FAILED_FILES if any(r.status == "failed" for r in reports) else 0


def cmd_chunk(args: argparse.Namespace, settings: Settings) -> int:
    if settings.knowledge_base:  # --kb: that knowledge base's chunking
        from ..bootstrap import kb_settings

        settings = kb_settings(settings)
    max_size = args.max_size or settings["chunk.max-size"]
    overlap = settings["chunk.overlap"] if args.overlap is None else args.overlap
    path = Path(args.file)
    with ocr_progress_bar(not args.quiet) as on_page, library_log(settings):
        options = replace(loaders.load_options(settings), on_page=on_page)
        doc = loaders.load_path(path, None, max_bytes=int(settings["loader.max-file-mb"] * 1024 * 1024),
                                max_text_chars=settings["loader.max-text-chars"], options=options)
    chunks = chunking.chunk_document(doc, max_size, overlap)  # as ingest chunks it
    if args.json:
        print_json({"doc_id": doc.doc_id, "max_size": max_size, "overlap": overlap, "characters": len(doc.text),
                    "encoding": doc.encoding, "notes": list(doc.notes),
                    "note_phrases": [p.to_dict() for p in doc.note_phrases], "ocr_pages": list(doc.ocr_pages),
                    "summary": chunking.overlap_summary(chunks), "chunks": chunking.chunks_to_json(chunks)})
        return 0
    for c in chunks:
        where = f" ({c.location.label}{', OCR' if c.location.ocr else ''})" if c.location else ""
        print(f"#{c.chunk_index} [{c.start}:{c.end}] len={c.end - c.start} overlap={c.overlap_chars}{where} "
              f"{c.heading_path_text or '(no heading)'}")
    for note in doc.notes:
        print(f"note: {note}")
    print(f"{len(chunks)} chunks from {len(doc.text)} characters")
    return 0


def cmd_docs(args: argparse.Namespace, settings: Settings) -> int:
    from .search import caller

    with workbench(settings, asked=getattr(args, "asked", ())) as wb:  # the one person: every document, its groups
        rows = wb.documents_json(caller().scope(wb.settings.kb_name))
    print_documents(rows, args.json)
    return 0


def print_documents(rows: list[dict[str, Any]], as_json: bool) -> None:
    """What `docs` prints of the documents as GET /v1/documents and MCP list_documents answer them
    (`Workbench.documents_json`; also the list a server answered: cli/remote.py)."""
    if as_json:
        print_json(rows)
    else:
        for d in rows:
            kept = "" if d["has_original"] else "  (no kept original)"
            groups = d.get("access_groups")
            access = f"  access: {','.join(groups)}" if groups else ""
            print(f"{d['doc_id']}  {d['chunks']} chunks  {d['size_bytes']} bytes  {d['ingested_at']}{access}{kept}")
        print(f"{len(rows)} documents, {sum(d['chunks'] for d in rows)} chunks")
    missing = [d["doc_id"] for d in rows if not d["has_original"]]
    if missing:  # on stderr, so `docs --json` stays one JSON document
        print(f"{len(missing)} document(s) have no kept original, so `reindex` cannot rebuild them; ingest them "
              f"again from their files: {', '.join(missing[:10])}{' ...' if len(missing) > 10 else ''}",
              file=sys.stderr)


def cmd_tag(args: argparse.Namespace, settings: Settings) -> int:
    from ..kb.tags import metadata, tag

    with workbench(settings, asked=getattr(args, "asked", ())) as wb:
        doc_id = wb.ingestor.resolve_doc_id(args.doc_id)
        if args.tags or args.replace:
            tag(wb.store, doc_id, args.tags, replace=args.replace)
        labels = metadata(wb.store).get(doc_id)
    if labels is None:
        raise RagError(f"No document {doc_id!r} in the knowledge base (`docs` lists them).")
    if args.tags or args.replace:
        record(settings, "tags.set", settings.kb_name, doc_id, {"tags": list(args.tags), "replace": args.replace})
    if args.json:
        print_json({"doc_id": doc_id, "metadata": labels})
    else:
        for key, values in labels.items():
            print(f"{key} = {', '.join(values)}")
    return 0


def cmd_delete(args: argparse.Namespace, settings: Settings) -> int:
    with workbench(settings, asked=getattr(args, "asked", ())) as wb:
        doc_id = wb.ingestor.resolve_doc_id(args.doc_id)
        deleted = wb.ingestor.delete(doc_id)
    if not deleted:
        named = f"{args.doc_id!r}" + (f" ({doc_id!r})" if doc_id != args.doc_id else "")
        raise RagError(f"No document {named} in the knowledge base (`docs` lists them).")
    record(settings, "documents.delete", settings.kb_name, doc_id)
    print(f"deleted {doc_id}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    json_help = "print machine-readable JSON on stdout"

    p = sub.add_parser("ingest", help="index files or folders (recursive)")
    p.add_argument("paths", nargs="+", help="files and folders; a folder's files get doc_ids relative to it")
    p.add_argument("--prefix", default="", help="folder inside the knowledge base to put the documents in")
    p.add_argument("--force", action="store_true", help="re-index even when unchanged")
    p.add_argument("--json", action="store_true", help="print one report per file as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_ingest)

    p = sub.add_parser("chunk", help="preview how a file is chunked (nothing is indexed)")
    p.add_argument("file", help=f"a file of a type ingest reads ({loaders.SUPPORTED_TEXT})")
    p.add_argument("--max-size", type=int, metavar="N", help=setting_help("chunk.max-size"))
    p.add_argument("--overlap", type=int, metavar="N", help=setting_help("chunk.overlap"))
    p.add_argument("--json", action="store_true", help="print the chunks with offsets and the overlap summary as JSON")
    p.add_argument("--quiet", action="store_true", help="no OCR progress bar")
    p.set_defaults(func=cmd_chunk)

    p = sub.add_parser("docs", help="list indexed documents")
    p.add_argument("--json", action="store_true", help=json_help)
    p.set_defaults(func=cmd_docs)

    p = sub.add_parser("tag", help="set tags on a document (key=value; key= removes one) and show its metadata")
    p.add_argument("doc_id", help="the document (as `docs` lists it)")
    p.add_argument("tags", nargs="*", metavar="KEY=VALUE", help="tags to add (repeat a key for several values)")
    p.add_argument("--replace", action="store_true", help="these are all its tags (drop the others)")
    p.add_argument("--json", action="store_true", help="print the document's metadata as JSON")
    p.set_defaults(func=cmd_tag)

    p = sub.add_parser("delete", help="remove a document and its chunks")
    p.add_argument("doc_id", help="the document's id as `docs` lists it, e.g. runbooks/cpu_high.md")
    p.set_defaults(func=cmd_delete)
