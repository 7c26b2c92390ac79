"""A QueryRewriter that gives scripted standalone questions (by the question asked), for tests of what uses one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rag_core.records import ConversationTurn, Rewrite


class ScriptedRewriter:
    name = "scripted"

    def __init__(self, standalone: Mapping[str, str]) -> None:
        self.standalone = dict(standalone)
        self.asked: list[tuple[str, tuple[ConversationTurn, ...]]] = []

    def rewrite(self, question: str, history: Sequence[ConversationTurn]) -> Rewrite:
        question = question.strip()
        self.asked.append((question, tuple(history)))
        searched = self.standalone.get(question, question)
        if not any(t.role == "user" for t in history) or searched == question:
            return Rewrite(question, question, "kept", self.name, turns=len(history))
        return Rewrite(question, searched, "rewritten", self.name, turns=len(history))
