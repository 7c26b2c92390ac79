"""Traditional and Simplified Chinese for BM25: what the product's folding (OpenCC `t2s` into the `bm25_text` field
BM25 reads, and on every BM25 query: rag_core.text.fold) gains, on a Traditional-converted copy of a CMRC 2018
subset (OpenCC `s2t`) that this benchmark makes.

BM25 alone (Milvus full text, jieba) through `rag_core.evaluation.run_evaluation` at the lookup defaults. The
product rows index the documents as they are and ask the questions as they are, through the real folded BM25
channel: the original (Simplified documents and questions, the baseline); Traditional documents asked in
Simplified; Simplified documents asked in Traditional; Traditional documents asked in Traditional. The unfolded
rows are the same corpora through BM25 as it was before folding (layout 3: `content` analysed as it is), with
`text.fold` made to change nothing, in an index folder of their own (`data-unfolded`) so no folded evaluation
ever reuses one of their indexes.

Writes bench/results/folding.json (`--quick`: bench/results/quick/folding.json).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from bench.common import RESULTS, log, main, record_and_print, section, table
from rag_core.config import load_settings
from rag_core.loaders.load import content_hash

LIMIT, SAMPLE = 100, 200
QUICK_LIMIT, QUICK_SAMPLE = 5, 5
FOLDED, UNFOLDED = "folded", "unfolded"
# (label, documents' conversion, questions' conversion, BM25)
VARIANTS = (
    ("Simplified documents, Simplified questions (original)", None, None, FOLDED),
    ("Traditional documents, Simplified questions", "s2t", None, FOLDED),
    ("Simplified documents, Traditional questions", None, "s2t", FOLDED),
    ("Traditional documents, Traditional questions", "s2t", "s2t", FOLDED),
    ("Traditional documents, Simplified questions", "s2t", None, UNFOLDED),
    ("Simplified documents, Traditional questions", None, "s2t", UNFOLDED),
    ("Traditional documents, Traditional questions", "s2t", "s2t", UNFOLDED),
)


class _Unchanged:
    def convert(self, text: str) -> str:
        return text


@contextlib.contextmanager
def unfolded() -> Iterator[None]:
    """BM25 as it was before folding: rag_core.text.fold's converter swapped for one that changes nothing, so
    `bm25_text` is the content and queries are searched as they are."""
    from rag_core import text

    with text._fold_lock:
        saved, text._folder = text._folder, _Unchanged()
    try:
        yield
    finally:
        with text._fold_lock:
            text._folder = saved


def converted(eval_set: Any, docs: str | None, queries: str | None, suffix: str) -> Any:
    """`eval_set` with its documents and questions converted by OpenCC (`docs`, `queries`: a configuration such as
    "s2t", or None: as they are)."""
    import opencc

    converters = {how: opencc.OpenCC(how) for how in {docs, queries} if how}

    def conv(how: str | None, text: str) -> str:
        return converters[how].convert(text) if how else text

    documents = tuple(replace(d, text=(t := conv(docs, d.text)), content_hash=content_hash(t))
                      for d in eval_set.documents)
    # answers and spans are offsets into the original text: only the relevant documents are kept as labels
    asked = tuple(replace(q, text=conv(queries, q.text), answers=(), spans=()) for q in eval_set.queries)
    return replace(eval_set, name=f"{eval_set.name}-{suffix}", queries=asked, documents=documents)


def measure(quick: bool = False) -> dict[str, Any]:
    from rag_core.bootstrap import build_embedder, factories
    from rag_core.evaluation import Grid, load_set, run_evaluation

    root = RESULTS / ("quick" if quick else "")
    settings = {bm25: load_settings(data_dir=root / ("data" if bm25 == FOLDED else "data-unfolded"), env={},
                                    config_file=None) for bm25 in (FOLDED, UNFOLDED)}
    limit, sample = (QUICK_LIMIT, QUICK_SAMPLE) if quick else (LIMIT, SAMPLE)
    original = load_set("cmrc2018", split="dev", limit=limit, corpus_sample=sample)
    embedder = build_embedder(settings[FOLDED], env={})  # BM25 alone: the embedder only fills the index's vectors
    rows = []
    for i, (label, docs, queries, bm25) in enumerate(VARIANTS):
        log(f"folding: {label}, {bm25} BM25 ...")
        eval_set = original if docs is None and queries is None else converted(original, docs, queries, f"v{i}")
        with unfolded() if bm25 == UNFOLDED else contextlib.nullcontext():
            run = run_evaluation(eval_set, Grid.from_settings(settings[bm25], mode=["bm25"]), settings[bm25],
                                 factories=factories(), embedder=embedder)
        rows.append({"label": label, "documents": docs, "queries": queries, "bm25": bm25,
                     "ndcg": run.points[0].metrics["ndcg@10"], "recall@5": run.points[0].metrics["recall@5"]})
    return {"set": f"CMRC 2018 dev ({len(original.queries)} q, {len(original.documents or ())} docs)",
            "rows": rows}


def render(record: dict[str, Any]) -> str:
    base = record["rows"][0]["ndcg"]
    product = any("bm25" in r for r in record["rows"])  # records before the product folded: pre-converted rows
    rows = [[r["label"], *([r["bm25"]] if product else []), f"{r['ndcg']:.3f}", f"{r['ndcg'] - base:+.3f}",
             f"{r['recall@5']:.3f}"] for r in record["rows"]]
    if product:
        note = ("Traditional copies made with OpenCC `s2t`, indexed and asked as they are. Folded: the product's BM25 "
                "(OpenCC `t2s` into the `bm25_text` field BM25 reads, and on the question); unfolded: BM25 over the "
                "text as it is, as before folding (schema layout 3).")
    else:
        note = ("Traditional copies made with OpenCC `s2t`; folding = OpenCC `t2s` on the documents before indexing "
                "and on the questions before searching (what a folded BM25 input field would do).")
    text = (table(["BM25 alone on " + record["set"], *(["BM25"] if product else []), "nDCG@10", "vs original",
                   "recall@5"], rows) + "\n\n" + note + " Lookup defaults."
            + (" Quick run: a few queries." if record["quick"] else ""))
    return section("Traditional and Simplified Chinese for BM25 (folding with OpenCC)", text, record)


def run(quick: bool = False) -> str:
    return record_and_print("folding", quick, measure(quick), render)


if __name__ == "__main__":
    main(run, __doc__)
