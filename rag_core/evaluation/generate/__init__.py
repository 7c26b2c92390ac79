"""Test sets generated from a knowledge base: chunks sampled over its documents (seeded), then questions
from a chat model (`generate_with_model`) or, without one, deterministic questions by templates
(`generate_offline`); every item checkable (its source chunk, its verbatim answer) and every rejection counted by
reason.

    result = generate_test_set(workbench.store, size=50, seed=0, generator="model", model=chat_model,
                               lookup=workbench.retriever.lookup, kb_name="biz", progress=print)
    result.write("data/eval/testsets/biz-50.jsonl")   # complete or nothing; eval FILE reads it as it is

Nothing here builds a model or opens a store: the entry point passes them in.
"""

from __future__ import annotations

from typing import Any

from ...errors import EvaluationError, GeneratorNeedsModel
from ...ports import ChatModel, ChunkStore
from .filters import REASONS
from .model import Lookup, generate_with_model
from .offline import generate_offline
from .prompts import PROMPT_VERSION
from .result import OFFLINE_WARNING, GenerationProgress, GenerationResult
from .sampling import SampledChunk, read_chunks, sample_order

GENERATORS = ("model", "offline")

__all__ = ["GENERATORS", "OFFLINE_WARNING", "PROMPT_VERSION", "REASONS", "GenerationProgress", "GenerationResult",
           "Lookup", "SampledChunk", "generate_offline", "generate_test_set", "generate_with_model", "read_chunks",
           "sample_order"]


def generate_test_set(store: ChunkStore, *, size: int, generator: str = "offline", model: ChatModel | None = None,
                      lookup: Lookup | None = None, **options: Any) -> GenerationResult:
    """`generate_with_model` (generator "model": `model` needed) or `generate_offline`, with `options` (seed,
    per_doc_max, lang, follow_ups, kb_name, progress; offline also avoid_rare; for a model also unanswerable,
    retries, item_deadline, clock)."""
    if generator == "offline":
        return generate_offline(store, size=size, **options)
    if generator != "model":
        raise EvaluationError(f"--generator {generator!r}: use one of {', '.join(GENERATORS)}.")
    if options.pop("avoid_rare", False):
        raise EvaluationError("--avoid-rare is for --generator offline: a model writes its own words.")
    if model is None:
        raise GeneratorNeedsModel("--generator model needs a chat model: set DASHSCOPE_API_KEY, or chat.provider, "
                              "chat.base-url and chat.model (or eval.generator-model), or use --generator offline.")
    return generate_with_model(store, model, size=size, lookup=lookup, **options)
