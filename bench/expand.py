"""Small to big, measured: what the agent reads when each evidence block grows to its neighbouring chunks or to its
parent section, against the chunks alone (`rag.expand = none`, the baseline, in the same run), at the same total
token budget.

CMRC 2018 (short Chinese Wikipedia passages), COVID-QA (long English papers) — from ../shared/eval, BEIR layout with
answer offsets — and the sample knowledge base (examples/kb with examples/kb_queries.jsonl), each indexed once with
the local embedder into a temporary Milvus Lite data dir, then searched once per query
(`rag_core.evaluation.run_evaluation`; the expansion, merge and projection re-assemble the same hits) at the lookup
defaults a knowledge base gets (the measured fusion) but wider: retrieve-k `RETRIEVE_K`, return-n `RETURN_N`, cap
`CAP` per document, the character budgets lifted, so that the total token budget (rag.context-tokens: `BUDGETS`)
is what binds. rag.block-tokens and chunk.parent-max-size stay at their defaults.

Per set, expansion and budget: answer in context (the answer's text in what the agent reads), span recall over the
projected items' document ranges, the tokens used, and the offline agent's answer found (the offline answer,
`agent.offline.compose` with the embedder, holds a gold answer: `evaluation.answers.found_in`) on the first
`OFFLINE` queries of each set at `REFERENCE_TOKENS` (composing embeds every sentence it reads: at every point it
would take the run past a quarter of an hour). The goal: at equal tokens, `parent` or `neighbours` raises answer
in context by at least 5 points on the long-document sets (those whose documents hold `LONG_CHUNKS` chunks or more
on average).

The choice (rag_core/retrieval/expand_defaults.py) is written to rag_core/retrieval/expand_measured.json: a knowledge
base created without rag.expand set anywhere takes it, with a note saying so. A full run writes
bench/results/expand.json too; `--quick` writes bench/results/quick/ only.
"""

from __future__ import annotations

import re
import statistics
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from bench.common import load, log, main, need_set, record_and_print, result_path, section, table
from rag_core.retrieval.expand_defaults import DATA, GOAL_POINTS, REFERENCE_TOKENS, mode_name, write_defaults

# (label, set, split, queries, other documents in the corpus slice): the first queries of each split (as
# bench/fusion.py), so that the corpus slice indexes in a minute or two on two shared cores
SETS = (
    ("CMRC 2018", "cmrc2018", "dev", 100, 200),
    ("COVID-QA", "covidqa", "test", 100, 10),
    ("sample KB, zh+en", "sample", None, None, None),
)
# (chunk size, overlap): the default chunking, and small chunks, which small to big is for (search small chunks,
# give the agent their section); the default for new knowledge bases is chosen on the default chunking
CHUNKINGS = ((800, 100), (300, 30))
MODES = ("none", "neighbours", "parent")
NEIGHBOURS = (1, 2)
BUDGETS = (1000, 2000, 4000)
RETRIEVE_K, RETURN_N, CAP = 100, 60, 10  # wide enough that `none` can fill the largest budget with small chunks
OFFLINE = 25  # queries per set whose offline answer is composed, at REFERENCE_TOKENS (an embedding per sentence)
LONG_CHUNKS = 3.0  # chunks per document from which a set counts as long-document
QUICK_QUERIES = 6
LIFTED = {"projection.max-chars-per-item": 1_000_000, "projection.max-total-chars": 10_000_000}
_HEADING = re.compile(r"^#{1,6} \S", re.M)


def measure(quick: bool = False) -> dict[str, Any]:
    from rag_core.config import load_settings
    from rag_core.embedding.local import LocalUSEEmbedder
    from rag_core.kb.settings import with_measured_settings

    embedder = LocalUSEEmbedder()
    sets = []
    with tempfile.TemporaryDirectory(prefix="bench-expand-") as tmp:
        settings = load_settings(data_dir=Path(tmp), env={}, config_file=None,
                                 overrides={**LIFTED, "milvus.lite-mode": "exclusive"})
        settings, _ = with_measured_settings(settings, "the fusion measured for the embedder")
        for chunking in CHUNKINGS:
            chunked = settings.with_overrides({"chunk.max-size": chunking[0], "chunk.overlap": chunking[1]}, "bench")
            sets += [measure_set(chunked, embedder, quick, *one) for one in SETS]
    return {"sets": sets, "embedder": embedder.name,
            "point": {"retrieve_k": RETRIEVE_K, "return_n": RETURN_N, "max_chunks_per_document": CAP,
                      "block_tokens": settings["rag.block-tokens"],
                      "parent_max_size": settings["chunk.parent-max-size"],
                      "merge": settings["rag.merge"], "mode": settings["rag.search-mode"],
                      "fusion": settings["rag.fusion"], "chunk_size": settings["chunk.max-size"],
                      "overlap": settings["chunk.overlap"], "chunkings": [list(c) for c in CHUNKINGS]},
            "budgets": list(BUDGETS), "offline_queries": OFFLINE, "long_chunks": LONG_CHUNKS}


def measure_set(settings: Any, embedder: Any, quick: bool, label: str, name: str, split: str | None,
                queries: int | None, others: int | None) -> dict[str, Any]:
    """One set indexed with `settings`' chunking, every point of the grid scored."""
    from rag_core.agent.offline import compose
    from rag_core.bootstrap import factories
    from rag_core.evaluation import Grid, load_set, run_evaluation
    from rag_core.evaluation.answers import found_in
    from rag_core.evaluation.metrics import context_item

    if name != "sample":
        need_set(name)
    limit = QUICK_QUERIES if quick else queries
    eval_set = load_set(name, split=split, limit=limit, corpus_sample=others if limit else None)
    texts = {d.doc_id: d.text for d in eval_set.documents or ()}
    composed = {q.query_id for q in eval_set.queries[: QUICK_QUERIES if quick else OFFLINE]}
    checked = Counter[str]()

    def more(query: Any, result: Any) -> dict[str, Any]:
        """The offline answer's figure on the composed queries; every placed item checked against its document (its
        kept text is the document's characters at its range); hits under a heading."""
        blocks = {b.key: b for b in result.blocks}
        for item in result.projection.items:
            c = context_item(item, blocks.get(item.document_id))
            if c.start is not None and c.end is not None:
                kept = texts.get(str(c.doc_id), "")[c.start:c.end]
                checked["placed"] += 1
                checked["mismatched"] += not c.content.startswith(kept)
        budget, mode = result.params.budgets.max_total_tokens, result.params.expand.mode
        if (mode, budget) == ("none", BUDGETS[0]):  # once per query
            checked["hits"] += len(result.evidence)
            checked["under_heading"] += sum(bool(c.metadata.get("headingPath")) for c in result.evidence)
        if query.query_id not in composed or not query.answers or budget != REFERENCE_TOKENS:
            return {}
        answer = compose(query.text, result.projection.items, embedder=embedder)
        return {"offline_found": found_in(answer, [a.text for a in query.answers])}

    grid = Grid.from_settings(settings, expand=list(MODES), expand_neighbours=list(NEIGHBOURS),
                              context_tokens=list(BUDGETS), retrieve_k=[RETRIEVE_K], return_n=[RETURN_N],
                              max_chunks_per_document=[CAP])
    chunking = (settings["chunk.max-size"], settings["chunk.overlap"])
    log(f"expand: {label}, chunks {chunking[0]}/{chunking[1]} ({len(eval_set.queries)} queries, {len(texts)} "
        "documents) ...")
    run = run_evaluation(eval_set, grid, settings, factories=factories(), embedder=embedder, score_more=more)
    index = run.index[0]
    rows = []
    for p in run.points:
        found = [q["offline_found"] for q in p.queries if "offline_found" in q]
        rows.append({"expand": p.point.expand,
                     "neighbours": p.point.expand_neighbours if p.point.expand == "neighbours" else None,
                     "context_tokens": p.point.context_tokens, **{k: p.metrics[k] for k in (
                         "answer_in_context", "span_recall_context", "context_tokens_used", "answer_recall")},
                     "offline_found": sum(found) / len(found) if found else None, "offline_queries": len(found),
                     "unplaced": sum(q["context_unplaced"] for q in p.queries)})
        log(f"  {mode_name(rows[-1]['expand'], rows[-1]['neighbours'])} @ {p.point.context_tokens}: "
            f"answer in context {p.metrics['answer_in_context']:.3f}")
    per_doc = index["chunks"] / max(1, index["documents"])
    default = chunking == CHUNKINGS[0]
    return {"label": f"{label} ({len(eval_set.queries)} q, {len(texts)} docs"
                     f"{'' if default else f', chunks {chunking[0]}/{chunking[1]}'})",
            "set": name, "split": split, "chunking": list(chunking), "default_chunking": default,
            "queries": len(eval_set.queries), "documents": len(texts),
            "chunks": index["chunks"], "chunks_per_document": round(per_doc, 2),
            "median_document_chars": statistics.median(len(t) for t in texts.values()),
            "documents_with_headings": sum(bool(_HEADING.search(t)) for t in texts.values()),
            "hits_under_heading": checked["under_heading"], "hits": checked["hits"],
            "placed_items": checked["placed"], "placed_mismatched": checked["mismatched"],
            "long": per_doc >= LONG_CHUNKS, "rows": rows}


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.1f}"


def render(record: dict[str, Any]) -> str:
    """One table: per set, budget and expansion, what the agent reads, against `none` at the same budget."""
    rows = []
    for s in record["sets"]:
        base = {r["context_tokens"]: r for r in s["rows"] if r["expand"] == "none"}
        for tokens in record["budgets"]:
            for r in (r for r in s["rows"] if r["context_tokens"] == tokens):
                b = base[tokens]
                none = r["expand"] == "none"
                gain = (r["answer_in_context"] - b["answer_in_context"]) * 100
                ratio = r["answer_in_context"] / b["answer_in_context"] if b["answer_in_context"] else None
                rows.append([s["label"], tokens, mode_name(r["expand"], r["neighbours"]) + (" (baseline)" if none
                                                                                             else ""),
                             _pct(r["answer_in_context"]), "–" if none else f"{gain:+.1f}",
                             "–" if none or ratio is None else f"{ratio:.2f}", _pct(r["span_recall_context"]),
                             f"{r['context_tokens_used']:.0f}", _pct(r["offline_found"]), _pct(r["answer_recall"])])
    text = table(["set", "tokens", "expand", "answer in context %", "vs none (points)", "ratio",
                  "span recall (context) %", "tokens used (mean)", "offline answer found %", "answer recall %"],
                 rows, digits=1)
    return section("Small to big: what the agent reads at equal tokens (answer in context vs none)",
                   text + "\n\n" + _notes(record), record)


def goal(sets: list[dict[str, Any]], tokens: int) -> tuple[bool, list[str]]:
    """Whether some expansion raises answer in context by GOAL_POINTS on every long-document set of `sets` (one
    chunking's) at `tokens`, and each long set's best gain there."""
    from rag_core.retrieval.expand_defaults import gains

    long_sets = [s for s in sets if s["long"]]
    modes = list(dict.fromkeys((r["expand"], r["neighbours"]) for s in long_sets for r in s["rows"]
                               if r["expand"] != "none"))
    met = any(min(gains(long_sets, *m, tokens=tokens)) >= GOAL_POINTS for m in modes) if long_sets else False
    best = []
    for s in long_sets:
        found = max(((gains([s], *m, tokens=tokens)[0], m) for m in modes), key=lambda x: x[0])
        best.append(f"{s['label'].split(' (')[0]} {found[0]:+.1f} ({mode_name(*found[1])})")
    return met, best


def _notes(record: dict[str, Any]) -> str:
    p = record["point"]
    sets = record["sets"]
    shape = "; ".join(
        f"{s['label'].split(' (')[0]}: {s['chunks_per_document']:g} chunks per document (median "
        f"{s['median_document_chars']:,.0f} characters), {s['documents_with_headings']} of {s['documents']} documents "
        f"with Markdown headings, {s['hits_under_heading']} of {s['hits']} evidence chunks under a heading"
        for s in sets)
    goals = []
    for size, overlap in record["point"].get("chunkings", [[p["chunk_size"], p["overlap"]]]):
        chunked = [s for s in sets if s.get("chunking", [size, overlap]) == [size, overlap]]
        for tokens in record["budgets"]:
            met, best = goal(chunked, tokens)
            goals.append(f"chunks {size}/{overlap}, {tokens} tokens: {'met' if met else 'not met'} (best gain: "
                         f"{', '.join(best)})")
    chosen = "; ".join(f"chunks {c[0]}/{c[1]}: rag.expand = {pick['rag.expand']!r} ({pick['why']})"
                       for c, pick in _per_chunking(record))
    placed = sum(s["placed_items"] for s in sets)
    mismatched = sum(s["placed_mismatched"] for s in sets)
    long_sets = ", ".join(dict.fromkeys(s["label"].split(" (")[0] for s in sets if s["long"])) or "none"
    return (f"Every point from one search per query ({record['embedder']}, {p['mode']} / {p['fusion']}, retrieve-k "
            f"{p['retrieve_k']}, return-n {p['return_n']}, cap {p['max_chunks_per_document']} per document, chunks "
            f"{p['chunk_size']}/{p['overlap']} unless the set says other, rag.block-tokens {p['block_tokens']}, "
            f"chunk.parent-max-size {p['parent_max_size']}, merge {'on' if p['merge'] else 'off'}, character budgets "
            "lifted): only the "
            "total token budget (rag.context-tokens, Qwen's tokenizer) differs between a row and its baseline. "
            "Answer in context: the answer's text in what the agent reads (the projected items); span recall "
            "(context): the share of the gold answer span's characters the projected items' document ranges cover "
            "(only what the budgets kept; the sample set's answers have no offsets: –); offline answer found: the "
            f"offline agent's answer (quotes chosen with the embedder) holds a gold answer, on the first "
            f"{record['offline_queries']} queries of each set at {REFERENCE_TOKENS} tokens; answer recall: the "
            f"evidence metric (an answer chunk among the hits kept), for reference. The documents: {shape}. Without "
            "headings `parent` is a window of "
            f"whole chunks up to chunk.parent-max-size characters around the hit (a CMRC passage fits whole). Placed "
            f"items checked against the documents' text: {placed:,}, {mismatched} mismatched. Long-document sets "
            f"(at least {record['long_chunks']:g} chunks per document): {long_sets}. Goal (at equal tokens, parent or "
            f"neighbours raises answer in context by at least {GOAL_POINTS:g} points on every long-document set): "
            f"{'; '.join(goals)}. The default for new knowledge bases (rag_core/retrieval/expand_measured.json, "
            f"chosen per chunking at {REFERENCE_TOKENS} tokens; a new knowledge base takes the one measured at the "
            f"chunk size nearest its own): {chosen}."
            + (" Quick run: a few queries per set." if record["quick"] else ""))


def _per_chunking(record: dict[str, Any]) -> list[tuple[tuple[int, int], dict[str, Any]]]:
    """Each measured chunking and the choice made on its sets."""
    from rag_core.retrieval.expand_defaults import choice

    chunkings = list(dict.fromkeys(tuple(s.get("chunking", ())) for s in record["sets"]))
    return [((c[0], c[1]), choice([s for s in record["sets"] if tuple(s.get("chunking", ())) == c]))
            for c in chunkings if c]


def run(quick: bool = False) -> str:
    data = measure(quick)
    text = record_and_print("expand", quick, data, render)
    write_defaults(load("expand", quick) or {}, defaults_path(quick))
    return text


def defaults_path(quick: bool) -> Path:
    return result_path("expand-defaults", True) if quick else DATA


if __name__ == "__main__":
    main(run, __doc__)
