"""Conversation history for one person's chat.

A Session keeps every finished turn (a UI shows them all) and hands the model only the last
`pairs` question/answer pairs (chat.history-pairs, default 6 as in the seed), as real `user` /
`assistant` messages.

Tool calls and tool results of earlier turns are deliberately not resent: a knowledge-base result is up
to projection.max-total-chars long, so a few turns of them would crowd out the question, and old
evidence may be stale. The assistant's earlier answers (with their citations) carry the context; to cite
evidence again, the model searches again, and only keys returned in the current turn count as verified.
A turn that failed (an error event) is not recorded, so a retry does not repeat the question.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any


@dataclass(frozen=True)
class Turn:
    question: str
    answer: str
    citations: tuple[str, ...] = ()
    mode: str = "model"
    stop_reason: str = "answer"
    created_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))


class Session:
    def __init__(self, session_id: str | None = None) -> None:
        self.id = session_id or uuid.uuid4().hex
        self.turns: list[Turn] = []

    def __len__(self) -> int:
        return len(self.turns)

    def add(self, turn: Turn) -> None:
        self.turns.append(turn)

    def clear(self) -> None:
        self.turns.clear()

    def window(self, pairs: int) -> list[Turn]:
        """The last `pairs` turns that have an answer (0 = none)."""
        answered = [t for t in self.turns if t.answer.strip()]
        return answered[-pairs:] if pairs > 0 else []

    def history_messages(self, pairs: int) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []
        for turn in self.window(pairs):
            messages.append({"role": "user", "content": turn.question})
            messages.append({"role": "assistant", "content": turn.answer})
        return messages
