"""What every reranker does the same way: input checks, limits (truncation and batching, said in the
notes), putting scores back in input order and checking them; plus `RemoteAdapter`'s deadlines, retries
and messages. A provider implements `_score_batch`: one plain request, scores in the batch's order.

The contract (tests/contracts/reranker.py runs it on every adapter):
- `rerank(query, documents)` gives one finite score per document, in input order (higher is more
  relevant), whatever order the service answers in and however the documents were batched;
- `[]` gives no scores without a request; a blank query or document is refused with `RerankError`
  naming it; one `str` instead of a list, or an item that is not a `str`, is a `TypeError`;
- every failure is a `RerankError` with one clear line and a `kind` (see `RemoteError`).
"""

from __future__ import annotations

import math
import re
from abc import abstractmethod
from collections.abc import Sequence
from functools import partial
from typing import Any

from ..errors import RerankError
from ..phrases import Phrase, english
from ..records import CLOSED, CircuitState, RerankResult
from ..remote import Endpoint, MalformedReply, RemoteAdapter
from ..remote.http import request_json

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")


def estimate_tokens(text: str) -> int:
    """A conservative token count without the model's tokenizer: one per CJK character, one per three
    other characters (real tokenizers give fewer for both)."""
    cjk = len(_CJK.findall(text))
    return cjk + math.ceil((len(text) - cjk) / 3)


def truncate_to_tokens(text: str, limit: int) -> str:
    """The longest prefix of `text` whose estimate is within `limit`."""
    if estimate_tokens(text) <= limit:
        return text
    low, high = 0, len(text)
    while low < high:  # binary search on the prefix length
        mid = (low + high + 1) // 2
        if estimate_tokens(text[:mid]) <= limit:
            low = mid
        else:
            high = mid - 1
    return text[:low]


def check_inputs(query: str, documents: Sequence[str]) -> list[str]:
    if not isinstance(query, str):
        raise TypeError(f"The query to rerank for must be str, got {type(query).__name__}.")
    if isinstance(documents, (str, bytes)):
        raise TypeError("rerank takes a sequence of documents, not one string")
    docs = list(documents)
    if not query.strip():
        raise RerankError("Cannot rerank for an empty query.", "bad_request")
    for i, doc in enumerate(docs):
        if not isinstance(doc, str):
            raise TypeError(f"Documents to rerank must be str, got {type(doc).__name__} (item {i + 1} of {len(docs)}).")
        if not doc.strip():
            raise RerankError(f"Cannot rerank an empty document (item {i + 1} of {len(docs)}).", "bad_request")
    return docs


class RemoteReranker(RemoteAdapter):
    """Limits per request, when the service has them: `max_documents`, `max_document_tokens` (longer
    documents are truncated), `max_request_tokens` (query + documents; more are sent in several
    requests). Scores of a cross-encoder depend on the (query, document) pair only, so batches compare."""

    max_documents: int = 100
    max_document_tokens: int | None = None
    max_request_tokens: int | None = None
    limits_name: str = "the service"  # in notes: "DashScope's limit"
    limits_code: str = "rerank.service"  # the same as a phrase code (its English text is limits_name)
    _span_kind = "RERANKER"  # rag_core.tracing.semconv.RERANKER

    def __init__(self, endpoint: Endpoint, name: str, **adapter: Any) -> None:
        super().__init__(endpoint, **adapter)
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    def state(self) -> CircuitState:
        return CLOSED  # the circuit breaker is a GuardedReranker around this one

    def _checked_batch(self, query: str, documents: list[str]) -> list[float]:
        return self._checked(self._score_batch(query, documents), len(documents))

    @abstractmethod
    def _score_batch(self, query: str, documents: list[str]) -> list[float]:
        """One request: a score per document, in the order given."""

    def _post_json(self, url: str, body: Any) -> Any:
        """POST `body` to a JSON rerank API, with the key (if any) as a Bearer token."""
        headers = {"Authorization": f"Bearer {self._secret}"} if self._secret else {}
        return request_json("POST", url, timeout=self.policy.timeout, headers=headers, json_body=body)

    def rerank(self, query: str, documents: Sequence[str]) -> RerankResult:
        docs = check_inputs(query, documents)
        if not docs:
            return RerankResult(())
        notes: list[Phrase] = []
        if self.max_document_tokens is not None:
            query = self._truncated_query(query, notes)
            docs = self._truncated(docs, notes)
        batches = self._batches(query, docs)
        if len(batches) > 1:
            notes.append(Phrase("rerank.batches", {"requests": len(batches), "limits": self._limits()}))
        scores: list[float] = []
        for batch in batches:
            scores.extend(self._call(partial(self._checked_batch, query, batch)))
        return RerankResult(tuple(scores), tuple(english(n) for n in notes), tuple(notes))

    # ------------------------------------------------------------------------------------------
    def _truncated_query(self, query: str, notes: list[Phrase]) -> str:
        assert self.max_document_tokens is not None
        short = truncate_to_tokens(query, self.max_document_tokens)
        if short != query:
            notes.append(Phrase("rerank.query_truncated", {"tokens": self.max_document_tokens,
                                                           "service": Phrase(self.limits_code)}))
        return short

    def _truncated(self, docs: list[str], notes: list[Phrase]) -> list[str]:
        assert self.max_document_tokens is not None
        out = [truncate_to_tokens(d, self.max_document_tokens) for d in docs]
        cut = sum(1 for a, b in zip(docs, out) if a != b)
        if cut:
            notes.append(Phrase("rerank.documents_truncated" if cut > 1 else "rerank.document_truncated",
                                {"count": cut, "tokens": self.max_document_tokens,
                                 "service": Phrase(self.limits_code)}))
        return out

    def _batches(self, query: str, docs: list[str]) -> list[list[str]]:
        batches: list[list[str]] = [[]]
        used = 0
        q = estimate_tokens(query)
        for doc in docs:
            cost = q + estimate_tokens(doc)  # counted per pair: the model reads the query with every document
            full = len(batches[-1]) >= self.max_documents or (
                self.max_request_tokens is not None and batches[-1] and used + cost > self.max_request_tokens)
            if full:
                batches.append([])
                used = 0
            batches[-1].append(doc)
            used += cost
        return batches

    def _limits(self) -> Phrase:
        service = Phrase(self.limits_code)
        if self.max_request_tokens is not None:
            return Phrase("rerank.limits_tokens", {"service": service, "documents": self.max_documents,
                                                   "tokens": self.max_request_tokens})
        return Phrase("rerank.limits", {"service": service, "documents": self.max_documents})

    @staticmethod
    def _checked(scores: list[float], n: int) -> list[float]:
        if len(scores) != n:
            raise MalformedReply(f"answered with {len(scores)} scores for {n} documents")
        for s in scores:
            if isinstance(s, bool) or not isinstance(s, (int, float)) or not math.isfinite(s):
                raise MalformedReply(f"answered with a score that is not a finite number ({s!r})")
        return [float(s) for s in scores]


def scores_by_index(results: Any, n: int, *, index: str = "index", score: str = "relevance_score") -> list[float]:
    """Scores in input order from `[{index, score}, ...]` in any order (services sort by relevance).
    Every index 0..n-1 must appear exactly once."""
    if not isinstance(results, list):
        raise MalformedReply("answered without a list of results")
    out: list[Any] = [None] * n
    for item in results:
        i = item.get(index) if isinstance(item, dict) else None
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < n or out[i] is not None:
            raise MalformedReply(f"answered with a bad {index} ({i!r}) for {n} documents")
        out[i] = item.get(score)
    missing = sum(1 for s in out if s is None)
    if missing:
        raise MalformedReply(f"answered with scores for {n - missing} of {n} documents")
    return out
