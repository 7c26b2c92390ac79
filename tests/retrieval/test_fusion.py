"""Fusion: pure rules, and parity of our RRF with Milvus's own hybrid_search + RRFRanker."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rag_core.records import SearchHit
from rag_core.retrieval import KnowledgeRetriever, SearchOptions, StoreSearchPort
from rag_core.retrieval.fusion import cross_language, dbsf, rrf, weighted
from rag_core.retrieval.ports import fuse
from rag_core.store import CHUNK_FIELDS


def hits(*pairs: tuple[str, float]) -> list[SearchHit]:
    return [SearchHit(id=i, score=s, content=i, metadata={"docId": i[0], "chunkIndex": int(i[1:])}) for i, s in pairs]


def test_rrf_merges_channels_and_keeps_every_rank() -> None:
    dense = hits(("a1", 0.9), ("b1", 0.8), ("c1", 0.7))
    bm25 = hits(("b1", 12.0), ("d1", 9.0))
    fused = rrf({"dense": dense, "bm25": bm25}, {"dense": 1.0, "bm25": 1.0}, k=60, limit=10)
    assert [h.id for h in fused] == ["b1", "a1", "d1", "c1"]
    b1 = fused[0]
    assert b1.channels == {"dense": (2, 0.8), "bm25": (1, 12.0)}
    assert b1.score == pytest.approx(1 / 62 + 1 / 61)
    assert fused[2].channels == {"bm25": (2, 9.0)}


def test_rrf_weights_shift_the_order() -> None:
    dense = hits(("a1", 0.9), ("b1", 0.8))
    bm25 = hits(("b1", 5.0), ("a1", 4.0))
    assert [h.id for h in rrf({"dense": dense, "bm25": bm25}, {"dense": 1.0, "bm25": 0.2}, 60, 5)][0] == "a1"
    assert [h.id for h in rrf({"dense": dense, "bm25": bm25}, {"dense": 0.2, "bm25": 1.0}, 60, 5)][0] == "b1"


def test_weighted_normalises_each_channel() -> None:
    dense = hits(("a1", 0.90), ("b1", 0.89), ("c1", 0.10))
    bm25 = hits(("c1", 30.0), ("b1", 29.0), ("a1", 1.0))
    fused = weighted({"dense": dense, "bm25": bm25}, {"dense": 1.0, "bm25": 1.0}, limit=3)
    assert fused[0].id == "b1"  # close to the top in both channels beats top in one, bottom in the other
    assert all(0.0 <= h.score <= 2.0 for h in fused)


def test_dbsf_maps_mean_plus_minus_three_deviations_to_the_unit_range() -> None:
    # dense: mean 0.5, population sd 0.1 -> [0.2, 0.8]; bm25: one hit (no spread) -> 0.5
    dense = hits(("a1", 0.6), ("b1", 0.4))
    fused = dbsf({"dense": dense, "bm25": hits(("b1", 7.0))}, {"dense": 1.0, "bm25": 0.5}, limit=5)
    scores = {h.id: h.score for h in fused}
    assert scores["a1"] == pytest.approx((0.6 - 0.2) / 0.6)  # absent from bm25: adds 0
    assert scores["b1"] == pytest.approx((0.4 - 0.2) / 0.6 + 0.5 * 0.5)
    assert fused[0].channels == {"dense": (1, 0.6)} and fused[1].channels == {"dense": (2, 0.4), "bm25": (1, 7.0)}


def test_dbsf_gives_1_only_to_a_hit_far_out_of_its_list() -> None:
    even = hits(*[(f"e{i}", 10.0 - i) for i in range(10)])
    standout = hits(("s0", 40.0), *[(f"s{i}", 2.0 - i / 20) for i in range(1, 20)])
    top = {c: dbsf({c: ranked}, {}, limit=1)[0].score for c, ranked in (("even", even), ("standout", standout))}
    assert top["standout"] == 1.0  # clipped at mean + 3 sd
    assert 0.7 < top["even"] < 0.8  # min-max (weighted) gives both 1.0
    assert weighted({"even": even}, {}, limit=1)[0].score == 1.0
    low = dbsf({"standout": standout}, {}, limit=20)[-1]
    assert 0.0 <= low.score < 0.5


def test_limit_and_determinism() -> None:
    dense = hits(*[(f"a{i}", 1.0 - i / 100) for i in range(30)])
    bm25 = hits(*[(f"b{i}", 30.0 - i) for i in range(30)])
    one = rrf({"dense": dense, "bm25": bm25}, {}, 60, 20)
    assert len(one) == 20 and one == rrf({"dense": dense, "bm25": bm25}, {}, 60, 20)


def test_the_same_chunk_found_by_both_channels_is_one_candidate(sample_wb) -> None:
    retriever = KnowledgeRetriever(StoreSearchPort(sample_wb.store, sample_wb.embedder))
    result = retriever.lookup("向量检索", search=SearchOptions(mode="hybrid"), retrieve_k=20)
    keys = [c.evidence_key for c in result.candidates]
    assert len(keys) == len(set(keys))
    both = [c for c in result.candidates if set(c.hit_reasons) == {"dense", "bm25"}]
    assert both and all(set(c.channels) == {"dense", "bm25"} for c in both)
    assert result.evidence[0].doc_id == "product/vector_search_zh.md"


@pytest.mark.parametrize(("mode", "query", "expected"), [
    ("bm25", "向量检索", "product/vector_search_zh.md"),
    ("bm25", "DiskSpaceLow", "runbooks/disk_full.md"),
    ("dense", "内存泄漏排查", "runbooks/memory_leak_zh.md"),
    ("hybrid", "慢查询", "runbooks/slow_query_zh.md"),
    ("hybrid", "HighCPUUsage alert threshold", "runbooks/cpu_high.md"),
])
def test_each_mode_finds_the_obvious_document(sample_wb, mode: str, query: str, expected: str) -> None:
    # Cross-language stand-ins off: with them, 慢查询 puts the English "Latency Is High" chunk (dense #1, a hair
    # above the Chinese runbook, which is dense #2 and BM25 #1) first; this test is about each channel.
    result = sample_wb.retriever.lookup(query, search=SearchOptions(mode=mode, cross_language=False))
    assert result.evidence[0].doc_id == expected, [c.evidence_key for c in result.evidence]
    assert all(mode in c.hit_reasons or mode == "hybrid" for c in result.candidates)


def test_bm25_finds_the_chunk_that_contains_the_chinese_term(sample_wb) -> None:
    result = sample_wb.retriever.lookup("向量检索", search=SearchOptions(mode="bm25"), retrieve_k=5, return_n=5)
    assert "向量检索" in result.evidence[0].content


def test_our_rrf_orders_like_milvus_hybrid_search(sample_wb) -> None:
    from pymilvus import AnnSearchRequest, RRFRanker

    store, embedder = sample_wb.store, sample_wb.embedder
    query, k = "how do we escalate an incident 升级", 20
    vector = embedder.embed_query(query).tolist()
    native = store.client.hybrid_search(
        store.collection,
        [AnnSearchRequest([vector], "vector", {"metric_type": "COSINE"}, limit=k),
         AnnSearchRequest([query], "sparse", {"metric_type": "BM25"}, limit=k)],
        RRFRanker(60), limit=k, output_fields=CHUNK_FIELDS)[0]
    ours = StoreSearchPort(store, embedder, SearchOptions(mode="hybrid", fusion="rrf", dense_weight=1.0,
                                                            bm25_weight=1.0, cross_language=False)).search(query, k)
    native_scores = {h["id"]: h["distance"] for h in native}
    our_scores = {h.id: h.score for h in ours.hits}
    # Hits tied with the last place may be cut differently; everything above it must agree exactly.
    floor = min(native_scores.values()) + 1e-9
    above = {i for i, s in native_scores.items() if s > floor}
    assert above == {i for i, s in our_scores.items() if s > floor} and len(above) > k // 2
    for hit_id in above:
        assert our_scores[hit_id] == pytest.approx(native_scores[hit_id], rel=1e-4)


@pytest.mark.parametrize("fusion", ["rrf", "weighted", "dbsf"])
def test_dedup_and_caps_hold_on_fused_results(sample_wb, fusion: str) -> None:
    result = sample_wb.retriever.lookup("向量检索 召回 incident escalation", retrieve_k=30, return_n=8,
                                        max_chunks_per_document=2, search=SearchOptions(mode="hybrid", fusion=fusion))
    counts: dict[str, int] = {}
    for block in result.evidence:
        counts[block.doc_id] = counts.get(block.doc_id, 0) + 1
    assert max(counts.values()) <= 2 and len(result.evidence) <= 8
    assert len(result.traces) == len(result.candidates) == 30
    assert any(t.status.startswith("doc_cap (") for t in result.traces)
    assert [t.rank for t in result.traces] == list(range(1, 31))  # the fused ranking, every hit accounted for
    assert all(c.channels for c in result.candidates)  # each raw hit knows its rank per channel


# Cross-language stand-ins: a dense hit that BM25 could never match (another language, no word of its script in the
# question) takes BM25's share from its dense rank or score.
EN_DISK = "When disk usage on a node goes above 90 percent, clean old logs and expand the volume."
ZH_USAGE = "CPU 使用率超过阈值时告警，先看使用率曲线。"
ZH_QUERY = "磁盘使用率超过 90% 怎么办？"


def texts(*rows: tuple[str, float, str]) -> list[SearchHit]:
    return [SearchHit(id=i, score=s, content=c, metadata={"docId": i}) for i, s, c in rows]


def mixed() -> dict[str, list[SearchHit]]:
    """Dense ranks the English runbook first; BM25 finds only Chinese chunks sharing 使用率 / 超过."""
    dense = texts(("en", 0.62, EN_DISK), ("zh1", 0.55, ZH_USAGE), ("zh2", 0.50, ZH_USAGE), ("zh3", 0.30, ZH_USAGE))
    bm25 = texts(("zh1", 6.0, ZH_USAGE), ("zh2", 5.5, ZH_USAGE), ("zh3", 5.0, ZH_USAGE), ("zh4", 4.0, ZH_USAGE))
    return {"dense": dense, "bm25": bm25}


def test_a_dense_hit_in_the_other_language_absent_from_bm25_stands_in() -> None:
    ranked = mixed()
    assert cross_language(ZH_QUERY, ranked) == {"en"}  # the Chinese dense hits are in the query's language
    assert cross_language("磁盘 DiskSpaceLow 怎么办", ranked) == set()  # a Latin word: BM25 could match English
    found = {**ranked, "bm25": ranked["bm25"] + texts(("en", 1.0, EN_DISK))}
    assert cross_language(ZH_QUERY, found) == set()  # BM25 found it: its own score counts
    english = {"dense": texts(("zh", 0.6, ZH_USAGE), ("en", 0.5, EN_DISK)), "bm25": texts(("en", 3.0, EN_DISK))}
    assert cross_language("what to do when the disk is full", english) == {"zh"}
    assert cross_language("what does 使用率 mean", english) == set()  # a Chinese word in the question
    assert cross_language(ZH_QUERY, {"dense": ranked["dense"]}) == set()  # no BM25 channel: nothing to stand in for


@pytest.mark.parametrize("fusion", ["rrf", "weighted", "dbsf"])
def test_each_fusion_puts_the_stand_in_first_only_with_cross_language(fusion: str) -> None:
    ranked = mixed()
    on = fuse(ranked, SearchOptions(fusion=fusion, dense_weight=0.5, bm25_weight=1.0), 10, ZH_QUERY)
    off = fuse(ranked, SearchOptions(fusion=fusion, dense_weight=0.5, bm25_weight=1.0, cross_language=False), 10,
               ZH_QUERY)
    assert on[0].id == "en" and on[0].cross_language and not any(h.cross_language for h in on[1:])
    assert off[0].id != "en" and not any(h.cross_language for h in off)
    assert on[0].channels == {"dense": (1, 0.62)}  # no BM25 rank is made up: only the score borrows
    assert [(h.id, h.score) for h in on if h.id != "en"] == [(h.id, h.score) for h in off if h.id != "en"]


def test_the_stand_in_share_is_its_dense_rank_or_normalised_score() -> None:
    ranked, weights = mixed(), {"dense": 0.5, "bm25": 1.0}
    assert rrf(ranked, weights, 60, 10, {"en"})[0].score == pytest.approx(0.5 / 61 + 1.0 / 61)
    assert weighted(ranked, weights, 10, {"en"})[0].score == pytest.approx(0.5 * 1.0 + 1.0 * 1.0)
    by_id = {h.id: h.score for h in dbsf(ranked, weights, 10, {"en"})}
    alone = {h.id: h.score for h in dbsf(ranked, weights, 10)}
    assert by_id["en"] == pytest.approx(alone["en"] * 3)  # dense share 0.5 x, BM25 share 1.0 x the same norm


def test_the_sample_disk_question_finds_the_english_runbook_only_with_cross_language(sample_wb) -> None:
    default = sample_wb.retriever.params().search
    assert default.cross_language  # the default: rag.cross-language = true
    disk = "runbooks/disk_full.md"
    on = sample_wb.retriever.lookup(ZH_QUERY)
    off = sample_wb.retriever.lookup(ZH_QUERY, search=replace(default, cross_language=False))
    # the default fusion (measured for the local embedder): the runbook fills its cap of the evidence, else nothing
    assert [e.doc_id for e in on.evidence].count(disk) == 2, on.evidence_keys
    assert all(e.cross_language for e in on.evidence if e.doc_id == disk)
    assert disk not in [e.doc_id for e in off.evidence], off.evidence_keys
    assert not any(c.cross_language for c in off.candidates)
    # weighted fusion: the runbook (dense #1) comes first only with the stand-ins
    weighted = replace(default, fusion="weighted", dense_weight=0.7, bm25_weight=1.0)
    first = sample_wb.retriever.lookup(ZH_QUERY, search=weighted)
    assert first.evidence[0].doc_id == disk and first.to_dict()["raw_hits"][0]["cross_language"] is True
    unmarked = sample_wb.retriever.lookup(ZH_QUERY, search=replace(weighted, cross_language=False))
    assert unmarked.evidence[0].doc_id != disk
