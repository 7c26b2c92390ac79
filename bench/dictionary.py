"""A knowledge base's own BM25 dictionary (issue 41, rag_core/dictionary.py): does the suggested one lower nDCG@10,
and does it raise it on the questions holding one of its terms?

Sets: CMRC 2018 dev and the sample knowledge base (examples/kb with examples/kb_queries.jsonl), sampled as
bench/fusion.py samples them (`fusion.SETS`). Each set's corpus is ingested into a knowledge base made with the
default settings (embedder `local`, the fusion measured for it) and evaluated through the one lookup path
(`run_evaluation(knowledge_bases=...)`): BM25 alone and hybrid at the knowledge base's defaults. Then the dictionary
`kb suggest-dictionary` offers (`retrieval.dictionary.suggest_for` at the command's default limit, every term
accepted, as a person accepting all of it would) is applied by the real job (`kb.upgrade.reindex_bm25`: a new BM25
collection, vectors kept), and the knowledge base, opened again, is evaluated the same way.

Per set and mode: nDCG@10 before and after on all questions and on the subset whose question holds a dictionary term
(`dictionary.found`), the mean paired difference with its paired bootstrap 95% interval (`evaluation.tune.
paired_bootstrap`, seeded), and the goal: the mean does not drop on all questions and rises on the subset. Also the
terms whose questions changed most (what a reviewer might drop). Prints the tables and writes
bench/results/dictionary.json (`--quick`: a few questions, bench/results/quick/).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import RESULTS, evaluate_kb, log, main, need_set, record_and_print, section, table
from bench.fusion import QUICK_LIMIT, QUICK_SAMPLE
from bench.fusion import SETS as FUSION_SETS

MODES = ("bm25", "hybrid")
METRIC = "ndcg@10"
SET_NAMES = ("cmrc2018", "sample")
SETS = tuple(s for s in FUSION_SETS if s[1] in SET_NAMES)
LIMIT = 200  # `kb suggest-dictionary`'s default --limit
SHOWN_TERMS = 5  # per set: the terms whose questions gained and lost most

SetSpec = tuple[str, str, str | None, int | None, int | None]  # label, set, split, queries, corpus sample


def ingest(kbs: Any, name: str, documents: Sequence[Any]) -> int:
    """A new knowledge base `name` at the default settings with `documents` ingested; the chunks it holds."""
    kbs.create(name)
    wb = kbs.open(name)
    try:
        reports = wb.ingestor.ingest_documents(documents)
    finally:
        wb.close()
    failed = [r for r in reports if r.status == "failed"]
    if failed:
        raise SystemExit(f"dictionary bench: {len(failed)} document(s) not ingested into {name}; first: "
                         f"{failed[0].error}")
    return int(kbs.info(name).chunks)


def evaluate(kbs: Any, name: str, eval_set: Any) -> dict[str, dict[str, float]]:
    """Per mode, nDCG@10 of each question (query id -> score) of knowledge base `name` as it is."""
    run = evaluate_kb(kbs, name, eval_set, MODES)
    return {p.point.mode: {q["query_id"]: float(q[METRIC]) for q in p.queries} for p in run.points}


def compare(before: dict[str, float], after: dict[str, float], ids: Sequence[str]) -> dict[str, Any]:
    """Mean nDCG@10 before and after over `ids`, and the paired difference's bootstrap interval."""
    from rag_core.evaluation.tune import paired_bootstrap

    if not ids:
        return {"queries": 0, "before": None, "after": None, "diff": None, "low": None, "high": None,
                "better": 0, "worse": 0}
    diffs = [after[i] - before[i] for i in ids]
    interval = paired_bootstrap(diffs)
    return {"queries": len(ids), "before": round(sum(before[i] for i in ids) / len(ids), 6),
            "after": round(sum(after[i] for i in ids) / len(ids), 6), "diff": round(interval.mean, 6),
            "low": round(interval.low, 6), "high": round(interval.high, 6),
            "better": sum(d > 1e-9 for d in diffs), "worse": sum(d < -1e-9 for d in diffs)}


def goal(modes: dict[str, dict[str, Any]]) -> str:
    """"met" when, in every mode, nDCG@10 does not drop on all questions (mean difference >= 0) and rises on the
    subset (mean > 0); "not met" otherwise; "untested" when no question holds a term (the subset is empty)."""
    if any(not m["subset"]["queries"] for m in modes.values()):
        return "untested" if all(m["all"]["diff"] >= -1e-9 for m in modes.values()) else "not met"
    return "met" if all(m["all"]["diff"] >= -1e-9 and m["subset"]["diff"] > 1e-9 for m in modes.values()) \
        else "not met"


def by_term(questions: dict[str, list[str]], before: dict[str, float], after: dict[str, float]) -> list[dict[str, Any]]:
    """Each term found in questions: how many, and the summed nDCG@10 change of those questions."""
    terms: dict[str, list[float]] = {}
    for qid, found in questions.items():
        for term in found:
            terms.setdefault(term, []).append(after[qid] - before[qid])
    return [{"term": t, "questions": len(d), "change": round(sum(d), 6)} for t, d in terms.items()]


def measure_set(kbs: Any, spec: SetSpec, quick: bool, limit: int = LIMIT) -> dict[str, Any]:
    from rag_core.dictionary import found
    from rag_core.evaluation import load_set
    from rag_core.kb.upgrade import reindex_bm25
    from rag_core.retrieval.dictionary import suggest_for

    label, name, split, queries, sample = spec
    if quick:
        queries, sample = QUICK_LIMIT, (QUICK_SAMPLE if name != "sample" else None)
    if name != "sample":
        need_set(name)
    eval_set = load_set(name, split=split, limit=queries, corpus_sample=sample)
    docs = eval_set.documents or ()
    kb = f"dictionary_{name}"
    started = time.perf_counter()
    log(f"dictionary: {label} ({len(eval_set.queries)} queries, {len(docs)} documents) ...")
    chunks = ingest(kbs, kb, docs)
    before = evaluate(kbs, kb, eval_set)
    wb = kbs.open(kb)
    try:
        suggested = suggest_for(wb.store, limit)
    finally:
        wb.close()
    terms = [s.term for s in suggested]
    log(f"  {len(terms)} terms suggested; re-indexing BM25 with them ...")
    reindex_bm25(kbs, kb, terms)
    assert len(kbs.info(kb).dictionary) == len(terms)
    after = evaluate(kbs, kb, eval_set)
    questions = {q.query_id: found(q.text, terms) for q in eval_set.queries}
    subset = [qid for qid, held in questions.items() if held]
    every = [q.query_id for q in eval_set.queries]
    modes = {mode: {"all": compare(before[mode], after[mode], every),
                    "subset": compare(before[mode], after[mode], subset)} for mode in MODES}
    changes = sorted(by_term(questions, before["hybrid"], after["hybrid"]), key=lambda t: (t["change"], t["term"]))
    for mode, m in modes.items():
        log(f"  {mode}: all {m['all']['before']:.3f} -> {m['all']['after']:.3f}; subset of {len(subset)}: "
            f"{m['subset']['before']} -> {m['subset']['after']}")
    return {"label": label, "set": name, "split": split, "limit": queries, "corpus_sample": sample,
            "queries": len(eval_set.queries), "documents": len(docs), "chunks": chunks,
            "terms": len(terms), "kinds": {k: sum(s.kind == k for s in suggested) for k in ("heading", "code")},
            "terms_sample": terms[:10], "subset": len(subset), "modes": modes, "goal": goal(modes),
            "subset_questions": [{"query": q.text, "terms": questions[q.query_id],
                                  **{mode: [round(before[mode][q.query_id], 6), round(after[mode][q.query_id], 6)]
                                     for mode in MODES}} for q in eval_set.queries if questions[q.query_id]],
            "hurt_terms": [t for t in changes if t["change"] < 0][:SHOWN_TERMS],
            "helped_terms": [t for t in reversed(changes) if t["change"] > 0][:SHOWN_TERMS],
            "seconds": round(time.perf_counter() - started, 1)}


def measure(quick: bool = False, *, sets: Sequence[SetSpec] = SETS, folder: Path | None = None,
            limit: int = LIMIT) -> dict[str, Any]:
    from rag_core.bootstrap import knowledge_bases
    from rag_core.config import load_settings

    folder = folder or RESULTS / ("quick" if quick else "") / "data" / "dictionary"
    shutil.rmtree(folder, ignore_errors=True)
    settings = load_settings(data_dir=folder, env={}, config_file=None)
    started = time.perf_counter()
    with knowledge_bases(settings, env={}) as kbs:
        rows = [measure_set(kbs, spec, quick, limit) for spec in sets]
    shutil.rmtree(folder, ignore_errors=True)
    return {"metric": METRIC, "limit": limit, "modes": list(MODES), "sets": rows,
            "seconds": round(time.perf_counter() - started, 1)}


def _cell(c: dict[str, Any]) -> str:
    if not c["queries"]:
        return "—"
    return f"{c['before']:.3f} → {c['after']:.3f}"


def _diff(c: dict[str, Any]) -> str:
    if not c["queries"]:
        return "—"
    return f"{c['diff']:+.3f} [{c['low']:+.3f}, {c['high']:+.3f}] ({c['better']} up, {c['worse']} down)"


def render(record: dict[str, Any]) -> str:
    rows = []
    for r in record["sets"]:
        for mode in record["modes"]:
            m = r["modes"][mode]
            rows.append([f"{r['label']} ({r['queries']} q, {r['documents']} docs)", mode, r["terms"],
                         _cell(m["all"]), _diff(m["all"]), f"{r['subset']}", _cell(m["subset"]), _diff(m["subset"])])
    text = table(["Set", "mode", "terms", "nDCG@10 all", "difference [95% CI]", "questions with a term",
                  "nDCG@10 those", "difference [95% CI]"], rows)
    goals = "; ".join(f"{r['label']}: {r['goal']}" for r in record["sets"])
    terms = []
    for r in record["sets"]:
        hurt = ", ".join(f"`{t['term']}` ({t['change']:+.2f} over {t['questions']} q)" for t in r["hurt_terms"])
        helped = ", ".join(f"`{t['term']}` ({t['change']:+.2f} over {t['questions']} q)" for t in r["helped_terms"])
        terms.append(f"{r['label']}: {r['terms']} terms ({r['kinds']['heading']} from headings, {r['kinds']['code']} "
                     f"code terms; the first: {', '.join(f'`{t}`' for t in r['terms_sample'][:6]) or 'none'}); hybrid, "
                     f"questions holding the term gained most with {helped or 'none'}, "
                     f"lost most with {hurt or 'none'}."
                     + (" Terms the questions hold: " + ", ".join(sorted({f"`{t}`" for q in r["subset_questions"]
                                                                         for t in q["terms"]})) + "."
                        if r["subset_questions"] else ""))
    note = (f"The dictionary `kb suggest-dictionary` offers (at most {record['limit']} terms), every term accepted, "
            "applied by `kb set --dictionary` (BM25 re-indexed, vectors kept); nDCG@10 of the same knowledge base "
            "before and after, BM25 alone and hybrid at its defaults, on all questions and on those holding a "
            "dictionary term; difference: mean paired after − before with its paired bootstrap 95% interval. "
            f"Goal (does not lower all, raises those; untested: no question holds a term): {goals}.\n\n"
            + "\n".join(f"- {t}" for t in terms)
            + ("\n\nQuick run: a few questions." if record["quick"] else ""))
    return section("A knowledge base's own BM25 dictionary: nDCG@10 before and after", text + "\n\n" + note, record)


def run(quick: bool = False) -> str:
    return record_and_print("dictionary", quick, measure(quick), render)


if __name__ == "__main__":
    main(run, __doc__)
