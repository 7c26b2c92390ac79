"""The one lookup path. The retrieval debugger, the CLI's `search`, the HTTP API and the agent's tool
all call `KnowledgeRetriever.lookup` (or its two halves, `fetch` + `assemble`), so what the debugger
shows is exactly what the agent got.

`fetch` asks the port for `retrieve_k` candidates and, when the retriever has a reranker, runs the
rerank stage on them (rerank.py); `assemble` normalises them into candidates with identity, in the
reranked order, post-processes (dedup, per-document cap, return-n) and projects the evidence for the
agent. Changing return-n or the cap only needs `assemble` again, which is how the debugger re-runs
instantly (and never calls the reranker again).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from .. import tracing
from ..config import Settings
from ..errors import RetrievalError
from ..ports import KnowledgeSearchPort, Reranker, SingleStoreSearchPort
from ..records import Candidate, HitTrace, RerankOutcome, SearchHit, SearchOptions, cited_as, qa_question
from ..tracing.semconv import RERANKER, STAGE
from .identity import to_candidate
from .phrases import Phrase, english
from .postprocess import PostProcessed, postprocess
from .projection import Budgets, Projection, project
from .rerank import RerankParams, rerank_hits
from .scope import Scope, ScopeResolution, parse_scope, resolve, split_terms

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
class ScoreThresholds:
    """The score below which a hit is dropped, per search mode (scores of different modes are not comparable);
    0 = off."""

    dense: float = 0.0
    bm25: float = 0.0
    hybrid: float = 0.0

    def of(self, mode: str) -> float:
        return float(getattr(self, mode))


@dataclass(frozen=True)
class LookupParams:
    retrieve_k: int = 20
    return_n: int = 5
    max_chunks_per_document: int = 2
    search: SearchOptions = field(default_factory=SearchOptions)
    budgets: Budgets = field(default_factory=Budgets)
    filters: Mapping[str, Any] | None = None
    rerank: RerankParams = field(default_factory=RerankParams)
    thresholds: ScoreThresholds = field(default_factory=ScoreThresholds)
    scope: Scope = field(default_factory=Scope)  # document metadata filters (retrieval.scope)

    @property
    def score_threshold(self) -> float:
        """The threshold of this lookup's search mode (0 = off)."""
        return self.thresholds.of(self.search.mode)

    def validate(self) -> None:
        for name in ("retrieve_k", "return_n", "max_chunks_per_document"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise RetrievalError(f"{name.replace('_', '-')} must be a whole number of at least 1 (got {value!r}).")
        if self.return_n > self.retrieve_k:
            raise RetrievalError(f"return-n ({self.return_n}) cannot be larger than retrieve-k ({self.retrieve_k}): "
                                 "post-processing can only drop candidates, never add them.")
        self.rerank.validate()
        threshold = self.score_threshold
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold < float("inf"):
            raise RetrievalError(f"score-threshold must be a number of at least 0 (0 = off), got {threshold!r}.")

    def to_dict(self) -> dict[str, Any]:
        return {"retrieve_k": self.retrieve_k, "return_n": self.return_n,
                "max_chunks_per_document": self.max_chunks_per_document, "search_mode": self.search.mode,
                "fusion": self.search.fusion, "rrf_k": self.search.rrf_k, "dense_weight": self.search.dense_weight,
                "bm25_weight": self.search.bm25_weight, "cross_language": self.search.cross_language,
                "projection": asdict(self.budgets),
                "filters": dict(self.filters) if self.filters else None, "rerank": asdict(self.rerank),
                "score_threshold": self.score_threshold or None, "filter": self.scope.to_dict() or None}


def params_from_settings(settings: Settings) -> LookupParams:
    """Defaults for lookups. The legacy `rag.top-k` is the fallback for `rag.retrieve-k` and for
    `rag.return-n`, each separately, when that key is not set itself (in rag.toml, the environment or
    an override); with neither set, the defaults are 20 and 5."""
    top_k = settings["rag.top-k"]

    def width(key: str) -> int:
        return settings[key] if settings.is_set(key) or not top_k else top_k

    return_n = width("rag.return-n")
    return LookupParams(
        retrieve_k=width("rag.retrieve-k"),
        return_n=return_n,
        max_chunks_per_document=settings["rag.max-chunks-per-document"],
        search=SearchOptions(mode=settings["rag.search-mode"], fusion=settings["rag.fusion"],
                             rrf_k=settings["rag.rrf-k"], dense_weight=settings["rag.dense-weight"],
                             bm25_weight=settings["rag.bm25-weight"],
                             cross_language=settings["rag.cross-language"]),
        budgets=Budgets(max_items=settings["projection.max-items"] or return_n,
                        max_chars_per_item=settings["projection.max-chars-per-item"],
                        max_total_chars=settings["projection.max-total-chars"]),
        rerank=RerankParams(candidates=settings["rerank.candidates"], on_error=settings["rerank.on-error"]),
        thresholds=ScoreThresholds(**{mode: settings[f"rag.score-threshold.{mode}"]
                                      for mode in ("dense", "bm25", "hybrid")}),
        scope=parse_scope(split_terms(settings["rag.default-filter"])),
    )


def with_threshold(params: LookupParams, threshold: float) -> LookupParams:
    """`params` with the score threshold of its search mode set to `threshold`."""
    return replace(params, thresholds=replace(params.thresholds, **{params.search.mode: threshold}))


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

    def ordered(self) -> list[tuple[SearchHit, int, float | None]]:
        """(hit, fused rank, rerank score) in the order post-processing walks."""
        if self.rerank is None:
            return [(hit, i, None) for i, hit in enumerate(self.hits, start=1)]
        return [(self.hits[i], i + 1, self.rerank.scores[i]) for i in self.rerank.order]


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

    @property
    def warnings(self) -> tuple[str, ...]:
        """What the person should know about how this result was made (e.g. the reranker failed, the score
        threshold dropped every hit)."""
        return tuple(english(w) for w in self.warning_phrases)

    @property
    def warning_phrases(self) -> tuple[Phrase, ...]:
        """`warnings` as codes with parameters (rag_core.retrieval.phrases), for an edge that words them itself."""
        scope = self.scope.warning_phrase if self.scope is not None else None
        return (*((scope,) if scope else ()), *self._threshold_warnings(), *self._rerank_warnings())

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
    def evidence_keys(self) -> list[str]:
        return [c.evidence_key for c in self.evidence]

    def to_dict(self) -> dict[str, Any]:
        """The JSON object the CLI prints and the agent's tool result carries."""
        by_rank = {c.rank: c for c in self.candidates}
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
            })
        evidence = [{
            "evidence_key": c.evidence_key, "doc_id": c.doc_id, "chunk_index": c.chunk_index, "source": c.source,
            "score": c.score, "rank": c.rank, "fused_rank": c.rank_before_rerank, "rerank_score": c.rerank_score,
            "content": c.content, "hit_reasons": list(c.hit_reasons),
            "heading_path": c.metadata.get("headingPath", ""), "location": c.metadata.get("location", ""),
            "cited_as": cited_as(c.source, str(c.metadata.get("location") or "")),
            "edited": bool(c.metadata.get("edited")), "added": bool(c.metadata.get("added")),
            "searched_by": qa_question(c.content, c.metadata),  # a Q&A pair: its question, "" for other chunks
        } for c in self.evidence]
        return {
            "query": self.query,
            "params": self.params.to_dict(),
            "raw_hits": raw_hits,
            "evidence": evidence,
            "dropped": [{"evidence_key": t.evidence_key, "reason": t.status, "rank": t.rank,
                         "drop": t.drop.to_dict() if t.drop else None} for t in self.post.dropped],
            "projection": [asdict(p) for p in self.projection.items],
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
        }


class KnowledgeRetriever:
    def __init__(self, port: KnowledgeSearchPort, defaults: LookupParams = LookupParams(),
                 reranker: Reranker | None = None) -> None:
        self.port = port
        self.defaults = defaults
        self.reranker = reranker

    def with_reranker(self, reranker: Reranker | None) -> KnowledgeRetriever:
        """The same retriever with another reranker (None: without one), e.g. for a sweep comparing them."""
        return KnowledgeRetriever(self.port, self.defaults, reranker)

    def params(self, **overrides: Any) -> LookupParams:
        """Defaults with the given fields replaced (None values are ignored), validated. `score_threshold`:
        the threshold of the lookup's search mode."""
        threshold = overrides.pop("score_threshold", None)
        params = replace(self.defaults, **{k: v for k, v in overrides.items() if v is not None})
        if threshold is not None:
            params = with_threshold(params, threshold)
        params.validate()
        return params

    def fetch(self, query: str, params: LookupParams) -> Fetched:
        query = (query or "").strip()
        if not query:
            raise RetrievalError("The query is empty: type a question or some keywords.")
        if len(query) > MAX_QUERY_CHARS:
            raise RetrievalError(f"The query has {len(query)} characters; the limit is {MAX_QUERY_CHARS}.")
        params.validate()
        started = time.perf_counter()
        scope, filters = self.scoped(params)
        found = self.port.configured(params.search).search(query, params.retrieve_k, filters)
        hits = found.hits[: params.retrieve_k]
        timings = {**found.timings, "search": (time.perf_counter() - started) * 1000}
        outcome = None
        if self.reranker is not None and params.rerank.enabled and hits:
            started = time.perf_counter()
            with tracing.span("rerank", RERANKER, {STAGE: "rerank"}):
                outcome = rerank_hits(self.reranker, query, hits, params.rerank)
            timings["rerank"] = (time.perf_counter() - started) * 1000
        return Fetched(query, params.retrieve_k, params.search, params.filters, hits, timings, params.rerank, outcome,
                       scope)

    def disabled(self, candidates: Sequence[Candidate]) -> set[str]:
        """The disabled stage's input: the evidence keys among `candidates` a person disabled (store.edits), read at
        every assembly so a disable shows at once, even on cached hits. An edit made on other text (the document
        changed under it) does not apply."""
        off = self.port.store.edits.disabled() if isinstance(self.port, SingleStoreSearchPort) else {}
        return {c.evidence_key for c in candidates
                if c.evidence_key in off and off[c.evidence_key] in ("", c.metadata.get("chunkHash"))}

    def scoped(self, params: LookupParams) -> tuple[ScopeResolution | None, Mapping[str, Any] | None]:
        """The scope stage: the metadata filter as the store's `labels` filter, which Milvus applies to the chunk
        rows' labels (with any filter already given), and what it selects among the documents (counted for the
        debugger; none: nothing is searched); (None, the filters) without a metadata filter."""
        if not params.scope:
            return None, params.filters
        if not isinstance(self.port, SingleStoreSearchPort):
            raise RetrievalError("Metadata filters need one knowledge base (this search spans several).")
        store = self.port.store
        scope = resolve(params.scope, store.list_documents(), store.labels.all())
        filters: dict[str, Any] = {**(params.filters or {}), "labels": params.scope.labels()}
        if not scope.doc_ids:
            filters["doc_id"] = []  # a warning says so; the store searches nothing
        return scope, filters

    def assemble(self, fetched: Fetched, params: LookupParams) -> LookupResult:
        """Identity, post-processing and projection for already fetched hits."""
        params.validate()
        if ((params.retrieve_k, params.search, params.filters, params.rerank, params.scope)
                != (fetched.retrieve_k, fetched.search, fetched.filters, fetched.rerank_params,
                    fetched.scope.scope if fetched.scope else Scope())):
            raise RetrievalError("These hits were fetched with other search settings; fetch again.")
        started = time.perf_counter()
        candidates = tuple(replace(to_candidate(hit, rank), fused_rank=fused_rank, rerank_score=score)
                           for rank, (hit, fused_rank, score) in enumerate(fetched.ordered(), start=1))
        with tracing.stage("postprocess"):
            post = postprocess(candidates, return_n=params.return_n,
                               max_chunks_per_document=params.max_chunks_per_document,
                               score_threshold=params.score_threshold, disabled=self.disabled(candidates))
        after_post = time.perf_counter()
        with tracing.stage("projection"):
            projection = project(post.evidence, params.budgets)
        done = time.perf_counter()
        timings = {**fetched.timings, "postprocess": (after_post - started) * 1000,
                   "projection": (done - after_post) * 1000}
        timings["total"] = (timings["search"] + timings.get("rerank", 0.0) + timings["postprocess"]
                            + timings["projection"])
        return LookupResult(fetched.query, params, candidates, post, projection, timings, fetched.rerank,
                            fetched.scope)

    def lookup(self, query: str, **overrides: Any) -> LookupResult:
        from .spans import traced_lookup

        with traced_lookup(query) as done:
            params = self.params(**overrides)
            return done(self.assemble(self.fetch(query, params), params))
