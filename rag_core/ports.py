"""Every port of the workbench, in one place: the `typing.Protocol`s that adapters implement.

An adapter is correct when it passes its port's contract-test mixin in `tests/contracts/` (as in
haystack's `testing/`): every adapter and an in-memory fake run the same mixin. Only `bootstrap.py`
builds real adapters; everything else depends on these Protocols.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generator, Mapping, Protocol, Sequence, runtime_checkable

import numpy as np

from .records import RerankResult, SearchOptions, SearchResult

if TYPE_CHECKING:  # records of the remote clients, defined next to their adapters
    from .agent.loki import LogQuery, LogResult
    from .agent.model import AssistantReply
    from .agent.prometheus import Alert
    from .remote import Retrying


# ---------------------------------------------------------------------------------------- embedding
@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors of a fixed size.

    `name` ("provider:model") and `dim` are recorded with the collection, so an index is never
    searched with vectors from another model.
    """

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32 for texts that will be stored."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """(dim,) float32 for a search query."""
        ...


# ---------------------------------------------------------------------------------------- search
@runtime_checkable
class KnowledgeSearchPort(Protocol):
    """Finds candidate chunks for a query (the `fetch` half of the one lookup path).

    Contract (tests/contracts/search_port.py): `search` returns at most `k` hits, best first, scores
    higher-is-better, each hit's `channels` giving its 1-based rank and raw score in every channel that
    found it; `filters` (e.g. {"doc_id": "a.md"}) restrict the hits exactly; an empty knowledge base is
    a RetrievalError, not an empty result. `configured` returns a port searching with other options
    (itself when they are the same) and never changes the port it is called on.
    """

    def configured(self, options: SearchOptions) -> KnowledgeSearchPort: ...

    def search(self, query: str, k: int, filters: Mapping[str, Any] | None = None) -> SearchResult: ...


# ---------------------------------------------------------------------------------------- store
# (the chunk store's Protocol goes here)


# ---------------------------------------------------------------------------------------- rerank
@runtime_checkable
class Reranker(Protocol):
    """Scores documents for a query with a cross-encoder-style model (the stage between fetch and
    post-processing). `name` is "provider:model"."""

    @property
    def name(self) -> str: ...

    def rerank(self, query: str, documents: Sequence[str]) -> RerankResult:
        """One score per document, in input order (an empty list gives no scores)."""
        ...


# ---------------------------------------------------------------------------------------- remote clients
# Built by `rag_core.bootstrap` (build_chat_model, build_metrics_client, build_logs_client); their
# records live next to the adapters (agent/model.py, agent/prometheus.py, agent/loki.py). Every failure
# is a `RemoteError` subclass with one clear line and a `kind` (errors.py).
@runtime_checkable
class ChatModel(Protocol):
    """A streamed chat-completions model with tool calling.

    `stream` is a generator: it yields answer text as it arrives (and `Retrying` notices while it backs
    off) and returns the complete `AssistantReply`: `reply = yield from model.stream(messages, tools)`.
    Deadlines: the answer must start within the model's timeout, never go silent longer than it while
    streaming, and end by `until` (a `time.monotonic()` value: the agent turn's deadline). Failures raise
    `ChatModelError` (an AgentError); nothing is retried once text has been yielded.
    """

    def describe(self) -> str:
        """One line for people: "qwen-plus via DashScope (https://...)"; never a key."""
        ...

    def stream(self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] = (),
               step: int = 1, until: float | None = None) -> Generator[str | Retrying, None, AssistantReply]: ...


@runtime_checkable
class MetricsClient(Protocol):
    """Reads the alerts a metrics server (Prometheus) holds. Raises `MetricsError`."""

    @property
    def where(self) -> str:
        """The server's URL without credentials, for messages."""
        ...

    def alerts(self) -> list[Alert]:
        """Every active (firing or pending) alert, as the server lists them."""
        ...


@runtime_checkable
class LogsClient(Protocol):
    """Searches a log store (Grafana Loki). Raises `LogsError` (a refused query says why)."""

    @property
    def where(self) -> str: ...

    def query_range(self, query: LogQuery) -> LogResult:
        """Log lines matching `query` in its time range, at most `query.limit`, newest first by default."""
        ...
