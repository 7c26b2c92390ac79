"""Shared pieces for evaluation tests: the BEIR-layout fixtures shipped in tests/evaluation/fixtures (so the
tests run in any clone), the optional read-only shared sets, and a writer for throw-away BEIR folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_core.bootstrap import knowledge_bases
from rag_core.config import load_settings
from rag_core.store import MilvusStore
from tests.helpers import SAMPLE_KB, SHARED

EVAL = SHARED / "eval"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
TINY = FIXTURES / "tiny_beir"  # answers with offsets, titles, graded qrels, test + dev splits
SPANS = FIXTURES / "span_beir"  # chunk-level gold spans, no answer text, two unusable labels


@pytest.fixture(scope="session")
def offline_figures() -> dict[str, float]:
    """The offline agent's scores on the offline test set of 12 (seed 0) from biz (examples/kb, chunks 800/100):
    deterministic, so pinned, here only. Every test that checks them reads this (rag_core directly in
    test_answers.py, the CLI's `eval answers` in test_cli_testsets.py: one scoring path); a change that moves them
    changes them here, once. (Merging neighbouring hits into one block, issue 36: f1 0.282413 -> 0.284336.)"""
    return {"answer_found": 0.75, "f1": 0.284336, "cites": 1.0, "citations_valid": 1.0,
            "citation_support": 0.75, "false_refusals": 0.0}


def needs_shared(name: str) -> Path:
    folder = EVAL / name
    if not (folder / "corpus.jsonl").is_file():
        pytest.skip(f"{folder} is not available")
    return folder


def write_beir(folder: Path, corpus: list[dict], queries: list[dict], qrels: list[tuple[str, str, int]],
               split: str = "test") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in corpus),
                                         encoding="utf-8")
    (folder / "queries.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in queries),
                                          encoding="utf-8")
    (folder / "qrels").mkdir(exist_ok=True)
    (folder / "qrels" / f"{split}.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{s}\n" for q, d, s in qrels), encoding="utf-8")
    return folder


@pytest.fixture(scope="session")
def eval_data_dir(tmp_path_factory, milvus) -> Path:
    """One data dir for the evaluation tests, so the sample KB's isolated index is built once."""
    return tmp_path_factory.mktemp("eval-data")


@pytest.fixture(scope="session")
def two_kbs(tmp_path_factory, local_embedder, milvus) -> Path:
    """A data dir with two knowledge bases holding examples/kb (the sample set's doc_ids): biz (chunks 800/100,
    return-n 5) and small (300/30, return-n 3). Shared by the CLI and page tests of `--kb` sweeps."""
    data = tmp_path_factory.mktemp("eval-kbs")
    keeper = MilvusStore(str(data / "milvus.db"), "biz")  # one Milvus Lite server for the session's users
    _ = keeper.client  # connects now
    settings = load_settings(data_dir=data, env={}, config_file=None)
    with knowledge_bases(settings, {}, load_embedder=lambda _: local_embedder) as kbs:
        kbs.create("small", {"chunk.max-size": 300, "chunk.overlap": 30, "rag.return-n": 3})
        for name in ("biz", "small"):
            wb = kbs.open(name)
            try:
                assert all(r.status == "added" for r in wb.ingestor.ingest_paths([SAMPLE_KB]))
            finally:
                wb.close()
    yield data
    keeper.close()


@pytest.fixture(scope="module")
def sample_kbs(two_kbs, local_embedder):
    """{"biz": workbench, "small": workbench}: the knowledge bases of `two_kbs` open in this process, for tests
    that call rag_core directly (generation, answer scoring); closed when the module is done."""
    settings = load_settings(data_dir=two_kbs, env={}, config_file=None)
    with knowledge_bases(settings, {}, load_embedder=lambda _: local_embedder) as kbs:
        opened = {name: kbs.open(name) for name in ("biz", "small")}
    try:
        yield opened
    finally:
        for wb in opened.values():
            wb.close()


TUNABLE = "tunable"


@pytest.fixture(scope="session")
def tunable(two_kbs, local_embedder) -> Path:
    """`two_kbs` with `tunable`, a copy of biz whose dense weight is 0 (BM25's alone, weighted fusion: a tuning sweep
    has something to find), and `hand20`, the first 20 hand-labelled items of the sample set, saved by name. The
    tests that tune it revert what they apply."""
    from rag_core.evaluation.datasets import bundled_sets
    from rag_core.evaluation.testsets import FolderTestSets, read_test_set, saved_sets_dir

    settings = load_settings(data_dir=two_kbs, env={}, config_file=None)
    with knowledge_bases(settings, {}, load_embedder=lambda _: local_embedder) as kbs:
        kbs.copy("biz", TUNABLE, {"rag.fusion": "weighted", "rag.dense-weight": 0.0})
    sample = read_test_set(bundled_sets()["sample"], "sample")
    FolderTestSets(saved_sets_dir(settings)).save("hand20", sample.items[:20], {"generator": ""})
    return two_kbs
