"""Every port of the workbench, in one place: the `typing.Protocol`s that adapters implement.

An adapter is correct when it passes its port's contract-test mixin in `tests/contracts/` (as in
haystack's `testing/`): every adapter and an in-memory fake run the same mixin. Only `bootstrap.py`
builds real adapters; everything else depends on these Protocols.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Generator, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from .records import (
    Alert,
    AssistantReply,
    CircuitState,
    ConversationTurn,
    EvalRunInfo,
    IndexedVersion,
    KnowledgeBase,
    LogQuery,
    LogResult,
    NewVersion,
    RerankResult,
    Rewrite,
    RunKind,
    SavedRun,
    SearchHit,
    SearchOptions,
    SearchResult,
    StoredChunk,
    StoredDocument,
    WriteResult,
)

if TYPE_CHECKING:
    from .access.groups import AccessFilter
    from .access.records import AccessScope, AuditEvent, Principal, Role, User
    from .remote import Retrying
    from .sources.records import SourceItem


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


@runtime_checkable
class SingleStoreSearchPort(KnowledgeSearchPort, Protocol):
    """A search port over one knowledge base's store (retrieval.ports.StoreSearchPort), which the lookup path also
    reads what a person kept there from: the disabled chunks and the documents' labels (metadata filters). A port
    over several knowledge bases (retrieval.multi) is not one."""

    @property
    def store(self) -> KnowledgeStore: ...


@runtime_checkable
class BM25TermScorer(Protocol):
    """A store that tells each query term's part of a chunk's BM25 score, by its own statistics (MilvusStore: each
    term searched alone, restricted to the rows asked about). The keyword channel a person reads (retrieval.keywords)
    uses it; without it the terms a chunk contains are found in its text, unscored.

    Contract: `bm25_term_scores(terms, ids)` is term -> {row id: the BM25 score of that row for the term alone} for
    the rows among `ids` containing the term (a term in none: {}), one request for all of them; a term of its
    dictionary (`bm25_terms`) is searched as a query holding it is, with its alias; `stop_words` are not counted."""

    bm25_terms: tuple[str, ...]
    stop_words: tuple[str, ...]

    def bm25_term_scores(self, terms: Sequence[str], ids: Sequence[str]) -> dict[str, dict[str, float]]: ...


@runtime_checkable
class DocumentChunksPort(KnowledgeSearchPort, Protocol):
    """A search port that also gives a document's chunks, which the expansion and merge stages grow evidence blocks
    from (retrieval/expand.py). A port without it gets blocks of the hits alone, with a warning.

    Contract (tests/contracts/search_port.py, DocumentChunksContract): `document_chunks(doc_id)` returns the chunks
    of the document's active version that a lookup may show (disabled ones left out), in chunk order, with the
    doc_id a hit of that port carries (a port over several knowledge bases: `<kb>:<doc_id>`); [] for an unknown
    document."""

    def document_chunks(self, doc_id: str) -> list[StoredChunk]: ...


@runtime_checkable
class AccessFilteringPort(KnowledgeSearchPort, Protocol):
    """A search port that keeps a lookup to the documents its caller may retrieve (access.groups): `search` takes the
    lookup's AccessScope as its filters' `access` entry and has the store filter the rows by it, and, for a scope
    that may know (`reveal`), says in `SearchResult.hidden` how many hits it removed. `hides(scope, doc_id)`: whether
    that document is hidden from `scope` (explain answers as for an unknown document then). A restricted lookup over
    a port without it is refused, never run unfiltered."""

    def hides(self, scope: AccessScope, doc_id: str) -> bool: ...


# ---------------------------------------------------------------------------------------- store
# Search filters: field -> one value or any of several, e.g. {"doc_id": "a.md"} or {"doc_id": ["a.md", "b.md"]}.
# Fields: doc_id, source, and labels: `key=value` strings a chunk must carry (StoredChunk.labels), one of each key's
# (`{"labels": ["type=md", "type=txt", "team=sre"]}`: type md or txt, and team sre; scope makes them).
# Values are compared exactly (never parsed), so any string is safe.
# `access`: an access.groups.AccessFilter (a restricted lookup: rows of the caller's groups or of none), which Milvus
# applies with the other filters.
StoreFilters = Mapping[str, "str | Sequence[str] | AccessFilter"]
STORE_FILTER_FIELDS = ("doc_id", "source", "labels", "access")


@runtime_checkable
class ChunkStore(Protocol):
    """Versioned chunks of documents: what the Ingestor writes and the search port reads.

    Contract (tests/contracts/store.py), on every adapter:
    - `replace_documents` writes each document's new version completely, then makes it the active one at
      once (its commit); readers see the old version or the new one, never zero chunks or a mix. A write
      that fails leaves the previous version active and complete; `recover` removes what it left behind.
    - Searches return at most `k` hits of active versions, best first, scores higher-is-better, each hit
      with `channels[channel] == (rank, score)`; `filters` restrict them exactly. An empty store gives [].
    - Every chunk carries its document's labels (`NewVersion.labels` with the built-in ones), which the
      `labels` filter matches. A store keeping a `labels` file (store.labels: its source of truth) has
      `relabel`, which rewrites them from it after tags change; `recover` finishes one a killed process left.
    - A version's original bytes (`NewVersion.original`) are kept with it: written before its commit,
      served by `read_original` while it is active, removed with it. No two doc_ids share an original.
    - `delete_document` removes exactly the named document, whatever characters its doc_id contains.
    - `open` creates or checks the store for an embedder (name and dimension) and runs `recover`; `close`
      releases it. Every other method needs an open store.
    """

    def open(self, embedder_name: str, dim: int, *, migrate: bool = False) -> None: ...

    def close(self) -> None: ...

    def drop(self) -> list[str]:
        """Remove everything, the store's collections included (an evaluation index being rebuilt). Returns the
        collections it had to keep (one sharing its storage with another: see MilvusStore.drop)."""
        ...

    def recover(self) -> int:
        """Remove what interrupted writes left behind; returns how many documents needed it."""
        ...

    def fingerprints(self, doc_ids: Iterable[str]) -> dict[str, IndexedVersion]:
        """The active version of each indexed document among `doc_ids`."""
        ...

    def replace_documents(self, items: Sequence[NewVersion]) -> list[WriteResult]:
        """Write a new version of each document (one per doc_id) and retire the previous ones."""
        ...

    def delete_document(self, doc_id: str) -> bool:
        """Remove a document with all its versions; False when it was not indexed."""
        ...

    def list_documents(self) -> list[StoredDocument]:
        """Every indexed document's active version, sorted by doc_id."""
        ...

    def get_chunks(self, doc_id: str) -> list[StoredChunk]:
        """The active version's chunks of one document in chunk order; [] when it is not indexed."""
        ...

    def read_original(self, doc_id: str) -> bytes | None:
        """The bytes the active version was indexed from; None when none are kept."""
        ...

    def disabled_keys(self, chunks: Iterable[StoredChunk]) -> set[str]:
        """The evidence keys of those of `chunks` (as `get_chunks` gives them) that a person disabled
        (kb.chunk_edits.set_disabled), so every lookup leaves them out. A disable made on other text than the chunk
        holds now (its document was re-uploaded changed) does not count, as in lookups."""
        ...

    def is_empty(self) -> bool: ...

    def count_chunks(self) -> int: ...

    def search_dense(self, vector: np.ndarray, k: int, filters: StoreFilters | None = None) -> list[SearchHit]:
        """The `k` chunks most similar to `vector` (cosine similarity, higher is better)."""
        ...

    def search_bm25(self, text: str, k: int, filters: StoreFilters | None = None) -> list[SearchHit]:
        """The `k` best full-text (BM25) matches for `text`; chunks without a matching term are not hits."""
        ...

    def search_both(self, vector: np.ndarray, text: str, k: int,
                    filters: StoreFilters | None = None) -> tuple[list[SearchHit], list[SearchHit]]:
        """`(search_dense(vector, ...), search_bm25(text, ...))` from one view of the active versions: a
        document re-indexed while they run shows the same version in both lists (a hybrid lookup fuses them)."""
        ...


# ---------------------------------------------------------------------------------------- what a store keeps
# The optional capabilities of a ChunkStore, one Protocol each, with a contract mixin each in tests/contracts/
# (store_capabilities.py), passed by MilvusStore and the in-memory store alike. Code that needs one takes a store of
# that type; `KnowledgeStore` is all of them, the store of a knowledge base (Workbench.store).
class ChangeLock(Protocol):
    """`with lock():` (files.FileLock: across processes, re-entrant in its thread); `with lock(wait=False) as got:`
    does not wait (got False: another holds it)."""

    def __call__(self, wait: bool = True) -> AbstractContextManager[bool]: ...


class KeptChunkEdits(Protocol):
    """The chunk edits kept beside an index (store.edits.ChunkEdits, its file's format and rules): evidence key ->
    {"doc_id", "version", "hash", "disabled", "text", "keywords", "questions", "added", "history", "pending"}. Every
    read-modify-write takes `lock`, the knowledge base's lock (the store's `lock`), which a caller holds around a
    whole change (read the chunk, write its row, record it)."""

    @property
    def path(self) -> Path | None:
        """The file (None: kept in memory, or in the shared database: store.kept)."""
        ...

    @property
    def lock(self) -> ChangeLock: ...

    def all(self) -> dict[str, dict[str, Any]]: ...

    def disabled(self) -> dict[str, str]:
        """evidence key -> the content hash it was disabled on."""
        ...

    def history(self, key: str) -> list[dict[str, Any]]: ...

    def set_disabled(self, key: str, *, doc_id: str, version: str, chunk_hash: str, disabled: bool, who: str,
                     what: str = "", rebase: bool = True) -> dict[str, Any]: ...

    def content_change(self, key: str, *, text: str | None, keywords: list[str] | None,
                       questions: list[str] | None) -> tuple[dict[str, Any], str]: ...

    def staged(self, key: str, changes: Mapping[str, Any], unset: Sequence[str] = (),
               chunk_hash: str | None = None) -> dict[str, Any]: ...

    def begin(self, key: str, *, doc_id: str, version: str, chunk_hash: str, changes: Mapping[str, Any],
              unset: Sequence[str] = (), what: str, who: str, content: str, writer: Mapping[str, str],
              replaces: str = "", rebase: bool = True) -> None:
        """Record a change as pending before its chunk row is written (then `finish`, or `abort`)."""
        ...

    def finish(self, key: str) -> dict[str, Any]: ...

    def abort(self, key: str) -> None: ...

    def let_go(self, key: str, what: str, who: str) -> dict[str, Any]: ...

    def conflicts(self, current: Mapping[str, str], doc_id: str | None = None) -> list[str]: ...

    def mark_unapplied(self, doc_ids: Iterable[str], unapplied: bool) -> bool: ...

    def unapplied(self) -> set[str]: ...

    def copy_from(self, source: KeptChunkEdits, doc_ids: Iterable[str]) -> None: ...


class KeptLabels(Protocol):
    """The document labels kept beside an index (store.labels.DocumentLabels): each document's front matter and
    tags, the source of truth its chunk rows' `labels` follow. Changes take `lock`, the store's lock."""

    @property
    def lock(self) -> ChangeLock: ...

    def all(self) -> dict[str, dict[str, tuple[str, ...]]]:
        """doc_id -> key -> values: front matter, then tags."""
        ...

    def of(self, front_matter: Mapping[str, Mapping[str, Sequence[str]] | None],
           ) -> dict[str, dict[str, tuple[str, ...]]]:
        """doc_id -> its labels as `all` gives them, with `front_matter` (None: its own) replacing each one's."""
        ...

    def tags(self, doc_id: str) -> dict[str, list[str]]: ...

    def tags_by_document(self) -> dict[str, dict[str, list[str]]]:
        """doc_id -> its tags (not its front matter), in one read."""
        ...

    def set_tags(self, doc_id: str, tags: Mapping[str, Sequence[str]], *, replace: bool = False,
                 writer: Mapping[str, str] | None = None,
                 fits: Callable[[dict[str, tuple[str, ...]]], None] | None = None) -> dict[str, list[str]]: ...

    def begin(self, front_matter: Mapping[str, tuple[Mapping[str, Sequence[str]], str]],
              writer: Mapping[str, str]) -> None:
        """New versions' front matter marked pending (with the content hash it was read from) until `finish`."""
        ...

    def finish(self, doc_ids: Iterable[str], *, kind: str = "pending", apply: bool = True) -> None: ...

    def pending(self) -> dict[str, list[dict[str, Any]]]:
        """doc_id -> its marks (rows being rewritten, or left by a killed writer); an ingest's holds the new version's
        front matter, which a restricted lookup counts as the document's already (access.groups)."""
        ...

    def copy_tags(self, source: KeptLabels, doc_ids: Iterable[str],
                  writer: Mapping[str, str] | None = None) -> list[str]: ...


@runtime_checkable
class EditingStore(ChunkStore, Protocol):
    """A store whose chunk rows follow records kept beside it (chunk edits, labels).

    Contract (tests/contracts/store_capabilities.py, EditingStoreContract): `lock` is the knowledge base's one lock
    (the records' own `lock`), held across the processes sharing its data folder and re-entrant per thread;
    `editing()` is around a change whose row is being written: it yields the fields naming this process as the
    pending change's writer, and while it runs `recover` spares that change."""

    @property
    def lock(self) -> ChangeLock: ...

    def editing(self) -> AbstractContextManager[dict[str, str]]: ...


@runtime_checkable
class EditableStore(EditingStore, Protocol):
    """A store that keeps chunk edits (disabled, edited, added chunks: `edits`) and writes the rows they make.

    Contract (tests/contracts/store_capabilities.py, EditableStoreContract): `rewrite_chunk` gives one chunk row
    new text, vector and metadata under the same id, version and evidence key, searched (dense and BM25) as written;
    a row id the store does not hold is a StoreError. `add_chunk` writes a chunk into its version under the id of
    its place in it (writing it again leaves one row); `get_chunks` lists it in chunk order, searches find it, and
    the document's listed chunk count stays the one its version was written with. `recover` settles the pending
    edits of writers that are gone (store.edits)."""

    @property
    def edits(self) -> KeptChunkEdits: ...

    def rewrite_chunk(self, row_id: str, content: str, vector: np.ndarray, metadata: dict[str, Any]) -> None: ...

    def add_chunk(self, chunk: StoredChunk, vector: np.ndarray) -> None: ...


@runtime_checkable
class LabelledStore(EditingStore, Protocol):
    """A store that keeps its documents' labels (front matter and tags: `labels`), which its rows carry.

    Contract (tests/contracts/store_capabilities.py, LabelledStoreContract): `relabel(doc_ids)` rewrites those
    documents' rows with the labels `labels` and their built-in ones give them (returns the rows rewritten), so the
    `labels` filter finds them by the new labels and no longer by the old; `recover` re-derives the rows of the
    marks a writer that is gone left (store.labels)."""

    @property
    def labels(self) -> KeptLabels: ...

    def relabel(self, doc_ids: Iterable[str]) -> int: ...


@runtime_checkable
class SharedStore(ChunkStore, Protocol):
    """A store in a database that other processes and other knowledge bases may share.

    Contract (tests/contracts/store_capabilities.py, SharedStoreContract): `exclusive_access()` tells, without
    connecting, whether no other process can be writing to it now (recovery may then abandon any pending change);
    `drop(spare, originals=...)` removes its collections but those named in `spare` (shared with another knowledge
    base), and its kept originals and records when `originals`; it returns the collections it kept."""

    def exclusive_access(self) -> bool: ...

    def drop(self, spare: Collection[str] = (), *, originals: bool = True) -> list[str]: ...


@runtime_checkable
class UpgradableStore(ChunkStore, Protocol):
    """A store whose chunks can be embedded again by another embedder beside the live ones, then swapped in
    (kb.upgrade: the background embedder upgrade).

    Contract (tests/contracts/store_capabilities.py, UpgradableStoreContract): `stage(name, embedder, dim,
    dictionary=, stop_words=)` makes the staging `name` for that embedder and BM25 dictionary and stop words (None:
    the live ones: rag_core.dictionary), keeping what it holds when it was made for the same; `unstaged(name)` lists
    (row id, text to embed) of every chunk it lacks or holds from other text, and removes staged rows of chunks gone
    or changed; `put_staged(name, ids, vectors)` stages those chunks with those vectors (None: their live ones; ids
    gone are skipped; returns how many were written); `staged_count(name)` is (staged, live); `swap_staged(name)` makes
    every search and write use the staged vectors and their embedder, returning the chunk collection replaced
    (`chunks` names the one in use); `drop_chunks(name)` drops one that is not in use."""

    chunks: str

    def stage(self, name: str, embedder_name: str, dim: int, *, dictionary: Sequence[str] | None = None,
              stop_words: Sequence[str] | None = None) -> None: ...

    def unstaged(self, name: str) -> list[tuple[str, str]]: ...

    def put_staged(self, name: str, ids: Sequence[str], vectors: Any = None) -> int: ...

    def staged_count(self, name: str) -> tuple[int, int]: ...

    def swap_staged(self, name: str) -> str: ...

    def drop_chunks(self, name: str) -> None: ...


@runtime_checkable
class KnowledgeStore(EditableStore, LabelledStore, SharedStore, UpgradableStore, BM25TermScorer, Protocol):
    """The store of a knowledge base: chunks, and everything kept beside them (every capability above). What a
    Workbench holds, the Ingestor writes and `Factories` open."""


# ---------------------------------------------------------------------------------------- knowledge bases
@runtime_checkable
class KnowledgeBaseCatalog(Protocol):
    """Which knowledge bases exist and the settings each owns, seen alike by every process sharing the database.

    Contract (tests/contracts/catalog.py), on every adapter:
    - Entries are written whole: `write` makes `kb` the entry of its name at once (readers see the previous
      entry or this one, never none or a mix) and retires the previous entries of that name.
    - `get` and `list_knowledge_bases` show only names whose entry is `active`; an entry in state `creating`
      (a copy being filled) or `deleted` (storage being removed) is an unfinished operation, listed by
      `unfinished` so it can be finished or undone.
    - `forget` removes every entry of a name. Names are compared exactly.
    """

    def list_knowledge_bases(self) -> list[KnowledgeBase]:
        """The active knowledge bases, sorted by name."""
        ...

    def get(self, name: str) -> KnowledgeBase | None:
        """The active knowledge base of that name, or None."""
        ...

    def unfinished(self) -> list[KnowledgeBase]:
        """Entries in state `creating` or `deleted` (the newest entry of their name), oldest first."""
        ...

    def write(self, kb: KnowledgeBase) -> KnowledgeBase:
        """Make `kb` the entry of its name (returned with the time it was written)."""
        ...

    def forget(self, name: str) -> None:
        """Remove every entry of `name`."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class DatabaseCatalog(KnowledgeBaseCatalog, Protocol):
    """A catalog kept in the database that holds the knowledge bases' collections (kb.catalog.MilvusCatalog), so it
    can say what that database holds besides its entries: what a catalog without a database (kb.memory) cannot.

    Contract (tests/contracts/catalog.py, DatabaseCatalogContract): `created` is whether this open made the catalog
    (a database from before knowledge bases); `list_collections` / `has_collection` name the database's collections
    exactly as stored (names that differ only by case are not the same); `collection_meta(name)` is what the
    workbench recorded with a chunk collection (app, layout, embedder, dim; {} for another collection or none);
    `sample_fingerprint(name)` is the fingerprint and content hash of one indexed document of knowledge base `name`
    (None when it has none or they cannot be read)."""

    @property
    def created(self) -> bool: ...

    def list_collections(self) -> list[str]: ...

    def has_collection(self, name: str) -> bool: ...

    def collection_meta(self, name: str) -> Mapping[str, Any]: ...

    def sample_fingerprint(self, name: str) -> tuple[str, str] | None: ...


@runtime_checkable
class KeptOriginals(Protocol):
    """Documents and the original bytes they were indexed from: what `Ingestor.reindex` rebuilds from.
    Every ChunkStore is one (its active versions); so is a folder of kept originals read without its
    database (`store.originals.folder`, what `rebuild --from` reads).

    Contract (tests/contracts/kept_originals.py): `list_documents` lists each document once, sorted by
    doc_id, `has_original` telling whether bytes are kept; `read_original` returns exactly the bytes kept
    for a listed document, None for a doc_id it does not hold, and raises a StoreError with the reason
    (never returns other bytes) when kept bytes are missing or damaged.
    """

    def list_documents(self) -> list[StoredDocument]: ...

    def read_original(self, doc_id: str) -> bytes | None: ...

    @property
    def labels(self) -> KeptLabels | None:
        """The labels kept with the documents (tags a copy carries over), None when none are kept here."""
        ...

    @property
    def edits(self) -> KeptChunkEdits | None:
        """The chunk edits kept with the documents (a copy or a rebuild re-applies them), None when none are kept."""
        ...


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

    def state(self) -> CircuitState:
        """Whether searches call it now: "closed" (they do), "open" (they skip it after failures in a row) or
        "half-open" (one trial call is let through), with those failures and the last error; shown by the debugger
        and `/v1/health`. Its circuit breaker is rerank.circuit.GuardedReranker, which bootstrap puts around every
        reranker; one without it is always closed (records.CLOSED)."""
        ...



@runtime_checkable
class QueryRewriter(Protocol):
    """Turns a question asked in a conversation into the standalone question a lookup searches (the rewrite
    stage, retrieval/stages.py). `history`: the earlier messages, oldest first, assistants' with what they cited.
    Never raises for a model's failure: the outcome says it ("model_failed"), and the original is searched."""

    @property
    def name(self) -> str:
        """"offline", or the model's name."""
        ...

    def rewrite(self, question: str, history: Sequence[ConversationTurn]) -> Rewrite: ...

# ---------------------------------------------------------------------------------------- remote clients
# Built by `rag_core.bootstrap` (build_chat_model, build_metrics_client, build_logs_client) from the adapters in
# rag_core.clients (openai_chat, prometheus, loki); their records are in records.py. Every failure is a
# `RemoteError` subclass with one clear line and a `kind` (errors.py).
@runtime_checkable
class ChatModel(Protocol):
    """A streamed chat-completions model with tool calling.

    `stream` is a generator: it yields answer text as it arrives (and `Retrying` notices while it backs
    off) and returns the complete `AssistantReply`: `reply = yield from model.stream(messages, tools)`.
    Deadlines: the answer must start within the model's timeout, never go silent longer than it while
    streaming, and end by `until` (a `time.monotonic()` value: the agent turn's deadline). Failures raise
    `ChatModelError` (an AgentError); nothing is retried once text has been yielded. `temperature` replaces
    the configured sampling temperature for this call (None: the configured one): test-set generation and
    judging ask for 0, the chat keeps chat.temperature.
    """

    def describe(self) -> str:
        """One line for people: "qwen-plus via DashScope (https://...)"; never a key."""
        ...

    def stream(self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] = (),
               step: int = 1, until: float | None = None,
               temperature: float | None = None) -> Generator[str | Retrying, None, AssistantReply]: ...


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


# ---------------------------------------------------------------------------------------- access
@runtime_checkable
class AccessStore(Protocol):
    """Users, their roles per knowledge base and access groups, and the audit log (rag_core/access).

    Tokens are random, shown once by `create_user`/`new_token`, and kept only as a hash; `authenticate` of a
    revoked user's token is None at once (no cache). Raises `AccessError` for an unknown or duplicate user, a
    bad name; `StoreError` when the database cannot be reached."""

    @property
    def where(self) -> str:
        """The database, without credentials, for messages."""
        ...

    def authenticate(self, token: str) -> Principal | None:
        """The active user holding `token`, as a principal; None for an unknown or revoked token."""
        ...

    def principal(self, name: str) -> Principal | None:
        """The active user `name` as a principal (a trusted proxy's X-Forwarded-User, the CLI's `--as`)."""
        ...

    def create_user(self, name: str, roles: Mapping[str, Role], groups: Iterable[str] = ()) -> tuple[User, str]:
        """A new user and their token (the only time it is seen)."""
        ...

    def new_token(self, name: str) -> str:
        """Replaces the user's token (the old one stops working) and returns the new one."""
        ...

    def set_user(self, name: str, *, roles: Mapping[str, Role | None] | None = None,
                 groups: Iterable[str] | None = None) -> User:
        """Changes roles (a None role removes that knowledge base's role) or replaces the groups."""
        ...

    def revoke(self, name: str) -> User: ...

    def users(self, *, include_revoked: bool = False) -> list[User]: ...

    def user(self, name: str) -> User | None: ...

    def record(self, event: AuditEvent) -> AuditEvent:
        """Appends to the audit log (the store sets `at` when empty) and returns what was kept."""
        ...

    def audit(self, *, limit: int = 100, user: str | None = None, kb: str | None = None,
              action: str | None = None) -> list[AuditEvent]:
        """The newest events first, filtered by user, knowledge base and action (a prefix: `documents.`)."""
        ...

    def close(self) -> None: ...


# ---------------------------------------------------------------------------------------- evaluation runs
@runtime_checkable
class EvalRunStore(Protocol):
    """Saved evaluation runs (rag_core/evaluation/runstore.py): each one JSON document (`EvalRun.to_dict`,
    `AnswerRun.to_dict`) named by an id, `<UTC time>-<set>`. In folders under the data folder by default
    (run.json beside summary.csv and queries.csv, as always), in the shared database's `eval_runs` table when
    database.url is set. The CSV files are views of the document (`runstore.run_files`), written to a folder on
    save or on `export`. Raises EvaluationError, one line, for a run that is not there or not of the kind asked."""

    @property
    def where(self) -> str:
        """The folder or the database (without credentials), for messages."""
        ...

    def save(self, run: Mapping[str, Any]) -> SavedRun:
        """Keeps a run's document whole (one transaction, or its folder's files) under a new id; its kind is its
        `kind` ("answers"), else "retrieval"."""
        ...

    def runs(self, kind: RunKind = "retrieval") -> list[EvalRunInfo]:
        """The saved runs of one kind, newest first."""
        ...

    def load(self, name: str | Path, kind: RunKind = "retrieval") -> dict[str, Any]:
        """A saved run's document by its id, or by a path to its folder or run.json (runs saved elsewhere with
        `--out`)."""
        ...

    def export(self, name: str | Path, out_dir: str | Path, kind: RunKind = "retrieval") -> dict[str, Path]:
        """Writes a saved run's run.json, summary.csv and queries.csv into `out_dir` (made); their paths."""
        ...

    def close(self) -> None: ...


# ---------------------------------------------------------------------------------------- sources
@runtime_checkable
class SourceReader(Protocol):
    """What is at one source now (rag_core/sources: folder, git, web, confluence, notion-export, confluence-export).

    Contract (tests/contracts/sources.py): `items` yields every item at the source once, paths unique, relative and
    "/"-separated, in a stable order; an item's `read` returns its bytes or raises SourceError naming it (the sync
    counts it as failed and goes on); `items` raises SourceError, one line, when the source itself cannot be read
    (unreachable, refused, not found): the sync then deletes nothing. `describe` names the source for messages,
    without credentials."""

    def describe(self) -> str: ...

    def items(self) -> Iterator[SourceItem]: ...
