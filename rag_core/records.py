"""Frozen records that flow through the pipeline. Change them with `dataclasses.replace`."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

if TYPE_CHECKING:
    import numpy as np


from .errors import LogsError, RetrievalError
from .phrases import Phrase

SearchMode = Literal["dense", "bm25", "hybrid"]  # which channels find candidates
Fusion = Literal["rrf", "weighted", "dbsf"]  # how hybrid search fuses its channels
SEARCH_MODES: tuple[SearchMode, ...] = get_args(SearchMode)
FUSIONS: tuple[Fusion, ...] = get_args(Fusion)


class DropKind(StrEnum):
    """Why the lookup dropped a raw hit: each of post-processing's checks gives its own (retrieval.postprocess,
    which walks them in its order; this order is the app's legends')."""

    DUPLICATE = "duplicate"  # a higher-ranked hit holds the same evidence key
    DOC_CAP = "doc_cap"  # its document already had max-chunks-per-document blocks
    BEYOND_RETURN_N = "beyond_return_n"  # return-n blocks were already accepted
    BELOW_THRESHOLD = "below_threshold"  # its score is below the search mode's score threshold
    DISABLED = "disabled"  # a person disabled the chunk (store.edits)
    MERGED = "merged"  # the merge stage put it into a higher-ranked hit's block of the same document
    # the lookup's access groups hid its document (access.groups): filtered inside the store, so never a raw hit;
    # only counted, and only for a caller who may know (AccessScope.reveal: an admin of the knowledge base)
    NO_ACCESS = "no_access"


class Fate(StrEnum):
    """What became of a raw hit (`HitTrace.fate`), and in "why wasn't it retrieved?" of a chunk that was not even
    among the hits (`ChunkFate.fate`). The drop reasons are DropKind's, with the same values."""

    KEPT = "kept"
    DUPLICATE = DropKind.DUPLICATE.value
    DOC_CAP = DropKind.DOC_CAP.value
    BEYOND_RETURN_N = DropKind.BEYOND_RETURN_N.value
    BELOW_THRESHOLD = DropKind.BELOW_THRESHOLD.value
    DISABLED = DropKind.DISABLED.value
    MERGED = DropKind.MERGED.value
    NO_ACCESS = DropKind.NO_ACCESS.value
    BEYOND_RETRIEVE_K = "beyond_retrieve_k"  # explain: ranked in a channel, but below the retrieve-k hits
    NO_CHANNEL = "no_channel"  # explain: no channel ranks it within the depth explain looks


class IngestStatus(StrEnum):
    """What ingesting one file did (`IngestReport.status`)."""

    ADDED = "added"
    REPLACED = "replaced"
    UNCHANGED = "unchanged"
    FAILED = "failed"
    SKIPPED = "skipped"  # refused by a rule, not broken (a link out of the folder)


PAGE, SLIDE, ROW, IMAGE = "page", "slide", "row", "image"  # the units of a Place (IMAGE: an image file, OCR'd)


@dataclass(frozen=True)
class Place:
    """Where a stretch of a document's text comes from: a page, a slide or a spreadsheet row. It runs from
    `offset` to the next place's offset (`Document.places` is sorted by offset)."""

    offset: int
    unit: str  # PAGE | SLIDE | ROW | IMAGE
    number: int  # 1-based: the page or slide number; a row's number as the spreadsheet shows it
    sheet: str = ""  # a row's sheet ("" in a CSV)
    ocr: bool = False  # the text of this page was read from its image (OCR)
    question: str = ""  # a Q&A sheet's row: its question, what its chunks are searched by (Chunk.search_text)


@dataclass(frozen=True)
class Location:
    """The places one chunk spans, as a citation names them: `p. 12`, `pp. 12–13`, `slide 3`, `sheet FAQ, row 4`."""

    unit: str
    first: int
    last: int
    sheet: str = ""
    ocr: bool = False  # some of it was read by OCR

    @property
    def label(self) -> str:
        span = str(self.first) if self.first == self.last else f"{self.first}–{self.last}"
        plural = self.first != self.last
        if self.unit == PAGE:
            return f"{'pp.' if plural else 'p.'} {span}"
        if self.unit == IMAGE:
            return "image"
        name = f"{self.unit}{'s' if plural else ''} {span}"
        return f"sheet {self.sheet}, {name}" if self.sheet else name

    def to_dict(self) -> dict[str, Any]:
        return {"unit": self.unit, "first": self.first, "last": self.last, "sheet": self.sheet, "ocr": self.ocr,
                "label": self.label}


_QUESTION_LINE = re.compile(r" {0,3}#{1,6}[ \t]+Q: *(.*)")  # a Q&A pair's heading line (loaders.sheets)


def qa_question(content: str, metadata: Mapping[str, Any] | None) -> str:
    """The question a chunk of a Q&A pair (metadata `searchText`) is searched by, "" for any other chunk: the one
    its first line asks when it starts with the pair's `## Q: ...` line (so an edit of that line changes it),
    else the stored one (a long answer's later chunks)."""
    question = str((metadata or {}).get("searchText") or "")
    if not question:
        return ""
    match = _QUESTION_LINE.match(content.split("\n", 1)[0])
    return (match.group(1).strip() if match else "") or question


def search_text(content: str, metadata: Mapping[str, Any] | None) -> str:
    """What a stored chunk is searched by (embedded, and BM25's `bm25_text`): its content, or for a chunk of a
    Q&A pair its question alone, with the keywords and example questions an edit gave it (kb.chunk_edits)."""
    question = qa_question(content, metadata)
    if not question:
        return content
    keywords, questions = (metadata or {}).get("keywords") or [], (metadata or {}).get("questions") or []
    return "\n\n".join([question, *(["Keywords: " + ", ".join(keywords)] if keywords else []),
                        *(["Questions: " + " ".join(questions)] if questions else [])])


def cited_as(source: str, location: str = "") -> str:
    """How a citation reads to a person: the document, and the pages, slides or rows when known
    (`manual.pdf p. 12`, `deck.pptx slide 3`, `faq.xlsx sheet FAQ, row 7`)."""
    return f"{source} {location}" if location else source


@dataclass(frozen=True)
class Document:
    """A decoded document, ready to chunk. `text` has LF line endings only."""

    doc_id: str  # normalised relative path inside the knowledge base, e.g. "runbooks/cpu_high.md"
    text: str
    file_name: str  # last path component, as uploaded
    extension: str  # lower-case, without the dot: "md", "txt", "pdf", "docx", "xlsx", ...
    size_bytes: int  # size of the original file
    # sha256 of `text` (what is indexed), hex; of `text` and `places` when there are places, so a document whose
    # pages move gets a new version
    content_hash: str
    encoding: str = "utf-8"  # what the bytes were decoded from (informational)
    places: tuple[Place, ...] = ()  # pages, slides or rows, sorted by offset; () for plain text
    notes: tuple[str, ...] = ()  # what a person should know about the reading ("pages 3, 7 have no text ...")
    note_phrases: tuple[Phrase, ...] = ()  # the same notes as codes with parameters (the app renders them)
    # what the reading found about it, kept as its metadata with its front matter (labels: `running_lines`, the
    # running headers and footers left out of its text, loaders.running)
    fields: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def ocr_pages(self) -> tuple[int, ...]:
        """The pages (or the image) whose text was read by OCR."""
        return tuple(p.number for p in self.places if p.ocr)


@dataclass(frozen=True)
class Chunk:
    """A slice of a document: `document_text[start:end] == text`, always."""

    chunk_index: int  # 0-based, global in the document
    text: str
    start: int
    end: int
    title: str  # nearest heading text, "" when the chunk is before any heading
    heading_path: tuple[str, ...]  # outermost first, e.g. ("Runbook", "Commands", "Verify")
    overlap_chars: int  # leading characters that repeat the end of the previous chunk
    # Why this chunk starts where it does: "first", "overlap" (overlap_chars > 0), "section" (a new
    # heading section starts; overlap never crosses sections), or "no-overlap: <reason>".
    boundary: str = ""
    location: Location | None = None  # the pages, slides or rows it spans (documents with places)
    # What is embedded and BM25-indexed when not the text: a Q&A pair's question (stored as metadata `searchText`)
    search_text: str = ""

    @property
    def heading_path_text(self) -> str:
        return " > ".join(self.heading_path)


@dataclass(frozen=True)
class StoredDocument:
    """One indexed document as listed by the store (its active, complete version)."""

    doc_id: str
    file_name: str
    extension: str
    size_bytes: int
    chunks: int
    content_hash: str
    version: str
    ingested_at: str  # ISO-8601 UTC
    has_original: bool = False  # the bytes it was indexed from are kept (reindex can rebuild it)


@dataclass(frozen=True)
class StoredChunk:
    """One chunk of a document's active version as the store holds it, in `get_chunks` order."""

    id: str
    doc_id: str
    chunk_index: int
    content: str
    source: str
    title: str
    version: str
    metadata: Mapping[str, Any]  # the seed's keys plus offsets (start, end, overlapChars), hashes, ingestedAt
    # Its document's `key=value` labels, which metadata filters match (scope.document_labels); searches
    # filter on them but do not return them.
    labels: tuple[str, ...] = ()


@dataclass(frozen=True)
class IndexedVersion:
    """What the store knows about a document's active version, to tell whether a new ingest changes it."""

    fingerprint: str  # content, chunk settings and embedder (see Ingestor.fingerprint)
    chunks: int
    has_original: bool = False  # its original bytes are kept


@dataclass(frozen=True)
class NewVersion:
    """A complete new version of a document, embedded and ready to write."""

    doc: Document
    chunks: Sequence[Chunk]
    vectors: np.ndarray  # (len(chunks), dim)
    fingerprint: str
    original: bytes | None = None  # the file's bytes, kept with the version (None: indexed from text)
    # How it was indexed (chunk.max-size, chunk.overlap, embedder, chunker): kept in the original's sidecar.
    indexed_with: Mapping[str, Any] = field(default_factory=dict)
    # Its front matter and tags (key -> values), written into its chunk rows' labels with the built-in ones.
    labels: Mapping[str, Sequence[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class WriteResult:
    version: str
    replaced: bool  # True when a previous version was superseded


@dataclass(frozen=True)
class SearchHit:
    """What a KnowledgeSearchPort returns: one stored chunk with its score, best first.

    `score` is already "higher is better" for every metric (see rag_core.identity).
    `channels` maps a channel name ("dense", "bm25") to (rank in that channel, 1-based; raw score).
    `cross_language`: hybrid fusion gave it BM25's share from its dense rank or score, because it is in the other
    language than the query and so could never match it lexically (retrieval.fusion.cross_language).
    """

    id: str
    score: float
    content: str
    metadata: Mapping[str, Any]
    channels: Mapping[str, tuple[int, float]] = field(default_factory=dict)
    cross_language: bool = False


@dataclass(frozen=True)
class SearchOptions:
    """How a KnowledgeSearchPort finds candidates: which channels, and how hybrid mode fuses them."""

    mode: SearchMode = "hybrid"
    fusion: Fusion = "weighted"
    rrf_k: int = 60
    dense_weight: float = 0.5
    bm25_weight: float = 1.0
    cross_language: bool = True  # a dense hit in the other language stands in for its missing BM25 score

    def __post_init__(self) -> None:
        if self.mode not in SEARCH_MODES:
            raise RetrievalError(f"Unknown search mode {self.mode!r}; use one of {', '.join(SEARCH_MODES)}.")
        if self.fusion not in FUSIONS:
            raise RetrievalError(f"Unknown fusion {self.fusion!r}; use one of {', '.join(FUSIONS)}.")
        if self.rrf_k < 1:
            raise RetrievalError("RRF k must be at least 1.")
        if min(self.dense_weight, self.bm25_weight) < 0 or self.dense_weight + self.bm25_weight <= 0:
            raise RetrievalError("Channel weights must be non-negative and not both zero.")


@dataclass(frozen=True)
class SearchResult:
    """What a KnowledgeSearchPort returns: at most k hits, best first, and what each stage cost (ms)."""

    hits: tuple[SearchHit, ...]
    timings: Mapping[str, float] = field(
        default_factory=dict
    )  # e.g. embed, dense_search, bm25_search, hybrid_search, fusion
    # a restricted lookup that may know (AccessScope.reveal): how many of the hits the same search would have had
    # without the access filter were of documents it hides; None: not counted (unrestricted, or not to be told)
    hidden: int | None = None


@dataclass(frozen=True)
class ChangedChunk:
    """A chunk a re-ingest added or removed: its index (in the new version for added chunks, the old one for
    removed ones), the sha256 of its text, and the text."""

    chunk_index: int
    hash: str
    text: str


@dataclass(frozen=True)
class ChunkDiff:
    """How a re-ingested document's chunks changed, by content hash, not by index: a paragraph inserted at the
    top shifts every index but leaves the chunks after it unchanged."""

    added: tuple[ChangedChunk, ...] = ()
    removed: tuple[ChangedChunk, ...] = ()
    unchanged: int = 0
    # chunk edits (store.edits) made on text this version no longer holds under their evidence key: they stopped
    # applying; the person re-applies them or lets them go
    conflicts: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"added": len(self.added), "removed": len(self.removed), "unchanged": self.unchanged,
                "added_chunks": [c.__dict__ for c in self.added], "removed_chunks": [c.__dict__ for c in self.removed],
                "conflicts": list(self.conflicts)}


@dataclass(frozen=True)
class IngestReport:
    """The outcome of ingesting one file."""

    path: str
    doc_id: str
    status: IngestStatus
    chunks: int = 0
    seconds: float = 0.0
    error: str = ""
    error_code: str = ""  # why it failed, for programs: the failing exception's `code` ("too_large", ...)
    diff: ChunkDiff | None = None  # replaced and unchanged documents: their chunks against the previous version
    notes: tuple[str, ...] = ()  # how it was read (Document.notes): "OCR'd pages 2, 3", "Q&A sheet: FAQ (...)"
    note_phrases: tuple[Phrase, ...] = ()  # the same as codes with parameters (Document.note_phrases)

    def to_dict(self) -> dict[str, Any]:
        """As `ingest --json` prints it and the HTTP API answers it (`diff` null for added or failed files)."""
        return {"path": self.path, "doc_id": self.doc_id, "status": str(self.status), "chunks": self.chunks,
                "seconds": self.seconds, "error": self.error, "error_code": self.error_code,
                "diff": self.diff.to_dict() if self.diff is not None else None, "notes": list(self.notes),
                "note_phrases": [p.to_dict() for p in self.note_phrases]}


@dataclass(frozen=True)
class Candidate:
    """A search hit with chunk-level identity (see rag_core.identity). Kept candidates are the
    evidence blocks; their `hit_reasons` and `channels` include those of merged duplicates."""

    rank: int  # 1-based position in the ranking post-processing walks (after the rerank stage, if any)
    id: str | None  # vector (row) id
    doc_id: str | None
    chunk_index: int | None
    evidence_key: str
    score: float  # higher is better
    content: str
    source: str
    metadata: Mapping[str, Any]
    hit_reasons: tuple[str, ...]  # channels that found it: "dense", "bm25"
    channels: Mapping[str, tuple[int, float]] = field(default_factory=dict)  # channel -> (rank, raw score)
    fused_rank: int = 0  # 1-based position in the port's (fused) ranking, before the rerank stage; 0 = rank
    rerank_score: float | None = None  # the reranker's score; None when it was not reranked
    cross_language: bool = False  # fusion scored its BM25 share from its dense one (SearchHit.cross_language)

    @property
    def rank_before_rerank(self) -> int:
        return self.fused_rank or self.rank


@dataclass(frozen=True)
class DropReason:
    """Why post-processing dropped a raw hit, as data (the UI and explain read the fields, never text).

    * `duplicate`: `key` is the evidence key a higher-ranked hit already holds (`by` = that key);
    * `doc_cap`: `doc_id` already had `count` blocks (= the cap), namely the evidence keys in `by`;
    * `beyond_return_n`: `count` = return-n blocks were already accepted;
    * `below_threshold`: its `score` is below the search mode's score threshold `threshold`;
    * `disabled`: a person disabled the chunk `key` (store.edits);
    * `merged`: its chunk `key` touches or overlaps a higher-ranked hit's in one document, and is in that hit's
      block `by[0]` (retrieval/merge.py).
    """

    kind: DropKind
    key: str | None = None
    doc_id: str | None = None
    count: int = 0
    by: tuple[str, ...] = ()
    score: float | None = None  # below_threshold: the hit's score and the threshold it missed
    threshold: float | None = None

    @property
    def status(self) -> str:
        """The status string of `search --json` (kept stable for existing clients)."""
        if self.kind == "duplicate":
            return f"duplicate_of {self.key}"
        if self.kind == "doc_cap":
            return f"doc_cap ({self.doc_id} already has {self.count})"
        if self.kind == "below_threshold" and self.score is not None and self.threshold is not None:
            score, threshold = score_pair(self.score, self.threshold)
            return f"below threshold ({score} < {threshold})"
        if self.kind == "merged" and self.by:
            return f"merged_into {self.by[0]}"
        return str(self.kind)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": str(self.kind), "key": self.key, "doc_id": self.doc_id, "count": self.count,
                               "by": list(self.by)}
        if self.threshold is not None:  # below_threshold only: other drops keep the shape clients know
            out.update(score=self.score, threshold=self.threshold)
        return out


def score_pair(score: float, threshold: float) -> tuple[str, str]:
    """Two decimals, or as many more as it takes for the score to read smaller than the threshold."""
    for digits in (2, 3, 4, 6):
        a, b = f"{score:.{digits}f}", f"{threshold:.{digits}f}"
        if a != b:
            return a, b
    return repr(score), repr(threshold)


@dataclass(frozen=True)
class HitTrace:
    """The fate of one raw hit: exactly one per hit, in ranking order. `drop` is None when it was kept."""

    rank: int
    id: str | None
    score: float
    doc_id: str | None
    chunk_index: int | None
    evidence_key: str
    drop: DropReason | None = None
    fused_rank: int = 0  # rank before the rerank stage
    rerank_score: float | None = None

    @property
    def fate(self) -> Fate:
        return Fate.KEPT if self.drop is None else Fate(self.drop.kind)

    @property
    def status(self) -> str:
        """ "kept", "duplicate_of <key>", "doc_cap (<doc_id> already has N)" or "beyond_return_n" """
        return "kept" if self.drop is None else self.drop.status


@dataclass(frozen=True)
class Projected:
    """One item of evidence as the agent receives it."""

    document_id: str  # the chunk-scoped evidence key, e.g. "runbooks/cpu_high.md#chunk-2"
    source: str  # the document path
    content: str
    score: float
    truncated: bool = False
    location: str = ""  # where in the document, e.g. "p. 12" (Location.label; "" for plain text)
    matched: tuple[str, ...] = ()  # a block of several hits (retrieval/merge.py): every hit's evidence key, by rank
    section: str = ""  # the block grew (retrieval/expand.py): the heading path of what it holds
    tokens: int = 0  # its content's tokens (tokens.TOKENIZER)
    url: str = ""  # where a person opens its document: the source's URL (a synced source's; "" for an upload)


@dataclass(frozen=True)
class Block:
    """One piece of evidence as the agent gets it, after the expansion and merge stages (retrieval/expand.py,
    retrieval/merge.py): the hit's chunk grown to its parent section or its neighbours, and the hits of one document
    whose chunks touch or overlap merged.

    `key`: the hit's evidence key, or, for several hits, `doc#chunk-a..b` (a..b: the least and greatest matched chunk
    index); `matched`: every hit's evidence key, best first; `hit`: the best hit. `first`/`last`: the chunk indexes
    `content` spans (None: a hit without a chunk identity); `before`: the matched chunks' range. `content`: the chunks
    stitched in order (overlaps once, an edited chunk's text as edited; it never spans a disabled chunk);
    `highlights`: each matched chunk's [start, end) in it. `start`/`end`: its place in the document (None: unknown,
    e.g. an added chunk). `grew`: "none", "neighbours" or "parent"; `stopped`: what stopped the growth ("" when it
    reached what it grows to; "block_tokens", "disabled", "added", "changed", "unavailable");
    `tokens`: the content's tokens; `section`: the heading path of what it holds."""

    key: str
    hit: Candidate
    matched: tuple[str, ...]
    content: str
    first: int | None = None
    last: int | None = None
    before: tuple[int, int] | None = None
    highlights: tuple[tuple[int, int], ...] = ()
    start: int | None = None
    end: int | None = None
    grew: str = "none"
    stopped: str = ""
    tokens: int = 0
    section: str = ""

    @property
    def doc_id(self) -> str | None:
        return self.hit.doc_id

    @property
    def source(self) -> str:
        return self.hit.source

    @property
    def grown(self) -> bool:
        """It holds more than its matched chunks."""
        return self.before is not None and (self.first, self.last) != self.before

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "matched": list(self.matched), "doc_id": self.doc_id, "source": self.source,
                "rank": self.hit.rank, "score": self.hit.score, "range": [self.first, self.last],
                "matched_range": list(self.before) if self.before else None, "grew": self.grew,
                "stopped": self.stopped, "tokens": self.tokens, "section": self.section,
                "start": self.start, "end": self.end, "highlights": [list(h) for h in self.highlights],
                "content": self.content}


Role = Literal["user", "assistant"]
REWRITE_MODES = ("auto", "offline", "model", "off")  # rag.rewrite's choices
RewriteOutcome = Literal["rewritten", "kept", "off", "model_failed", "model_rejected"]


@dataclass(frozen=True)
class ConversationTurn:
    """One earlier message of a conversation, as a lookup is given it: who said it and what. `cited`: what an
    assistant's answer cited, as the titles or heading paths of that evidence (the rewrite stage fills it in from
    the answer's `[document_id]` citations)."""

    role: Role
    content: str
    cited: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True)
class Rewrite:
    """What the rewrite stage made of a question asked in a conversation (retrieval.rewrite): the question as
    asked, the standalone question searched, and why. `outcome`: "rewritten"; "kept" (it stands alone, or the
    model gave it back unchanged); "off" (rewriting is off for this lookup); "model_failed" (an error or the
    deadline: the original is searched); "model_rejected" (the model's rewrite added facts the conversation does
    not hold, or lost a name, number or code of the question: the original is searched). `by`: "offline" or the
    model's name. `detail`: the error, the facts added, or what the offline rewrite borrowed."""

    original: str
    searched: str
    outcome: RewriteOutcome
    by: str
    detail: str = ""
    borrowed: tuple[str, ...] = ()  # the offline rewrite: the terms and headings it added
    turns: int = 0  # the earlier messages it was given

    def to_dict(self) -> dict[str, Any]:
        return {"original": self.original, "searched": self.searched, "outcome": self.outcome, "by": self.by,
                "detail": self.detail, "borrowed": list(self.borrowed), "turns": self.turns}


@dataclass(frozen=True)
class RerankOutcome:
    """What the rerank stage did to one fetched ranking (see retrieval.rerank).

    `order` lists indexes into the fetched hits in the new order (every hit exactly once); `scores`
    holds one score per fetched hit in fetched order, None for hits not sent to the model (beyond
    `candidates`) or when the model failed. `error` is set when the model failed and the fused order
    was kept (on-error = fallback); `skipped` when it was not even called (its circuit is open after
    failures in a row: rerank.circuit)."""

    reranker: str  # "provider:model"
    candidates: int  # hits sent to the model
    order: tuple[int, ...]
    scores: tuple[float | None, ...]
    notes: tuple[str, ...] = ()
    error: str = ""
    skipped: bool = False
    note_phrases: tuple[Phrase, ...] = ()  # the notes as codes with parameters (RerankResult.note_phrases)

    @property
    def applied(self) -> bool:
        return not self.error


@dataclass(frozen=True)
class RerankResult:
    """A reranker's verdict on a list of documents for one query."""

    scores: tuple[float, ...]  # one per input document, in input order; higher is more relevant
    notes: tuple[str, ...] = ()  # what the adapter had to do, for the trace: "2 documents truncated to 4,000 tokens"
    note_phrases: tuple[Phrase, ...] = ()  # the same notes as codes with parameters (the app renders them)


@dataclass(frozen=True)
class CircuitState:
    """Whether searches call a reranker now (Reranker.state; the circuit breaker is rerank.circuit)."""

    state: str  # "closed" | "open" | "half-open" (a trial call is running or may run now)
    failures: int  # calls in a row that failed for want of the service (rerank.circuit.COUNTED kinds)
    retry_in_s: float  # seconds until a trial call is let through (0 when closed or due)
    last_error: str

    def to_dict(self) -> dict[str, Any]:
        return {"state": self.state, "failures": self.failures, "retry_in_s": round(self.retry_in_s, 1),
                "last_error": self.last_error}


CLOSED = CircuitState("closed", 0, 0.0, "")  # a reranker without a circuit breaker of its own


@dataclass(frozen=True)
class KnowledgeBase:
    """A knowledge base as the catalog holds it (rag_core.ports.KnowledgeBaseCatalog): its name (also the name
    of its collections), the settings it owns (`rag_core.kb.settings.KB_KEYS` -> value: chunking, embedder,
    search defaults), and the state of its catalog entry."""

    name: str
    settings: Mapping[str, Any]
    state: str = "active"  # "active" | "creating" (a copy being filled) | "deleted" (being removed)
    created_at: str = ""  # ISO-8601 UTC, when the knowledge base was first made
    note: str = ""  # where it came from, e.g. "copy of biz", "adopted from an existing collection"
    committed_ns: int = 0  # when this entry was written; the newest entry of a name is the one that counts
    # where its settings came from (rag_core.kb.settings.origin_of): "origins" (setting -> how it got its value:
    # set by hand, tuned on a test set) and "tuning" (the last applied tuning, with the values it replaced, which
    # `eval tune --revert` puts back: rag_core.evaluation.tune)
    provenance: Mapping[str, Any] = field(default_factory=dict)


# Marks of a side-by-side comparison (rag_core.retrieval.compare, rag_core.chunk_compare): found or made by both
# sides, or by one of them only.
BOTH, ONLY_A, ONLY_B = "both", "only A", "only B"


# ---------------------------------------------------------------------------------------- remote clients
# What crosses the ports of the chat model, the metrics client and the logs client (rag_core.ports): the
# adapters (rag_core.clients) and their fakes make them, the agent and alert triage read them.
@dataclass(frozen=True)
class ToolCallRequest:
    """A complete tool call assembled from streamed fragments. `arguments` is the raw JSON text."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class AssistantReply:
    """A chat model's complete answer to one request: its text, the tools it calls, why it stopped."""

    content: str
    tool_calls: tuple[ToolCallRequest, ...] = ()
    finish_reason: str | None = None
    usage: Mapping[str, int] | None = None  # prompt_tokens, completion_tokens, total_tokens, when reported


@dataclass(frozen=True)
class Alert:
    """One alert as Prometheus lists it."""

    labels: Mapping[str, str]
    annotations: Mapping[str, str] = field(default_factory=dict)
    state: str = ""  # "firing" | "pending"
    active_at: str = ""  # as Prometheus wrote it (RFC 3339, nanoseconds)
    value: str = ""

    @property
    def name(self) -> str:
        return str(self.labels.get("alertname") or "(unnamed alert)")

    @property
    def description(self) -> str:
        return str(self.annotations.get("description") or self.annotations.get("summary") or "")

    @property
    def started(self) -> datetime | None:
        return parse_time(self.active_at)


def parse_time(value: str) -> datetime | None:
    # Prometheus writes nanoseconds ("2026-05-10T08:12:31.123456789Z"); Python reads at most microseconds.
    m = re.match(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:?\d\d)?$", value or "")
    if not m:
        return None
    fraction = (m.group(2) or "0")[:6].ljust(6, "0")
    offset = m.group(3) or "Z"
    offset = "+00:00" if offset == "Z" else offset
    try:
        return datetime.fromisoformat(f"{m.group(1)}.{fraction}{offset}")
    except ValueError:
        return None


_STRING = r'"(?:[^"\\]|\\.)*"|`[^`]*`'
_MATCHER = re.compile(rf'\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*({_STRING})\s*')


def parse_selector(selector: str) -> list[tuple[str, str, str]]:
    """(label, operator, value) of each matcher in a LogQL stream selector, or LogsError saying what is
    wrong (the usual mistakes: no braces, single quotes, a pipeline where only the selector belongs)."""
    text = (selector or "").strip()
    if not (text.startswith("{") and text.endswith("}")):
        raise LogsError(f"The LogQL selector {selector!r} must be a stream selector in braces, e.g. "
                        '{app="order-service"} (put text to look for in the line filter instead).', "bad_request")
    body, matchers, pos = text[1:-1], [], 0
    while pos < len(body):
        m = _MATCHER.match(body, pos)
        if not m:
            raise LogsError(f"The LogQL selector {selector!r} is not a list of label matchers such as "
                            '{app="order-service", level=~"error|warn"} (values in double quotes).', "bad_request")
        raw = m.group(3)
        value = raw[1:-1] if raw.startswith("`") else json.loads(raw)
        matchers.append((m.group(1), m.group(2), value))
        pos = m.end()
        if pos < len(body):
            if body[pos] != ",":
                raise LogsError(f"The LogQL selector {selector!r}: separate matchers with commas.", "bad_request")
            pos += 1
    if not matchers:
        raise LogsError("The LogQL selector is empty: name at least one label, e.g. {app=\"order-service\"}.",
                        "bad_request")
    return matchers


@dataclass(frozen=True)
class LogQuery:
    selector: str  # a LogQL stream selector, checked by parse_selector
    contains: str = ""  # only lines containing this text (case-sensitive); "" for all lines
    start: datetime | None = None  # default: end - 1 hour
    end: datetime | None = None  # default: now
    limit: int = 100
    direction: Literal["backward", "forward"] = "backward"  # backward: newest first

    def logql(self) -> str:
        parse_selector(self.selector)
        query = self.selector.strip()
        if self.contains:
            query += f" |= {json.dumps(self.contains, ensure_ascii=False)}"  # a LogQL (Go) string literal
        return query


@dataclass(frozen=True)
class LogLine:
    time: datetime  # UTC
    labels: Mapping[str, str]
    line: str


@dataclass(frozen=True)
class LogResult:
    request: LogQuery
    query: str  # the LogQL sent
    start: datetime  # the range searched (UTC)
    end: datetime
    lines: tuple[LogLine, ...] = ()

    @property
    def limit(self) -> int:
        return self.request.limit

    @property
    def truncated(self) -> bool:
        """True when the limit was reached: there may be more lines in the range."""
        return len(self.lines) >= self.limit

    @property
    def fixed_labels(self) -> dict[str, str]:
        """Labels every line has by the selector's equality matchers (not worth repeating per line)."""
        return {label: value for label, op, value in parse_selector(self.request.selector) if op == "="}


# ---------------------------------------------------------------------------------------- evaluation runs
RunKind = Literal["retrieval", "answers"]  # a sweep of the lookup (eval), or a scoring of the agent's answers
RUN_KINDS: tuple[RunKind, ...] = get_args(RunKind)


@dataclass(frozen=True)
class EvalRunInfo:
    """One saved evaluation run as lists show it (ports.EvalRunStore.runs), without its JSON document. `id` names it
    wherever a run is named (the CLI's RUN, the app's run picker): its folder's name, `<UTC time>-<set>`."""

    id: str
    kind: RunKind
    set_name: str
    kb: str  # the knowledge bases it ran on, comma-separated ("" for a run on a corpus indexed for it)
    created_at: str  # ISO 8601 UTC, when it was saved


@dataclass(frozen=True)
class SavedRun:
    """Where `EvalRunStore.save` put a run: its id, the place for messages (a folder, or the database without its
    password) and the files written (run.json, summary.csv, queries.csv; none in a database)."""

    id: str
    where: str
    files: Mapping[str, Path] = field(default_factory=dict)
