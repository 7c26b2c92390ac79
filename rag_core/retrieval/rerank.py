"""The rerank stage: between `fetch` (the port's fused ranking of retrieve-k hits) and post-processing.

The top `candidates` hits go to the reranker (a cross-encoder-style model behind the `Reranker` port);
they are reordered by its scores, best first (ties keep the fused order), and the hits beyond
`candidates` follow in fused order. Post-processing then walks this order, so the evidence follows the
reranker. Every hit keeps its fused rank and its rerank score for the trace.

When the model fails, `on_error = "fallback"` keeps the fused order and records the error (the lookup
result shows it as a warning); `on_error = "fail"` raises RerankFailed (a RetrievalError, and an UpstreamError:
over HTTP 502, or 504 when the model did not answer in time). A reranker whose circuit is open (it failed several
times in a row: rerank.circuit) is skipped at once, said the same two ways.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import RagError, RerankFailed, RerankSkipped, RetrievalError, UpstreamError
from ..ports import Reranker
from ..records import RerankOutcome, RerankResult, SearchHit

ON_ERROR = ("fallback", "fail")


@dataclass(frozen=True)
class RerankParams:
    """How a lookup uses the retriever's reranker (a retriever without one ignores these)."""

    enabled: bool = True
    candidates: int = 20  # how many of the top fetched hits go to the model
    on_error: str = "fallback"  # "fallback": keep the fused order with a warning; "fail": the lookup fails

    def validate(self) -> None:
        if isinstance(self.candidates, bool) or not isinstance(self.candidates, int) or self.candidates < 1:
            raise RetrievalError(f"rerank candidates must be a whole number of at least 1 (got {self.candidates!r}).")
        if self.on_error not in ON_ERROR:
            raise RetrievalError(f"rerank on-error must be one of {', '.join(ON_ERROR)} (got {self.on_error!r}).")


def movement(fused_rank: int, rank: int) -> str:
    """How far the rerank stage moved a hit: "▲ 7" (up 7 places), "▼ 2", or "=" (stayed)."""
    if rank < fused_rank:
        return f"▲ {fused_rank - rank}"
    if rank > fused_rank:
        return f"▼ {rank - fused_rank}"
    return "="


def _checked_scores(
    reranker: Reranker, documents: Sequence[str], query: str
) -> tuple[tuple[float, ...], RerankResult]:
    result = reranker.rerank(query, documents)
    scores = tuple(result.scores)
    if len(scores) != len(documents):
        raise RetrievalError(f"the reranker returned {len(scores)} scores for {len(documents)} documents")
    if not all(isinstance(s, (int, float)) and not isinstance(s, bool) and math.isfinite(s) for s in scores):
        raise RetrievalError("the reranker returned a score that is not a finite number")
    return tuple(float(s) for s in scores), result


def rerank_hits(reranker: Reranker, query: str, hits: Sequence[SearchHit], params: RerankParams) -> RerankOutcome:
    """The new order of `hits` (see the module docstring). Raises RerankFailed only with on_error = fail."""
    params.validate()
    sent = min(params.candidates, len(hits))
    try:
        scores, result = _checked_scores(reranker, [h.content for h in hits[:sent]], query) if sent else ((), None)
    except Exception as exc:  # noqa: BLE001 - any failure of the model falls back or fails as configured
        reason = str(exc) if isinstance(exc, RagError) else f"{type(exc).__name__}: {exc}"
        skipped = isinstance(exc, RerankSkipped)
        if params.on_error == "fail":  # fails as fast when skipped: no request, no deadline
            raise RerankFailed(f"Reranking with {reranker.name} {'was ' if skipped else 'failed: '}{reason} "
                               "(set rerank.on-error = fallback to keep the fused order instead).",
                               deadline=isinstance(exc, UpstreamError) and exc.deadline) from None
        return RerankOutcome(reranker.name, 0 if skipped else sent, tuple(range(len(hits))), (None,) * len(hits),
                             error=reason, skipped=skipped)
    top = sorted(range(sent), key=lambda i: (-scores[i], i))
    return RerankOutcome(reranker.name, sent, tuple(top) + tuple(range(sent, len(hits))),
                         scores + (None,) * (len(hits) - sent), tuple(result.notes) if result else (),
                         note_phrases=tuple(result.note_phrases) if result else ())
