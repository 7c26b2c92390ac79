"""The keyword channel a person reads (issue 41, rag_core/retrieval/keywords.py): how close its per-term BM25 scores are
to Milvus's BM25 score of each hit, and what computing them costs a lookup.

Each term's score is Milvus's own (the term searched alone, restricted to the hits shown, the knowledge base's own
statistics); what is estimated is the query's cut into terms (Python jieba in search mode with Milvus's filters,
since Milvus Lite 2.5.1 cannot run its analyzer for us). Where the two cuts agree, the terms' scores add up to the
hit's BM25 score; where they do not, they do not. So, per hit of the BM25 channel: the sum against Milvus's score
(within 0.1 %: "exact"; the ratio sum/score), and per query the Spearman correlation of the sums with Milvus's scores
over its hits (1: the sums rank the hits as Milvus does). Sets: CMRC 2018 dev (Chinese), the same questions in
Traditional characters (OpenCC s2t; the documents stay Simplified), SciFact (English), each a subset indexed in
Milvus Lite; BM25 alone, retrieve-k 20 (about what the debugger shows). Cost: the `keywords` timing of those
lookups (one Milvus request of one query per term, after the jieba dictionary is loaded: its first load, about a
second, is left out by a warm-up lookup), and of hybrid lookups of the same questions.

Prints the tables and writes bench/results/keywords.json (`--quick`: fewer queries, bench/results/quick/).
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path
from typing import Any

from bench.common import log, main, percentiles, record_and_print, section, table

SETS = (  # (label, set, split, convert the questions with OpenCC)
    ("CMRC 2018 dev (Chinese)", "cmrc2018", "dev", None),
    ("CMRC 2018 dev, questions in Traditional", "cmrc2018", "dev", "s2t"),
    ("SciFact (English)", "scifact", "test", None),
)
QUERIES, DOCS = 100, 1000
QUICK_QUERIES, QUICK_DOCS = 10, 100
RETRIEVE_K = 20


def spearman(a: list[float], b: list[float]) -> float | None:
    """Spearman's rank correlation of two equally long lists (ties share their mean rank); None for fewer than 3."""
    if len(a) < 3:
        return None

    def ranks(values: list[float]) -> list[float]:
        order = sorted(range(len(values)), key=lambda i: values[i])
        out = [0.0] * len(values)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
                j += 1
            for k in range(i, j + 1):
                out[order[k]] = (i + j) / 2
            i = j + 1
        return out

    ra, rb = ranks(a), ranks(b)
    ma, mb = statistics.fmean(ra), statistics.fmean(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    var = (sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb)) ** 0.5
    return cov / var if var else 1.0


def measure_set(label: str, name: str, split: str, convert: str | None, queries: int, docs: int,
                folder: Path) -> dict[str, Any]:
    from rag_core.evaluation import load_set
    from rag_core.records import SearchOptions
    from tests.helpers import make_workbench

    eval_set = load_set(name, split=split, limit=queries, corpus_sample=docs)
    asked = [q.text for q in eval_set.queries]
    if convert:
        import opencc

        converter = opencc.OpenCC(convert)
        asked = [converter.convert(q) for q in asked]
    wb = make_workbench(folder / name)
    try:
        if wb.store.is_empty():
            log(f"keywords: indexing {len(eval_set.documents or ())} documents of {name} ...")
            wb.ingestor.ingest_documents(list(eval_set.documents or ()))
        wb.retriever.lookup(asked[0], search=SearchOptions(mode="bm25"), retrieve_k=RETRIEVE_K).to_dict()  # warm-up
        hits = exact = 0
        ratios: list[float] = []
        correlations: list[float] = []
        costs: dict[str, list[float]] = {"bm25": [], "hybrid": []}
        terms: list[int] = []
        for query in asked:
            result = wb.retriever.lookup(query, search=SearchOptions(mode="bm25"), retrieve_k=RETRIEVE_K)
            d = result.to_dict()  # works the keywords out (LookupResult.keywords) and times them
            costs["bm25"].append(result.timings["keywords"])
            terms.append(len(d["query_terms"]))
            sums, scores = [], []
            for h in d["raw_hits"]:
                bm25 = h["channels"]["bm25"]["score"]
                total = sum(h["term_scores"].values())
                hits += 1
                exact += bool(h["bm25_exact"])
                ratios.append(total / bm25 if bm25 else 0.0)
                sums.append(total)
                scores.append(bm25)
            rho = spearman(sums, scores)
            if rho is not None:
                correlations.append(rho)
            hybrid = wb.retriever.lookup(query, search=SearchOptions(mode="hybrid"), retrieve_k=RETRIEVE_K)
            hybrid.to_dict()
            costs["hybrid"].append(hybrid.timings["keywords"])
        return {
            "label": label, "queries": len(asked), "documents": len(eval_set.documents or ()), "hits": hits,
            "exact": exact, "exact_share": exact / hits if hits else None,
            "ratio_median": statistics.median(ratios) if ratios else None,
            "ratio_min": min(ratios) if ratios else None,
            "spearman_mean": statistics.fmean(correlations) if correlations else None,
            "spearman_min": min(correlations) if correlations else None,
            "terms_mean": statistics.fmean(terms) if terms else 0.0,
            "ms": {mode: dict(zip(("p50", "p95"), percentiles(values))) for mode, values in costs.items()},
        }
    finally:
        wb.close()


def measure(quick: bool = False) -> dict[str, Any]:
    queries, docs = (QUICK_QUERIES, QUICK_DOCS) if quick else (QUERIES, DOCS)
    with tempfile.TemporaryDirectory(prefix="bench-keywords-") as tmp:
        rows = [measure_set(label, name, split, convert, queries, docs, Path(tmp))
                for label, name, split, convert in SETS]
    return {"retrieve_k": RETRIEVE_K, "rows": rows}


def render(record: dict[str, Any]) -> str:
    rows = [[r["label"], f"{r['queries']} q / {r['documents']} docs", r["hits"],
             f"{r['exact_share']:.1%}" if r["exact_share"] is not None else "—",
             f"{r['ratio_median']:.4f} (min {r['ratio_min']:.3f})" if r["ratio_median"] is not None else "—",
             f"{r['spearman_mean']:.3f} (min {r['spearman_min']:.3f})" if r["spearman_mean"] is not None else "—",
             f"{r['terms_mean']:.1f}",
             f"{r['ms']['bm25']['p50']:.1f} / {r['ms']['bm25']['p95']:.1f}",
             f"{r['ms']['hybrid']['p50']:.1f} / {r['ms']['hybrid']['p95']:.1f}"] for r in record["rows"]]
    text = table(["Set", "size", "BM25 hits", "sum = Milvus score", "sum / score, median", "Spearman per query",
                  "terms", "ms BM25 p50/p95", "ms hybrid p50/p95"], rows)
    note = (f"BM25 alone, retrieve-k {record['retrieve_k']}: each hit's terms' scores (Milvus's, each term searched "
            "alone among the hits) summed, against Milvus's BM25 score of the hit (equal within 0.1 %: the query was "
            "cut into the terms Milvus cut it into). Spearman: the sums against Milvus's scores over a query's hits. "
            "ms: what working them out adds to a lookup (BM25 alone, and hybrid with its dense-only hits too)."
            + (" Quick run: a few queries." if record["quick"] else ""))
    return section("The keyword channel: per-term BM25 scores against Milvus's", text + "\n\n" + note, record)


def run(quick: bool = False) -> str:
    return record_and_print("keywords", quick, measure(quick), render)


if __name__ == "__main__":
    main(run, __doc__)
