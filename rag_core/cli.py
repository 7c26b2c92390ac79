"""`python -m rag_core ...`: ingest, chunk, docs, delete, search, explain, reindex, rebuild, config (and chat, eval).

Global options come before the command: `--data-dir` (or RAG_DATA_DIR) isolates a run, `--config`
names a rag.toml, `--set key=value` overrides any setting. `--json` prints machine-readable output on
stdout; progress bars go to stderr. Errors meant for people exit with status 2 and one clear line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from . import chunking, loaders
from .config import KEYS, Settings, describe_keys, env_keys, load_settings, settings_table
from .errors import RagError

EXIT_FAILED_FILES = 1
EXIT_ERROR = 2
EXIT_OUTPUT_CLOSED = 141  # 128 + SIGPIPE: what `yes | head` reports for `yes`


def _print_json(value: Any) -> None:
    json.dump(value, sys.stdout, ensure_ascii=False, indent=2, default=str)
    sys.stdout.write("\n")


def _parse_sets(pairs: Sequence[str]) -> dict[str, str]:
    overrides = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise RagError(f"--set {pair!r}: expected key=value, e.g. --set chunk.max-size=600.")
        overrides[key.strip()] = value
    return overrides


@contextmanager
def _workbench(settings: Settings, migrate: bool = False, asked: Sequence[str] = (),
               succeeded: Callable[[], bool] = lambda: True) -> Iterator[Any]:
    """The workbench of the chosen knowledge base, closed afterwards (releasing Milvus Lite). Imported lazily:
    `chunk` and `config` need no Milvus. `asked`: the settings given with --set; those the knowledge base
    keeps at another value are named on stderr (its own values win).

    The default knowledge base made by this command (the first one on a new data dir) keeps the settings it
    was given, --set included, and says so; when the command fails (an error, or `succeeded()` False at the
    end: every file failed) it is undone while it holds no documents, so a failed command records nothing."""
    from .bootstrap import build_workbench
    from .kb.settings import ignored, made_with

    wb = build_workbench(settings, migrate=migrate)
    ok = False
    try:
        for note in ignored(wb.kb, settings, asked) if wb.kb is not None else ():
            print(f"note: {note}", file=sys.stderr)
        yield wb
        ok = succeeded()
    finally:
        wb.close()
        if wb.made and (ok or not _discard_made(settings, wb.kb)) and (note := made_with(wb.kb, asked)):
            print(f"note: {note}", file=sys.stderr)


def _discard_made(settings: Settings, kb: Any) -> bool:
    """Undo the default knowledge base a failed command made (see _workbench). False when it is kept (it holds
    documents, or it cannot be undone now)."""
    from .bootstrap import knowledge_bases

    try:
        with knowledge_bases(settings) as kbs:
            discarded = kbs.discard_made(kb)
    except Exception:  # noqa: BLE001 - the command's own error is the one reported
        return False
    if discarded:
        print(f"note: the default knowledge base {kb.name!r} this command made was not kept, since the command "
              "failed; the next command makes it again with its own settings.", file=sys.stderr)
    return discarded


@contextmanager
def _count_bar(total: int, unit: str, enabled: bool) -> Iterator[Any]:
    """A tqdm bar on stderr counting `unit`s (a no-op object when disabled)."""
    if not enabled:
        class _Quiet:
            def update(self, n: int) -> None:
                pass

        yield _Quiet()
        return
    from tqdm import tqdm

    with tqdm(total=total, unit=unit, file=sys.stderr, dynamic_ncols=True) as bar:
        yield bar


@contextmanager
def ingest_progress_bar(enabled: bool) -> Iterator[Callable[[Any], None]]:
    """An ingest progress callback drawing a tqdm bar on stderr (chunks of the current file)."""
    if not enabled:
        yield lambda _: None
        return
    from tqdm import tqdm

    bars: list[Any] = []  # drawn at the first event: a command refused before any work draws none

    def update(p) -> None:  # noqa: ANN001
        if not bars:
            bars.append(tqdm(total=0, unit="chunk", file=sys.stderr, dynamic_ncols=True))
        bar = bars[0]
        bar.set_description(f"[{p.file_index + 1}/{p.files_total}] {p.stage} {p.name[-40:]}")
        if p.stage == "embedding":
            if p.done == 0:
                bar.reset(total=p.total)
            bar.n = p.done
        bar.refresh()

    try:
        yield update
    finally:
        for bar in bars:
            bar.close()


def report_line(r: Any) -> str:
    """One IngestReport of a rebuild (reindex, rebuild, kb copy) as a line: status, document, chunks or error."""
    return f"{r.status:<9} {r.doc_id or r.path}  {r.error or f'{r.chunks} chunks'}"


# ---------------------------------------------------------------------------------------- commands
def cmd_ingest(args: argparse.Namespace, settings: Settings) -> int:
    reports: list[Any] = []
    with _workbench(settings, asked=getattr(args, "asked", ()),
                    succeeded=lambda: not any(r.status == "failed" for r in reports)) as wb, \
            ingest_progress_bar(not args.quiet) as progress:
        reports = wb.ingestor.ingest_paths(args.paths, prefix=args.prefix, force=args.force, progress=progress)
    if args.json:
        _print_json([r.to_dict() for r in reports])
    else:
        for r in reports:
            detail = r.error if r.status in ("failed", "skipped") else f"{r.chunks} chunks"
            if r.status == "replaced" and r.diff is not None:
                detail += f": {len(r.diff.added)} added, {len(r.diff.removed)} removed, {r.diff.unchanged} unchanged"
            print(f"{r.status:<9} {r.doc_id or r.path}  ({detail}, {r.seconds:.2f}s)")
        counts = {s: sum(r.status == s for r in reports)
                  for s in ("added", "replaced", "unchanged", "failed", "skipped")}
        print(", ".join(f"{n} {s}" for s, n in counts.items()))
    return EXIT_FAILED_FILES if any(r.status == "failed" for r in reports) else 0


def cmd_chunk(args: argparse.Namespace, settings: Settings) -> int:
    if settings.knowledge_base:  # --kb: that knowledge base's chunking
        from .bootstrap import kb_settings

        settings = kb_settings(settings)
    max_size = args.max_size or settings["chunk.max-size"]
    overlap = settings["chunk.overlap"] if args.overlap is None else args.overlap
    path = Path(args.file)
    doc = loaders.load_path(path, None, max_bytes=int(settings["loader.max-file-mb"] * 1024 * 1024),
                            max_text_chars=settings["loader.max-text-chars"])
    chunks = chunking.chunk_text(doc.text, max_size, overlap)
    if args.json:
        _print_json({"doc_id": doc.doc_id, "max_size": max_size, "overlap": overlap, "characters": len(doc.text),
                     "summary": chunking.overlap_summary(chunks), "chunks": chunking.chunks_to_json(chunks)})
        return 0
    for c in chunks:
        print(f"#{c.chunk_index} [{c.start}:{c.end}] len={c.end - c.start} overlap={c.overlap_chars} "
              f"{c.heading_path_text or '(no heading)'}")
    print(f"{len(chunks)} chunks from {len(doc.text)} characters")
    return 0


def cmd_docs(args: argparse.Namespace, settings: Settings) -> int:
    with _workbench(settings, asked=getattr(args, "asked", ())) as wb:
        docs = wb.store.list_documents()
    if args.json:
        _print_json([d.__dict__ for d in docs])
    else:
        for d in docs:
            kept = "" if d.has_original else "  (no kept original)"
            print(f"{d.doc_id}  {d.chunks} chunks  {d.size_bytes} bytes  {d.ingested_at}{kept}")
        print(f"{len(docs)} documents, {sum(d.chunks for d in docs)} chunks")
    missing = [d.doc_id for d in docs if not d.has_original]
    if missing:  # on stderr, so `docs --json` stays one JSON document
        print(f"{len(missing)} document(s) have no kept original, so `reindex` cannot rebuild them; ingest them "
              f"again from their files: {', '.join(missing[:10])}{' ...' if len(missing) > 10 else ''}",
              file=sys.stderr)
    return 0


def cmd_delete(args: argparse.Namespace, settings: Settings) -> int:
    with _workbench(settings, asked=getattr(args, "asked", ())) as wb:
        doc_id = wb.ingestor.resolve_doc_id(args.doc_id)
        deleted = wb.ingestor.delete(doc_id)
    if not deleted:
        named = f"{args.doc_id!r}" + (f" ({doc_id!r})" if doc_id != args.doc_id else "")
        raise RagError(f"No document {named} in the knowledge base (`docs` lists them).")
    print(f"deleted {doc_id}")
    return 0


# The debugger's knobs, as `search` options: each is the setting it overrides for this command, so values
# are checked by the setting's own rules (choices, range, finite) and its help text is the option's help.
def _lookup_overrides(args: argparse.Namespace, settings: Settings) -> dict[str, Any]:
    """The lookup options of `_lookup_arguments`, as `lookup(...)` keyword arguments."""
    from .retrieval.options import lookup_overrides

    return lookup_overrides(vars(args), settings, no_rerank=getattr(args, "no_rerank", False))


def cmd_search(args: argparse.Namespace, settings: Settings) -> int:
    if bool(args.query) == bool(args.queries):
        raise RagError("search: give one query, or --queries FILE (.jsonl or .csv with a `query` column), "
                       "not both and not neither.")
    _lookup_overrides(args, settings)  # bad values are refused before anything is opened
    if args.queries:
        from .evaluation.datasets import read_query_file

        queries = read_query_file(Path(args.queries))
        with _workbench(settings, asked=getattr(args, "asked", ())) as wb:
            return _search_batch(wb, queries, _lookup_overrides(args, wb.settings), args)
    with _workbench(settings, asked=getattr(args, "asked", ())) as wb:
        result = wb.retriever.lookup(args.query, **_lookup_overrides(args, wb.settings))
    if args.json:
        for warning in result.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        _print_json(result.to_dict())
        return 0
    _print_result(result)
    return 0


def _print_result(result: Any) -> None:
    from .retrieval.rerank import movement

    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for t in result.traces:
        reranked = "" if t.rerank_score is None else \
            f"  rerank {t.rerank_score:.4f}, fused #{t.fused_rank} {movement(t.fused_rank, t.rank)}"
        print(f"{t.rank:>3} {t.score:8.4f} {t.evidence_key:<50} {t.status}{reranked}")
    print("\nEvidence:")
    for c in result.evidence:
        print(f"- [{c.evidence_key}] ({', '.join(c.hit_reasons)}) {c.content[:160]!r}")


def _search_batch(wb: Any, queries: Sequence[tuple[str, str]], overrides: dict[str, Any],
                  args: argparse.Namespace) -> int:
    """One lookup per query in one process (one start-up, one model load); with --json one result per line,
    `{"id": ..., <what search --json prints>}`, or `{"id", "query", "error"}` for a query that was refused."""
    from .errors import RetrievalError

    failed = 0
    with _count_bar(len(queries), "query", enabled=not args.quiet) as bar:
        for qid, query in queries:
            try:
                result = wb.retriever.lookup(query, **overrides)
            except RetrievalError as exc:  # this query is bad; the others still run
                failed += 1
                record: dict[str, Any] = {"id": qid, "query": query, "error": str(exc)}
                if args.json:
                    print(json.dumps(record, ensure_ascii=False, default=str), flush=True)
                else:
                    print(f"== {qid}: {query}\nerror: {exc}\n", flush=True)
            else:
                if args.json:
                    print(json.dumps({"id": qid, **result.to_dict()}, ensure_ascii=False, default=str), flush=True)
                else:
                    print(f"== {qid}: {query}")
                    _print_result(result)
                    print(flush=True)
            bar.update(1)
    if failed:
        print(f"error: {failed} of {len(queries)} queries were refused (see their lines)", file=sys.stderr)
        return EXIT_FAILED_FILES
    return 0


def cmd_explain(args: argparse.Namespace, settings: Settings) -> int:
    from .retrieval.explain import explain

    _lookup_overrides(args, settings)  # bad values are refused before anything is opened
    with _workbench(settings, asked=getattr(args, "asked", ())) as wb:
        e = explain(wb.retriever, wb.store, args.query, args.expect, args.answer, **_lookup_overrides(args, wb.settings))
    if args.json:
        _print_json(e.to_dict())
        return 0
    print(e.verdict)
    if e.answer is not None:
        print(e.answer.describe(e.expect.doc_id))
        for span in e.answer.spans:
            if span.boundary:
                print(f"  boundary: …{span.boundary['context']}…")
    for note in [*e.notes, *e.lookup.warnings]:
        print(f"note: {note}")
    print(f"\n  {'chunk':<44} {'dense':>12} {'bm25':>12} {'fused':>6} {'rank':>5}  fate")
    for c in e.chunks:
        fused = f"#{c.fused_rank}" if c.fused_rank else "—"
        rank = f"#{c.rank}" if c.rank else "—"
        print(f"{'*' if c.target else ' '} {c.evidence_key:<44} {c.channels['dense'].describe():>12} "
              f"{c.channels['bm25'].describe():>12} {fused:>6} {rank:>5}  {c.cause(e.params)}")
    print("\n* = a chunk the question is about (the expected chunk, the chunks holding the answer, or all).")
    return 0


def cmd_reindex(args: argparse.Namespace, settings: Settings) -> int:
    from .bootstrap import open_source_store

    with _workbench(settings, asked=getattr(args, "asked", ())) as wb, ingest_progress_bar(not args.quiet) as progress:
        source = open_source_store(settings, args.from_collection) if args.from_collection else None
        try:
            reports = wb.ingestor.reindex(args.doc_ids or None, source=source, progress=progress)
        finally:
            if source is not None:
                source.close()
    if args.json:
        _print_json([r.to_dict() for r in reports])
    else:
        for r in reports:
            print(report_line(r))
        failed = sum(r.status == "failed" for r in reports)
        print(f"{len(reports) - failed} rebuilt, {failed} could not be rebuilt")
    return EXIT_FAILED_FILES if any(r.status == "failed" for r in reports) else 0


def cmd_rebuild(args: argparse.Namespace, settings: Settings) -> int:
    from .bootstrap import build_workbench
    from .rebuild import check, rebuild

    check(settings, Path(args.source), args.collection)  # bad input: one line, before any progress bar
    with ingest_progress_bar(not args.quiet) as progress:
        result = rebuild(settings, Path(args.source), args.collection, open_workbench=build_workbench,
                         force=args.force, progress=progress)
    if args.json:
        _print_json(result.to_dict())
    else:
        for r in result.reports:
            print(report_line(r))
        for note in result.notes:
            print(f"note: {note}")
        print(f"{len(result.reports) - result.failed} restored, {result.failed} could not be restored "
              f"(kept originals read from {result.source})")
    return EXIT_FAILED_FILES if result.failed else 0


def cmd_migrate(args: argparse.Namespace, settings: Settings) -> int:
    from .bootstrap import knowledge_bases

    with _workbench(settings, migrate=True, asked=getattr(args, "asked", ())) as wb:
        docs = wb.store.list_documents()
    print(f"{settings.kb_name}: up to date ({len(docs)} documents, {sum(d.chunks for d in docs)} chunks)")
    with knowledge_bases(settings) as kbs:  # collections made before knowledge bases, if any was missed
        for name in kbs.adopt():
            print(f"{name}: adopted as a knowledge base")
    return 0


def cmd_config(args: argparse.Namespace, settings: Settings) -> int:
    if args.markdown:
        sys.stdout.write(settings_table())
        return 0
    if settings.knowledge_base:  # --kb: the values that knowledge base is opened with
        from .bootstrap import kb_settings

        settings = kb_settings(settings)
    values = settings.public()
    if args.json:
        _print_json({"data_dir": str(settings.data_dir), "settings": values})
        return 0
    for key, default, env, help_text in describe_keys():
        print(f"{key} = {values[key]!r}   (default {default}; ${env})\n    {help_text}")
    return 0


# ---------------------------------------------------------------------------------------- parser
def _setting_help(key: str, extra: str = "") -> str:
    """An option's help is the help of the setting it overrides (one text, also in `config` and the README)."""
    return f"{KEYS[key].help.rstrip('.')}{extra}; default: the setting {key}"


def _lookup_arguments(p: argparse.ArgumentParser) -> None:
    """Every control of the retrieval debugger, as options (`_lookup_overrides` reads them)."""
    p.add_argument("--retrieve-k", type=int, metavar="N", help=_setting_help("rag.retrieve-k"))
    p.add_argument("--return-n", type=int, metavar="N", help=_setting_help("rag.return-n"))
    p.add_argument("--max-chunks-per-document", type=int, metavar="N",
                   help=_setting_help("rag.max-chunks-per-document"))
    p.add_argument("--mode", choices=KEYS["rag.search-mode"].choices, help=_setting_help("rag.search-mode"))
    p.add_argument("--fusion", choices=KEYS["rag.fusion"].choices, help=_setting_help("rag.fusion", " (hybrid only)"))
    p.add_argument("--rrf-k", type=int, metavar="N", help=_setting_help("rag.rrf-k", " (hybrid with rrf only)"))
    p.add_argument("--dense-weight", type=float, metavar="W", help=_setting_help("rag.dense-weight"))
    p.add_argument("--bm25-weight", type=float, metavar="W", help=_setting_help("rag.bm25-weight"))
    p.add_argument("--no-rerank", action="store_true", help="skip the reranker (rerank.provider) for this lookup")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m rag_core", description="Knowledge-base workbench for RAG.")
    parser.add_argument("--data-dir", help="where milvus.db and kept originals live (default ./data, $RAG_DATA_DIR)")
    parser.add_argument("--config", help="a rag.toml (default ./rag.toml when present, $RAG_CONFIG)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a setting, e.g. --set chunk.max-size=600 (repeatable; `config` lists them)")
    parser.add_argument("--kb", metavar="NAME", help="the knowledge base to work on (default: milvus.collection, "
                                                      "`biz`; `kb list` shows them)")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of unexpected errors")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    json_help = "print machine-readable JSON on stdout"

    p = sub.add_parser("ingest", help="index files or folders (recursive)")
    p.add_argument("paths", nargs="+", help="files and folders; a folder's files get doc_ids relative to it")
    p.add_argument("--prefix", default="", help="folder inside the knowledge base to put the documents in")
    p.add_argument("--force", action="store_true", help="re-index even when unchanged")
    p.add_argument("--json", action="store_true", help="print one report per file as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_ingest)

    p = sub.add_parser("chunk", help="preview how a file is chunked (nothing is indexed)")
    p.add_argument("file", help="a .md, .markdown, .txt, .pdf or .docx file")
    p.add_argument("--max-size", type=int, metavar="N", help=_setting_help("chunk.max-size"))
    p.add_argument("--overlap", type=int, metavar="N", help=_setting_help("chunk.overlap"))
    p.add_argument("--json", action="store_true", help="print the chunks with offsets and the overlap summary as JSON")
    p.set_defaults(func=cmd_chunk)

    p = sub.add_parser("docs", help="list indexed documents")
    p.add_argument("--json", action="store_true", help=json_help)
    p.set_defaults(func=cmd_docs)

    p = sub.add_parser("delete", help="remove a document and its chunks")
    p.add_argument("doc_id", help="the document's id as `docs` lists it, e.g. runbooks/cpu_high.md")
    p.set_defaults(func=cmd_delete)

    p = sub.add_parser(
        "search", help="run the lookup path and show every hit's fate",
        description="Run the one lookup path (what the retrieval debugger shows and the agent's tool gets) for "
                    "one query, or for every query of a file in one process (--queries). Every debugger control "
                    "is an option here.")
    p.add_argument("query", nargs="?", help="the query (omit it with --queries)")
    p.add_argument("--queries", metavar="FILE",
                   help="run every query of a .jsonl ({\"query\": ..., \"id\": ...} per line) or .csv (query[,id] "
                        "columns) file in one process; with --json one result per line")
    _lookup_arguments(p)
    p.add_argument("--json", action="store_true", help="print the full lookup result as JSON (one line per query "
                                                        "with --queries)")
    p.add_argument("--quiet", action="store_true", help="no progress bar (with --queries)")
    p.set_defaults(func=cmd_search)

    p = sub.add_parser(
        "explain", help="why an expected document, chunk or answer is (not) in a query's evidence",
        description="For each chunk of the expected document: its exact rank in each channel over the whole "
                    "knowledge base, its fate in the lookup (kept, beyond retrieve-k, capped, beyond return-n), "
                    "and the smallest change of retrieve-k / cap / return-n that brings it into the evidence.")
    p.add_argument("query", help="the query, as the agent or the debugger would send it")
    p.add_argument("--expect", metavar="DOC_ID[#chunk-N]", help="the document (or chunk) that should be retrieved")
    p.add_argument("--answer", metavar="TEXT",
                   help="the expected answer text: which chunks hold it, and whether a chunk boundary splits it")
    _lookup_arguments(p)
    p.add_argument("--json", action="store_true", help="print the explanation as JSON (what GET /v1/explain returns)")
    p.set_defaults(func=cmd_explain)

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

    p = sub.add_parser("config", help="show every setting with its value, default and variable")
    p.add_argument("--json", action="store_true", help="print the data dir and every value as JSON")
    p.add_argument("--markdown", action="store_true", help="print the settings table of the README (Markdown)")
    p.set_defaults(func=cmd_config)

    from .agent.cli import register as register_chat
    from .evaluation.cli import register as register_eval
    from .kb.cli import register as register_kb
    from .service.server import register as register_serve
    from .store.host_cli import register as register_host

    register_kb(sub)
    register_chat(sub)
    register_eval(sub)
    register_serve(sub)
    register_host(sub)
    return parser


def _output_closed() -> int:
    """The reader of stdout went away (`... --json | head`): stop quietly, like other Unix tools.
    Whatever Python still holds for stdout goes to /dev/null, so its flush at exit cannot complain."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_OUTPUT_CLOSED


# The arguments that are text (not paths), as `dest -> how the error names it`. Python turns bytes of an
# argument that are not UTF-8 into lone surrogates (surrogateescape): fine in a path, which goes back to the
# same bytes, but text that the embedder or the JSON output would fail on (rag_core.text). Paths (--data-dir,
# ingest's files, --queries, rebuild --from, eval's SET and --out, ...) are left out on purpose.
TEXT_ARGUMENTS = {"query": "the query", "question": "the question", "expect": "--expect", "answer": "--answer",
                  "doc_id": "the doc_id", "doc_ids": "the doc_ids", "prefix": "--prefix", "set": "--set",
                  "kb": "--kb", "kbs": "--kb", "name": "the name", "from_collection": "--from",
                  "collection": "--collection", "split": "--split", "by": "--by"}


def _check_text_arguments(args: argparse.Namespace) -> None:
    from .text import check_text

    for dest, shown in TEXT_ARGUMENTS.items():
        value = getattr(args, dest, None)
        values = [value] if isinstance(value, str) else value if isinstance(value, (list, tuple)) else []
        for i, item in enumerate(values):
            if isinstance(item, str):
                check_text(item, shown if len(values) == 1 else f"{shown} (argument {i + 1})")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        _check_text_arguments(args)
        overrides = _parse_sets(args.set)
        args.asked = sorted(overrides)
        settings = load_settings(args.data_dir, args.config, overrides=overrides).for_kb(args.kb)
        settings = replace(settings, per_command=frozenset(overrides) | frozenset(env_keys(os.environ)))
        code = args.func(args, settings)
        sys.stdout.flush()  # a closed pipe shows here, where it is handled, not in Python's flush at exit
        return code
    except RagError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return _output_closed()
    except Exception as exc:  # noqa: BLE001 - a bug or an unexpected service failure
        if args.debug:
            raise
        print(f"error: unexpected failure ({type(exc).__name__}: {str(exc)[:300]}). "
              "Run again with --debug for the traceback.", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
