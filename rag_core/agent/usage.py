"""The tokens one turn used: what the chat model reported for each call, else counted with the bundled tokenizer
(rag_core.tokens), and which of the two it is (`counted_by`), so a client never reads a guess as a report."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..records import AssistantReply
from ..tokens import TOKENIZER, count_tokens

MODEL = "model"


def _text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    calls = message.get("tool_calls") or ()
    return (content if isinstance(content, str) else json.dumps(content or "", ensure_ascii=False)) + "".join(
        json.dumps(c, ensure_ascii=False) for c in calls)


@dataclass
class TurnUsage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    counted_by: set[str] = field(default_factory=set)

    def model_call(self, messages: Sequence[Mapping[str, Any]], reply: AssistantReply) -> None:
        """One call to the chat model: its own counts when it reported both, else the messages sent and the reply
        counted here."""
        reported = reply.usage or {}
        if isinstance(reported.get("prompt_tokens"), int) and isinstance(reported.get("completion_tokens"), int):
            self.prompt_tokens += reported["prompt_tokens"]
            self.completion_tokens += reported["completion_tokens"]
            self.counted_by.add(MODEL)
            return
        self.counted(sum(count_tokens(_text(m)) for m in messages),
                     count_tokens(reply.content) + sum(count_tokens(c.name + c.arguments) for c in reply.tool_calls))

    def counted(self, prompt: int, completion: int) -> None:
        """Counts made with the tokenizer (no model reported them: offline mode, a model that sends no usage)."""
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        self.counted_by.add(TOKENIZER)

    def to_dict(self) -> dict[str, Any]:
        """OpenAI's usage fields, and `counted_by`: "model", the tokenizer's name, or both joined by " + "."""
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "total_tokens": self.prompt_tokens + self.completion_tokens,
                "counted_by": " + ".join(sorted(self.counted_by))}
