"""Why were relevant documents (and answers) not retrieved? On the bundled evaluation sets, every query
whose relevant document is missing from the evidence at the app's defaults (hybrid, retrieve-k 20,
return-n 5, 2 chunks per document) goes through `rag_core.retrieval.explain`, and the causes are
tabulated: beyond return-n, dropped by the per-document cap, beyond retrieve-k (a retrieve-k up to 1,000
brings it in) or no channel ranking it in the top 1,000. Sets with answer offsets are also explained at
answer level: queries whose evidence holds no chunk containing the answer span.

For a query with several relevant documents, the one closest to the evidence is explained. There is no
baseline: this is a diagnosis, not a race. Corpora are indexed into bench/results/data (shared with the
quality benchmark, so an index built by one is reused by the other).
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from bench.common import RESULTS, log, main, need_set, record_and_print, section, table

SETS = (("scifact", "test"), ("cmrc2018", "dev"), ("covidqa", "test"))
CAUSES = ("beyond_return_n", "doc_cap", "beyond_retrieve_k", "no_channel", "answer_split", "not_found", "in_evidence",
          "in_context")
SHOWN = 5  # the causes with a column; the rest are "other"
LABELS = {"beyond_return_n": "beyond return-n", "doc_cap": "per-document cap",
          "beyond_retrieve_k": "beyond retrieve-k", "no_channel": "no channel in top 1,000",
          "answer_split": "answer split by a chunk boundary", "not_found": "answer text not in the chunks",
          "in_evidence": "found by explain", "in_context": "in an evidence block's context"}
# For a query with several relevant documents or answers, the one closest to the evidence is explained.
ORDER = {c: i for i, c in enumerate(("in_evidence", "in_context", "beyond_return_n", "doc_cap", "beyond_retrieve_k",
                                     "answer_split", "no_channel", "not_found"))}
QUICK_LIMIT = 30


def _tally(explanations: list[Any]) -> dict[str, Any]:
    causes = {c: 0 for c in CAUSES}
    ks, ns, caps = [], [], []
    for e in explanations:
        causes[e.cause] = causes.get(e.cause, 0) + 1
        if e.fix is not None:
            ks.append(e.fix.changes.get("retrieve_k"))
            ns.append(e.fix.changes.get("return_n"))
            caps.append(e.fix.changes.get("max_chunks_per_document"))
    median = lambda xs: statistics.median(x for x in xs if x) if any(xs) else None  # noqa: E731
    return {
        "missed": len(explanations),
        "causes": causes,
        "fixed_by_settings": sum(e.fix is not None for e in explanations),
        "median_retrieve_k": median(ks),
        "median_return_n": median(ns),
        "median_cap": median(caps),
    }


def measure(quick: bool = False) -> dict[str, Any]:
    from rag_core.bootstrap import open_eval_store
    from rag_core.config import load_settings
    from rag_core.embedding.local import LocalUSEEmbedder
    from rag_core.evaluation import collection_name, load_beir
    from rag_core.evaluation import metrics as m
    from rag_core.evaluation.indexing import bulk_index
    from rag_core.retrieval import KnowledgeRetriever, StoreSearchPort, params_from_settings
    from rag_core.retrieval.explain import explain

    settings = load_settings(data_dir=RESULTS / ("quick" if quick else "") / "data", env={}, config_file=None)
    embedder = LocalUSEEmbedder()
    params = params_from_settings(settings)
    size, overlap = settings["chunk.max-size"], settings["chunk.overlap"]
    out: dict[str, Any] = {"params": params.to_dict(), "quick_limit": QUICK_LIMIT if quick else None, "sets": {}}
    for name, split in SETS:
        eval_set = load_beir(need_set(name), split=split, limit=QUICK_LIMIT if quick else None, name=name)
        store = open_eval_store(settings, collection_name(eval_set.documents, size, overlap, embedder.name), embedder)
        try:
            log(f"explain: {name}: indexing {len(eval_set.documents)} documents (reused when unchanged) ...")
            bulk_index(store, embedder, eval_set.documents, chunk_size=size, overlap=overlap)
            retriever = KnowledgeRetriever(StoreSearchPort(store, embedder, params.search), params)
            started, doc_level, answer_level, answer_queries = time.perf_counter(), [], [], 0
            for q in eval_set.queries:
                result = retriever.lookup(q.text)
                evidence_docs = {c.doc_id for c in result.evidence}
                if not evidence_docs & set(q.relevant):
                    tried = [explain(retriever, store, q.text, doc_id) for doc_id in sorted(q.relevant)]
                    doc_level.append(min(tried, key=lambda e: ORDER[e.cause]))
                located = [a for a in q.answers if a.doc_id and a.start is not None]
                if located:
                    answer_queries += 1
                    if not m.answer_found(map(m.returned_chunk, result.evidence), q.answers, q.relevant):
                        tried = [explain(retriever, store, q.text, a.doc_id, a.text, answer_start=a.start)
                                 for a in located]
                        answer_level.append(min(tried, key=lambda e: ORDER[e.cause]))
            log(f"  {len(doc_level)} documents and {len(answer_level)} answers missed, explained in "
                f"{time.perf_counter() - started:.0f} s")
        finally:
            store.close()
        out["sets"][name] = {"split": split, "queries": len(eval_set.queries), "documents": _tally(doc_level),
                             "answer_queries": answer_queries,
                             "answers": _tally(answer_level) if answer_queries else None}
    return out


def render(record: dict[str, Any]) -> str:
    def share(n: int, total: int) -> str:
        return f"{n} ({n / total:.0%})" if total else "0"

    rows = []
    for name, s in record["sets"].items():
        for level, label, total in (("documents", "relevant document", s["queries"]),
                                    ("answers", "answer chunk", s["answer_queries"])):
            t = s.get(level)
            if not t:
                continue
            other = sum(t["causes"].get(c, 0) for c in CAUSES[SHOWN:])
            rows.append([name, label, total, share(t["missed"], total),
                         *(share(t["causes"].get(c, 0), t["missed"]) for c in CAUSES[:SHOWN]),
                         share(other, t["missed"]), t["median_retrieve_k"], t["median_return_n"], t["median_cap"]])
    p = record["params"]
    md = table(["set", "missing", "queries", "missed", *(LABELS[c] for c in CAUSES[:SHOWN]), "other",
                "median retrieve-k fix", "median return-n fix", "median cap fix"], rows, 0)
    md += (
        f"\n\nAt the app defaults: {p['search_mode']} ({p['fusion']}, dense {p['dense_weight']:g} / BM25 "
        f"{p['bm25_weight']:g}), retrieve-k {p['retrieve_k']}, return-n {p['return_n']}, max "
        f"{p['max_chunks_per_document']} chunks per document; local USE embedder, chunks 800/100. Each miss is "
        "explained by `python -m rag_core explain` logic: causes are shares of the misses; the median fixes are "
        "over the misses a setting change brings in (the smallest verified change; empty when none needed that "
        "setting). Split: no chunk holds the whole answer span (chunking, not retrieval). Other: the answer text "
        "is not in the chunks, or explain finds it whole in the evidence where the metric, which also counts a "
        "label's surrounding spaces, did not. A relevant *document* can never be cut by the per-document cap "
        "(its best chunk is its first); an answer chunk can."
        + (f" Quick run: first {record['quick_limit']} queries, sliced corpora." if record["quick"] else "")
    )
    return section("Why relevant documents and answers were missed (causes)", md, record)


def run(quick: bool = False) -> str:
    return record_and_print("explain", quick, measure(quick), render)


if __name__ == "__main__":
    main(run, __doc__)
