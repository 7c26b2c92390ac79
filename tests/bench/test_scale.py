"""bench/scale.py at a few hundred chunks (seconds), so the million-chunk benchmark cannot rot: it writes, chooses
the index by the store's rule (here IVF_FLAT from 200 rows, to exercise the switch), measures recall against FLAT
and both lookup paths, and renders its record."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bench import scale
from rag_core.store.milvus.schema import IVF_FROM, choose_index


def test_the_store_chooses_the_index_by_size():
    assert choose_index(True, 0).index_type == "FLAT"
    assert choose_index(True, IVF_FROM - 1).index_type == "FLAT"
    ivf = choose_index(True, 1_000_000)
    assert ivf.index_type == "IVF_FLAT" and ivf.params == {"nlist": 1000}
    assert choose_index(True, 10_000_000).params == {"nlist": 1024}
    assert choose_index(False, 1_000_000).index_type == "AUTOINDEX"  # a server picks its own


def test_the_exact_top_10_is_the_rows_written():
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((7, 512)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    total = 250
    every = np.concatenate([scale.row_vectors(d, min(scale.PER_DOC, total - d), vectors)
                            for d in range(0, total, scale.PER_DOC)])
    queries = vectors[:3] + 0.01
    expected = [sorted(np.argsort(-(every @ q))[:10].tolist()) for q in queries]
    assert [sorted(r) for r in scale.exact_top(queries, total, vectors)] == expected
    assert scale.row_of(scale.doc_id(200), 7) == 207


def test_variants_are_distinct_texts_with_vectors_near_their_text():
    texts = ["First sentence. Second one! Third?", "短句一。短句二。"]
    vectors = np.eye(2, 512, dtype=np.float32)
    rows, out = scale.rows(0, 6, texts, vectors)
    assert rows[:2] == texts and len(set(rows)) == 6 and rows[2].endswith("(variant 1)")
    assert np.allclose(out[:2], vectors)  # the first copy keeps the embedder's vector
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0)
    assert 0.98 < float(out[2] @ vectors[0]) < 1.0  # a variant: near its text's vector, not equal
    assert scale.rows(0, 6, texts, vectors)[1].tobytes() == out.tobytes()  # deterministic


@pytest.mark.milvus  # opens Milvus Lite: not in `make test-unit`
def test_the_benchmark_runs_at_a_few_hundred_chunks(tmp_path):
    saved = []
    record = scale.measure(chunks=300, unique=40, n_queries=6, ivf_from=200, cache=tmp_path / "cache",
                           save=lambda data: saved.append(json.loads(json.dumps(data))))
    assert record["chunks"] == 300 and record["unique_texts"] == 40 and not record["vectors_cached"]
    assert saved[-1] == record  # saved after each size, so a run stopped early keeps the largest measured
    cell = record["sizes"]["300"]
    assert cell["ingest"]["chunks_per_s"] > 0 and cell["index"]["type"] == "IVF_FLAT"
    assert set(cell["recall_at_10"]) == {"8", "16", "32", "64"}
    assert all(0.0 <= r <= 1.0 for r in cell["recall_at_10"].values())
    assert cell["recall_at_10"]["64"] == 1.0  # nprobe >= nlist: every cluster scanned, exactly the exact top 10
    assert cell["lookup"]["ours_p50"] > 0 and cell["lookup"]["bare_p50"] > 0 and cell["peak_rss_mb"]["total"] > 0
    text = scale.render({**record, "machine": "test machine", "load": "load"})
    assert text.startswith("#### ") and "IVF_FLAT" in text and "computed ONCE per unique text" in text
    assert "1M was NOT measured" in text and "PROJECTED" not in text  # one size: nothing to project from
    assert "once the index was built and searched" in text and cell["rss_now_mb"]["milvus_lite"] > 0
    assert "300 chunks" in scale.quote({**record, "load": "load average 1.00 on 2 cores"})
    # the second run reads the vectors from the cache
    assert scale.cached_vectors(scale.unique_texts(40), scale.LocalUSEEmbedder(), tmp_path / "cache")[1]


def test_a_run_stopped_short_of_a_million_says_so_and_projects():
    def cell(index: str, p50: float, mb: float) -> dict:
        return {"ingest": {"chunks_per_s": 1000.0}, "index": {"type": index, "params": {"nlist": 500}, "build_s": 9.0,
                                                              "nprobe": 32 if index == "IVF_FLAT" else None},
                "recall_at_10": {"32": 0.95}, "lookup": {"ours_p50": p50, "ours_p95": 2 * p50, "bare_p50": 10.0,
                                                         "bare_p95": 20.0},
                "peak_rss_mb": {"python": 500.0, "milvus_lite": mb - 500, "total": mb}, "db_mb": 100.0}
    record = {"chunks": 500_000, "unique_texts": 10, "perturbation": 0.1, "queries": 5, "retrieve_k": 20, "return_n": 5,
              "ivf_from": 200_000, "machine": "m", "load": "l",
              "sizes": {"250000": cell("IVF_FLAT", 40.0, 2000.0), "500000": cell("IVF_FLAT", 50.0, 3000.0)}}
    proj = scale.projection(record)
    assert proj == {"from": [250_000, 500_000], "memory_mb": 5000.0, "p50_ms": 70.0}
    assert "1M was NOT measured" in scale.render(record) and "PROJECTED to 1M" in scale.quote(record)
    record["sizes"]["250000"]["index"]["type"] = "FLAT"  # p50 across index kinds is not extrapolated
    assert scale.projection(record)["p50_ms"] is None and "hybrid p50 ~" not in scale.quote(record)
    record["sizes"]["1000000"], record["chunks"] = cell("IVF_FLAT", 60.0, 4000.0), 1_000_000
    assert scale.projection(record) is None and "NOT" not in scale.quote(record)
