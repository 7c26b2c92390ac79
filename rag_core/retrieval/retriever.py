"""The one lookup path. The retrieval debugger, the CLI's `search`, the HTTP API and the agent's tool
all call `KnowledgeRetriever.lookup` (or its two halves, `fetch` + `assemble`), so what the debugger
shows is exactly what the agent got.

A lookup is its stages (stages.py), in order: `fetch` runs those of the "fetch" phase (the search with the
metadata filter's scope, then the rerank stage when the retriever has a reranker), `assemble` those of the
"assemble" phase (identity in the reranked order, post-processing: disabled, threshold, dedup, per-document cap,
return-n; then the projection for the agent). Changing return-n or the cap only needs `assemble` again, which is
how the debugger re-runs instantly (and never calls the reranker again).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from typing import Any

from ..access.records import UNRESTRICTED, AccessScope
from ..errors import RetrievalError
from ..phrases import Phrase, english
from ..ports import KnowledgeSearchPort, QueryRewriter, Reranker
from ..records import (
    Block,
    Candidate,
    ConversationTurn,
    HitTrace,
    RerankOutcome,
    Rewrite,
    SearchHit,
    SearchOptions,
    cited_as,
    qa_question,
)
from ..scope import Scope, ScopeResolution
from . import keywords
from .keywords import Keywords
from .params import LookupParams, with_threshold
from .postprocess import PostProcessed
from .projection import Projection
from .rerank import RerankParams
from .rewrite import parse_history
from .stages import Stage, Work, run, stages

# The longest query a lookup takes, from every caller (debugger, CLI, API, the agent's tool). Questions to the
# agent may be twice as long (agent.loop.MAX_QUESTION_CHARS: a model reads them and writes its own, shorter
# queries); where the agent searches for text it was given (offline mode searches for the question itself, and a
# model may paste a long text into its call) it searches for `fit_query(text)`, never past this limit.
MAX_QUERY_CHARS = 4000


def fit_query(text: str, limit: int = MAX_QUERY_CHARS) -> str:
    """`text` stripped, and cut to at most `limit` characters when longer: at the last space or line break in its
    final tenth when there is one (a whole last word), else at the limit."""
    text = (text or "").strip()
    if len(text) <= limit:
        return text
    cut = text[:limit + 1]
    space = max(cut.rfind(" "), cut.rfind("\n"))
    return (cut[:space] if space >= limit * 0.9 else cut[:limit]).rstrip()


@dataclass(frozen=True)
class Fetched:
    """What the port returned for one query at one recall width (`hits`, in the port's fused order),
    and what the rerank stage made of it (None: no reranker, or reranking off)."""

    query: str
    retrieve_k: int
    search: SearchOptions
    filters: Mapping[str, Any] | None
    hits: tuple[SearchHit, ...]
    timings: Mapping[str, float]
    rerank_params: RerankParams = field(default_factory=RerankParams)
    rerank: RerankOutcome | None = None
    scope: ScopeResolution | None = None  # what the metadata filter selected (None: no filter)
    rewrite: Rewrite | None = None  # the rewrite stage's outcome (None: no conversation before the query)
    rewrite_mode: str = "auto"
    history: tuple[ConversationTurn, ...] = ()
    access: AccessScope = UNRESTRICTED  # what the caller may retrieve (LookupParams.access)
    hidden: int | None = None  # hits the access filter removed, counted only for a scope that may know (reveal)


def _padded(items: tuple[Any, ...], n: int) -> tuple[Any, ...]:
    """`items` as `n` items (None for those missing: a projection built without phrases)."""
    return items + (None,) * (n - len(items)) if len(items) <= n else items[:n]


@dataclass(frozen=True)
class LookupResult:
    query: str
    params: LookupParams
    candidates: tuple[Candidate, ...]
    post: PostProcessed
    projection: Projection
    timings: Mapping[str, float]
    rerank: RerankOutcome | None = None
    scope: ScopeResolution | None = None
    rewrite: Rewrite | None = None  # the rewrite stage's outcome (None: no conversation before the query)
    blocks: tuple[Block, ...] = ()  # the evidence as blocks (expansion and merge stages), what the projection cut
    # how many hits the caller's access groups hid (drop reason `no_access`): only for a caller who may know (an
    # admin of the knowledge base, AccessScope.reveal); None otherwise, and then nothing says hidden documents exist
    hidden: int | None = None
    # how `keywords` is worked out, when it is first asked for (None: no keywords)
    words_of: Callable[[], Keywords] | None = field(default=None, repr=False, compare=False)

    @cached_property
    def keywords(self) -> Keywords | None:
        """The BM25 terms of the query and of each hit (retrieval.keywords), worked out when first asked for: by
        `lookup`, or by `to_dict` (the debugger's `assemble`d results): an evaluation's lookups, which nobody reads the
        hits of, send Milvus no request for them. Its milliseconds join `timings` as "keywords" (outside "total": an
        explanation of the hits, not a stage of the lookup)."""
        if self.words_of is None:
            return None
        started = time.perf_counter()
        words = self.words_of()
        if isinstance(self.timings, dict):
            self.timings["keywords"] = (time.perf_counter() - started) * 1000
        return words

    @property
    def searched(self) -> str:
        """The question the knowledge base was searched for: the rewritten one, else `query` as asked."""
        return self.rewrite.searched if self.rewrite is not None else self.query

    @property
    def warnings(self) -> tuple[str, ...]:
        """What the person should know about how this result was made (e.g. the reranker failed, the score
        threshold dropped every hit)."""
        return tuple(english(w) for w in self.warning_phrases)

    @property
    def warning_phrases(self) -> tuple[Phrase, ...]:
        """`warnings` as codes with parameters (rag_core.phrases), for an edge that words them itself."""
        scope = self.scope.warning_phrase if self.scope is not None else None
        return (*self._rewrite_warnings(), *((scope,) if scope else ()), *self._threshold_warnings(),
                *self._rerank_warnings(), *self._expand_warnings())

    def _expand_warnings(self) -> tuple[Phrase, ...]:
        if any(b.stopped == "unavailable" for b in self.blocks):
            return (Phrase("warning.expand_unavailable", {"expand": self.params.expand.mode}),)
        return ()

    def _rewrite_warnings(self) -> tuple[Phrase, ...]:
        if self.rewrite is None or self.rewrite.outcome not in ("model_failed", "model_rejected"):
            return ()
        return (Phrase(f"warning.rewrite_{self.rewrite.outcome.removeprefix('model_')}",
                       {"model": self.rewrite.by, "detail": self.rewrite.detail}),)

    def _threshold_warnings(self) -> tuple[Phrase, ...]:
        below = [t for t in self.traces if t.fate == "below_threshold"]
        if self.evidence or not below:
            return ()
        return (Phrase("warning.all_below_threshold", {"mode": self.params.search.mode,
                                                       "threshold": self.params.score_threshold,
                                                       "best": max(t.score for t in below)}),)

    def _rerank_warnings(self) -> tuple[Phrase, ...]:
        if self.rerank is not None and self.rerank.skipped:
            return (Phrase("warning.rerank_skipped", {"reranker": self.rerank.reranker, "error": self.rerank.error}),)
        if self.rerank is not None and self.rerank.error:
            return (Phrase("warning.rerank_failed", {"reranker": self.rerank.reranker, "error": self.rerank.error}),)
        return ()

    @property
    def evidence(self) -> tuple[Candidate, ...]:
        return self.post.evidence

    @property
    def traces(self) -> tuple[HitTrace, ...]:
        return self.post.traces

    @property
    def given(self) -> tuple[Candidate, ...]:
        """Every hit whose chunk the agent is given, block by block (a merged block's hits in its `matched` order):
        the evidence before the merge stage, in the order the blocks show them. What evaluation scores."""
        if not self.blocks:
            return self.evidence
        by_key = {c.evidence_key: c for c in reversed(self.candidates)}
        return tuple(by_key[k] for b in self.blocks for k in b.matched if k in by_key)

    @property
    def evidence_keys(self) -> list[str]:
        """The evidence keys of every hit the agent is given (`given`)."""
        return [c.evidence_key for c in self.given]

    def to_dict(self) -> dict[str, Any]:
        """The JSON object the CLI prints and the agent's tool result carries."""
        by_rank = {c.rank: c for c in self.candidates}
        words = self.keywords or Keywords((), {}, scored=False)
        raw_hits = []
        for t in self.traces:
            c = by_rank[t.rank]
            raw_hits.append({
                "rank": t.rank, "id": t.id, "score": t.score, "doc_id": t.doc_id, "chunk_index": t.chunk_index,
                "fused_rank": c.rank_before_rerank, "rerank_score": c.rerank_score,
                "evidence_key": t.evidence_key, "status": t.status, "fate": t.fate,
                "drop": t.drop.to_dict() if t.drop else None, "source": c.source,
                "hit_reasons": list(c.hit_reasons),
                "channels": {ch: {"rank": r, "score": s} for ch, (r, s) in c.channels.items()},
                "cross_language": c.cross_language,
                "title": c.metadata.get("title", ""), "heading_path": c.metadata.get("headingPath", ""),
                "location": c.metadata.get("location", ""),
                "cited_as": cited_as(c.source, str(c.metadata.get("location") or "")), "content": c.content,
                "edited": bool(c.metadata.get("edited")), "added": bool(c.metadata.get("added")),
                "source_url": str(c.metadata.get("sourceUrl") or ""), **words.of(c.id).to_dict(),
            })
        evidence = [{
            "evidence_key": c.evidence_key, "doc_id": c.doc_id, "chunk_index": c.chunk_index, "source": c.source,
            "score": c.score, "rank": c.rank, "fused_rank": c.rank_before_rerank, "rerank_score": c.rerank_score,
            "content": c.content, "hit_reasons": list(c.hit_reasons),
            "heading_path": c.metadata.get("headingPath", ""), "location": c.metadata.get("location", ""),
            "cited_as": cited_as(c.source, str(c.metadata.get("location") or "")),
            "edited": bool(c.metadata.get("edited")), "added": bool(c.metadata.get("added")),
            "searched_by": qa_question(c.content, c.metadata),  # a Q&A pair: its question, "" for other chunks
            "source_url": str(c.metadata.get("sourceUrl") or ""),  # a synced source's document: where it is opened
        } for c in self.evidence]
        return {
            "query": self.query,
            "query_terms": list(words.terms), "keywords": words.to_dict(),
            "params": self.params.to_dict(),
            "raw_hits": raw_hits,
            "evidence": evidence,
            "dropped": [{"evidence_key": t.evidence_key, "reason": t.status, "rank": t.rank,
                         "drop": t.drop.to_dict() if t.drop else None} for t in self.post.dropped],
            "projection": [{**asdict(p), "matched": list(p.matched)} for p in self.projection.items],
            "blocks": [b.to_dict() for b in self.blocks],
            "context": {"expand": self.params.expand.mode, "merge": self.params.expand.merge,
                        "tokens": self.projection.tokens, "budget": self.params.budgets.max_total_tokens,
                        "block_budget": self.params.budgets.max_tokens_per_item,
                        "tokenizer": self.projection.tokenizer},
            "projection_left_out": [
                {"evidence_key": k, "reason": r, "reason_phrase": p.to_dict() if p is not None else None}
                for (k, r), p in zip(self.projection.left_out, _padded(self.projection.reasons,
                                                                      len(self.projection.left_out)))],
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
            "rerank": None if self.rerank is None else {
                "reranker": self.rerank.reranker, "candidates": self.rerank.candidates,
                "applied": self.rerank.applied, "notes": list(self.rerank.notes), "error": self.rerank.error,
                "skipped": self.rerank.skipped, "note_phrases": [p.to_dict() for p in self.rerank.note_phrases]},
            "warnings": list(self.warnings),
            "warning_phrases": [w.to_dict() for w in self.warning_phrases],
            "scope": self.scope.to_dict() if self.scope is not None else None,
            "rewrite": self.rewrite.to_dict() if self.rewrite is not None else None,
            **({"no_access": self.hidden} if self.hidden is not None else {}),
        }


DEFAULTS = LookupParams()


class KnowledgeRetriever:
    def __init__(self, port: KnowledgeSearchPort, defaults: LookupParams = DEFAULTS,
                 reranker: Reranker | None = None, rewriter: QueryRewriter | None = None) -> None:
        """`rewriter`: the chat model's rewrite of follow-up questions (None: the offline rewrite only)."""
        self.port = port
        self.defaults = defaults
        self.reranker = reranker
        self.rewriter = rewriter

    def with_reranker(self, reranker: Reranker | None) -> KnowledgeRetriever:
        """The same retriever with another reranker (None: without one), e.g. for a sweep comparing them."""
        return KnowledgeRetriever(self.port, self.defaults, reranker, self.rewriter)

    def with_rewriter(self, rewriter: QueryRewriter | None) -> KnowledgeRetriever:
        """The same retriever with another model rewrite (None: the offline rewrite only)."""
        return KnowledgeRetriever(self.port, self.defaults, self.reranker, rewriter)

    def params(self, **overrides: Any) -> LookupParams:
        """Defaults with the given fields replaced (None values are ignored), validated. `score_threshold`:
        the threshold of the lookup's search mode; `history`: the conversation before the query (messages as
        {"role", "content"} objects, "role: content" lines or ConversationTurns)."""
        threshold = overrides.pop("score_threshold", None)
        if overrides.get("history") is not None:
            overrides["history"] = parse_history(overrides["history"])
        params = replace(self.defaults, **{k: v for k, v in overrides.items() if v is not None})
        if threshold is not None:
            params = with_threshold(params, threshold)
        params.validate()
        return params

    @property
    def stages(self) -> tuple[Stage, ...]:
        """The stages of its lookups, in order (retrieval.stages), over its port and its reranker now."""
        return stages(self.port, self.reranker, self.rewriter)

    def fetch(self, query: str, params: LookupParams) -> Fetched:
        """The stages of the "fetch" phase: the search (with the metadata filter's scope) and the rerank."""
        query = (query or "").strip()
        if not query:
            raise RetrievalError("The query is empty: type a question or some keywords.")
        if len(query) > MAX_QUERY_CHARS:
            raise RetrievalError(f"The query has {len(query)} characters; the limit is {MAX_QUERY_CHARS}.")
        params.validate()
        work, timings = run(self.stages, "fetch", Work(query, params))
        return Fetched(query, params.retrieve_k, params.search, params.filters, work.hits,
                       {**work.measured, **timings}, params.rerank, work.rerank, work.scope, work.rewrite,
                       params.rewrite, params.history, params.access, work.hidden)

    def assemble(self, fetched: Fetched, params: LookupParams) -> LookupResult:
        """The stages of the "assemble" phase (identity, post-processing and projection) for already fetched
        hits."""
        params.validate()
        if ((params.retrieve_k, params.search, params.filters, params.rerank, params.scope,
             (params.rewrite, params.history), params.access)
                != (fetched.retrieve_k, fetched.search, fetched.filters, fetched.rerank_params,
                    fetched.scope.scope if fetched.scope else Scope(), (fetched.rewrite_mode, fetched.history),
                    fetched.access)):
            raise RetrievalError("These hits were fetched with other search settings; fetch again.")
        pipeline = self.stages
        work, ran = run(pipeline, "assemble", Work(fetched.query, params, fetched.rewrite, scope=fetched.scope,
                                                   hits=fetched.hits, rerank=fetched.rerank))
        assert work.post is not None and work.projection is not None
        timings = {**fetched.timings, **ran}
        timings["total"] = sum(timings.get(stage.name, 0.0) for stage in pipeline)
        searched, candidates = fetched.rewrite.searched if fetched.rewrite else fetched.query, work.candidates
        return LookupResult(fetched.query, params, work.candidates, work.post, work.projection, timings,
                            fetched.rerank, fetched.scope, fetched.rewrite, work.blocks, fetched.hidden,
                            lambda: keywords.of_candidates(self.port, searched, candidates))

    def lookup(self, query: str, **overrides: Any) -> LookupResult:
        """The lookup of `query`; `overrides` are LookupParams fields, among them `access`: the AccessScope of who
        is asking (`principal.scope(kb)`; default UNRESTRICTED: every document). Its keywords are worked out here,
        while the store is surely open (the CLI prints a lookup after closing it); `fetch` + `assemble` leave them to
        whoever reads them (the debugger; an evaluation never does)."""
        from .spans import traced_lookup

        with traced_lookup(query) as done:
            params = self.params(**overrides)
            result = self.assemble(self.fetch(query, params), params)
            _ = result.keywords
            return done(result)
