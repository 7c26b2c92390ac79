"""What a generation gives: the items, every rejection by reason, how the set was made, and the warning a
person must read with it; `write` puts it on disk complete or not at all."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..runner import EvalProgress
from ..testsets import TestItem, write_test_set
from .filters import DUPLICATE_JACCARD, MAX_SHARED_RUN

SET_FORMAT = "testset-1"
OFFLINE_WARNING = ("Offline questions are made of the documents' own words (their headings, sentences and "
                   "distinctive terms), so they flatter keyword search (BM25): use them to compare configurations "
                   "with each other, not as a measure of absolute quality.")

GenerationProgress = Callable[[EvalProgress], None]  # stages "reading" (documents) and "generating" (items)


def shortfall_warning(size: int, kept: int, rejected: Mapping[str, int]) -> str:
    """What a set smaller than asked says: never a silently smaller set."""
    reasons = ", ".join(f"{n} {reason.replace('_', ' ')}" for reason, n in rejected.items()) or "none"
    return (f"Asked for {size} items, made {kept}: every chunk that could be asked about was tried (rejected: "
            f"{reasons}). Lower --size, or raise --per-doc-max.")


@dataclass(frozen=True)
class GenerationResult:
    items: tuple[TestItem, ...]
    size: int  # items asked for
    generator: str  # "model" | "offline"
    seed: int
    knowledge_base: str
    lang: str  # "auto" | "zh" | "en"
    per_doc_max: int | None
    rejected: Mapping[str, int]  # reason -> count (filters.REASONS)
    documents: int
    chunks: int  # chunks in the knowledge base
    candidates: int  # chunks that could be asked about (after --per-doc-max)
    tried: int  # chunks asked about (an item kept or rejected)
    seconds: float
    model: str | None = None  # the model's describe(); None offline
    prompt_version: str | None = None
    failures: tuple[Mapping[str, Any], ...] = ()  # each failed item: source, reason, kind, detail
    checks: tuple[Mapping[str, Any], ...] = ()  # each "should not be answerable" candidate: lookup and verdict
    warnings: tuple[str, ...] = ()
    follow_up_share: float = 0.0  # the share of follow-up items asked for
    avoid_rare: bool = False  # offline questions made without the chunk's rarest words (--avoid-rare)
    created_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    @property
    def shortfall(self) -> int:
        """Items asked for but not made (every chunk that could be asked about was tried)."""
        return max(0, self.size - len(self.items))

    @property
    def items_per_second(self) -> float:
        return len(self.items) / self.seconds if self.seconds > 0 else 0.0

    def meta(self) -> dict[str, Any]:
        """How the set was made, as written beside it (`testsets.meta_path`)."""
        return {"format": SET_FORMAT, "generator": self.generator, "model": self.model,
                "prompt_version": self.prompt_version, "seed": self.seed, "size": self.size,
                "kept": len(self.items), "should_not_answer": sum(1 for i in self.items if not i.should_answer),
                "follow_up_share": self.follow_up_share, "avoid_rare": self.avoid_rare,
                "follow_ups": sum(1 for i in self.items if i.kind == "follow_up"),
                "knowledge_base": self.knowledge_base, "lang": self.lang, "per_doc_max": self.per_doc_max,
                "documents": self.documents, "chunks": self.chunks, "candidates": self.candidates,
                "tried": self.tried, "rejected": dict(self.rejected), "failures": [dict(f) for f in self.failures],
                "checks": [dict(c) for c in self.checks], "warnings": list(self.warnings),
                "filters": {"max_shared_run": MAX_SHARED_RUN, "duplicate_jaccard": DUPLICATE_JACCARD},
                "created_at": self.created_at, "seconds": round(self.seconds, 3),
                "items_per_second": round(self.items_per_second, 3)}

    def write(self, path: str | os.PathLike[str]) -> Path:
        """The items as JSONL at `path` and the meta beside it, each written aside then renamed."""
        return write_test_set(path, self.items, self.meta())
