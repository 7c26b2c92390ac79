"""bench.api's measurements that patch or load the machine, on a real workbench (Milvus Lite, local embedder):
the split of a lookup's wall time into stages, and the busy-machine rows."""

from __future__ import annotations

import psutil
import pytest

from bench import api
from bench.common import REPO
from rag_core.bootstrap import build_workbench
from rag_core.config import load_settings

pytestmark = pytest.mark.milvus  # opens Milvus Lite in its tests: not in `make test-unit`


@pytest.fixture
def wb(tmp_path):
    wb = build_workbench(load_settings(data_dir=tmp_path, env={}), env={})
    try:
        wb.ingestor.ingest_paths([REPO / "examples/kb/runbooks" / name for name in ("cpu_high.md", "disk_full.md")])
        yield wb
    finally:
        wb.close()


def test_stage_times_split_each_lookup_and_put_the_methods_back(wb):
    store, embedder = wb.retriever.port.store, wb.retriever.port.embedder
    coalesce = store.searcher._coalesce
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
    assert store.searcher._coalesce is coalesce
    assert "embed_query" not in vars(embedder) and "_search_request" not in vars(store.searcher)
    assert wb.retriever.lookup("cpu usage high").evidence


def test_the_busy_machine_rows_measure_each_call_and_stop_their_spinners(wb):
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    out = api.busy_rows(wb, ["cpu usage high", "disk is full", "磁盘满了怎么办"])
    assert out["spinners"] == api.SPINNERS and out["queries"] == 3
    for name in api.BUSY_CALLS:
        assert 0 < out[name]["p50"] <= out[name]["p95"] <= out[name]["max"] and out[name]["cpu_ms"] > 0
    assert {p.pid for p in psutil.Process().children(recursive=True)} <= before  # no spinner left behind


def test_the_unavoidable_work_is_measured_in_both_processes(wb, tmp_path):
    meter = api.CpuMeter({"bench": psutil.Process().pid, "lite": api.lite_server_pid(tmp_path)})
    queries = ["cpu usage high", "disk is full", "磁盘满了怎么办"]
    out = api.unavoidable(wb, queries, 12, meter)
    assert out["requests"] == 12 and out["cpu_ms"]["bench"] > 0 and out["cpu_ms"]["lite"] >= 0
    calls = []
    wb.retriever.port.store.client.get = lambda *a, **kw: calls.append(kw["ids"])  # what the call fetches text of
    try:
        api.unavoidable_call(wb, queries)(queries[0])
    finally:
        del wb.retriever.port.store.client.get
    assert calls == [[c.id for c in wb.retriever.lookup(queries[0]).evidence]] and len(calls[0]) <= 5
