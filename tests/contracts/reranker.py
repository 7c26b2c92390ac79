"""The `Reranker` contract (rag_core/ports.py): what the rerank stage may rely on, whichever adapter.

Subclass `RerankerContract` with a `reranker` fixture: an adapter talking to a healthy service (or the
fake). Scores from the loopback servers and the fake follow the share of query terms in a document, so
the contract can check the order as well as the shape.
"""

from __future__ import annotations

import math

import pytest

from rag_core.errors import RerankError
from rag_core.ports import Reranker
from rag_core.records import RerankResult

DOCS = [
    "Disk space runbook: clean old logs when the disk is full.",
    "HighCPUUsage alert: check the top processes on the node, then scale out.",
    "On-call escalation policy: page the secondary after 15 minutes.",
    "磁盘空间不足时，先清理日志目录。",
]


class RerankerContract:
    @pytest.fixture
    def reranker(self) -> Reranker:
        raise NotImplementedError("provide the adapter under test")

    def test_is_a_reranker_with_a_provider_model_name(self, reranker) -> None:
        assert isinstance(reranker, Reranker)
        provider, _, model = reranker.name.partition(":")
        assert provider and model

    def test_one_finite_score_per_document_in_input_order(self, reranker) -> None:
        result = reranker.rerank("HighCPUUsage alert on the node", DOCS)
        assert isinstance(result, RerankResult) and len(result.scores) == len(DOCS)
        assert all(isinstance(s, float) and math.isfinite(s) for s in result.scores)
        assert max(range(len(DOCS)), key=lambda i: result.scores[i]) == 1

    def test_scores_follow_the_documents_not_their_positions(self, reranker) -> None:
        forward = reranker.rerank("disk is full", DOCS).scores
        backward = reranker.rerank("disk is full", DOCS[::-1]).scores
        assert list(backward) == pytest.approx(list(forward[::-1]))

    def test_chinese_and_a_single_document(self, reranker) -> None:
        (score,) = reranker.rerank("磁盘空间不足", [DOCS[3]]).scores
        assert score > reranker.rerank("磁盘空间不足", [DOCS[2]]).scores[0]

    def test_a_healthy_reranker_is_called_by_searches(self, reranker) -> None:
        """`state` says whether searches call it (a closed circuit), before and after calls that succeed."""
        assert reranker.state().to_dict() == {"state": "closed", "failures": 0, "retry_in_s": 0.0, "last_error": ""}
        reranker.rerank("disk is full", DOCS)
        assert reranker.state().state == "closed" and reranker.state().failures == 0

    def test_no_documents_no_scores(self, reranker) -> None:
        assert reranker.rerank("anything", []).scores == ()

    def test_bad_input(self, reranker) -> None:
        with pytest.raises(RerankError, match="empty query"):
            reranker.rerank("  ", DOCS)
        with pytest.raises(RerankError, match=r"empty document \(item 2 of 2\)"):
            reranker.rerank("disk", ["disk", ""])
        with pytest.raises(TypeError):
            reranker.rerank("disk", "one string, not a list")  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            reranker.rerank("disk", ["ok", 3])  # type: ignore[list-item]
