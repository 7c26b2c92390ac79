"""Shared pieces for evaluation tests: the BEIR-layout fixtures shipped in tests/evaluation/fixtures (so the
tests run in any clone), the optional read-only shared sets, and a writer for throw-away BEIR folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import SHARED

EVAL = SHARED / "eval"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
TINY = FIXTURES / "tiny_beir"  # answers with offsets, titles, graded qrels, test + dev splits
SPANS = FIXTURES / "span_beir"  # chunk-level gold spans, no answer text, two unusable labels


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
def eval_data_dir(tmp_path_factory) -> Path:
    """One data dir for the evaluation tests, so the sample KB's isolated index is built once."""
    return tmp_path_factory.mktemp("eval-data")
