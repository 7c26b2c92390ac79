"""Errors from rag_core shown in the person's language, the original text kept for bug reports.

rag_core writes its messages in English for people (what went wrong, what to do). They carry a type (errors.py)
and often a code: `LoaderError.code` / `IngestReport.error_code`, `KnowledgeBaseError.code`, `RemoteError.kind`,
the chat's `ErrorEvent.kind` and `NoticeEvent.kind`. The app translates by type and code — one sentence per type
or code in the catalog — never the English sentence itself; in Chinese the original follows in an expander (or a
tooltip, for notices), to paste into a bug report. In English the original is the message: nothing is added, unless
it is worded for the command line (`COMMAND_LINE_WORDED`: "use --generator offline"), when the app's sentence says
what to do on the page and the original follows in the expander, as in Chinese.

    try:
        ...
    except RagError as exc:
        show_error(exc)
"""

from __future__ import annotations

from collections.abc import Mapping

import streamlit as st

from rag_core import errors as e
from rag_core.records import IngestReport

from .i18n import N_, SOURCE, language, t

# Why a file was refused (LoaderError.code, IngestReport.error_code; "": a missing or unreadable file).
LOADER_CODES: Mapping[str, str] = {
    "too_large": N_("The file is larger than the limit (`loader.max-file-mb`)."),
    "unsupported": N_("This file type is not supported."),
    "binary": N_("The file is binary, not text."),
    "undecodable": N_("The file's text encoding could not be recognised."),
    "bad_name": N_("The file name cannot be used as a document id."),
    "empty": N_("The file holds no text."),
    "too_much_text": N_("The file holds more text than the limit."),
    "symlink_outside": N_("A link that points outside the folder: skipped."),
    "too_slow": N_("Reading the file took longer than the limit (`loader.max-seconds`)."),
    "needs_ocr": N_("An image or a scanned PDF: reading it needs the OCR extra."),
    "": N_("The file could not be read."),
}
# Why a knowledge base was refused (KnowledgeBaseError.code).
KB_CODES: Mapping[str, str] = {
    "bad_name": N_("Invalid knowledge base name: use letters, digits and underscores."),
    "exists": N_("A knowledge base with this name exists already: pick another name."),
    "not_found": N_("The knowledge base does not exist (or is still being made or deleted)."),
    "bad_settings": N_("Invalid knowledge base settings: check the values."),
    "refused": N_("The knowledge base could not be changed as asked."),
}
# How a remote service failed (RemoteError.kind) or a chat turn ended (ErrorEvent.kind).
KINDS: Mapping[str, str] = {
    "timeout": N_("The service did not answer in time: try again later, or ask a narrower question."),
    "connection": N_("The service could not be reached: check its address and the network."),
    "auth": N_("The service refused the credentials: check the API key."),
    "not_found": N_("The service does not know the model or address asked for: check the settings."),
    "rate_limit": N_("The service is rate-limiting requests: try again in a moment."),
    "server": N_("The service failed: try again later."),
    "bad_request": N_("The service refused the request: check the settings."),
    "malformed": N_("The service answered something unusable: check that its address is right."),
    "broken_stream": N_("The answer's stream broke off: try again."),
    "config": N_("The service is misconfigured: check the settings."),
    "circuit_open": N_("The reranker failed several times in a row and is skipped for now."),
    "empty": N_("The chat model sent an empty answer: try again, or rephrase the question."),
    "question": N_("The question is empty or too long."),
    "tool": N_("The knowledge base search failed."),
    "tool_step": N_("The tool call failed."),
    "not_configured": N_("The service this needs is not configured."),
    "internal": N_("An unexpected error ended this turn; the details are in the application log."),
}
# What an agent notice means (NoticeEvent.kind).
NOTICES: Mapping[str, str] = {
    "retry": N_("The chat model call failed; trying again."),
    "length": N_("The answer was cut off at `chat.max-tokens`."),
    "malformed_tool_call": N_("The model called a tool with invalid arguments; it was told and goes on."),
    "query_shortened": N_("The question was long: its beginning was searched."),
    "model_failed": N_("The chat model failed; the result is shown without it."),
}
# By type, most specific first: the first that matches names the error.
TYPES: tuple[tuple[type[BaseException], str], ...] = (
    (e.GeneratorNeedsModel, N_("Generating with a model needs a chat model: set DASHSCOPE_API_KEY (or chat.base-url "
                               "and its key) and restart the app, or choose the offline generator.")),
    (e.StoreLockedError, N_("The database file is in use by another process (the CLI, the HTTP API or another "
                            "app): stop it and try again.")),
    (e.StoreMigrationNeeded, N_("The collection was made by an older version and must be rebuilt (every vector is "
                                "kept): press Migrate now on the Home page (or run `python -m rag_core migrate`).")),
    (e.StoreUnavailableError, N_("The connection to the vector store was lost: check that Milvus is running, then "
                                 "try again.")),
    (e.OriginalMissing, N_("The original file of this document is not kept: upload it again to re-index it.")),
    (e.NotIndexed, N_("The knowledge base holds no such document.")),
    (e.FeedbackError, N_("The recorded chat turns (data/turns.db) cannot be read or written.")),
    (e.TurnNotFound, N_("No recorded turn matches.")),
    (e.EmptyKnowledgeBase, N_("The knowledge base holds no documents yet: upload some first.")),
    (e.RerankFailed, N_("The reranker failed, so the lookup did too (`rerank.on-error = fail`).")),
    (e.RetrievalError, N_("The lookup could not run: check the query and the parameters.")),
    (e.ChunkingError, N_("Invalid chunking parameters: the overlap must be smaller than the max chunk size.")),
    (e.EmbeddingError, N_("The embedding model failed or is misconfigured.")),
    (e.ConfigError, N_("A setting is missing or invalid: check rag.toml and the environment.")),
    (e.InvalidText, N_("The input is not text.")),
    (e.StoreError, N_("The vector store failed.")),
    (e.Forbidden, N_("You lack the role this needs: ask an admin of the knowledge base.")),
    (e.Unauthenticated, N_("Sign in first.")),
    (e.NotFound, N_("Not found.")),
    (e.AgentError, N_("The agent failed.")),
    (e.EvaluationError, N_("The test set is malformed, or the run could not complete.")),
    (e.UpstreamError, N_("A service the workbench calls failed.")),
)
# Errors whose message is worded for the command line (its flags): their sentence above says what to do in the app,
# and is shown in English too; the message follows in the expander.
COMMAND_LINE_WORDED: tuple[type[BaseException], ...] = (e.GeneratorNeedsModel,)
UNKNOWN = N_("Something went wrong.")
# Who failed (UpstreamError.upstream), in front of a remote failure's sentence.
UPSTREAMS: Mapping[str, str] = {"reranker": N_("Reranker"), "chat model": N_("Chat model"),
                                "upstream": N_("Remote service")}
PRODUCTS: Mapping[str, str] = {"prometheus": "Prometheus", "loki": "Loki"}  # names, the same in every language


def _who(upstream: str) -> str:
    return PRODUCTS.get(upstream) or t(UPSTREAMS.get(upstream, UPSTREAMS["upstream"]))


def error_sentence(exc: BaseException) -> str:
    """The catalog's sentence for `exc`, by its type and code (in the session's language)."""
    if isinstance(exc, e.LoaderError):
        return t(LOADER_CODES.get(exc.code, LOADER_CODES[""]))
    if isinstance(exc, e.KnowledgeBaseError):
        return t(KB_CODES.get(exc.code, KB_CODES["refused"]))
    if isinstance(exc, e.RemoteError) and exc.kind in KINDS:
        return t("{who}: {what}", who=_who(exc.upstream), what=t(KINDS[exc.kind]))
    if isinstance(exc, e.UpstreamError) and exc.deadline:
        return t("{who}: {what}", who=_who(exc.upstream), what=t(KINDS["timeout"]))
    return t(next((text for kind, text in TYPES if isinstance(exc, kind)), UNKNOWN))


def _show(sentence: str, original: str, *, icon: str | None, prefix: str = "", warning: bool = False,
          worded_for_app: bool = True) -> None:
    box = st.warning if warning else st.error
    if language() == SOURCE and worded_for_app:  # the original is written in this language: it is the message
        box(prefix + original, icon=icon)
        return
    box(prefix + sentence, icon=icon)
    with st.expander(t("Original message (English, for bug reports)")):
        st.code(original, language=None, wrap_lines=True)


def show_error(exc: BaseException, *, icon: str | None = "🛑", prefix: str = "", warning: bool = False,
               sentence: str | None = None) -> None:
    """An error on the page (`warning`: as a warning): translated by type and code, the original text in an
    expander. `prefix`: what it is about (e.g. "B: "), already in the session's language. `sentence`: the page's own
    words for it (already translated), where the type's sentence would be too vague (a box the person filled)."""
    _show(sentence or error_sentence(exc), str(exc), icon=icon, prefix=prefix, warning=warning,
          worded_for_app=not isinstance(exc, COMMAND_LINE_WORDED))


def show_report_error(report: IngestReport, *, icon: str | None = None) -> None:
    """A file that failed to ingest: its path and why (by `error_code`), the loader's message in the expander."""
    sentence = t(LOADER_CODES.get(report.error_code, LOADER_CODES[""]))
    named = report.path in report.error or bool(report.doc_id and report.doc_id in report.error)
    original = report.error if named or language() != SOURCE else f"**{report.path}**: {report.error}"
    _show(t("{who}: {what}", who=f"**{report.path}**", what=sentence), original, icon=icon)


def chat_error_sentence(kind: str) -> str:
    """A chat turn's error (ErrorEvent.kind) in the session's language."""
    return t(KINDS.get(kind, UNKNOWN))


def show_chat_error(message: str, kind: str, *, icon: str | None = "🛑") -> None:
    """The error that ended a chat turn, or a failed tool step (`kind` "tool_step")."""
    _show(chat_error_sentence(kind), message, icon=icon)


def show_notice(message: str, kind: str) -> None:
    """An agent notice (NoticeEvent) as a caption; in Chinese the original is its tooltip."""
    if language() == SOURCE or kind not in NOTICES:
        st.caption(f"ℹ️ {message}")
    else:
        st.caption(f"ℹ️ {t(NOTICES[kind])}", help=message)
