"""Traditional and Simplified Chinese for BM25: what folding both to Simplified (OpenCC `t2s`) would gain, on
a Traditional-converted copy of a CMRC 2018 subset (OpenCC `s2t`) that this benchmark makes.

BM25 alone (Milvus full text, jieba) through `rag_core.evaluation.run_evaluation` at the lookup defaults, on
four corpora-and-queries of the same subset: the original (Simplified documents and questions); Traditional
documents asked in Simplified (the mixed case: no shared characters for converted words); Traditional
documents asked in Traditional (jieba segments Traditional text worse); and both folded to Simplified, the
documents and the questions converted with `t2s` before indexing and searching, which is what a folded BM25
input field would do. Baseline: the original, from the same run.

Needs the `opencc` package (`pip install opencc`: its dictionaries are inside the wheel). Writes
bench/results/folding.json (`--quick`: bench/results/quick/folding.json).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from bench.common import RESULTS, log, main, record_and_print, section, table
from rag_core.config import load_settings
from rag_core.loaders.load import content_hash

LIMIT, SAMPLE = 100, 200
QUICK_LIMIT, QUICK_SAMPLE = 5, 5
VARIANTS = (
    ("Simplified documents, Simplified questions (original)", None, None),
    ("Traditional documents, Simplified questions", "s2t", None),
    ("Traditional documents, Traditional questions", "s2t", "s2t"),
    ("Traditional documents and questions, both folded to Simplified", "s2t+t2s", "s2t+t2s"),
    ("Traditional documents, Simplified questions, both folded to Simplified", "s2t+t2s", "t2s"),
)


def converted(eval_set: Any, docs: str | None, queries: str | None, suffix: str) -> Any:
    import opencc

    def conv(how: str | None, text: str) -> str:
        for step in (how or "").split("+"):
            if step:
                text = opencc.OpenCC(step).convert(text)
        return text

    documents = tuple(replace(d, text=(t := conv(docs, d.text)), content_hash=content_hash(t))
                      for d in eval_set.documents)
    # answers and spans are offsets into the original text: only the relevant documents are kept as labels
    asked = tuple(replace(q, text=conv(queries, q.text), answers=(), spans=()) for q in eval_set.queries)
    return replace(eval_set, name=f"{eval_set.name}-{suffix}", queries=asked, documents=documents)


def measure(quick: bool = False) -> dict[str, Any]:
    from rag_core.bootstrap import build_embedder, factories
    from rag_core.evaluation import Grid, load_set, run_evaluation

    settings = load_settings(data_dir=RESULTS / ("quick" if quick else "") / "data", env={}, config_file=None)
    limit, sample = (QUICK_LIMIT, QUICK_SAMPLE) if quick else (LIMIT, SAMPLE)
    original = load_set("cmrc2018", split="dev", limit=limit, corpus_sample=sample)
    embedder = build_embedder(settings, env={})  # BM25 alone: the embedder only fills the index's vectors
    rows = []
    for i, (label, docs, queries) in enumerate(VARIANTS):
        log(f"folding: {label} ...")
        eval_set = original if docs is None and queries is None else converted(original, docs, queries, f"v{i}")
        run = run_evaluation(eval_set, Grid.from_settings(settings, mode=["bm25"]), settings, factories=factories(),
                             embedder=embedder)
        rows.append({"label": label, "documents": docs, "queries": queries,
                     "ndcg": run.points[0].metrics["ndcg@10"], "recall@5": run.points[0].metrics["recall@5"]})
    return {"set": f"CMRC 2018 dev ({len(original.queries)} q, {len(original.documents or ())} docs)",
            "rows": rows}


def render(record: dict[str, Any]) -> str:
    base = record["rows"][0]["ndcg"]
    rows = [[r["label"], f"{r['ndcg']:.3f}", f"{r['ndcg'] - base:+.3f}", f"{r['recall@5']:.3f}"]
            for r in record["rows"]]
    text = (table(["BM25 alone on " + record["set"], "nDCG@10", "vs original", "recall@5"], rows) + "\n\n"
            "Traditional copies made with OpenCC `s2t`; folding = OpenCC `t2s` on the documents before indexing and on "
            "the questions before searching (what a folded BM25 input field would do). Lookup defaults."
            + (" Quick run: a few queries." if record["quick"] else ""))
    return section("Traditional and Simplified Chinese for BM25 (folding with OpenCC)", text, record)


def run(quick: bool = False) -> str:
    return record_and_print("folding", quick, measure(quick), render)


if __name__ == "__main__":
    main(run, __doc__)
