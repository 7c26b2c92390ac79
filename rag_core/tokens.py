"""Counting tokens offline: Qwen's tokenizer (the BPE of the default chat model, qwen-plus), whose vocabulary ships
inside the `dashscope` package (`dashscope/resources/qwen.tiktoken`, read by its `get_tokenizer`), so nothing is
downloaded. tiktoken's own encodings (cl100k, o200k) are fetched from the network on first use and are not used.

It counts what a model did not report (a chat model that sends no usage, offline mode) and, where a budget is in
tokens, what fits; every count made here says so (`TOKENIZER` names it)."""

from __future__ import annotations

import threading
from typing import Any

TOKENIZER = "qwen (dashscope's bundled tokenizer)"
_lock = threading.Lock()
_tokenizer: Any = None


def _loaded() -> Any:
    global _tokenizer
    with _lock:
        if _tokenizer is None:
            from dashscope import get_tokenizer

            _tokenizer = get_tokenizer("qwen-plus")  # reads the vocabulary inside the package (~1 s, once)
        return _tokenizer


def count_tokens(text: str) -> int:
    """The tokens of `text` for Qwen's tokenizer (0 for empty text)."""
    return len(_loaded().encode(text)) if text else 0


def truncate(text: str, limit: int) -> tuple[str, int]:
    """The longest start of `text` within `limit` tokens (whole characters: a cut inside a multi-byte character
    backs off to the character before it), and its tokens."""
    ids = _loaded().encode(text) if text else []
    if len(ids) <= limit:
        return text, len(ids)
    kept = _loaded().decode(ids[:max(0, limit)])
    while kept and not text.startswith(kept):  # a character split between tokens decodes as U+FFFD
        kept = kept[:-1]
    return kept, count_tokens(kept)
