"""Offline answers: which evidence sentences the extractive answer quotes, chosen with the knowledge base's
embedder or by shared words alone.

The sample knowledge base (examples/kb) is ingested with the bundled local embedder (Milvus Lite), each
labelled query of examples/kb_queries.jsonl is looked up at the defaults, and the quotes of its offline
answer are chosen twice from the same evidence (rag_core.agent.offline.pick_quotes): with the embedder (the
product) and without (the baseline, shared words only, as before). A query counts where its answer is in the
evidence: some sentence of it holds at least half of the answer's tokens in a row; the sentences sharing the
longest such run are its answer sentences. Reported: how often one of them is quoted, and quoted first, for
all queries and for those asked in the other language than the answer's; and the time the choice takes
(p50; with the embedder it embeds the question and the evidence's sentences, one batch). Then, on items
generated offline from the same knowledge base (rag_core.evaluation.generate_offline, seed 0: questions in
their chunk's language, worded from it), how often the whole offline answer holds the item's answer (the
`answer found` of `eval answers`).

    python -m bench.offline_answers [--quick]
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path

from bench.common import REPO, log, main, record_and_print, section, table
from rag_core.agent.offline import MAX_QUOTES, compose, pick_quotes, sentences
from rag_core.bootstrap import build_workbench
from rag_core.config import load_settings
from rag_core.embedding.local import LocalUSEEmbedder
from rag_core.evaluation.answers import found_in
from rag_core.evaluation.generate import generate_offline
from rag_core.evaluation.textmatch import longest_shared_run, match_tokens
from rag_core.languages import language_of

QUERIES = REPO / "examples" / "kb_queries.jsonl"
KB = REPO / "examples" / "kb"
GENERATED = 60


def measure(quick: bool = False) -> dict:
    queries = [json.loads(line) for line in QUERIES.read_text(encoding="utf-8").splitlines() if line.strip()]
    queries = [q for q in queries if q.get("answer")][: 12 if quick else None]
    embedder = LocalUSEEmbedder()
    counts = {way: {group: {"queries": 0, "quoted": 0, "first": 0} for group in ("all", "other language")}
              for way in ("embedder", "words")}
    times: dict[str, list[float]] = {"embedder": [], "words": []}
    sentences_per_query = []
    with tempfile.TemporaryDirectory(prefix="bench-offline-") as tmp:
        settings = load_settings(data_dir=Path(tmp), env={}, config_file=None,
                                 overrides={"milvus.lite-mode": "exclusive"})
        wb = build_workbench(settings, env={}, embedder=embedder)
        try:
            log("offline_answers: ingesting examples/kb")
            wb.ingestor.ingest_paths([KB])
            pick_quotes("warm up", wb.retriever.lookup("warm up").projection.items, embedder=embedder)
            for q in queries:
                items = wb.retriever.lookup(q["query"]).projection.items
                answer = match_tokens(q["answer"])
                runs = {s: longest_shared_run(match_tokens(s), answer)
                        for item in items for s in sentences(item.content)}
                best = max(runs.values(), default=0)
                if best * 2 < len(answer):
                    continue  # the answer is not in the evidence: no choice of sentences can quote it
                sentences_per_query.append(len(runs))
                groups = ["all"] + (["other language"] if language_of(q["query"]) != language_of(q["answer"]) else [])
                for way in ("embedder", "words"):
                    started = time.perf_counter()
                    quotes = pick_quotes(q["query"], items, embedder=embedder if way == "embedder" else None)
                    times[way].append((time.perf_counter() - started) * 1000)
                    hits = [runs[quote.text] == best for quote in quotes]
                    for group in groups:
                        c = counts[way][group]
                        c["queries"] += 1
                        c["quoted"] += any(hits)
                        c["first"] += bool(hits and hits[0])
            generated = generate_offline(wb.store, size=GENERATED // 3 if quick else GENERATED, seed=0).items
            found = {way: sum(found_in(compose(item.query, wb.retriever.lookup(item.query).projection.items,
                                               embedder=embedder if way == "embedder" else None), item.answers)
                              for item in generated) for way in ("embedder", "words")}
        finally:
            wb.close()
    return {"queries": len(queries), "answer_in_evidence": len(sentences_per_query), "max_quotes": MAX_QUOTES,
            "generated": len(generated), "generated_found": found,
            "sentences_p50": statistics.median(sentences_per_query), "counts": counts,
            "p50_ms": {way: statistics.median(t) for way, t in times.items()}}


def render(record: dict) -> str:
    counts = record["counts"]
    rows = []
    ways = (("embedder", "embedder + shared words + rank (ours)"), ("words", "shared words + rank (baseline)"))
    for way, name in ways:
        c = counts[way]
        rows.append([name, f"{c['all']['quoted']} / {c['all']['queries']}", f"{c['all']['first']}",
                     f"{c['other language']['quoted']} / {c['other language']['queries']}",
                     f"{c['other language']['first']}", f"{record['generated_found'][way]} / {record['generated']}",
                     record["p50_ms"][way]])
    text = table(["quotes chosen by", "answer sentence quoted", "quoted first", "other language: quoted",
                  "other language: first", "generated items: answer found", "ms (p50)"], rows, digits=1)
    note = (f"The sample knowledge base's labelled queries (examples/kb_queries.jsonl, {record['queries']}), of which "
            f"{record['answer_in_evidence']} have their answer in the evidence of a default lookup (local embedder, "
            f"hybrid); at most {record['max_quotes']} quotes from a median {record['sentences_p50']:g} candidate "
            "sentences. \"Other language\": the question in Chinese and the answer in English, or the reverse. "
            f"Generated items: {record['generated']} made offline from the same knowledge base (seed 0), the gold "
            "answer found in the whole offline answer. The time is the choice alone (with the embedder: the "
            "question and the sentences embedded, one batch).")
    return section("Offline answers: quotes chosen with the embedder vs by shared words", f"{text}\n\n{note}", record)


def run(quick: bool = False) -> str:
    return record_and_print("offline_answers", quick, measure(quick), render)


if __name__ == "__main__":
    main(run, __doc__)
