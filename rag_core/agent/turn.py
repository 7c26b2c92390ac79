"""One agent turn folded from its events into a plain record: the text pieces and tool steps in the
order they happened, then citations, notices and the error. The chat page renders it, the HTTP service
answers `/api/chat` with it, so every entry point reads a turn the same way."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..identity import key_range
from .events import ContentEvent, DoneEvent, ErrorEvent, Event, NoticeEvent, ToolCallEvent, ToolResultEvent


@dataclass
class ToolStep:
    call_id: str
    name: str
    arguments: dict[str, Any] | None
    raw_arguments: str
    ok: bool | None = None  # None while running
    error: str | None = None
    seconds: float = 0.0
    result: Any = None
    lookup: dict[str, Any] | None = None  # LookupResult.to_dict() for the knowledge-base tool

    @property
    def query(self) -> str:
        if self.lookup:
            return self.lookup["query"]
        return str((self.arguments or {}).get("query", ""))


def _block_entry(block: Mapping[str, Any], best: Mapping[str, Any]) -> dict[str, Any]:
    """A block of several hits as an evidence entry, shaped like its best hit's (`best`)."""
    first = key_range(block["key"])
    return {**best, "evidence_key": block["key"], "chunk_index": first[1] if first else best.get("chunk_index"),
            "content": block["content"], "heading_path": block.get("section") or best.get("heading_path", ""),
            "score": block["score"], "matched": list(block["matched"]), "block": block["key"]}


@dataclass
class AssistantTurn:
    """What one answer showed, in order: text pieces and tool steps; then citations, notices, error."""

    parts: list[ToolStep | str] = field(default_factory=list)
    citations: tuple[str, ...] = ()
    unverified: tuple[str, ...] = ()
    notices: list[str] = field(default_factory=list)
    notice_kinds: list[str] = field(default_factory=list)  # NoticeEvent.kind of each notice, for a UI's language
    error: str | None = None
    error_kind: str = ""  # ErrorEvent.kind, for a UI's language
    mode: str = ""
    trace_id: str = ""  # the turn's trace: what a rating names (rag_core.feedback)
    turn_index: int = -1
    usage: dict[str, Any] | None = None  # DoneEvent.usage

    @property
    def text(self) -> str:
        return "".join(p for p in self.parts if isinstance(p, str))

    def tools(self) -> list[ToolStep]:
        return [p for p in self.parts if isinstance(p, ToolStep)]

    def evidence(self) -> dict[str, dict[str, Any]]:
        """Every piece of evidence an answer may cite this turn, by evidence key (first wins): each hit in the
        evidence and each hit merged into another's block, with `block` (the key of the block holding it) when the
        lookup made blocks, and each block of several hits under its range key (`doc#chunk-3..5`: its content,
        `chunk_index` its first matched chunk, `heading_path` its section), so a citation of either opens."""
        found: dict[str, dict[str, Any]] = {}
        for step in self.tools():
            lookup = step.lookup or {}
            holder = {key: b["key"] for b in lookup.get("blocks", []) for key in b["matched"]}
            merged = [h for h in lookup.get("raw_hits", []) if h.get("fate") == "merged"]
            for hit in [*lookup.get("evidence", []), *merged]:
                key = hit["evidence_key"]
                found.setdefault(key, {**hit, "block": holder[key]} if key in holder else hit)
            for block in lookup.get("blocks", []):
                if block["key"] not in found:
                    found[block["key"]] = _block_entry(block, found.get(block["matched"][0], {}))
        return found

    def blocks(self) -> dict[str, dict[str, Any]]:
        """Every evidence block the tools returned this turn (`Block.to_dict()`), by its key: what a citation's
        `block` opens (the section around the matched chunk)."""
        return {b["key"]: b for step in self.tools() for b in (step.lookup or {}).get("blocks", [])}

    @classmethod
    def from_events(cls, events: Iterable[Event]) -> AssistantTurn:
        turn = cls()
        for event in events:
            turn.apply(event)
        return turn

    def apply(self, event: Event) -> ToolStep | None:
        """Fold one event into the record; returns the tool step it touched, if any."""
        if isinstance(event, ToolCallEvent):
            step = ToolStep(event.call_id, event.name, dict(event.arguments) if event.arguments is not None else None,
                            event.raw_arguments)
            self.parts.append(step)
            return step
        if isinstance(event, ToolResultEvent):
            called = next((s for s in reversed(self.tools()) if s.call_id == event.call_id), None)
            if called is None:
                called = ToolStep(event.call_id, event.name, None, "")
                self.parts.append(called)
            step = called
            step.ok, step.error, step.seconds, step.result = event.ok, event.error, event.seconds, event.result
            step.lookup = event.lookup.to_dict() if event.lookup is not None else None
            return step
        if isinstance(event, ContentEvent):
            if self.parts and isinstance(self.parts[-1], str):
                self.parts[-1] += event.text
            else:
                self.parts.append(event.text)
        elif isinstance(event, NoticeEvent):
            self.notices.append(event.message)
            self.notice_kinds.append(event.kind)
        elif isinstance(event, DoneEvent):
            self.citations, self.unverified, self.mode = (
                tuple(event.citations),
                tuple(event.unverified_citations),
                event.mode,
            )
            self.trace_id, self.turn_index = event.trace_id, event.turn_index
            self.usage = dict(event.usage) if event.usage is not None else None
        elif isinstance(event, ErrorEvent):
            self.error, self.error_kind = event.message, event.kind
        return None
