"""A lookup's parameters (`LookupParams`): what the lookup options (options.py) and the settings decide, validated
before anything runs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ..access.records import UNRESTRICTED, AccessScope
from ..config import Settings
from ..errors import RetrievalError
from ..records import REWRITE_MODES, ConversationTurn, SearchOptions
from ..scope import Scope, parse_scope, split_terms
from .expand import EXPAND_MODES, ExpandParams
from .projection import Budgets
from .rerank import RerankParams


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
    scope: Scope = field(default_factory=Scope)  # document metadata filters (scope)
    rewrite: str = "auto"  # the rewrite stage: auto (the chat model if there is one, else offline), offline, model, off
    history: tuple[ConversationTurn, ...] = ()  # the conversation before the query (the rewrite stage reads it)
    expand: ExpandParams = field(default_factory=ExpandParams)  # the expansion and merge stages
    # what the caller may retrieve (access.records: a user's groups; UNRESTRICTED: every document). Not a lookup
    # option: the surfaces set it from who is calling (Principal.scope), never from what the caller asks for.
    access: AccessScope = UNRESTRICTED

    @property
    def score_threshold(self) -> float:
        """The threshold of this lookup's search mode (0 = off)."""
        return self.thresholds.of(self.search.mode)

    @property
    def no_rerank(self) -> bool:
        return not self.rerank.enabled

    @property
    def doc_ids(self) -> list[str]:
        """The documents a `doc_id` filter keeps ([]: every one)."""
        return list((self.filters or {}).get("doc_id") or [])

    @property
    def filter_items(self) -> list[str]:
        """The metadata filter as `key=value` strings."""
        return self.scope.items()

    def validate(self) -> None:
        for name in ("retrieve_k", "return_n", "max_chunks_per_document"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise RetrievalError(f"{name.replace('_', '-')} must be a whole number of at least 1 (got {value!r}).")
        if self.return_n > self.retrieve_k:
            raise RetrievalError(f"return-n ({self.return_n}) cannot be larger than retrieve-k ({self.retrieve_k}): "
                                 "post-processing can only drop candidates, never add them.")
        self.rerank.validate()
        if self.rewrite not in REWRITE_MODES:
            raise RetrievalError(f"rewrite must be one of {', '.join(REWRITE_MODES)} (got {self.rewrite!r}).")
        if self.expand.mode not in EXPAND_MODES:
            raise RetrievalError(f"expand must be one of {', '.join(EXPAND_MODES)} (got {self.expand.mode!r}).")
        if not isinstance(self.access, AccessScope):
            raise RetrievalError(f"access must be an AccessScope (got {type(self.access).__name__}).")
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
                "score_threshold": self.score_threshold or None, "filter": self.scope.to_dict() or None,
                "rewrite": self.rewrite, "history_turns": len(self.history), "expand": asdict(self.expand)}


def search_filters(params: LookupParams) -> dict[str, Any] | None:
    """What a lookup asks its search port to filter by: its `filters`, and its access scope under `access` when it
    is restricted (the port turns it into the store's filter: retrieval.ports.StoreSearchPort)."""
    if params.access.unrestricted:
        return dict(params.filters) if params.filters is not None else None
    return {**(params.filters or {}), ACCESS: params.access}


ACCESS = "access"  # the search filters' entry holding the lookup's AccessScope


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
                        max_total_chars=settings["projection.max-total-chars"],
                        max_tokens_per_item=settings["rag.block-tokens"],
                        max_total_tokens=settings["rag.context-tokens"]),
        rerank=RerankParams(candidates=settings["rerank.candidates"], on_error=settings["rerank.on-error"]),
        thresholds=ScoreThresholds(**{mode: settings[f"rag.score-threshold.{mode}"]
                                      for mode in ("dense", "bm25", "hybrid")}),
        scope=parse_scope(split_terms(settings["rag.default-filter"])),
        rewrite=settings["rag.rewrite"],
        expand=ExpandParams(mode=settings["rag.expand"], neighbours=settings["rag.expand-neighbours"],
                            parent_max_size=settings["chunk.parent-max-size"], merge=settings["rag.merge"]),
    )


def with_threshold(params: LookupParams, threshold: float) -> LookupParams:
    """`params` with the score threshold of its search mode set to `threshold`."""
    return replace(params, thresholds=replace(params.thresholds, **{params.search.mode: threshold}))
