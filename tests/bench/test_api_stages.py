"""bench.api's split of a lookup's wall time into stages, on a real workbench (Milvus Lite, local embedder)."""

from __future__ import annotations

from bench import api
from bench.common import REPO
from rag_core.bootstrap import build_workbench
from rag_core.config import load_settings


def test_stage_times_split_each_lookup_and_put_the_methods_back(tmp_path):
    wb = build_workbench(load_settings(data_dir=tmp_path, env={}), env={})
    try:
        wb.ingestor.ingest_paths([REPO / "examples/kb/runbooks/cpu_high.md", REPO / "examples/kb/runbooks/disk_full.md"])
        store, embedder = wb.retriever.port.store, wb.retriever.port.embedder
        coalesce = store._coalesce
        out = api.stage_times(wb, ["cpu usage high", "disk is full", "磁盘满了怎么办"], 24)

        assert out["lookups"] == 24
        for group in ("all", "slowest"):
            stages = out[group]
            assert stages["lookup_calls"] == stages["embed_calls"] == stages["search_calls"] == 1
            assert stages["lookup"] >= stages["embed"] + stages["search"] and stages["embed"] > 0
            assert stages["search"] >= stages["milvus"]  # a batch's requests are inside its leader's search
            assert all(stages[f"{s}_cpu"] <= stages[s] + 1.0 for s in api.STAGES)  # thread CPU within wall time
        # Every batch sends one request per channel (hybrid: dense and BM25), led by one of its lookups.
        assert 0 < out["all"]["milvus_calls"] <= 2 and out["all"]["milvus"] > 0
        assert out["slowest"]["lookup"] >= out["all"]["lookup"]
        # The timers are gone: the store and the embedder are as they were.
        assert store._coalesce is coalesce
        assert "embed_query" not in vars(embedder) and "_search_request" not in vars(store)
        assert wb.retriever.lookup("cpu usage high").evidence
    finally:
        wb.close()
