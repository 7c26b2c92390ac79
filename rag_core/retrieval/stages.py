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
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

from .. import tracing
from ..errors import RetrievalError
from ..ports import SingleStoreSearchPort
from ..records import Candidate, RerankOutcome, SearchHit
from ..tracing.semconv import CHAIN, RERANKER, STAGE
from .identity import to_candidate
from .postprocess import PostProcessed, postprocess
from .projection import Projection, project
from .rerank import rerank_hits
from .scope import ScopeResolution, resolve

if TYPE_CHECKING:
    from ..ports import KnowledgeSearchPort, KnowledgeStore, Reranker
    from .params import LookupParams

Phase = Literal["fetch", "assemble"]


@dataclass(frozen=True)
class Work:
    """What a lookup has made so far, handed from stage to stage."""

    query: str
    params: LookupParams
    filters: Mapping[str, Any] | None = None  # what the store is asked to filter by (the scope's labels included)
    scope: ScopeResolution | None = None  # what the metadata filter selected (None: no filter)
    hits: tuple[SearchHit, ...] = ()  # the port's fused ranking, at most retrieve-k
    measured: Mapping[str, float] = field(default_factory=dict)  # timings the port took inside the search stage
    rerank: RerankOutcome | None = None
    candidates: tuple[Candidate, ...] = ()  # the hits with identity, in the order post-processing walks
    post: PostProcessed | None = None
    projection: Projection | None = None

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
class Search:
    """The scope (the metadata filter as the store's `labels` filter, which Milvus applies to the chunk rows, and
    what it selects among the documents, counted for the debugger; nothing selected: nothing is searched), then the
    port's search: retrieve-k candidates, fused in hybrid mode."""

    port: KnowledgeSearchPort
    name: ClassVar[str] = "search"
    phase: ClassVar[Phase] = "fetch"
    span_kind: ClassVar[str | None] = None  # the port's embed, search and fusion spans

    def applies(self, work: Work) -> bool:
        return True

    def run(self, work: Work) -> Work:
        params = work.params
        scope, filters = None, params.filters
        if params.scope:
            store = _store(self.port)
            if store is None:
                raise RetrievalError("Metadata filters need one knowledge base (this search spans several).")
            scope = resolve(params.scope, store.list_documents(), store.labels.all())
            filters = {**(params.filters or {}), "labels": params.scope.labels()}
            if not scope.doc_ids:
                filters["doc_id"] = []  # a warning says so; the store searches nothing
        found = self.port.configured(params.search).search(work.query, params.retrieve_k, filters)
        return replace(work, filters=filters, scope=scope, hits=tuple(found.hits[: params.retrieve_k]),
                       measured=found.timings)


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
        return replace(work, rerank=rerank_hits(self.reranker, work.query, list(work.hits), work.params.rerank))


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


@dataclass(frozen=True)
class Project:
    """The evidence as the agent's tool gives it, within the projection budgets."""

    name: ClassVar[str] = "projection"
    phase: ClassVar[Phase] = "assemble"
    span_kind: ClassVar[str | None] = CHAIN

    def applies(self, work: Work) -> bool:
        return work.post is not None

    def run(self, work: Work) -> Work:
        assert work.post is not None
        return replace(work, projection=project(work.post.evidence, work.params.budgets))


def stages(port: KnowledgeSearchPort, reranker: Reranker | None) -> tuple[Stage, ...]:
    """Every stage of a lookup over `port`, in order."""
    return (Search(port), Rerank(reranker), PostProcess(port), Project())


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
