"""The pieces of test-set generation that need no model and no Milvus: text matching in Chinese and English,
the keep filters, and the seeded sampling over documents (through the ChunkStore port, on the in-memory
store that passes the store contract)."""

from __future__ import annotations

from collections import Counter

import pytest

from rag_core.errors import EvaluationError
from rag_core.evaluation.generate.filters import KeepFilters, answer_in_chunk, copies_chunk, shared_run
from rag_core.evaluation.generate.sampling import check_size, quotable_sentences, read_chunks, sample_order
from rag_core.evaluation.textmatch import bigram_jaccard, contains_tokens, find_normalised, match_tokens, token_f1
from rag_core.ingest import Ingestor
from rag_core.store.memory import InMemoryChunkStore
from tests.fakes.embedder import FakeEmbedder


def test_tokens_are_chinese_characters_and_other_words() -> None:
    assert match_tokens("PodMemoryUsageHigh 告警：node_cpu_seconds_total 超过 95%，ＡＢＣ on-call") == [
        "podmemoryusagehigh", "告", "警", "node_cpu_seconds_total", "超", "过", "95", "abc", "on-call"]


def test_an_answer_is_found_after_whitespace_normalisation_and_kept_as_the_chunk_has_it() -> None:
    chunk = "内存在流量高峰时升高、\n流量下降后回落，这是正常的负载变化。\nThe  primary\non-call engineer acknowledges."
    assert answer_in_chunk("流量高峰时升高、流量下降后回落", chunk) == "流量高峰时升高、\n流量下降后回落"
    assert answer_in_chunk("The primary on-call engineer", chunk) == "The  primary\non-call engineer"
    assert answer_in_chunk("the primary on-call engineer", chunk) is None  # case is the text's own
    assert answer_in_chunk("流量高峰时升高，流量下降后回落", chunk) is None  # so is punctuation
    assert find_normalised("  ", chunk) is None


def test_a_question_copying_a_long_stretch_of_the_chunk_is_caught_by_language() -> None:
    en = "The HighCPUUsageCritical alert fires when utilisation stays above 95% for 5 minutes and always pages."
    assert shared_run("When does the HighCPUUsageCritical alert fire?", en) == 3  # "the highcpuusagecritical alert"
    assert not copies_chunk("When does the HighCPUUsageCritical alert fire?", en, "en")
    assert copies_chunk("What happens when utilisation stays above 95% for 5 minutes?", en, "en")  # 7 words
    zh = "如果堆内存接近上限且 Full GC 后不回落，是堆内泄漏；如果堆内存正常但容器内存持续上升，是堆外泄漏。"
    assert not copies_chunk("怎样区分订单服务的堆内泄漏和堆外泄漏？", zh, "zh")
    assert copies_chunk("堆内存正常但容器内存持续上升说明什么？", zh, "zh")  # 13 characters in a row


def test_near_duplicates_are_rewordings_of_one_question() -> None:
    filters = KeepFilters()
    filters.keep("When does the HighCPUUsageCritical alert fire?")
    assert filters.duplicate_of("When is the HighCPUUsageCritical alert fired?") is not None
    assert filters.duplicate_of("When does the HighCPUUsageCritical alert fire?") is not None
    assert filters.duplicate_of("How long is an Idempotency-Key kept?") is None
    assert bigram_jaccard("订单服务的容器内存限制是多少？", "支付网关的超时时间是多少？") < 0.2
    filters.reject("duplicate"), filters.reject("duplicate"), filters.reject("malformed")
    assert filters.counts() == {"duplicate": 2, "malformed": 1}  # in REASONS order, zeros left out


def test_answer_scores_compare_tokens() -> None:
    answer = match_tokens("It fires when **utilisation** stays above 95% for 5 minutes [runbooks/cpu_high.md#chunk-1].")
    assert contains_tokens(answer, match_tokens("utilisation stays above 95%"))
    assert not contains_tokens(answer, match_tokens("above 95% utilisation"))
    assert token_f1(match_tokens("5 分钟内确认"), match_tokens("5 分钟内由主值班工程师确认")) == pytest.approx(
        2 * 1.0 * (6 / 13) / (1.0 + 6 / 13))  # precision 6/6, recall 6/13 (characters)
    assert token_f1(["a"], ["b"]) == 0.0


def _store(docs: dict[str, str]) -> InMemoryChunkStore:
    store = InMemoryChunkStore()
    embedder = FakeEmbedder()
    store.open(embedder.name, embedder.dim)
    reports = Ingestor(store, embedder, max_size=120, overlap=0).ingest_uploads(
        [(doc_id, text.encode("utf-8")) for doc_id, text in docs.items()])
    assert all(r.status == "added" for r in reports), [r.error for r in reports]
    return store


def _paragraphs(name: str, n: int) -> str:
    return "\n\n".join(f"Paragraph {i} of the {name} document says that step {i} must be done before step {i + 1}."
                       for i in range(n))


DOCS = {"big.md": _paragraphs("big", 10), "small.md": _paragraphs("small", 2), "mid.md": _paragraphs("mid", 3),
        "code.md": "```bash\nkubectl top pods -A | sort -k3 -h | tail -n 20 && kubectl describe node worker-1\n```\n"}


def test_sampling_takes_documents_round_robin_seeded_and_capped() -> None:
    store = _store(DOCS)
    chunks = read_chunks(store)
    assert {d: len(cs) for d, cs in chunks.items()} == {"big.md": 10, "code.md": 1, "mid.md": 3, "small.md": 2}
    assert quotable_sentences(chunks["code.md"][0].content) == []  # nothing to quote in a code block
    eligible = {d: [c for c in cs if quotable_sentences(c.content)] for d, cs in chunks.items()}
    order = sample_order(eligible, seed=7)
    assert len(order) == 15 and len(set(order)) == 15
    for n in range(1, len(order) + 1):  # no document takes more than its share, at any length
        taken = Counter(c.doc_id for c in order[:n])
        still = [d for d in eligible if eligible[d] and taken[d] < len(eligible[d])]
        assert all(taken[d] <= min(taken[o] for o in still) + 1 for d in taken if still)
    assert sample_order(eligible, seed=8) != order  # another seed, another sample
    assert sample_order(eligible, seed=7) == order  # the same seed and knowledge base, the same order
    capped = sample_order(eligible, seed=7, per_doc_max=2)
    assert Counter(c.doc_id for c in capped) == {"big.md": 2, "mid.md": 2, "small.md": 2}
    assert capped == [c for c in order if c in capped]  # the cap keeps the order of what it keeps
    assert order[0].evidence_key == f"{order[0].doc_id}#chunk-{order[0].chunk_index}"


def test_an_empty_knowledge_base_and_a_size_it_cannot_give_are_one_clear_line() -> None:
    empty = InMemoryChunkStore()
    empty.open("fake:hash-16", 16)
    with pytest.raises(EvaluationError, match=r"^The knowledge base 'biz' is empty: ingest documents first .*"
                                              r"`python -m rag_core --kb biz ingest PATH`\)\.$"):
        read_chunks(empty, "biz")
    chunks = read_chunks(_store(DOCS))
    order = sample_order(chunks, seed=0, per_doc_max=2)
    check_size(7, order, 4, 2)
    with pytest.raises(EvaluationError) as info:
        check_size(8, order, 4, 2, "biz")
    assert str(info.value) == ("The knowledge base 'biz' can give at most 7 items (4 documents with 7 chunks that hold "
                               "a sentence to quote, at most 2 per document (--per-doc-max)): ask for --size 7 or "
                               "fewer or raise --per-doc-max.")
    with pytest.raises(EvaluationError, match="--size must be a whole number of at least 1"):
        check_size(0, order, 4, 2)
    with pytest.raises(EvaluationError, match="--per-doc-max must be at least 1"):
        sample_order(chunks, seed=0, per_doc_max=0)
