"""`python -m rag_core search | explain`: the one lookup path (what the debugger shows and the agent's tool gets),
for one query or a file of queries, and why an expected document, chunk or answer is (not) in the evidence.
`--history FILE` gives the conversation before the query, so a follow-up question is searched as the standalone
question it means."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..access.records import EVERYONE, UNRESTRICTED, AccessScope, Principal, Role
from ..config import Settings
from ..errors import AccessError, Forbidden, RagError, RetrievalError
from ..records import ConversationTurn, Rewrite, cited_as
from ..retrieval.keywords import HitTerms
from .options import lookup_arguments, lookup_overrides
from .output import EXIT_FAILED_FILES, count_bar, json_line, print_json
from .workbench import workbench


def cmd_search(args: argparse.Namespace, settings: Settings) -> int:
    if bool(args.query) == bool(args.queries):
        raise RagError("search: give one query, or --queries FILE (.jsonl or .csv with a `query` column), "
                       "not both and not neither.")
    lookup_overrides(args, settings)  # bad values are refused before anything is opened
    history = read_history(args.history)
    if args.queries:
        from ..evaluation.datasets import read_query_file

        queries = read_query_file(Path(args.queries))
        with workbench(settings, asked=getattr(args, "asked", ())) as wb:
            return _search_batch(wb, queries, {**lookup_overrides(args, wb.settings), "history": history,
                                               "access": access_as(args.as_user, wb.settings)}, args)
    with workbench(settings, asked=getattr(args, "asked", ())) as wb:
        result = wb.retriever.lookup(args.query, history=history, access=access_as(args.as_user, wb.settings),
                                     **lookup_overrides(args, wb.settings))
    print_lookup(result, args.json)
    return 0


def print_lookup(result: Any, as_json: bool) -> None:
    """What `search` prints of one lookup (also of one a server answered: cli/remote.py)."""
    if as_json:
        for warning in result.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        print_json(result.to_dict())
        return
    _print_result(result)


def caller() -> Principal:
    """Who runs this command: on this machine, the one person (an admin of every knowledge base, as without users).
    The one place a CLI that signs in (against a server) would name its user instead."""
    return EVERYONE


def access_as(user: str | None, settings: Settings) -> AccessScope:
    """`--as USER`: the access scope USER has on the knowledge base `settings` open (their groups; told what they
    hid when they are its admin), for an admin of it only; without --as, every document. An unknown or revoked
    user is one line."""
    if not user:
        return UNRESTRICTED
    kb = settings.kb_name
    if not caller().can(kb, Role.ADMIN):
        raise Forbidden(f"--as {user}: searching as another user needs the admin role on {kb!r}.")
    from ..bootstrap import build_access_store

    store = build_access_store(settings)
    try:
        principal = store.principal(user)
    finally:
        store.close()
    if principal is None:
        raise AccessError(f"--as {user}: no such user (or revoked); `python -m rag_core users list` lists them.")
    return principal.scope(kb)


def read_history(path: str | None) -> tuple[ConversationTurn, ...]:
    """The conversation of `--history FILE` (JSON lines of {"role", "content"}, or "user: ..." / "assistant: ..."
    lines; retrieval.rewrite.read_history_file); a file that is missing, unreadable or malformed is one line."""
    from ..retrieval.rewrite import read_history_file

    if not path:
        return ()
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise RagError(f"--history {path}: no such file.") from None
    except UnicodeDecodeError as exc:
        raise RagError(f"--history {path}: byte 0x{exc.object[exc.start]:02X} is not UTF-8; save the file as "
                       "UTF-8.") from None
    except OSError as exc:
        raise RagError(f"--history {path}: cannot be read ({exc.strerror or exc}).") from None
    return read_history_file(text, f"--history {path}")


def searched_as(rewrite: Rewrite | None) -> str | None:
    """The line saying what was searched for a question asked after earlier turns (None without history)."""
    if rewrite is None:
        return None
    why = f"{rewrite.outcome}, {rewrite.by}" if rewrite.by else rewrite.outcome
    return f"Searched as: {rewrite.searched} ({why}{'; ' + rewrite.detail if rewrite.detail else ''})"


def _print_result(result: Any) -> None:
    from ..retrieval.rerank import movement

    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    said = searched_as(result.rewrite)
    if said:
        print(said + "\n")
    where = {c.rank: c.metadata.get("location") for c in result.candidates}  # "p. 12", "slide 3" (new formats)
    for t in result.traces:
        reranked = "" if t.rerank_score is None else \
            f"  rerank {t.rerank_score:.4f}, fused #{t.fused_rank} {movement(t.fused_rank, t.rank)}"
        located = f"  ({where[t.rank]})" if where.get(t.rank) else ""
        print(f"{t.rank:>3} {t.score:8.4f} {t.evidence_key:<50} {t.status}{reranked}{located}")
    data = result.to_dict()
    terms: dict[str, HitTerms] = {}  # each evidence key's BM25 terms, from its first raw hit (retrieval.keywords)
    for h in data["raw_hits"]:
        if "matched_terms" in h:
            terms.setdefault(h["evidence_key"], HitTerms(tuple(h["matched_terms"]), h["term_scores"], h["bm25_exact"]))
    print("\nEvidence:" + (f" (BM25 terms of the query: {' '.join(data['query_terms'])})"
                            if data.get("query_terms") else ""))
    for c in result.evidence:
        location = str(c.metadata.get("location") or "")
        cited = f" {cited_as(c.source, location)}:" if location else ""
        print(f"- [{c.evidence_key}]{cited} ({', '.join(c.hit_reasons)}) {c.content[:160]!r}")
        if c.evidence_key in terms and data.get("query_terms"):
            print(f"  terms: {keyword_line(terms[c.evidence_key])}")
        if c.metadata.get("sourceUrl"):  # a synced source's document: where a person opens it
            print(f"  at the source: {c.metadata['sourceUrl']}")
    _print_context(result)


def _print_context(result: Any) -> None:
    """What the agent is given, block by block, when blocks grew, merged or a budget left some out."""
    projection, blocks = result.projection, {b.key: b for b in result.blocks}
    if result.params.expand.mode == "none" and not projection.left_out and all(
            len(b.matched) == 1 for b in result.blocks):
        return
    print(f"\nGiven to the agent ({projection.tokens:,} of {result.params.budgets.max_total_tokens:,} tokens, "
          f"rag.expand = {result.params.expand.mode}; counted with {projection.tokenizer}):")
    for item in projection.items:
        block = blocks.get(item.document_id)
        span = f"chunks {block.first}-{block.last}" if block and block.first != block.last else ""
        said = [part for part in (span, f"section '{block.section}'" if block and block.grown and block.section
                                  else "", f"{item.tokens:,} tokens" + (", cut" if item.truncated else ""),
                                  f"stopped: {block.stopped}" if block and block.stopped else "",
                                  "holds " + ", ".join(block.matched) if block and len(block.matched) > 1 else "")
                if part]
        print(f"- [{item.document_id}] {'; '.join(said)}")
    for key, reason in projection.left_out:
        print(f"- left out: {key} ({reason})")


def _search_batch(wb: Any, queries: Sequence[tuple[str, str, tuple[ConversationTurn, ...]]],
                  overrides: dict[str, Any], args: argparse.Namespace) -> int:
    """One lookup per query in one process (one start-up, one model load); with --json one result per line,
    `{"id": ..., <what search --json prints>}`, or `{"id", "query", "error"}` for a query that was refused. A line
    holding a conversation (`turns`, or `query` with `history`) is searched after it; others after --history."""
    failed = 0
    with count_bar(len(queries), "query", enabled=not args.quiet) as bar:
        for qid, query, history in queries:
            try:
                result = wb.retriever.lookup(query, **{**overrides, **({"history": history} if history else {})})
            except RetrievalError as exc:  # this query is bad; the others still run
                failed += 1
                record: dict[str, Any] = {"id": qid, "query": query, "error": str(exc)}
                if args.json:
                    print(json_line(record), flush=True)
                else:
                    print(f"== {qid}: {query}\nerror: {exc}\n", flush=True)
            else:
                if args.json:
                    print(json_line({"id": qid, **result.to_dict()}), flush=True)
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
    from ..retrieval.explain import explain

    lookup_overrides(args, settings)  # bad values are refused before anything is opened
    history = read_history(args.history)
    with workbench(settings, asked=getattr(args, "asked", ())) as wb:
        e = explain(wb.retriever, wb.store, args.query, args.expect, args.answer, history=history,
                    access=access_as(args.as_user, wb.settings), **lookup_overrides(args, wb.settings))
    print_explanation(e, args.json)
    return 0


def print_explanation(e: Any, as_json: bool) -> None:
    """What `explain` prints (also of an explanation a server answered: cli/remote.py)."""
    if as_json:
        print_json(e.to_dict())
        return
    said = searched_as(e.lookup.rewrite)
    if said:
        print(said)
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
    terms = [c for c in e.chunks if c.target and c.terms is not None]
    if terms:
        print(f"\nBM25 terms of the query: {' '.join(e.to_dict()['query_terms']) or '(none)'}")
    for c in terms:
        print(f"  {c.evidence_key}: {keyword_line(c.terms)}")


def keyword_line(terms: Any) -> str:
    """A chunk's matched BM25 terms with their shares of its BM25 score (retrieval.keywords.HitTerms), on one line."""
    if not terms.matched:
        return "contains none of them"
    shares = terms.shares
    said = ", ".join(f"{t} {shares[t]:.0%}" if t in shares else t for t in terms.matched)
    return f"contains {said}" + (f" (of BM25 {terms.total:.3f})" if terms.scores else " (found in the text, unscored)")


HISTORY_HELP = ("the conversation before the query: a file of \"user: ...\" / \"assistant: ...\" lines or JSON "
                "lines ({\"role\": ..., \"content\": ...}); a follow-up question is searched as the standalone "
                "question it means")


AS_HELP = ("look up as this user would: only the documents their access groups may retrieve (admins of the "
           "knowledge base only)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "search", help="run the lookup path and show every hit's fate",
        description="Run the one lookup path (what the retrieval debugger shows and the agent's tool gets) for "
                    "one query, or for every query of a file in one process (--queries). Every debugger control "
                    "is an option here.")
    p.add_argument("query", nargs="?", help="the query (omit it with --queries)")
    p.add_argument("--queries", metavar="FILE",
                   help="run every query of a .jsonl ({\"query\": ..., \"id\": ...} per line) or .csv (query[,id] "
                        "columns) file in one process; with --json one result per line")
    lookup_arguments(p)
    p.add_argument("--as", dest="as_user", metavar="USER", help=AS_HELP)
    p.add_argument("--history", metavar="FILE", help=HISTORY_HELP)
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
    p.add_argument("--expect", metavar="DOC_ID[#chunk-N]",
                   help="the document, chunk or chunk range (#chunk-3..5) that should be retrieved")
    p.add_argument("--answer", metavar="TEXT",
                   help="the expected answer text: which chunks hold it, and whether a chunk boundary splits it")
    lookup_arguments(p, explain=True)
    p.add_argument("--as", dest="as_user", metavar="USER", help=AS_HELP)
    p.add_argument("--history", metavar="FILE", help=HISTORY_HELP)
    p.add_argument("--json", action="store_true", help="print the explanation as JSON (what GET /v1/explain returns)")
    p.set_defaults(func=cmd_explain)
