"""How far a generated test set can be trusted: does it pick the same winner as real labels?

For SciFact, CMRC 2018 and COVID-QA (a seeded sample of QUERIES real queries; the corpus slice is their
relevant documents plus CORPUS_SAMPLE others), a test set is generated from the same corpus (chunked
800/100, the workbench default) and the same sweep runs with the real and with the generated labels: bm25 /
dense / hybrid at chunk sizes 400 and 800 (`run_evaluation`: Milvus Lite, the local USE embedder; the index
is shared by both runs). The six configurations are ordered by nDCG@10 under each set of labels, and the
two orderings compared by Kendall's tau-b (1 = the same order; the aim is >= 0.8) and by their winner. Tau is
undefined (None) when one set of labels scores every configuration the same: it cannot rank them at all.

Generators: offline (`generate_offline`: questions by templates from heading paths, sentence forms and
distinctive terms) and the model generator
(`generate_with_model`) through a loopback stub speaking the OpenAI protocol (tests/servers/chat.py), which
writes one question per passage from its distinctive terms and quotes its first sentence: what it measures
is the pipeline (prompts, filters, speed), not a real model's questions. Generation speed is items per second
of each generator (the stub's replies are instant, so the model figure is our overhead per item).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from itertools import combinations
from typing import Any

import numpy as np

from bench.common import RESULTS, log, main, need_set, record_and_print, section, table
from rag_core.agent.offline import sentences, terms
from rag_core.bootstrap import factories
from rag_core.clients.openai_chat import ChatModelConfig, OpenAIChatModel
from rag_core.config import load_settings
from rag_core.embedding.local import LocalUSEEmbedder
from rag_core.evaluation import Grid, load_beir, load_user_set, run_evaluation
from rag_core.evaluation.generate import generate_offline, generate_with_model
from rag_core.evaluation.indexing import bulk_index
from rag_core.languages import CJK, language_of
from rag_core.store.memory import InMemoryChunkStore

SETS = (("scifact", "test"), ("cmrc2018", "dev"), ("covidqa", "test"))
QUERIES, CORPUS_SAMPLE, SIZE = 30, 30, 30
QUICK = (12, 20, 12)
CHUNK_SIZES, OVERLAP, MODES = (400, 800), 50, ("bm25", "dense", "hybrid")
METRIC = "ndcg@10"
KEY = "sk-bench-testsets"
TAU_AIM = 0.8


class _NoEmbedder:
    """Generation reads chunks only: the in-memory store it reads them from needs vectors of some size."""

    name, dim = "bench:none", 4

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return np.ones((len(texts), self.dim), dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return np.ones(self.dim, dtype=np.float32)


def kendall_tau(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Kendall's tau-b of two scorings of the same items (ties counted as neither order)."""
    concordant = discordant = ties_a = ties_b = 0
    for i, j in combinations(range(len(a)), 2):
        da, db = np.sign(a[i] - a[j]), np.sign(b[i] - b[j])
        if da == 0 and db == 0:
            continue
        if da == 0:
            ties_a += 1
        elif db == 0:
            ties_b += 1
        elif da == db:
            concordant += 1
        else:
            discordant += 1
    n0 = concordant + discordant
    denom = ((n0 + ties_a) * (n0 + ties_b)) ** 0.5
    return None if denom == 0 else (concordant - discordant) / denom


def stub_reply(request: Any) -> Any:
    """The stub model: a question from the passage's distinctive terms, the answer its first sentence."""
    from tests.servers.chat import Completion

    content = request.json["messages"][-1]["content"]
    passage = content.split("<<<\n", 1)[-1].rsplit("\n>>>", 1)[0]
    quotable = [s for s in sentences(passage) if s in passage] or [passage.strip()]
    answer = quotable[0][:150]
    picked = sorted(terms(passage), key=lambda t: (-len(t), t))[:3]
    if language_of(passage) == CJK:
        question = f"关于{'、'.join(picked)}，文档有什么说明？"
    else:
        question = f"What do the documents say about {', '.join(picked)}?"
    return Completion.say(json.dumps({"question": question, "answer": answer}, ensure_ascii=False))


def orderings(run: Any) -> dict[str, float]:
    return {f"{p.point.mode}/{p.point.chunk_size}": p.metrics[METRIC] for p in run.points}


def sampled_set(bench: str, name: str, split: str, n_queries: int, corpus_sample: int,
                settings: Any) -> tuple[Any, InMemoryChunkStore]:
    """A seeded sample of the BEIR set `name` with its real labels, and its documents chunked into an in-memory
    store (no vectors) that the generators read their chunks from."""
    real = load_beir(need_set(name), split=split, sample=n_queries, seed=0, corpus_sample=corpus_sample, name=name)
    docs = real.documents or ()
    log(f"{bench}: {name} ({len(real.queries)} queries, {len(docs)} documents) ...")
    store = InMemoryChunkStore()
    store.open(_NoEmbedder.name, _NoEmbedder.dim)
    bulk_index(store, _NoEmbedder(), docs, chunk_size=settings["chunk.max-size"], overlap=settings["chunk.overlap"])
    return real, store


def measure(quick: bool = False) -> dict[str, Any]:
    from tests.servers.chat import OpenAIChatServer

    n_queries, corpus_sample, size = QUICK if quick else (QUERIES, CORPUS_SAMPLE, SIZE)
    settings = load_settings(data_dir=RESULTS / "data", env={}, config_file=None)
    embedder = LocalUSEEmbedder()
    grid = Grid.from_settings(settings, mode=list(MODES), chunk_size=list(CHUNK_SIZES), overlap=[OVERLAP])
    payload: dict[str, Any] = {"queries": n_queries, "corpus_sample": corpus_sample, "size": size,
                               "metric": METRIC, "sets": {}, "agreement": []}
    server = OpenAIChatServer(api_key=KEY).start()
    try:
        for name, split in SETS:
            started = time.perf_counter()
            real, store = sampled_set("testsets", name, split, n_queries, corpus_sample, settings)
            docs = real.documents or ()
            real_run = run_evaluation(real, grid, settings, factories=factories(), embedder=embedder)
            truth = orderings(real_run)
            entry: dict[str, Any] = {"split": split, "documents": len(docs), "real_queries": len(real.queries),
                                     "real": truth, "generators": {}}
            for generator in ("offline", "model"):
                if generator == "offline":
                    result = generate_offline(store, size=size, seed=0, kb_name=name)
                else:
                    server.reset()
                    server.reply(*([stub_reply] * (size * 4)))
                    model = OpenAIChatModel(ChatModelConfig(provider="openai", base_url=server.base_url,
                                                            model=server.models[0], api_key_env="BENCH_KEY",
                                                            max_retries=0, timeout=10.0), KEY)
                    result = generate_with_model(store, model, size=size, seed=0, unanswerable=0.0, kb_name=name)
                path = RESULTS / "data" / f"testsets-{name}-{generator}.jsonl"
                result.write(path)
                generated = load_user_set(path, corpus=docs)
                gen_run = run_evaluation(generated, grid, settings, factories=factories(), embedder=embedder)
                scores = orderings(gen_run)
                keys = list(truth)
                tau = kendall_tau([truth[k] for k in keys], [scores[k] for k in keys])
                winner_real, winner_gen = max(truth, key=truth.get), max(scores, key=scores.get)
                entry["generators"][generator] = {
                    "items": len(result.items), "rejected": dict(result.rejected), "seconds": result.seconds,
                    "items_per_second": result.items_per_second, "scores": scores}
                payload["agreement"].append({"set": name, "generator": generator, "tau": tau,
                                             "same_winner": winner_real == winner_gen, "winner_real": winner_real,
                                             "winner_generated": winner_gen})
                log(f"  {generator}: {len(result.items)} items, tau {tau}, winners {winner_real} / {winner_gen}")
            entry["seconds"] = time.perf_counter() - started
            payload["sets"][name] = entry
    finally:
        server.stop()
    return payload


def render(record: dict[str, Any]) -> str:
    rows = []
    for a in record["agreement"]:
        g = record["sets"][a["set"]]["generators"][a["generator"]]
        rows.append([a["set"], a["generator"] + (" (stub)" if a["generator"] == "model" else ""), g["items"],
                     a["tau"], "yes" if a["same_winner"] else "no", a["winner_real"], a["winner_generated"],
                     g["items_per_second"]])
    md = table(["corpus", "generator", "items", "Kendall tau", "same winner", "winner (real labels)",
                "winner (generated)", "items/s"], rows, digits=2)
    short = [f"{a['set']} (tau {'undefined' if a['tau'] is None else format(a['tau'], '.2f')}"
             f"{'' if a['same_winner'] else ', another winner'})" for a in record["agreement"]
             if a["generator"] == "offline" and (a["tau"] is None or a["tau"] < TAU_AIM or not a["same_winner"])]
    md += (f"\n\n{record['queries']} real queries per corpus (seeded sample) over their relevant documents plus "
           f"{record['corpus_sample']} others; {record['size']} generated items from the same documents (chunked "
           f"800/100). Six configurations (bm25 / dense / hybrid × chunk size 400 / 800, overlap {OVERLAP}) ordered "
           f"by {record['metric']} under each set of labels. The model generator is a loopback stub (no real "
           "model): its row measures the pipeline and its speed, not a model's questions. "
           + (f"Offline sets fall short of tau {TAU_AIM} and the same winner on {', '.join(short)}: use them to "
              "shortlist configurations, and confirm the choice on a reviewed or model-generated set."
              if short else f"Offline sets reach tau {TAU_AIM} and the same winner on every corpus."))
    return section("Generated test sets vs real labels", md, record)


def quote(record: dict[str, Any]) -> str:
    """The one line README.md quotes from this record (tests/bench/test_published.py checks it is current)."""
    def tau(a: dict[str, Any]) -> str:
        return "undefined" if a["tau"] is None else format(a["tau"], ".2f")

    def speed(generator: str) -> str:
        rates = [s["generators"][generator]["items_per_second"] for s in record["sets"].values()
                 if generator in s["generators"]]
        return f"{min(rates):.0f}–{max(rates):.0f}"

    offline = [f"{a['set']} {tau(a)}{'' if a['same_winner'] else ' (another winner)'}"
               for a in record["agreement"] if a["generator"] == "offline"]
    return (f"Kendall's tau of offline sets against real labels: {', '.join(offline)}; generation "
            f"{speed('offline')} items/s offline, {speed('model')} items/s with a loopback stub model.")


def run(quick: bool = False) -> str:
    return record_and_print("testsets", quick, measure(quick), render)


if __name__ == "__main__":
    main(run, __doc__)
