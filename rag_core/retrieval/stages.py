"""The stages of a lookup, in the order `KnowledgeRetriever` runs them (`stages(...)`).

A stage is one class: its `name` is its row in the lookup's timings and the name of its span; its `phase` says
when it runs: "fetch" stages run when the knowledge base must be searched again, "assemble" stages run again on
hits already fetched when only post-processing options change (the debugger's return-n and cap sliders);
`span_kind` is the OpenInference kind of its span (None: what it calls traces itself, as the search port does);
`applies(work)` says whether it has anything to do (no reranker: no rerank stage, no timing row); `run(work)`
returns the work with its part done. The hits a stage drops are post-processing's checks (postprocess.CHECKS,
each with its drop reason).

A new stage is one class here, placed in `stages()`; if it drops hits, its reason is a `records.DropKind` (and
`Fate`) member and has a look in the app (ui/fates.py): see ARCHITECTURE.md, "A stage".
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

from .. import tracing
from ..citations import extract_citations
from ..errors import RetrievalError
from ..identity import key_range, to_candidate
from ..ports import AccessFilteringPort, DocumentChunksPort, SingleStoreSearchPort
from ..records import Block, Candidate, ConversationTurn, RerankOutcome, Rewrite, SearchHit
from ..scope import ScopeResolution, resolve
from ..tracing import semconv as sc
from ..tracing.semconv import CHAIN, RERANKER, STAGE
from .expand import Documents, expand_blocks
from .merge import merge_blocks, merged_post
from .params import ACCESS
from .postprocess import PostProcessed, postprocess
from .projection import Projection, project
from .rerank import rerank_hits

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from ..ports import KnowledgeSearchPort, KnowledgeStore, QueryRewriter, Reranker
    from .params import LookupParams

Phase = Literal["fetch", "assemble"]


@dataclass(frozen=True)
class Work:
    """What a lookup has made so far, handed from stage to stage."""

    query: str
    params: LookupParams
    rewrite: Rewrite | None = None  # what the rewrite stage made of a question asked in a conversation
    filters: Mapping[str, Any] | None = None  # what the store is asked to filter by (the scope's labels included)
    scope: ScopeResolution | None = None  # what the metadata filter selected (None: no filter)
    hits: tuple[SearchHit, ...] = ()  # the port's fused ranking, at most retrieve-k
    measured: Mapping[str, float] = field(default_factory=dict)  # timings the port took inside the search stage
    hidden: int | None = None  # hits the access filter removed (only counted for a scope that may know: reveal)
    rerank: RerankOutcome | None = None
    candidates: tuple[Candidate, ...] = ()  # the hits with identity, in the order post-processing walks
    post: PostProcessed | None = None
    blocks: tuple[Block, ...] = ()  # the evidence as blocks: grown by the expansion stage, merged by the merge stage
    documents: Documents | None = None  # the documents' chunks the assemble stages read (None: not read yet)
    projection: Projection | None = None

    @property
    def searched(self) -> str:
        """The question the knowledge base is searched for: the rewritten one, else as asked."""
        return self.rewrite.searched if self.rewrite is not None else self.query

    def ordered(self) -> list[tuple[SearchHit, int, float | None]]:
        """(hit, fused rank, rerank score) in the order post-processing walks."""
        if self.rerank is None:
            return [(hit, i, None) for i, hit in enumerate(self.hits, start=1)]
        return [(self.hits[i], i + 1, self.rerank.scores[i]) for i in self.rerank.order]


class Stage(Protocol):
    name: ClassVar[str]
    phase: ClassVar[Phase]
    span_kind: ClassVar[str | None]

    def applies(self, work: Work) -> bool: ...

    def run(self, work: Work) -> Work: ...


def _store(port: KnowledgeSearchPort) -> KnowledgeStore | None:
    """The one knowledge base's store behind a search port (None: a search over several)."""
    return port.store if isinstance(port, SingleStoreSearchPort) else None


@dataclass(frozen=True)
class RewriteQuestion:
    """A question asked in a conversation (the lookup's `history`) becomes the standalone question that is searched
    (retrieval/rewrite.py): by the offline rewrite, or by the chat model when there is one and `rewrite` is "auto"
    or "model". For the offline rewrite, the earlier answers' `[document_id]` citations are read as the heading paths
    (else titles, else documents) of those chunks, which it borrows."""

    port: KnowledgeSearchPort
    offline: QueryRewriter
    model: QueryRewriter | None
    name: ClassVar[str] = "rewrite"
    phase: ClassVar[Phase] = "fetch"
    span_kind: ClassVar[str | None] = CHAIN

    def applies(self, work: Work) -> bool:
        return bool(work.params.history)

    def run(self, work: Work) -> Work:
        mode, history = work.params.rewrite, work.params.history
        if mode == "off":
            done = Rewrite(work.query, work.query, "off", "", "rewriting is off for this lookup", turns=len(history))
        elif mode == "model" and self.model is None:
            raise RetrievalError("rewrite = model needs a chat model (chat.provider), and none is configured; use "
                                 "rewrite = offline or auto.")
        else:
            if mode in ("model", "auto") and self.model is not None:
                done = self.model.rewrite(work.query, history)  # the model reads the answers' citations as written
            else:  # only the offline rewrite borrows cited headings: the store is read for them then only
                done = self.offline.rewrite(work.query, self.cited(history))
        span = tracing.current()
        tracing.set_attributes(span, {sc.REWRITE_OUTCOME: done.outcome, sc.REWRITE_BY: done.by})
        tracing.set_content(span, sc.REWRITE_DETAIL, done.detail)
        tracing.set_content(span, sc.INPUT_VALUE, work.query)
        tracing.set_content(span, sc.OUTPUT_VALUE, done.searched)
        return replace(work, rewrite=done)

    def cited(self, history: Sequence[ConversationTurn]) -> tuple[ConversationTurn, ...]:
        """`history` with each assistant answer's citations read as headings (its `cited`)."""
        store = _store(self.port)
        chunks: dict[str, dict[int, str]] = {}

        def heading(key: str) -> str:  # a block's range `doc#chunk-3..5` reads as its first chunk's heading
            found = key_range(key)
            doc_id = found[0] if found is not None else key.partition("#chunk-")[0]
            if store is None or found is None:
                return doc_id.rsplit("/", 1)[-1]
            if doc_id not in chunks:
                chunks[doc_id] = {c.chunk_index: str(c.metadata.get("headingPath") or c.metadata.get("title") or "")
                                  for c in store.get_chunks(doc_id)}
            return chunks[doc_id].get(found[1]) or doc_id.rsplit("/", 1)[-1]

        return tuple(replace(t, cited=t.cited or tuple(dict.fromkeys(heading(k) for k in extract_citations(t.content))))
                     if t.role == "assistant" else t for t in history)


@dataclass(frozen=True)
class Search:
    """The scope (the metadata filter as the store's `labels` filter, which Milvus applies to the chunk rows, and
    what it selects among the documents, counted for the debugger; nothing selected: nothing is searched), the
    lookup's access scope (a user's groups: the port filters the rows inside the store, and for a caller who may
    know counts the hits it hid, drop reason `no_access`), then the port's search: retrieve-k candidates, fused in
    hybrid mode."""

    port: KnowledgeSearchPort
    name: ClassVar[str] = "search"
    phase: ClassVar[Phase] = "fetch"
    span_kind: ClassVar[str | None] = None  # the port's embed, search and fusion spans

    def applies(self, work: Work) -> bool:
        return True

    def run(self, work: Work) -> Work:
        params = work.params
        scope, filters = None, params.filters
        if not params.access.unrestricted and not isinstance(self.port, AccessFilteringPort):
            raise RetrievalError("This search cannot filter documents by access groups, so it is not run for a user "
                                 "with a restricted scope.")
        if params.scope:
            store = _store(self.port)
            if store is None:
                raise RetrievalError("Metadata filters need one knowledge base (this search spans several).")
            documents, labels = store.list_documents(), store.labels.all()
            if not params.access.unrestricted and not params.access.reveal:  # counts and keys of visible ones only
                assert isinstance(self.port, AccessFilteringPort)
                documents = [d for d in documents if not self.port.hides(params.access, d.doc_id)]
                labels = {d.doc_id: labels[d.doc_id] for d in documents if d.doc_id in labels}
            scope = resolve(params.scope, documents, labels)
            filters = {**(params.filters or {}), "labels": params.scope.labels()}
            if not scope.doc_ids:
                filters["doc_id"] = []  # a warning says so; the store searches nothing
        if not params.access.unrestricted:  # inside the store, with the other filters (retrieval.ports)
            filters = {**(filters or {}), ACCESS: params.access}
        found = self.port.configured(params.search).search(work.searched, params.retrieve_k, filters)
        return replace(work, filters=filters, scope=scope, hits=tuple(found.hits[: params.retrieve_k]),
                       measured=found.timings, hidden=found.hidden if params.access.reveal else None)


@dataclass(frozen=True)
class Rerank:
    """The reranker reorders the top `rerank.candidates` hits (retrieval.rerank), when there is one and the lookup
    does not skip it."""

    reranker: Reranker | None
    name: ClassVar[str] = "rerank"
    phase: ClassVar[Phase] = "fetch"
    span_kind: ClassVar[str | None] = RERANKER

    def applies(self, work: Work) -> bool:
        return self.reranker is not None and work.params.rerank.enabled and bool(work.hits)

    def run(self, work: Work) -> Work:
        assert self.reranker is not None
        return replace(work, rerank=rerank_hits(self.reranker, work.searched, list(work.hits), work.params.rerank))


@dataclass(frozen=True)
class PostProcess:
    """The hits with identity, in the reranked order, walked through post-processing's checks (postprocess.py): the
    evidence, and every hit's fate. The disabled chunks are read from the store at every run, so a disable shows at
    once, even on hits already fetched; an edit made on other text (the document changed under it) does not
    apply."""

    port: KnowledgeSearchPort
    name: ClassVar[str] = "postprocess"
    phase: ClassVar[Phase] = "assemble"
    span_kind: ClassVar[str | None] = CHAIN

    def applies(self, work: Work) -> bool:
        return True

    def run(self, work: Work) -> Work:
        params = work.params
        candidates = tuple(replace(to_candidate(hit, rank), fused_rank=fused_rank, rerank_score=score)
                           for rank, (hit, fused_rank, score) in enumerate(work.ordered(), start=1))
        post = postprocess(candidates, return_n=params.return_n,
                           max_chunks_per_document=params.max_chunks_per_document,
                           score_threshold=params.score_threshold, disabled=self.disabled(candidates))
        return replace(work, candidates=candidates, post=post)

    def disabled(self, candidates: Sequence[Candidate]) -> set[str]:
        store = _store(self.port)
        off = store.edits.disabled() if store is not None else {}
        return {c.evidence_key for c in candidates
                if c.evidence_key in off and off[c.evidence_key] in ("", c.metadata.get("chunkHash"))}


def _documents(port: KnowledgeSearchPort, work: Work) -> Documents | None:
    """The reader of documents' chunks the assemble stages share (None: the port cannot give them)."""
    if work.documents is not None:
        return work.documents
    return Documents(port.document_chunks) if isinstance(port, DocumentChunksPort) else None


@dataclass(frozen=True)
class Expand:
    """Each evidence hit becomes a block: its chunk, grown to its parent section or its neighbouring chunks as
    `rag.expand` says, within `rag.block-tokens` (retrieval/expand.py). The documents' chunks are read from the
    port as they are now, so an edit or a disable shows at once."""

    port: KnowledgeSearchPort
    name: ClassVar[str] = "expand"
    phase: ClassVar[Phase] = "assemble"
    span_kind: ClassVar[str | None] = CHAIN

    def applies(self, work: Work) -> bool:
        return work.post is not None

    def run(self, work: Work) -> Work:
        assert work.post is not None
        params = work.params
        documents = _documents(self.port, work) if params.expand.mode != "none" else None
        blocks = expand_blocks(work.post.evidence, documents, params.expand, params.budgets.max_tokens_per_item)
        span = tracing.current()
        tracing.set_attributes(span, {sc.EXPAND_MODE: params.expand.mode, sc.BLOCKS: len(blocks),
                                      sc.BLOCKS_GROWN: sum(b.grown for b in blocks)})
        _trace_blocks(span, blocks)
        return replace(work, blocks=blocks, documents=documents)


@dataclass(frozen=True)
class Merge:
    """Blocks of one document whose chunks touch or overlap become one block, `doc#chunk-a..b`; the hits merged
    into a better one's block are dropped as `merged_into <key>` (retrieval/merge.py). Needs the documents' chunks
    (a port that cannot give them merges nothing)."""

    port: KnowledgeSearchPort
    name: ClassVar[str] = "merge"
    phase: ClassVar[Phase] = "assemble"
    span_kind: ClassVar[str | None] = CHAIN

    def applies(self, work: Work) -> bool:
        return work.params.expand.merge and len(work.blocks) > 1 and isinstance(self.port, DocumentChunksPort)

    def run(self, work: Work) -> Work:
        assert work.post is not None
        documents = _documents(self.port, work)
        assert documents is not None
        blocks = merge_blocks(work.blocks, documents)
        span = tracing.current()
        tracing.set_attributes(span, {sc.BLOCKS: len(blocks), sc.BLOCKS_MERGED: len(work.blocks) - len(blocks)})
        _trace_blocks(span, blocks)
        return replace(work, blocks=blocks, post=merged_post(work.post, blocks), documents=documents)


@dataclass(frozen=True)
class Project:
    """The evidence blocks as the agent's tool gives them, within the projection budgets (tokens counted with
    tokens.TOKENIZER)."""

    name: ClassVar[str] = "projection"
    phase: ClassVar[Phase] = "assemble"
    span_kind: ClassVar[str | None] = CHAIN

    def applies(self, work: Work) -> bool:
        return work.post is not None

    def run(self, work: Work) -> Work:
        assert work.post is not None
        projection = project(work.blocks, work.params.budgets)
        span = tracing.current()
        tracing.set_attributes(span, {sc.CONTEXT_TOKENS: projection.tokens,
                                      sc.CONTEXT_BUDGET: work.params.budgets.max_total_tokens,
                                      sc.TOKENIZER: projection.tokenizer,
                                      sc.BLOCK_KEYS: [p.document_id for p in projection.items],
                                      sc.BLOCK_TOKENS: [p.tokens for p in projection.items]})
        tracing.set_content(span, sc.OUTPUT_VALUE, json.dumps(
            [{"key": p.document_id, "matched": list(p.matched), "section": p.section, "tokens": p.tokens,
              "truncated": p.truncated, "content": p.content} for p in projection.items], ensure_ascii=False))
        return replace(work, projection=projection)


def _trace_blocks(span: Span, blocks: Sequence[Block]) -> None:
    """The blocks a stage made on its span: their keys and tokens (identities and counts, like the lookup's evidence
    keys), and, where tracing.capture-content allows, each one's matched keys, section and text as its output."""
    tracing.set_attributes(span, {sc.BLOCK_KEYS: [b.key for b in blocks], sc.BLOCK_TOKENS: [b.tokens for b in blocks]})
    tracing.set_content(span, sc.OUTPUT_VALUE, json.dumps(
        [{"key": b.key, "matched": list(b.matched), "range": [b.first, b.last], "grew": b.grew, "stopped": b.stopped,
          "section": b.section, "tokens": b.tokens, "content": b.content} for b in blocks], ensure_ascii=False))


def stages(port: KnowledgeSearchPort, reranker: Reranker | None, rewriter: QueryRewriter | None = None
           ) -> tuple[Stage, ...]:
    """Every stage of a lookup over `port`, in order. `rewriter`: the chat model's (None: the offline rewrite
    only)."""
    from .rewrite import OfflineRewriter

    return (RewriteQuestion(port, OfflineRewriter(), rewriter), Search(port), Rerank(reranker), PostProcess(port),
            Expand(port), Merge(port), Project())


@contextlib.contextmanager
def _span(stage: Stage) -> Iterator[None]:
    if stage.span_kind is None:
        yield
        return
    with tracing.span(stage.name, stage.span_kind, {STAGE: stage.name}):
        yield


def run(stages: Sequence[Stage], phase: Phase, work: Work) -> tuple[Work, dict[str, float]]:
    """The stages of `phase` that apply, in order, each in its span; returns the work and each one's milliseconds."""
    timings: dict[str, float] = {}
    for stage in stages:
        if stage.phase != phase or not stage.applies(work):
            continue
        started = time.perf_counter()
        with _span(stage):
            work = stage.run(work)
        timings[stage.name] = (time.perf_counter() - started) * 1000
    return work, timings
