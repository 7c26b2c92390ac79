"""The one lookup path. The retrieval debugger, the CLI's `search` and the agent's tool all call
`KnowledgeRetriever.lookup` (or its two halves, `fetch` + `assemble`), so what the debugger shows is
exactly what the agent got.

`fetch` asks the port for `retrieve_k` candidates; `assemble` normalises them into candidates with
identity, post-processes (dedup, per-document cap, return-n) and projects the evidence for the agent.
Changing return-n or the cap only needs `assemble` again, which is how the debugger re-runs instantly.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Mapping

from ..config import Settings
from ..errors import RetrievalError
from ..ports import KnowledgeSearchPort
from ..records import Candidate, HitTrace, SearchHit, SearchOptions
from .identity import to_candidate
from .postprocess import PostProcessed, postprocess
from .projection import Budgets, Projection, project

MAX_QUERY_CHARS = 4000


@dataclass(frozen=True)
class LookupParams:
    retrieve_k: int = 20
    return_n: int = 5
    max_chunks_per_document: int = 2
    search: SearchOptions = field(default_factory=SearchOptions)
    budgets: Budgets = field(default_factory=Budgets)
    filters: Mapping[str, Any] | None = None

    def validate(self) -> None:
        for name in ("retrieve_k", "return_n", "max_chunks_per_document"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise RetrievalError(f"{name.replace('_', '-')} must be a whole number of at least 1 (got {value!r}).")
        if self.return_n > self.retrieve_k:
            raise RetrievalError(f"return-n ({self.return_n}) cannot be larger than retrieve-k ({self.retrieve_k}): "
                                 "post-processing can only drop candidates, never add them.")

    def to_dict(self) -> dict[str, Any]:
        return {"retrieve_k": self.retrieve_k, "return_n": self.return_n,
                "max_chunks_per_document": self.max_chunks_per_document, "search_mode": self.search.mode,
                "fusion": self.search.fusion, "rrf_k": self.search.rrf_k, "dense_weight": self.search.dense_weight,
                "bm25_weight": self.search.bm25_weight, "projection": asdict(self.budgets),
                "filters": dict(self.filters) if self.filters else None}


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
                             bm25_weight=settings["rag.bm25-weight"]),
        budgets=Budgets(max_items=settings["projection.max-items"] or return_n,
                        max_chars_per_item=settings["projection.max-chars-per-item"],
                        max_total_chars=settings["projection.max-total-chars"]),
    )


@dataclass(frozen=True)
class Fetched:
    """What the port returned for one query at one recall width."""

    query: str
    retrieve_k: int
    search: SearchOptions
    filters: Mapping[str, Any] | None
    hits: tuple[SearchHit, ...]
    timings: Mapping[str, float]


@dataclass(frozen=True)
class LookupResult:
    query: str
    params: LookupParams
    candidates: tuple[Candidate, ...]
    post: PostProcessed
    projection: Projection
    timings: Mapping[str, float]

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
                "evidence_key": t.evidence_key, "status": t.status, "fate": t.fate,
                "drop": t.drop.to_dict() if t.drop else None, "source": c.source,
                "hit_reasons": list(c.hit_reasons),
                "channels": {ch: {"rank": r, "score": s} for ch, (r, s) in c.channels.items()},
                "title": c.metadata.get("title", ""), "heading_path": c.metadata.get("headingPath", ""),
                "content": c.content,
            })
        evidence = [{
            "evidence_key": c.evidence_key, "doc_id": c.doc_id, "chunk_index": c.chunk_index, "source": c.source,
            "score": c.score, "rank": c.rank, "content": c.content, "hit_reasons": list(c.hit_reasons),
            "heading_path": c.metadata.get("headingPath", ""),
        } for c in self.evidence]
        return {
            "query": self.query,
            "params": self.params.to_dict(),
            "raw_hits": raw_hits,
            "evidence": evidence,
            "dropped": [{"evidence_key": t.evidence_key, "reason": t.status, "rank": t.rank,
                         "drop": t.drop.to_dict() if t.drop else None} for t in self.post.dropped],
            "projection": [asdict(p) for p in self.projection.items],
            "projection_left_out": [{"evidence_key": k, "reason": r} for k, r in self.projection.left_out],
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
        }


class KnowledgeRetriever:
    def __init__(self, port: KnowledgeSearchPort, defaults: LookupParams = LookupParams()) -> None:
        self.port = port
        self.defaults = defaults

    def params(self, **overrides: Any) -> LookupParams:
        """Defaults with the given fields replaced (None values are ignored), validated."""
        params = replace(self.defaults, **{k: v for k, v in overrides.items() if v is not None})
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
        found = self.port.configured(params.search).search(query, params.retrieve_k, params.filters)
        timings = {**found.timings, "search": (time.perf_counter() - started) * 1000}
        return Fetched(query, params.retrieve_k, params.search, params.filters, found.hits[: params.retrieve_k], timings)

    def assemble(self, fetched: Fetched, params: LookupParams) -> LookupResult:
        """Identity, post-processing and projection for already fetched hits."""
        params.validate()
        if (params.retrieve_k, params.search, params.filters) != (fetched.retrieve_k, fetched.search, fetched.filters):
            raise RetrievalError("These hits were fetched with other search settings; fetch again.")
        started = time.perf_counter()
        candidates = tuple(to_candidate(hit, rank) for rank, hit in enumerate(fetched.hits, start=1))
        post = postprocess(candidates, return_n=params.return_n,
                           max_chunks_per_document=params.max_chunks_per_document)
        after_post = time.perf_counter()
        projection = project(post.evidence, params.budgets)
        done = time.perf_counter()
        timings = {**fetched.timings, "postprocess": (after_post - started) * 1000,
                   "projection": (done - after_post) * 1000}
        timings["total"] = timings["search"] + timings["postprocess"] + timings["projection"]
        return LookupResult(fetched.query, params, candidates, post, projection, timings)

    def lookup(self, query: str, **overrides: Any) -> LookupResult:
        params = self.params(**overrides)
        return self.assemble(self.fetch(query, params), params)
