"""Request and response bodies. `/api` keeps SuperBizAgent's field names (`Id`, `Question`, camelCase in
answers); `/v1` uses the snake_case of the CLI's JSON."""

from __future__ import annotations

from typing import Any, Generic, Literal, TypeVar

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator

from ..text import check_texts

T = TypeVar("T")


class Inbound(BaseModel):
    """A JSON request body. Every string in it (field names, values, nested settings) is checked before any
    field is read (rag_core.text): a lone UTF-16 surrogate such as `"Question": "disk \\ud800"` is a 400 naming
    the field, where it would otherwise run a whole turn and fail as a 500 when the answer is encoded."""

    @model_validator(mode="before")
    @classmethod
    def _texts(cls, data: Any) -> Any:
        # Raises InvalidText, which pydantic lets through (it wraps only ValueError and AssertionError): the
        # app's RagError handler answers it with the message as written, in the route's error envelope.
        return check_texts(data)


class Envelope(BaseModel, Generic[T]):
    """SuperBizAgent's ApiResponse: `{"code": 200, "message": "success", "data": ...}`."""

    code: int = 200
    message: str = "success"
    data: T


# ------------------------------------------------------------------------------------------ /api
class ChatRequest(Inbound):
    """SuperBizAgent's chat body: `{"Id": "<session>", "Question": "..."}` (lower-case names work too)."""

    model_config = ConfigDict(extra="ignore")

    id: str | None = Field(None, validation_alias=AliasChoices("Id", "id", "ID", "sessionId"), max_length=200,
                           description="Session id; a new one is made when absent (returned in the answer).")
    question: str | None = Field(None, validation_alias=AliasChoices("Question", "question", "QUESTION"))
    user_id: str | None = Field(None, validation_alias=AliasChoices("UserId", "userId", "user_id"), max_length=200,
                                description="Whose session this is; the X-User-Id header works too.")
    kb: str | None = Field(None, validation_alias=AliasChoices("kb", "Kb", "KnowledgeBase", "knowledgeBase"),
                           max_length=300, description="The knowledge base the agent searches (default: the "
                           "default one). Not in SuperBizAgent: a client may leave it out.")


class ClearRequest(Inbound):
    model_config = ConfigDict(extra="ignore")

    id: str | None = Field(None, validation_alias=AliasChoices("Id", "id", "ID", "sessionId"), max_length=200)
    user_id: str | None = Field(None, validation_alias=AliasChoices("UserId", "userId", "user_id"), max_length=200)


class ToolCallInfo(BaseModel):
    name: str
    arguments: dict[str, Any] | None
    ok: bool | None
    error: str | None = None
    seconds: float = 0.0
    evidenceKeys: list[str] = []
    # What the lookup searched when the question followed earlier turns of the session (Rewrite.to_dict(): original,
    # searched, outcome, by, ...); null when it had none, or for other tools.
    rewrite: dict[str, Any] | None = None


class ChatAnswer(BaseModel):
    """SuperBizAgent's ChatResponse (`success`, `answer`, `errorMessage`) plus what the turn rested on."""

    success: bool
    answer: str | None
    errorMessage: str | None
    sessionId: str
    mode: str = ""
    citations: list[str] = []
    unverifiedCitations: list[str] = []
    toolCalls: list[ToolCallInfo] = []
    evidence: list[dict[str, Any]] = []
    notices: list[str] = []
    traceId: str = Field("", description="The turn's trace id: rate it with POST /api/feedback.")
    turnIndex: int = Field(-1, description="The turn's place in its session (from 0); -1 when it was not recorded.")


class FeedbackRequest(Inbound):
    """A rating of one recorded turn, named by its trace id, or by its session id and turn index."""

    model_config = ConfigDict(extra="ignore")

    trace_id: str | None = Field(None, validation_alias=AliasChoices("traceId", "trace_id", "TraceId"), max_length=64)
    session_id: str | None = Field(None, validation_alias=AliasChoices("sessionId", "session_id", "Id", "id"),
                                   max_length=200)
    turn_index: Any = Field(None, validation_alias=AliasChoices("turnIndex", "turn_index", "turn"),
                            description="The turn's place in its session, from 0 (chat answers give it).")
    rating: Any = Field(None, description='"up" or "down" (also 1 / -1, 👍 / 👎).')
    comment: str | None = Field(None, max_length=2000, description="What was wrong, or right; left out: the turn's "
                                "comment stays, \"\": removed.")


class HistoryPair(BaseModel):
    question: str
    answer: str
    citations: list[str]
    createdAt: str


class SessionInfo(BaseModel):
    sessionId: str
    messagePairCount: int
    createTime: int = Field(description="Milliseconds since the epoch, as in SuperBizAgent.")
    history: list[HistoryPair]


class UploadInfo(BaseModel):
    """SuperBizAgent's FileUploadRes (`fileName`, `filePath`, `fileSize`) plus our ingest report.
    `filePath` is the document's path inside the knowledge base (its doc_id), never a server path."""

    fileName: str
    filePath: str
    fileSize: int
    docId: str
    status: str = Field(description="added, replaced or unchanged")
    chunks: int
    seconds: float
    knowledgeBase: str = ""
    diff: dict[str, Any] | None = Field(None, description="Replaced or unchanged: chunks added, removed and unchanged "
                                        "by content hash, with the added and removed ones.")
    notes: list[str] = Field([], description="How the file was read: \"OCR'd pages 2, 3\", \"Q&A sheet: FAQ ...\".")


# ------------------------------------------------------------------------------------------ /v1
class IngestReportOut(BaseModel):
    path: str
    doc_id: str
    status: str
    chunks: int
    seconds: float
    error: str
    error_code: str = ""
    http_status: int = Field(200, description="What this file alone would have been answered with.")
    diff: dict[str, Any] | None = Field(None, description="Replaced or unchanged files: chunks `added`, `removed` and "
                                        "`unchanged` by content hash, with `added_chunks` and `removed_chunks`.")
    notes: list[str] = Field([], description="How the file was read: \"OCR'd pages 2, 3\", \"Q&A sheet: FAQ ...\".")
    note_phrases: list[dict[str, Any]] = Field([], description="`notes` as codes with parameters.")


class IngestAnswer(BaseModel):
    reports: list[IngestReportOut]
    counts: dict[str, int]


class ChunkOut(BaseModel):
    evidence_key: str
    chunk_index: int
    id: str
    title: str
    heading_path: str
    start: int | None
    end: int | None
    content: str
    edited: bool = False
    added: bool = False


class ChunksAnswer(BaseModel):
    doc_id: str
    version: str
    chunks: list[ChunkOut]


class DeletedAnswer(BaseModel):
    deleted: str


class KnowledgeBaseIn(Inbound):
    """A knowledge base to make: its name and the settings it keeps that differ from the server's."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(max_length=300, description="Letters, digits and underscores (it names Milvus collections).")
    settings: dict[str, Any] = Field(default_factory=dict, description="Setting -> value, among chunk.max-size, "
                                     "chunk.overlap, embedding.provider/model/dimension, rag.search-mode, rag.fusion, "
                                     "rag.rrf-k, rag.dense-weight, rag.bm25-weight, rag.retrieve-k, rag.return-n, "
                                     "rag.max-chunks-per-document.")


class KnowledgeBaseChange(Inbound):
    model_config = ConfigDict(extra="forbid")

    settings: dict[str, Any] = Field(description="The chunking or search settings to change (not the embedder).")


class UpgradeIn(Inbound):
    model_config = ConfigDict(extra="forbid")

    to: str = Field("", max_length=100, description="The embedder to move to (recorded as embedding.upgrade-to); "
                    "empty: the one recorded.")


class Bm25In(Inbound):
    model_config = ConfigDict(extra="forbid")

    dictionary: list[str] | None = Field(None, description="The knowledge base's BM25 dictionary: terms to match "
                                         "whole, one per item (null or absent: keep the current one; []: none).")
    stop_words: list[str] | None = Field(None, description="Words BM25 does not count, one per item (null or "
                                         "absent: keep the current ones; []: none).")


class TagsBody(Inbound):
    """Tags to set on a document: key -> values (an empty list removes the key)."""

    model_config = ConfigDict(extra="forbid")

    tags: dict[str, list[str]] = Field(description="key -> values; [] removes the key.")
    replace: bool = Field(False, description="These are all the document's tags (the others are dropped).")


class ChunkChange(Inbound):
    model_config = ConfigDict(extra="forbid")

    disabled: bool | None = Field(None, description="true: leave the chunk out of every lookup; false: bring it back.")
    text: str | None = Field(None, max_length=65_000, description="The chunk's new text (re-embedded; same key).")
    keywords: list[str] | None = Field(None, description="Keywords for BM25 and the embedding ([] removes them).")
    questions: list[str] | None = Field(None, description="Example questions, as keywords ([] removes them).")
    conflict: Literal["keep", "drop"] | None = Field(
        None, description="An edit a re-upload left in conflict: keep (re-applied to the chunk now under this key) or "
                          "drop it.")


class ChunkNew(Inbound):
    model_config = ConfigDict(extra="forbid")

    text: str | None = Field(None, max_length=65_000, description="The added chunk's text (embedded and indexed).")
    keywords: list[str] | None = Field(None, description="Keywords for BM25 and the embedding.")
    questions: list[str] | None = Field(None, description="Example questions, as keywords.")
