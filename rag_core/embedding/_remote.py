"""Small helpers shared by the remote embedding adapters (DashScope, OpenAI-compatible)."""

from __future__ import annotations

from typing import Sequence

from ..errors import EmbeddingError


def refuse_empty(texts: Sequence[str], what: str) -> None:
    # An empty text has no meaning to embed; the APIs reject it, and a stored placeholder vector
    # would only produce junk hits. Chunking never yields one, so this points at a caller's bug.
    for i, text in enumerate(texts):
        if not isinstance(text, str) or not text.strip():
            where = "" if len(texts) == 1 else f" (item {i + 1} of {len(texts)})"
            raise EmbeddingError(f"Cannot embed an empty {what}{where}.")


def texts(n: int) -> str:
    return f"{n} text" if n == 1 else f"{n} texts"


def clip(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def redact(text: str, secret: str) -> str:
    return text.replace(secret, "***") if secret else text
