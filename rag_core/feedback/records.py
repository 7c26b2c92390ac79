"""One recorded chat turn: what was asked, what the lookups found, what was answered, how it was rated."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

RATINGS = {"up": 1, "down": -1, "👍": 1, "👎": -1, "1": 1, "-1": -1, "+1": 1}


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def parse_rating(value: Any) -> int | None:
    """1 (👍), -1 (👎), or None when `value` is neither: "up"/"down", 👍/👎, 1/-1 (as numbers or text)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value in (1, -1) else None
    if isinstance(value, str):
        return RATINGS.get(value.strip().lower())
    return None


def rating_name(rating: int | None) -> str | None:
    return None if rating is None else ("up" if rating > 0 else "down")


@dataclass(frozen=True)
class Lookup:
    """One knowledge-base search of the turn: the query, the parameters it ran with (`LookupParams.to_dict()`),
    the evidence keys it returned, its stage timings (ms). `rewrite`: what the rewrite stage made of a question
    asked in a conversation (`Rewrite.to_dict()`: original, searched, outcome, by, ...); None when it had no
    history, as in turns recorded before there was one."""

    query: str
    params: Mapping[str, Any]
    evidence_keys: tuple[str, ...]
    timings: Mapping[str, float] = field(default_factory=dict)
    candidates: tuple[str, ...] = ()  # every raw hit's evidence key, in rank order (kept or dropped)
    rewrite: Mapping[str, Any] | None = None

    @property
    def searched(self) -> str:
        """The question the knowledge base was searched for: the rewritten one, else `query`."""
        return str((self.rewrite or {}).get("searched") or self.query)

    def to_dict(self) -> dict[str, Any]:
        return {"query": self.query, "params": dict(self.params), "evidence_keys": list(self.evidence_keys),
                "timings": dict(self.timings), "candidates": list(self.candidates),
                "rewrite": dict(self.rewrite) if self.rewrite is not None else None}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Lookup:
        rewrite = data.get("rewrite")
        return cls(data.get("query", ""), dict(data.get("params") or {}), tuple(data.get("evidence_keys") or ()),
                   dict(data.get("timings") or {}), tuple(data.get("candidates") or ()),
                   dict(rewrite) if isinstance(rewrite, Mapping) else None)


@dataclass(frozen=True)
class TurnRecord:
    """A chat turn as the turns store keeps it. `turn_index` (its place in its session, from 0), `id`, the
    rating and its comment are the store's. `user_name`: who asked, as the audit log names them (a user, "local" in
    the one-person setup, `cli:<OS user>` from the command line; "" when not known, as for older turns)."""

    session_id: str
    question: str
    answer: str
    knowledge_bases: tuple[str, ...] = ()
    lookups: tuple[Lookup, ...] = ()
    evidence_keys: tuple[str, ...] = ()
    citations: tuple[str, ...] = ()
    model: str = ""
    mode: str = ""
    seconds: float = 0.0
    trace_id: str = ""
    error: str | None = None
    created_at: str = field(default_factory=now)
    turn_index: int = -1
    id: int = 0
    rating: int | None = None
    comment: str = ""
    rated_at: str | None = None
    user_name: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The JSON of `feedback list --json` and `GET /api/feedback`."""
        return {"id": self.id, "session_id": self.session_id, "turn_index": self.turn_index,
                "trace_id": self.trace_id, "created_at": self.created_at, "user": self.user_name,
                "question": self.question, "answer": self.answer, "knowledge_bases": list(self.knowledge_bases),
                "lookups": [lk.to_dict() for lk in self.lookups], "evidence_keys": list(self.evidence_keys),
                "citations": list(self.citations), "model": self.model, "mode": self.mode,
                "seconds": self.seconds, "error": self.error, "rating": rating_name(self.rating),
                "comment": self.comment, "rated_at": self.rated_at}
