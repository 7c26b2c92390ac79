"""The `QueryRewriter` contract (rag_core/ports.py): what the rewrite stage relies on, whichever rewriter.

Subclass `QueryRewriterContract` with a `rewriter` fixture (the offline rewrite, the model's against a loopback
server that answers every request, or the fake)."""

from __future__ import annotations

import pytest

from rag_core.ports import QueryRewriter
from rag_core.records import ConversationTurn, Rewrite

OUTCOMES = {"rewritten", "kept", "off", "model_failed", "model_rejected"}
HISTORY = (ConversationTurn("user", "How do I free disk space on a node?"),
           ConversationTurn("assistant", "Delete old logs under /var/log [runbooks/disk_full.md#chunk-1]."))


class QueryRewriterContract:
    @pytest.fixture
    def rewriter(self) -> QueryRewriter:
        raise NotImplementedError("provide the rewriter under test")

    def test_is_a_query_rewriter_with_a_name(self, rewriter) -> None:
        assert isinstance(rewriter, QueryRewriter) and rewriter.name

    def test_without_an_earlier_question_it_keeps_the_question(self, rewriter) -> None:
        for history in ((), (ConversationTurn("assistant", "Hello, how can I help?"),)):
            done = rewriter.rewrite("Which command shows it?", history)
            assert (done.outcome, done.searched, done.original) == ("kept", "Which command shows it?",
                                                                     "Which command shows it?")
            assert done.turns == len(history)

    def test_a_follow_up_gives_a_rewrite_naming_the_question_as_asked(self, rewriter) -> None:
        done = rewriter.rewrite("  Which command shows it? ", HISTORY)
        assert isinstance(done, Rewrite) and done.original == "Which command shows it?"
        assert done.outcome in OUTCOMES and done.searched.strip() and done.by == rewriter.name
        assert done.turns == len(HISTORY)
        assert done.outcome == "rewritten" and done.searched != done.original  # each one here makes it standalone
        assert set(done.to_dict()) == {"original", "searched", "outcome", "by", "detail", "borrowed", "turns"}
