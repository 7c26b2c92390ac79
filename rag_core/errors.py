"""One root error; one subclass per subsystem.

Messages are written for the person who sees them (in the UI or the CLI): what went wrong and what to
do next. They never contain secrets or stack traces.
"""

from __future__ import annotations

import logging
import re


class RagError(Exception):
    """Root of every error this package raises on purpose."""


class ConfigError(RagError):
    """A setting is missing, malformed or out of range."""


class InvalidText(RagError):
    """Text from outside (a request body, an argument, a file) that is not text: see rag_core.text."""


# Why a file was refused, for programs (the HTTP API maps them to 413/415/422/400; ingest reports
# carry them as `error_code`). The message stays the text for people.
# too_slow: reading passed loader.max-seconds; needs_ocr: an image or a scanned PDF without the OCR extra.
LOADER_ERROR_CODES = ("too_large", "unsupported", "binary", "undecodable", "bad_name", "empty", "too_much_text",
                      "symlink_outside", "too_slow", "needs_ocr")
# Refusals that are a rule applied on purpose, not a broken file: ingest reports them as "skipped".
SKIPPED_CODES = frozenset({"symlink_outside"})


class LoaderError(RagError):
    """A file could not be turned into a document (type, size, encoding, path).

    `code` is one of LOADER_ERROR_CODES, or "" when none fits (a missing or unreadable file)."""

    def __init__(self, message: str, code: str = "") -> None:
        super().__init__(message)
        if code and code not in LOADER_ERROR_CODES:
            raise ValueError(f"unknown loader error code {code!r}")
        self.code = code


class ChunkingError(RagError):
    """Chunking parameters are invalid."""


class EmbeddingError(RagError):
    """The embedding provider failed or is misconfigured."""


class NotFound(RagError):
    """Something asked for by name does not exist: a document, a knowledge base. The HTTP API answers 404."""

    code = "not_found"


class StoreError(RagError):
    """The vector store failed, is locked by another process, or does not match the embedder."""


class StoreLockedError(StoreError):
    """The Milvus Lite database file is held by another process."""


class StoreUnavailableError(StoreError):
    """The connection to the store was lost (its server or the store host stopped) during a call."""

    code = "store_unavailable"


class StoreMigrationNeeded(StoreError):
    """The collection was created by an older version; `python -m rag_core migrate` rebuilds it."""


class NotIndexed(StoreError, NotFound):
    """A doc_id names no document in the knowledge base."""


class InvalidTags(StoreError):
    """Tags given wrongly: a key or value that is not allowed, a built-in key, or none (the HTTP API answers 400).
    A StoreError, as the labels file refuses them (store.labels)."""

    code = "bad_tags"


class OriginalMissing(StoreError):
    """A document's original file is not kept, so it cannot be re-indexed."""

    code = "no_original"


class FeedbackError(StoreError):
    """The turns store (data/turns.db: recorded chat turns and their ratings) cannot be read or written."""


class TurnNotFound(NotFound):
    """No recorded turn has that trace id, or that session and turn index."""


class TurnQueryError(RagError):
    """Recorded turns asked for wrongly: no turn named, a rating that is not one, a date that is not a date."""


class KnowledgeBaseError(RagError):
    """A knowledge base that cannot be made, found, copied or deleted as asked. `code` says why, for programs
    (the HTTP API maps it to a status): "bad_name", "exists", "not_found", "bad_settings", "refused"."""

    def __init__(self, message: str, code: str = "refused") -> None:
        super().__init__(message)
        self.code = code


class KnowledgeBaseNotFound(KnowledgeBaseError, NotFound):
    """No knowledge base has the name asked for (or it is still being made, or being deleted)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "not_found")


class RetrievalError(RagError):
    """A lookup could not run: bad query or parameters, or nothing to search."""


class EmptyKnowledgeBase(RetrievalError):
    """A lookup on a knowledge base that holds no documents: ingest some first (the HTTP API answers 409)."""


class AccessError(RagError):
    """A user, role or access group that cannot be used as given (an unknown role, a bad KB=ROLE, a user that
    exists already or does not): a bad request, not a refusal."""


class Unauthenticated(RagError):
    """No caller could be identified (no token, a wrong or revoked one): 401."""


class Forbidden(RagError):
    """The caller lacks a role for what they asked: 403, the message names the role and knowledge base."""


class AgentError(RagError):
    """The chat model or a tool failed in a way the person should see."""


class EvaluationError(RagError):
    """An evaluation set is malformed or a run could not complete."""


class GeneratorNeedsModel(EvaluationError):
    """A test set asked of a chat model (generator "model") where none is configured."""


class SourceError(RagError):
    """A source (issue 38: a folder, a Git repository, a website, a Confluence space, an export) cannot be read, or
    one item of it cannot: the message names the source or the item and what is wrong, in one line."""


class UnknownSource(SourceError, NotFound):
    """No source of that name (in that knowledge base): the HTTP API answers 404."""


class UpstreamError(RagError):
    """A service the workbench calls (a reranker, Prometheus, Loki, a chat or embedding model) failed, refused or
    did not answer. `upstream` names it for programs (the message names it, with its address, for people);
    `deadline`: it did not answer in time. The HTTP API answers 502 naming it, 504 on a deadline."""

    upstream = "upstream"

    def __init__(self, message: str, *, upstream: str = "", deadline: bool = False) -> None:
        super().__init__(message)
        if upstream:
            self.upstream = upstream
        self.deadline = deadline


class RemoteError(UpstreamError):
    """A remote service (embedding, chat, rerank, metrics or logs endpoint) failed or answered something
    unusable. `kind` names the failure for a UI or an HTTP status: "timeout", "connection", "auth",
    "not_found", "rate_limit", "server", "bad_request", "malformed", "config", "circuit_open" (RerankSkipped)."""

    def __init__(self, message: str, kind: str = "server") -> None:
        super().__init__(message, deadline=kind == "timeout")
        self.kind = kind


class RerankError(RemoteError):
    """The reranking model failed or is misconfigured."""

    upstream = "reranker"


class RerankSkipped(RerankError):
    """The reranker was not called: its circuit is open after failures in a row (rag_core.rerank.circuit)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "circuit_open")


class RerankFailed(RetrievalError, UpstreamError):
    """A lookup failed because its reranker did (or was skipped, its circuit open) while rerank.on-error = fail."""

    upstream = "reranker"


class MetricsError(RemoteError):
    """The metrics server (Prometheus) failed or is misconfigured."""

    upstream = "prometheus"


class LogsError(RemoteError):
    """The logs server (Loki) failed, refused the query, or is misconfigured."""

    upstream = "loki"


class ChatModelError(AgentError, RemoteError):
    """The chat model failed; `kind` names the failure for a UI ("connection", "auth", "malformed", ...)."""

    upstream = "chat model"

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message, kind)


# What a message written for the person at the workbench says that a client of the API has no use for and should
# not see: the addresses of the services behind it, and commands of the CLI.
_ADDRESS = re.compile(r"\s+at\s+[a-z][a-z0-9+.-]*://[^\s,;()]+|[a-z][a-z0-9+.-]*://[^\s,;()]+", re.I)
_COMMANDS = ("kb", "docs", "chunks", "ingest", "reindex", "migrate", "host", "config", "eval", "search", "explain",
             "tag", "feedback", "serve", "mcp", "rebuild", "testset", "chat", "chunk")
_CLI = re.compile(r"`(?:python -m rag_core )?(?:--\S+ \S+ )*(?:" + "|".join(_COMMANDS) + r")\b[^`]*`")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(])")


def for_client(message: str) -> str:
    """`message` as a client of the API gets it: the reason, without the addresses of the services behind the
    workbench (the chat model's, Prometheus') and without the CLI commands it advises (the settings it names stay:
    what a client tells whoever runs the server); the full message goes to the server's log."""
    said = _ADDRESS.sub("", message)
    said = re.sub(r"\s*\([^()]*`[^()]*\)", lambda m: "" if _CLI.search(m.group()) else m.group(), said)
    kept = []
    for sentence in _SENTENCE.split(said):
        sentence = re.sub(r":\s*" + _CLI.pattern + r"\.?$", ".", sentence)  # "... instead: `command`."
        if _CLI.search(sentence):  # its clauses without commands, unless the first has one
            clauses = [c for c in sentence.split("; ") if not _CLI.search(c)]
            sentence = "; ".join(clauses) if clauses and not _CLI.search(sentence.split("; ")[0]) else ""
            sentence = sentence if not sentence or sentence.endswith((".", "!", "?")) else sentence + "."
        kept.append(sentence)
    said = " ".join(k for k in kept if k and not _CLI.search(k)).strip()
    if said != message:
        logging.getLogger("rag_core.service").info("answered a client with %r for: %s", said, message)
    return said or "The request failed; the details are in the server's log."
