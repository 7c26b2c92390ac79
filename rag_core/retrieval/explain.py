"""Why wasn't it retrieved? The fate of an expected document, chunk or answer in one lookup, and the
smallest change of retrieve-k / max-chunks-per-document / return-n that brings it into the evidence.

For each chunk of the expected document:
* its exact rank in the dense and in the BM25 channel over the whole knowledge base, down to DEPTH (the
  largest retrieve-k the settings allow): one search per channel at that depth gives the ranking, one
  search filtered on the document gives each chunk's own score (a chunk deeper than DEPTH is reported
  with its score and the score at DEPTH; a BM25 score of none means it shares no term with the query);
* its fused rank and its rank after the rerank stage in the lookup as configured, and its fate there:
  kept, beyond retrieve-k, below the score threshold, dropped by the per-document cap (and by which chunks), beyond
  return-n.

The fix is found the way the lookup works: the smallest retrieve-k at which a target chunk enters the
candidates (single channel: its channel rank; hybrid: the channel rankings cut at each width and fused
as the port fuses them, searched by bisection), then, on a real fetch at that width (reranked when a
reranker is on), the cap and return-n that post-processing needs to keep it, and the highest score threshold
that still keeps it (its own score, when the threshold of the search mode is above it). The proposed settings are
checked with a real lookup (`verified`). Targets: the expected chunk; else the chunks holding the
expected answer; else any chunk of the document. Among targets, the fix changing the fewest settings
(then the smallest values) wins.

With an expected answer text, the document is searched for it (exactly, then ignoring case and
whitespace): which chunks contain it, and when no chunk does, the chunk boundary that splits it.

With the expansion and merge stages (small to big), a target merged into a better hit's block is in the evidence
(fate `merged`), and a target that is no hit given to the agent but lies inside a block it is given (grown over it,
or a split answer one block holds whole) is in its context: cause "in_context", and no fix is sought.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from .. import tracing
from ..errors import NotIndexed, RetrievalError
from ..identity import block_key, to_candidate
from ..phrases import Phrase, english, joined
from ..ports import AccessFilteringPort
from ..records import Candidate, DropReason, Fate, SearchHit, SearchMode, StoredChunk, score_pair
from ..text import fold
from ..tracing import semconv as sc
from . import keywords
from .keywords import HitTerms
from .params import LookupParams, search_filters, with_threshold
from .ports import fuse
from .postprocess import postprocess
from .retriever import KnowledgeRetriever, LookupResult

DEPTH = 1000  # channel ranks are exact down to here; = the largest rag.retrieve-k
CHANNELS: tuple[SearchMode, ...] = ("dense", "bm25")
_EXPECT = re.compile(r"^(?P<doc>.+?)(?:#chunk-(?P<chunk>\d+)(?:\.\.(?P<last>\d+))?)?$")


class ChunkSource(Protocol):
    """What explain needs of a store: a document's chunks in order (the ChunkStore's `get_chunks`)."""

    def get_chunks(self, doc_id: str) -> Sequence[StoredChunk]: ...


# ---------------------------------------------------------------------------------------- records
@dataclass(frozen=True)
class Expectation:
    """A document, one chunk of it (`chunk_index`), or the chunks `chunk_index`..`last` (an evidence block's key,
    `doc#chunk-3..5`: any of them counts)."""

    doc_id: str
    chunk_index: int | None = None
    last: int | None = None  # None: one chunk

    @property
    def label(self) -> str:
        return self.doc_id if self.chunk_index is None else block_key(self.doc_id, self.chunk_index, self.end)

    @property
    def end(self) -> int:
        """The last chunk expected (the chunk itself for one)."""
        assert self.chunk_index is not None
        return self.last if self.last is not None else self.chunk_index

    @property
    def several(self) -> bool:
        return self.chunk_index is not None and self.end != self.chunk_index


def parse_expect(text: str) -> Expectation:
    """"runbooks/cpu_high.md", "runbooks/cpu_high.md#chunk-3" or a block's "runbooks/cpu_high.md#chunk-3..5"."""
    match = _EXPECT.match((text or "").strip())
    if not match:
        raise RetrievalError("--expect needs a document id, optionally with #chunk-N "
                             "(e.g. runbooks/cpu_high.md#chunk-3).")
    chunk, last = match["chunk"], match["last"]
    if chunk is None:
        return Expectation(match["doc"])
    first, end = sorted((int(chunk), int(last if last is not None else chunk)))
    return Expectation(match["doc"], first, end if end != first else None)


@dataclass(frozen=True)
class ChannelRank:
    rank: int | None  # exact 1-based rank over the knowledge base; None: deeper than `depth`, or no match
    score: float | None  # the chunk's own score; None: the channel does not match it at all (BM25, no shared term)
    depth: int  # how deep the channel was searched
    floor: float | None  # the score at `depth` (what a deeper chunk would have to beat); None when fewer hits

    def to_dict(self) -> dict[str, Any]:
        return {"rank": self.rank, "score": self.score, "depth": self.depth, "score_at_depth": self.floor}

    @property
    def phrase(self) -> Phrase:
        if self.rank is not None:
            return Phrase("rank", {"rank": self.rank})
        if self.score is None:
            return Phrase("rank.no_match")
        return Phrase("rank.beyond", {"depth": self.depth})

    def describe(self) -> str:
        return english(self.phrase)


@dataclass(frozen=True)
class Fix:
    """Settings that bring a target chunk into the evidence (only the ones that change)."""

    target: str  # the evidence key it brings in
    # retrieve_k / max_chunks_per_document / return_n -> new value (at least); score_threshold -> at most
    changes: Mapping[str, float]
    verified: bool  # a real lookup with these settings keeps the target

    @property
    def phrase(self) -> Phrase:
        names = {"retrieve_k": "retrieve-k", "max_chunks_per_document": "max-chunks-per-document",
                 "return_n": "return-n", "score_threshold": "score-threshold"}
        if not self.changes:
            return Phrase("fix.none")
        return joined("and", [Phrase("fix.at_most", {"setting": names[k], "value": _floor(v)}) if k == "score_threshold"
                              else Phrase("fix.at_least", {"setting": names[k], "value": v})
                              for k, v in self.changes.items()])

    @property
    def text(self) -> str:
        return english(self.phrase)

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "changes": dict(self.changes), "text": self.text, "verified": self.verified,
                "phrase": self.phrase.to_dict()}


@dataclass(frozen=True)
class ChunkFate:
    evidence_key: str
    chunk_index: int
    start: int | None
    end: int | None
    text: str
    channels: Mapping[str, ChannelRank]
    fused_rank: int | None  # rank before rerank in the lookup; None: beyond retrieve-k
    rank: int | None  # rank post-processing walked (after rerank); None: beyond retrieve-k
    rerank_score: float | None
    fate: Fate
    drop: DropReason | None
    target: bool  # one of the chunks the question is about
    score: float | None = None  # its (fused) score in the lookup; None: beyond retrieve-k
    block: str | None = None  # the key of the evidence block given to the agent whose text holds it (None: none)
    terms: HitTerms | None = None  # a target chunk's BM25 terms of the query (retrieval.keywords); None: not a target

    @property
    def given(self) -> bool:
        """A hit the agent was given: kept, or merged into a better hit's block."""
        return self.fate in (Fate.KEPT, Fate.MERGED)

    @property
    def in_block(self) -> bool:
        """Not a hit the agent was given, but inside a block it was given (the block grew over it)."""
        return self.block is not None and not self.given

    def cause_phrase(self, params: LookupParams) -> Phrase:
        if self.in_block:
            return Phrase("explain.in_block", {"key": self.block})
        if self.fate == "kept":
            return Phrase("fate.kept", {"rank": self.rank})
        if self.fate == "merged" and self.drop:
            return Phrase("fate.merged", {"key": self.drop.by[0] if self.drop.by else self.block})
        if self.fate == "doc_cap" and self.drop:
            return Phrase("fate.doc_cap", {"cap": params.max_chunks_per_document, "by": tuple(self.drop.by)})
        if self.fate == "beyond_return_n":
            return Phrase("fate.beyond_return_n", {"return_n": params.return_n, "rank": self.rank})
        if self.fate == "duplicate" and self.drop:
            return Phrase("fate.duplicate", {"key": self.drop.key})
        if self.fate == "disabled":
            return Phrase("fate.disabled", {"key": self.evidence_key})
        if self.fate == "below_threshold" and self.drop:
            at_most = {"mode": params.search.mode, "at_most": _floor(self.drop.score or 0.0)}
            if self.drop.score is None or self.drop.threshold is None:
                return Phrase("fate.below_threshold_unscored", at_most)
            score, threshold = score_pair(self.drop.score, self.drop.threshold)
            return Phrase("fate.below_threshold", {"score": score, "threshold": threshold, **at_most})
        if self.drop is not None:  # a reason without words of its own here: its status, as `search --json` says it
            return Phrase("fate.dropped", {"reason": self.drop.status})
        if self.fate == "no_channel":
            return Phrase("fate.no_channel", {"depth": DEPTH})
        if self.fate == "no_access":
            return Phrase("fate.no_access", {})
        ranks = tuple(Phrase("channel_rank", {"channel": ch, "rank": r.phrase}) for ch, r in self.channels.items()
                      if ch in _mode_channels(params.search.mode))
        code = "fate.beyond_retrieve_k_fused" if params.search.mode == "hybrid" else "fate.beyond_retrieve_k"
        return Phrase(code, {"retrieve_k": params.retrieve_k, "ranks": ranks})

    def cause(self, params: LookupParams) -> str:
        return english(self.cause_phrase(params))

    def to_dict(self, params: LookupParams) -> dict[str, Any]:
        return {"evidence_key": self.evidence_key, "chunk_index": self.chunk_index, "start": self.start,
                "end": self.end, "channels": {ch: r.to_dict() for ch, r in self.channels.items()},
                "fused_rank": self.fused_rank, "rank": self.rank, "rerank_score": self.rerank_score,
                "fate": self.fate, "drop": self.drop.to_dict() if self.drop else None, "cause": self.cause(params),
                "target": self.target, "score": self.score, "cause_phrase": self.cause_phrase(params).to_dict(),
                "block": self.block, **(self.terms.to_dict() if self.terms is not None else {})}


@dataclass(frozen=True)
class AnswerSpan:
    start: int
    end: int
    chunks: tuple[int, ...]  # chunk indexes containing the whole span
    overlapping: tuple[int, ...]  # chunk indexes holding part of it
    boundary: Mapping[str, Any] | None = None  # when split: where, and the parts on each side

    @property
    def split(self) -> bool:
        return not self.chunks and len(self.overlapping) > 1

    def to_dict(self) -> dict[str, Any]:
        return {"start": self.start, "end": self.end, "chunks": list(self.chunks),
                "overlapping": list(self.overlapping), "split": self.split, "boundary": self.boundary}


@dataclass(frozen=True)
class AnswerLocation:
    text: str
    spans: tuple[AnswerSpan, ...]
    match: str  # "exact" | "normalized" (case, whitespace and Traditional/Simplified Chinese ignored) | "none"

    @property
    def found(self) -> bool:
        return bool(self.spans)

    @property
    def split(self) -> bool:
        return self.found and all(s.split for s in self.spans)

    def phrase(self, doc_id: str) -> Phrase:
        if not self.found:
            return Phrase("answer.not_found", {"doc": doc_id})
        if self.split:
            b = self.spans[0].boundary or {}
            return Phrase("answer.split", {k: b.get(k) for k in ("left_chunk", "left_text", "right_chunk",
                                                                 "right_text")})
        holders = sorted({i for s in self.spans for i in s.chunks})
        return Phrase("answer.in", {"chunks": tuple(f"chunk-{i}" for i in holders)})

    def describe(self, doc_id: str) -> str:
        return english(self.phrase(doc_id))

    def to_dict(self, doc_id: str) -> dict[str, Any]:
        return {"text": self.text, "found": self.found, "match": self.match, "split": self.split,
                "spans": [s.to_dict() for s in self.spans], "summary": self.describe(doc_id),
                "summary_phrase": self.phrase(doc_id).to_dict()}


@dataclass(frozen=True)
class Explanation:
    query: str
    expect: Expectation
    params: LookupParams
    chunks: tuple[ChunkFate, ...]
    fix: Fix | None
    answer: AnswerLocation | None
    lookup: LookupResult = field(repr=False)
    note_phrases: tuple[Phrase, ...] = ()

    @property
    def notes(self) -> tuple[str, ...]:
        return tuple(english(n) for n in self.note_phrases)

    @property
    def targets(self) -> tuple[ChunkFate, ...]:
        return tuple(c for c in self.chunks if c.target)

    @property
    def retrieved(self) -> bool:
        """Whether the expected chunk (or a chunk holding the whole answer, or any chunk of the document)
        is evidence: kept, or merged into a better hit's block. An answer split across chunks is never retrieved
        whole."""
        return not self.split and any(c.given for c in self.targets)

    @property
    def context(self) -> tuple[str, ...]:
        """The keys of the blocks given to the agent that hold what was expected without it being a hit given: a
        target chunk inside a block grown over it, or every chunk of a split answer inside one block."""
        if self.retrieved:
            return ()
        if not self.split:
            return tuple(dict.fromkeys(c.block for c in self.targets if c.block is not None))
        block = {c.chunk_index: c.block for c in self.chunks}
        assert self.answer is not None
        whole = [{block.get(i) for i in s.overlapping} for s in self.answer.spans]
        return tuple(dict.fromkeys(b for keys in whole if len(keys) == 1 for b in keys if b is not None))

    @property
    def in_context(self) -> bool:
        """What was expected is in the text the agent gets (in the evidence, or inside a block given)."""
        return self.retrieved or bool(self.context)

    @property
    def split(self) -> bool:
        return self.answer is not None and self.answer.split

    @property
    def cause(self) -> str:
        """"in_evidence" | "in_context" | "answer_split" | "beyond_retrieve_k" | "doc_cap" | "beyond_return_n" |
        "no_channel" | "not_found"."""
        if self.retrieved:
            return "in_evidence"
        if self.context:
            return "in_context"
        if self.split:
            return "answer_split"
        if not self.targets:
            return "not_found"
        best = min(self.targets, key=_closeness)
        return best.fate if best.fate != "duplicate" else "beyond_return_n"

    @property
    def highest_threshold(self) -> float | None:
        """The highest score threshold of the lookup's search mode that still lets a target chunk through (its
        best score in the lookup); None when no target is among the candidates."""
        scores = [c.score for c in self.targets if c.score is not None]
        return max(scores) if scores else None

    def _threshold_note(self) -> list[Phrase]:
        highest, now = self.highest_threshold, self.params.score_threshold
        if highest is None or not (now or any(c.fate == "below_threshold" for c in self.targets)):
            return []
        return [Phrase("verdict.highest_threshold", {"mode": self.params.search.mode, "highest": _floor(highest),
                                                     "now": now})]

    @property
    def verdict_phrase(self) -> Phrase:
        """The verdict, sentence by sentence (a `sentences` phrase; `verdict` is its English)."""
        what: str | Phrase = self.expect.label
        if self.answer is not None and self.expect.chunk_index is None:
            what = Phrase("verdict.answer_in", {"doc": self.expect.doc_id})
        if self.retrieved:
            kept = sorted((c for c in self.targets if c.given), key=lambda c: c.rank or 0)
            return joined("sentences", [Phrase("verdict.in_evidence", {"what": what, "kept": tuple(
                Phrase("verdict.kept", {"key": c.evidence_key, "rank": c.rank}) if c.fate == "kept" else
                Phrase("verdict.merged", {"key": c.evidence_key, "rank": c.rank, "block": c.block or c.evidence_key})
                for c in kept)}), *self._threshold_note()])
        if self.context:
            return joined("sentences", [Phrase("verdict.in_context", {"what": what, "blocks": self.context}),
                                        *self._threshold_note()])
        if not self.targets:
            return joined("sentences", [Phrase("verdict.no_target", {
                "what": what, "answer": self.answer.phrase(self.expect.doc_id) if self.answer else ""})])
        best = min(self.targets, key=_closeness)
        if self.split:
            parts = tuple(Phrase("verdict.part", {"key": c.evidence_key, "cause": c.cause_phrase(self.params)})
                          for c in self.targets)
            return joined("sentences", [Phrase("verdict.split", {"what": what, "parts": parts})])
        said = [Phrase("verdict.not_in_evidence", {"what": what, "key": best.evidence_key,
                                                   "cause": best.cause_phrase(self.params)})]
        if self.fix is not None:
            said.append(Phrase("verdict.fix" if self.fix.verified else "verdict.fix_unverified",
                               {"fix": self.fix.phrase, "target": self.fix.target}))
        elif best.fate == "no_access":  # the cause says no setting brings it in
            pass
        elif best.fate == "no_channel":
            reasons = _dissimilar(best)
            said.append(Phrase("verdict.no_setting_because", {"depth": DEPTH, "reasons": joined("and", reasons)})
                        if reasons else Phrase("verdict.no_setting", {"depth": DEPTH}))
        else:
            said.append(Phrase("verdict.no_width", {"depth": DEPTH}))
        return joined("sentences", [*said, *self._threshold_note()])

    @property
    def verdict(self) -> str:
        return english(self.verdict_phrase)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the CLI's --json, the HTTP API's /v1/explain)."""
        return {
            "query": self.query, "expect": self.expect.label, "doc_id": self.expect.doc_id,
            "chunk_index": self.expect.chunk_index, "params": self.params.to_dict(), "depth": DEPTH,
            "retrieved": self.retrieved, "in_context": self.in_context, "context": list(self.context),
            "cause": self.cause, "verdict": self.verdict,
            "verdict_phrase": self.verdict_phrase.to_dict(),
            "highest_threshold": self.highest_threshold,
            "fix": self.fix.to_dict() if self.fix else None,
            "answer": self.answer.to_dict(self.expect.doc_id) if self.answer else None,
            "chunks": [c.to_dict(self.params) for c in self.chunks],
            "evidence": self.lookup.evidence_keys, "blocks": [p.document_id for p in self.lookup.projection.items],
            "warnings": list(self.lookup.warnings), "notes": list(self.notes),
            "note_phrases": [n.to_dict() for n in self.note_phrases],
            "warning_phrases": [w.to_dict() for w in self.lookup.warning_phrases],
            "rewrite": self.lookup.rewrite.to_dict() if self.lookup.rewrite is not None else None,
            "query_terms": list(self.lookup.keywords.terms) if self.lookup.keywords is not None else [],
        }


# ---------------------------------------------------------------------------------------- helpers
def _mode_channels(mode: str) -> tuple[str, ...]:
    return CHANNELS if mode == "hybrid" else (mode,)


def _closeness(c: ChunkFate) -> tuple[int, int]:
    # in the evidence, then dropped (any reason), then beyond retrieve-k, then found by no channel
    order = {Fate.KEPT: 0, Fate.MERGED: 0, Fate.BEYOND_RETRIEVE_K: 2, Fate.NO_CHANNEL: 3}.get(c.fate, 1)
    best_channel = min((r.rank for r in c.channels.values() if r.rank is not None), default=DEPTH + 1)
    return order, c.rank or best_channel


def _floor(score: float) -> str:
    """A threshold that lets `score` through, rounded down to 4 decimals (rounding up would drop it)."""
    text = f"{int(score * 10_000) / 10_000:.4f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


def _dissimilar(c: ChunkFate) -> list[Phrase]:
    parts = []
    bm25, dense = c.channels.get("bm25"), c.channels.get("dense")
    if bm25 is not None and bm25.score is None:
        parts.append(Phrase("verdict.no_shared_terms"))
    if dense is not None and dense.score is not None and dense.rank is None:
        parts.append(Phrase("verdict.dissimilar_at_depth", {"cosine": dense.score, "depth": dense.depth,
                                                             "floor": dense.floor}) if dense.floor is not None
                     else Phrase("verdict.dissimilar", {"cosine": dense.score}))
    return parts


def _key(hit: SearchHit) -> str:
    return to_candidate(hit, 1).evidence_key


def _target_terms(retriever: KnowledgeRetriever, source: ChunkSource, searched: str, doc_id: str,
                  targets: set[str], ranks: Mapping[str, Mapping[str, ChannelRank]]) -> dict[str, HitTerms]:
    """The BM25 terms of `searched` in each target chunk and their shares (retrieval.keywords), checked against the
    chunk's exact BM25 score; one request for all of them."""
    chunks = {f"{doc_id}#chunk-{c.chunk_index}": c for c in source.get_chunks(doc_id)}
    chunks = {k: c for k, c in chunks.items() if k in targets}
    bm25 = ranks.get("bm25", {})
    found = keywords.score_hits(searched, [(c.id, c.content, bm25[k].score if k in bm25 else None)
                                           for k, c in chunks.items()], keywords.scorer_of(retriever.port))
    return {k: found.of(c.id) for k, c in chunks.items()}


def _rows(source: ChunkSource, doc_id: str) -> list[tuple[int, str, int | None, int | None]]:
    """(chunk_index, text, start, end) of the document's active chunks, in order."""
    out = []
    for chunk in source.get_chunks(doc_id):
        start, end = chunk.metadata.get("start"), chunk.metadata.get("end")
        out.append((chunk.chunk_index, chunk.content,
                    int(start) if isinstance(start, int) else None, int(end) if isinstance(end, int) else None))
    return sorted(out)


# ---------------------------------------------------------------------------------------- the answer
def _normalized(text: str) -> tuple[str, list[int]]:
    """Case-folded text with whitespace runs collapsed to one space and Traditional Chinese folded to Simplified (as
    BM25 folds it: text.fold), and each character's original offset, so a span found in it is shown in the
    original text. A fold that changes the length (no 1:1 character map) is left out."""
    folded = fold(text)
    chars: list[str] = []
    offsets: list[int] = []
    space = False
    for i, ch in enumerate(folded if len(folded) == len(text) else text):
        if ch.isspace():
            if not space and chars:
                chars.append(" ")
                offsets.append(i)
            space = True
            continue
        space = False
        for folded in ch.casefold():
            chars.append(folded)
            offsets.append(i)
    return "".join(chars), offsets


def _document_text(rows: Sequence[tuple[int, str, int | None, int | None]]) -> str | None:
    """The document rebuilt from its chunks' offsets (gaps between sections become spaces); None when a
    chunk has no offsets or offsets that do not fit its text."""
    spans = [(text, start, end) for _, text, start, end in rows if start is not None and end is not None]
    if not rows or len(spans) != len(rows) or any(end - start != len(text) for text, start, end in spans):
        return None
    chars = [" "] * max(end for _, _, end in spans)
    for text, start, end in spans:
        chars[start:end] = text
    return "".join(chars)


def locate_answer(rows: Sequence[tuple[int, str, int | None, int | None]], answer: str,
                  start: int | None = None) -> AnswerLocation:
    """Where `answer` occurs in the document made of `rows`, and which chunks hold it. `start`: the
    answer's known offset in the document (labelled sets), when only that occurrence counts."""
    if start is not None:  # labels often keep surrounding spaces: the offset moves with the strip
        start += len(answer) - len(answer.lstrip())
    answer = answer.strip()
    doc = _document_text(rows)
    if doc is None:  # no offsets (rows from an older writer): look inside each chunk only
        holders = tuple(i for i, text, _, _ in rows if answer in text)
        inside = (AnswerSpan(-1, -1, holders, holders),) if holders else ()
        return AnswerLocation(answer, inside, "exact" if holders else "none")
    spans: list[tuple[int, int]] = []
    if start is not None and doc[start:start + len(answer)] == answer:
        return _located(rows, doc, answer, [(start, start + len(answer))], "exact")
    pos = doc.find(answer)
    while pos >= 0 and answer:
        spans.append((pos, pos + len(answer)))
        pos = doc.find(answer, pos + 1)
    match = "exact"
    if not spans:
        norm_doc, offsets = _normalized(doc)
        norm_answer, _ = _normalized(answer)
        pos = norm_doc.find(norm_answer) if norm_answer else -1
        while pos >= 0:
            spans.append((offsets[pos], offsets[pos + len(norm_answer) - 1] + 1))
            pos = norm_doc.find(norm_answer, pos + 1)
        match = "normalized" if spans else "none"
    return _located(rows, doc, answer, spans, match)


def _located(rows: Sequence[tuple[int, str, int | None, int | None]], doc: str, answer: str,
             spans: Sequence[tuple[int, int]], match: str) -> AnswerLocation:
    """Which chunks hold each span (rows have offsets here: `doc` was rebuilt from them)."""
    bounds = [(i, start or 0, end or 0) for i, _, start, end in rows]
    located = []
    for a, b in spans:
        inside = tuple(i for i, s, e in bounds if s <= a and b <= e)
        touching = [(i, s, e) for i, s, e in bounds if s < b and a < e]
        boundary = None
        if not inside and len(touching) > 1:
            (left, _, left_end), (right, right_start, _) = touching[0], touching[1]
            boundary = {"left_chunk": left, "left_end": left_end, "right_chunk": right, "right_start": right_start,
                        "left_text": doc[a:left_end], "right_text": doc[max(a, right_start):b],
                        "context": f"{doc[max(0, a - 40):left_end]} ⟦chunk boundary⟧ {doc[left_end:b + 40]}"}
        located.append(AnswerSpan(a, b, inside, tuple(i for i, _, _ in touching), boundary))
    return AnswerLocation(answer, tuple(located), match)


# ---------------------------------------------------------------------------------------- the fix
def _needed(candidates: Sequence[Candidate], key: str, params: LookupParams) -> tuple[int, int, float] | None:
    """(cap, return-n, score threshold) post-processing needs to keep `key` from these ranked candidates; None
    if absent. The threshold is the configured one, or the target's score when that is lower."""
    position = next((i for i, c in enumerate(candidates) if c.evidence_key == key), None)
    if position is None:
        return None
    target = candidates[position]
    threshold = max(0.0, min(params.score_threshold, target.score)) if params.score_threshold else 0.0
    kept = [c for c in candidates if not threshold or c.score >= threshold]
    position = kept.index(target)
    above = {c.evidence_key for c in kept[:position] if c.doc_id == target.doc_id and c.doc_id is not None}
    cap = max(params.max_chunks_per_document, len(above) + 1)
    walked = postprocess(kept, return_n=len(kept), max_chunks_per_document=cap)
    accepted = [c.evidence_key for c in walked.evidence]
    return cap, max(params.return_n, accepted.index(key) + 1), threshold


def _changes(params: LookupParams, k: int, cap: int, n: int, threshold: float | None = None) -> dict[str, float]:
    changes: dict[str, float] = {}
    if k > params.retrieve_k:
        changes["retrieve_k"] = k
    if cap > params.max_chunks_per_document:
        changes["max_chunks_per_document"] = cap
    if n > params.return_n:
        changes["return_n"] = n
    if threshold is not None and threshold < params.score_threshold:
        changes["score_threshold"] = threshold
    return changes


class _Simulation:
    """The candidates' evidence keys at any retrieve-k, from the channel rankings at DEPTH, cut and fused
    as the port does it (no search, no reranker: the rerank stage reorders, it never adds or removes)."""

    def __init__(self, ranked: Mapping[str, list[SearchHit]], params: LookupParams, query: str) -> None:
        self.ranked = ranked
        self.params = params
        self.query = query
        self.channels = _mode_channels(params.search.mode)
        self._memo: dict[int, set[str]] = {}

    def keys(self, k: int) -> set[str]:
        if k not in self._memo:
            if len(self.channels) == 1:
                hits = self.ranked[self.channels[0]][:k]
            else:
                hits = fuse({ch: self.ranked[ch][:k] for ch in self.channels}, self.params.search, k, self.query)
            self._memo[k] = {_key(h) for h in hits}
        return self._memo[k]

    def entry_width(self, targets: set[str], low: int) -> int | None:
        """The smallest retrieve-k ≥ low at which a target is a candidate (bisection), None up to DEPTH."""
        high = DEPTH
        if low > high or not self.keys(high) & targets:
            return None
        while low < high:
            mid = (low + high) // 2
            if self.keys(mid) & targets:
                high = mid
            else:
                low = mid + 1
        return low


def _hidden(retriever: KnowledgeRetriever, params: LookupParams, doc_id: str) -> bool:
    """Whether the lookup's access scope hides the document (a port that cannot tell: every document, for a
    restricted scope)."""
    if params.access.unrestricted:
        return False
    port = retriever.port
    return not isinstance(port, AccessFilteringPort) or port.hides(params.access, doc_id)


def _find_fix(retriever: KnowledgeRetriever, query: str, params: LookupParams, result: LookupResult,
              targets: set[str], sim: _Simulation) -> Fix | None:
    options: list[tuple[tuple[int, int, int, int, float], str, int, int, int, float]] = []

    def consider(candidates: Sequence[Candidate], k: int) -> None:
        for key in targets:
            needed = _needed(candidates, key, params)
            if needed is not None:
                cap, n, threshold = needed
                changes = _changes(params, k, cap, n, threshold)
                options.append(((len(changes), k, cap, n, -threshold), key, k, cap, n, threshold))

    consider(result.candidates, params.retrieve_k)
    if not options:
        k = sim.entry_width(targets, params.retrieve_k + 1)
        if k is None:
            return None
        wider = replace(params, retrieve_k=k)
        fetched = retriever.fetch(query, wider)
        consider(retriever.assemble(fetched, wider).candidates, k)
        if not options:  # the simulation and the port disagree (e.g. ties cut differently)
            return Fix(sorted(targets)[0], {"retrieve_k": k}, verified=False)
    _, key, k, cap, n, threshold = min(options)
    proposed = with_threshold(replace(params, retrieve_k=max(k, params.retrieve_k), max_chunks_per_document=cap,
                                      return_n=n), threshold)
    verified = key in _given(retriever.lookup(query, **_overrides(proposed)))
    return Fix(key, _changes(params, k, cap, n, threshold), verified)


def _given(result: LookupResult) -> set[str]:
    """The hits the agent was given: the evidence, and the hits merged into its blocks."""
    return {*result.evidence_keys, *(k for b in result.blocks for k in b.matched)}


def _blocks(result: LookupResult, doc_id: str) -> dict[int, str]:
    """chunk index -> the key of the block given to the agent (in the projection) whose text holds that chunk of
    `doc_id`, the best block first."""
    given = {p.document_id for p in result.projection.items}
    held: dict[int, str] = {}
    for b in result.blocks:
        if b.key in given and b.doc_id == doc_id and b.first is not None and b.last is not None:
            for i in range(b.first, b.last + 1):
                held.setdefault(i, b.key)
    return held


def _overrides(params: LookupParams) -> dict[str, Any]:
    return {"retrieve_k": params.retrieve_k, "return_n": params.return_n,
            "max_chunks_per_document": params.max_chunks_per_document, "search": params.search,
            "filters": params.filters, "rerank": params.rerank, "budgets": params.budgets,
            "thresholds": params.thresholds, "scope": params.scope, "rewrite": params.rewrite,
            "history": params.history, "expand": params.expand, "access": params.access}


# ---------------------------------------------------------------------------------------- entry point
def _channel_ranks(retriever: KnowledgeRetriever, query: str, params: LookupParams, doc_id: str,
                   size: int) -> tuple[dict[str, list[SearchHit]], dict[str, dict[str, ChannelRank]]]:
    ranked: dict[str, list[SearchHit]] = {}
    ranks: dict[str, dict[str, ChannelRank]] = {}
    for channel in CHANNELS:
        port = retriever.port.configured(replace(params.search, mode=channel))
        full = list(port.search(query, DEPTH, search_filters(params)).hits)
        own = port.search(query, max(size, 1), {**(search_filters(params) or {}), "doc_id": doc_id}).hits
        position: dict[Any, int] = {}
        for rank, hit in enumerate(full, start=1):
            position.setdefault(_key(hit), rank)
        floor = full[-1].score if len(full) >= DEPTH else None
        ranked[channel] = full
        ranks[channel] = {_key(h): ChannelRank(position.get(_key(h)), h.score, DEPTH, floor) for h in own}
    return ranked, ranks


def _answer_document(retriever: KnowledgeRetriever, source: ChunkSource, answer: str,
                     params: LookupParams) -> tuple[str, list[str]]:
    """The documents containing `answer`, found among those whose chunks best match its words (BM25)."""
    port = retriever.port.configured(replace(params.search, mode="bm25"))
    docs: list[str] = []
    for hit in port.search(answer, 200, search_filters(params)).hits:
        doc_id = to_candidate(hit, 1).doc_id
        if doc_id and doc_id not in docs:
            docs.append(doc_id)
    found = [d for d in docs[:30] if locate_answer(_rows(source, d), answer).found]
    if not found:
        raise RetrievalError("The answer text was not found in the documents that best match its words; "
                             "name the expected document with --expect DOC_ID.")
    return found[0], found[1:]


def explain(retriever: KnowledgeRetriever, source: ChunkSource, query: str, expect: str | Expectation | None = None,
            answer: str | None = None, *, answer_start: int | None = None, **overrides: Any) -> Explanation:
    """Why the expected document / chunk / answer is or is not in the evidence of `query` (see the module
    docstring). `answer_start`: the answer's offset in the document, when known (labelled sets).
    `overrides` are lookup settings (retrieve_k, return_n, max_chunks_per_document, search, rerank,
    filters, rewrite, history), as for `KnowledgeRetriever.lookup`: with `history` the question is rewritten first,
    and each channel ranks the question searched. Raises RetrievalError for bad input. One span holds all it
    searches (its lookup and each channel's ranking): one trace per explanation."""
    with tracing.span("explain", sc.CHAIN, {sc.INPUT_VALUE: query, "rag.expect": str(expect or ""),
                                            "rag.answer": answer}) as span:
        explanation = _explain(retriever, source, query, expect, answer, answer_start=answer_start, **overrides)
        tracing.set_attributes(span, {sc.OUTPUT_VALUE: explanation.verdict, "rag.cause": explanation.cause})
        return explanation


def _explain(retriever: KnowledgeRetriever, source: ChunkSource, query: str, expect: str | Expectation | None,
             answer: str | None, *, answer_start: int | None, **overrides: Any) -> Explanation:
    params = retriever.params(**overrides)
    answer = (answer or "").strip() or None
    notes: list[Phrase] = []
    if expect is None or (isinstance(expect, str) and not expect.strip()):
        if answer is None:
            raise RetrievalError(
                "Say what was expected: a document (DOC_ID or DOC_ID#chunk-N), an answer text, or both."
            )
        doc_id, others = _answer_document(retriever, source, answer, params)
        expectation = Expectation(doc_id)
        if others:
            notes.append(Phrase("note.answer_also_in", {"docs": tuple(others)}))
    else:
        expectation = expect if isinstance(expect, Expectation) else parse_expect(expect)
    rows = _rows(source, expectation.doc_id)
    hidden = _hidden(retriever, params, expectation.doc_id)
    if not rows or (hidden and not params.access.reveal):  # a hidden document is as unknown as a missing one
        raise NotIndexed(f"No document {expectation.doc_id!r} in the knowledge base (`docs` lists them).")
    indexes = [i for i, _, _, _ in rows]
    if expectation.chunk_index is not None:
        for wanted in dict.fromkeys((expectation.chunk_index, expectation.end)):
            if wanted not in indexes:
                raise RetrievalError(f"{expectation.doc_id} has chunks 0 to {max(indexes)}; there is no "
                                     f"chunk-{wanted}.")
    result = retriever.lookup(query, **_overrides(params))
    # A question asked in a conversation is explained as the standalone question the lookup searched: the channel
    # ranks, the simulation and the fix search it without the history (the rewrite is not made again).
    searched, standalone = result.searched, replace(params, history=())
    ranked, ranks = _channel_ranks(retriever, searched, standalone, expectation.doc_id, len(rows))
    located = locate_answer(rows, answer, answer_start) if answer else None

    def key(i: int) -> str:
        return f"{expectation.doc_id}#chunk-{i}"

    if expectation.chunk_index is not None:
        targets = {key(i) for i in indexes if expectation.chunk_index <= i <= expectation.end}
    elif located is not None and located.found:
        targets = {key(i) for s in located.spans for i in (s.chunks or s.overlapping)}
    elif located is not None:
        targets = set()
    else:
        targets = {key(i) for i in indexes}
    first_trace: dict[str, Any] = {}
    for t in result.traces:
        first_trace.setdefault(t.evidence_key, t)
    mode_channels = _mode_channels(params.search.mode)
    held = _blocks(result, expectation.doc_id)
    words = _target_terms(retriever, source, searched, expectation.doc_id, targets, ranks)
    fates = []
    for i, text, start, end in rows:
        channels: dict[str, ChannelRank] = {ch: ranks[ch].get(key(i), ChannelRank(None, None, DEPTH, None))
                                            for ch in CHANNELS}
        trace = first_trace.get(key(i))
        own: float | None = None
        if hidden:  # shown to who may know only (reveal): its access groups kept it out of every channel
            fate, drop, fused, rank, score = Fate.NO_ACCESS, None, None, None, None
        elif trace is not None:
            fate, drop, fused, rank, score = trace.fate, trace.drop, trace.fused_rank, trace.rank, trace.rerank_score
            own = trace.score
        else:
            seen = any(channels[ch].rank is not None for ch in mode_channels)
            fate = Fate.BEYOND_RETRIEVE_K if seen else Fate.NO_CHANNEL
            drop, fused, rank, score = None, None, None, None
        fates.append(ChunkFate(key(i), i, start, end, text, channels, fused, rank, score, fate, drop, key(i) in targets,
                               own, held.get(i), words.get(key(i))))
    explained = Explanation(result.query, expectation, params, tuple(fates), None, located, result, tuple(notes))
    fixable = targets - {f.evidence_key for f in fates if f.fate in ("disabled", "no_access")}  # no setting can
    if not fixable or any(f.given for f in fates if f.target) or explained.context:  # nothing to fix
        return explained
    fix = _find_fix(retriever, searched, standalone, result, fixable, _Simulation(ranked, standalone, searched))
    return replace(explained, fix=fix)


def explain_dict(workbench: Any, query: str, expect: str | None = None, answer: str | None = None,
                 **overrides: Any) -> dict[str, Any]:
    """`explain` over a Workbench (its retriever and store), as a JSON-ready dict: for `GET /v1/explain`."""
    return explain(workbench.retriever, workbench.store, query, expect, answer, **overrides).to_dict()
